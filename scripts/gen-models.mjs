#!/usr/bin/env node
// Generates src/llm/models/catalog_data.rs, the built-in model catalog, from pi-ai's own
// `models.generated.js` (the npm package, not the network), so our catalog is pi's.
//
//   node scripts/gen-models.mjs           # rewrite src/llm/models/catalog_data.rs
//   node scripts/gen-models.mjs --check   # exit 1 when the checked-in file is stale
//
// PI_NPM names the directory holding pi's `node_modules` (default: `.pi-npm` at the repo
// root, where `npm install @mariozechner/pi-ai@0.73.1` puts it).
//
// The output is Rust source of static tables (no parsing at run time). It also records a
// checksum of pi's catalog in a canonical JSON form; `cargo test` recomputes it from the
// Rust tables, which proves the conversion back to `Model` reproduces pi's data exactly.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const piNpm = resolve(process.env.PI_NPM || join(root, ".pi-npm"));
const piAi = join(piNpm, "node_modules", "@mariozechner", "pi-ai");
const out = join(root, "src", "llm", "models", "catalog_data.rs");

const { version } = JSON.parse(readFileSync(join(piAi, "package.json"), "utf8"));
const { MODELS } = await import(pathToFileURL(join(piAi, "dist", "models.generated.js")).href);

// ---- canonical JSON + FNV-1a 64 (mirrored by the Rust test in src/llm/models/catalog.rs) ----

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
function canonicalNumber(x) {
    if (Number.isInteger(x) && Math.abs(x) <= MAX_SAFE) return String(x);
    // Non-integers by their exact bits, so no float formatting difference can hide.
    const bits = new BigUint64Array(new Float64Array([x]).buffer)[0];
    return `"f64:${bits.toString(16).padStart(16, "0")}"`;
}
function canonical(v) {
    if (v === null) return "null";
    if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
    switch (typeof v) {
        case "number":
            return canonicalNumber(v);
        case "string":
            return JSON.stringify(v);
        case "boolean":
            return String(v);
        case "object": {
            const keys = Object.keys(v)
                .filter((k) => v[k] !== undefined)
                .sort();
            return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
        }
        default:
            throw new Error(`unexpected ${typeof v}`);
    }
}
function fnv1a64(text) {
    let h = 0xcbf29ce484222325n;
    for (const byte of Buffer.from(text, "utf8")) {
        h ^= BigInt(byte);
        h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
    }
    return h;
}

// ---- Rust source ----

function rustStr(s) {
    let out = '"';
    for (const ch of s) {
        const code = ch.codePointAt(0);
        if (ch === '"' || ch === "\\") out += `\\${ch}`;
        else if (code < 0x20 || code === 0x7f) out += `\\u{${code.toString(16)}}`;
        else out += ch;
    }
    return `${out}"`;
}
function rustF64(x) {
    if (!Number.isFinite(x)) throw new Error(`non-finite price ${x}`);
    const s = String(x);
    return /[.e]/.test(s) ? s : `${s}.0`;
}
function rustU64(x, what) {
    if (!Number.isInteger(x) || x < 0) throw new Error(`${what} is not a u64: ${x}`);
    return String(x);
}
const LEVEL = { off: "Off", minimal: "Minimal", low: "Low", medium: "Medium", high: "High", xhigh: "Xhigh" };
const INPUT = { text: "Text", image: "Image" };
const KNOWN_KEYS = new Set([
    "id", "name", "api", "provider", "baseUrl", "reasoning", "input", "cost", "contextWindow",
    "maxTokens", "headers", "compat", "thinkingLevelMap",
]);

function entry(m) {
    for (const k of Object.keys(m)) if (!KNOWN_KEYS.has(k)) throw new Error(`${m.provider}/${m.id}: unknown field ${k}`);
    const headers = Object.entries(m.headers ?? {})
        .map(([k, v]) => `(${rustStr(k)}, ${rustStr(v)})`)
        .join(", ");
    const map = Object.entries(m.thinkingLevelMap ?? {})
        .map(([k, v]) => {
            if (!LEVEL[k]) throw new Error(`${m.id}: unknown thinking level ${k}`);
            return `(ThinkingLevel::${LEVEL[k]}, ${v === null ? "None" : `Some(${rustStr(v)})`})`;
        })
        .join(", ");
    const { input, output, cacheRead, cacheWrite } = m.cost;
    return [
        "            Entry {",
        `                id: ${rustStr(m.id)},`,
        `                name: ${rustStr(m.name)},`,
        `                api: ${rustStr(m.api)},`,
        `                base_url: ${rustStr(m.baseUrl)},`,
        `                reasoning: ${m.reasoning ? "true" : "false"},`,
        `                input: &[${m.input.map((i) => `InputModality::${INPUT[i]}`).join(", ")}],`,
        `                cost: [${[input, output, cacheRead, cacheWrite].map(rustF64).join(", ")}],`,
        `                context_window: ${rustU64(m.contextWindow, "contextWindow")},`,
        `                max_tokens: ${rustU64(m.maxTokens, "maxTokens")},`,
        `                headers: ${m.headers ? `Some(&[${headers}])` : "None"},`,
        `                compat: ${m.compat ? `Some(${rustStr(JSON.stringify(m.compat))})` : "None"},`,
        `                thinking_level_map: ${m.thinkingLevelMap ? `Some(&[${map}])` : "None"},`,
        "            },",
    ].join("\n");
}

const all = [];
const providers = [];
for (const [provider, models] of Object.entries(MODELS)) {
    const list = Object.values(models);
    for (const m of list) if (m.provider !== provider) throw new Error(`${m.id}: provider ${m.provider} under ${provider}`);
    // The Rust side finds a model by binary search (byte order of the ids).
    for (let i = 1; i < list.length; i++) {
        if (Buffer.compare(Buffer.from(list[i - 1].id), Buffer.from(list[i].id)) >= 0) {
            throw new Error(`${provider}: ids not sorted at ${list[i].id}; change catalog.rs's lookup`);
        }
    }
    all.push(...list);
    providers.push(`    ProviderEntry {\n        name: ${rustStr(provider)},\n        models: &[\n${list.map(entry).join("\n")}\n        ],\n    },`);
}

const checksum = fnv1a64(canonical(all));
const source = `// @generated by scripts/gen-models.mjs from @mariozechner/pi-ai ${version}. Do not edit:
// run \`node scripts/gen-models.mjs\` (see src/llm/models/mod.rs).

use super::{Entry, ProviderEntry};
use crate::llm::model::InputModality;
use crate::llm::thinking::ThinkingLevel;

/// The pi-ai version this catalog was generated from.
pub(crate) const PI_AI_VERSION: &str = ${rustStr(version)};

/// Number of models.
#[cfg(test)]
pub(super) const MODEL_COUNT: usize = ${all.length};

/// FNV-1a 64 of pi's catalog in canonical JSON (keys sorted, non-integers as their bits).
#[cfg(test)]
pub(super) const PI_CHECKSUM: u64 = 0x${checksum.toString(16).padStart(16, "0")};

/// Providers in pi's order (\`getProviders()\`), each with its models in pi's order.
pub(super) static PROVIDERS: &[ProviderEntry] = &[
${providers.join("\n")}
];
`;

if (process.argv.includes("--check")) {
    let current = "";
    try {
        current = readFileSync(out, "utf8");
    } catch {}
    if (current !== source) {
        console.error(`src/llm/models/catalog_data.rs is stale: run node scripts/gen-models.mjs (pi-ai ${version})`);
        process.exit(1);
    }
    console.log(`src/llm/models/catalog_data.rs is up to date: ${all.length} models of pi-ai ${version}`);
} else {
    writeFileSync(out, source);
    console.log(`wrote src/llm/models/catalog_data.rs: ${all.length} models, ${providers.length} providers (pi-ai ${version})`);
}
