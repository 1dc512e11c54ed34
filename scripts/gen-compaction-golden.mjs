#!/usr/bin/env node
// Writes what pi-coding-agent 0.73.1's own compaction code answers on the pi author's real
// sessions, for src/session/compaction's tests (tests/compaction.rs):
//
//   * tests/fixtures/pi/compaction-golden.json:
//       - for leaves all along each session and several keepRecentTokens values:
//         estimateContextTokens of the context, findCutPoint, prepareCompaction (first kept
//         entry, split turn, tokensBefore, what is summarized, file operations);
//       - the summarization requests pi's compact() and generateBranchSummary() send (taken
//         from pi-ai's faux provider) and the summaries they return;
//       - collectEntriesForBranchSummary / prepareBranchEntries on branched sessions;
//   * src/session/compaction/prompts/*.md: the prompt texts, extracted from pi's source.
//
//   node scripts/gen-compaction-golden.mjs           # rewrite the files
//   node scripts/gen-compaction-golden.mjs --check   # exit 1 when one is stale
//
// PI_NPM names the directory holding pi's node_modules (default: .pi-npm at the repo root).
// Long texts are recorded as {len, fnv, head, tail}: their UTF-16 length, the FNV-1a 32-bit
// hash of their UTF-8 bytes, and their first and last 120 characters.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..");
const piNpm = resolve(process.env.PI_NPM || join(root, ".pi-npm"));
const pkgDir = join(piNpm, "node_modules", "@mariozechner", "pi-coding-agent");
const aiDir = join(piNpm, "node_modules", "@mariozechner", "pi-ai");
const out = join(root, "tests", "fixtures", "pi", "compaction-golden.json");
const promptDir = join(root, "src", "session", "compaction", "prompts");

const { version } = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const load = (dir, path) => import(pathToFileURL(join(dir, "dist", path)).href);
const ca = await load(pkgDir, "index.js");
const comp = await load(pkgDir, "core/compaction/index.js");
const ai = await load(aiDir, "index.js");
const { SessionManager, buildSessionContext, convertToLlm } = ca;

// ---------------------------------------------------------------- helpers

function fnv(text) {
    let h = 0x811c9dc5;
    for (const b of Buffer.from(text, "utf8")) {
        h ^= b;
        h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h.toString(16).padStart(8, "0");
}

function textInfo(text) {
    if (text === undefined) return null;
    return { len: text.length, fnv: fnv(text), head: text.slice(0, 120), tail: text.slice(-120) };
}

const serialize = (messages) => comp.serializeConversation(convertToLlm(messages));
const sorted = (set) => [...set].sort();
const fileOps = (ops) => ({ read: sorted(ops.read), written: sorted(ops.written), edited: sorted(ops.edited) });

/** The template literal `const NAME = \`…\`;` of a pi source file. */
function promptConst(file, name) {
    const src = readFileSync(join(pkgDir, "dist", "core", "compaction", file), "utf8");
    const m = src.match(new RegExp(`const ${name} = \`([\\s\\S]*?)\`;`));
    if (!m) throw new Error(`${name} not found in ${file}`);
    if (m[1].includes("\\") || m[1].includes("${")) throw new Error(`${name} has escapes or substitutions`);
    return m[1];
}

// ---------------------------------------------------------------- prompts

const prompts = {
    "summarization-system": comp.SUMMARIZATION_SYSTEM_PROMPT,
    summarization: promptConst("compaction.js", "SUMMARIZATION_PROMPT"),
    "update-summarization": promptConst("compaction.js", "UPDATE_SUMMARIZATION_PROMPT"),
    "turn-prefix-summarization": promptConst("compaction.js", "TURN_PREFIX_SUMMARIZATION_PROMPT"),
    "branch-summary": promptConst("branch-summarization.js", "BRANCH_SUMMARY_PROMPT"),
    "branch-summary-preamble": promptConst("branch-summarization.js", "BRANCH_SUMMARY_PREAMBLE"),
};
if (prompts["summarization-system"] !== promptConst("utils.js", "SUMMARIZATION_SYSTEM_PROMPT")) {
    throw new Error("SUMMARIZATION_SYSTEM_PROMPT: export and source differ");
}

// ---------------------------------------------------------------- cut points

const FILES = ["before-compaction.migrated-v3-by-pi-0.73.1.jsonl", "large-session.migrated-v3-by-pi-0.73.1.jsonl"];
const KEEP = [20000, 8000, 1000, 60000];
const STRIDE = 37;

function boundaryStart(path) {
    let prev = -1;
    for (let i = path.length - 1; i >= 0; i--) {
        if (path[i].type === "compaction") {
            prev = i;
            break;
        }
    }
    if (prev < 0) return 0;
    const kept = path.findIndex((e) => e.id === path[prev].firstKeptEntryId);
    return kept >= 0 ? kept : prev + 1;
}

const sessions = [];
for (const file of FILES) {
    const sm = SessionManager.open(join(root, "tests", "fixtures", "pi", file));
    const entries = sm.getEntries();
    const parents = new Set(entries.map((e) => e.parentId).filter(Boolean));
    const leafIds = new Set(entries.filter((e) => !parents.has(e.id)).map((e) => e.id));
    entries.forEach((e, i) => {
        if (i % STRIDE === STRIDE - 1) leafIds.add(e.id);
    });
    const leaves = [];
    for (const leaf of [...leafIds].sort((a, b) => entries.findIndex((e) => e.id === a) - entries.findIndex((e) => e.id === b))) {
        const path = sm.getBranch(leaf);
        const context = buildSessionContext(path);
        const estimate = comp.estimateContextTokens(context.messages);
        let messageTokens = 0;
        for (const e of path) if (e.type === "message") messageTokens += comp.estimateTokens(e.message);
        const cases = [];
        for (const keep of KEEP) {
            const start = boundaryStart(path);
            const cut = comp.findCutPoint(path, start, path.length, keep);
            const prep = comp.prepareCompaction(path, { enabled: true, reserveTokens: 16384, keepRecentTokens: keep });
            cases.push({
                keepRecentTokens: keep,
                boundaryStart: start,
                cutPoint: cut,
                preparation: prep && {
                    firstKeptEntryId: prep.firstKeptEntryId,
                    isSplitTurn: prep.isSplitTurn,
                    tokensBefore: prep.tokensBefore,
                    previousSummary: textInfo(prep.previousSummary),
                    messagesToSummarize: prep.messagesToSummarize.length,
                    turnPrefixMessages: prep.turnPrefixMessages.length,
                    summarizeText: textInfo(serialize(prep.messagesToSummarize)),
                    turnPrefixText: textInfo(serialize(prep.turnPrefixMessages)),
                    fileOps: fileOps(prep.fileOps),
                },
            });
        }
        leaves.push({
            leaf,
            pathLength: path.length,
            contextMessages: context.messages.length,
            estimate,
            messageTokens,
            cases,
        });
    }
    sessions.push({ file, entries: entries.length, leaves });
}

// ---------------------------------------------------------------- summarization requests

const faux = ai.registerFauxProvider({
    provider: "faux",
    models: [
        { id: "plain", contextWindow: 128000, maxTokens: 16384 },
        { id: "thinker", reasoning: true, contextWindow: 200000, maxTokens: 32000 },
        { id: "small", contextWindow: 30000, maxTokens: 4096 },
    ],
});
let requests = [];
const respond = (context, options) => {
    const user = context.messages[0].content[0].text;
    requests.push({
        systemPrompt: context.systemPrompt,
        messages: context.messages.length,
        prompt: textInfo(user),
        maxTokens: options?.maxTokens ?? null,
        reasoning: options?.reasoning ?? null,
    });
    const isPrefix = user.includes("This is the PREFIX of a turn");
    return ai.fauxAssistantMessage(isPrefix ? "PREFIX SUMMARY" : `SUMMARY ${requests.length}`);
};

const before = SessionManager.open(join(root, "tests", "fixtures", "pi", FILES[0]));
const beforeEntries = before.getEntries();
const firstCompaction = beforeEntries.findIndex((e) => e.type === "compaction");
const COMPACTS = [
    { leaf: before.getLeafId(), keep: 20000, model: "plain", thinking: "off", custom: undefined },
    { leaf: before.getLeafId(), keep: 60000, model: "thinker", thinking: "high", custom: "Focus on the TUI refactor" },
    { leaf: beforeEntries[firstCompaction - 1].id, keep: 20000, model: "plain", thinking: "medium", custom: undefined },
    { leaf: beforeEntries[firstCompaction - 1].id, keep: 8000, model: "thinker", thinking: "off", custom: undefined },
];
const compactions = [];
for (const c of COMPACTS) {
    const prep = comp.prepareCompaction(before.getBranch(c.leaf), {
        enabled: true,
        reserveTokens: 16384,
        keepRecentTokens: c.keep,
    });
    requests = [];
    faux.setResponses([respond, respond]);
    const result = await comp.compact(prep, faux.getModel(c.model), "key", undefined, c.custom, undefined, c.thinking);
    requests.sort((a, b) => (a.prompt.head < b.prompt.head ? -1 : 1));
    compactions.push({
        leaf: c.leaf,
        keepRecentTokens: c.keep,
        model: c.model,
        thinkingLevel: c.thinking,
        customInstructions: c.custom ?? null,
        requests,
        result,
    });
}

// ---------------------------------------------------------------- branch summaries

const large = SessionManager.open(join(root, "tests", "fixtures", "pi", FILES[1]));
const largeEntries = large.getEntries();
const largeParents = new Set(largeEntries.map((e) => e.parentId).filter(Boolean));
const largeLeaves = largeEntries.filter((e) => !largeParents.has(e.id)).map((e) => e.id);
const userIds = largeEntries.filter((e) => e.type === "message" && e.message.role === "user").map((e) => e.id);
const beforeUsers = beforeEntries.filter((e) => e.type === "message" && e.message.role === "user").map((e) => e.id);
const BRANCHES = [
    { sm: large, file: FILES[1], from: largeLeaves[0], to: largeLeaves[largeLeaves.length - 1] },
    { sm: large, file: FILES[1], from: largeLeaves[largeLeaves.length - 1], to: userIds[3] },
    { sm: large, file: FILES[1], from: largeLeaves[0], to: userIds[0] },
    { sm: before, file: FILES[0], from: before.getLeafId(), to: beforeUsers[beforeUsers.length - 6] },
    { sm: before, file: FILES[0], from: before.getLeafId(), to: beforeUsers[1] },
];
const BUDGETS = [0, 128000 - 16384, 30000 - 16384, 2000];
const branches = [];
for (const b of BRANCHES) {
    const { entries, commonAncestorId } = comp.collectEntriesForBranchSummary(b.sm, b.from, b.to);
    const prepared = BUDGETS.map((budget) => {
        const p = comp.prepareBranchEntries(entries, budget);
        return {
            budget,
            messages: p.messages.length,
            totalTokens: p.totalTokens,
            text: textInfo(serialize(p.messages)),
            fileOps: fileOps(p.fileOps),
        };
    });
    const summaries = [];
    for (const opt of [
        { model: "plain" },
        { model: "small", customInstructions: "Only the bugs" },
        { model: "plain", customInstructions: "Write one line", replaceInstructions: true },
    ]) {
        requests = [];
        faux.setResponses([respond]);
        const result = await comp.generateBranchSummary(entries, {
            model: faux.getModel(opt.model),
            apiKey: "key",
            signal: new AbortController().signal,
            customInstructions: opt.customInstructions,
            replaceInstructions: opt.replaceInstructions,
            reserveTokens: 16384,
        });
        summaries.push({ ...opt, requests, result });
    }
    branches.push({
        file: b.file,
        from: b.from,
        to: b.to,
        commonAncestorId,
        entries: entries.map((e) => e.id),
        prepared,
        summaries,
    });
}
faux.unregister();

// ---------------------------------------------------------------- output

const golden = { piCodingAgent: version, sessions, compactions, branches, prompts };
const text = `${JSON.stringify(golden, null, 1)}\n`;
const files = [[out, text]];
for (const [name, body] of Object.entries(prompts)) files.push([join(promptDir, `${name}.md`), body]);

const cases = sessions.reduce((n, s) => n + s.leaves.length * KEEP.length, 0);
const summary = `${cases} cut-point cases, ${compactions.length} compactions, ${branches.length} branch summaries, ${Object.keys(prompts).length} prompts`;
if (process.argv.includes("--check")) {
    const stale = files.filter(([path, body]) => {
        try {
            return readFileSync(path, "utf8") !== body;
        } catch {
            return true;
        }
    });
    if (stale.length > 0) {
        console.error(`stale: ${stale.map(([p]) => p.slice(root.length + 1)).join(", ")}: run node scripts/gen-compaction-golden.mjs`);
        process.exit(1);
    }
    console.log(`compaction golden is up to date (${summary})`);
} else {
    mkdirSync(promptDir, { recursive: true });
    for (const [path, body] of files) writeFileSync(path, body);
    console.log(`wrote tests/fixtures/pi/compaction-golden.json and src/session/compaction/prompts/: ${summary}`);
}
