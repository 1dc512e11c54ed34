//! [`AgentSessionError`]: why an [`AgentSession`](super::AgentSession) operation did not
//! happen.

use crate::agent::AgentError;
use crate::llm::error::Error;
use crate::session::SessionError;

/// Why an [`AgentSession`](super::AgentSession) operation failed.
///
/// A failed *model call* is not one of these: it ends the run with an error message (see
/// [`AgentSession::error_message`](super::AgentSession::error_message)), after automatic
/// retries.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentSessionError {
    /// The agent refused to start a run (already running, nothing to continue from).
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// Another operation (a compaction, a tree navigation, a session switch) is running.
    #[error("The session is busy with another operation. Wait for it or abort it first.")]
    Busy,
    /// Reading or writing the session file failed. When a message could not be written
    /// during a run, the run was aborted.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// No model was given and none could be restored from the session.
    #[error("No model selected: give the builder a model")]
    NoModel,
    /// The model's provider has no credentials in the model registry.
    #[error("No API key found for {provider}")]
    NoApiKey {
        /// The provider.
        provider: String,
    },
    /// There is nothing to compact (pi's text).
    #[error("Nothing to compact (session too small)")]
    NothingToCompact,
    /// The branch already ends with a compaction (pi's text).
    #[error("Already compacted")]
    AlreadyCompacted,
    /// The operation was aborted.
    #[error("{0} cancelled")]
    Cancelled(&'static str),
    /// Writing a summary failed.
    #[error("{context}: {source}")]
    Summary {
        /// What was being summarized ("Compaction failed", "Branch summary failed").
        context: &'static str,
        /// The model call's error.
        #[source]
        source: Error,
    },
    /// A person's shell command ([`execute_bash`](super::AgentSession::execute_bash)) could
    /// not be run.
    #[error("Could not run the command: {0}")]
    Bash(String),
    /// The entry to navigate to or fork from does not exist or does not fit.
    #[error("Invalid entry {id}: {reason}")]
    InvalidEntry {
        /// The entry id.
        id: String,
        /// Why.
        reason: &'static str,
    },
}
