// One call of a pi-coding-agent 0.73.1 built-in tool, for tests/tools_pi_diff.rs:
//   node scripts/pi-tool.mjs <request.json>      (request: {"tool", "cwd", "args"})
// prints {"content", "details" (null when none), "isError"}; a tool that throws is an error
// result with its message, as pi's agent loop makes it. Needs scripts/install-pi-npm.sh.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = join(root, ".pi-npm/node_modules/@mariozechner/pi-coding-agent/dist/index.js");
const pi = await import(pathToFileURL(pkg).href);
const req = JSON.parse(readFileSync(process.argv[2], "utf8"));
const make = {
  read: pi.createReadTool, write: pi.createWriteTool, edit: pi.createEditTool,
  bash: pi.createBashTool, grep: pi.createGrepTool, find: pi.createFindTool, ls: pi.createLsTool,
}[req.tool];
const tool = make(req.cwd);
let out;
try {
  const args = tool.prepareArguments ? tool.prepareArguments(req.args) : req.args;
  const r = await tool.execute("call_1", args, undefined, () => {});
  out = { content: r.content, details: r.details ?? null, isError: false };
} catch (e) {
  out = { content: [{ type: "text", text: e instanceof Error ? e.message : String(e) }], details: null, isError: true };
}
process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));
