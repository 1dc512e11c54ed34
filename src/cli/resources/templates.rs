//! Prompt templates (pi's `prompt-templates.ts`): Markdown files whose name is a `/command`,
//! expanded with bash-style arguments.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::frontmatter::{self, scalar_text};
use super::paths;
use super::text::{js_len, js_prefix, js_trim};
use super::types::SourceInfo;
use super::walk;

/// A prompt template: `/name args` expands to its content with the arguments substituted.
///
/// ```
/// # use std::path::PathBuf;
/// use pi_engine::cli::resources::{PromptTemplate, SourceInfo, SourceScope, expand_prompt_template};
///
/// let review = PromptTemplate {
///     name: "review".into(),
///     description: "Review a file".into(),
///     argument_hint: None,
///     content: "Review $1, focusing on ${@:2}.".into(),
///     file_path: PathBuf::from("/p/.pi/prompts/review.md"),
///     source_info: SourceInfo::new("/p/.pi/prompts/review.md", "auto", SourceScope::Project),
/// };
/// assert_eq!(
///     expand_prompt_template("/review main.rs \"error handling\" tests", &[review]),
///     "Review main.rs, focusing on error handling tests."
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTemplate {
    /// The file name without `.md`: the command is `/name`.
    pub name: String,
    /// The frontmatter's `description`, else the first non-blank line of the body (cut at 60
    /// characters, with `...`).
    pub description: String,
    /// The frontmatter's `argument-hint`.
    pub argument_hint: Option<String>,
    /// The body (after the frontmatter, trimmed; the whole file when there is none).
    pub content: String,
    /// The template's file.
    pub file_path: PathBuf,
    /// Where it came from.
    pub source_info: SourceInfo,
}

/// pi's `loadTemplateFromFile`; `None` for a file that cannot be read or parsed (pi skips it
/// without a word).
pub(crate) fn load_template_from_file(
    file: &Path,
    source_info: SourceInfo,
) -> Option<PromptTemplate> {
    let raw = paths::read_text(file).ok()?;
    let fm = frontmatter::parse(&raw).ok()?;
    let file_name = paths::basename(file);
    let name = file_name
        .strip_suffix(".md")
        .unwrap_or(&file_name)
        .to_owned();
    let mut description = fm
        .truthy("description")
        .and_then(scalar_text)
        .unwrap_or_default();
    if description.is_empty()
        && let Some(first) = fm.body.split('\n').find(|l| !js_trim(l).is_empty())
    {
        description = js_prefix(first, 60).to_owned();
        if js_len(first) > 60 {
            description.push_str("...");
        }
    }
    Some(PromptTemplate {
        name,
        description,
        argument_hint: fm.truthy("argument-hint").and_then(scalar_text),
        content: fm.body,
        file_path: file.to_path_buf(),
        source_info,
    })
}

/// pi's `loadPromptTemplates` without its default directories: each path a template file or
/// a directory whose `.md` files (not recursively) are templates. A path that does not exist
/// is skipped; `source_info` says where each file came from.
pub(crate) fn load_templates(
    cwd: &Path,
    home: &Path,
    prompt_paths: &[PathBuf],
    source_info: &dyn Fn(&Path) -> SourceInfo,
) -> Vec<PromptTemplate> {
    let mut out = Vec::new();
    for raw in prompt_paths {
        let normalized = paths::expand_tilde(&paths::text(raw), home);
        let resolved = paths::resolve(cwd, normalized);
        let Ok(meta) = std::fs::metadata(&resolved) else {
            continue;
        };
        if meta.is_dir() {
            for file in walk::template_files_in(&resolved) {
                out.extend(load_template_from_file(&file, source_info(&file)));
            }
        } else if meta.is_file() && paths::text(&resolved).ends_with(".md") {
            out.extend(load_template_from_file(&resolved, source_info(&resolved)));
        }
    }
    out
}

/// Splits a template's arguments as pi does (`parseCommandArgs`): on spaces and tabs, with
/// `"…"` and `'…'` quoting (quotes removed, no escapes; an empty quoted argument vanishes).
///
/// ```
/// use pi_engine::cli::resources::parse_command_args;
///
/// assert_eq!(parse_command_args(r#"a "b c"  d'e f'"#), ["a", "b c", "de f"]);
/// assert!(parse_command_args(r#" "" "#).is_empty());
/// ```
pub fn parse_command_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == ' ' || c == '\t' => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            None => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

// pi's four patterns (JavaScript's `\d` is ASCII digits only).
static POSITIONAL: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\$([0-9]+)").ok());
static SLICE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\$\{@:([0-9]+)(?::([0-9]+))?\}").ok());
static ARGUMENTS: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\$ARGUMENTS").ok());
static ALL: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\$@").ok());

/// `parseInt` of ASCII digits as an index; too large to index anything is `usize::MAX`.
fn parse_index(digits: &str) -> usize {
    digits.parse().unwrap_or(usize::MAX)
}

/// The replacement text `String.prototype.replace` makes of `replacement` for a match of a
/// pattern without groups: `$$`, `$&`, `` $` `` and `$'` are special, the rest is literal.
fn js_substitution(replacement: &str, haystack: &str, start: usize, end: usize) -> String {
    let mut out = String::with_capacity(replacement.len());
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('$') => out.push('$'),
            Some('&') => out.push_str(&haystack[start..end]),
            Some('`') => out.push_str(&haystack[..start]),
            Some('\'') => out.push_str(&haystack[end..]),
            _ => {
                out.push('$');
                continue;
            }
        }
        chars.next();
    }
    out
}

fn replace_all(
    re: &LazyLock<Option<Regex>>,
    haystack: &str,
    f: impl Fn(&Captures<'_>) -> String,
) -> String {
    match re.as_ref() {
        Some(re) => re
            .replace_all(haystack, |c: &Captures<'_>| f(c))
            .into_owned(),
        None => haystack.to_owned(),
    }
}

/// Substitutes a template's placeholders as pi's `substituteArgs` does, in its four passes:
/// `$1`, `$2`, … (missing ones empty), then `${@:N}` / `${@:N:L}` (bash-style slices from the
/// N-th argument), then `$ARGUMENTS`, then `$@` (all arguments joined by spaces).
///
/// Each pass works on the previous one's output, and the last two go through JavaScript's
/// replacement patterns (`$$` in an argument becomes `$`), exactly as in pi.
///
/// ```
/// use pi_engine::cli::resources::substitute_args;
///
/// let args = ["a".to_string(), "b".into(), "c".into()];
/// assert_eq!(substitute_args("$1|$4|${@:2}|${@:1:2}|$ARGUMENTS|$@", &args), "a||b c|a b|a b c|a b c");
/// ```
pub fn substitute_args(content: &str, args: &[String]) -> String {
    let result = replace_all(&POSITIONAL, content, |c| {
        let n = parse_index(&c[1]);
        n.checked_sub(1)
            .and_then(|i| args.get(i))
            .cloned()
            .unwrap_or_default()
    });
    let result = replace_all(&SLICE, &result, |c| {
        let start = parse_index(&c[1]).saturating_sub(1).min(args.len());
        let end = match c.get(2) {
            Some(len) => start
                .saturating_add(parse_index(len.as_str()))
                .min(args.len()),
            None => args.len(),
        };
        args[start..end].join(" ")
    });
    let all = args.join(" ");
    let pass = |re: &LazyLock<Option<Regex>>, hay: &str| -> String {
        let Some(re) = re.as_ref() else {
            return hay.to_owned();
        };
        let mut out = String::with_capacity(hay.len());
        let mut last = 0;
        for m in re.find_iter(hay) {
            out.push_str(&hay[last..m.start()]);
            out.push_str(&js_substitution(&all, hay, m.start(), m.end()));
            last = m.end();
        }
        out.push_str(&hay[last..]);
        out
    };
    let result = pass(&ARGUMENTS, &result);
    pass(&ALL, &result)
}

/// Expands `/name args` with the first template of that name (pi's `expandPromptTemplate`):
/// the name runs to the first space, the arguments are split by [`parse_command_args`] and
/// substituted by [`substitute_args`]. Other text comes back as it is.
///
/// ```
/// use pi_engine::cli::resources::expand_prompt_template;
///
/// assert_eq!(expand_prompt_template("/unknown x", &[]), "/unknown x");
/// ```
pub fn expand_prompt_template(text: &str, templates: &[PromptTemplate]) -> String {
    let Some(rest) = text.strip_prefix('/') else {
        return text.to_owned();
    };
    let (name, args) = rest.split_once(' ').unwrap_or((rest, ""));
    match templates.iter().find(|t| t.name == name) {
        Some(t) => substitute_args(&t.content, &parse_command_args(args)),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::resources::types::SourceScope;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn argument_splitting() {
        assert_eq!(parse_command_args("  a\tb  "), ["a", "b"]);
        assert_eq!(
            parse_command_args("\"it's\" 'say \"hi\"'"),
            ["it's", "say \"hi\""]
        );
        assert_eq!(
            parse_command_args("unterminated \"quote here"),
            ["unterminated", "quote here"]
        );
        assert_eq!(parse_command_args("a\"\"b"), ["ab"]);
    }

    #[test]
    fn substitution_edge_cases() {
        let a = args(&["x", "y"]);
        assert_eq!(substitute_args("$0 $10 $99999999999999999999", &a), "  ");
        assert_eq!(
            substitute_args("${@:0} ${@:3} ${@:2:0} ${@:2:9}", &a),
            "x y   y"
        );
        // Values are not substituted again by the positional pass, but later passes see them.
        assert_eq!(substitute_args("$1", &args(&["$2", "z"])), "$2");
        assert_eq!(substitute_args("$1", &args(&["${@:2}", "z"])), "z");
        assert_eq!(substitute_args("$1", &args(&["$@", "z"])), "$@ z");
        // JavaScript's replacement patterns in the joined arguments.
        assert_eq!(substitute_args("<$@>", &args(&["a$$b"])), "<a$b>");
        assert_eq!(substitute_args("<$@>", &args(&["$&"])), "<$@>");
        assert_eq!(substitute_args("<$ARGUMENTS>", &args(&["$`"])), "<<>");
        assert_eq!(substitute_args("<$@>", &args(&["$'", "$1"])), "<> $1>");
    }

    #[test]
    fn loads_description_from_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("long.md");
        let line = "x".repeat(70);
        std::fs::write(&file, format!("\n\n  {line}\nrest")).unwrap();
        let info = SourceInfo::new("p", "local", SourceScope::Temporary);
        let t = load_template_from_file(&file, info.clone()).unwrap();
        assert_eq!(t.name, "long");
        assert_eq!(t.description, format!("  {}...", &line[..58]));
        assert_eq!(t.content, format!("\n\n  {line}\nrest"));

        std::fs::write(
            &file,
            "---\ndescription: D\nargument-hint: \"<x>\"\n---\n body \n",
        )
        .unwrap();
        let t = load_template_from_file(&file, info.clone()).unwrap();
        assert_eq!(
            (t.description.as_str(), t.argument_hint.as_deref()),
            ("D", Some("<x>"))
        );
        assert_eq!(t.content, "body");

        std::fs::write(&file, "---\ndescription: [\n---\n").unwrap();
        assert!(load_template_from_file(&file, info).is_none());
    }
}
