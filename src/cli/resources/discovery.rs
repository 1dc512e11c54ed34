//! Which skill and prompt-template files are candidates, and whether each is enabled: pi's
//! `DefaultPackageManager.resolve` for the local parts (settings entries with their patterns,
//! and the auto-discovered directories), in pi's precedence order.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use globset::GlobBuilder;

use super::paths;
use super::types::SourceScope;
use super::walk::{self, SkillDirMode};

/// The two resource types resolved here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Skills,
    Prompts,
}

/// pi's `PathMetadata` for a resolved file (the origin is always top-level here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Meta {
    /// `"local"` (a settings entry) or `"auto"` (discovered).
    pub(crate) source: &'static str,
    pub(crate) scope: SourceScope,
    pub(crate) base_dir: Option<PathBuf>,
}

/// A candidate file.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) path: PathBuf,
    pub(crate) enabled: bool,
    pub(crate) meta: Meta,
}

/// Where the resolution happens.
#[derive(Debug)]
pub(crate) struct Places<'a> {
    pub(crate) cwd: &'a Path,
    pub(crate) agent_dir: &'a Path,
    pub(crate) home: &'a Path,
    /// The global settings' entries for this type.
    pub(crate) global_entries: &'a [String],
    /// The project settings' entries for this type.
    pub(crate) project_entries: &'a [String],
}

#[derive(Default)]
struct Accumulator {
    entries: Vec<Resolved>,
    seen: HashSet<PathBuf>,
}

impl Accumulator {
    fn add(&mut self, path: PathBuf, meta: &Meta, enabled: bool) {
        if self.seen.insert(path.clone()) {
            self.entries.push(Resolved {
                path,
                enabled,
                meta: meta.clone(),
            });
        }
    }
}

/// The candidates of one type: project settings entries, global ones, then the project's
/// and the user's directories; sorted by pi's precedence (project before user, settings
/// before discovery, stable otherwise) and without a file reached twice.
pub(crate) fn resolve(kind: Kind, at: &Places<'_>) -> Vec<Resolved> {
    let mut acc = Accumulator::default();
    let project_base = paths::join(at.cwd, ".pi");
    let global_base = at.agent_dir.to_path_buf();
    let local = |scope| Meta {
        source: "local",
        scope,
        base_dir: None,
    };
    resolve_local_entries(
        &mut acc,
        kind,
        at.project_entries,
        &local(SourceScope::Project),
        &project_base,
        at.home,
    );
    resolve_local_entries(
        &mut acc,
        kind,
        at.global_entries,
        &local(SourceScope::User),
        &global_base,
        at.home,
    );

    let (project_auto, user_auto) = match kind {
        Kind::Skills => {
            let user_agents = paths::join(at.home, ".agents/skills");
            let mut project = walk::collect_skill_entries(
                &paths::join(&project_base, "skills"),
                SkillDirMode::Pi,
            );
            for dir in ancestor_agents_skill_dirs(at.cwd) {
                if dir != user_agents {
                    project.extend(walk::collect_skill_entries(&dir, SkillDirMode::Agents));
                }
            }
            let mut user =
                walk::collect_skill_entries(&paths::join(&global_base, "skills"), SkillDirMode::Pi);
            user.extend(walk::collect_skill_entries(
                &user_agents,
                SkillDirMode::Agents,
            ));
            (project, user)
        }
        Kind::Prompts => (
            walk::collect_auto_prompt_entries(&paths::join(&project_base, "prompts")),
            walk::collect_auto_prompt_entries(&paths::join(&global_base, "prompts")),
        ),
    };
    let project_meta = Meta {
        source: "auto",
        scope: SourceScope::Project,
        base_dir: Some(project_base.clone()),
    };
    for p in project_auto {
        let enabled = is_enabled_by_overrides(&p, at.project_entries, &project_base);
        acc.add(p, &project_meta, enabled);
    }
    let user_meta = Meta {
        source: "auto",
        scope: SourceScope::User,
        base_dir: Some(global_base.clone()),
    };
    for p in user_auto {
        let enabled = is_enabled_by_overrides(&p, at.global_entries, &global_base);
        acc.add(p, &user_meta, enabled);
    }

    let mut entries = acc.entries;
    entries.sort_by_key(|e| rank(&e.meta));
    let mut canonical = HashSet::new();
    entries.retain(|e| canonical.insert(paths::canonical(&e.path)));
    entries
}

/// pi's `resourcePrecedenceRank` (packages, rank 4, are not resolved here).
fn rank(m: &Meta) -> u8 {
    let scope = if m.scope == SourceScope::Project {
        0
    } else {
        2
    };
    scope + u8::from(m.source != "local")
}

/// `.agents/skills` in `cwd` and each ancestor, up to the git repository's root (the first
/// ancestor holding `.git`) or the filesystem root.
fn ancestor_agents_skill_dirs(cwd: &Path) -> Vec<PathBuf> {
    let git_root = cwd.ancestors().find(|d| d.join(".git").exists());
    let mut out = Vec::new();
    for dir in cwd.ancestors() {
        out.push(paths::join(dir, ".agents/skills"));
        if Some(dir) == git_root {
            break;
        }
    }
    out
}

/// pi's `resolvePathFromBase`: `~` is `$HOME`, anything else relative to `base`.
fn resolve_from_base(entry: &str, base: &Path, home: &Path) -> PathBuf {
    let expanded = paths::expand_tilde(entry, home);
    paths::resolve(base, expanded)
}

fn is_override(s: &str) -> bool {
    s.starts_with('!') || s.starts_with('+') || s.starts_with('-')
}

fn is_pattern(s: &str) -> bool {
    is_override(s) || s.contains('*') || s.contains('?')
}

fn resolve_local_entries(
    acc: &mut Accumulator,
    kind: Kind,
    entries: &[String],
    meta: &Meta,
    base: &Path,
    home: &Path,
) {
    if entries.is_empty() {
        return;
    }
    let (patterns, plain): (Vec<&String>, Vec<&String>) =
        entries.iter().partition(|e| is_pattern(e));
    let mut files = Vec::new();
    for p in plain {
        let p = resolve_from_base(p, base, home);
        let Ok(m) = std::fs::metadata(&p) else {
            continue;
        };
        if m.is_file() {
            files.push(p);
        } else if m.is_dir() {
            files.extend(match kind {
                Kind::Skills => walk::collect_skill_entries(&p, SkillDirMode::Pi),
                Kind::Prompts => walk::collect_md_files(&p),
            });
        }
    }
    let patterns: Vec<&str> = patterns.iter().map(|s| s.as_str()).collect();
    let enabled = apply_patterns(&files, &patterns, base);
    for f in files {
        let on = enabled.contains(&f);
        acc.add(f, meta, on);
    }
}

/// A minimatch-style glob test (`*` stays within a path segment).
fn glob_matches(pattern: &str, candidate: &str) -> bool {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .is_ok_and(|g| g.compile_matcher().is_match(candidate))
}

/// What a file is matched as: its path relative to `base`, its name, its full path, and for
/// a `SKILL.md` the same three of its directory.
struct Candidates {
    file: [String; 3],
    skill_dir: Option<[String; 3]>,
}

fn candidates(file: &Path, base: &Path) -> Candidates {
    let name = paths::basename(file);
    let skill_dir = (name == "SKILL.md").then(|| {
        let dir = paths::dirname(file);
        [
            paths::relative(base, &dir),
            paths::basename(&dir),
            paths::text(&dir),
        ]
    });
    Candidates {
        file: [paths::relative(base, file), name, paths::text(file)],
        skill_dir,
    }
}

/// pi's `matchesAnyPattern`.
fn matches_any_pattern(file: &Path, patterns: &[&str], base: &Path) -> bool {
    let c = candidates(file, base);
    patterns.iter().any(|p| {
        c.file.iter().any(|s| glob_matches(p, s))
            || c.skill_dir
                .as_ref()
                .is_some_and(|d| d.iter().any(|s| glob_matches(p, s)))
    })
}

/// pi's `matchesAnyExactPattern`: the relative or full path, or for a `SKILL.md` its
/// directory's (a leading `./` ignored).
fn matches_any_exact(file: &Path, patterns: &[&str], base: &Path) -> bool {
    let c = candidates(file, base);
    patterns.iter().any(|p| {
        let p = p.strip_prefix("./").unwrap_or(p);
        p == c.file[0]
            || p == c.file[2]
            || c.skill_dir.as_ref().is_some_and(|d| p == d[0] || p == d[2])
    })
}

fn strip_each<'a>(patterns: &[&'a str], prefix: char) -> Vec<&'a str> {
    patterns
        .iter()
        .filter_map(|p| p.strip_prefix(prefix))
        .collect()
}

/// pi's `isEnabledByOverrides`: `!glob` disables, `+path` re-enables, `-path` disables.
fn is_enabled_by_overrides(file: &Path, entries: &[String], base: &Path) -> bool {
    let overrides: Vec<&str> = entries
        .iter()
        .map(String::as_str)
        .filter(|e| is_override(e))
        .collect();
    let excludes = strip_each(&overrides, '!');
    let force_in = strip_each(&overrides, '+');
    let force_out = strip_each(&overrides, '-');
    let mut enabled = true;
    if !excludes.is_empty() && matches_any_pattern(file, &excludes, base) {
        enabled = false;
    }
    if !force_in.is_empty() && matches_any_exact(file, &force_in, base) {
        enabled = true;
    }
    if !force_out.is_empty() && matches_any_exact(file, &force_out, base) {
        enabled = false;
    }
    enabled
}

/// pi's `applyPatterns`: includes (all if none), minus `!` excludes, plus `+` exact paths,
/// minus `-` exact paths.
fn apply_patterns(all: &[PathBuf], patterns: &[&str], base: &Path) -> HashSet<PathBuf> {
    let force_in = strip_each(patterns, '+');
    let force_out = strip_each(patterns, '-');
    let excludes = strip_each(patterns, '!');
    let includes: Vec<&str> = patterns
        .iter()
        .copied()
        .filter(|p| !is_override(p))
        .collect();
    let mut result: Vec<&PathBuf> = if includes.is_empty() {
        all.iter().collect()
    } else {
        all.iter()
            .filter(|f| matches_any_pattern(f, &includes, base))
            .collect()
    };
    if !excludes.is_empty() {
        result.retain(|f| !matches_any_pattern(f, &excludes, base));
    }
    if !force_in.is_empty() {
        for f in all {
            if !result.contains(&f) && matches_any_exact(f, &force_in, base) {
                result.push(f);
            }
        }
    }
    if !force_out.is_empty() {
        result.retain(|f| !matches_any_exact(f, &force_out, base));
    }
    result.into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }

    #[test]
    fn overrides_and_patterns() {
        let base = Path::new("/base");
        let f = Path::new("/base/skills/pdf/SKILL.md");
        assert!(!is_enabled_by_overrides(f, &["!pdf".into()], base));
        assert!(is_enabled_by_overrides(
            f,
            &["!pdf".into(), "+skills/pdf".into()],
            base
        ));
        assert!(!is_enabled_by_overrides(
            f,
            &["+skills/pdf".into(), "-./skills/pdf/SKILL.md".into()],
            base
        ));
        let all = vec![PathBuf::from("/base/a.md"), PathBuf::from("/base/sub/b.md")];
        let on = apply_patterns(&all, &["*.md"], base);
        assert!(on.contains(Path::new("/base/a.md")));
        assert!(on.contains(Path::new("/base/sub/b.md")), "matched by name");
        let on = apply_patterns(&all, &["!sub/*"], base);
        assert_eq!(on.len(), 1);
    }

    #[test]
    fn precedence_and_agents_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let cwd = root.join("repo/sub");
        let agent = root.join("agent");
        let home = root.join("home");
        std::fs::create_dir_all(root.join("repo/.git")).unwrap();
        write(&agent.join("skills/u/SKILL.md"));
        write(&cwd.join(".pi/skills/p/SKILL.md"));
        write(&root.join("repo/.agents/skills/r/SKILL.md"));
        write(&root.join(".agents/skills/outside/SKILL.md"));
        write(&home.join(".agents/skills/h/SKILL.md"));
        write(&root.join("extra/e/SKILL.md"));
        let global = vec![paths::text(&root.join("extra"))];
        let got = resolve(
            Kind::Skills,
            &Places {
                cwd: &cwd,
                agent_dir: &agent,
                home: &home,
                global_entries: &global,
                project_entries: &[],
            },
        );
        let names: Vec<String> = got
            .iter()
            .map(|r| paths::basename(&paths::dirname(&r.path)))
            .collect();
        assert_eq!(names, ["p", "r", "e", "u", "h"]);
        assert!(got.iter().all(|r| r.enabled));
    }
}
