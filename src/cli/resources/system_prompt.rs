//! The system prompt, as pi's `buildSystemPrompt` writes it, and the inputs pi's
//! `AgentSession` gives it (the active tools' snippets and guidelines, the loaded resources).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::AgentTool;

use super::Resources;
use super::context::ContextFile;
use super::paths;
use super::skills::{Skill, format_skills_for_prompt};
use super::text::{js_trim, one_line};

/// Where the prompt's "Pi documentation" lines point: a README, a docs folder and an examples
/// folder.
///
/// pi points at its own npm package. `pi-engine` points at `$PI_PACKAGE_DIR` when it is set
/// (pi's own override, with pi's `~` handling), so a user who has pi installed can send the
/// model to pi's documentation; otherwise at pi-engine's own package, the directory this crate
/// was built from (its `README.md`, `docs/` and `examples/`, which `cargo install` leaves in
/// cargo's source cache), as pi points at the package it runs from.
///
/// ```
/// use pi_engine::cli::resources::DocsPaths;
///
/// let docs = DocsPaths::in_package("/opt/pi");
/// assert_eq!(docs.readme.to_str(), Some("/opt/pi/README.md"));
/// assert_eq!(docs.docs.to_str(), Some("/opt/pi/docs"));
/// assert_eq!(docs.examples.to_str(), Some("/opt/pi/examples"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocsPaths {
    /// The main documentation.
    pub readme: PathBuf,
    /// The folder of further documents.
    pub docs: PathBuf,
    /// The folder of examples.
    pub examples: PathBuf,
}

impl DocsPaths {
    /// `README.md`, `docs` and `examples` in `dir` (made absolute and normalized, as pi's
    /// `resolve` does).
    pub fn in_package(dir: impl AsRef<Path>) -> Self {
        let dir = paths::resolve(Path::new("."), dir.as_ref());
        DocsPaths {
            readme: paths::join(&dir, "README.md"),
            docs: paths::join(&dir, "docs"),
            examples: paths::join(&dir, "examples"),
        }
    }

    /// `$PI_PACKAGE_DIR` (`~` and `~/…` expanded as pi does) if set, else pi-engine's own
    /// package directory.
    pub fn detect() -> Self {
        match std::env::var("PI_PACKAGE_DIR") {
            Ok(dir) if !dir.is_empty() => {
                let home = std::env::home_dir().unwrap_or_default();
                let dir = if dir == "~" {
                    home
                } else if let Some(rest) = dir.strip_prefix("~/") {
                    home.join(rest)
                } else {
                    PathBuf::from(dir)
                };
                DocsPaths::in_package(dir)
            }
            _ => DocsPaths::in_package(env!("CARGO_MANIFEST_DIR")),
        }
    }
}

impl Default for DocsPaths {
    /// [`DocsPaths::detect`].
    fn default() -> Self {
        DocsPaths::detect()
    }
}

/// Everything [`build_system_prompt`] needs (pi's `BuildSystemPromptOptions`, plus the date
/// and the documentation paths pi computes inside).
///
/// [`new`](Self::new) with [`with_resources`](Self::with_resources) and
/// [`with_tools`](Self::with_tools) gives what pi's `AgentSession` gives.
#[derive(Debug, Clone, Default)]
pub struct SystemPromptOptions {
    /// The working directory, written last (backslashes as `/`).
    pub cwd: String,
    /// A prompt that replaces pi's default text (`--system-prompt`, `SYSTEM.md`); empty counts
    /// as none. Context files, skills, date and directory are still appended.
    pub custom_prompt: Option<String>,
    /// Text appended after the prompt (`--append-system-prompt`, `APPEND_SYSTEM.md`).
    pub append_system_prompt: Option<String>,
    /// The active tools' names, in order. `None` means pi's default set (read, bash, edit,
    /// write).
    pub selected_tools: Option<Vec<String>>,
    /// One line per tool for "Available tools"; a selected tool without one is not listed.
    pub tool_snippets: BTreeMap<String, String>,
    /// Extra guidelines (the tools' `prompt_guidelines`), after the tool-dependent one.
    pub prompt_guidelines: Vec<String>,
    /// The context files, in order.
    pub context_files: Vec<ContextFile>,
    /// The skills (listed only when `read` is a selected tool).
    pub skills: Vec<Skill>,
    /// `YYYY-MM-DD`; `None` is today in the local time zone, as pi writes it.
    pub date: Option<String>,
    /// Where the documentation lines point; `None` is [`DocsPaths::detect`].
    pub docs: Option<DocsPaths>,
}

impl SystemPromptOptions {
    /// Options for `cwd`, with pi's defaults for the rest.
    pub fn new(cwd: impl AsRef<Path>) -> Self {
        SystemPromptOptions {
            cwd: paths::text(cwd.as_ref()),
            ..SystemPromptOptions::default()
        }
    }

    /// The loaded resources: custom and appended prompts (several appended ones joined by a
    /// blank line), context files, skills.
    pub fn with_resources(mut self, resources: &Resources) -> Self {
        self.custom_prompt = resources.system_prompt.clone();
        self.append_system_prompt = if resources.append_system_prompt.is_empty() {
            None
        } else {
            Some(resources.append_system_prompt.join("\n\n"))
        };
        self.context_files = resources.context_files.clone();
        self.skills = resources.skills.clone();
        self
    }

    /// The active tools, in order, as pi's `AgentSession` reads them: names, snippets made
    /// one line, guidelines trimmed and without repeats (empty ones dropped).
    pub fn with_tools(mut self, tools: &[Arc<dyn AgentTool>]) -> Self {
        self.selected_tools = Some(tools.iter().map(|t| t.name().to_owned()).collect());
        self.tool_snippets.clear();
        self.prompt_guidelines.clear();
        for tool in tools {
            if let Some(snippet) = tool.prompt_snippet().map(one_line)
                && !snippet.is_empty()
            {
                self.tool_snippets.insert(tool.name().to_owned(), snippet);
            }
            let mut seen: Vec<&str> = Vec::new();
            for g in tool.prompt_guidelines() {
                let g = js_trim(g);
                if !g.is_empty() && !seen.contains(&g) {
                    seen.push(g);
                }
            }
            self.prompt_guidelines
                .extend(seen.into_iter().map(str::to_owned));
        }
        self
    }

    /// Sets the date (`YYYY-MM-DD`) instead of today's.
    pub fn with_date(mut self, date: impl Into<String>) -> Self {
        self.date = Some(date.into());
        self
    }

    /// Sets where the documentation lines point.
    pub fn with_docs(mut self, docs: DocsPaths) -> Self {
        self.docs = Some(docs);
        self
    }
}

/// Today in the local time zone (`TZ`, else the system's), `YYYY-MM-DD`, as pi's
/// `new Date()` gives it.
pub fn local_date() -> String {
    let tz = std::env::var("TZ").ok();
    let now = jiff::Timestamp::now().to_zoned_datetime(local_zone(tz.as_deref()));
    format!("{}-{:02}-{:02}", now.year(), now.month(), now.day())
}

/// The local time zone from its one TZif file: `tz` (the `TZ` variable) naming a zone of the
/// zoneinfo directory or a file, else a POSIX rule; without it, `/etc/localtime`. jiff's
/// `TimeZone::system` finds the same zone but first lists the whole zoneinfo database
/// (about 0.4 MB of the command's memory, for one date); it stays the fallback.
fn local_zone(tz: Option<&str>) -> jiff::tz::TimeZone {
    use jiff::tz::TimeZone;
    use std::path::{Path, PathBuf};
    let read = |name: &str, path: &Path| {
        let bytes = std::fs::read(path).ok()?;
        TimeZone::tzif(name, &bytes).ok()
    };
    match tz {
        Some(tz) if !tz.is_empty() => {
            let name = tz.strip_prefix(':').unwrap_or(tz);
            let file = if name.starts_with('/') {
                read(name, Path::new(name))
            } else if name.split('/').any(|part| part == "..") {
                None
            } else {
                std::env::var_os("ZONEINFO")
                    .map(PathBuf::from)
                    .into_iter()
                    .chain(
                        [
                            "/usr/share/zoneinfo",
                            "/usr/lib/zoneinfo",
                            "/usr/share/lib/zoneinfo",
                            "/etc/zoneinfo",
                        ]
                        .map(PathBuf::from),
                    )
                    .find_map(|dir| read(name, &dir.join(name)))
            };
            file.or_else(|| TimeZone::posix(name).ok())
                .unwrap_or_else(TimeZone::system)
        }
        _ => read("Local", Path::new("/etc/localtime")).unwrap_or_else(TimeZone::system),
    }
}

fn push_context_files(prompt: &mut String, files: &[ContextFile]) {
    if files.is_empty() {
        return;
    }
    prompt.push_str("\n\n# Project Context\n\n");
    prompt.push_str("Project-specific instructions and guidelines:\n\n");
    for f in files {
        prompt.push_str(&format!("## {}\n\n{}\n\n", f.path.display(), f.content));
    }
}

/// The system prompt, exactly as pi's `buildSystemPrompt` writes it: pi's default text with
/// the available tools, the guidelines and pointers to the documentation (or the custom
/// prompt in their place), the appended text, `# Project Context` with the context files, the
/// skills (when `read` is active), then `Current date:` and `Current working directory:`.
///
/// ```
/// use pi_engine::cli::resources::{SystemPromptOptions, build_system_prompt};
///
/// let options = SystemPromptOptions::new("/work/app")
///     .with_date("2026-01-02");
/// let prompt = build_system_prompt(&options);
/// assert!(prompt.starts_with("You are an expert coding assistant operating inside pi"));
/// assert!(prompt.contains("Available tools:\n(none)"));
/// assert!(prompt.ends_with("\nCurrent date: 2026-01-02\nCurrent working directory: /work/app"));
///
/// let custom = build_system_prompt(&SystemPromptOptions {
///     custom_prompt: Some("Be brief.".into()),
///     append_system_prompt: Some("And kind.".into()),
///     ..options
/// });
/// assert_eq!(custom, "Be brief.\n\nAnd kind.\nCurrent date: 2026-01-02\nCurrent working directory: /work/app");
/// ```
pub fn build_system_prompt(options: &SystemPromptOptions) -> String {
    let date = options.date.clone().unwrap_or_else(local_date);
    let prompt_cwd = options.cwd.replace('\\', "/");
    let append_section = match options.append_system_prompt.as_deref() {
        Some(a) if !a.is_empty() => format!("\n\n{a}"),
        _ => String::new(),
    };
    let tail = format!("\nCurrent date: {date}\nCurrent working directory: {prompt_cwd}");

    if let Some(custom) = options.custom_prompt.as_deref().filter(|c| !c.is_empty()) {
        let mut prompt = custom.to_owned();
        prompt.push_str(&append_section);
        push_context_files(&mut prompt, &options.context_files);
        let has_read = options
            .selected_tools
            .as_ref()
            .is_none_or(|t| t.iter().any(|n| n == "read"));
        if has_read && !options.skills.is_empty() {
            prompt.push_str(&format_skills_for_prompt(&options.skills));
        }
        prompt.push_str(&tail);
        return prompt;
    }

    let default_tools = ["read", "bash", "edit", "write"]
        .map(str::to_owned)
        .to_vec();
    let tools = options.selected_tools.as_ref().unwrap_or(&default_tools);
    let has = |name: &str| tools.iter().any(|t| t == name);
    let visible: Vec<String> = tools
        .iter()
        .filter_map(|name| {
            let snippet = options.tool_snippets.get(name).filter(|s| !s.is_empty())?;
            Some(format!("- {name}: {snippet}"))
        })
        .collect();
    let tools_list = if visible.is_empty() {
        "(none)".to_owned()
    } else {
        visible.join("\n")
    };

    let mut guidelines: Vec<String> = Vec::new();
    let mut add = |g: &str| {
        if !guidelines.iter().any(|x| x == g) {
            guidelines.push(g.to_owned());
        }
    };
    let (bash, grep, find, ls) = (has("bash"), has("grep"), has("find"), has("ls"));
    if bash && !grep && !find && !ls {
        add("Use bash for file operations like ls, rg, find");
    } else if bash && (grep || find || ls) {
        add(
            "Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)",
        );
    }
    for g in &options.prompt_guidelines {
        let g = js_trim(g);
        if !g.is_empty() {
            add(g);
        }
    }
    add("Be concise in your responses");
    add("Show file paths clearly when working with files");
    let guidelines = guidelines
        .iter()
        .map(|g| format!("- {g}"))
        .collect::<Vec<_>>()
        .join("\n");

    let docs = options.docs.clone().unwrap_or_else(DocsPaths::detect);
    let mut prompt = format!(
        "You are an expert coding assistant operating inside pi, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.

Available tools:
{tools_list}

In addition to the tools above, you may have access to other custom tools depending on the project.

Guidelines:
{guidelines}

Pi documentation (read only when the user asks about pi itself, its SDK, extensions, themes, skills, or TUI):
- Main documentation: {readme}
- Additional docs: {docs_dir}
- Examples: {examples} (extensions, custom tools, SDK)
- When asked about: extensions (docs/extensions.md, examples/extensions/), themes (docs/themes.md), skills (docs/skills.md), prompt templates (docs/prompt-templates.md), TUI components (docs/tui.md), keybindings (docs/keybindings.md), SDK integrations (docs/sdk.md), custom providers (docs/custom-provider.md), adding models (docs/models.md), pi packages (docs/packages.md)
- When working on pi topics, read the docs and examples, and follow .md cross-references before implementing
- Always read pi .md files completely and follow links to related docs (e.g., tui.md for TUI API details)",
        readme = docs.readme.display(),
        docs_dir = docs.docs.display(),
        examples = docs.examples.display(),
    );
    prompt.push_str(&append_section);
    push_context_files(&mut prompt, &options.context_files);
    if has("read") && !options.skills.is_empty() {
        prompt.push_str(&format_skills_for_prompt(&options.skills));
    }
    prompt.push_str(&tail);
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offset of `tz` now, in seconds.
    fn offset(tz: &jiff::tz::TimeZone) -> i32 {
        tz.to_offset(jiff::Timestamp::now()).seconds()
    }

    #[test]
    fn the_local_zone_is_read_from_one_file_or_a_rule() {
        // A POSIX rule (no file has this name), with and without the leading colon.
        assert_eq!(offset(&local_zone(Some("XYZ-5"))), 5 * 3600);
        assert_eq!(offset(&local_zone(Some(":XYZ+3"))), -3 * 3600);
        // A TZif file named by path.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zone");
        // jiff writes no TZif, so the system's UTC file is used when there is one.
        if let Ok(bytes) = std::fs::read("/usr/share/zoneinfo/UTC") {
            std::fs::write(&path, bytes).unwrap();
            let tz = local_zone(Some(path.to_str().unwrap()));
            assert_eq!(offset(&tz), 0);
            assert_eq!(offset(&local_zone(Some("UTC"))), 0);
        }
        // A name that climbs out of the zoneinfo directory is not read as a file.
        let climbing = local_zone(Some("../../../etc/passwd"));
        assert_eq!(offset(&climbing), offset(&jiff::tz::TimeZone::system()));
        // Without TZ: /etc/localtime, the same zone jiff finds.
        if std::env::var_os("TZ").is_none() {
            assert_eq!(
                offset(&local_zone(None)),
                offset(&jiff::tz::TimeZone::system())
            );
        }
        let date = local_date();
        assert_eq!(date.len(), 10, "{date}");
    }

    #[test]
    fn guidelines_follow_the_tools() {
        let mut o = SystemPromptOptions::new("C:\\w")
            .with_date("2026-01-01")
            .with_docs(DocsPaths::in_package("/pkg"));
        o.selected_tools = Some(vec!["bash".into(), "read".into()]);
        o.tool_snippets.insert("read".into(), "Read files".into());
        o.prompt_guidelines = vec![
            " Be concise in your responses ".into(),
            "  ".into(),
            "Rule".into(),
        ];
        let p = build_system_prompt(&o);
        assert!(p.contains("Available tools:\n- read: Read files\n\nIn addition"));
        assert!(p.contains(
            "Guidelines:\n- Use bash for file operations like ls, rg, find\n- Be concise in your responses\n- Rule\n- Show file paths clearly when working with files\n\n"
        ));
        assert!(p.contains("- Main documentation: /pkg/README.md\n"));
        assert!(p.ends_with("Current working directory: C:/w"));

        o.selected_tools = Some(vec!["bash".into(), "ls".into()]);
        assert!(build_system_prompt(&o).contains("- Prefer grep/find/ls tools over bash"));
    }

    #[test]
    fn local_date_has_the_shape() {
        let d = local_date();
        assert_eq!(d.len(), 10, "{d}");
        assert_eq!(&d[4..5], "-");
    }
}
