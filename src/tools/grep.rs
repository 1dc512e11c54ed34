//! `grep`: file contents searched for a pattern, in-process with ripgrep's own crates (no `rg`
//! binary): `rg --hidden` semantics — hidden files searched, binary files skipped, `.gitignore`
//! honoured inside a git repository (as `rg` does), an explicit file always searched — with
//! pi's output: `path:line: text` for a match, `path-line- text` for a context line, lines cut
//! at 500 characters, at most `limit` matching lines (100) and 50 KiB.
//!
//! Unlike pi (which prints in the order of `rg`'s parallel walk), the output is in path order
//! and then line order, the same on every run: the first `limit` matches of a sorted walk.
//! The walk is still parallel; once `limit` matches are found, files and directories that sort
//! after them are not searched (see `search.rs`), so a common word with a small limit returns
//! quickly. The `.git` directory is never searched.
//!
//! Context: overlapping context windows are merged, each line printed once (pi prints a block
//! per match, repeating shared lines and showing a neighbouring match as context). Lines are
//! the searched bytes split at `\n`; `\r` characters are dropped from what is printed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use ignore::overrides::{Override, OverrideBuilder};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::fs::{FileKind, FileSystem, LocalFs};
use super::search::{self, FsWalk, TopPaths, Unsearchable};
use super::truncate::{
    DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, format_size, truncate_head, truncate_line,
};
use super::{ABORTED, Spec, fail};
use crate::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};

/// Matching lines `grep` returns at most unless the call says otherwise.
const DEFAULT_LIMIT: usize = 100;

/// pi's `grep` tool: searches file contents for a regex or a literal string.
///
/// Arguments: `pattern`, and optionally `path` (a directory or a file; default the cwd),
/// `glob` (files to search, `rg --glob` syntax), `ignoreCase`, `literal`, `context` (lines
/// around each match) and `limit` (matching lines, default 100).
///
/// ```
/// use pi_engine::CancellationToken;
/// use pi_engine::agent::{AgentTool, ToolUpdates};
/// use pi_engine::tools::GrepTool;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("src"))?;
/// std::fs::write(dir.path().join("src/lib.rs"), "// TODO: test\npub fn f() {}\n")?;
/// std::fs::write(dir.path().join("notes.md"), "nothing to do\n")?;
///
/// let grep = GrepTool::new(dir.path());
/// let args = serde_json::json!({"pattern": "todo", "ignoreCase": true});
/// let result = grep
///     .execute("call_1", args.as_object().cloned().unwrap_or_default(),
///              CancellationToken::new(), ToolUpdates::disconnected())
///     .await?;
/// assert_eq!(result.text_content(), "src/lib.rs:1: // TODO: test");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct GrepTool {
    cwd: PathBuf,
    fs: Arc<dyn FileSystem>,
    spec: Arc<Spec>,
}

impl GrepTool {
    /// A `grep` that resolves relative paths against `cwd` and searches the local disk.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        GrepTool {
            cwd: cwd.into(),
            fs: Arc::new(LocalFs::new()),
            spec: Arc::new(spec()),
        }
    }

    /// Searches through `fs` instead. A file system on the local disk
    /// ([`FileSystem::local_search_root`]) is walked in-process, confined to its root if it
    /// has one; any other is walked through [`FileSystem::read_dir`] and
    /// [`FileSystem::read`], without ignore files.
    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.fs = fs;
        self
    }
}

fn spec() -> Spec {
    Spec::new(
        "grep",
        format!(
            "Search file contents for a pattern. Returns matching lines with file paths and line \
             numbers. Respects .gitignore. Output is truncated to {DEFAULT_LIMIT} matches or {}KB \
             (whichever is hit first). Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars.",
            DEFAULT_MAX_BYTES / 1024
        ),
        json!({
            "type": "object",
            "required": ["pattern"],
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Search pattern (regex or literal string)"
                },
                "path": {
                    "type": "string",
                    "description": "Directory or file to search (default: current directory)"
                },
                "glob": {
                    "type": "string",
                    "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"
                },
                "ignoreCase": {
                    "type": "boolean",
                    "description": "Case-insensitive search (default: false)"
                },
                "literal": {
                    "type": "boolean",
                    "description": "Treat pattern as literal string instead of regex (default: false)"
                },
                "context": {
                    "type": "number",
                    "description": "Number of lines to show before and after each match (default: 0)"
                },
                "limit": {
                    "type": "number",
                    "description": "Maximum number of matches to return (default: 100)"
                }
            }
        }),
        "Search file contents for patterns (respects .gitignore)",
        &[],
    )
}

/// What one call searches for.
#[derive(Debug, Clone)]
struct Query {
    matcher: RegexMatcher,
    /// `rg --glob`, relative to the cwd.
    overrides: Override,
    context: usize,
    limit: usize,
}

impl Query {
    fn new(
        pattern: &str,
        ignore_case: bool,
        literal: bool,
        glob: Option<&str>,
        glob_root: &Path,
        context: usize,
        limit: usize,
    ) -> Result<Query, ToolError> {
        let mut builder = RegexMatcherBuilder::new();
        builder
            .case_insensitive(ignore_case)
            .fixed_strings(literal)
            // As rg: a match never spans lines.
            .line_terminator(Some(b'\n'));
        let matcher = builder.build(pattern).map_err(|e| fail(e.to_string()))?;
        let overrides = match glob {
            None => Override::empty(),
            Some(glob) => {
                let mut builder = OverrideBuilder::new(glob_root);
                builder.add(glob).map_err(|e| fail(e.to_string()))?;
                builder.build().map_err(|e| fail(e.to_string()))?
            }
        };
        Ok(Query {
            matcher,
            overrides,
            context,
            limit,
        })
    }

    /// A searcher for one thread. A file named as the search path is searched even if it
    /// looks binary (its NULs read as line ends), as rg does; a file found by the walk that
    /// has a NUL byte is not searched on from there.
    fn searcher(&self, explicit: bool) -> Searcher {
        SearcherBuilder::new()
            .line_number(true)
            .before_context(self.context)
            .after_context(self.context)
            .binary_detection(if explicit {
                BinaryDetection::convert(0)
            } else {
                BinaryDetection::quit(0)
            })
            .build()
    }

    fn sink(&self) -> Collect {
        Collect {
            limit: self.limit,
            context: self.context as u64,
            hits: FileHits::default(),
            last_counted: 0,
        }
    }
}

/// A line to print: a match or a line of context.
#[derive(Debug)]
struct Hit {
    line: u64,
    /// Cut to [`GREP_MAX_LINE_LENGTH`] characters, `\r` dropped.
    text: String,
    /// Whether it was cut.
    cut: bool,
    /// Which matching line of the file this is (0 for the first), for a match among the
    /// first `limit` of the file; `None` for context (and a match past them).
    ordinal: Option<usize>,
}

/// The lines found in one file.
#[derive(Debug, Default)]
struct FileHits {
    hits: Vec<Hit>,
    /// Matching lines counted (at most the limit).
    matches: usize,
}

/// Collects a file's matches (at most `limit`) and their context.
struct Collect {
    limit: usize,
    context: u64,
    hits: FileHits,
    /// The line of the last match counted.
    last_counted: u64,
}

impl Collect {
    /// Whether the search is past the limit and the last match's context: nothing more to
    /// keep from this file.
    fn done(&self, line: u64) -> bool {
        self.hits.matches >= self.limit && line > self.last_counted.saturating_add(self.context)
    }

    fn push(&mut self, line: u64, bytes: &[u8], is_match: bool) {
        let ordinal = if is_match && self.hits.matches < self.limit {
            self.hits.matches += 1;
            self.last_counted = line;
            Some(self.hits.matches - 1)
        } else {
            None
        };
        let (text, cut) = line_text(bytes);
        self.hits.hits.push(Hit {
            line,
            text,
            cut,
            ordinal,
        });
    }
}

/// A line as pi prints it: lossily UTF-8, without its line end or any `\r`, cut to 500
/// characters.
fn line_text(bytes: &[u8]) -> (String, bool) {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    if text.contains('\r') {
        truncate_line(&text.replace('\r', ""), GREP_MAX_LINE_LENGTH)
    } else {
        truncate_line(&text, GREP_MAX_LINE_LENGTH)
    }
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = mat.line_number().unwrap_or(0);
        for (line, bytes) in (first..).zip(mat.lines()) {
            if self.done(line) {
                return Ok(false);
            }
            self.push(line, bytes, true);
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let line = ctx.line_number().unwrap_or(0);
        if self.done(line) {
            return Ok(false);
        }
        self.push(line, ctx.bytes(), false);
        Ok(true)
    }
}

/// The files with matches, in path order, printed paths with their lines, and whether the
/// limit was reached.
struct Found {
    files: Vec<(String, FileHits)>,
    reached: bool,
}

#[async_trait::async_trait]
impl AgentTool for GrepTool {
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
            .ok_or_else(|| fail("grep: the pattern argument must be a string"))?
            .to_owned();
        let path = search::str_arg(&args, "path")
            .filter(|p| !p.is_empty())
            .unwrap_or(".");
        let glob = search::str_arg(&args, "glob")
            .filter(|g| !g.is_empty())
            .map(str::to_owned);
        let ignore_case = search::bool_arg(&args, "ignoreCase");
        let literal = search::bool_arg(&args, "literal");
        let context = search::count_arg(&args, "context");
        let limit = search::limit_arg(&args, "limit", DEFAULT_LIMIT);
        let search_path = super::path::resolve_to_cwd(path, &self.cwd);
        let build = move |glob_root: &Path| {
            Query::new(
                &pattern,
                ignore_case,
                literal,
                glob.as_deref(),
                glob_root,
                context,
                limit,
            )
        };

        let found = match self.fs.local_search_root() {
            Some(local) => {
                let cwd = self.cwd.clone();
                search::run_blocking(&cancel, move |cancel| {
                    let target = match search::local_target(&local, &search_path) {
                        Ok(target) => target,
                        Err(Unsearchable::NotFound) => {
                            return Err(not_found(&search_path));
                        }
                        Err(Unsearchable::Outside(text)) => return Err(fail(text)),
                    };
                    let query = build(&search::walk_cwd(&cwd, target.confined))?;
                    search_local(&query, &target, &search_path, &cwd, cancel)
                })
                .await?
            }
            None => {
                let meta = self
                    .fs
                    .metadata(&search_path)
                    .await
                    .map_err(|_| not_found(&search_path))?;
                let query = build(&self.cwd)?;
                search_fs(&*self.fs, &query, &search_path, meta.kind, &cancel).await?
            }
        };
        Ok(render(found, limit, context))
    }
}

fn not_found(path: &Path) -> ToolError {
    fail(format!("Path not found: {}", path.display()))
}

/// How a file's path is printed: below the search path, or the file's name when the search
/// path is the file.
fn display_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string_lossy().into_owned())
}

/// Searches one file on the local disk; `None` when nothing matched or it cannot be read.
fn search_file(searcher: &mut Searcher, query: &Query, path: &Path) -> Option<FileHits> {
    let mut sink = query.sink();
    // An unreadable file is passed over (rg reports it on stderr and goes on).
    searcher.search_path(&query.matcher, path, &mut sink).ok()?;
    (sink.hits.matches > 0).then_some(sink.hits)
}

/// The local disk: a parallel walk (or the one file), results kept in path order.
fn search_local(
    query: &Query,
    target: &search::LocalTarget,
    display: &Path,
    cwd: &Path,
    cancel: &CancellationToken,
) -> Result<Found, ToolError> {
    let top = TopPaths::new(query.limit);
    if target.is_dir {
        let mut builder = search::walker(&target.walk, cwd, true, ".rgignore");
        builder.overrides(query.overrides.clone());
        builder.build_parallel().run(|| {
            let mut searcher = query.searcher(false);
            let mut top = top.local();
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if top.beyond(entry.path()) {
                    return WalkState::Skip;
                }
                // Symlinks are not followed: a link is neither a file nor a directory here.
                if entry.file_type().is_some_and(|t| t.is_file())
                    && let Some(hits) = search_file(&mut searcher, query, entry.path())
                {
                    top.insert(entry.into_path(), hits.matches, hits);
                }
                WalkState::Continue
            })
        });
    } else if target.is_file {
        let mut searcher = query.searcher(true);
        if let Some(hits) = search_file(&mut searcher, query, &target.walk) {
            top.local().insert(target.walk.clone(), hits.matches, hits);
        }
    }
    if cancel.is_cancelled() {
        return Err(fail(ABORTED));
    }
    let (items, reached) = top.into_sorted();
    let files = items
        .into_iter()
        .map(|(path, _, hits)| {
            let name = if target.is_dir {
                search::relative(&path, &target.walk)
            } else {
                display_name(display)
            };
            (name, hits)
        })
        .collect();
    Ok(Found { files, reached })
}

/// A file system that is not the local disk: a sorted walk through it, which can stop as
/// soon as the limit is reached. No ignore files are read there; `glob` still applies.
async fn search_fs(
    fs: &dyn FileSystem,
    query: &Query,
    root: &Path,
    kind: FileKind,
    cancel: &CancellationToken,
) -> Result<Found, ToolError> {
    let mut found = Found {
        files: Vec::new(),
        reached: false,
    };
    let mut total = 0;
    let mut searcher = Some(query.searcher(kind != FileKind::Dir));
    let query = &Arc::new(query.clone());
    if kind != FileKind::Dir {
        if let Ok(bytes) = fs.read(root).await
            && let Some(hits) = search_bytes(&mut searcher, query, bytes).await?
        {
            total += hits.matches;
            found.files.push((display_name(root), hits));
        }
        found.reached = total >= query.limit;
        return Ok(found);
    }
    let mut walk = FsWalk::new(fs, root).await;
    while let Some((entry, depth)) = walk.next() {
        if cancel.is_cancelled() {
            return Err(fail(ABORTED));
        }
        let is_dir = entry.kind == FileKind::Dir;
        if query.overrides.matched(&entry.path, is_dir).is_ignore() {
            continue;
        }
        if is_dir {
            walk.descend(&entry, depth).await;
            continue;
        }
        if entry.kind != FileKind::File {
            continue;
        }
        let Ok(bytes) = fs.read(&entry.path).await else {
            continue;
        };
        if let Some(hits) = search_bytes(&mut searcher, query, bytes).await? {
            total += hits.matches;
            found.files.push((entry.rel, hits));
            if total >= query.limit {
                // The walk is in path order: nothing later can be among the first matches.
                found.reached = true;
                break;
            }
        }
    }
    Ok(found)
}

/// Searches a file's bytes on the blocking pool (the searcher goes there and back).
async fn search_bytes(
    searcher: &mut Option<Searcher>,
    query: &Arc<Query>,
    bytes: Vec<u8>,
) -> Result<Option<FileHits>, ToolError> {
    let Some(mut taken) = searcher.take() else {
        return Ok(None);
    };
    let query = Arc::clone(query);
    let job = move || {
        let mut sink = query.sink();
        let ok = taken
            .search_slice(&query.matcher, &bytes, &mut sink)
            .is_ok();
        let hits = (ok && sink.hits.matches > 0).then_some(sink.hits);
        (taken, hits)
    };
    match tokio::task::spawn_blocking(job).await {
        Ok((back, hits)) => {
            *searcher = Some(back);
            Ok(hits)
        }
        Err(e) => Err(fail(format!("search failed: {e}"))),
    }
}

/// pi's result: the lines, cut to 50 KiB, with its notices and `details`.
fn render(found: Found, limit: usize, context: usize) -> AgentToolResult {
    let reach = context as u64;
    if found.files.is_empty() {
        return AgentToolResult::text("No matches found").with_details(Value::Null);
    }
    let mut lines = Vec::new();
    let mut lines_truncated = false;
    let mut remaining = limit;
    for (name, file) in &found.files {
        if remaining == 0 {
            break;
        }
        let keep = file.matches.min(remaining);
        remaining -= keep;
        // The lines of the kept matches, and the context within reach of one.
        let kept: Vec<u64> = file
            .hits
            .iter()
            .filter(|h| h.ordinal.is_some_and(|o| o < keep))
            .map(|h| h.line)
            .collect();
        let mut next = 0;
        for hit in &file.hits {
            while next < kept.len() && kept[next].saturating_add(reach) < hit.line {
                next += 1;
            }
            if next == kept.len() || kept[next] > hit.line.saturating_add(reach) {
                continue;
            }
            let is_match = hit.ordinal.is_some_and(|o| o < keep);
            let sep = if is_match { ':' } else { '-' };
            lines.push(format!("{name}{sep}{}{sep} {}", hit.line, hit.text));
            lines_truncated |= hit.cut;
        }
    }
    let raw = lines.join("\n");
    let truncation = truncate_head(&raw, search::NO_LINE_LIMIT, DEFAULT_MAX_BYTES);
    let mut output = truncation.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if found.reached {
        notices.push(format!(
            "{limit} matches limit reached. Use limit={} for more, or refine pattern",
            limit.saturating_mul(2)
        ));
        details.insert("matchLimitReached".into(), json!(limit));
    }
    if truncation.truncated {
        notices.push(format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)));
        details.insert("truncation".into(), json!(truncation));
    }
    if lines_truncated {
        notices.push(format!(
            "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        ));
        details.insert("linesTruncated".into(), json!(true));
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

    async fn grep(root: &Path, args: Value) -> AgentToolResult {
        call(&GrepTool::new(root), args).await.unwrap()
    }

    #[tokio::test]
    async fn hidden_files_are_searched_and_git_is_not() {
        let dir = tempfile::tempdir().unwrap();
        tree(
            dir.path(),
            &[
                (".hidden/secret.txt", "hidden TODO\n"),
                (".git/config", "TODO in git\n"),
                ("src/a.rs", "// TODO: a\n"),
            ],
        );
        let r = grep(dir.path(), json!({"pattern": "TODO"})).await;
        assert_eq!(
            r.text_content(),
            ".hidden/secret.txt:1: hidden TODO\nsrc/a.rs:1: // TODO: a"
        );
        assert_eq!(r.details, Value::Null);
    }

    #[tokio::test]
    async fn binary_files_are_skipped_unless_named() {
        let dir = tempfile::tempdir().unwrap();
        tree(
            dir.path(),
            &[("text.txt", "needle\n"), ("bin.dat", "needle\0\x01\x02\n")],
        );
        let r = grep(dir.path(), json!({"pattern": "needle"})).await;
        assert_eq!(r.text_content(), "text.txt:1: needle");
        // Named as the search path, it is searched, as rg does.
        let r = grep(dir.path(), json!({"pattern": "needle", "path": "bin.dat"})).await;
        assert_eq!(r.text_content(), "bin.dat:1: needle");
    }

    #[tokio::test]
    async fn context_lines_around_matches_merge() {
        let dir = tempfile::tempdir().unwrap();
        tree(
            dir.path(),
            &[("a.txt", "1\n2\nneedle\n4\n5\n6\nneedle\nneedle\n9\n10\n")],
        );
        let r = grep(dir.path(), json!({"pattern": "needle", "context": 1})).await;
        assert_eq!(
            r.text_content(),
            "a.txt-2- 2\na.txt:3: needle\na.txt-4- 4\na.txt-6- 6\na.txt:7: needle\na.txt:8: needle\na.txt-9- 9"
        );
        // A float context counts its whole lines; the first line has nothing before it.
        let r = grep(dir.path(), json!({"pattern": "^1$", "context": 2.7})).await;
        assert_eq!(r.text_content(), "a.txt:1: 1\na.txt-2- 2\na.txt-3- needle");
    }

    #[tokio::test]
    async fn the_limit_keeps_the_after_context_of_the_last_match() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), &[("a.txt", "m1\nx\nm2\nm3\ny\n")]);
        let r = grep(
            dir.path(),
            json!({"pattern": "m", "context": 1, "limit": 2}),
        )
        .await;
        // m3 is past the limit: within m2's context it shows as context.
        assert_eq!(
            r.text_content(),
            "a.txt:1: m1\na.txt-2- x\na.txt:3: m2\na.txt-4- m3\n\n\
             [2 matches limit reached. Use limit=4 for more, or refine pattern]"
        );
        assert_eq!(r.details, json!({"matchLimitReached": 2}));
    }

    #[tokio::test]
    async fn literal_and_ignore_case() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), &[("a.txt", "a.b\naxb\nA.B\n")]);
        let r = grep(dir.path(), json!({"pattern": "a.b", "literal": true})).await;
        assert_eq!(r.text_content(), "a.txt:1: a.b");
        let r = grep(dir.path(), json!({"pattern": "a.b"})).await;
        assert_eq!(r.text_content(), "a.txt:1: a.b\na.txt:2: axb");
        let r = grep(
            dir.path(),
            json!({"pattern": "a.b", "literal": true, "ignoreCase": true}),
        )
        .await;
        assert_eq!(r.text_content(), "a.txt:1: a.b\na.txt:3: A.B");
    }

    #[tokio::test]
    async fn gitignore_applies_only_inside_a_git_repository() {
        let dir = tempfile::tempdir().unwrap();
        tree(
            dir.path(),
            &[
                (".gitignore", "build/\n"),
                ("build/out.txt", "TODO built\n"),
                ("src/a.txt", "TODO src\n"),
            ],
        );
        // Not a repository: rg does not read .gitignore.
        let r = grep(dir.path(), json!({"pattern": "TODO"})).await;
        assert_eq!(
            r.text_content(),
            "build/out.txt:1: TODO built\nsrc/a.txt:1: TODO src"
        );
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let r = grep(dir.path(), json!({"pattern": "TODO"})).await;
        assert_eq!(r.text_content(), "src/a.txt:1: TODO src");
        // .ignore applies anywhere.
        std::fs::remove_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".ignore"), "src/\n").unwrap();
        let r = grep(dir.path(), json!({"pattern": "TODO"})).await;
        assert_eq!(r.text_content(), "build/out.txt:1: TODO built");
    }

    #[tokio::test]
    async fn output_is_in_path_then_line_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        for d in ["b", "a", "a/b", "c.d", "A"] {
            for f in ["z.txt", "a.txt", "m.txt"] {
                files.push((format!("{d}/{f}"), "hit 1\nmiss\nhit 3\n".to_owned()));
            }
        }
        files.push(("a.txt".into(), "hit\n".into()));
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_str()))
            .collect();
        tree(dir.path(), &files);
        let r = grep(dir.path(), json!({"pattern": "hit"})).await;
        let text = r.text_content();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 31);
        assert_eq!(lines[0], "A/a.txt:1: hit 1");
        assert_eq!(lines[1], "A/a.txt:3: hit 3");
        assert_eq!(lines[6], "a/a.txt:1: hit 1");
        // A directory's files come before a sibling file whose name sorts after its own.
        assert_eq!(lines[8], "a/b/a.txt:1: hit 1");
        assert_eq!(lines[16], "a/z.txt:1: hit 1");
        assert_eq!(lines[18], "a.txt:1: hit");
        assert_eq!(lines[19], "b/a.txt:1: hit 1");
        assert_eq!(lines[30], "c.d/z.txt:3: hit 3");
        for _ in 0..3 {
            assert_eq!(
                grep(dir.path(), json!({"pattern": "hit"}))
                    .await
                    .text_content(),
                text
            );
        }
    }

    #[tokio::test]
    async fn a_limit_returns_the_first_matches_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(String, String)> = (0..200)
            .map(|i| {
                (
                    format!("d{}/f{:03}.txt", i % 7, i),
                    "word\nword\n".to_owned(),
                )
            })
            .collect();
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_str()))
            .collect();
        tree(dir.path(), &files);
        for _ in 0..5 {
            let r = grep(dir.path(), json!({"pattern": "word", "limit": 3})).await;
            assert_eq!(
                r.text_content(),
                "d0/f000.txt:1: word\nd0/f000.txt:2: word\nd0/f007.txt:1: word\n\n\
                 [3 matches limit reached. Use limit=6 for more, or refine pattern]"
            );
            assert_eq!(r.details, json!({"matchLimitReached": 3}));
        }
        // Exactly the limit is "reached", as pi counts it.
        let r = grep(
            dir.path(),
            json!({"pattern": "word", "path": "d0/f000.txt", "limit": 2}),
        )
        .await;
        assert_eq!(r.details, json!({"matchLimitReached": 2}));
        let r = grep(
            dir.path(),
            json!({"pattern": "word", "path": "d0/f000.txt", "limit": 3}),
        )
        .await;
        assert_eq!(r.text_content(), "f000.txt:1: word\nf000.txt:2: word");
        assert_eq!(r.details, Value::Null);
    }

    #[tokio::test]
    async fn long_lines_are_cut_and_the_output_to_50_kib() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("needle {}\r\n", "y".repeat(600));
        tree(dir.path(), &[("a.txt", &long)]);
        let r = grep(dir.path(), json!({"pattern": "needle"})).await;
        let expected = format!(
            "a.txt:1: needle {}... [truncated]\n\n\
             [Some lines truncated to 500 chars. Use read tool to see full lines]",
            "y".repeat(493)
        );
        assert_eq!(r.text_content(), expected);
        assert_eq!(r.details, json!({"linesTruncated": true}));

        let body = format!("needle {}\n", "z".repeat(400)).repeat(200);
        tree(dir.path(), &[("a.txt", &body)]);
        let r = grep(dir.path(), json!({"pattern": "needle", "limit": 1000})).await;
        let text = r.text_content();
        assert!(
            text.ends_with("\n\n[50.0KB limit reached]"),
            "{}",
            &text[text.len() - 100..]
        );
        assert_eq!(r.details["truncation"]["truncated"], true);
        assert_eq!(
            r.details["truncation"]["maxLines"],
            json!(NO_LINE_LIMIT_JSON)
        );
        assert_eq!(r.details["truncation"]["truncatedBy"], "bytes");
        assert!(r.details.get("matchLimitReached").is_none());
    }

    const NO_LINE_LIMIT_JSON: u64 = 9_007_199_254_740_991;

    #[tokio::test]
    async fn glob_filters_files_like_rg() {
        let dir = tempfile::tempdir().unwrap();
        tree(
            dir.path(),
            &[
                ("src/a.rs", "fn a\n"),
                ("src/b.ts", "fn b\n"),
                ("src/x/c.spec.ts", "fn c\n"),
                ("d.rs", "fn d\n"),
            ],
        );
        let r = grep(dir.path(), json!({"pattern": "fn", "glob": "*.rs"})).await;
        assert_eq!(r.text_content(), "d.rs:1: fn d\nsrc/a.rs:1: fn a");
        let r = grep(dir.path(), json!({"pattern": "fn", "glob": "**/*.spec.ts"})).await;
        assert_eq!(r.text_content(), "src/x/c.spec.ts:1: fn c");
        let r = grep(dir.path(), json!({"pattern": "fn", "glob": "!*.ts"})).await;
        assert_eq!(r.text_content(), "d.rs:1: fn d\nsrc/a.rs:1: fn a");
        let err = call(
            &GrepTool::new(dir.path()),
            json!({"pattern": "fn", "glob": "[a"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("glob"), "{err}");
    }

    #[tokio::test]
    async fn paths_print_below_the_search_path_or_as_the_file_name() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), &[("docs/guide.md", "Guide\nTODO write more\n")]);
        let r = grep(dir.path(), json!({"pattern": "TODO", "path": "docs"})).await;
        assert_eq!(r.text_content(), "guide.md:2: TODO write more");
        let r = grep(
            dir.path(),
            json!({"pattern": "TODO", "path": "docs/guide.md", "context": 1}),
        )
        .await;
        assert_eq!(
            r.text_content(),
            "guide.md-1- Guide\nguide.md:2: TODO write more"
        );
        let r = grep(dir.path(), json!({"pattern": "zzz"})).await;
        assert_eq!(r.text_content(), "No matches found");
        let err = call(
            &GrepTool::new(dir.path()),
            json!({"pattern": "x", "path": "nope"}),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Path not found: {}", dir.path().join("nope").display())
        );
        let err = call(&GrepTool::new(dir.path()), json!({"pattern": "("}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("regex parse error"), "{err}");
    }

    #[tokio::test]
    async fn a_confined_root_refuses_paths_and_links_out_of_it() {
        let outside = tempfile::tempdir().unwrap();
        tree(outside.path(), &[("secret.txt", "TODO secret\n")]);
        let root = tempfile::tempdir().unwrap();
        tree(root.path(), &[("a.txt", "TODO a\n")]);
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            root.path().join("file-link"),
        )
        .unwrap();
        let fs = Arc::new(LocalFs::confined(root.path()).unwrap());
        let tool = GrepTool::new(root.path()).with_fs(fs);
        // The walk does not follow the links.
        let r = call(&tool, json!({"pattern": "TODO"})).await.unwrap();
        assert_eq!(r.text_content(), "a.txt:1: TODO a");
        for path in [outside.path().to_str().unwrap(), "link", "file-link", "../"] {
            let err = call(&tool, json!({"pattern": "TODO", "path": path}))
                .await
                .unwrap_err();
            assert!(
                err.to_string().contains("outside the allowed root"),
                "{path}: {err}"
            );
        }
        // Unconfined, the named link is searched.
        let r = grep(root.path(), json!({"pattern": "TODO", "path": "link"})).await;
        assert_eq!(r.text_content(), "secret.txt:1: TODO secret");
    }

    #[tokio::test]
    async fn an_in_memory_file_system_is_walked_through_the_trait() {
        let fs = Arc::new(MemFs::with(&[
            ("/p/src/b.rs", "TODO b\nx\n"),
            ("/p/src/a.rs", "x\nTODO a\n"),
            ("/p/.git/config", "TODO\n"),
            ("/p/.env", "TODO env\n"),
            ("/p/bin.dat", "TODO\0\n"),
            ("/p/notes.md", "todo notes\n"),
        ]));
        let tool = GrepTool::new("/p").with_fs(fs);
        let r = call(&tool, json!({"pattern": "TODO"})).await.unwrap();
        assert_eq!(
            r.text_content(),
            ".env:1: TODO env\nsrc/a.rs:2: TODO a\nsrc/b.rs:1: TODO b"
        );
        let r = call(
            &tool,
            json!({"pattern": "todo", "ignoreCase": true, "glob": "*.md"}),
        )
        .await
        .unwrap();
        assert_eq!(r.text_content(), "notes.md:1: todo notes");
        let r = call(&tool, json!({"pattern": "TODO", "limit": 2, "context": 1}))
            .await
            .unwrap();
        assert_eq!(
            r.text_content(),
            ".env:1: TODO env\nsrc/a.rs-1- x\nsrc/a.rs:2: TODO a\n\n\
             [2 matches limit reached. Use limit=4 for more, or refine pattern]"
        );
        let r = call(&tool, json!({"pattern": "TODO", "path": "src/b.rs"}))
            .await
            .unwrap();
        assert_eq!(r.text_content(), "b.rs:1: TODO b");
        let err = call(&tool, json!({"pattern": "TODO", "path": "nope"}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "Path not found: /p/nope");
    }

    #[tokio::test]
    async fn a_cancelled_call_is_aborted() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let err = GrepTool::new(dir.path())
            .execute(
                "c",
                json!({"pattern": "x"}).as_object().cloned().unwrap(),
                cancel,
                ToolUpdates::disconnected(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), ABORTED);
    }

    #[tokio::test]
    async fn a_cancelled_walk_stops_with_aborted() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), &[("a.txt", "x\n"), ("b/c.txt", "x\n")]);
        let query = Query::new("x", false, false, None, dir.path(), 0, 10).unwrap();
        let target = search::LocalTarget {
            walk: dir.path().to_owned(),
            is_dir: true,
            is_file: false,
            confined: false,
        };
        let cancel = CancellationToken::new();
        cancel.cancel();
        let err = search_local(&query, &target, dir.path(), dir.path(), &cancel)
            .err()
            .unwrap();
        assert_eq!(err.to_string(), ABORTED);
        // A job still running when the call is aborted: the call returns at once.
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let job = search::run_blocking(&cancel, move |token| {
            trigger.cancel();
            while !token.is_cancelled() {
                std::thread::yield_now();
            }
            Ok(())
        });
        assert_eq!(job.await.unwrap_err().to_string(), ABORTED);
    }
}
