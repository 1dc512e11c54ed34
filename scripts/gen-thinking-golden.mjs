#!/usr/bin/env node
// Writes tests/fixtures/pi/thinking-golden.json: what pi-ai itself answers, for every model of
// its catalog (plus a few made-up ones for the branches the catalog does not reach), to
//   * getSupportedThinkingLevels(model),
//   * clampThinkingLevel(model, level) for each level,
//   * the options each provider's streamSimple passes on to its raw stream, for every
//     reasoning level (and none) under a few option sets.
// src/llm/thinking/provider_options.rs's tests compare ours with it.
//
//   node scripts/gen-thinking-golden.mjs           # rewrite the golden file
//   node scripts/gen-thinking-golden.mjs --check   # exit 1 when it is stale
//
// PI_NPM names the directory holding pi's node_modules (default: .pi-npm at the repo root).
// The options are captured by a module hook (scripts/lib/capture-provider-options.mjs) that
// makes the raw stream functions return what they were given; pi's code is otherwise unchanged.

import { readFileSync, writeFileSync } from "node:fs";
import { register } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..");
const piNpm = resolve(process.env.PI_NPM || join(root, ".pi-npm"));
const dist = join(piNpm, "node_modules", "@mariozechner", "pi-ai", "dist");
const out = join(root, "tests", "fixtures", "pi", "thinking-golden.json");

register(pathToFileURL(join(here, "lib", "capture-provider-options.mjs")).href);
const load = (path) => import(pathToFileURL(join(dist, path)).href);

const { version } = JSON.parse(readFileSync(join(dist, "..", "package.json"), "utf8"));
const { MODELS } = await load("models.generated.js");
const { getSupportedThinkingLevels, clampThinkingLevel } = await load("models.js");

const streamSimpleByApi = {
    "anthropic-messages": (await load("providers/anthropic.js")).streamSimpleAnthropic,
    "bedrock-converse-stream": (await load("providers/amazon-bedrock.js")).streamSimpleBedrock,
    "openai-completions": (await load("providers/openai-completions.js")).streamSimpleOpenAICompletions,
    "openai-responses": (await load("providers/openai-responses.js")).streamSimpleOpenAIResponses,
    "azure-openai-responses": (await load("providers/azure-openai-responses.js")).streamSimpleAzureOpenAIResponses,
    "openai-codex-responses": (await load("providers/openai-codex-responses.js")).streamSimpleOpenAICodexResponses,
    "google-generative-ai": (await load("providers/google.js")).streamSimpleGoogle,
    "google-vertex": (await load("providers/google-vertex.js")).streamSimpleGoogleVertex,
    "mistral-conversations": (await load("providers/mistral.js")).streamSimpleMistral,
};

let captured;
globalThis.__piCaptureOptions = (options) => {
    captured = options;
    return "captured";
};
function providerOptions(model, options) {
    captured = undefined;
    const result = streamSimpleByApi[model.api](model, { messages: [] }, options);
    if (result !== "captured") throw new Error(`${model.provider}/${model.id}: raw stream not captured`);
    // As JSON: functions and undefined fields drop out, as in a request.
    return JSON.parse(JSON.stringify(captured));
}

const LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"];
const REASONING = [null, "minimal", "low", "medium", "high", "xhigh"];
// Option sets, each tried with every REASONING value (as `reasoning`, absent for null).
const VARIANTS = [
    { apiKey: "test-key" },
    {
        apiKey: "test-key",
        maxTokens: 3000,
        temperature: 0.25,
        thinkingBudgets: { minimal: 500, low: 1500, medium: 2500, high: 40000 },
        sessionId: "session-1",
        cacheRetention: "long",
        headers: { "x-test": "1" },
        metadata: { user_id: "u" },
        maxRetryDelayMs: 5000,
        transport: "sse",
        timeoutMs: 1000,
        maxRetries: 1,
        toolChoice: "auto",
        serviceTier: "flex",
        thinkingEnabled: true,
    },
    { apiKey: "test-key", maxTokens: 0, thinkingBudgets: { high: 100 } },
];

const base = (over) => ({
    name: over.id,
    baseUrl: "http://127.0.0.1:1",
    reasoning: true,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128000,
    maxTokens: 64000,
    ...over,
});
// Branches no catalog model reaches.
const SYNTHETIC = [
    base({ id: "claude-budget-no-max", api: "anthropic-messages", provider: "local", maxTokens: 0 }),
    base({ id: "claude-sonnet-4.6-local", api: "anthropic-messages", provider: "local", thinkingLevelMap: { low: "quick", xhigh: null } }),
    base({ id: "arn:aws:bedrock:us-east-1:1:application-inference-profile/abc", name: "Claude Opus 4.6 profile", api: "bedrock-converse-stream", provider: "amazon-bedrock" }),
    base({ id: "arn:aws:bedrock:us-east-1:1:application-inference-profile/def", name: "Claude Sonnet 4.5 profile", api: "bedrock-converse-stream", provider: "amazon-bedrock", maxTokens: 8000 }),
    base({ id: "gemini-2.5-pro-x", api: "google-generative-ai", provider: "local", thinkingLevelMap: { xhigh: "max" } }),
    base({ id: "gemini-3-pro-x", api: "google-generative-ai", provider: "local", thinkingLevelMap: { xhigh: "max" } }),
    base({ id: "gemma-4-vertex", api: "google-vertex", provider: "google-vertex" }),
    base({ id: "gemini-3.1-flash-lite", api: "google-vertex", provider: "google-vertex", thinkingLevelMap: { xhigh: "x" } }),
    base({ id: "mistral-small-latest", api: "mistral-conversations", provider: "local", thinkingLevelMap: { low: null, medium: "med", high: null } }),
    base({ id: "magistral-off", api: "mistral-conversations", provider: "local", reasoning: false }),
    base({ id: "local-reasoner", api: "openai-completions", provider: "local", thinkingLevelMap: { off: "none", minimal: null, xhigh: "max" } }),
    base({ id: "local-plain", api: "openai-responses", provider: "local", reasoning: false }),
];

function row(model) {
    return {
        supported: getSupportedThinkingLevels(model),
        clamp: LEVELS.map((level) => clampThinkingLevel(model, level)),
        options: VARIANTS.map((variant) =>
            REASONING.map((reasoning) =>
                providerOptions(model, reasoning === null ? { ...variant } : { ...variant, reasoning }),
            ),
        ),
    };
}

// Compress: each distinct options object and each distinct row is stored once.
const outputs = [];
const outputIndex = new Map();
const rows = [];
const rowIndex = new Map();
function intern(list, index, value) {
    const key = JSON.stringify(value);
    if (!index.has(key)) {
        index.set(key, list.length);
        list.push(value);
    }
    return index.get(key);
}
function internRow(model) {
    const r = row(model);
    r.options = r.options.map((perReasoning) => perReasoning.map((o) => intern(outputs, outputIndex, o)));
    return intern(rows, rowIndex, r);
}

const models = {};
let cases = 0;
for (const [provider, list] of Object.entries(MODELS)) {
    for (const model of Object.values(list)) {
        models[`${provider}/${model.id}`] = internRow(model);
        cases++;
    }
}
const synthetic = SYNTHETIC.map((model) => ({ model, row: internRow(model) }));
cases += synthetic.length;

const golden = {
    about: `pi-ai ${version}: getSupportedThinkingLevels, clampThinkingLevel and the options each streamSimple passes to its raw stream; written by scripts/gen-thinking-golden.mjs`,
    levels: LEVELS,
    reasoning: REASONING,
    variants: VARIANTS,
    outputs,
    rows,
    models,
    synthetic,
};
// One entry per line keeps the file small and its diffs readable.
const lines = (items) => `[\n${items.map((x) => `    ${JSON.stringify(x)}`).join(",\n")}\n  ]`;
const text = `{
  "about": ${JSON.stringify(golden.about)},
  "levels": ${JSON.stringify(LEVELS)},
  "reasoning": ${JSON.stringify(REASONING)},
  "variants": ${lines(VARIANTS)},
  "outputs": ${lines(outputs)},
  "rows": ${lines(rows)},
  "synthetic": ${lines(synthetic)},
  "models": {\n${Object.entries(models).map(([k, v]) => `    ${JSON.stringify(k)}: ${v}`).join(",\n")}\n  }
}
`;
JSON.parse(text);

const summary = `${cases} models × ${VARIANTS.length} option sets × ${REASONING.length} reasoning values; ${rows.length} distinct rows, ${outputs.length} distinct options`;
if (process.argv.includes("--check")) {
    let current = "";
    try {
        current = readFileSync(out, "utf8");
    } catch {}
    if (current !== text) {
        console.error("tests/fixtures/pi/thinking-golden.json is stale: run node scripts/gen-thinking-golden.mjs");
        process.exit(1);
    }
    console.log(`thinking-golden.json is up to date (${summary})`);
} else {
    writeFileSync(out, text);
    console.log(`wrote tests/fixtures/pi/thinking-golden.json: ${summary}`);
}
