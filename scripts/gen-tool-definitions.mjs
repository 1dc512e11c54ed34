// Writes tests/tools/pi-definitions.json: pi-coding-agent 0.73.1's seven built-in tools as the
// model sees them (name, description, parameters) plus the prompt snippet and guidelines pi puts
// in its system prompt. `--check` compares instead of writing. Run from the project root after
// scripts/install-pi-npm.sh.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
const require = createRequire(import.meta.url);
const root = process.cwd();
const pkg = `${root}/.pi-npm/node_modules/@mariozechner/pi-coding-agent/dist/core/tools/index.js`;
const { createAllToolDefinitions } = await import(pathToFileURL(pkg).href);
const defs = createAllToolDefinitions("/CWD");
const out = {};
for (const name of ["read", "bash", "edit", "write", "grep", "find", "ls"]) {
  const d = defs[name];
  out[name] = {
    name: d.name,
    label: d.label,
    description: d.description,
    parameters: JSON.parse(JSON.stringify(d.parameters)),
    promptSnippet: d.promptSnippet ?? null,
    promptGuidelines: d.promptGuidelines ?? [],
  };
}
const text = JSON.stringify(out, null, 2) + "\n";
const path = `${root}/tests/tools/pi-definitions.json`;
if (process.argv.includes("--check")) {
  if (readFileSync(path, "utf8") !== text) {
    console.error(`${path} is stale: run node scripts/gen-tool-definitions.mjs`);
    process.exit(1);
  }
} else {
  writeFileSync(path, text);
}
