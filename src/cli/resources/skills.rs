//! Skills (pi's `skills.ts`, the Agent Skills standard): `SKILL.md` files with a `name` and a
//! `description` in their frontmatter, validated as pi does (warnings, and a skill without a
//! description left out), listed in the system prompt and expanded by `/skill:name args`.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use yaml_rust2::Yaml;

use super::frontmatter;
use super::paths;
use super::text::{escape_xml, js_len, js_trim};
use super::types::{ResourceDiagnostic, ResourceKind, SourceInfo, SourceScope};
use super::walk;

const MAX_NAME_LENGTH: usize = 64;
const MAX_DESCRIPTION_LENGTH: usize = 1024;

/// A skill: what the system prompt lists and `/skill:name` loads.
///
/// ```
/// # use std::path::PathBuf;
/// use pi_engine::cli::resources::{Skill, SourceInfo, SourceScope};
///
/// let skill = Skill {
///     name: "pdf".into(),
///     description: "Reads PDF files.".into(),
///     file_path: PathBuf::from("/skills/pdf/SKILL.md"),
///     base_dir: PathBuf::from("/skills/pdf"),
///     source_info: SourceInfo::new("/skills/pdf/SKILL.md", "local", SourceScope::Temporary),
///     disable_model_invocation: false,
/// };
/// assert_eq!(skill.name, "pdf");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The frontmatter's `name`, or the name of the file's directory.
    pub name: String,
    /// The frontmatter's `description` (required).
    pub description: String,
    /// The skill's file.
    pub file_path: PathBuf,
    /// The file's directory: relative paths in the skill are relative to it.
    pub base_dir: PathBuf,
    /// Where it came from.
    pub source_info: SourceInfo,
    /// `disable-model-invocation: true`: left out of the system prompt, only `/skill:name`
    /// loads it.
    pub disable_model_invocation: bool,
}

/// How a skill path was reached, for its [`SourceInfo`] (pi's `createSkillSourceInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SkillSource {
    User,
    Project,
    Path,
}

fn synthetic_source_info(file: &Path, base_dir: &Path, source: SkillSource) -> SourceInfo {
    let scope = match source {
        SkillSource::User => SourceScope::User,
        SkillSource::Project => SourceScope::Project,
        SkillSource::Path => SourceScope::Temporary,
    };
    SourceInfo::new(paths::text(file), "local", scope).with_base_dir(paths::text(base_dir))
}

fn warn(out: &mut Vec<ResourceDiagnostic>, message: impl Into<String>, path: &str) {
    out.push(ResourceDiagnostic::warning(
        ResourceKind::Skill,
        message,
        path,
    ));
}

/// pi's `validateName`.
fn validate_name(name: &str, parent: &str, path: &str, out: &mut Vec<ResourceDiagnostic>) {
    if name != parent {
        warn(
            out,
            format!("name \"{name}\" does not match parent directory \"{parent}\""),
            path,
        );
    }
    let len = js_len(name);
    if len > MAX_NAME_LENGTH {
        warn(
            out,
            format!("name exceeds {MAX_NAME_LENGTH} characters ({len})"),
            path,
        );
    }
    let valid_chars = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !valid_chars {
        warn(
            out,
            "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)",
            path,
        );
    }
    if name.starts_with('-') || name.ends_with('-') {
        warn(out, "name must not start or end with a hyphen", path);
    }
    if name.contains("--") {
        warn(out, "name must not contain consecutive hyphens", path);
    }
}

/// pi's `loadSkillFromFile`: the skill (if it has a description) and what was wrong with it.
pub(crate) fn load_skill_from_file(
    file: &Path,
    source: SkillSource,
) -> (Option<Skill>, Vec<ResourceDiagnostic>) {
    let mut diags = Vec::new();
    let path = paths::text(file);
    let raw = match paths::read_text(file) {
        Ok(raw) => raw,
        Err(e) => {
            warn(&mut diags, e.to_string(), &path);
            return (None, diags);
        }
    };
    let fm = match frontmatter::parse(&raw) {
        Ok(fm) => fm,
        Err(e) => {
            warn(&mut diags, e, &path);
            return (None, diags);
        }
    };
    let skill_dir = paths::dirname(file);
    let parent = paths::basename(&skill_dir);

    // pi calls `.trim()` on a description that is not a string, and `.startsWith()` on such a
    // name: the TypeError becomes the skill's last diagnostic and the skill is left out.
    let description = match fm.truthy("description") {
        None => {
            warn(&mut diags, "description is required", &path);
            None
        }
        Some(Yaml::String(d)) => {
            if js_trim(d).is_empty() {
                warn(&mut diags, "description is required", &path);
                None
            } else {
                let len = js_len(d);
                if len > MAX_DESCRIPTION_LENGTH {
                    warn(
                        &mut diags,
                        format!("description exceeds {MAX_DESCRIPTION_LENGTH} characters ({len})"),
                        &path,
                    );
                }
                Some(d.clone())
            }
        }
        Some(_) => {
            warn(&mut diags, "description.trim is not a function", &path);
            return (None, diags);
        }
    };
    let name = match fm.truthy("name") {
        None => parent.clone(),
        Some(Yaml::String(n)) => n.clone(),
        Some(_) => {
            warn(&mut diags, "name.startsWith is not a function", &path);
            return (None, diags);
        }
    };
    validate_name(&name, &parent, &path, &mut diags);
    let Some(description) = description else {
        return (None, diags);
    };
    let disable_model_invocation = matches!(
        fm.get("disable-model-invocation"),
        Some(Yaml::Boolean(true))
    );
    let skill = Skill {
        name,
        description,
        source_info: synthetic_source_info(file, &skill_dir, source),
        file_path: file.to_path_buf(),
        base_dir: skill_dir,
        disable_model_invocation,
    };
    (Some(skill), diags)
}

/// Skills by name, the first of a name kept (pi's `loadSkills` bookkeeping).
#[derive(Debug, Default)]
pub(crate) struct SkillSet {
    skills: Vec<Skill>,
    real_paths: HashSet<PathBuf>,
    diagnostics: Vec<ResourceDiagnostic>,
    collisions: Vec<ResourceDiagnostic>,
}

impl SkillSet {
    fn add(&mut self, skills: Vec<Skill>, diagnostics: Vec<ResourceDiagnostic>) {
        self.diagnostics.extend(diagnostics);
        for skill in skills {
            let real = paths::canonical(&skill.file_path);
            // The same file reached twice (a symbolic link): silently once.
            if self.real_paths.contains(&real) {
                continue;
            }
            if let Some(existing) = self.skills.iter().find(|s| s.name == skill.name) {
                self.collisions.push(ResourceDiagnostic::collision(
                    ResourceKind::Skill,
                    "skill",
                    format!("name \"{}\" collision", skill.name),
                    &skill.name,
                    &existing.file_path,
                    &skill.file_path,
                ));
            } else {
                self.real_paths.insert(real);
                self.skills.push(skill);
            }
        }
    }

    pub(crate) fn finish(mut self) -> (Vec<Skill>, Vec<ResourceDiagnostic>) {
        self.diagnostics.append(&mut self.collisions);
        (self.skills, self.diagnostics)
    }
}

/// pi's `loadSkills` without its default directories (the loader has resolved those into
/// `skill_paths` already): each path a skill file or a directory to walk.
pub(crate) fn load_skills(
    cwd: &Path,
    agent_dir: &Path,
    home: &Path,
    skill_paths: &[PathBuf],
) -> SkillSet {
    let user_dir = paths::join(agent_dir, "skills");
    let project_dir = paths::resolve(cwd, ".pi/skills");
    let mut set = SkillSet::default();
    for raw in skill_paths {
        let normalized = paths::expand_tilde(&paths::text(raw), home);
        let resolved = paths::resolve(cwd, normalized);
        let resolved_text = paths::text(&resolved);
        let Ok(meta) = std::fs::metadata(&resolved) else {
            set.diagnostics.push(ResourceDiagnostic::warning(
                ResourceKind::Skill,
                "skill path does not exist",
                &resolved_text,
            ));
            continue;
        };
        let source = if paths::is_under(&resolved, &user_dir) {
            SkillSource::User
        } else if paths::is_under(&resolved, &project_dir) {
            SkillSource::Project
        } else {
            SkillSource::Path
        };
        if meta.is_dir() {
            let mut skills = Vec::new();
            let mut diags = Vec::new();
            walk::walk_skill_dir(&resolved, &mut |file| {
                let (skill, d) = load_skill_from_file(file, source);
                skills.extend(skill);
                diags.extend(d);
            });
            set.add(skills, diags);
        } else if meta.is_file() && resolved_text.ends_with(".md") {
            let (skill, diags) = load_skill_from_file(&resolved, source);
            match skill {
                Some(skill) => set.add(vec![skill], diags),
                None => set.diagnostics.extend(diags),
            }
        } else {
            set.diagnostics.push(ResourceDiagnostic::warning(
                ResourceKind::Skill,
                "skill path is not a markdown file",
                &resolved_text,
            ));
        }
    }
    set
}

/// The skills section of the system prompt (pi's `formatSkillsForPrompt`): the skills the
/// model may invoke, as `<available_skills>` XML after a short instruction; empty when there
/// are none.
///
/// ```
/// # use std::path::PathBuf;
/// use pi_engine::cli::resources::{Skill, SourceInfo, SourceScope, format_skills_for_prompt};
///
/// let skill = Skill {
///     name: "pdf".into(),
///     description: "Reads <PDF> files.".into(),
///     file_path: PathBuf::from("/s/pdf/SKILL.md"),
///     base_dir: PathBuf::from("/s/pdf"),
///     source_info: SourceInfo::new("/s/pdf/SKILL.md", "local", SourceScope::Temporary),
///     disable_model_invocation: false,
/// };
/// let text = format_skills_for_prompt(&[skill]);
/// assert!(text.contains("<description>Reads &lt;PDF&gt; files.</description>"));
/// assert!(text.ends_with("</available_skills>"));
/// ```
pub fn format_skills_for_prompt(skills: &[Skill]) -> String {
    let visible: Vec<&Skill> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    if visible.is_empty() {
        return String::new();
    }
    let mut lines = vec![
        "\n\nThe following skills provide specialized instructions for specific tasks.".to_owned(),
        "Use the read tool to load a skill's file when the task matches its description.".to_owned(),
        "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.".to_owned(),
        String::new(),
        "<available_skills>".to_owned(),
    ];
    for s in visible {
        lines.push("  <skill>".to_owned());
        lines.push(format!("    <name>{}</name>", escape_xml(&s.name)));
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&s.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&paths::text(&s.file_path))
        ));
        lines.push("  </skill>".to_owned());
    }
    lines.push("</available_skills>".to_owned());
    lines.join("\n")
}

/// A skill's file could not be read (or its frontmatter parsed) when `/skill:name` asked for
/// it. pi reports this as an extension error (event `skill_expansion`) and sends the text as
/// typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillExpansionError {
    /// The skill's file.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for SkillExpansionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for SkillExpansionError {}

/// Expands `/skill:name args` as pi's `AgentSession` does: the skill's file (re-read now,
/// without its frontmatter) in a `<skill>` block, then the arguments. Text that is not a skill
/// command, or names no loaded skill, comes back as it is.
///
/// Reads a file: blocking I/O.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use pi_engine::cli::resources::{ResourceLoader, ResourceOptions, expand_skill_command};
///
/// let skill_dir = dir.path().join("agent/skills/greet");
/// std::fs::create_dir_all(&skill_dir).unwrap();
/// std::fs::write(skill_dir.join("SKILL.md"),
///                "---\nname: greet\ndescription: Greets.\n---\nSay hello.\n").unwrap();
/// let res = ResourceLoader::load(dir.path(), dir.path().join("agent"), &ResourceOptions::default());
/// let text = expand_skill_command("/skill:greet Ada", &res.skills).unwrap();
/// assert!(text.starts_with("<skill name=\"greet\" location=\""));
/// assert!(text.ends_with("Say hello.\n</skill>\n\nAda"));
/// assert_eq!(expand_skill_command("/skill:nope", &res.skills).unwrap(), "/skill:nope");
/// ```
pub fn expand_skill_command(text: &str, skills: &[Skill]) -> Result<String, SkillExpansionError> {
    let Some(rest) = text.strip_prefix("/skill:") else {
        return Ok(text.to_owned());
    };
    let (name, args) = match rest.find(' ') {
        Some(i) => (&rest[..i], js_trim(&rest[i + 1..])),
        None => (rest, ""),
    };
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        return Ok(text.to_owned());
    };
    let error = |message: String| SkillExpansionError {
        path: skill.file_path.clone(),
        message,
    };
    let content = paths::read_text(&skill.file_path).map_err(|e| error(e.to_string()))?;
    let body = frontmatter::parse(&content).map_err(error)?.body;
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
        skill.name,
        paths::text(&skill.file_path),
        paths::text(&skill.base_dir),
        js_trim(&body)
    );
    Ok(if args.is_empty() {
        block
    } else {
        format!("{block}\n\n{args}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::resources::types::DiagnosticType;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn messages(d: &[ResourceDiagnostic]) -> Vec<&str> {
        d.iter().map(|d| d.message.as_str()).collect()
    }

    #[test]
    fn validation_warns_but_loads() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("my-skill/SKILL.md");
        write(&file, "---\nname: Bad--Name-\ndescription: ok\n---\nbody");
        let (skill, diags) = load_skill_from_file(&file, SkillSource::Path);
        assert_eq!(skill.unwrap().name, "Bad--Name-");
        assert_eq!(
            messages(&diags),
            [
                "name \"Bad--Name-\" does not match parent directory \"my-skill\"",
                "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)",
                "name must not start or end with a hyphen",
                "name must not contain consecutive hyphens",
            ]
        );
    }

    #[test]
    fn missing_description_leaves_the_skill_out() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x/SKILL.md");
        write(&file, "---\nname: x\n---\nbody");
        let (skill, diags) = load_skill_from_file(&file, SkillSource::Path);
        assert!(skill.is_none());
        assert_eq!(messages(&diags), ["description is required"]);

        write(&file, "---\ndescription: 42\n---\n");
        let (skill, diags) = load_skill_from_file(&file, SkillSource::Path);
        assert!(skill.is_none());
        assert_eq!(messages(&diags), ["description.trim is not a function"]);

        write(&file, "---\ndescription: [\n---\n");
        let (skill, diags) = load_skill_from_file(&file, SkillSource::Path);
        assert!(skill.is_none());
        assert_eq!(diags.len(), 1);
    }

    #[test]
    fn name_defaults_to_the_directory_and_invocation_flag_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tool-x/SKILL.md");
        write(
            &file,
            "---\ndescription: d\ndisable-model-invocation: true\n---\n",
        );
        let (skill, diags) = load_skill_from_file(&file, SkillSource::User);
        let skill = skill.unwrap();
        assert!(diags.is_empty());
        assert_eq!(skill.name, "tool-x");
        assert!(skill.disable_model_invocation);
        assert_eq!(skill.source_info.scope, SourceScope::User);
        assert_eq!(format_skills_for_prompt(&[skill]), "");
    }

    #[test]
    fn collisions_keep_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a/same/SKILL.md");
        let b = dir.path().join("b/same/SKILL.md");
        write(&a, "---\ndescription: one\n---\n");
        write(&b, "---\ndescription: two\n---\n");
        let set = load_skills(
            dir.path(),
            &dir.path().join("agent"),
            dir.path(),
            &[
                dir.path().join("a"),
                dir.path().join("b"),
                dir.path().join("nope"),
            ],
        );
        let (skills, diags) = set.finish();
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].description, "one");
        assert_eq!(diags[0].message, "skill path does not exist");
        assert_eq!(diags[1].kind, DiagnosticType::Collision);
    }

    #[test]
    fn skill_command_expansion() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s/SKILL.md");
        write(&file, "---\ndescription: d\n---\n\n  Do it.  \n");
        let (skill, _) = load_skill_from_file(&file, SkillSource::Path);
        let skills = [skill.unwrap()];
        let base = dir.path().join("s");
        let expected = format!(
            "<skill name=\"s\" location=\"{}\">\nReferences are relative to {}.\n\nDo it.\n</skill>",
            file.display(),
            base.display()
        );
        assert_eq!(expand_skill_command("/skill:s", &skills).unwrap(), expected);
        assert_eq!(
            expand_skill_command("/skill:s   go  now ", &skills).unwrap(),
            format!("{expected}\n\ngo  now")
        );
        assert_eq!(expand_skill_command("/skills", &skills).unwrap(), "/skills");
        std::fs::remove_file(&file).unwrap();
        assert!(expand_skill_command("/skill:s", &skills).is_err());
    }
}
