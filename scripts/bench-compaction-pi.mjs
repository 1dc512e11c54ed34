#!/usr/bin/env node
// pi 0.73.1's time for what benches/compaction.rs measures, on the same 2.4 MB session:
// reading the branch (SessionManager.getBranch on an opened file) and prepareCompaction,
// prepareCompaction alone, findCutPoint, estimateContextTokens, serializeConversation.
//
//   node scripts/bench-compaction-pi.mjs
//
// PI_NPM names the directory holding pi's node_modules (default: .pi-npm at the repo root).
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = join(resolve(process.env.PI_NPM || join(root, ".pi-npm")), "node_modules", "@mariozechner", "pi-coding-agent");
const load = (p) => import(pathToFileURL(join(pkg, "dist", p)).href);
const { SessionManager, buildSessionContext, convertToLlm } = await load("index.js");
const comp = await load("core/compaction/index.js");
const file = join(root, "tests/fixtures/pi/before-compaction.migrated-v3-by-pi-0.73.1.jsonl");
const settings = { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 };
const { version } = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));

function time(name, f) {
    for (let i = 0; i < 5; i++) f(); // warm up
    const n = 50;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) f();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6 / n;
    console.log(`${name.padEnd(42)} ${ms.toFixed(3)} ms`);
}

const sm = SessionManager.open(file);
const path = sm.getBranch();
const context = buildSessionContext(path).messages;
const prep = comp.prepareCompaction(path, settings);
const llm = convertToLlm(prep.messagesToSummarize);
console.log(`pi-coding-agent ${version}, node ${process.version}`);
time("read branch + prepare (2.4 MB session)", () => comp.prepareCompaction(SessionManager.open(file).getBranch(), settings));
time("prepare (parsed branch)", () => comp.prepareCompaction(path, settings));
time("find_cut_point", () => comp.findCutPoint(path, 0, path.length, 20000));
time("estimate_context_tokens", () => comp.estimateContextTokens(context));
time("serialize_conversation (383 messages)", () => comp.serializeConversation(llm));
