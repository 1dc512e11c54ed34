//! The events an extension handles, each with its payload and what a handler may return.
//! How several handlers' results combine is written on each result type (and in
//! `docs/extensions.md`).

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::agent::AgentMessage;
use crate::llm::message::{Content, ImageContent};
use crate::session::ExtensionMessage;

/// `tool_call`: the model asked for a tool, whose arguments passed validation; before it
/// runs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCallEvent {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The validated arguments.
    pub input: Map<String, Value>,
}

/// What a `tool_call` handler decides. Handlers run in registration order and the **first
/// block wins** (later handlers are not asked). A handler that fails, panics or passes its
/// deadline blocks the call too (fail closed, as pi), with the reason
/// `Extension failed, blocking execution: …`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ToolCallVerdict {
    /// Do not run the tool.
    pub block: bool,
    /// What the model is told (default: pi's `Tool execution was blocked`).
    pub reason: Option<String>,
}

impl ToolCallVerdict {
    /// Blocks the call; the model gets an error result with `reason`.
    pub fn block(reason: impl Into<String>) -> Self {
        ToolCallVerdict {
            block: true,
            reason: Some(reason.into()),
        }
    }
}

/// `tool_result`: a tool ran (or was blocked, or failed); before its result is recorded.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolResultEvent {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments it ran with.
    pub input: Map<String, Value>,
    /// What the model will see.
    pub content: Vec<Content>,
    /// The tool's details (`null` when it has none).
    pub details: Value,
    /// Whether the result is an error.
    pub is_error: bool,
}

/// Replacements of a tool result, field by field. **Chained**: each handler sees the result
/// as the handlers before it left it.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ToolResultPatch {
    /// Replaces the content.
    pub content: Option<Vec<Content>>,
    /// Replaces the details.
    pub details: Option<Value>,
    /// Replaces the error flag.
    pub is_error: Option<bool>,
}

impl ToolResultPatch {
    /// Replaces the content.
    #[must_use]
    pub fn with_content(mut self, content: Vec<Content>) -> Self {
        self.content = Some(content);
        self
    }
    /// Replaces the details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
    /// Replaces the error flag.
    #[must_use]
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = Some(is_error);
        self
    }
}

/// `context`: the messages about to be sent, before every model call (a copy: changing it
/// changes only this call). A handler returns the messages to send instead; **chained**.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ContextEvent {
    /// The messages, after the session's own context guard.
    pub messages: Vec<AgentMessage>,
}

/// Where a prompt came from (pi's `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum InputSource {
    /// Typed by a person in a front end ([`AgentSession::prompt`](crate::agent_session::AgentSession::prompt)).
    #[default]
    Interactive,
    /// From an RPC client.
    Rpc,
    /// Sent by an extension ([`ExtensionContext::send_user_message`](super::ExtensionContext::send_user_message)).
    Extension,
}

impl InputSource {
    /// pi's name of the source.
    pub fn as_str(self) -> &'static str {
        match self {
            InputSource::Interactive => "interactive",
            InputSource::Rpc => "rpc",
            InputSource::Extension => "extension",
        }
    }
}

/// `input`: a prompt arrived, before commands and templates are looked at.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InputEvent {
    /// The text.
    pub text: String,
    /// Its images.
    pub images: Vec<ImageContent>,
    /// Where it came from.
    pub source: InputSource,
}

/// What an `input` handler does with a prompt. Transforms **chain** (the next handler sees
/// the new text); `Handled` stops: no later handler runs and no model call is made.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum InputAction {
    /// Leave it as it is.
    #[default]
    Continue,
    /// Replace the text (and, when `Some`, the images).
    Transform {
        /// The new text.
        text: String,
        /// The new images.
        images: Option<Vec<ImageContent>>,
    },
    /// The extension answered it; nothing is sent.
    Handled,
}

impl InputAction {
    /// Replaces the text, keeping the images.
    pub fn transform(text: impl Into<String>) -> Self {
        InputAction::Transform {
            text: text.into(),
            images: None,
        }
    }
}

/// `before_agent_start`: a prompt is about to start a run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BeforeAgentStartEvent {
    /// The prompt's text.
    pub prompt: String,
    /// Its images.
    pub images: Vec<ImageContent>,
    /// The system prompt as the handlers before this one left it.
    pub system_prompt: String,
}

/// What a `before_agent_start` handler adds. Messages are **collected** from every handler
/// (in order, after the prompt); the system prompt is **chained** and applies to this run.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct BeforeAgentStart {
    /// A message to add to the context after the prompt (written as a `custom_message`).
    pub message: Option<ExtensionMessage>,
    /// The system prompt for this run.
    pub system_prompt: Option<String>,
}

impl BeforeAgentStart {
    /// Adds `message` after the prompt.
    #[must_use]
    pub fn with_message(mut self, message: ExtensionMessage) -> Self {
        self.message = Some(message);
        self
    }
    /// Sets the run's system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }
}

/// Why a session started (pi's `session_start.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionStartReason {
    /// The first use of a session handle.
    Startup,
    /// A new session replaced the old one.
    New,
}

/// `session_start`: the session is ready (before the first prompt or command of a new
/// `AgentSession`, and after [`AgentSession::request_new_session`](crate::agent_session::AgentSession::request_new_session)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionStartEvent {
    /// Why.
    pub reason: SessionStartReason,
    /// The file of the session this one replaced.
    pub previous_session_file: Option<PathBuf>,
}

/// Why the session is about to be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SwitchReason {
    /// A new, empty session.
    New,
}

/// `session_before_switch`: the session is about to be replaced.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionBeforeSwitchEvent {
    /// Why.
    pub reason: SwitchReason,
}

/// A `session_before_*` handler's answer: the **first cancel wins** and the operation is
/// not done. A handler that fails does not cancel (its error is reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Cancel {
    /// Do not go on.
    pub cancel: bool,
}

impl Cancel {
    /// Cancels the operation.
    pub fn now() -> Self {
        Cancel { cancel: true }
    }
}
