//! [`AgentSession`]: a persistent agent — pi's `AgentSession` — built from the three layers
//! below it: an [`Agent`](crate::agent::Agent) runs the conversation, a
//! [`SessionManager`](crate::session::SessionManager) keeps it in a pi-compatible session
//! file, a [`ModelRegistry`](crate::llm::ModelRegistry) supplies models and credentials.
//!
//! * **Persistent.** Every message is written as it ends (user, assistant and tool results
//!   as `message` entries, extension messages as `custom_message` entries), model and
//!   thinking-level changes as entries of their own. Reopening the file restores the
//!   model, the thinking level and the context; files open in pi 0.73.1 and back.
//!   Writes go through the session's [`SessionWriter`](crate::session::SessionWriter) and
//!   are awaited: the file's `write` and `fdatasync` run on tokio's blocking pool, never on
//!   an async worker thread, and a message is durable (per the session's
//!   [`FsyncPolicy`](crate::session::FsyncPolicy)) before the listeners see its
//!   `message_end` and before the run's outcome is returned. (The builder and the
//!   synchronous tree operations — [`fork`](AgentSession::fork),
//!   [`new_session`](AgentSession::new_session),
//!   [`switch_session`](AgentSession::switch_session) — write their few entries on the
//!   calling thread.)
//! * **Compaction** ([`session::compaction`](crate::session::compaction), pi's algorithm):
//!   when the context nears the window (its size minus `reserveTokens`), the older part is
//!   summarized. Unlike pi, the threshold is checked before *every* model call, so a long
//!   tool loop cannot overflow the window; a context-overflow error compacts and retries
//!   once (as pi); switching to a model with a smaller window compacts first; and
//!   [`compact`](AgentSession::compact) compacts on demand.
//! * **Retries.** A call that failed for a passing reason (overloaded, rate limited, 5xx,
//!   connection) is retried after 2, 4 and 8 s (a `Retry-After` is honoured up to
//!   `maxDelayMs`), at most 3 times per model call, cancellable with
//!   [`abort`](AgentSession::abort). The failed reply leaves the context and stays in the
//!   file. The session owns the whole budget: provider-level retries
//!   ([`StreamOptions::retry`](crate::StreamOptions::retry)) are off for the agent's calls
//!   while it retries, so the two never multiply. Summary requests, which the session does
//!   not retry, keep the provider-level policy.
//! * **Models**: [`set_model`](AgentSession::set_model),
//!   [`cycle_model`](AgentSession::cycle_model) through scoped models,
//!   [`set_thinking_level`](AgentSession::set_thinking_level) (clamped to the model).
//! * **The tree**: [`navigate_tree`](AgentSession::navigate_tree) with an optional branch
//!   summary, [`fork`](AgentSession::fork), [`new_session`](AgentSession::new_session),
//!   [`switch_session`](AgentSession::switch_session).
//! * **Events**: [`subscribe`](AgentSession::subscribe) gets every agent event and pi's
//!   session events ([`SessionEvent`]) in pi's JSON shapes;
//!   [`session_stats`](AgentSession::session_stats) gives tokens and cost.
//!
//! ```
//! use pi_engine::agent_session::AgentSession;
//! use pi_engine::providers::faux::{FauxProvider, FauxResponse};
//! use pi_engine::session::SessionOptions;
//! use pi_engine::ApiProvider;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let dir = std::env::temp_dir().join(format!("pi-agent-session-doc-{}", std::process::id()));
//! let faux = FauxProvider::new();
//! let stream = faux.clone();
//! let open = |session| {
//!     let stream = stream.clone();
//!     AgentSession::builder(session)
//!         .default_model(stream.model())
//!         .models([stream.model()])
//!         .stream_fn(move |m, c, o| stream.stream(m, c, o))
//!         .build()
//!         .unwrap()
//! };
//!
//! // First run: a new session file.
//! faux.push(FauxResponse::text("Nice to meet you, Ada."));
//! let session = open(SessionOptions::new().with_session_dir(&dir).create("/project"));
//! session.prompt("My name is Ada.").await.unwrap().into_result().unwrap();
//! let file = session.session_file().unwrap();
//! drop(session);
//!
//! // Later: the conversation goes on where it stopped.
//! faux.push(FauxResponse::text("You are Ada."));
//! let session = open(SessionOptions::new().open(&file).unwrap());
//! assert_eq!(session.messages().len(), 2);
//! session.prompt("Who am I?").await.unwrap().into_result().unwrap();
//! assert_eq!(faux.requests()[1].context.messages.len(), 3); // the model saw the history
//! assert_eq!(session.last_assistant_text().as_deref(), Some("You are Ada."));
//! # std::fs::remove_dir_all(&dir).ok();
//! # }
//! ```
//!
//! # Where this differs from pi, deliberately
//!
//! * The compaction threshold is checked before every model call of a run (pi: when a run
//!   ends), and switching to a smaller window compacts first (pi: the next call overflows).
//! * A retried reply follows the failed one's parent in the session tree: the failed reply
//!   stays in the file on a branch of its own, so a reopened session resumes without it
//!   (pi leaves it on the branch, and it comes back on reopen).
//! * An abort during a retried call ends the retry with `auto_retry_end`
//!   (`success: false`); pi reports nothing, or `success: true` for an aborted reply.
//! * Errors that never pass (an exhausted quota, bad credentials) are not retried even when
//!   their text matches pi's pattern (e.g. a quota error with status 429).
//! * [`abort`](AgentSession::abort) returns at once; [`wait_for_idle`](AgentSession::wait_for_idle)
//!   waits (pi's `abort()` does both — and deadlocks when awaited from a tool).
//! * Summary requests use the session's stream function, so a scripted or proxied model
//!   writes the summaries too.

mod builder;
mod compaction;
mod error;
mod event;
#[cfg(feature = "export-html")]
mod export;
mod extension_calls;
mod json_lines;
mod models;
pub(crate) mod retry;
mod session;
mod settings;
mod stats;
mod tree;

pub use builder::AgentSessionBuilder;
pub use error::AgentSessionError;
pub use event::{AgentSessionEvent, CompactionReason, SessionEvent};
#[cfg(feature = "tools")]
pub use extension_calls::BashRun;
pub use extension_calls::ToolInfo;
pub use json_lines::{
    JsonLineEncoder, JsonLinesError, JsonLinesWriter, UpdateShape, header_line, json_line,
};
pub use models::{CycleDirection, ModelCycle};
pub use session::{AgentSession, ScopedModel, SessionSubscription};
pub use settings::{
    AgentSessionSettings, BranchSummarySettings, DEFAULT_THINKING_LEVEL, RetrySettings,
    SettingsChange,
};
pub use stats::{ContextUsage, SessionStats, TokenStats};
pub use tree::{ForkPosition, ForkResult, NavigateOptions, NavigateResult, SwitchResult};
