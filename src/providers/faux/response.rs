//! What a script holds: the responses queued, the requests seen, how replies are chunked.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::llm::message::{AssistantContent, AssistantMessage, Context, StopReason, Usage};
use crate::llm::model::Model;
use crate::llm::options::StreamOptions;
use crate::providers::faux::{FAUX_API, FAUX_MODEL_ID, FAUX_PROVIDER};

/// How replies are cut into deltas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Chunking {
    /// Pieces of `min..=max` "tokens" of four characters, sizes drawn from a seeded
    /// generator (pi's default is 3 to 5 tokens). Deterministic for a given seed.
    Tokens {
        /// Fewest tokens per delta.
        min: usize,
        /// Most tokens per delta.
        max: usize,
        /// Seed of the size generator.
        seed: u64,
    },
    /// Pieces of exactly this many characters (the last may be shorter).
    Chars(usize),
    /// Each block in one delta.
    Whole,
}

impl Default for Chunking {
    fn default() -> Self {
        Chunking::Tokens {
            min: 3,
            max: 5,
            seed: 0x5eed,
        }
    }
}

/// One call of the faux provider: what the agent or test sent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FauxRequest {
    /// Zero-based index of the call.
    pub index: usize,
    /// The model called.
    pub model: Model,
    /// The context sent.
    pub context: Context,
    /// The options (API keys stay redacted in `Debug`).
    pub options: StreamOptions,
}

type ResponseFn = Arc<dyn Fn(&FauxRequest) -> FauxResponse + Send + Sync>;

/// A scripted answer to one call.
#[derive(Clone)]
#[non_exhaustive]
pub enum FauxResponse {
    /// Stream this message. A `stopReason` of `error` or `aborted` streams the content and
    /// then ends with an `error` event carrying `errorMessage`: a failure mid-output.
    Message(AssistantMessage),
    /// Fail before any output: the only event is `error` with this message.
    Error(String),
    /// Compute the answer from the request.
    Respond(ResponseFn),
}

impl fmt::Debug for FauxResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FauxResponse::Message(m) => f.debug_tuple("Message").field(m).finish(),
            FauxResponse::Error(e) => f.debug_tuple("Error").field(e).finish(),
            FauxResponse::Respond(_) => f.write_str("Respond(..)"),
        }
    }
}

impl FauxResponse {
    /// A reply with one text block, stop reason `stop`.
    pub fn text(text: impl Into<String>) -> Self {
        FauxResponse::Message(faux_message(
            vec![AssistantContent::text(text)],
            StopReason::Stop,
        ))
    }

    /// A reply with `content`. The stop reason is `toolUse` when it holds a tool call, else
    /// `stop`.
    pub fn content(content: Vec<AssistantContent>) -> Self {
        let reason = if content
            .iter()
            .any(|c| matches!(c, AssistantContent::ToolCall(_)))
        {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        };
        FauxResponse::Message(faux_message(content, reason))
    }

    /// A reply that calls one tool (stop reason `toolUse`).
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        FauxResponse::content(vec![AssistantContent::tool_call(id, name, arguments)])
    }

    /// A failure before any output.
    pub fn error(message: impl Into<String>) -> Self {
        FauxResponse::Error(message.into())
    }

    /// A reply that streams `content` and then fails with `message` (stop reason `error`).
    pub fn fail_after(content: Vec<AssistantContent>, message: impl Into<String>) -> Self {
        let mut m = faux_message(content, StopReason::Error);
        m.error_message = Some(message.into());
        FauxResponse::Message(m)
    }

    /// An answer computed from the request when the call is made.
    pub fn respond(f: impl Fn(&FauxRequest) -> FauxResponse + Send + Sync + 'static) -> Self {
        FauxResponse::Respond(Arc::new(f))
    }

    /// Replaces the stop reason of a message response.
    #[must_use]
    pub fn with_stop_reason(self, reason: StopReason) -> Self {
        match self {
            FauxResponse::Message(m) => FauxResponse::Message(m.with_stop_reason(reason)),
            other => other,
        }
    }

    /// Sets the usage of a message response (otherwise it is estimated from the text).
    #[must_use]
    pub fn with_usage(self, usage: Usage) -> Self {
        match self {
            FauxResponse::Message(mut m) => {
                m.usage = usage;
                m.extra.insert(SCRIPTED_USAGE.into(), Value::Bool(true));
                FauxResponse::Message(m)
            }
            other => other,
        }
    }
}

impl From<AssistantMessage> for FauxResponse {
    fn from(m: AssistantMessage) -> Self {
        FauxResponse::Message(m)
    }
}

impl From<&str> for FauxResponse {
    fn from(s: &str) -> Self {
        FauxResponse::text(s)
    }
}

/// Marker (removed before streaming) that the script set the usage itself.
pub(super) const SCRIPTED_USAGE: &str = "__fauxScriptedUsage";

fn faux_message(content: Vec<AssistantContent>, reason: StopReason) -> AssistantMessage {
    AssistantMessage::new(FAUX_API, FAUX_PROVIDER, FAUX_MODEL_ID)
        .with_content(content)
        .with_stop_reason(reason)
}
