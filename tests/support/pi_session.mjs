// Runs pi-coding-agent 0.73.1's own SessionManager for the interop tests (tests/session_interop.rs).
//
//   node pi_session.mjs describe <file.jsonl>   -> JSON: what pi reads from the file
//   node pi_session.mjs write <dir>             -> prints the path of a session pi wrote there
//
// PI_NPM_MODULES: the node_modules folder holding @mariozechner/pi-coding-agent.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.PI_NPM_MODULES;
const pkgDir = join(modules, "@mariozechner", "pi-coding-agent");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
if (pkg.version !== "0.73.1") console.error(`warning: pi-coding-agent is ${pkg.version}, not 0.73.1`);
const { SessionManager, convertToLlm } = await import(pathToFileURL(join(pkgDir, pkg.exports["."].import)).href);

const [mode, arg] = process.argv.slice(2);
if (mode === "describe") {
  if (!existsSync(arg)) throw new Error(`no such file ${arg}`);
  const sm = SessionManager.open(arg);
  const ctx = sm.buildSessionContext();
  const labels = {};
  for (const e of sm.getEntries()) if (sm.getLabel(e.id) !== undefined) labels[e.id] = sm.getLabel(e.id);
  const out = {
    sessionId: sm.getSessionId(),
    leafId: sm.getLeafId(),
    entryCount: sm.getEntries().length,
    sessionName: sm.getSessionName() ?? null,
    model: ctx.model,
    thinkingLevel: ctx.thinkingLevel,
    labels,
    roots: sm.getTree().map((n) => n.entry.id),
    messages: ctx.messages,
    llm: convertToLlm(ctx.messages),
  };
  process.stdout.write(JSON.stringify(out));
} else if (mode === "write") {
  const sm = SessionManager.create("/interop/project", arg);
  sm.appendModelChange("anthropic", "claude-sonnet-4-5");
  sm.appendThinkingLevelChange("high");
  const q = sm.appendMessage({ role: "user", content: [{ type: "text", text: "List files" }], timestamp: 1767225601000 });
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "thinking", thinking: "use ls", thinkingSignature: "sig" }, { type: "toolCall", id: "t1", name: "bash", arguments: { command: "ls" } }],
    api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5",
    usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0.1, output: 0.2, cacheRead: 0, cacheWrite: 0, total: 0.3 } },
    stopReason: "toolUse", timestamp: 1767225602000,
  });
  sm.appendMessage({ role: "toolResult", toolCallId: "t1", toolName: "bash", content: [{ type: "text", text: "a.txt\n" }], details: { x: 1 }, isError: false, timestamp: 1767225603000 });
  sm.appendMessage({ role: "bashExecution", command: "git status", output: "clean\n", exitCode: 1, cancelled: false, truncated: true, fullOutputPath: "/tmp/out.txt", timestamp: 1767225604000 });
  sm.appendCustomEntry("ext", { state: [1, 2] });
  sm.appendCustomMessageEntry("ext", [{ type: "text", text: "injected" }], true, { d: 1 });
  sm.appendLabelChange(q, "start");
  sm.appendSessionInfo("Interop session");
  sm.appendCompaction("Summary of work", q, 4321, { readFiles: ["a.txt"], modifiedFiles: [] });
  sm.appendMessage({ role: "user", content: "after compaction", timestamp: 1767225605000 });
  sm.branchWithSummary(q, "explored something else", { readFiles: [], modifiedFiles: [] });
  sm.appendMessage({ role: "user", content: "on the new branch", timestamp: 1767225606000 });
  process.stdout.write(sm.getSessionFile());
} else {
  throw new Error(`unknown mode ${mode}`);
}
