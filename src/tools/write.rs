//! `write`: creates or replaces a file, parent directories included.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::fs::{FileSystem, LocalFs, node_error};
use super::path::resolve_to_cwd;
use super::queue::lock_file;
use super::{ABORTED, Spec, abortable, fail};
use crate::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};

/// The `write` tool. Writes to one file take turns with `edit`s of it ([`lock_file`]).
///
/// ```
/// use pi_engine::agent::{AgentTool, ToolUpdates};
/// use pi_engine::tools::WriteTool;
/// use pi_engine::CancellationToken;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let dir = tempfile::tempdir().unwrap();
/// let write = WriteTool::new(dir.path());
/// let args = json!({"path": "a/b.txt", "content": "hi\n"});
/// let result = write
///     .execute("call_1", args.as_object().unwrap().clone(), CancellationToken::new(),
///              ToolUpdates::disconnected())
///     .await
///     .unwrap();
/// assert_eq!(result.text_content(), "Successfully wrote 3 bytes to a/b.txt");
/// assert_eq!(std::fs::read_to_string(dir.path().join("a/b.txt")).unwrap(), "hi\n");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct WriteTool {
    cwd: PathBuf,
    fs: Arc<dyn FileSystem>,
    spec: Arc<Spec>,
}

impl WriteTool {
    /// `write` for files relative to `cwd`, on the local disk.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        WriteTool {
            cwd: cwd.into(),
            fs: Arc::new(LocalFs::new()),
            spec: Arc::new(spec()),
        }
    }

    /// Writes through `fs` instead of the local disk.
    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.fs = fs;
        self
    }
}

fn spec() -> Spec {
    Spec::new(
        "write",
        "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
        json!({
            "type": "object",
            "required": ["path", "content"],
            "properties": {
                "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
                "content": {"type": "string", "description": "Content to write to the file"}
            }
        }),
        "Create or overwrite files",
        &["Use write only for new files or complete rewrites."],
    )
}

#[async_trait]
impl AgentTool for WriteTool {
    spec_accessors!();

    /// Writes the file. Cancelled before the write starts, it writes nothing and fails with
    /// "Operation aborted"; once the write has started it is finished (a file is never left
    /// half-written by an abort).
    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let raw = args.get("path").and_then(Value::as_str).unwrap_or("");
        let content = args.get("content").and_then(Value::as_str).unwrap_or("");
        let path = resolve_to_cwd(raw, &self.cwd);
        let _turn = abortable(&cancel, lock_file(self.fs.as_ref(), &path)).await?;
        if let Some(dir) = path.parent() {
            self.fs
                .create_dir_all(dir)
                .await
                .map_err(|e| fail(node_error(&e, "mkdir", dir)))?;
        }
        if cancel.is_cancelled() {
            return Err(fail(ABORTED));
        }
        // The write itself runs to the end on the blocking pool even if this future is
        // dropped, so the file is whole either way.
        self.fs
            .write(&path, content.as_bytes())
            .await
            .map_err(|e| fail(node_error(&e, "open", &path)))?;
        // pi counts JavaScript string length (UTF-16 units), not bytes.
        let units: usize = content.chars().map(char::len_utf16).sum();
        Ok(
            AgentToolResult::text(format!("Successfully wrote {units} bytes to {raw}"))
                .with_details(Value::Null),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_like_pi_and_refuses_outside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let tool = WriteTool::new(dir.path());
        let args = json!({"path": "u.txt", "content": "é😀"});
        let r = tool
            .execute(
                "c",
                args.as_object().unwrap().clone(),
                CancellationToken::new(),
                ToolUpdates::disconnected(),
            )
            .await
            .unwrap();
        assert_eq!(r.text_content(), "Successfully wrote 3 bytes to u.txt");

        let fs = Arc::new(LocalFs::confined(dir.path()).unwrap());
        let tool = WriteTool::new(dir.path()).with_fs(fs);
        let args = json!({"path": "../escape.txt", "content": "x"});
        let err = tool
            .execute(
                "c",
                args.as_object().unwrap().clone(),
                CancellationToken::new(),
                ToolUpdates::disconnected(),
            )
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("outside the allowed root"),
            "{err}"
        );
        assert!(!dir.path().parent().unwrap().join("escape.txt").exists());
    }

    #[tokio::test]
    async fn an_aborted_call_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let args = json!({"path": "x.txt", "content": "x"});
        let err = WriteTool::new(dir.path())
            .execute(
                "c",
                args.as_object().unwrap().clone(),
                cancel,
                ToolUpdates::disconnected(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "Operation aborted");
        assert!(!dir.path().join("x.txt").exists());
    }
}
