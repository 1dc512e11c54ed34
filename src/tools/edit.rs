//! `edit`: exact text replacements in one file, several disjoint ones per call, by pi's rules
//! (see `edit_diff`), with pi's line-numbered diff in `details`.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::edit_diff::{self, Edit};
use super::fs::{FileSystem, LocalFs, error_code};
use super::path::resolve_to_cwd;
use super::queue::lock_file;
use super::{ABORTED, Spec, abortable, fail};
use crate::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};

/// The `edit` tool: replaces exact text in a file, one or more disjoint regions per call.
///
/// Every `edits[].oldText` is matched against the file as it was before the call, must be
/// found exactly once, and the regions must not overlap; failing an exact match, a match
/// that ignores trailing whitespace, smart quotes and Unicode dashes or spaces is tried, as
/// pi does. Unlike pi, such a fuzzy match replaces only the bytes it matched (pi rewrites the
/// whole file in normalized form), and an `oldText` that is not found is answered with the
/// closest region of the file. Line endings (`\r\n`) and a BOM are kept. Edits of one file
/// take turns with other edits and writes of it ([`lock_file`]).
///
/// ```
/// use pi_engine::agent::{AgentTool, ToolUpdates};
/// use pi_engine::tools::EditTool;
/// use pi_engine::CancellationToken;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a.txt"), "hello world\n").unwrap();
/// let edit = EditTool::new(dir.path());
/// let args = json!({"path": "a.txt", "edits": [{"oldText": "world", "newText": "there"}]});
/// let result = edit
///     .execute("call_1", args.as_object().unwrap().clone(), CancellationToken::new(),
///              ToolUpdates::disconnected())
///     .await
///     .unwrap();
/// assert_eq!(result.text_content(), "Successfully replaced 1 block(s) in a.txt.");
/// assert_eq!(result.details["diff"], "-1 hello world\n+1 hello there");
/// assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "hello there\n");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct EditTool {
    cwd: PathBuf,
    fs: Arc<dyn FileSystem>,
    spec: Arc<Spec>,
}

impl EditTool {
    /// `edit` for files relative to `cwd`, on the local disk.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        EditTool {
            cwd: cwd.into(),
            fs: Arc::new(LocalFs::new()),
            spec: Arc::new(spec()),
        }
    }

    /// Reads and writes through `fs` instead of the local disk.
    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.fs = fs;
        self
    }
}

fn spec() -> Spec {
    Spec::new(
        "edit",
        "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.",
        json!({
            "type": "object",
            "required": ["path", "edits"],
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Path to the file to edit (relative or absolute)"
                },
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["oldText", "newText"],
                        "properties": {
                            "oldText": {
                                "type": "string",
                                "description": "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."
                            },
                            "newText": {
                                "type": "string",
                                "description": "Replacement text for this targeted edit."
                            }
                        },
                        "additionalProperties": false
                    },
                    "description": "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."
                }
            },
            "additionalProperties": false
        }),
        "Make precise file edits with exact text replacement, including multiple disjoint edits in one call",
        &[
            "Use edit for precise changes (edits[].oldText must match exactly)",
            "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] instead of multiple edit calls",
            "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit overlapping or nested edits. Merge nearby changes into one edit.",
            "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large unchanged regions.",
        ],
    )
}

/// The path and edits of validated arguments.
fn parse_args(args: &Map<String, Value>) -> Result<(String, Vec<Edit>), ToolError> {
    const EMPTY: &str = "Edit tool input is invalid. edits must contain at least one replacement.";
    let path = args.get("path").and_then(Value::as_str).unwrap_or("");
    let list = match args.get("edits") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        _ => return Err(fail(EMPTY)),
    };
    let mut edits = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let text = |key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    fail(format!(
                        "Edit tool input is invalid. edits[{i}].{key} must be a string."
                    ))
                })
        };
        edits.push(Edit {
            old_text: text("oldText")?,
            new_text: text("newText")?,
        });
    }
    Ok((path.to_owned(), edits))
}

/// pi checks access first: `Could not edit file: a.txt. Error code: ENOENT.` A directory
/// passes that check and fails the read, with node's text.
fn access_error(path: &str, e: &io::Error) -> String {
    match error_code(e) {
        Some("EISDIR") => "EISDIR: illegal operation on a directory, read".to_owned(),
        Some(code) => format!("Could not edit file: {path}. Error code: {code}."),
        None => format!("Could not edit file: {path}. {e}."),
    }
}

#[async_trait]
impl AgentTool for EditTool {
    spec_accessors!();

    /// pi's compatibility shims: `edits` sent as a JSON string is parsed, and a top-level
    /// `oldText`/`newText` pair (the old single-edit form) becomes an entry of `edits`.
    fn prepare_arguments(&self, raw: &Map<String, Value>) -> Option<Map<String, Value>> {
        edit_diff::prepare_arguments(raw)
    }

    /// Edits the file. Cancelled before the write starts, it changes nothing and fails with
    /// "Operation aborted"; a write once started is finished.
    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let (path, edits) = parse_args(&args)?;
        let absolute = resolve_to_cwd(&path, &self.cwd);
        let _turn = abortable(&cancel, lock_file(self.fs.as_ref(), &absolute)).await?;
        // A missing file is left to the read, which reports it in pi's words.
        if let Ok(meta) = self.fs.metadata(&absolute).await {
            super::check_size(meta.len, &path)?;
        }
        let raw = abortable(&cancel, self.fs.read(&absolute))
            .await?
            .map_err(|e| fail(access_error(&path, &e)))?;
        let count = edits.len();
        // Matching and diffing are linear in the file but may take a while on a big one:
        // off the async threads.
        let display = path.clone();
        let applied =
            tokio::task::spawn_blocking(move || edit_diff::apply_edits(&raw, &edits, &display))
                .await
                .map_err(|e| fail(format!("edit failed: {e}")))?
                .map_err(fail)?;
        if cancel.is_cancelled() {
            return Err(fail(ABORTED));
        }
        self.fs
            .write(&absolute, &applied.bytes)
            .await
            .map_err(|e| fail(access_error(&path, &e)))?;
        let mut details = Map::new();
        details.insert("diff".to_owned(), Value::String(applied.diff.diff));
        if let Some(line) = applied.diff.first_changed_line {
            details.insert("firstChangedLine".to_owned(), json!(line));
        }
        Ok(
            AgentToolResult::text(format!("Successfully replaced {count} block(s) in {path}."))
                .with_details(Value::Object(details)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    async fn run(tool: &EditTool, v: Value) -> Result<AgentToolResult, String> {
        let raw = args(v);
        let prepared = tool.prepare_arguments(&raw).unwrap_or(raw);
        tool.execute(
            "c",
            prepared,
            CancellationToken::new(),
            ToolUpdates::disconnected(),
        )
        .await
        .map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn single_edit_like_the_golden() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let file = dir.path().join("src/main.rs");
        std::fs::write(
            &file,
            "fn main() {\n    println!(\"hello\");\n}\n\nfn helper(x: u32) -> u32 {\n    x + 1\n}\n",
        )
        .unwrap();
        let tool = EditTool::new(dir.path());
        let r = run(
            &tool,
            json!({"path": "src/main.rs", "edits": [{"oldText": "println!(\"hello\");", "newText": "println!(\"bye\");"}]}),
        )
        .await
        .unwrap();
        assert_eq!(
            r.text_content(),
            "Successfully replaced 1 block(s) in src/main.rs."
        );
        assert_eq!(
            r.details,
            json!({
                "diff": " 1 fn main() {\n-2     println!(\"hello\");\n+2     println!(\"bye\");\n 3 }\n 4 \n 5 fn helper(x: u32) -> u32 {\n 6     x + 1\n   ...",
                "firstChangedLine": 2
            })
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "fn main() {\n    println!(\"bye\");\n}\n\nfn helper(x: u32) -> u32 {\n    x + 1\n}\n"
        );
    }

    #[tokio::test]
    async fn legacy_arguments_and_string_edits() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "abc\n").unwrap();
        let tool = EditTool::new(dir.path());
        let r = run(
            &tool,
            json!({"path": "a.txt", "oldText": "abc", "newText": "xyz"}),
        )
        .await
        .unwrap();
        assert_eq!(
            r.details,
            json!({"diff": "-1 abc\n+1 xyz", "firstChangedLine": 1})
        );
        let r = run(
            &tool,
            json!({"path": "a.txt", "edits": "[{\"oldText\": \"xyz\", \"newText\": \"q\"}]"}),
        )
        .await
        .unwrap();
        assert_eq!(
            r.text_content(),
            "Successfully replaced 1 block(s) in a.txt."
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "q\n");
    }

    #[tokio::test]
    async fn errors_read_like_pis() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "abc\n").unwrap();
        let tool = EditTool::new(dir.path());
        let err = run(
            &tool,
            json!({"path": "none.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
        )
        .await
        .unwrap_err();
        assert_eq!(err, "Could not edit file: none.txt. Error code: ENOENT.");
        let err = run(&tool, json!({"path": "a.txt", "edits": []}))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            "Edit tool input is invalid. edits must contain at least one replacement."
        );
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let err = run(
            &tool,
            json!({"path": "d", "edits": [{"oldText": "a", "newText": "b"}]}),
        )
        .await
        .unwrap_err();
        assert_eq!(err, "EISDIR: illegal operation on a directory, read");
        let err = run(
            &tool,
            json!({"path": "a.txt", "edits": [{"oldText": "abc", "newText": "abc"}]}),
        )
        .await
        .unwrap_err();
        assert!(err.starts_with("No changes made to a.txt."), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "abc\n"
        );
    }

    #[tokio::test]
    async fn two_parallel_edits_of_one_file_both_apply() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        let body: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&file, &body).unwrap();
        let tool = EditTool::new(dir.path());
        let (a, b) = tokio::join!(
            run(
                &tool,
                json!({"path": "a.txt", "edits": [{"oldText": "line 10\n", "newText": "ten\n"}]})
            ),
            run(
                &tool,
                json!({"path": "./a.txt", "edits": [{"oldText": "line 1990\n", "newText": "nineteen ninety\n"}]})
            ),
        );
        a.unwrap();
        b.unwrap();
        let after = std::fs::read_to_string(&file).unwrap();
        assert!(after.contains("\nten\n"));
        assert!(after.contains("\nnineteen ninety\n"));
        assert_eq!(after.lines().count(), 2000);
    }

    #[tokio::test]
    async fn edits_through_the_given_file_system() {
        // In memory, to check that the tool goes through the file system it is given.
        let fs = Arc::new(crate::tools::search::tests::MemFs::with(&[(
            "/mem/a.txt",
            "one two\n",
        )]));
        let tool = EditTool::new("/mem").with_fs(fs.clone());
        let r = run(
            &tool,
            json!({"path": "a.txt", "edits": [{"oldText": "two", "newText": "2"}]}),
        )
        .await
        .unwrap();
        assert_eq!(r.details["firstChangedLine"], 1);
        assert_eq!(
            fs.read(std::path::Path::new("/mem/a.txt")).await.unwrap(),
            b"one 2\n"
        );
        let err = run(
            &tool,
            json!({"path": "b.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
        )
        .await
        .unwrap_err();
        assert_eq!(err, "Could not edit file: b.txt. Error code: ENOENT.");
    }

    #[tokio::test]
    async fn an_aborted_call_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "abc\n").unwrap();
        let tool = EditTool::new(dir.path());
        let cancel = CancellationToken::new();
        cancel.cancel();
        let err = tool
            .execute(
                "c",
                args(json!({"path": "a.txt", "edits": [{"oldText": "abc", "newText": "x"}]})),
                cancel,
                ToolUpdates::disconnected(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), ABORTED);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "abc\n");
    }

    #[tokio::test]
    async fn crlf_and_bom_survive() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, b"\xEF\xBB\xBFone\r\ntwo\r\nthree\r\n").unwrap();
        let tool = EditTool::new(dir.path());
        let r = run(
            &tool,
            json!({"path": "a.txt", "edits": [{"oldText": "two\nthree", "newText": "2\n3"}]}),
        )
        .await
        .unwrap();
        assert_eq!(
            r.details,
            json!({"diff": " 1 one\n-2 two\n-3 three\n+2 2\n+3 3", "firstChangedLine": 2})
        );
        assert_eq!(
            std::fs::read(&file).unwrap(),
            b"\xEF\xBB\xBFone\r\n2\r\n3\r\n"
        );
    }
}
