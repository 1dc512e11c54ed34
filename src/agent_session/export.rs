//! [`AgentSession::export_html`]: the session as one HTML page (pi's `/export`).

use std::path::{Path, PathBuf};

use super::AgentSession;
use crate::session::export_html::{ExportError, HtmlOptions, export_live_session};

impl AgentSession {
    /// Writes the session as one self-contained HTML page (see
    /// [`session::export_html`](crate::session::export_html)) to `output`, default
    /// `pi-session-<session file name>.html` in the current directory, and returns the path
    /// written: pi's `/export` and RPC `export_html`. The page shows the session's current
    /// path (its leaf, even one moved by [`navigate_tree`](Self::navigate_tree) and not yet
    /// written), the other branches hidden, and the system prompt and tool definitions in
    /// force, collapsed.
    ///
    /// The file is read and the page written on tokio's blocking pool, from a read-only
    /// view of the session file: the session is not locked meanwhile, and a run may go on.
    ///
    /// ```
    /// use pi_engine::agent_session::AgentSession;
    /// use pi_engine::providers::faux::{FauxProvider, FauxResponse};
    /// use pi_engine::session::SessionOptions;
    /// use pi_engine::ApiProvider;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let dir = std::env::temp_dir().join(format!("pi-export-session-doc-{}", std::process::id()));
    /// let faux = FauxProvider::new();
    /// let stream = faux.clone();
    /// let session = AgentSession::builder(SessionOptions::new().with_session_dir(&dir).create("/project"))
    ///     .default_model(faux.model())
    ///     .stream_fn(move |m, c, o| stream.stream(m, c, o))
    ///     .build()
    ///     .unwrap();
    /// faux.push(FauxResponse::text("Hello, **Ada**."));
    /// session.prompt("Hi, I am Ada.").await.unwrap();
    /// let page = session.export_html(Some(&dir.join("chat.html"))).await.unwrap();
    /// let html = std::fs::read_to_string(page).unwrap();
    /// assert!(html.contains("Hi, I am Ada.") && html.contains("Hello, <strong>Ada</strong>."));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ExportError::InMemory`] for a session without a file, [`ExportError::NothingToExport`]
    /// before anything was written to it, [`ExportError::Session`] when it cannot be read,
    /// [`ExportError::Write`] when the page cannot be written, [`ExportError::Abandoned`]
    /// when the runtime shut down before the work ran.
    ///
    /// # Cancellation
    ///
    /// Dropping the future does not stop the export once it is on the blocking pool: the page
    /// is still written (whole), only its path is not returned. Dropped before it was polled,
    /// nothing is written.
    ///
    /// # Panics
    ///
    /// When rendering panics (a bug), the panic is resumed on the caller.
    pub async fn export_html(&self, output: Option<&Path>) -> Result<PathBuf, ExportError> {
        let (file, leaf) = {
            let sm = self.inner.session();
            let file = sm.session_file().map(PathBuf::from);
            (file, sm.leaf_id().map(str::to_owned))
        };
        let file = file.ok_or(ExportError::InMemory)?;
        let options = {
            let state = self.agent().state();
            let mut options =
                HtmlOptions::new().with_tools(state.tools.iter().map(|t| t.definition().clone()));
            if !state.system_prompt.is_empty() {
                options = options.with_system_prompt(state.system_prompt.clone());
            }
            options
        };
        let output = output.map(Path::to_path_buf);
        let task = tokio::task::spawn_blocking(move || {
            export_live_session(&file, leaf.as_deref(), output.as_deref(), &options)
        });
        match task.await {
            Ok(result) => result,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(ExportError::Abandoned),
        }
    }
}
