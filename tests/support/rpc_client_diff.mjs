// Drives `--mode rpc` through pi-coding-agent 0.73.1's own RpcClient, for the differential
// test of pi-engine's RPC mode against pi: the same steps against both, each transcript
// normalized so that the two compare as JSON.
//
//   node rpc_client_diff.mjs pi <cwd> [args…]              pi itself (its dist/cli.js)
//   node rpc_client_diff.mjs <path/to/pi-engine> <cwd> [args…]
//
// RpcClient starts `node <cliPath> --mode rpc [args…]`; for pi-engine, cliPath is a one-line
// shim that runs the binary with the same arguments and stdio and passes signals on. The
// environment is passed on (PI_CODING_AGENT_DIR with a models.json pointing at a mock
// server, keys). args are e.g. `--provider mock-anthropic --model mock-claude
// --session-dir <dir>`. Prints the transcript: one entry per step, `{step, ok, value}` or
// `{step, ok: false, error}`.
//
// PI_NPM_MODULES: the node_modules folder holding @mariozechner/pi-coding-agent.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.PI_NPM_MODULES;
const pkgDir = join(modules, "@mariozechner", "pi-coding-agent");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
if (pkg.version !== "0.73.1") console.error(`warning: pi-coding-agent is ${pkg.version}, not 0.73.1`);
const { RpcClient } = await import(pathToFileURL(join(pkgDir, pkg.exports["."].import)).href);

const [target, cwdArg, ...args] = process.argv.slice(2);
const cwd = resolve(cwdArg);
const shimDir = mkdtempSync(join(tmpdir(), "pi-engine-shim-"));
let cliPath = join(pkgDir, "dist", "cli.js");
const env = {};
if (target !== "pi") {
  cliPath = join(shimDir, "shim.mjs");
  env.PI_ENGINE_BIN = resolve(target);
  writeFileSync(
    cliPath,
    'import{spawn}from"node:child_process";const c=spawn(process.env.PI_ENGINE_BIN,process.argv.slice(2),{stdio:"inherit"});for(const s of["SIGTERM","SIGHUP","SIGINT"])process.on(s,()=>c.kill(s));c.on("exit",(code,sig)=>process.exit(code??(sig==="SIGTERM"?143:1)));\n',
  );
}

// ----- normalization: what legitimately differs between two runs ---------------------------

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}(?:[.-]\d+)?Z?/g;
// A session entry's id: 8 hex digits (also inside error texts, "Entry 1a2b3c4d not found").
const ENTRY = /\b[0-9a-f]{8}\b/g;
const OPAQUE = new Set(["entryId", "sessionId", "firstKeptEntryId", "responseId", "toolCallId"]);
const PATHS = new Set(["sessionFile", "fullOutputPath", "path"]);

function normalize(value, key) {
  if (Array.isArray(value)) return value.map((v) => normalize(v));
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = normalize(v, k);
    return out;
  }
  if (key === "timestamp" && typeof value === "number") return "<time>";
  if (OPAQUE.has(key) && typeof value === "string") return "<id>";
  if (PATHS.has(key) && typeof value === "string") return "<path>";
  if (typeof value === "string") {
    // (A model's `id` and a request's own `id` stay.)
    return value
      .split(cwd)
      .join("<cwd>")
      .replace(UUID, "<uuid>")
      .replace(ISO, "<time>")
      .replace(ENTRY, "<id>");
  }
  return value;
}

/** A run's events as their kinds: message updates and tool progress left out (how many
 * there are depends on how the stream was cut), each message's role kept. */
function skeleton(events) {
  return events
    .filter((e) => e.type !== "message_update" && e.type !== "tool_execution_update")
    .map((e) => (e.message?.role ? `${e.type}:${e.message.role}` : e.type));
}

// ----- the steps -----------------------------------------------------------------------------

const client = new RpcClient({ cliPath, cwd, env, args });
const transcript = [];

async function step(name, f) {
  try {
    const value = await f();
    transcript.push({ step: name, ok: true, value: normalize(value === undefined ? null : value) });
  } catch (e) {
    transcript.push({ step: name, ok: false, error: normalize(String(e?.message ?? e)) });
  }
}

/** Lines written straight to stdin, and every line that is not the response to a request of
 * the client (RpcClient hands those to its event listeners) until `last` accepts one (at most
 * `limit` ms), and for `grace` ms after. (A fixed wait would cut a slow machine's run short.) */
async function raw(lines, last, grace = 300, limit = 15000) {
  const seen = [];
  let done;
  const arrived = new Promise((r) => (done = r));
  const off = client.onEvent((e) => {
    seen.push(e);
    if (last(e)) done();
  });
  let timer;
  const late = new Promise((r) => (timer = setTimeout(r, limit)));
  for (const line of lines) client.process.stdin.write(line);
  await Promise.race([arrived, late]);
  clearTimeout(timer);
  await new Promise((r) => setTimeout(r, grace));
  off();
  return seen;
}

try {
  await client.start();
  await step("get_state", () => client.getState());
  await step("get_available_models", async () =>
    (await client.getAvailableModels()).map((m) => `${m.provider}/${m.id}`),
  );
  await step("get_commands", () => client.getCommands());
  await step("prompt", async () => skeleton(await client.promptAndWait("Create notes.txt, fix it, and show it")));
  await step("get_last_assistant_text", () => client.getLastAssistantText());
  await step("get_messages", async () => (await client.getMessages()).map((m) => m.role));
  await step("get_session_stats", () => client.getSessionStats());
  await step("set_thinking_level", () => client.setThinkingLevel("high"));
  await step("cycle_thinking_level", () => client.cycleThinkingLevel());
  await step("set_steering_mode", () => client.setSteeringMode("all"));
  await step("set_follow_up_mode", () => client.setFollowUpMode("all"));
  await step("set_auto_compaction", () => client.setAutoCompaction(false));
  await step("set_auto_retry", () => client.setAutoRetry(false));
  await step("abort_retry", () => client.abortRetry());
  await step("bash", () => client.bash("echo from-bash"));
  await step("abort_bash", () => client.abortBash());
  await step("get_fork_messages", () => client.getForkMessages());
  await step("set_session_name", () => client.setSessionName("  diff  "));
  await step("set_session_name (empty)", () => client.setSessionName("   "));
  await step("get_state (after)", () => client.getState());
  await step("get_available_models (again)", async () => (await client.getAvailableModels()).length);
  await step("set_model (unknown)", () => client.setModel("nope", "nope"));
  await step("fork (unknown)", () => client.fork("nope"));
  await step("fork", async () => client.fork((await client.getForkMessages())[0].entryId));
  await step("get_messages (fork)", async () => (await client.getMessages()).map((m) => m.role));
  await step("clone", () => client.clone());
  await step("new_session", () => client.newSession());
  await step("get_state (new)", () => client.getState());
  await step("get_last_assistant_text (new)", () => client.getLastAssistantText());
  await step("abort", () => client.abort());
  await step("raw lines", () =>
    raw([
      "not json\n",
      "\n",
      '{"id":"u1","type":"no_such_command"}\n',
      "42\n",
      '{"type":"extension_ui_response","id":"nobody","value":"x"}\n',
      '{"id":"r1","type":"get_last_assistant_text"}\r\n',
      '{"id":"r2","type":"prompt","message":"a\u2028b","streamingBehavior":"steer"}\n',
    ], (l) => l.type === "response" && l.id === "r2").then((lines) =>
      // The wording of parse errors differs by design (V8's and serde_json's): its start is kept.
      lines
        .filter((l) => l.type === "response")
        .map((l) =>
          l.command === "parse" && typeof l.error === "string"
            ? { ...l, error: l.error.startsWith("Failed to parse command: ") ? "Failed to parse command: …" : l.error }
            : l,
        ),
    ),
  );
} finally {
  await client.stop();
  rmSync(shimDir, { recursive: true, force: true });
}
process.stdout.write(`${JSON.stringify(transcript, null, 1)}\n`);
