//! A session as one self-contained HTML page: pi's `--export` and `/export`, rendered here.
//!
//! The page is rendered in Rust, on the server side: every message, tool call, result and
//! summary is in the HTML itself, readable without JavaScript (and by a search, a screen
//! reader, a text browser). It needs no network: the style and a small script are inline,
//! images are `data:` URLs, and a Content Security Policy forbids every other load. Markdown
//! (user and assistant text, summaries, custom messages) is rendered with `pulldown-cmark`;
//! HTML written in it is shown as text, never passed through, and links are shown with their
//! address instead of being followed. Everything from the session is HTML-escaped.
//!
//! What the page shows:
//!
//! * a header: the session's name or id, date, working directory, models, message and tool
//!   call counts, tokens, and the cost — of the whole file and of the path shown;
//! * with [`HtmlOptions`], the system prompt and the tool definitions, collapsed;
//! * the tree, every branch, in a side panel; the active path (root to leaf) is the
//!   transcript shown, the entries of other branches are in the page but hidden. A check box
//!   shows them all (in CSS: no script needed); with the script, clicking a node of the tree
//!   shows that node's branch (its path, continued to the newest leaf below it);
//! * user and assistant messages, thinking, each tool call with its arguments and its result
//!   (the `edit` tool's diff as a diff), `bash` runs, compaction and branch summaries, model
//!   and thinking-level changes, labels, extension messages and state, the cost of each
//!   assistant message; an entry of a type this crate does not know, or that cannot be read,
//!   is shown as its JSON.
//!
//! The output is linear in the size of the session.
//!
//! ```
//! use pi_engine::session::export_html::{HtmlOptions, render_session};
//! use pi_engine::session::SessionManager;
//! use pi_engine::{AssistantContent, AssistantMessage, UserMessage};
//!
//! let mut sm = SessionManager::in_memory("/home/me/project");
//! sm.append_message(UserMessage::text("Is <b>this</b> **bold**?")).unwrap();
//! sm.append_message(
//!     AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
//!         .with_content(vec![AssistantContent::text("Yes: **bold**.")]),
//! )
//! .unwrap();
//!
//! let html = render_session(&sm, &HtmlOptions::new().with_system_prompt("Be terse.")).unwrap();
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! assert!(html.contains("Is &lt;b&gt;this&lt;/b&gt; <strong>bold</strong>?"));
//! assert!(html.contains("Yes: <strong>bold</strong>."));
//! assert!(html.contains("Be terse."));
//! ```
//!
//! # Where this differs from pi 0.73.1
//!
//! pi ships the session as base64 JSON in the page with `marked` and `highlight.js`, and
//! renders it in the browser; the page is blank without JavaScript. Here the transcript is
//! HTML, so it is there without JavaScript, and the page is smaller. Tool results are shown
//! with their call, as in pi, and assistant content keeps its order (pi shows all text before
//! all tool calls). Thinking-level changes, labels, session names and extension state are in
//! the transcript too; pi shows them in its tree only. Code is not syntax-highlighted, pi's
//! themes are not applied (the page follows the system's light or dark preference), and
//! tools registered by extensions are shown generically (pi can render them with their own
//! terminal renderers).

mod render;

use std::path::{Path, PathBuf};

use super::entry::{SessionEntry, SessionHeader};
use super::error::SessionError;
use super::manager::{SessionManager, SessionOptions};
use crate::llm::message::Tool;

/// What a page shows besides the session's entries.
///
/// ```
/// use pi_engine::session::export_html::HtmlOptions;
/// use pi_engine::Tool;
/// use serde_json::json;
///
/// let options = HtmlOptions::new()
///     .with_system_prompt("You are a careful assistant.")
///     .with_tools([Tool::new("read", "Read a file", json!({"type": "object"}))]);
/// assert_eq!(options.tools.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct HtmlOptions {
    /// The system prompt, shown collapsed above the transcript (`None` or empty: not shown).
    pub system_prompt: Option<String>,
    /// The tool definitions, shown collapsed above the transcript.
    pub tools: Vec<Tool>,
    /// The page's title (default: the session's name, else `Session <id>`).
    pub title: Option<String>,
}

impl HtmlOptions {
    /// No system prompt, no tools, the default title.
    pub fn new() -> Self {
        HtmlOptions::default()
    }

    /// Shows `prompt` as the system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Shows `tools` as the available tools.
    #[must_use]
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Tool>) -> Self {
        self.tools = tools.into_iter().collect();
        self
    }

    /// Sets the page's title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
}

/// Why a session could not be exported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The session file does not exist (pi's message).
    #[error("File not found: {}", .0.display())]
    NotFound(PathBuf),
    /// The session lives in memory only (pi's message).
    #[error("Cannot export in-memory session to HTML")]
    InMemory,
    /// The session has a file name, but nothing was written to it yet (pi's message).
    #[error("Nothing to export yet - start a conversation first")]
    NothingToExport,
    /// The session file could not be opened or read.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The page could not be written.
    #[error("Failed to write {}: {source}", .path.display())]
    Write {
        /// The output file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The export was abandoned before it ran: its tokio runtime shut down.
    #[error("The export was abandoned before it ran (the runtime shut down)")]
    Abandoned,
}

/// Renders a session as one self-contained HTML page.
///
/// `entries` are the session's entries in file order (as
/// [`SessionManager::entries`] returns them); `leaf_id` is the end of the active path, the
/// transcript shown — `None`, or an id no entry has, shows the path to the last entry. The
/// entries of other branches are in the page, hidden until asked for. Never fails: an entry
/// of an unknown type is shown as its JSON, a parent that does not exist makes a root, a
/// cycle in the parent links is cut.
///
/// ```
/// use pi_engine::session::export_html::{HtmlOptions, render_html};
/// use pi_engine::session::{SessionEntry, SessionHeader};
///
/// let header = SessionHeader::new("0197a000-0000-7000-8000-000000000001", "2026-01-01T00:00:00.000Z", "/p");
/// let entry: SessionEntry = serde_json::from_str(
///     r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"<script>alert(1)</script>","timestamp":1}}"#,
/// )
/// .unwrap();
/// let html = render_html(&header, &[entry], None, &HtmlOptions::new());
/// assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
/// assert!(!html.contains("<script>alert(1)"));
/// ```
pub fn render_html(
    header: &SessionHeader,
    entries: &[SessionEntry],
    leaf_id: Option<&str>,
    options: &HtmlOptions,
) -> String {
    render::render(header, entries, leaf_id, options)
}

/// Renders the session of `session` (its leaf's path shown) with [`render_html`], reading
/// its entries from the file. An entry whose line cannot be read is shown as what could be
/// read of it, with the reason, rather than failing the page.
///
/// # Errors
///
/// When the file cannot be read, or was changed under the manager.
pub fn render_session(
    session: &SessionManager,
    options: &HtmlOptions,
) -> Result<String, SessionError> {
    render_session_at(session, session.leaf_id(), options)
}

/// [`render_session`] with the path to `leaf_id` shown.
pub(crate) fn render_session_at(
    session: &SessionManager,
    leaf_id: Option<&str>,
    options: &HtmlOptions,
) -> Result<String, SessionError> {
    let entries = session.entries_lenient()?;
    Ok(render_html(session.header(), &entries, leaf_id, options))
}

/// The name pi gives an export of `input` when no output is named:
/// `pi-session-<file name without .jsonl>.html`, in the current directory.
///
/// ```
/// use pi_engine::session::export_html::default_output_path;
/// use std::path::Path;
///
/// let out = default_output_path(Path::new("/s/2026-01-01T00-00-00-000Z_0197.jsonl"));
/// assert_eq!(out, Path::new("pi-session-2026-01-01T00-00-00-000Z_0197.html"));
/// ```
pub fn default_output_path(input: &Path) -> PathBuf {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = match name.strip_suffix(".jsonl") {
        Some(stem) if !stem.is_empty() => stem,
        _ => &name,
    };
    PathBuf::from(format!("pi-session-{stem}.html"))
}

/// Exports the session file `input` to `output` (default: [`default_output_path`]) and
/// returns the path written — pi's `pi --export <input> [output]`. The file is opened
/// read-only: no lock is taken, so a session in use elsewhere exports too. Blocking: from
/// async code, call it in `tokio::task::spawn_blocking`.
///
/// ```
/// use pi_engine::session::export_html::export_session_file;
/// use pi_engine::session::SessionOptions;
/// use pi_engine::UserMessage;
///
/// let dir = std::env::temp_dir().join(format!("pi-export-doc-{}", std::process::id()));
/// let mut sm = SessionOptions::new().with_session_dir(&dir).create("/home/me/project");
/// sm.append_message(UserMessage::text("Hello")).unwrap();
/// let input = sm.session_file().unwrap().to_owned();
/// drop(sm);
///
/// let out = export_session_file(&input, Some(&dir.join("out.html"))).unwrap();
/// assert!(std::fs::read_to_string(&out).unwrap().contains("Hello"));
///
/// let missing = export_session_file(&dir.join("nope.jsonl"), None).unwrap_err();
/// assert!(missing.to_string().starts_with("File not found: "));
/// # std::fs::remove_dir_all(&dir).ok();
/// ```
///
/// # Errors
///
/// [`ExportError::NotFound`] when `input` does not exist, [`ExportError::Session`] when it
/// is not a session file or cannot be read, [`ExportError::Write`] when the page cannot be
/// written.
pub fn export_session_file(input: &Path, output: Option<&Path>) -> Result<PathBuf, ExportError> {
    if std::fs::symlink_metadata(input).is_err() {
        return Err(ExportError::NotFound(input.to_owned()));
    }
    let session = SessionOptions::new().read_only().open(input)?;
    let html = render_session(&session, &HtmlOptions::new())?;
    let output = output.map_or_else(|| default_output_path(input), Path::to_path_buf);
    write_page(&output, &html)?;
    Ok(output)
}

/// Exports the session file `file` with the path to `leaf_id` shown; the work of
/// [`AgentSession::export_html`](crate::agent_session::AgentSession::export_html), on the
/// blocking pool.
pub(crate) fn export_live_session(
    file: &Path,
    leaf_id: Option<&str>,
    output: Option<&Path>,
    options: &HtmlOptions,
) -> Result<PathBuf, ExportError> {
    if std::fs::symlink_metadata(file).is_err() {
        return Err(ExportError::NothingToExport);
    }
    let session = SessionOptions::new().read_only().open(file)?;
    let html = render_session_at(&session, leaf_id, options)?;
    let output = output.map_or_else(|| default_output_path(file), Path::to_path_buf);
    write_page(&output, &html)?;
    Ok(output)
}

fn write_page(path: &Path, html: &str) -> Result<(), ExportError> {
    std::fs::write(path, html).map_err(|source| ExportError::Write {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests;
