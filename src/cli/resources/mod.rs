//! pi's resources and system prompt, exactly as pi 0.73.1 builds them: context files
//! (`AGENTS.md`, `CLAUDE.md`), skills (`SKILL.md`), prompt templates, `SYSTEM.md` and
//! `APPEND_SYSTEM.md`, and the prompt itself.
//!
//! * [`ResourceLoader::load`] finds and reads everything for a working directory and an agent
//!   directory (`~/.pi/agent` or `$PI_CODING_AGENT_DIR`:
//!   [`default_agent_dir`](crate::cli::config::default_agent_dir)) into [`Resources`], with a
//!   [`ResourceDiagnostic`] for each bad file (never a panic, never an error for the load).
//! * [`build_system_prompt`] writes the system prompt from [`SystemPromptOptions`], which
//!   [`with_resources`](SystemPromptOptions::with_resources) and
//!   [`with_tools`](SystemPromptOptions::with_tools) fill as pi's `AgentSession` does.
//! * [`expand_input`] expands what the user typed: `/skill:name args`, then `/template args`.
//!
//! The loader reads files with blocking I/O: run it off the async threads, with
//! [`ResourceLoader::load_async`] (tokio's blocking pool) or inside `spawn_blocking`.
//!
//! ```
//! # let tmp = tempfile::tempdir().unwrap();
//! use pi_engine::cli::resources::{
//!     ResourceLoader, ResourceOptions, SystemPromptOptions, build_system_prompt, expand_input,
//! };
//! use pi_engine::tools::BuiltinTools;
//!
//! let (project, agent_dir) = (tmp.path().join("project"), tmp.path().join("agent"));
//! std::fs::create_dir_all(project.join(".pi/prompts")).unwrap();
//! std::fs::create_dir_all(&agent_dir).unwrap();
//! std::fs::write(project.join("AGENTS.md"), "Run `make test` before committing.").unwrap();
//! std::fs::write(project.join(".pi/prompts/fix.md"), "Fix issue #$1.").unwrap();
//!
//! let resources = ResourceLoader::load(&project, &agent_dir, &ResourceOptions::default());
//! assert!(resources.diagnostics.is_empty());
//!
//! let tools = BuiltinTools::new(&project).coding(); // read, bash, edit, write
//! let prompt = build_system_prompt(
//!     &SystemPromptOptions::new(&project).with_resources(&resources).with_tools(&tools),
//! );
//! assert!(prompt.contains("Run `make test` before committing."));
//! assert_eq!(expand_input("/fix 42", &resources), "Fix issue #42.");
//! ```
//!
//! Where `pi-engine` differs from pi: see `docs/cli.md`, section "Resources".

mod context;
mod discovery;
mod frontmatter;
mod paths;
mod skills;
mod system_prompt;
mod templates;
mod text;
mod types;
mod walk;

use std::path::{Path, PathBuf};

pub use context::ContextFile;
pub use skills::{Skill, SkillExpansionError, expand_skill_command, format_skills_for_prompt};
pub use system_prompt::{DocsPaths, SystemPromptOptions, build_system_prompt, local_date};
pub use templates::{PromptTemplate, expand_prompt_template, parse_command_args, substitute_args};
pub use types::{
    Collision, DiagnosticType, ResourceDiagnostic, ResourceKind, SourceInfo, SourceOrigin,
    SourceScope,
};

use discovery::{Kind, Meta, Places, Resolved};
use skills::load_skills;
use templates::load_templates;

/// Settings entries of one resource type (`skills` or `prompts` in `settings.json`): paths
/// (relative to the agent directory for the global file, to `.pi/` for the project's; `~`
/// allowed), globs that choose among the files found, and overrides of discovered files
/// (`!glob` disables, `+path` forces on, `-path` forces off).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsEntries {
    /// From the agent directory's `settings.json`.
    pub global: Vec<String>,
    /// From the project's `.pi/settings.json`.
    pub project: Vec<String>,
}

impl SettingsEntries {
    /// The string entries at `key` (`"skills"` or `"prompts"`) of the global and the project
    /// settings, each read on its own as pi's package manager does (not merged).
    ///
    /// ```
    /// use pi_engine::cli::resources::SettingsEntries;
    /// use serde_json::json;
    ///
    /// let global = json!({"skills": ["~/.claude/skills"]});
    /// let project = json!({"skills": ["!old-skill"], "prompts": ["./prompts"]});
    /// let skills = SettingsEntries::from_settings(
    ///     global.as_object().unwrap(), project.as_object().unwrap(), "skills");
    /// assert_eq!(skills.global, ["~/.claude/skills"]);
    /// assert_eq!(skills.project, ["!old-skill"]);
    /// ```
    pub fn from_settings(
        global: &serde_json::Map<String, serde_json::Value>,
        project: &serde_json::Map<String, serde_json::Value>,
        key: &str,
    ) -> Self {
        let entries = |m: &serde_json::Map<String, serde_json::Value>| -> Vec<String> {
            m.get(key)
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        SettingsEntries {
            global: entries(global),
            project: entries(project),
        }
    }
}

/// What changes the loading: pi's command-line flags and the resource entries of its
/// settings.
///
/// ```
/// use pi_engine::cli::resources::ResourceOptions;
///
/// let options = ResourceOptions {
///     no_context_files: true,                    // --no-context-files
///     skill_paths: vec!["./my-skill".into()],    // --skill ./my-skill
///     ..ResourceOptions::default()
/// };
/// # drop(options);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceOptions {
    /// `--no-context-files`: no `AGENTS.md`/`CLAUDE.md`.
    pub no_context_files: bool,
    /// `--no-skills`: no discovered or configured skills (`--skill` paths still load).
    pub no_skills: bool,
    /// `--no-prompt-templates`: likewise for templates (`--prompt-template` still loads).
    pub no_prompt_templates: bool,
    /// `--skill <path>` (repeatable): a skill file, or a directory whose `.md` files and
    /// `SKILL.md` directories are skills. Relative to the working directory.
    pub skill_paths: Vec<String>,
    /// `--prompt-template <path>` (repeatable): a template file or a directory of them.
    pub prompt_template_paths: Vec<String>,
    /// `--system-prompt <text>`: the text, or a file whose content is the text. `None`
    /// looks for `.pi/SYSTEM.md`, then `SYSTEM.md` in the agent directory.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt <text>` (repeatable): texts or files. Empty looks for
    /// `.pi/APPEND_SYSTEM.md`, then `APPEND_SYSTEM.md` in the agent directory.
    pub append_system_prompt: Vec<String>,
    /// The settings' `skills` entries.
    pub settings_skills: SettingsEntries,
    /// The settings' `prompts` entries.
    pub settings_prompts: SettingsEntries,
    /// The home directory for `~` and `~/.agents/skills`; `None` is the user's (`$HOME`).
    pub home_dir: Option<PathBuf>,
}

/// Everything loaded for a working directory.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    /// The working directory (absolute, normalized).
    pub cwd: PathBuf,
    /// The agent directory (absolute, normalized).
    pub agent_dir: PathBuf,
    /// The context files, in the prompt's order.
    pub context_files: Vec<ContextFile>,
    /// The skills, in the prompt's order (the first of a name wins).
    pub skills: Vec<Skill>,
    /// The prompt templates (the first of a name wins).
    pub prompt_templates: Vec<PromptTemplate>,
    /// The custom system prompt (`--system-prompt` or `SYSTEM.md`), which replaces pi's
    /// default text.
    pub system_prompt: Option<String>,
    /// The texts appended to the system prompt (`--append-system-prompt` or
    /// `APPEND_SYSTEM.md`), in order.
    pub append_system_prompt: Vec<String>,
    /// What was wrong: skills and templates first (in pi's order), then context and system
    /// prompt files.
    pub diagnostics: Vec<ResourceDiagnostic>,
}

/// Loads [`Resources`] as pi's `DefaultResourceLoader.reload` does.
///
/// pi-engine loads no pi packages (`packages` in settings) and no extensions' resources;
/// everything else is pi's: the places, the order, the precedence, the validation.
#[derive(Debug)]
pub struct ResourceLoader {
    _private: (),
}

/// pi's `isLocalPath`: not a package source or URL.
fn is_local_path(p: &str) -> bool {
    let t = p.trim();
    !["npm:", "git:", "github:", "http:", "https:", "ssh:"]
        .iter()
        .any(|prefix| t.starts_with(prefix))
}

/// pi's `mergePaths`: each path resolved (`~`, relative to `cwd`), the first of each real
/// file kept.
fn merge_paths(
    cwd: &Path,
    home: &Path,
    paths_in: impl IntoIterator<Item = PathBuf>,
) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for p in paths_in {
        let resolved = paths::resolve(cwd, paths::expand_tilde(&paths::text(&p), home));
        if seen.insert(paths::canonical(&resolved)) {
            out.push(resolved);
        }
    }
    out
}

/// The metadata of every resolved file, the first for a path (pi's `metadataByPath`).
#[derive(Debug, Default)]
struct MetadataByPath(Vec<(PathBuf, Meta)>);

impl MetadataByPath {
    fn add(&mut self, path: &Path, meta: &Meta) {
        if !self.0.iter().any(|(p, _)| p == path) {
            self.0.push((path.to_path_buf(), meta.clone()));
        }
    }

    /// pi's `findSourceInfoForPath`: the metadata of the path itself, else of a directory
    /// holding it.
    fn source_info(&self, file: &Path) -> Option<SourceInfo> {
        let normalized = paths::normalize(file);
        let info = |meta: &Meta| {
            let mut info = SourceInfo::new(paths::text(file), meta.source, meta.scope);
            info.base_dir = meta.base_dir.as_deref().map(paths::text);
            info
        };
        if let Some((_, meta)) = self.0.iter().find(|(p, _)| *p == normalized || p == file) {
            return Some(info(meta));
        }
        self.0
            .iter()
            .find(|(p, _)| {
                let p = paths::normalize(p);
                normalized == p || normalized.starts_with(&p)
            })
            .map(|(_, meta)| info(meta))
    }
}

impl ResourceLoader {
    /// Loads the resources of `cwd` (relative paths are taken against the process's
    /// directory) with the agent directory `agent_dir`.
    ///
    /// Blocking: it reads directories and files. From async code use
    /// [`load_async`](Self::load_async).
    pub fn load(
        cwd: impl AsRef<Path>,
        agent_dir: impl AsRef<Path>,
        options: &ResourceOptions,
    ) -> Resources {
        let here = Path::new(".");
        let cwd = paths::resolve(here, cwd.as_ref());
        let agent_dir = paths::resolve(here, agent_dir.as_ref());
        let home = options
            .home_dir
            .clone()
            .or_else(std::env::home_dir)
            .unwrap_or_else(|| PathBuf::from("/"));
        let home = paths::resolve(here, home);

        // pi's main resolves `--skill`/`--prompt-template` paths against the cwd first.
        let cli = |list: &[String]| -> Vec<PathBuf> {
            list.iter()
                .map(|p| {
                    if is_local_path(p) {
                        paths::resolve(&cwd, p)
                    } else {
                        PathBuf::from(p)
                    }
                })
                .collect()
        };
        let cli_skills = cli(&options.skill_paths);
        let cli_prompts = cli(&options.prompt_template_paths);

        let resolve = |kind, entries: &SettingsEntries| {
            let places = Places {
                cwd: &cwd,
                agent_dir: &agent_dir,
                home: &home,
                global_entries: &entries.global,
                project_entries: &entries.project,
            };
            discovery::resolve(kind, &places)
        };
        let resolved_skills = resolve(Kind::Skills, &options.settings_skills);
        let resolved_prompts = resolve(Kind::Prompts, &options.settings_prompts);
        let mut metadata = MetadataByPath::default();
        for r in resolved_skills.iter().chain(&resolved_prompts) {
            metadata.add(&r.path, &r.meta);
        }
        let enabled = |list: &[Resolved]| -> Vec<PathBuf> {
            list.iter()
                .filter(|r| r.enabled)
                .map(|r| r.path.clone())
                .collect()
        };
        // (pi's `mapSkillPath` turns a discovered directory into its `SKILL.md`; discovery
        // here only ever yields files, so there is nothing to map.)

        let mut resources = Resources {
            cwd: cwd.clone(),
            agent_dir: agent_dir.clone(),
            ..Resources::default()
        };

        // Skills.
        let discovered = if options.no_skills {
            Vec::new()
        } else {
            enabled(&resolved_skills)
        };
        let skill_paths = merge_paths(
            &cwd,
            &home,
            discovered.into_iter().chain(cli_skills.clone()),
        );
        let (mut skills, mut skill_diags) =
            load_skills(&cwd, &agent_dir, &home, &skill_paths).finish();
        for p in &cli_skills {
            let text = paths::text(p);
            if is_local_path(&text)
                && !p.exists()
                && !skill_diags.iter().any(|d| d.path.as_deref() == Some(&text))
            {
                skill_diags.push(ResourceDiagnostic::new(
                    ResourceKind::Skill,
                    DiagnosticType::Error,
                    "Skill path does not exist",
                    Some(text),
                ));
            }
        }
        for s in &mut skills {
            if let Some(info) = metadata.source_info(&s.file_path) {
                s.source_info = info;
            }
        }

        // Prompt templates.
        let discovered = if options.no_prompt_templates {
            Vec::new()
        } else {
            enabled(&resolved_prompts)
        };
        let prompt_paths = merge_paths(
            &cwd,
            &home,
            discovered.into_iter().chain(cli_prompts.clone()),
        );
        let global_prompts = paths::join(&agent_dir, "prompts");
        let project_prompts = paths::resolve(&cwd, ".pi/prompts");
        let template_source = |file: &Path| -> SourceInfo {
            let (scope, base) = if paths::is_under(file, &global_prompts) {
                (SourceScope::User, global_prompts.clone())
            } else if paths::is_under(file, &project_prompts) {
                (SourceScope::Project, project_prompts.clone())
            } else if file.is_dir() {
                (SourceScope::Temporary, file.to_path_buf())
            } else {
                (SourceScope::Temporary, paths::dirname(file))
            };
            SourceInfo::new(paths::text(file), "local", scope).with_base_dir(paths::text(&base))
        };
        let mut templates: Vec<PromptTemplate> = Vec::new();
        let mut prompt_diags = Vec::new();
        for t in load_templates(&cwd, &home, &prompt_paths, &template_source) {
            if let Some(winner) = templates.iter().find(|w| w.name == t.name) {
                prompt_diags.push(ResourceDiagnostic::collision(
                    ResourceKind::PromptTemplate,
                    "prompt",
                    format!("name \"/{}\" collision", t.name),
                    &t.name,
                    &winner.file_path,
                    &t.file_path,
                ));
            } else {
                templates.push(t);
            }
        }
        for t in &mut templates {
            if let Some(info) = metadata.source_info(&t.file_path) {
                t.source_info = info;
            }
        }
        for p in &cli_prompts {
            let text = paths::text(p);
            if is_local_path(&text)
                && !p.exists()
                && !prompt_diags
                    .iter()
                    .any(|d| d.path.as_deref() == Some(&text))
            {
                prompt_diags.push(ResourceDiagnostic::new(
                    ResourceKind::PromptTemplate,
                    DiagnosticType::Error,
                    "Prompt template path does not exist",
                    Some(text),
                ));
            }
        }

        resources.skills = skills;
        resources.prompt_templates = templates;
        resources.diagnostics.extend(skill_diags);
        resources.diagnostics.extend(prompt_diags);

        // Context files.
        if !options.no_context_files {
            resources.context_files =
                context::load_context_files(&cwd, &agent_dir, &mut resources.diagnostics);
        }

        // SYSTEM.md and APPEND_SYSTEM.md: the project's, else the agent directory's.
        let discover = |name: &str| -> Option<String> {
            [
                paths::join(&cwd, &format!(".pi/{name}")),
                paths::join(&agent_dir, name),
            ]
            .into_iter()
            .find(|p| p.exists())
            .map(|p| paths::text(&p))
        };
        let system_source = options
            .system_prompt
            .clone()
            .or_else(|| discover("SYSTEM.md"));
        resources.system_prompt = system_source.and_then(|s| {
            resolve_prompt_input(&cwd, &s, "system prompt", &mut resources.diagnostics)
        });
        let append_sources = if options.append_system_prompt.is_empty() {
            discover("APPEND_SYSTEM.md").into_iter().collect()
        } else {
            options.append_system_prompt.clone()
        };
        for s in append_sources {
            if let Some(text) =
                resolve_prompt_input(&cwd, &s, "append system prompt", &mut resources.diagnostics)
            {
                resources.append_system_prompt.push(text);
            }
        }
        resources
    }

    /// [`load`](Self::load) on tokio's blocking pool, so an async caller's threads never
    /// wait on the disk.
    ///
    /// Cancel safety: dropping the future leaves the load to finish on the blocking pool,
    /// its result unused.
    pub async fn load_async(
        cwd: impl Into<PathBuf>,
        agent_dir: impl Into<PathBuf>,
        options: ResourceOptions,
    ) -> Resources {
        let (cwd, agent_dir) = (cwd.into(), agent_dir.into());
        let (c, a) = (cwd.clone(), agent_dir.clone());
        match tokio::task::spawn_blocking(move || ResourceLoader::load(&c, &a, &options)).await {
            Ok(resources) => resources,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Only when the runtime shuts down under it.
            Err(e) => Resources {
                cwd,
                agent_dir,
                diagnostics: vec![ResourceDiagnostic::new(
                    ResourceKind::SystemPrompt,
                    DiagnosticType::Error,
                    format!("loading resources was cancelled: {e}"),
                    None,
                )],
                ..Resources::default()
            },
        }
    }
}

/// pi's `resolvePromptInput`: empty is none; an existing file's content; else the text
/// itself (also when the file cannot be read, with a warning).
fn resolve_prompt_input(
    cwd: &Path,
    input: &str,
    what: &str,
    diagnostics: &mut Vec<ResourceDiagnostic>,
) -> Option<String> {
    if input.is_empty() {
        return None;
    }
    let path = paths::resolve(cwd, input);
    if !path.exists() {
        return Some(input.to_owned());
    }
    match paths::read_text(&path) {
        Ok(text) => Some(text),
        Err(e) => {
            diagnostics.push(ResourceDiagnostic::new(
                ResourceKind::SystemPrompt,
                DiagnosticType::Warning,
                format!("Could not read {what} file {input}: {e}"),
                Some(input.to_owned()),
            ));
            Some(input.to_owned())
        }
    }
}

/// Expands what the user typed as pi's `AgentSession.prompt` does before sending it: a
/// `/skill:name args` command first (see [`expand_skill_command`]), then a `/template args`
/// (see [`expand_prompt_template`]). A skill whose file can no longer be read leaves the text
/// as typed (pi reports it as an extension error; here it is logged with `tracing`).
///
/// Reads the skill's file for a `/skill:` command (blocking I/O on one small file);
/// [`expand_input_async`] does that on the blocking pool.
///
/// ```
/// use pi_engine::cli::resources::{Resources, expand_input};
///
/// assert_eq!(expand_input("hello", &Resources::default()), "hello");
/// ```
pub fn expand_input(text: &str, resources: &Resources) -> String {
    let expanded = match expand_skill_command(text, &resources.skills) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(path = %e.path.display(), error = %e.message, "skill expansion failed");
            text.to_owned()
        }
    };
    expand_prompt_template(&expanded, &resources.prompt_templates)
}

/// [`expand_input`] with the skill's file read on tokio's blocking pool.
pub async fn expand_input_async(text: &str, resources: &Resources) -> String {
    if !text.starts_with("/skill:") {
        return expand_prompt_template(text, &resources.prompt_templates);
    }
    let (owned, skills) = (text.to_owned(), resources.skills.clone());
    let expanded = tokio::task::spawn_blocking(move || expand_skill_command(&owned, &skills)).await;
    let expanded = match expanded {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            tracing::warn!(path = %e.path.display(), error = %e.message, "skill expansion failed");
            text.to_owned()
        }
        Err(_) => text.to_owned(),
    };
    expand_prompt_template(&expanded, &resources.prompt_templates)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn loads_everything_with_pis_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (cwd, agent, home) = (root.join("p"), root.join("agent"), root.join("home"));
        write(
            &agent.join("skills/a/SKILL.md"),
            "---\ndescription: user a\n---\nA",
        );
        write(
            &cwd.join(".pi/skills/a/SKILL.md"),
            "---\ndescription: project a\n---\nA",
        );
        write(&agent.join("prompts/t.md"), "user t");
        write(&cwd.join(".pi/prompts/t.md"), "project t");
        write(&cwd.join(".pi/SYSTEM.md"), "custom");
        write(&agent.join("APPEND_SYSTEM.md"), "appended");
        let options = ResourceOptions {
            home_dir: Some(home),
            skill_paths: vec!["missing".into()],
            ..ResourceOptions::default()
        };
        let res = ResourceLoader::load(&cwd, &agent, &options);
        assert_eq!(res.skills.len(), 1);
        assert_eq!(res.skills[0].description, "project a");
        assert_eq!(res.skills[0].source_info.source, "auto");
        assert_eq!(res.prompt_templates.len(), 1);
        assert_eq!(res.prompt_templates[0].content, "project t");
        assert_eq!(res.system_prompt.as_deref(), Some("custom"));
        assert_eq!(res.append_system_prompt, ["appended"]);
        let kinds: Vec<DiagnosticType> = res.diagnostics.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                DiagnosticType::Warning, // the missing --skill path
                DiagnosticType::Collision,
                DiagnosticType::Collision,
            ]
        );
        assert_eq!(expand_input("/t", &res), "project t");

        let res = ResourceLoader::load(
            &cwd,
            &agent,
            &ResourceOptions {
                no_skills: true,
                no_prompt_templates: true,
                system_prompt: Some(String::new()),
                append_system_prompt: vec!["more".into()],
                ..options
            },
        );
        assert!(res.skills.is_empty() && res.prompt_templates.is_empty());
        assert_eq!(res.system_prompt, None);
        assert_eq!(res.append_system_prompt, ["more"]);
    }

    #[tokio::test]
    async fn async_wrappers() {
        let dir = tempfile::tempdir().unwrap();
        write(
            &dir.path().join("agent/skills/s/SKILL.md"),
            "---\ndescription: d\n---\nbody",
        );
        let res = ResourceLoader::load_async(
            dir.path(),
            dir.path().join("agent"),
            ResourceOptions::default(),
        )
        .await;
        assert_eq!(res.skills.len(), 1);
        assert!(
            expand_input_async("/skill:s", &res)
                .await
                .contains("body\n</skill>")
        );
        assert_eq!(expand_input_async("plain", &res).await, "plain");
    }
}
