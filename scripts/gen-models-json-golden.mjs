#!/usr/bin/env node
// Writes tests/fixtures/pi/models-json-golden.json: what pi-coding-agent's own ModelRegistry
// makes of a set of models.json files: its load error, every model it adds or changes
// (compared with pi-ai's catalog), and getApiKeyAndHeaders for them. src/llm/models/registry.rs's
// tests load the same texts into ours and compare.
//
//   node scripts/gen-models-json-golden.mjs           # rewrite the golden file
//   node scripts/gen-models-json-golden.mjs --check   # exit 1 when it is stale
//
// PI_NPM names the directory holding pi's node_modules (default: .pi-npm at the repo root).
// Provider names are made up (or their env variables unset here) so no key of the machine
// running this ends up in the file.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const piNpm = resolve(process.env.PI_NPM || join(root, ".pi-npm"));
const modules = join(piNpm, "node_modules", "@mariozechner");
const out = join(root, "tests", "fixtures", "pi", "models-json-golden.json");

for (const name of [
    "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY", "GROQ_API_KEY",
    "ZAI_API_KEY", "GEMINI_API_KEY", "COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN",
]) {
    delete process.env[name];
}

const agent = await import(pathToFileURL(join(modules, "pi-coding-agent", "dist", "index.js")).href);
const { getModel } = await import(pathToFileURL(join(modules, "pi-ai", "dist", "models.js")).href);
const { version } = JSON.parse(readFileSync(join(modules, "pi-coding-agent", "package.json"), "utf8"));

const CASES = {
    "local-server-defaults": `{
  // Ollama on this machine
  "providers": {
    "ollama": {
      "baseUrl": "http://127.0.0.1:11434/v1",
      "api": "openai-completions",
      "apiKey": "ollama",
      "compat": { "supportsDeveloperRole": false },
      "models": [
        { "id": "llama3.1:8b", },
        { "id": "qwen3:32b", "name": "Qwen 3", "reasoning": true, "input": ["text", "image"],
          "contextWindow": 32768, "maxTokens": 8192,
          "cost": { "input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0 },
          "thinkingLevelMap": { "off": null, "xhigh": "max" },
          "compat": { "thinkingFormat": "qwen", "supportsDeveloperRole": true } },
      ],
    },
    "vllm": {
      "baseUrl": "http://127.0.0.1:8000/v1", "apiKey": "none",
      "models": [ { "id": "m", "api": "openai-responses", "baseUrl": "http://127.0.0.1:9000/v1" } ]
    },
  },
}`,
    "built-in-overrides": `{
  "providers": {
    "zai": {
      "baseUrl": "http://127.0.0.1:4000/v1",
      "compat": { "openRouterRouting": { "only": ["a"] }, "supportsStore": false },
      "modelOverrides": {
        "glm-4.7": {
          "name": "GLM via proxy", "reasoning": false, "input": ["text", "image"],
          "cost": { "input": 1 }, "contextWindow": 100000, "maxTokens": 2000,
          "thinkingLevelMap": { "low": null, "xhigh": "high" },
          "compat": { "openRouterRouting": { "order": ["b"] }, "vercelGatewayRouting": { "only": ["x"] } }
        },
        "no-such-model": { "name": "ignored" }
      },
      "models": [ { "id": "my-model" }, { "id": "glm-5.1", "name": "Replaced" } ]
    },
    "openrouter": {
      "modelOverrides": { "anthropic/claude-opus-4.6": { "cost": { "output": 1, "cacheWrite": 2 }, "thinkingLevelMap": { "xhigh": null } } }
    },
    "anthropic": { "models": [ { "id": "claude-opus-4-7", "name": "Mine", "reasoning": true } ] },
    "groq": { "headers": { "X-Team": "t" } },
    "github-copilot": { "headers": { "X-Extra": "e", "Editor-Version": "mine" } },
    "google": { "modelOverrides": { "gemini-2.5-pro": { "thinkingLevelMap": { "minimal": null } } } }
  }
}`,
    "request-auth": `{
  "providers": {
    "corp": {
      "baseUrl": "http://127.0.0.1:1", "api": "openai-completions",
      "apiKey": "!echo cmd-key", "authHeader": true,
      "headers": { "X-Literal": "PI_GOLDEN_UNSET_NAME", "X-Both": "provider" },
      "modelOverrides": { "a": { "headers": { "X-Override": "o" } }, "b": { "headers": { "X-Override": "o" } } },
      "models": [
        { "id": "a", "headers": { "X-Both": "model", "X-Cmd": "!printf ' hv '" } },
        { "id": "c" }
      ]
    },
    "plain": {
      "baseUrl": "http://127.0.0.1:2", "api": "anthropic-messages", "apiKey": "literal-key",
      "models": [ { "id": "p", "headers": {} } ]
    },
    "broken-key": {
      "baseUrl": "http://127.0.0.1:3", "api": "openai-completions", "apiKey": "!exit 3",
      "models": [ { "id": "k" } ]
    },
    "broken-header": {
      "baseUrl": "http://127.0.0.1:4", "api": "openai-completions", "apiKey": "k",
      "headers": { "H": "!exit 4" },
      "models": [ { "id": "h" } ]
    }
  }
}`,
    "error-missing-base-url": `{"providers": {"x": {"apiKey": "k", "api": "openai-completions", "models": [{"id": "m"}]}}}`,
    "error-missing-api-key": `{"providers": {"x": {"baseUrl": "u", "api": "openai-completions", "models": [{"id": "m"}]}}}`,
    "error-missing-api": `{"providers": {"x": {"baseUrl": "u", "apiKey": "k", "models": [{"id": "m"}]}}}`,
    "error-empty-provider": `{"providers": {"x": {}}}`,
    "error-context-window": `{"providers": {"openai": {"models": [{"id": "m", "contextWindow": 0}]}}}`,
    "error-max-tokens": `{"providers": {"openai": {"models": [{"id": "m", "maxTokens": -5}]}}}`,
    "error-syntax": `{"providers": {`,
    "error-schema-type": `{"providers": {"x": {"baseUrl": 5}}}`,
    "error-schema-missing-providers": `{}`,
    "error-schema-empty-string": `{"providers": {"x": {"baseUrl": ""}}}`,
};

// JSON with // comments and trailing commas (string literals left alone).
function looseJson(text) {
    const withoutComments = text.replace(/"(?:\\.|[^"\\])*"|\/\/[^\n]*/g, (m) => (m[0] === '"' ? m : ""));
    return JSON.parse(withoutComments.replace(/"(?:\\.|[^"\\])*"|,(\s*[}\]])/g, (m, tail) => tail ?? m));
}

const dir = mkdtempSync(join(tmpdir(), "pi-models-json-"));
const cases = [];
try {
    for (const [name, text] of Object.entries(CASES)) {
        const path = join(dir, `${name}.json`);
        writeFileSync(path, text);
        const registry = agent.ModelRegistry.create(agent.AuthStorage.inMemory(), path);
        const error = registry.getError() ?? null;
        const all = registry.getAll();
        const changed = [];
        for (const model of all) {
            const builtIn = getModel(model.provider, model.id);
            const json = JSON.parse(JSON.stringify(model));
            if (!builtIn || JSON.stringify(JSON.parse(JSON.stringify(builtIn))) !== JSON.stringify(json)) {
                const auth = await registry.getApiKeyAndHeaders(model);
                changed.push({ model: json, available: registry.getAvailable().includes(model), auth });
            }
        }
        // The request auth of each configured provider's first model, changed or not.
        const probes = [];
        for (const provider of error ? [] : Object.keys(looseJson(text).providers)) {
            const first = all.find((m) => m.provider === provider);
            if (first) probes.push({ provider, id: first.id, auth: await registry.getApiKeyAndHeaders(first) });
        }
        cases.push({ name, text, error: error && error.replace(path, "<path>"), total: all.length, changed, probes });
    }
} finally {
    rmSync(dir, { recursive: true, force: true });
}

const text = `{
  "about": ${JSON.stringify(`pi-coding-agent ${version} ModelRegistry on each models.json text; written by scripts/gen-models-json-golden.mjs`)},
  "cases": [
${cases.map((c) => `    ${JSON.stringify(c)}`).join(",\n")}
  ]
}
`;
if (process.argv.includes("--check")) {
    let current = "";
    try {
        current = readFileSync(out, "utf8");
    } catch {}
    if (current !== text) {
        console.error("tests/fixtures/pi/models-json-golden.json is stale: run node scripts/gen-models-json-golden.mjs");
        process.exit(1);
    }
    console.log(`models-json-golden.json is up to date (${cases.length} cases)`);
} else {
    writeFileSync(out, text);
    console.log(`wrote tests/fixtures/pi/models-json-golden.json: ${cases.length} cases`);
}
