// Runs pi-coding-agent 0.73.1's own configuration code for the differential tests of
// tests/cli_config.rs: model resolution, model scopes, --list-models, the default model, and
// settings (merge, getters, writes).
//
//   node pi_config.mjs <input.json>   -> JSON on stdout
//
// The input names an agent directory (holding models.json and settings.json), a cwd (with
// .pi/settings.json), auth.json's data, and the cases to run. PI_NPM_MODULES: the
// node_modules folder holding @mariozechner/pi-coding-agent. Run with a cleared environment,
// so no API key of the machine is seen.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.PI_NPM_MODULES;
const pkgDir = join(modules, "@mariozechner", "pi-coding-agent");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
if (pkg.version !== "0.73.1") console.error(`warning: pi-coding-agent is ${pkg.version}, not 0.73.1`);
const load = (path) => import(pathToFileURL(join(pkgDir, "dist", path)).href);

const { resolveCliModel, resolveModelScope, findInitialModel } = await load("core/model-resolver.js");
const { AuthStorage } = await load("core/auth-storage.js");
const { ModelRegistry } = await load("core/model-registry.js");
const { listModels } = await load("cli/list-models.js");
const { SettingsManager } = await load("core/settings-manager.js");

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));

// pi prints with console.log and console.warn: capture both.
const captured = { log: [], warn: [] };
const realLog = console.log;
const realWarn = console.warn;
function capture(on) {
  if (on) {
    captured.log = [];
    captured.warn = [];
    console.log = (...a) => captured.log.push(a.join(" "));
    console.warn = (...a) => captured.warn.push(a.join(" "));
  } else {
    console.log = realLog;
    console.warn = realWarn;
  }
}

const out = {};
const auth = AuthStorage.inMemory(input.auth ?? {});
const registry = ModelRegistry.create(auth, join(input.agentDir, "models.json"));
const ref = (m) => (m ? { provider: m.provider, id: m.id, name: m.name } : null);

out.cli = (input.cli ?? []).map(([provider, model]) => {
  const r = resolveCliModel({ cliProvider: provider ?? undefined, cliModel: model, modelRegistry: registry });
  return {
    model: ref(r.model),
    thinkingLevel: r.thinkingLevel ?? null,
    warning: r.warning ?? null,
    error: r.error ?? null,
  };
});

out.scope = [];
for (const patterns of input.scope ?? []) {
  capture(true);
  const scoped = await resolveModelScope(patterns, registry);
  capture(false);
  out.scope.push({
    models: scoped.map((s) => [s.model.provider, s.model.id, s.thinkingLevel ?? null]),
    warnings: captured.warn,
  });
}

out.list = [];
for (const search of input.list ?? []) {
  capture(true);
  await listModels(registry, search ?? undefined);
  capture(false);
  out.list.push(captured.log.map((l) => `${l}\n`).join(""));
}

out.initial = [];
for (const settings of input.initial ?? []) {
  const r = await findInitialModel({
    scopedModels: [],
    isContinuing: false,
    defaultProvider: settings.defaultProvider,
    defaultModelId: settings.defaultModel,
    defaultThinkingLevel: settings.defaultThinkingLevel,
    modelRegistry: registry,
  });
  out.initial.push(ref(r.model));
}

if (input.settings) {
  const sm = SettingsManager.create(input.cwd, input.agentDir);
  out.settings = {
    merged: sm.settings,
    global: sm.getGlobalSettings(),
    project: sm.getProjectSettings(),
    compaction: sm.getCompactionSettings(),
    branchSummary: sm.getBranchSummarySettings(),
    retry: sm.getRetrySettings(),
    providerRetry: { ...sm.getProviderRetrySettings() },
    sessionDir: sm.getSessionDir() ?? null,
    steeringMode: sm.getSteeringMode(),
    followUpMode: sm.getFollowUpMode(),
    transport: sm.getTransport(),
    enabledModels: sm.getEnabledModels() ?? null,
    defaultThinkingLevel: sm.getDefaultThinkingLevel() ?? null,
    enableSkillCommands: sm.getEnableSkillCommands(),
    skills: sm.getSkillPaths(),
    errors: sm.drainErrors().map((e) => e.scope),
  };
  // The writes pi makes after /model, a thinking level change and /settings toggles.
  for (const w of input.settings.writes ?? []) {
    if (w[0] === "model") sm.setDefaultModelAndProvider(w[1], w[2]);
    if (w[0] === "thinking") sm.setDefaultThinkingLevel(w[1]);
    if (w[0] === "compaction") sm.setCompactionEnabled(w[1]);
    if (w[0] === "retry") sm.setRetryEnabled(w[1]);
    if (w[0] === "steering") sm.setSteeringMode(w[1]);
    await sm.flush();
  }
  out.settings.writeErrors = sm.drainErrors().map((e) => e.scope);
  out.settings.mergedAfter = sm.settings;
}

process.stdout.write(JSON.stringify(out));
