// Runs pi-ai 0.73.1's own openai-completions request builder for the differential encoding
// test (tests/openai_completions_pi_diff.rs).
//
//   node pi_openai_payload.mjs <cases.json>   -> JSON array: the body pi would send per case
//
// Each case is {model, context, options} in pi's JSON; pi's `onPayload` hook captures the
// body, then stops the call before anything is sent. PI_NPM_MODULES: the node_modules folder
// holding @mariozechner/pi-ai.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.PI_NPM_MODULES;
const pkgDir = join(modules, "@mariozechner", "pi-ai");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
if (pkg.version !== "0.73.1") console.error(`warning: pi-ai is ${pkg.version}, not 0.73.1`);
const entry = pkg.exports["./openai-completions"].import;
const { streamOpenAICompletions } = await import(pathToFileURL(join(pkgDir, entry)).href);

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = [];
for (const { model, context, options } of cases) {
  let body = null;
  const stream = streamOpenAICompletions(model, context, {
    ...options,
    onPayload: (params) => {
      body = JSON.parse(JSON.stringify(params));
      throw new Error("captured");
    },
  });
  const result = await stream.result();
  out.push(body ?? { __error: result.errorMessage ?? null });
}
process.stdout.write(JSON.stringify(out));
