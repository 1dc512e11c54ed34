//! Paths as node's `path` module spells them: pi keeps paths as strings built with
//! `path.join`/`path.resolve`, which normalize lexically (no `.`/`..`, no trailing or doubled
//! slash) without touching the disk. The same text here makes the prompt's paths pi's.

use std::ffi::OsString;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// `path.resolve(base, p)`: `p` if absolute, else `base/p`; then normalized. A relative `base`
/// is taken against the process's directory, as node does.
pub(crate) fn resolve(base: &Path, p: impl AsRef<Path>) -> PathBuf {
    let p = p.as_ref();
    if p.is_absolute() {
        return normalize(p);
    }
    let base = if base.is_absolute() {
        base.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(base)
    };
    normalize(&base.join(p))
}

/// `path.join(base, rel)`: the two joined, then normalized (`rel` is never taken as absolute).
pub(crate) fn join(base: &Path, rel: &str) -> PathBuf {
    let rel = rel.trim_start_matches('/');
    normalize(&base.join(rel))
}

/// Lexical normalization: `.` dropped, `..` pops (never above the root), separators single.
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    // How many normal components `out` holds, so a relative path keeps its leading `..`s.
    let mut depth = 0usize;
    for c in p.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth > 0 {
                    out.pop();
                    depth -= 1;
                } else if !out.has_root() {
                    out.push("..");
                }
            }
            Component::Normal(n) => {
                out.push(n);
                depth += 1;
            }
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// pi's `normalizePath`/`resolveResourcePath` tilde rule on a trimmed path: `~` is the home
/// directory, `~/x` and even `~x` are `home/x`; anything else is returned as it is.
pub(crate) fn expand_tilde(p: &str, home: &Path) -> PathBuf {
    let trimmed = p.trim_matches(crate::cli::resources::text::is_js_whitespace);
    if trimmed == "~" {
        home.to_path_buf()
    } else if let Some(rest) = trimmed.strip_prefix("~/") {
        join(home, rest)
    } else if let Some(rest) = trimmed.strip_prefix('~') {
        join(home, rest)
    } else {
        PathBuf::from(trimmed)
    }
}

/// pi's `isUnderPath`: `target` is `root` or inside it (text comparison of normalized paths).
pub(crate) fn is_under(target: &Path, root: &Path) -> bool {
    let root = normalize(root);
    target == root || target.starts_with(&root)
}

/// pi's `canonicalizePath`: the real path, or the path itself when it cannot be resolved.
pub(crate) fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A path as pi's text shows it.
pub(crate) fn text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `basename`.
pub(crate) fn basename(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `dirname` of a normalized absolute path.
pub(crate) fn dirname(p: &Path) -> PathBuf {
    p.parent()
        .map_or_else(|| p.to_path_buf(), Path::to_path_buf)
}

/// `path.relative(from, to)` for normalized absolute paths, with `/` separators.
pub(crate) fn relative(from: &Path, to: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// One entry of a directory, with symbolic links followed as pi does (`isSymbolicLink`, then
/// `statSync`): a broken link is left out.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    pub(crate) is_dir: bool,
    pub(crate) is_file: bool,
}

/// `readdirSync(dir, { withFileTypes: true })`: node (libuv's `scandir`) lists a directory
/// sorted by the bytes of the names, so this does too.
pub(crate) fn read_dir_sorted(dir: &Path) -> std::io::Result<Vec<Entry>> {
    let mut raw: Vec<(OsString, PathBuf, fs::FileType)> = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let ty = e.file_type()?;
        raw.push((e.file_name(), e.path(), ty));
    }
    raw.sort_by(|a, b| a.0.as_encoded_bytes().cmp(b.0.as_encoded_bytes()));
    let mut out = Vec::with_capacity(raw.len());
    for (name, path, ty) in raw {
        let (is_dir, is_file) = if ty.is_symlink() {
            match fs::metadata(&path) {
                Ok(m) => (m.is_dir(), m.is_file()),
                Err(_) => continue,
            }
        } else {
            (ty.is_dir(), ty.is_file())
        };
        out.push(Entry {
            name: name.to_string_lossy().into_owned(),
            path,
            is_dir,
            is_file,
        });
    }
    Ok(out)
}

/// A file's text as node's `readFileSync(path, "utf-8")` gives it: invalid UTF-8 replaced,
/// a byte-order mark kept.
pub(crate) fn read_text(p: &Path) -> std::io::Result<String> {
    let bytes = fs::read(p)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_and_join_normalize_like_node() {
        assert_eq!(resolve(Path::new("/a/b"), "../c/./d/"), Path::new("/a/c/d"));
        assert_eq!(resolve(Path::new("/a"), "/x/../y"), Path::new("/y"));
        assert_eq!(resolve(Path::new("/"), ".."), Path::new("/"));
        assert_eq!(join(Path::new("/a/b/"), "skills"), Path::new("/a/b/skills"));
        assert_eq!(join(Path::new("/a"), "/b"), Path::new("/a/b"));
    }

    #[test]
    fn tilde_rules_are_pis() {
        let home = Path::new("/home/u");
        assert_eq!(expand_tilde(" ~ ", home), Path::new("/home/u"));
        assert_eq!(expand_tilde("~/x", home), Path::new("/home/u/x"));
        assert_eq!(expand_tilde("~x", home), Path::new("/home/u/x"));
        assert_eq!(expand_tilde("a/~", home), Path::new("a/~"));
    }

    #[test]
    fn relative_and_under() {
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/b/c/d")), "c/d");
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/x")), "../x");
        assert!(is_under(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(is_under(Path::new("/a/b"), Path::new("/a/b/")));
        assert!(!is_under(Path::new("/a/bc"), Path::new("/a/b")));
    }
}
