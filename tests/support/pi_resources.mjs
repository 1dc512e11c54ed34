// Runs pi-coding-agent 0.73.1's own resource loading, system prompt and input expansion for the
// differential test tests/cli_resources.rs. Reads one JSON request on stdin, prints one JSON
// answer on stdout.
//
//   {"mode": "load", "cwd", "agentDir", "options": {...}, "tools": [names] | null, "inputs": [...]}
//       -> what pi's DefaultResourceLoader loaded, the system prompt of a real AgentSession
//          with those tools, and each input as AgentSession.prompt expands it.
//   {"mode": "build", "cases": [BuildSystemPromptOptions, ...]} -> buildSystemPrompt of each
//   {"mode": "args", "cases": [[content, argsString], ...]} -> parseCommandArgs and substituteArgs
//
// PI_NPM_MODULES: the node_modules folder holding @mariozechner/pi-coding-agent. Run it with
// HOME and the working directory set as the case wants (pi reads both from the process).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.PI_NPM_MODULES;
const pkgDir = join(modules, "@mariozechner", "pi-coding-agent");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
if (pkg.version !== "0.73.1") console.error(`warning: pi-coding-agent is ${pkg.version}, not 0.73.1`);
const load = (rel) => import(pathToFileURL(join(pkgDir, rel)).href);
const pi = await load(pkg.exports["."].import);
const { buildSystemPrompt } = await load("dist/core/system-prompt.js");
const { expandPromptTemplate, parseCommandArgs, substituteArgs } = await load("dist/core/prompt-templates.js");
const { getReadmePath, getDocsPath, getExamplesPath } = await load("dist/config.js");
const { isLocalPath } = await load("dist/utils/paths.js");
const { resolve } = await import("node:path");

const request = JSON.parse(readFileSync(0, "utf8"));

function localDate() {
  const now = new Date();
  return `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, "0")}-${String(now.getDate()).padStart(2, "0")}`;
}

async function loadCase(req) {
  const { cwd, agentDir, options } = req;
  // pi's main: resolveCliPaths, then the loader with the flags.
  const cliPaths = (paths) => paths?.map((p) => (isLocalPath(p) ? resolve(cwd, p) : p));
  const settingsManager = pi.SettingsManager.create(cwd, agentDir);
  const resourceLoader = new pi.DefaultResourceLoader({
    cwd,
    agentDir,
    settingsManager,
    additionalSkillPaths: cliPaths(options.skills),
    additionalPromptTemplatePaths: cliPaths(options.promptTemplates),
    noExtensions: true,
    noThemes: true,
    noSkills: options.noSkills,
    noPromptTemplates: options.noPromptTemplates,
    noContextFiles: options.noContextFiles,
    systemPrompt: options.systemPrompt,
    appendSystemPrompt: options.appendSystemPrompt,
  });
  const dateBefore = localDate();
  await resourceLoader.reload();
  const { session } = await pi.createAgentSession({
    cwd,
    agentDir,
    resourceLoader,
    settingsManager,
    sessionManager: pi.SessionManager.inMemory(cwd),
    authStorage: pi.AuthStorage.inMemory(),
    ...(req.tools ? { tools: req.tools } : {}),
  });
  const { skills, diagnostics: skillDiagnostics } = resourceLoader.getSkills();
  const { prompts, diagnostics: promptDiagnostics } = resourceLoader.getPrompts();
  const expansions = req.inputs.map((text) => {
    const expanded = session._expandSkillCommand(text);
    return expandPromptTemplate(expanded, [...session.promptTemplates]);
  });
  const answer = {
    systemPrompt: session.systemPrompt,
    dates: [dateBefore, localDate()],
    docs: { readme: getReadmePath(), docs: getDocsPath(), examples: getExamplesPath() },
    contextFiles: resourceLoader.getAgentsFiles().agentsFiles,
    customPrompt: resourceLoader.getSystemPrompt() ?? null,
    appendSystemPrompt: resourceLoader.getAppendSystemPrompt(),
    skills: skills.map((s) => ({
      name: s.name,
      description: s.description,
      filePath: s.filePath,
      baseDir: s.baseDir,
      disableModelInvocation: s.disableModelInvocation,
      sourceInfo: s.sourceInfo,
    })),
    prompts: prompts.map((p) => ({
      name: p.name,
      description: p.description,
      argumentHint: p.argumentHint ?? null,
      content: p.content,
      filePath: p.filePath,
      sourceInfo: p.sourceInfo,
    })),
    diagnostics: [...skillDiagnostics, ...promptDiagnostics],
    expansions,
  };
  session.dispose?.();
  return answer;
}

let answer;
if (request.mode === "load") {
  answer = await loadCase(request);
} else if (request.mode === "build") {
  answer = {
    dates: [localDate()],
    docs: { readme: getReadmePath(), docs: getDocsPath(), examples: getExamplesPath() },
    prompts: request.cases.map((c) => buildSystemPrompt(c)),
  };
} else if (request.mode === "args") {
  answer = request.cases.map(([content, args]) => {
    const parsed = parseCommandArgs(args);
    return { parsed, result: substituteArgs(content, parsed) };
  });
} else {
  throw new Error(`unknown mode ${request.mode}`);
}
process.stdout.write(JSON.stringify(answer));
process.exit(0);
