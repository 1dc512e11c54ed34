// An editor's side of ACP, with the official TypeScript client library
// (@agentclientprotocol/sdk): spawns `pi-engine --mode acp`, runs one scenario and prints
// what it saw as one JSON object. Driven by tests/cli_acp.rs.
//
// Environment:
//   PI_NPM_MODULES  the node_modules folder holding @agentclientprotocol/sdk
//   ACP_BIN         the pi-engine binary; ACP_ARGS a JSON array of its arguments
//   ACP_CWD         the session's directory
//   ACP_SCENARIO    "work": initialize, session/new (with an MCP server), a prompt whose
//                   tool calls write a file and ask for permission twice (answered by
//                   ACP_DECISIONS, a JSON array of "allow"/"reject"), a prompt cancelled
//                   mid-stream, an unknown method;
//                   "load": initialize, session/load of ACP_SESSION;
//                   "mcp": initialize, session/new with the MCP servers of ACP_MCP (a JSON
//                   array in ACP's shape), one prompt.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const modules = process.env.PI_NPM_MODULES;
const acp = await import(
  pathToFileURL(join(modules, "@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href
);

const cwd = process.env.ACP_CWD;
const child = spawn(process.env.ACP_BIN, JSON.parse(process.env.ACP_ARGS || "[]"), {
  cwd,
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

const updates = [];
const permissions = [];
const fsCalls = [];
const decisions = JSON.parse(process.env.ACP_DECISIONS || "[]");
let changed = null;
const waitFor = async (what, test, ms = 20000) => {
  const end = Date.now() + ms;
  while (!test()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

const app = acp
  .client({ name: "pi-engine-test" })
  .onNotification("session/update", ({ params }) => {
    updates.push(params);
    if (changed) changed();
  })
  .onRequest("session/request_permission", ({ params }) => {
    permissions.push(params);
    const want = decisions.shift() ?? "reject";
    const option = params.options.find((o) => o.kind.startsWith(want));
    return option
      ? { outcome: { outcome: "selected", optionId: option.optionId } }
      : { outcome: { outcome: "cancelled" } };
  })
  .onRequest("fs/read_text_file", ({ params }) => {
    fsCalls.push({ method: "read", path: params.path });
    return { content: readFileSync(params.path, "utf8") };
  })
  .onRequest("fs/write_text_file", ({ params }) => {
    fsCalls.push({ method: "write", path: params.path, content: params.content });
    writeFileSync(params.path, params.content);
    return {};
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const report = await app.connectWith(stream, async (ctx) => {
  const out = {};
  out.initialize = await ctx.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  });
  if (process.env.ACP_SCENARIO === "mcp") {
    const session = await ctx.request("session/new", {
      cwd,
      mcpServers: JSON.parse(process.env.ACP_MCP),
    });
    out.work = await ctx.request("session/prompt", {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "echo through MCP" }],
    });
    return out;
  }
  if (process.env.ACP_SCENARIO === "load") {
    out.load = await ctx.request("session/load", {
      sessionId: process.env.ACP_SESSION,
      cwd,
      mcpServers: [],
    });
    return out;
  }
  const session = await ctx.request("session/new", {
    cwd,
    mcpServers: [{ name: "files", command: "/bin/true", args: [], env: [] }],
  });
  out.sessionId = session.sessionId;
  out.work = await ctx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "do the work" }],
  });
  out.updatesAfterWork = updates.length;

  // Cancelled once the reply streams.
  const mark = updates.length;
  const running = ctx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "and again" }],
  });
  await waitFor("a streamed chunk", () =>
    updates.slice(mark).some((u) => /^agent_(message|thought)_chunk$/.test(u.update.sessionUpdate)),
  );
  await ctx.notify("session/cancel", { sessionId: session.sessionId });
  out.cancelled = await running;

  out.unknown = await ctx.request("pi/nothing", {}).then(
    (r) => ({ result: r }),
    (e) => ({ code: e.code, message: e.message }),
  );
  out.badSession = await ctx
    .request("session/prompt", { sessionId: "nope", prompt: [{ type: "text", text: "x" }] })
    .then(
      (r) => ({ result: r }),
      (e) => ({ code: e.code }),
    );
  return out;
});
child.stdin.end();
report.exit = await exited;
report.updates = updates;
report.permissions = permissions;
report.fs = fsCalls;
process.stdout.write(JSON.stringify(report));
