//! How a tool turns the path a model wrote into the file it means, as pi does: an `@` prefix
//! dropped, odd Unicode spaces made plain, `~` expanded, relative to the tool's cwd, `.` and
//! `..` resolved lexically (node's `path.resolve`), and for reading, the macOS spellings of a
//! screenshot's name tried when the path as written does not exist.

use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

use super::fs::FileSystem;

/// Spaces a model or a terminal may put in a path for a plain space (no-break, thin, ideographic…).
fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The path with pi's input fixes: an `@` prefix removed, Unicode spaces made plain, `~` and
/// `~/…` expanded to the home directory.
///
/// ```
/// use pi_engine::tools::expand_path;
///
/// assert_eq!(expand_path("@src/main.rs"), std::path::PathBuf::from("src/main.rs"));
/// ```
pub fn expand_path(path: &str) -> PathBuf {
    let path = path.strip_prefix('@').unwrap_or(path);
    let path: String = path
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if let Some(home) = home_dir() {
        if path == "~" {
            return home;
        }
        if let Some(rest) = path.strip_prefix("~/") {
            return home.join(rest);
        }
    }
    PathBuf::from(path)
}

/// `path` made absolute against `cwd` and normalized lexically (`a/./b/../c` is `a/c`), as
/// node's `path.resolve` does; symlinks are not followed here.
///
/// ```
/// use pi_engine::tools::resolve_to_cwd;
/// use std::path::Path;
///
/// assert_eq!(resolve_to_cwd("../b/./c.txt", Path::new("/work/a")), Path::new("/work/b/c.txt"));
/// assert_eq!(resolve_to_cwd("/etc/hosts", Path::new("/work")), Path::new("/etc/hosts"));
/// ```
pub fn resolve_to_cwd(path: &str, cwd: &Path) -> PathBuf {
    let expanded = expand_path(path);
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    normalize(&joined)
}

/// Lexical normalization: `.` dropped, `..` pops a component (never above the root).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// [`resolve_to_cwd`], then, when that file does not exist on `fs`, the spellings macOS gives
/// a screenshot's name: a narrow no-break space before `AM`/`PM`, the decomposed (NFD) form,
/// a curly apostrophe, and NFD with a curly apostrophe. The first that exists wins; none, and
/// the path as resolved is returned (the caller reports it missing).
pub async fn resolve_read_path(path: &str, cwd: &Path, fs: &dyn FileSystem) -> PathBuf {
    let resolved = resolve_to_cwd(path, cwd);
    if fs.exists(&resolved).await {
        return resolved;
    }
    let Some(text) = resolved.to_str() else {
        return resolved;
    };
    let am_pm = regex_am_pm(text);
    let nfd: String = text.nfd().collect();
    let curly = text.replace('\'', "\u{2019}");
    let nfd_curly = nfd.replace('\'', "\u{2019}");
    for candidate in [am_pm, nfd, curly, nfd_curly] {
        if candidate != text && fs.exists(Path::new(&candidate)).await {
            return PathBuf::from(candidate);
        }
    }
    resolved
}

/// `" AM."`/`" PM."` (any case) with a narrow no-break space instead of the space.
fn regex_am_pm(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        if bytes[i] == b' ' && i + 4 <= text.len() {
            let word = &bytes[i + 1..i + 3];
            if (word.eq_ignore_ascii_case(b"am") || word.eq_ignore_ascii_case(b"pm"))
                && bytes[i + 3] == b'.'
            {
                out.push('\u{202F}');
                out.push_str(&text[i + 1..i + 4]);
                i += 4;
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unicode_spaces_and_at_prefix() {
        assert_eq!(expand_path("@a\u{00A0}b"), PathBuf::from("a b"));
    }

    #[test]
    fn parent_never_climbs_above_the_root() {
        assert_eq!(
            resolve_to_cwd("../../..", Path::new("/a")),
            PathBuf::from("/")
        );
    }

    #[test]
    fn am_pm_variant() {
        assert_eq!(
            regex_am_pm("/x/Shot 10.00.00 pm.png"),
            "/x/Shot 10.00.00\u{202F}pm.png"
        );
        assert_eq!(regex_am_pm("/x/a b"), "/x/a b");
    }

    #[tokio::test]
    async fn read_path_finds_the_narrow_space_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("Shot 1.02.03\u{202F}PM.png");
        std::fs::write(&real, b"x").unwrap();
        let fs = crate::tools::LocalFs::new();
        let got = resolve_read_path("Shot 1.02.03 PM.png", dir.path(), &fs).await;
        assert_eq!(got, real);
        let missing = resolve_read_path("none.png", dir.path(), &fs).await;
        assert_eq!(missing, dir.path().join("none.png"));
    }
}
