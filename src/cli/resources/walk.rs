//! Walking resource directories as pi's package manager and loaders do: names sorted, hidden
//! entries and `node_modules` skipped, symbolic links followed, and `.gitignore`, `.ignore`
//! and `.fdignore` honoured, their patterns prefixed with the directory they sit in and
//! gathered in one list for the whole walk (pi's use of the npm `ignore` package).

use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::paths::{self, Entry};

const IGNORE_FILE_NAMES: [&str; 3] = [".gitignore", ".ignore", ".fdignore"];

/// The ignore patterns met so far in a walk from `root`.
#[derive(Debug)]
pub(crate) struct IgnoreRules {
    root: PathBuf,
    patterns: Vec<String>,
    matcher: Option<Gitignore>,
}

impl IgnoreRules {
    pub(crate) fn new(root: &Path) -> Self {
        IgnoreRules {
            root: root.to_path_buf(),
            patterns: Vec::new(),
            matcher: None,
        }
    }

    /// Adds the patterns of `dir`'s ignore files (pi's `addIgnoreRules`).
    pub(crate) fn add_dir(&mut self, dir: &Path) {
        let rel = paths::relative(&self.root, dir);
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        let before = self.patterns.len();
        for name in IGNORE_FILE_NAMES {
            let Ok(content) = std::fs::read_to_string(dir.join(name)) else {
                continue;
            };
            self.patterns.extend(
                content
                    .split('\n')
                    .map(|l| l.strip_suffix('\r').unwrap_or(l))
                    .filter_map(|l| prefix_pattern(l, &prefix)),
            );
        }
        if self.patterns.len() != before {
            let mut builder = GitignoreBuilder::new(&self.root);
            for p in &self.patterns {
                // A line the glob syntax rejects is skipped, as it would match nothing.
                let _ = builder.add_line(None, p);
            }
            self.matcher = builder.build().ok();
        }
    }

    /// Whether the path (relative to the root, `/`-separated) is ignored.
    pub(crate) fn ignores(&self, rel: &str, is_dir: bool) -> bool {
        self.matcher
            .as_ref()
            .is_some_and(|m| matches!(m.matched(rel, is_dir), Match::Ignore(_)))
    }

    fn rel(&self, path: &Path) -> String {
        paths::relative(&self.root, path)
    }
}

/// pi's `prefixIgnorePattern`: comments and blank lines dropped, a leading `/` removed, the
/// directory's prefix put in front (after the `!` of a negation).
fn prefix_pattern(line: &str, prefix: &str) -> Option<String> {
    let trimmed = line.trim();
    if trimmed.is_empty() || (trimmed.starts_with('#') && !trimmed.starts_with("\\#")) {
        return None;
    }
    let mut pattern = line;
    let mut negated = false;
    if let Some(rest) = pattern.strip_prefix('!') {
        negated = true;
        pattern = rest;
    } else if pattern.starts_with("\\!") {
        pattern = &pattern[1..];
    }
    let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
    let prefixed = format!("{prefix}{pattern}");
    Some(if negated {
        format!("!{prefixed}")
    } else {
        prefixed
    })
}

/// The entries of `dir`, or none when it cannot be read (pi ignores such errors).
fn entries(dir: &Path) -> Vec<Entry> {
    paths::read_dir_sorted(dir).unwrap_or_default()
}

/// Where skill files are looked for: pi's own directories take root `.md` files as skills,
/// the `.agents` ones only `SKILL.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SkillDirMode {
    Pi,
    Agents,
}

/// pi's `collectSkillEntries`: a directory holding a `SKILL.md` is a skill and is not looked
/// into further; otherwise its subdirectories are (and, in `Pi` mode at the root, its `.md`
/// files are skills too).
pub(crate) fn collect_skill_entries(dir: &Path, mode: SkillDirMode) -> Vec<PathBuf> {
    let mut rules = IgnoreRules::new(dir);
    let mut out = Vec::new();
    collect_skill_entries_in(dir, mode, &mut rules, &mut out);
    out
}

fn collect_skill_entries_in(
    dir: &Path,
    mode: SkillDirMode,
    rules: &mut IgnoreRules,
    out: &mut Vec<PathBuf>,
) {
    if !dir.exists() {
        return;
    }
    rules.add_dir(dir);
    let list = entries(dir);
    for e in &list {
        if e.name == "SKILL.md" && e.is_file && !rules.ignores(&rules.rel(&e.path), false) {
            out.push(e.path.clone());
            return;
        }
    }
    let at_root = dir == rules.root;
    for e in &list {
        if e.name.starts_with('.') || e.name == "node_modules" {
            continue;
        }
        let rel = rules.rel(&e.path);
        if mode == SkillDirMode::Pi
            && at_root
            && e.is_file
            && e.name.ends_with(".md")
            && !rules.ignores(&rel, false)
        {
            out.push(e.path.clone());
            continue;
        }
        if !e.is_dir || rules.ignores(&rel, true) {
            continue;
        }
        collect_skill_entries_in(&e.path, mode, rules, out);
    }
}

/// pi's `collectFiles` for prompt templates named in settings: `.md` files, recursively.
pub(crate) fn collect_md_files(dir: &Path) -> Vec<PathBuf> {
    let mut rules = IgnoreRules::new(dir);
    let mut out = Vec::new();
    collect_md_files_in(dir, &mut rules, &mut out);
    out
}

fn collect_md_files_in(dir: &Path, rules: &mut IgnoreRules, out: &mut Vec<PathBuf>) {
    if !dir.exists() {
        return;
    }
    rules.add_dir(dir);
    for e in entries(dir) {
        if e.name.starts_with('.') || e.name == "node_modules" {
            continue;
        }
        if rules.ignores(&rules.rel(&e.path), e.is_dir) {
            continue;
        }
        if e.is_dir {
            collect_md_files_in(&e.path, rules, out);
        } else if e.is_file && e.name.ends_with(".md") {
            out.push(e.path);
        }
    }
}

/// pi's `collectAutoPromptEntries`: the `.md` files directly in `dir`.
pub(crate) fn collect_auto_prompt_entries(dir: &Path) -> Vec<PathBuf> {
    if !dir.exists() {
        return Vec::new();
    }
    let mut rules = IgnoreRules::new(dir);
    rules.add_dir(dir);
    entries(dir)
        .into_iter()
        .filter(|e| !e.name.starts_with('.') && e.name != "node_modules")
        .filter(|e| !rules.ignores(&rules.rel(&e.path), false))
        .filter(|e| e.is_file && e.name.ends_with(".md"))
        .map(|e| e.path)
        .collect()
}

/// Calls `on_file` for each skill file in `dir`, in pi's order (`loadSkillsFromDir`).
pub(crate) fn walk_skill_dir(dir: &Path, on_file: &mut dyn FnMut(&Path)) {
    let mut rules = IgnoreRules::new(dir);
    walk_skill_dir_in(dir, true, &mut rules, on_file);
}

/// pi's `loadSkillsFromDirInternal`, the walk part: like [`collect_skill_entries`] in `Pi`
/// mode, but root `.md` files only when `include_root_files`, and no `node_modules` check on
/// the `SKILL.md` itself.
fn walk_skill_dir_in(
    dir: &Path,
    include_root_files: bool,
    rules: &mut IgnoreRules,
    on_file: &mut dyn FnMut(&Path),
) {
    if !dir.exists() {
        return;
    }
    rules.add_dir(dir);
    let list = entries(dir);
    for e in &list {
        if e.name != "SKILL.md" {
            continue;
        }
        if !e.is_file || rules.ignores(&rules.rel(&e.path), false) {
            continue;
        }
        on_file(&e.path);
        return;
    }
    for e in &list {
        if e.name.starts_with('.') || e.name == "node_modules" {
            continue;
        }
        if rules.ignores(&rules.rel(&e.path), e.is_dir) {
            continue;
        }
        if e.is_dir {
            walk_skill_dir_in(&e.path, false, rules, on_file);
            continue;
        }
        if e.is_file && include_root_files && e.name.ends_with(".md") {
            on_file(&e.path);
        }
    }
}

/// pi's `loadTemplatesFromDir`: the `.md` files directly in `dir` (hidden ones too, no ignore
/// files).
pub(crate) fn template_files_in(dir: &Path) -> Vec<PathBuf> {
    entries(dir)
        .into_iter()
        .filter(|e| e.is_file && e.name.ends_with(".md"))
        .map(|e| e.path)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignore_patterns_are_prefixed_like_pis() {
        assert_eq!(prefix_pattern("# c", "a/"), None);
        assert_eq!(prefix_pattern("  ", "a/"), None);
        assert_eq!(prefix_pattern("/x", "a/").as_deref(), Some("a/x"));
        assert_eq!(prefix_pattern("!x", "a/").as_deref(), Some("!a/x"));
        assert_eq!(prefix_pattern("\\!x", "").as_deref(), Some("!x"));
    }

    #[test]
    fn skill_walk_honours_ignore_files_and_stops_at_skill_md() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for p in [
            "a/SKILL.md",
            "a/nested/SKILL.md",
            "b/c/SKILL.md",
            "skip/SKILL.md",
            "top.md",
        ] {
            let p = root.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "skip/\n").unwrap();
        let found: Vec<String> = collect_skill_entries(root, SkillDirMode::Pi)
            .iter()
            .map(|p| paths::relative(root, p))
            .collect();
        assert_eq!(found, ["a/SKILL.md", "b/c/SKILL.md", "top.md"]);
        let found = collect_skill_entries(root, SkillDirMode::Agents);
        assert_eq!(found.len(), 2);
    }
}
