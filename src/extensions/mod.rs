//! Extensions: code that takes part in an [`AgentSession`](crate::agent_session::AgentSession)'s
//! life — pi's extension API in Rust.
//!
//! An [`Extension`] is a name and a setup function. The setup gets an [`ExtensionApi`] and
//! registers what the extension does: handlers of the session's events (a `tool_call` that
//! blocks `rm -rf`, an `input` that rewrites a prompt, a `context` that filters old
//! messages), tools, and `/commands`. Each handler gets the event and an
//! [`ExtensionContext`]: the session, the front end's UI ([`ExtensionUi`]), a cancellation
//! token, and the run-time calls (`send_message`, `send_user_message`, `append_entry`,
//! `set_label`, `register_tool`, …).
//!
//! The rules, all of them tested:
//!
//! * Handlers run in registration order (extensions in the order given to the builder).
//! * `tool_call`: the first block wins; a handler that fails, panics or passes its deadline
//!   **blocks** the call (fail closed, as pi). `session_before_switch`: the first cancel
//!   wins. `tool_result`, `context`, `input` (transform) and the system prompt of
//!   `before_agent_start` **chain**: each handler sees what the one before left;
//!   `before_agent_start` messages are collected; an `input` handler that answers
//!   `Handled` stops the prompt.
//! * Every handler call has a deadline (default 30 s, per extension
//!   [`Extension::with_timeout`] or per handler [`ExtensionApi::timeout`]); time a dialog
//!   spends waiting for a person does not count. A failure — an `Err`, a panic, a deadline
//!   — never reaches the session: it becomes a [`SessionEvent::ExtensionError`](crate::agent_session::SessionEvent::ExtensionError)
//!   naming the extension and the event, and the handler is treated as having returned
//!   nothing (except for `tool_call`, above).
//! * The model is told which extension blocked a call only through the reason; the
//!   `extension_error` event and the `tracing` log say which one failed.
//!
//! ```
//! use pi_engine::agent_session::AgentSession;
//! use pi_engine::extensions::{Extension, InputAction};
//! use pi_engine::providers::faux::{FauxProvider, FauxResponse};
//! use pi_engine::session::SessionManager;
//! use pi_engine::ApiProvider;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let quick = Extension::new("input-transform", |pi| {
//!     pi.on_input(|event, _ctx| async move {
//!         Ok(event.text.strip_prefix("?quick ").map(|q| {
//!             InputAction::transform(format!("Respond briefly in 1-2 sentences: {q}"))
//!         }))
//!     });
//! });
//! let faux = FauxProvider::new();
//! faux.push(FauxResponse::text("A monoid in the category of endofunctors."));
//! let stream = faux.clone();
//! let session = AgentSession::builder(SessionManager::in_memory("/project"))
//!     .default_model(faux.model())
//!     .stream_fn(move |m, c, o| stream.stream(m, c, o))
//!     .extension(quick)
//!     .build()
//!     .unwrap();
//! session.prompt("?quick what is a monad").await.unwrap().into_result().unwrap();
//! let sent = &faux.requests()[0].context.messages[0];
//! assert!(format!("{sent:?}").contains("Respond briefly in 1-2 sentences: what is a monad"));
//! # }
//! ```
//!
//! The guide `docs/extensions.md` ([`guide::extensions`](crate::guide::extensions)) lists
//! every event, its payload, what it may return and how results combine.

mod api;
// What benches/extensions.rs measures. Not API: hidden, no stability promise.
#[doc(hidden)]
#[path = "bench.rs"]
pub mod __bench;
mod command;
mod context;
mod deadline;
mod events;
mod exec;
mod flag;
mod process;
mod provider;
mod render;
pub(crate) mod runner;
mod ui;

pub use api::{DEFAULT_HANDLER_TIMEOUT, Extension, ExtensionApi, HandlerError, HandlerResult};
pub use command::{CommandInfo, Completion, ShortcutInfo};
pub use context::{Delivery, ExtensionContext};
#[cfg(feature = "tools")]
pub use events::UserBashAction;
pub use events::{
    BeforeAgentStart, BeforeAgentStartEvent, BranchSummaryText, Cancel, CompactDecision,
    ContextEvent, DiscoveredResources, InputAction, InputEvent, InputSource, MessageEndEvent,
    ModelSelectEvent, ModelSelectSource, ProviderRequestEvent, ProviderResponseEvent, Resources,
    ResourcesDiscoverEvent, ResourcesReason, SessionBeforeCompactEvent, SessionBeforeForkEvent,
    SessionBeforeSwitchEvent, SessionBeforeTreeEvent, SessionCompactEvent, SessionShutdownEvent,
    SessionStartEvent, SessionStartReason, SessionTreeEvent, ShutdownReason, SwitchReason,
    ThinkingLevelSelectEvent, ToolCallEvent, ToolCallVerdict, ToolResultEvent, ToolResultPatch,
    TreeDecision, TreePreparation, UserBashEvent,
};
pub use exec::{ExecOptions, ExecResult, MAX_EXEC_OUTPUT};
pub use flag::{Flag, FlagInfo, FlagKind, FlagValue};
pub use process::{
    DEFAULT_MAX_LINE_BYTES, PROTOCOL_VERSION, ProcessCallError, ProcessExtension,
    ProcessExtensionError, ProcessExtensionOptions,
};
pub use provider::ProviderConfig;
pub use render::{MessageRenderOptions, RenderedMessage};
pub use ui::{DialogOptions, ExtensionUi, NoUi, NotifyKind, Ui};
