//! `pi_engine::cli::resources` against pi itself: directory trees (an agent directory, nested
//! project directories with `AGENTS.md`/`CLAUDE.md`, skills valid and broken, templates,
//! settings, `SYSTEM.md`…) loaded by pi 0.73.1's `DefaultResourceLoader` and a real
//! `AgentSession` on node (`tests/support/pi_resources.mjs`) and by our loader: the system
//! prompt, the context files, skills, templates, diagnostics and input expansions must be the
//! same. Only the date and pi's own package paths (README/docs/examples) are normalized.
//!
//! Needs node and the npm package `@mariozechner/pi-coding-agent@0.73.1` in `.pi-npm/` or
//! `$PI_NPM` (`scripts/install-pi-npm.sh`): ignored by a plain `cargo test`, run by `.ci/run`.
#![cfg(feature = "cli")]

#[path = "support/pi_npm.rs"]
mod pi_npm;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use pi_engine::agent::AgentTool;
use pi_engine::cli::resources::{
    ContextFile, DocsPaths, ResourceKind, ResourceLoader, ResourceOptions, Resources,
    SettingsEntries, Skill, SourceInfo, SourceScope, SystemPromptOptions, build_system_prompt,
    expand_input, local_date, parse_command_args, substitute_args,
};
use pi_engine::tools::BuiltinTools;
use serde_json::{Value, json};

/// Runs the driver with `request` on stdin, in `cwd` with `HOME=home`.
fn run_pi(request: &Value, cwd: &Path, home: &Path) -> Value {
    let modules = pi_npm::require("@mariozechner/pi-coding-agent");
    let mut child = pi_npm::node_script("pi_resources.mjs", &modules)
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("PI_PACKAGE_DIR")
        .env_remove("PI_CODING_AGENT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "pi failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Writes `files` (path relative to `root` -> content) under `root`; a name ending in `/` is
/// an empty directory.
fn lay_out(root: &Path, files: &[(&str, &[u8])]) {
    for (rel, content) in files {
        let path = root.join(rel);
        if rel.ends_with('/') {
            std::fs::create_dir_all(&path).unwrap();
            continue;
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    (dir, root)
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

/// The date line and pi's package paths made placeholders (ours are pi-engine's).
fn normalize_prompt(prompt: &str, docs: &[(String, &str)]) -> String {
    let mut out = prompt.to_owned();
    for (path, placeholder) in docs {
        out = out.replace(path.as_str(), placeholder);
    }
    let date = regex::Regex::new(r"\nCurrent date: \d{4}-\d{2}-\d{2}\n").unwrap();
    date.replace_all(&out, "\nCurrent date: <DATE>\n")
        .into_owned()
}

fn pi_docs(pi: &Value) -> Vec<(String, &'static str)> {
    vec![
        (
            pi["docs"]["readme"].as_str().unwrap().to_owned(),
            "<README>",
        ),
        (pi["docs"]["docs"].as_str().unwrap().to_owned(), "<DOCS>"),
        (
            pi["docs"]["examples"].as_str().unwrap().to_owned(),
            "<EXAMPLES>",
        ),
    ]
}

fn our_docs() -> Vec<(String, &'static str)> {
    let d = DocsPaths::detect();
    vec![
        (s(&d.readme), "<README>"),
        (s(&d.docs), "<DOCS>"),
        (s(&d.examples), "<EXAMPLES>"),
    ]
}

/// Our local date is one of the dates node saw around its run.
fn assert_date(pi: &Value) {
    let ours = local_date();
    let dates: Vec<&str> = pi["dates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(
        dates.contains(&ours.as_str()),
        "our date {ours}, node's {dates:?}"
    );
}

fn skill_json(s: &Skill) -> Value {
    json!({
        "name": s.name,
        "description": s.description,
        "filePath": s.file_path,
        "baseDir": s.base_dir,
        "disableModelInvocation": s.disable_model_invocation,
        "sourceInfo": s.source_info,
    })
}

/// What we loaded, in the driver's shape. A diagnostic's message is compared unless the file
/// is one with broken YAML (the parsers word their errors differently).
fn ours_json(res: &Resources, prompt: &str, expansions: Vec<String>) -> Value {
    json!({
        "systemPrompt": prompt,
        "contextFiles": res.context_files.iter().map(|f| json!({"path": f.path, "content": f.content})).collect::<Vec<_>>(),
        "customPrompt": res.system_prompt,
        "appendSystemPrompt": res.append_system_prompt,
        "skills": res.skills.iter().map(skill_json).collect::<Vec<_>>(),
        "prompts": res.prompt_templates.iter().map(|p| json!({
            "name": p.name,
            "description": p.description,
            "argumentHint": p.argument_hint,
            "content": p.content,
            "filePath": p.file_path,
            "sourceInfo": p.source_info,
        })).collect::<Vec<_>>(),
        // pi's diagnostics are those of skills and templates (it prints the others on stderr).
        "diagnostics": res.diagnostics.iter()
            .filter(|d| matches!(d.resource, ResourceKind::Skill | ResourceKind::PromptTemplate))
            .map(|d| serde_json::to_value(d).unwrap()).collect::<Vec<_>>(),
        "expansions": expansions,
    })
}

fn mask_yaml_errors(diags: &mut Value) {
    for d in diags.as_array_mut().unwrap() {
        if d["path"].as_str().is_some_and(|p| p.contains("bad-yaml")) {
            d["message"] = json!("<yaml error>");
        }
    }
}

/// Compares field by field, so a failure names the part that differs.
fn assert_same(mut ours: Value, mut pis: Value, case: &str) {
    mask_yaml_errors(&mut ours["diagnostics"]);
    mask_yaml_errors(&mut pis["diagnostics"]);
    for key in [
        "contextFiles",
        "customPrompt",
        "appendSystemPrompt",
        "skills",
        "prompts",
        "diagnostics",
        "expansions",
        "systemPrompt",
    ] {
        if ours[key] != pis[key] {
            panic!(
                "{case}: `{key}` differs\nours: {}\npi's: {}",
                serde_json::to_string_pretty(&ours[key]).unwrap(),
                serde_json::to_string_pretty(&pis[key]).unwrap()
            );
        }
    }
}

/// A load case: pi's flags, the active tools (`None`: pi's default set), the inputs.
struct LoadCase<'a> {
    name: &'a str,
    cwd: PathBuf,
    agent_dir: PathBuf,
    home: PathBuf,
    options: Value,
    settings_skills: SettingsEntries,
    settings_prompts: SettingsEntries,
    tools: Option<Vec<&'a str>>,
    inputs: Vec<&'a str>,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

fn run_load_case(case: LoadCase<'_>) -> Resources {
    let pi = run_pi(
        &json!({
            "mode": "load",
            "cwd": s(&case.cwd),
            "agentDir": s(&case.agent_dir),
            "options": case.options,
            "tools": case.tools,
            "inputs": case.inputs,
        }),
        &case.cwd,
        &case.home,
    );
    let o = &case.options;
    let options = ResourceOptions {
        no_context_files: o["noContextFiles"].as_bool().unwrap_or(false),
        no_skills: o["noSkills"].as_bool().unwrap_or(false),
        no_prompt_templates: o["noPromptTemplates"].as_bool().unwrap_or(false),
        skill_paths: strings(&o["skills"]),
        prompt_template_paths: strings(&o["promptTemplates"]),
        system_prompt: o["systemPrompt"].as_str().map(str::to_owned),
        append_system_prompt: strings(&o["appendSystemPrompt"]),
        settings_skills: case.settings_skills.clone(),
        settings_prompts: case.settings_prompts.clone(),
        home_dir: Some(case.home.clone()),
    };
    let res = ResourceLoader::load(&case.cwd, &case.agent_dir, &options);
    let builtin = BuiltinTools::new(&case.cwd);
    let names = case
        .tools
        .clone()
        .unwrap_or_else(|| vec!["read", "bash", "edit", "write"]);
    let tools: Vec<Arc<dyn AgentTool>> =
        names.iter().map(|n| builtin.by_name(n).unwrap()).collect();
    let prompt = build_system_prompt(
        &SystemPromptOptions::new(&case.cwd)
            .with_resources(&res)
            .with_tools(&tools),
    );
    let expansions = case.inputs.iter().map(|t| expand_input(t, &res)).collect();

    assert_date(&pi);
    // `DUMP_PI=1 cargo test … -- --nocapture` shows what pi loaded.
    if std::env::var_os("DUMP_PI").is_some() {
        eprintln!("{}", serde_json::to_string_pretty(&pi).unwrap());
    }
    let mut pis = pi.clone();
    pis["systemPrompt"] = json!(normalize_prompt(
        pi["systemPrompt"].as_str().unwrap(),
        &pi_docs(&pi)
    ));
    let ours = ours_json(&res, &normalize_prompt(&prompt, &our_docs()), expansions);
    assert_same(ours, pis, case.name);
    res
}

const SKILL_TREE: &[(&str, &[u8])] = &[
    ("home/.agents/skills/home-skill/SKILL.md", b"---\nname: home-skill\ndescription: From ~/.agents.\n---\nHome body.\n"),
    ("home/.agents/skills/loose.md", b"---\ndescription: A root file in an .agents dir is no skill.\n---\n"),
    ("agent/AGENTS.md", b"Global rules.\n"),
    ("agent/APPEND_SYSTEM.md", b"Appended from the agent dir."),
    ("agent/settings.json", br#"{"skills": ["../extra-skills"], "prompts": ["../extra-prompts", "!notes-*", "+prompts/notes-keep.md"]}"#),
    ("agent/skills/user-skill/SKILL.md", b"---\nname: user-skill\ndescription: Handles <xml> & \"quotes\" 'too'.\n---\n\n# User skill\n\nSteps.\n"),
    ("agent/skills/root-file.md", b"---\nname: root-file\ndescription: A root .md file.\n---\nRoot body"),
    ("agent/skills/bad-yaml/SKILL.md", b"---\nname: bad-yaml\ndescription: [unclosed\n---\nx"),
    ("agent/skills/no-desc/SKILL.md", b"---\nname: no-desc\n---\nx"),
    ("agent/skills/Bad_Name/SKILL.md", b"---\ndescription: Bad name.\n---\nx"),
    ("agent/skills/hidden/SKILL.md", b"---\ndescription: Only by command.\ndisable-model-invocation: true\n---\nHidden body."),
    ("agent/skills/num-desc/SKILL.md", b"---\ndescription: 42\n---\n"),
    ("agent/skills/num-name/SKILL.md", b"---\nname: 7\ndescription: Numeric name.\n---\n"),
    ("agent/skills/folded/SKILL.md", b"---\ndescription: >\n  Folded text\n  over lines.\nlicense: MIT\nmetadata:\n  a: 1\n---\nFolded body."),
    ("agent/skills/nested/group/deep/SKILL.md", b"---\ndescription: Deep.\n---\n"),
    ("agent/skills/nested/group/deep/inner/SKILL.md", b"---\ndescription: Never reached.\n---\n"),
    ("agent/skills/.gitignore", b"ignored/\n# comment\n"),
    ("agent/skills/ignored/SKILL.md", b"---\ndescription: Ignored.\n---\n"),
    ("agent/skills/node_modules/x/SKILL.md", b"---\ndescription: In node_modules.\n---\n"),
    ("agent/skills/.hidden-dir/SKILL.md", b"---\ndescription: Hidden dir.\n---\n"),
    ("agent/skills/dup/SKILL.md", b"---\nname: shared\ndescription: The user's shared.\n---\n"),
    ("agent/skills/crlf/SKILL.md", b"---\r\ndescription: CRLF skill.\r\n---\r\nLine one\r\nLine two\r\n"),
    ("agent/prompts/review.md", b"---\ndescription: Review code\nargument-hint: \"<file> [focus]\"\n---\nReview $1 focusing on ${@:2}.\nAll: $@ / $ARGUMENTS\n"),
    ("agent/prompts/first-line.md", b"\n\n   This is a very long first line that certainly goes beyond sixty characters\nsecond"),
    ("agent/prompts/shared.md", b"user shared"),
    ("agent/prompts/sub/nested.md", b"not loaded: auto discovery is not recursive"),
    ("agent/prompts/bad-yaml.md", b"---\na: [\n---\nx"),
    ("agent/prompts/.hidden.md", b"hidden"),
    ("agent/prompts/notes.txt", b"not markdown"),
    ("agent/prompts/notes-a.md", b"disabled by the settings' !notes-*"),
    ("agent/prompts/notes-keep.md", b"forced back by the settings' +prompts/notes-keep.md"),
    ("extra-skills/extra-one/SKILL.md", b"---\ndescription: From settings.\n---\n"),
    ("extra-prompts/deep/er.md", b"deep settings prompt $1"),
    ("repo/.git/HEAD", b"ref: refs/heads/main\n"),
    ("repo/AGENTS.md", b"Repo agents."),
    ("repo/CLAUDE.md", b"Repo claude (shadowed by AGENTS.md)."),
    ("repo/.agents/skills/repo-skill/SKILL.md", b"---\ndescription: Disabled by the project settings.\n---\n"),
    ("repo/.agents/skills/repo-two/SKILL.md", b"---\ndescription: Repo two.\n---\n"),
    ("repo/pkg/CLAUDE.md", b"Pkg claude."),
    ("repo/pkg/app/AGENTS.md", b"App agents.\n"),
    ("repo/pkg/app/.pi/settings.json", br#"{"skills": ["!repo-skill"]}"#),
    ("repo/pkg/app/.pi/skills/shared/SKILL.md", b"---\ndescription: The project's shared.\n---\nProject shared body."),
    ("repo/pkg/app/.pi/skills/proj-root.md", b"---\nname: proj-root\ndescription: A project root file.\n---\n"),
    ("repo/pkg/app/.pi/prompts/shared.md", b"---\ndescription: Project shared\n---\nproject shared $@"),
    ("repo/pkg/app/.pi/prompts/fix.md", b"Fix $1 then $2; rest ${@:3}; two from 2: ${@:2:2}; none: $9."),
    ("repo/pkg/app/.agents/skills/app-skill/SKILL.md", b"---\ndescription: App .agents skill.\n---\n"),
    ("cli-skills/cli-root.md", b"---\ndescription: CLI root md.\n---\n"),
    ("cli-skills/cli-dir/SKILL.md", b"---\ndescription: CLI dir.\n---\nCLI body"),
    ("cli-prompts/p.md", b"CLI prompt $ARGUMENTS"),
    ("custom-system.md", b"Custom system prompt from a file."),
    ("append-file.md", b"Appended from a file.\n"),
];

fn skill_tree() -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = tempdir();
    lay_out(&root, SKILL_TREE);
    let long = format!("---\ndescription: {}\n---\n", "d".repeat(1100));
    lay_out(
        &root,
        &[("agent/skills/long-desc/SKILL.md", long.as_bytes())],
    );
    // The same files reached through links: the first path pi keeps wins, silently.
    let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, root.join(at)).unwrap();
    link("../../extra-skills/extra-one", "agent/skills/link-to-extra");
    link("/nonexistent/target", "agent/skills/broken-link");
    link("../../cli-prompts/p.md", "agent/prompts/linked.md");
    (dir, root)
}

fn tree_settings() -> (SettingsEntries, SettingsEntries) {
    (
        SettingsEntries {
            global: vec!["../extra-skills".into()],
            project: vec!["!repo-skill".into()],
        },
        SettingsEntries {
            global: vec![
                "../extra-prompts".into(),
                "!notes-*".into(),
                "+prompts/notes-keep.md".into(),
            ],
            project: vec![],
        },
    )
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn default_prompt_context_files_skills_and_templates_match_pi() {
    let (_dir, root) = skill_tree();
    let (settings_skills, settings_prompts) = tree_settings();
    run_load_case(LoadCase {
        name: "full tree",
        cwd: root.join("repo/pkg/app"),
        agent_dir: root.join("agent"),
        home: root.join("home"),
        options: json!({
            "skills": ["../../../cli-skills", "nope"],
            "promptTemplates": ["../../../cli-prompts/p.md", "gone.md"],
        }),
        settings_skills,
        settings_prompts,
        tools: None,
        inputs: vec![
            "/skill:user-skill",
            "/skill:user-skill   please   do it  ",
            "/skill:hidden now",
            "/skill:crlf",
            "/skill:folded",
            "/skill:missing arg",
            "/skill:shared",
            "/review src/main.rs \"error handling\" 'and tests' $$ done",
            "/first-line",
            "/fix a b c d e",
            "/fix",
            "/shared x 'y z'",
            "/er one",
            "/p $1 '$@' \"$&\" $`",
            "/nope args",
            "/notes-a",
            "/notes-keep",
            "/linked a b",
            "plain text /fix",
            "/review\targ",
            "",
        ],
    });
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn custom_and_appended_prompts_from_flags_match_pi() {
    let (_dir, root) = skill_tree();
    let (settings_skills, settings_prompts) = tree_settings();
    run_load_case(LoadCase {
        name: "--system-prompt file, --append-system-prompt twice, --no-context-files, no read",
        cwd: root.join("repo/pkg/app"),
        agent_dir: root.join("agent"),
        home: root.join("home"),
        options: json!({
            "systemPrompt": "../../../custom-system.md",
            "appendSystemPrompt": ["Plain appended text.", "../../../append-file.md"],
            "noContextFiles": true,
        }),
        settings_skills: settings_skills.clone(),
        settings_prompts: settings_prompts.clone(),
        tools: Some(vec!["bash", "grep", "ls"]),
        inputs: vec!["/fix 1"],
    });
    run_load_case(LoadCase {
        name: "literal --system-prompt with read, --no-skills and --no-prompt-templates with paths",
        cwd: root.join("repo/pkg/app"),
        agent_dir: root.join("agent"),
        home: root.join("home"),
        options: json!({
            "systemPrompt": "Literal custom prompt.",
            "noSkills": true,
            "noPromptTemplates": true,
            "skills": ["../../../cli-skills/cli-dir"],
            "promptTemplates": ["../../../cli-prompts"],
        }),
        settings_skills,
        settings_prompts,
        tools: Some(vec!["read"]),
        inputs: vec!["/skill:cli-dir go", "/p x", "/fix 1"],
    });
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn system_md_files_odd_context_files_and_no_tools_match_pi() {
    let (_dir, root) = tempdir();
    lay_out(
        &root,
        &[
            ("home/", b""),
            (
                "agent/SYSTEM.md",
                b"Global SYSTEM.md (shadowed by the project's).",
            ),
            ("agent/CLAUDE.MD", b"Upper-case CLAUDE.MD."),
            ("w/AGENTS.md/", b""),
            (
                "w/CLAUDE.md",
                b"\xef\xbb\xbfBOM and bad bytes: \xff\xfe end\r\n",
            ),
            ("w/p/.pi/SYSTEM.md", b""),
            ("w/p/.pi/APPEND_SYSTEM.md", b"Project APPEND_SYSTEM.md\r\n"),
            (
                "w/p/.pi/skills/s/SKILL.md",
                b"---\ndescription: Listed only with read.\n---\n",
            ),
        ],
    );
    for tools in [Some(vec![]), Some(vec!["read", "find"]), None] {
        let res = run_load_case(LoadCase {
            name: "SYSTEM.md, APPEND_SYSTEM.md, odd context files",
            cwd: root.join("w/p"),
            agent_dir: root.join("agent"),
            home: root.join("home"),
            options: json!({}),
            settings_skills: SettingsEntries::default(),
            settings_prompts: SettingsEntries::default(),
            tools,
            inputs: vec!["/skill:s"],
        });
        // The `AGENTS.md` directory: pi warns on stderr, we in a diagnostic.
        assert!(
            res.diagnostics
                .iter()
                .any(|d| d.resource == ResourceKind::ContextFile
                    && d.message.starts_with("Could not read")),
            "{:?}",
            res.diagnostics
        );
    }
}

fn test_skill(name: &str, hidden: bool) -> Skill {
    let file = format!("/skills/{name}/SKILL.md");
    Skill {
        name: name.into(),
        description: format!("The {name} skill <&>."),
        file_path: file.clone().into(),
        base_dir: format!("/skills/{name}").into(),
        source_info: SourceInfo::new(file, "local", SourceScope::Temporary),
        disable_model_invocation: hidden,
    }
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn build_system_prompt_matches_pi() {
    let skills = vec![test_skill("alpha", false), test_skill("beta", true)];
    let pi_skills: Vec<Value> = skills
        .iter()
        .map(|s| {
            json!({"name": s.name, "description": s.description, "filePath": s.file_path,
                   "baseDir": s.base_dir, "disableModelInvocation": s.disable_model_invocation})
        })
        .collect();
    let context = vec![
        ContextFile {
            path: "/a/AGENTS.md".into(),
            content: "ctx one".into(),
        },
        ContextFile {
            path: "/a/b/CLAUDE.md".into(),
            content: "ctx two\n".into(),
        },
    ];
    let pi_context = json!([{"path": "/a/AGENTS.md", "content": "ctx one"},
                            {"path": "/a/b/CLAUDE.md", "content": "ctx two\n"}]);
    let snippets = [
        ("read", "Read files"),
        ("bash", "Run commands"),
        ("grep", "Search"),
    ];
    let base = |cwd: &str| SystemPromptOptions {
        tool_snippets: snippets
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect(),
        ..SystemPromptOptions::new(cwd)
    };
    let snippets_json: Value = snippets
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let guidelines = vec![
        "  Rule one  ".to_owned(),
        "Rule one".into(),
        "".into(),
        "Be concise in your responses".into(),
    ];
    let cases: Vec<(SystemPromptOptions, Value)> = vec![
        (
            SystemPromptOptions {
                prompt_guidelines: guidelines.clone(),
                context_files: context.clone(),
                skills: skills.clone(),
                ..base("C:\\proj\\x")
            },
            json!({"cwd": "C:\\proj\\x", "toolSnippets": snippets_json, "promptGuidelines": guidelines,
                   "contextFiles": pi_context, "skills": pi_skills}),
        ),
        (
            SystemPromptOptions {
                custom_prompt: Some("Custom.".into()),
                append_system_prompt: Some("More.".into()),
                skills: skills.clone(),
                ..base("/w")
            },
            json!({"cwd": "/w", "customPrompt": "Custom.", "appendSystemPrompt": "More.", "skills": pi_skills}),
        ),
        (
            SystemPromptOptions {
                custom_prompt: Some("Custom.".into()),
                selected_tools: Some(vec!["bash".into()]),
                skills: skills.clone(),
                context_files: context.clone(),
                ..base("/w")
            },
            json!({"cwd": "/w", "customPrompt": "Custom.", "selectedTools": ["bash"], "skills": pi_skills,
                   "contextFiles": pi_context}),
        ),
        (
            SystemPromptOptions {
                selected_tools: Some(vec!["grep".into(), "find".into(), "read".into()]),
                append_system_prompt: Some(String::new()),
                custom_prompt: Some(String::new()),
                skills: vec![test_skill("gamma", true)],
                ..base("/w")
            },
            json!({"cwd": "/w", "selectedTools": ["grep", "find", "read"], "toolSnippets": snippets_json,
                   "appendSystemPrompt": "", "customPrompt": "",
                   "skills": [{"name": "gamma", "description": "The gamma skill <&>.", "filePath": "/skills/gamma/SKILL.md",
                               "baseDir": "/skills/gamma", "disableModelInvocation": true}]}),
        ),
        (
            SystemPromptOptions {
                selected_tools: Some(vec!["bash".into(), "find".into(), "write".into()]),
                prompt_guidelines: vec![
                    "Use bash for file operations like ls, rg, find".into(),
                    "x".into(),
                ],
                ..base("/w")
            },
            json!({"cwd": "/w", "selectedTools": ["bash", "find", "write"], "toolSnippets": snippets_json,
                   "promptGuidelines": ["Use bash for file operations like ls, rg, find", "x"]}),
        ),
    ];
    let (_dir, root) = tempdir();
    let pi = run_pi(
        &json!({"mode": "build", "cases": cases.iter().map(|(_, j)| j.clone()).collect::<Vec<_>>()}),
        &root,
        &root,
    );
    assert_date(&pi);
    for (i, (options, _)) in cases.iter().enumerate() {
        let ours = normalize_prompt(&build_system_prompt(options), &our_docs());
        let pis = normalize_prompt(pi["prompts"][i].as_str().unwrap(), &pi_docs(&pi));
        assert_eq!(ours, pis, "case {i}");
    }
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn argument_splitting_and_substitution_match_pi() {
    let content = "1=$1 2=$2 10=$10 0=$0 all=[$@] args=[$ARGUMENTS] from2=[${@:2}] from0=[${@:0}] \
                   two=[${@:2:2}] none=[${@:2:0}] far=[${@:9}] big=[$99999999999999999999] ${@} $ ${@:x}";
    let args = [
        "",
        "one",
        "one two three",
        "  spaced\targs  here ",
        "\"double quoted\" 'single quoted' mixed\"qu'o\"te",
        "unterminated \"quote goes on",
        "'' \"\" empty",
        "dollars $1 $@ $ARGUMENTS ${@:1}",
        "js $$ $& $` $' $0 $<x>",
        "unicode ünï 😀 'ü ü'",
    ];
    let mut cases: Vec<(String, String)> = args
        .iter()
        .map(|a| (content.to_owned(), (*a).to_owned()))
        .collect();
    cases.push(("$ARGUMENTS$@$1".into(), "a$@b".into()));
    cases.push(("no placeholders".into(), "x y".into()));
    let (_dir, root) = tempdir();
    let pi = run_pi(&json!({"mode": "args", "cases": cases}), &root, &root);
    for (i, (content, args)) in cases.iter().enumerate() {
        let parsed = parse_command_args(args);
        assert_eq!(json!(parsed), pi[i]["parsed"], "parse {args:?}");
        assert_eq!(
            json!(substitute_args(content, &parsed)),
            pi[i]["result"],
            "substitute {args:?}"
        );
    }
}
