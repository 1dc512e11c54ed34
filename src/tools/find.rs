//! `find`: paths matching a glob, in-process with ripgrep's own crates (no `fd` binary), with
//! `fd --glob --hidden --no-require-git` semantics: the glob is matched against each entry's
//! name (files, directories and symlinks alike), or against its whole path when the pattern
//! has a `/` (pi adds a leading `**/` then); it is case-insensitive unless the pattern has an
//! uppercase letter (fd's smart case); hidden entries are included; `.gitignore` is honoured
//! whether or not the directory is in a git repository. Directories are printed with a
//! trailing `/`, paths relative to the search directory; at most `limit` results (1000) and
//! 50 KiB.
//!
//! Unlike pi (which prints in the order of `fd`'s parallel walk and keeps whichever `limit`
//! results came first), the output is the first `limit` paths in path order, the same on
//! every run; the `.git` directory is never listed. A search path that is missing or not a
//! directory fails with pi's `Path not found: …` / `Not a directory: …` rather than fd's text.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkState;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::fs::{FileKind, FileSystem, LocalFs};
use super::search::{self, FsWalk, TopPaths, Unsearchable};
use super::truncate::{DEFAULT_MAX_BYTES, format_size, truncate_head};
use super::{ABORTED, Spec, fail};
use crate::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};

/// Results `find` returns at most unless the call says otherwise.
const DEFAULT_LIMIT: usize = 1000;

/// pi's `find` tool: finds files and directories by glob pattern.
///
/// Arguments: `pattern` (e.g. `*.rs`, `**/*.json`, `src/**/*.spec.ts`), and optionally `path`
/// (the directory to search; default the cwd) and `limit` (results, default 1000).
///
/// ```
/// use pi_engine::CancellationToken;
/// use pi_engine::agent::{AgentTool, ToolUpdates};
/// use pi_engine::tools::FindTool;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir_all(dir.path().join("src/bin"))?;
/// for f in ["src/lib.rs", "src/bin/main.rs", "README.md"] {
///     std::fs::write(dir.path().join(f), "")?;
/// }
///
/// let find = FindTool::new(dir.path());
/// let args = serde_json::json!({"pattern": "*.rs"});
/// let result = find
///     .execute("call_1", args.as_object().cloned().unwrap_or_default(),
///              CancellationToken::new(), ToolUpdates::disconnected())
///     .await?;
/// assert_eq!(result.text_content(), "src/bin/main.rs\nsrc/lib.rs");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FindTool {
    cwd: PathBuf,
    fs: Arc<dyn FileSystem>,
    spec: Arc<Spec>,
}

impl FindTool {
    /// A `find` that resolves relative paths against `cwd` and searches the local disk.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        FindTool {
            cwd: cwd.into(),
            fs: Arc::new(LocalFs::new()),
            spec: Arc::new(spec()),
        }
    }

    /// Searches through `fs` instead. A file system on the local disk
    /// ([`FileSystem::local_search_root`]) is walked in-process, confined to its root if it
    /// has one; any other is walked through [`FileSystem::read_dir`], without ignore files.
    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.fs = fs;
        self
    }
}

fn spec() -> Spec {
    Spec::new(
        "find",
        format!(
            "Search for files by glob pattern. Returns matching file paths relative to the search \
             directory. Respects .gitignore. Output is truncated to {DEFAULT_LIMIT} results or \
             {}KB (whichever is hit first).",
            DEFAULT_MAX_BYTES / 1024
        ),
        json!({
            "type": "object",
            "required": ["pattern"],
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'"
                },
                "path": {
                    "type": "string",
                    "description": "Directory to search in (default: current directory)"
                },
                "limit": {
                    "type": "number",
                    "description": "Maximum number of results (default: 1000)"
                }
            }
        }),
        "Find files by glob pattern (respects .gitignore)",
        &[],
    )
}

/// The pattern, as fd matches it.
#[derive(Debug, Clone)]
struct Pattern {
    /// `None`: the empty pattern, which matches everything.
    glob: Option<GlobMatcher>,
    /// Matched against the whole absolute path (else the entry's name).
    full_path: bool,
}

impl Pattern {
    fn new(pattern: &str) -> Result<Pattern, ToolError> {
        let full_path = pattern.contains('/');
        if pattern.is_empty() {
            return Ok(Pattern {
                glob: None,
                full_path,
            });
        }
        // fd --full-path matches the absolute path: pi makes a relative pattern match at any
        // depth.
        let glob = if full_path
            && !pattern.starts_with('/')
            && !pattern.starts_with("**/")
            && pattern != "**"
        {
            format!("**/{pattern}")
        } else {
            pattern.to_owned()
        };
        // fd's smart case: case-sensitive only when the pattern has an uppercase letter.
        let case_sensitive = pattern.chars().any(char::is_uppercase);
        let matcher = GlobBuilder::new(&glob)
            .literal_separator(true)
            .case_insensitive(!case_sensitive)
            .build()
            .map_err(|e| fail(e.to_string()))?
            .compile_matcher();
        Ok(Pattern {
            glob: Some(matcher),
            full_path,
        })
    }

    /// Whether the entry at `path` (absolute, as the search path spells it) matches.
    fn is_match(&self, path: &Path) -> bool {
        let Some(glob) = &self.glob else {
            return true;
        };
        if self.full_path {
            glob.is_match(path)
        } else {
            path.file_name().is_some_and(|name| glob.is_match(name))
        }
    }
}

#[async_trait::async_trait]
impl AgentTool for FindTool {
    spec_accessors!();

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        if cancel.is_cancelled() {
            return Err(fail(ABORTED));
        }
        let pattern = search::str_arg(&args, "pattern")
            .ok_or_else(|| fail("find: the pattern argument must be a string"))?
            .to_owned();
        let path = search::str_arg(&args, "path")
            .filter(|p| !p.is_empty())
            .unwrap_or(".");
        let limit = search::limit_arg(&args, "limit", DEFAULT_LIMIT);
        let search_path = super::path::resolve_to_cwd(path, &self.cwd);

        let (paths, reached) = match self.fs.local_search_root() {
            Some(local) => {
                let cwd = self.cwd.clone();
                search::run_blocking(&cancel, move |cancel| {
                    let target = match search::local_target(&local, &search_path) {
                        Ok(target) => target,
                        Err(Unsearchable::NotFound) => return Err(not_found(&search_path)),
                        Err(Unsearchable::Outside(text)) => return Err(fail(text)),
                    };
                    if !target.is_dir {
                        return Err(not_a_directory(&search_path));
                    }
                    let pattern = Pattern::new(&pattern)?;
                    find_local(&pattern, &target, &search_path, &cwd, limit, cancel)
                })
                .await?
            }
            None => {
                let meta = self
                    .fs
                    .metadata(&search_path)
                    .await
                    .map_err(|_| not_found(&search_path))?;
                if meta.kind != FileKind::Dir {
                    return Err(not_a_directory(&search_path));
                }
                let pattern = Pattern::new(&pattern)?;
                find_fs(&*self.fs, &pattern, &search_path, limit, &cancel).await?
            }
        };
        Ok(render(&paths, reached, limit))
    }
}

fn not_found(path: &Path) -> ToolError {
    fail(format!("Path not found: {}", path.display()))
}

fn not_a_directory(path: &Path) -> ToolError {
    fail(format!("Not a directory: {}", path.display()))
}

/// The local disk: a parallel walk, the first `limit` matches in path order kept.
fn find_local(
    pattern: &Pattern,
    target: &search::LocalTarget,
    display: &Path,
    cwd: &Path,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<(Vec<String>, bool), ToolError> {
    let top = TopPaths::new(limit);
    let builder = search::walker(&target.walk, cwd, false, ".fdignore");
    builder.build_parallel().run(|| {
        let mut top = top.local();
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            if top.beyond(entry.path()) {
                return WalkState::Skip;
            }
            let matched = if pattern.full_path && target.confined {
                // Matched as the search path spells it, not as the confined walk does.
                let rel = entry
                    .path()
                    .strip_prefix(&target.walk)
                    .unwrap_or(entry.path());
                pattern.is_match(&display.join(rel))
            } else {
                pattern.is_match(entry.path())
            };
            if matched {
                // A symlink is not followed: a link to a directory is no directory here.
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                top.insert(entry.into_path(), 1, is_dir);
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(fail(ABORTED));
    }
    let (items, reached) = top.into_sorted();
    let paths = items
        .into_iter()
        .map(|(path, _, is_dir)| {
            let mut rel = search::relative(&path, &target.walk);
            if is_dir {
                rel.push('/');
            }
            rel
        })
        .collect();
    Ok((paths, reached))
}

/// A file system that is not the local disk: a sorted walk through it, stopped at the limit.
/// No ignore files are read there.
async fn find_fs(
    fs: &dyn FileSystem,
    pattern: &Pattern,
    root: &Path,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<(Vec<String>, bool), ToolError> {
    let mut paths = Vec::new();
    let mut walk = FsWalk::new(fs, root).await;
    while let Some((entry, depth)) = walk.next() {
        if cancel.is_cancelled() {
            return Err(fail(ABORTED));
        }
        if pattern.is_match(&entry.path) {
            let mut rel = entry.rel.clone();
            if entry.kind == FileKind::Dir {
                rel.push('/');
            }
            paths.push(rel);
            if paths.len() >= limit {
                return Ok((paths, true));
            }
        }
        walk.descend(&entry, depth).await;
    }
    Ok((paths, false))
}

/// pi's result: the paths, cut to 50 KiB, with its notices and `details`.
fn render(paths: &[String], reached: bool, limit: usize) -> AgentToolResult {
    if paths.is_empty() {
        return AgentToolResult::text("No files found matching pattern").with_details(Value::Null);
    }
    let raw = paths.join("\n");
    let truncation = truncate_head(&raw, search::NO_LINE_LIMIT, DEFAULT_MAX_BYTES);
    let mut output = truncation.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if reached {
        notices.push(format!(
            "{limit} results limit reached. Use limit={} for more, or refine pattern",
            limit.saturating_mul(2)
        ));
        details.insert("resultLimitReached".into(), json!(limit));
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
    AgentToolResult::text(output).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::search::tests::{MemFs, call, tree};

    async fn find(root: &Path, args: Value) -> AgentToolResult {
        call(&FindTool::new(root), args).await.unwrap()
    }

    fn sample(root: &Path) {
        tree(
            root,
            &[
                ("src/main.rs", ""),
                ("src/lib.rs", ""),
                ("src/bin/tool.rs", ""),
                ("README.md", ""),
                ("docs/guide.md", ""),
                (".hidden/secret.rs", ""),
                (".git/hooks/x.rs", ""),
            ],
        );
    }

    #[tokio::test]
    async fn names_match_at_any_depth_hidden_included_git_skipped() {
        let dir = tempfile::tempdir().unwrap();
        sample(dir.path());
        let r = find(dir.path(), json!({"pattern": "*.rs"})).await;
        assert_eq!(
            r.text_content(),
            ".hidden/secret.rs\nsrc/bin/tool.rs\nsrc/lib.rs\nsrc/main.rs"
        );
        assert_eq!(r.details, Value::Null);
        let r = find(dir.path(), json!({"pattern": "*.md", "path": "docs"})).await;
        assert_eq!(r.text_content(), "guide.md");
        let r = find(dir.path(), json!({"pattern": "*.py"})).await;
        assert_eq!(r.text_content(), "No files found matching pattern");
    }

    #[tokio::test]
    async fn directories_match_too_with_a_slash() {
        let dir = tempfile::tempdir().unwrap();
        sample(dir.path());
        let r = find(dir.path(), json!({"pattern": "{src,bin}"})).await;
        assert_eq!(r.text_content(), "src/\nsrc/bin/");
        let r = find(dir.path(), json!({"pattern": ""})).await;
        assert_eq!(r.text_content().lines().count(), 10);
    }

    #[tokio::test]
    async fn a_pattern_with_a_slash_matches_the_path() {
        let dir = tempfile::tempdir().unwrap();
        sample(dir.path());
        let r = find(dir.path(), json!({"pattern": "src/*.rs"})).await;
        assert_eq!(r.text_content(), "src/lib.rs\nsrc/main.rs");
        let r = find(dir.path(), json!({"pattern": "src/**/*.rs"})).await;
        assert_eq!(r.text_content(), "src/bin/tool.rs\nsrc/lib.rs\nsrc/main.rs");
        let r = find(dir.path(), json!({"pattern": "**/bin/*"})).await;
        assert_eq!(r.text_content(), "src/bin/tool.rs");
    }

    #[tokio::test]
    async fn smart_case() {
        let dir = tempfile::tempdir().unwrap();
        tree(
            dir.path(),
            &[("README.md", ""), ("readme.txt", ""), ("Notes.MD", "")],
        );
        let r = find(dir.path(), json!({"pattern": "readme*"})).await;
        assert_eq!(r.text_content(), "README.md\nreadme.txt");
        let r = find(dir.path(), json!({"pattern": "README*"})).await;
        assert_eq!(r.text_content(), "README.md");
        let r = find(dir.path(), json!({"pattern": "*.md"})).await;
        assert_eq!(r.text_content(), "Notes.MD\nREADME.md");
    }

    #[tokio::test]
    async fn gitignore_applies_outside_a_git_repository_too() {
        let dir = tempfile::tempdir().unwrap();
        tree(
            dir.path(),
            &[
                (".gitignore", "target/\n"),
                ("target/x.rs", ""),
                ("src/y.rs", ""),
            ],
        );
        let r = find(dir.path(), json!({"pattern": "*.rs"})).await;
        assert_eq!(r.text_content(), "src/y.rs");
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let r = find(dir.path(), json!({"pattern": "*.rs"})).await;
        assert_eq!(r.text_content(), "src/y.rs");
        std::fs::write(dir.path().join(".fdignore"), "src/\n").unwrap();
        let r = find(dir.path(), json!({"pattern": "*.rs"})).await;
        assert_eq!(r.text_content(), "No files found matching pattern");
    }

    #[tokio::test]
    async fn a_limit_keeps_the_first_paths_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<String> = (0..300)
            .map(|i| format!("d{}/f{:03}.txt", i % 5, i))
            .collect();
        let files: Vec<(&str, &str)> = files.iter().map(|p| (p.as_str(), "")).collect();
        tree(dir.path(), &files);
        for _ in 0..5 {
            let r = find(dir.path(), json!({"pattern": "*.txt", "limit": 3})).await;
            assert_eq!(
                r.text_content(),
                "d0/f000.txt\nd0/f005.txt\nd0/f010.txt\n\n\
                 [3 results limit reached. Use limit=6 for more, or refine pattern]"
            );
            assert_eq!(r.details, json!({"resultLimitReached": 3}));
        }
        let r = find(dir.path(), json!({"pattern": "d*"})).await;
        assert_eq!(r.text_content(), "d0/\nd1/\nd2/\nd3/\nd4/");
        let r = find(dir.path(), json!({"pattern": "d*", "limit": 5})).await;
        assert_eq!(r.details, json!({"resultLimitReached": 5}));
    }

    #[tokio::test]
    async fn output_is_cut_to_50_kib() {
        let dir = tempfile::tempdir().unwrap();
        let name = "n".repeat(200);
        let files: Vec<String> = (0..300).map(|i| format!("{name}{i:03}")).collect();
        let files: Vec<(&str, &str)> = files.iter().map(|p| (p.as_str(), "")).collect();
        tree(dir.path(), &files);
        let r = find(dir.path(), json!({"pattern": "n*"})).await;
        assert!(r.text_content().ends_with("\n\n[50.0KB limit reached]"));
        assert_eq!(r.details["truncation"]["outputLines"], 250);
    }

    #[tokio::test]
    async fn missing_paths_files_and_bad_globs_fail() {
        let dir = tempfile::tempdir().unwrap();
        sample(dir.path());
        let tool = FindTool::new(dir.path());
        let err = call(&tool, json!({"pattern": "*", "path": "nope"}))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Path not found: {}", dir.path().join("nope").display())
        );
        let err = call(&tool, json!({"pattern": "*", "path": "README.md"}))
            .await
            .unwrap_err();
        assert!(err.to_string().starts_with("Not a directory: "), "{err}");
        let err = call(&tool, json!({"pattern": "[a"})).await.unwrap_err();
        assert!(err.to_string().contains("glob"), "{err}");
    }

    #[tokio::test]
    async fn a_confined_root_refuses_paths_and_links_out_of_it() {
        let outside = tempfile::tempdir().unwrap();
        tree(outside.path(), &[("secret.rs", "")]);
        let root = tempfile::tempdir().unwrap();
        tree(root.path(), &[("a.rs", "")]);
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        let fs = Arc::new(LocalFs::confined(root.path()).unwrap());
        let tool = FindTool::new(root.path()).with_fs(fs);
        // The link is listed (its name), never entered; it is not a directory here.
        let r = call(&tool, json!({"pattern": "*"})).await.unwrap();
        assert_eq!(r.text_content(), "a.rs\nlink");
        let r = call(&tool, json!({"pattern": "**/a.rs"})).await.unwrap();
        assert_eq!(r.text_content(), "a.rs");
        for path in [outside.path().to_str().unwrap(), "link", ".."] {
            let err = call(&tool, json!({"pattern": "*", "path": path}))
                .await
                .unwrap_err();
            assert!(
                err.to_string().contains("outside the allowed root"),
                "{path}: {err}"
            );
        }
    }

    #[tokio::test]
    async fn an_in_memory_file_system_is_walked_through_the_trait() {
        let fs = Arc::new(MemFs::with(&[
            ("/p/src/b.rs", ""),
            ("/p/src/a.rs", ""),
            ("/p/.git/x.rs", ""),
            ("/p/.env.rs", ""),
            ("/p/notes.md", ""),
        ]));
        fs.dir("/p/empty.rs");
        let tool = FindTool::new("/p").with_fs(fs);
        let r = call(&tool, json!({"pattern": "*.rs"})).await.unwrap();
        assert_eq!(r.text_content(), ".env.rs\nempty.rs/\nsrc/a.rs\nsrc/b.rs");
        let r = call(&tool, json!({"pattern": "src/*"})).await.unwrap();
        assert_eq!(r.text_content(), "src/a.rs\nsrc/b.rs");
        let r = call(&tool, json!({"pattern": "*.rs", "limit": 2}))
            .await
            .unwrap();
        assert_eq!(
            r.text_content(),
            ".env.rs\nempty.rs/\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
        );
        let err = call(&tool, json!({"pattern": "*", "path": "notes.md"}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "Not a directory: /p/notes.md");
    }
}
