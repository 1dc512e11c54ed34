//! pi's built-in coding tools — `read`, `write`, `edit`, `bash`, `grep`, `find`, `ls` — as
//! [`AgentTool`]s, faithful to pi-coding-agent 0.73.1: the same parameter schemas and
//! descriptions (what the model sees), result texts, `details`, and limits (2000 lines /
//! 50 KiB; `read` keeps the head, `bash` the tail with the full output in a temp file; grep
//! lines cut at 500 characters; grep 100 matches, find 1000, ls 500 entries).
//!
//! Where this crate differs from pi, deliberately:
//!
//! * `grep` and `find` search in-process on ripgrep's own crates: no `rg` or `fd` binary and
//!   no download; their output is sorted and the same from run to run (pi prints in the order
//!   of a parallel walk); the `.git` directory itself is never searched.
//! * a fuzzy `edit` (smart quotes, trailing spaces, Unicode dashes) replaces only the bytes it
//!   matched, where pi rewrites the whole file in normalized form; a failed match names the
//!   closest region of the file.
//! * `bash` kills the command's whole process group on abort or timeout, and a background
//!   child that keeps the output pipe open cannot hang it; its memory stays bounded however
//!   much the command prints.
//!
//! The file tools work through a [`FileSystem`] (the local disk by default, [`LocalFs`]), and
//! may be confined to a root directory; `bash` runs through [`BashOperations`].
//!
//! ```
//! use pi_engine::agent::Agent;
//! use pi_engine::providers::faux::FauxProvider;
//! use pi_engine::tools::BuiltinTools;
//!
//! let faux = FauxProvider::new();
//! let agent = Agent::builder(faux.model())
//!     .tools(BuiltinTools::new(".").coding())
//!     .provider(faux)
//!     .build();
//! # drop(agent);
//! ```
//!
//! [`AgentTool`]: crate::agent::AgentTool

/// The `definition`, `prompt_snippet` and `prompt_guidelines` of a tool holding a `spec: Spec`
/// (its label is its name, the trait's default).
macro_rules! spec_accessors {
    () => {
        fn definition(&self) -> &$crate::llm::message::Tool {
            &self.spec.definition
        }

        fn prompt_snippet(&self) -> Option<&str> {
            Some(self.spec.snippet)
        }

        fn prompt_guidelines(&self) -> &[String] {
            &self.spec.guidelines
        }
    };
}

mod bash;
mod edit;
mod edit_diff;
mod find;
mod fs;
mod grep;
mod ls;
mod path;
mod queue;
mod read;
mod search;
mod set;
mod truncate;
mod write;

pub(crate) use bash::run_user_command;
pub use bash::{BashOperations, BashTool, ExecOptions, ExecOutcome, LocalBash};
pub use edit::EditTool;
pub use find::FindTool;
pub use fs::{DirEntry, FileKind, FileSystem, LocalFs, LocalSearch, Metadata};
pub use grep::GrepTool;
pub use ls::LsTool;
pub use path::{expand_path, resolve_read_path, resolve_to_cwd};
pub use queue::{FileMutationGuard, lock_file};
pub use read::ReadTool;
pub use set::{BuiltinTools, ConfinedBash};
pub use truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, GREP_MAX_LINE_LENGTH, TruncatedBy, Truncation,
    format_size, truncate_head, truncate_line, truncate_tail,
};
pub use write::WriteTool;

use crate::llm::message::Tool;

/// What a built-in tool shows the model and the system prompt: its definition, label, prompt
/// snippet and guidelines.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) definition: Tool,
    pub(crate) snippet: &'static str,
    pub(crate) guidelines: Vec<String>,
}

impl Spec {
    pub(crate) fn new(
        name: &str,
        description: impl Into<String>,
        parameters: serde_json::Value,
        snippet: &'static str,
        guidelines: &[&str],
    ) -> Self {
        Spec {
            definition: Tool::new(name, description, parameters),
            snippet,
            guidelines: guidelines.iter().map(|g| (*g).to_owned()).collect(),
        }
    }
}

/// The error a tool call ends with: its text is what the model reads.
pub(crate) fn fail(text: impl Into<String>) -> crate::agent::ToolError {
    text.into().into()
}

/// The largest file `read` and `edit` load (they hold it whole, as pi's do): past it they
/// refuse with a clear error instead of exhausting memory (node gives up near 512 MB too,
/// with an error about string length).
pub const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// The error for a file of `len` bytes over [`MAX_FILE_BYTES`], named `shown`.
pub(crate) fn check_size(len: u64, shown: &str) -> Result<(), crate::agent::ToolError> {
    if len <= MAX_FILE_BYTES {
        return Ok(());
    }
    Err(fail(format!(
        "{shown} is {}, more than the {} this tool loads. Use bash to look at part of it (head, tail, sed -n 'A,Bp').",
        format_size(usize::try_from(len).unwrap_or(usize::MAX)),
        format_size(MAX_FILE_BYTES as usize)
    )))
}

/// `fut`'s output, or the "Operation aborted" error as soon as `cancel` fires. The token is
/// checked first, so a call cancelled before it starts never polls `fut` (never starts it).
pub(crate) async fn abortable<T>(
    cancel: &tokio_util::sync::CancellationToken,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, crate::agent::ToolError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(fail(ABORTED)),
        out = fut => Ok(out),
    }
}

/// pi's text for a call cut short by an abort.
pub(crate) const ABORTED: &str = "Operation aborted";

/// The image type of `bytes` when pi sends such a file as an image (the command's `@file`
/// arguments).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn read_image_mime(bytes: &[u8]) -> Option<&'static str> {
    read::image_mime(bytes)
}

/// An image file as `read` sends it (scaled to pi's limits), with pi's note when it was
/// scaled; `None` when it cannot be made small enough.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn fit_read_image(
    bytes: &[u8],
    mime: &str,
) -> Option<(crate::llm::message::ImageContent, Option<String>)> {
    read::fit_image(bytes, mime).map(|f| {
        let note = f.resized.map(|r| r.note());
        (crate::llm::message::ImageContent::new(f.data, f.mime), note)
    })
}
