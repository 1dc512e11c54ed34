//! `ls`: the entries of one directory, through the tool's [`FileSystem`]: sorted as pi sorts
//! them (lowercased, then in the order of JavaScript's `localeCompare`, approximated here by
//! the Unicode root collation for the characters file names use), `/` after a directory,
//! dotfiles included, at most `limit` entries (500) and 50 KiB. An entry that cannot be
//! looked at (a broken symlink) is left out, as pi leaves it out.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::fs::{DirEntry, FileKind, FileSystem, LocalFs, node_error};
use super::search;
use super::truncate::{DEFAULT_MAX_BYTES, format_size, truncate_head};
use super::{Spec, abortable, fail};
use crate::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};

/// Entries `ls` returns at most unless the call says otherwise.
const DEFAULT_LIMIT: usize = 500;

/// pi's `ls` tool: lists a directory.
///
/// Arguments: optionally `path` (the directory; default the cwd) and `limit` (entries,
/// default 500).
///
/// ```
/// use pi_engine::CancellationToken;
/// use pi_engine::agent::{AgentTool, ToolUpdates};
/// use pi_engine::tools::LsTool;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("src"))?;
/// std::fs::write(dir.path().join("README.md"), "")?;
/// std::fs::write(dir.path().join(".env"), "")?;
///
/// let ls = LsTool::new(dir.path());
/// let result = ls
///     .execute("call_1", serde_json::Map::new(), CancellationToken::new(),
///              ToolUpdates::disconnected())
///     .await?;
/// assert_eq!(result.text_content(), ".env\nREADME.md\nsrc/");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LsTool {
    cwd: PathBuf,
    fs: Arc<dyn FileSystem>,
    spec: Arc<Spec>,
}

impl LsTool {
    /// An `ls` that resolves relative paths against `cwd` and lists the local disk.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        LsTool {
            cwd: cwd.into(),
            fs: Arc::new(LocalFs::new()),
            spec: Arc::new(spec()),
        }
    }

    /// Lists through `fs` instead (e.g. a [`LocalFs::confined`] root, or a remote machine).
    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.fs = fs;
        self
    }
}

fn spec() -> Spec {
    Spec::new(
        "ls",
        format!(
            "List directory contents. Returns entries sorted alphabetically, with '/' suffix for \
             directories. Includes dotfiles. Output is truncated to {DEFAULT_LIMIT} entries or \
             {}KB (whichever is hit first).",
            DEFAULT_MAX_BYTES / 1024
        ),
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Directory to list (default: current directory)"
                },
                "limit": {
                    "type": "number",
                    "description": "Maximum number of entries to return (default: 500)"
                }
            }
        }),
        "List directory contents",
        &[],
    )
}

#[async_trait::async_trait]
impl AgentTool for LsTool {
    spec_accessors!();

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let path = search::str_arg(&args, "path")
            .filter(|p| !p.is_empty())
            .unwrap_or(".");
        let dir = super::path::resolve_to_cwd(path, &self.cwd);
        let limit = search::limit_arg(&args, "limit", DEFAULT_LIMIT);
        abortable(&cancel, list(&*self.fs, &dir, limit)).await?
    }
}

/// Whether `e` is a confined file system's refusal (its own text, no OS error).
fn is_refusal(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
        && e.raw_os_error().is_none()
        && e.get_ref().is_some()
}

async fn list(fs: &dyn FileSystem, dir: &Path, limit: usize) -> Result<AgentToolResult, ToolError> {
    let meta = match fs.metadata(dir).await {
        Ok(meta) => meta,
        Err(e) if is_refusal(&e) => return Err(fail(e.to_string())),
        Err(_) => return Err(fail(format!("Path not found: {}", dir.display()))),
    };
    if meta.kind != FileKind::Dir {
        return Err(fail(format!("Not a directory: {}", dir.display())));
    }
    let mut entries = fs.read_dir(dir).await.map_err(|e| {
        fail(format!(
            "Cannot read directory: {}",
            node_error(&e, "scandir", dir)
        ))
    })?;
    sort_entries(&mut entries);

    let mut lines = Vec::new();
    let mut reached = false;
    for entry in entries {
        if lines.len() >= limit {
            reached = true;
            break;
        }
        let is_dir = match entry.kind {
            FileKind::Dir => true,
            FileKind::File => false,
            // A broken link (or one out of a confined root) cannot be looked at: pi skips it.
            _ => match fs.metadata(&dir.join(&entry.name)).await {
                Ok(meta) => meta.kind == FileKind::Dir,
                Err(_) => continue,
            },
        };
        let mut line = entry.name;
        if is_dir {
            line.push('/');
        }
        lines.push(line);
    }
    if lines.is_empty() {
        return Ok(AgentToolResult::text("(empty directory)").with_details(Value::Null));
    }

    let raw = lines.join("\n");
    let truncation = truncate_head(&raw, search::NO_LINE_LIMIT, DEFAULT_MAX_BYTES);
    let mut output = truncation.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if reached {
        notices.push(format!(
            "{limit} entries limit reached. Use limit={} for more",
            limit.saturating_mul(2)
        ));
        details.insert("entryLimitReached".into(), json!(limit));
    }
    if truncation.truncated {
        notices.push(format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)));
        details.insert("truncation".into(), json!(truncation));
    }
    if !notices.is_empty() {
        output.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    let details = if details.is_empty() {
        Value::Null
    } else {
        Value::Object(details)
    };
    Ok(AgentToolResult::text(output).with_details(details))
}

/// Sorts as pi does, `a.toLowerCase().localeCompare(b.toLowerCase())`; names that compare
/// equal there (`Zeta`, `zeta`) are put in byte order, so the output is always the same.
fn sort_entries(entries: &mut [DirEntry]) {
    let mut keyed: Vec<(Collation, DirEntry)> = entries
        .iter()
        .map(|e| (Collation::of(&e.name), e.clone()))
        .collect();
    keyed.sort_by(|(ka, a), (kb, b)| ka.cmp(kb).then_with(|| a.name.cmp(&b.name)));
    for (slot, (_, entry)) in entries.iter_mut().zip(keyed) {
        *slot = entry;
    }
}

/// A sort key after the Unicode root collation (what ICU's `localeCompare` uses for `en`) of
/// the lowercased name: first the base characters — spaces, then punctuation and symbols in
/// the collation's order, then digits, then letters — and then, for names equal so far,
/// their accents (`a` < `ä` < `ab`).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Collation {
    primary: Vec<u64>,
    secondary: Vec<u32>,
}

/// ASCII punctuation and symbols in the root collation's order.
const PUNCTUATION: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

impl Collation {
    fn of(name: &str) -> Collation {
        let mut primary = Vec::with_capacity(name.len());
        let mut secondary = Vec::with_capacity(name.len());
        for c in name.to_lowercase().nfd() {
            if is_combining_mark(c) {
                // An accent weighs only on the second level, on the character before it.
                secondary.push(c as u32);
                continue;
            }
            primary.push(primary_weight(c));
            secondary.push(0);
        }
        Collation { primary, secondary }
    }
}

fn primary_weight(c: char) -> u64 {
    let (group, value): (u64, u64) = if c.is_whitespace() || c.is_control() {
        (1, c as u64)
    } else if let Some(i) = PUNCTUATION.find(c) {
        (2, i as u64)
    } else if c.is_ascii_digit() {
        (4, c as u64)
    } else if c.is_alphanumeric() {
        (5, c as u64)
    } else {
        // Other symbols and punctuation: after ASCII's, before digits.
        (3, c as u64)
    };
    (group << 32) | value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::search::tests::{MemFs, call, tree};

    async fn ls(root: &Path, args: Value) -> Result<AgentToolResult, ToolError> {
        call(&LsTool::new(root), args).await
    }

    #[tokio::test]
    async fn lists_sorted_with_dirs_marked_and_dotfiles() {
        let dir = tempfile::tempdir().unwrap();
        tree(
            dir.path(),
            &[
                (".hidden/secret.txt", ""),
                ("README.md", ""),
                ("docs/guide.md", ""),
                ("src/main.rs", ""),
                ("_x", ""),
                ("b", ""),
            ],
        );
        std::os::unix::fs::symlink("docs", dir.path().join("alias")).unwrap();
        std::os::unix::fs::symlink("missing", dir.path().join("broken")).unwrap();
        let r = ls(dir.path(), json!({})).await.unwrap();
        assert_eq!(
            r.text_content(),
            "_x\n.hidden/\nalias/\nb\ndocs/\nREADME.md\nsrc/"
        );
        assert_eq!(r.details, Value::Null);
        let r = ls(dir.path(), json!({"path": "src"})).await.unwrap();
        assert_eq!(r.text_content(), "main.rs");
    }

    #[tokio::test]
    async fn empty_missing_and_not_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), &[("f.txt", "")]);
        std::fs::create_dir(dir.path().join("empty")).unwrap();
        let r = ls(dir.path(), json!({"path": "empty"})).await.unwrap();
        assert_eq!(r.text_content(), "(empty directory)");
        let err = ls(dir.path(), json!({"path": "nope"})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Path not found: {}", dir.path().join("nope").display())
        );
        let err = ls(dir.path(), json!({"path": "f.txt"})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Not a directory: {}", dir.path().join("f.txt").display())
        );
    }

    #[tokio::test]
    async fn the_entry_limit() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<String> = (0..20).map(|i| format!("f{i:02}.txt")).collect();
        let files: Vec<(&str, &str)> = files.iter().map(|p| (p.as_str(), "")).collect();
        tree(dir.path(), &files);
        let r = ls(dir.path(), json!({"limit": 5})).await.unwrap();
        assert_eq!(
            r.text_content(),
            "f00.txt\nf01.txt\nf02.txt\nf03.txt\nf04.txt\n\n[5 entries limit reached. Use limit=10 for more]"
        );
        assert_eq!(r.details, json!({"entryLimitReached": 5}));
        // Exactly the limit is not "reached" for ls.
        let r = ls(dir.path(), json!({"limit": 20})).await.unwrap();
        assert_eq!(r.details, Value::Null);
    }

    #[tokio::test]
    async fn a_confined_root_refuses_outside_paths() {
        let root = tempfile::tempdir().unwrap();
        let fs = Arc::new(LocalFs::confined(root.path()).unwrap());
        let err = call(
            &LsTool::new(root.path()).with_fs(fs),
            json!({"path": "/etc"}),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("outside the allowed root"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn an_in_memory_file_system() {
        let fs = Arc::new(MemFs::with(&[
            ("/p/b.txt", ""),
            ("/p/A/x", ""),
            ("/p/a.txt", ""),
        ]));
        let r = call(&LsTool::new("/p").with_fs(fs), json!({}))
            .await
            .unwrap();
        assert_eq!(r.text_content(), "A/\na.txt\nb.txt");
    }

    #[test]
    fn sorts_like_locale_compare() {
        // Node's `x.toLowerCase().localeCompare(y.toLowerCase())` order (ICU, en-US).
        let node = [
            "_a", "-a", ",x", ";x", ":x", "!x", "?x", ".a", "'x", "\"x", "(x", "[x", "{x", "@x",
            "*x", "/x", "\\x", "&x", "#x", "%x", "`x", "^x", "+x", "<x", "=x", ">x", "|x", "~x",
            "$x", "1a", "a", "ä", "a b", "a_b", "a-b", "a.b", "a1", "a10", "a2", "ab", "b", "é",
            "f", "x!", "Zeta", "zeta",
        ];
        let mut entries: Vec<DirEntry> = node
            .iter()
            .rev()
            .map(|n| DirEntry::new(*n, FileKind::File))
            .collect();
        sort_entries(&mut entries);
        let sorted: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(sorted, node);
    }
}
