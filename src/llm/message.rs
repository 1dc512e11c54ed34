//! pi's message model: content blocks, the three LLM message roles, usage and cost, the
//! [`Context`] sent to a model and the [`Tool`]s it may call.
//!
//! Every type serializes to exactly the JSON pi 0.73.1 writes (camelCase fields, `role` and
//! `type` tags), so messages read from a pi session file or event stream round-trip through
//! these types unchanged: fields this crate does not model (written by a newer pi, or
//! legacy ones like `partialJson`) are kept in each struct's `extra` map and written back.
//!
//! The structs are `#[non_exhaustive]`; build them with their constructors and `with_*`
//! methods, and read their public fields directly.
//!
//! Values a newer pi may write are kept too: a content block of an unknown `type` reads as
//! [`AssistantContent::Unknown`] / [`Content::Unknown`] (the raw object), a stop reason this
//! crate does not know as [`StopReason::Unknown`]; both are written back unchanged. Providers
//! leave unknown blocks out of their requests (with a `tracing` warning) and the text helpers
//! ignore them. An unknown `role` is an error for [`Message`] (the LLM layer knows exactly three);
//! read session and agent messages as [`AgentMessage`](crate::agent::AgentMessage), which keeps
//! any other role as a custom message.
//!
//! ```
//! use pi_engine::{AssistantContent, Message, UserMessage};
//!
//! let user = UserMessage::text("What is 2 + 2?");
//! let json = serde_json::to_value(Message::from(user)).unwrap();
//! assert_eq!(json["role"], "user");
//! assert_eq!(json["content"], "What is 2 + 2?");
//!
//! let raw = r#"{"role":"assistant","content":[{"type":"text","text":"4"}],
//!   "api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",
//!   "usage":{"input":10,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":11,
//!            "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
//!   "stopReason":"stop","timestamp":1733234401000}"#;
//! let Message::Assistant(reply) = serde_json::from_str(raw).unwrap() else { unreachable!() };
//! assert_eq!(reply.text(), "4");
//! assert!(matches!(reply.content[0], AssistantContent::Text(_)));
//! ```

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub(crate) mod de;
use serde_json::{Map, Value};

use crate::llm::error::Error;

/// Fields of a wire object that this crate does not model, kept so that they are written back.
pub type Extra = Map<String, Value>;

/// Milliseconds since the Unix epoch, as pi stores message timestamps.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A text block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider metadata for replay (OpenAI Responses message id, as a legacy id or
    /// `{"v":1,"id":…,"phase":…}` JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl TextContent {
    /// A text block with `text`.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            text_signature: None,
            extra: Extra::new(),
        }
    }

    /// Sets the `textSignature`.
    #[must_use]
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        self.text_signature = Some(signature.into());
        self
    }
}

/// A reasoning ("thinking") block of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ThinkingContent {
    /// The reasoning text (a summary for providers that only expose summaries).
    pub thinking: String,
    /// What the provider needs to accept this block on replay: Anthropic's signature, the
    /// whole OpenAI Responses reasoning item as JSON, or the name of the delta field an
    /// OpenAI-compatible server used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// True for Anthropic `redacted_thinking`: the opaque payload is in `thinking_signature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ThinkingContent {
    /// A thinking block with `thinking`.
    pub fn new(thinking: impl Into<String>) -> Self {
        ThinkingContent {
            thinking: thinking.into(),
            thinking_signature: None,
            redacted: None,
            extra: Extra::new(),
        }
    }

    /// Sets the `thinkingSignature`.
    #[must_use]
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        self.thinking_signature = Some(signature.into());
        self
    }

    /// Marks the block as redacted (its payload is the signature).
    #[must_use]
    pub fn redacted(mut self) -> Self {
        self.redacted = Some(true);
        self
    }

    /// True when the block is redacted.
    pub fn is_redacted(&self) -> bool {
        self.redacted == Some(true)
    }
}

/// An image, base64-encoded.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ImageContent {
    /// Base64 data, without a `data:` prefix.
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ImageContent {
    /// An image from base64 `data` of type `mime_type`.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            extra: Extra::new(),
        }
    }
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolCall {
    /// The provider's id for this call; the tool result refers to it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, always a JSON object (possibly partial while streaming).
    pub arguments: Map<String, Value>,
    /// Google's thought signature (also used for OpenRouter encrypted reasoning details).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolCall {
    /// A call of tool `name` with `arguments` (a JSON object; anything else becomes `{}`).
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        let arguments = match arguments {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            thought_signature: None,
            extra: Extra::new(),
        }
    }
}

/// A block of user content or of a tool result: text or an image.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text(TextContent),
    /// An image.
    Image(ImageContent),
    /// A block of a type this crate does not know (written by a newer pi): the whole JSON
    /// object as read, `type` included, written back unchanged. Providers do not send it to a
    /// model (they skip it with a warning) and text helpers ignore it.
    #[serde(untagged)]
    Unknown(Extra),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(TextContent::new(text))
    }

    /// An image block.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image(ImageContent::new(data, mime_type))
    }

    /// The wire `type` of the block (`"text"`, `"image"`, or an unknown block's own `type`).
    pub fn block_type(&self) -> &str {
        match self {
            Content::Text(_) => "text",
            Content::Image(_) => "image",
            Content::Unknown(raw) => unknown_type(raw),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// A block of an assistant message: text, thinking or a tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum AssistantContent {
    /// Text.
    Text(TextContent),
    /// Reasoning.
    Thinking(ThinkingContent),
    /// A tool call.
    ToolCall(ToolCall),
    /// A block of a type this crate does not know (written by a newer pi): the whole JSON
    /// object as read, `type` included, written back unchanged. Providers do not send it to a
    /// model (they skip it with a warning), text helpers ignore it, and the agent loop does not
    /// treat it as a tool call.
    #[serde(untagged)]
    Unknown(Extra),
}

impl AssistantContent {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        AssistantContent::Text(TextContent::new(text))
    }

    /// A thinking block.
    pub fn thinking(thinking: impl Into<String>) -> Self {
        AssistantContent::Thinking(ThinkingContent::new(thinking))
    }

    /// A tool-call block.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        AssistantContent::ToolCall(ToolCall::new(id, name, arguments))
    }

    /// The wire `type` of the block (`"text"`, `"thinking"`, `"toolCall"`, or an unknown
    /// block's own `type`).
    pub fn block_type(&self) -> &str {
        match self {
            AssistantContent::Text(_) => "text",
            AssistantContent::Thinking(_) => "thinking",
            AssistantContent::ToolCall(_) => "toolCall",
            AssistantContent::Unknown(raw) => unknown_type(raw),
        }
    }
}

/// The `type` of an unknown block as read (`""` if it is somehow not a string).
fn unknown_type(raw: &Extra) -> &str {
    raw.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The content of a user message: a plain string, or a list of text and image blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UserContent {
    /// A plain string.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<Content>),
}

impl UserContent {
    /// All text of the content, blocks joined without a separator.
    pub fn text(&self) -> String {
        match self {
            UserContent::Text(s) => s.clone(),
            UserContent::Blocks(blocks) => blocks.iter().filter_map(Content::as_text).collect(),
        }
    }
}

impl From<String> for UserContent {
    fn from(s: String) -> Self {
        UserContent::Text(s)
    }
}

impl From<&str> for UserContent {
    fn from(s: &str) -> Self {
        UserContent::Text(s.to_owned())
    }
}

impl From<Vec<Content>> for UserContent {
    fn from(blocks: Vec<Content>) -> Self {
        UserContent::Blocks(blocks)
    }
}

/// A message from the user.
#[derive(Debug, Clone, PartialEq, Serialize)]
// Serialized with its role first, as pi writes it, on its own as in a `Message`.
#[serde(tag = "role", rename = "user", rename_all = "camelCase")]
#[non_exhaustive]
pub struct UserMessage {
    /// What the user said.
    pub content: UserContent,
    /// Unix milliseconds.
    pub timestamp: i64,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl UserMessage {
    /// A user message with `content`, stamped now.
    pub fn new(content: impl Into<UserContent>) -> Self {
        UserMessage {
            content: content.into(),
            timestamp: now_millis(),
            extra: Extra::new(),
        }
    }

    /// A user message whose content is a plain string.
    pub fn text(text: impl Into<String>) -> Self {
        UserMessage::new(UserContent::Text(text.into()))
    }

    /// A user message of blocks (text and images).
    pub fn blocks(blocks: Vec<Content>) -> Self {
        UserMessage::new(UserContent::Blocks(blocks))
    }

    /// Sets the timestamp (Unix milliseconds).
    #[must_use]
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }
}

/// Why the model stopped.
///
/// pi writes one of five names; a name this crate does not know (written by a newer pi, or a
/// custom provider) reads as [`StopReason::Unknown`] holding the raw string and is written back
/// unchanged, so a message carrying it stays in the session and in the context. The agent loop
/// treats an unknown reason as pi does: not a failure, so the turn ends normally (its tool
/// calls, if any, run). Not `Copy` since it can hold a string: clone it, or match by
/// reference.
///
/// ```
/// use pi_engine::StopReason;
///
/// let known: StopReason = serde_json::from_str(r#""toolUse""#).unwrap();
/// assert_eq!(known, StopReason::ToolUse);
/// let newer: StopReason = serde_json::from_str(r#""pauseTurn""#).unwrap();
/// assert_eq!(newer, StopReason::Unknown("pauseTurn".into()));
/// assert!(!newer.is_failure());
/// assert_eq!(serde_json::to_string(&newer).unwrap(), r#""pauseTurn""#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum StopReason {
    /// It finished its answer.
    #[default]
    Stop,
    /// It hit the output token limit.
    Length,
    /// It wants tools to run.
    ToolUse,
    /// The call failed; see `errorMessage`.
    Error,
    /// The call was cancelled.
    Aborted,
    /// A reason this crate does not know, as written. Reading never produces it for one of the
    /// five known names (use [`StopReason::from_wire`] to build one from a string).
    Unknown(Box<str>),
}

impl StopReason {
    /// The wire name (`"stop"`, `"toolUse"`, …; an unknown reason's own string).
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
            StopReason::Unknown(raw) => raw,
        }
    }

    /// The reason for a wire name: one of the five known ones, or [`StopReason::Unknown`].
    pub fn from_wire(name: &str) -> StopReason {
        match name {
            "stop" => StopReason::Stop,
            "length" => StopReason::Length,
            "toolUse" => StopReason::ToolUse,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            other => StopReason::Unknown(other.into()),
        }
    }

    /// True for `error` and `aborted` (an unknown reason is not a failure, as in pi).
    pub fn is_failure(&self) -> bool {
        matches!(self, StopReason::Error | StopReason::Aborted)
    }

    /// True for a reason this crate does not know.
    pub fn is_unknown(&self) -> bool {
        matches!(self, StopReason::Unknown(_))
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The dollar cost of a call, by token category.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Cost {
    /// Input tokens.
    #[serde(serialize_with = "crate::llm::json::js_f64")]
    pub input: f64,
    /// Output tokens.
    #[serde(serialize_with = "crate::llm::json::js_f64")]
    pub output: f64,
    /// Cache reads.
    #[serde(serialize_with = "crate::llm::json::js_f64")]
    pub cache_read: f64,
    /// Cache writes.
    #[serde(serialize_with = "crate::llm::json::js_f64")]
    pub cache_write: f64,
    /// The sum.
    #[serde(serialize_with = "crate::llm::json::js_f64")]
    pub total: f64,
}

/// Token counts and cost of one call. `input` excludes cache reads and writes.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Usage {
    /// Input tokens that were neither read from nor written to the cache.
    pub input: u64,
    /// Output tokens (including reasoning tokens).
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// `input + output + cacheRead + cacheWrite`. Absent in files of older pi versions;
    /// use [`Usage::total`] to read it either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Dollar cost.
    pub cost: Cost,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Usage {
    /// Usage with the four token counts; `totalTokens` is their sum and the cost is zero.
    pub fn new(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Self {
        Usage {
            input,
            output,
            cache_read,
            cache_write,
            total_tokens: Some(sum_counts(input, output, cache_read, cache_write)),
            cost: Cost::default(),
            extra: Extra::new(),
        }
    }

    /// `totalTokens`, or the sum of the four counts when it is absent (saturating at
    /// `u64::MAX`).
    pub fn total(&self) -> u64 {
        self.total_tokens.unwrap_or_else(|| self.sum())
    }

    /// Sets `totalTokens` to the sum of the four counts (saturating at `u64::MAX`).
    pub fn recompute_total(&mut self) {
        self.total_tokens = Some(self.sum());
    }

    fn sum(&self) -> u64 {
        sum_counts(self.input, self.output, self.cache_read, self.cache_write)
    }
}

/// The sum of four token counts, saturating: a provider's absurd count must not overflow.
fn sum_counts(a: u64, b: u64, c: u64, d: u64) -> u64 {
    a.saturating_add(b).saturating_add(c).saturating_add(d)
}

/// A reply from the model, complete or (while streaming) partial.
#[derive(Debug, Clone, PartialEq, Serialize)]
// Serialized with its role first, as pi writes it, on its own as in a `Message`.
#[serde(tag = "role", rename = "assistant", rename_all = "camelCase")]
#[non_exhaustive]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks, in the order the model produced them.
    pub content: Vec<AssistantContent>,
    /// The api that produced it (`anthropic-messages`, …).
    pub api: String,
    /// The provider (`anthropic`, `openrouter`, …).
    pub provider: String,
    /// The model id that was requested.
    pub model: String,
    /// The concrete model that answered, when it differs from `model` (e.g. OpenRouter `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// The provider's id for this response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Transport diagnostics pi records (kept as written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<Value>>,
    /// Tokens and cost.
    pub usage: Usage,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// What went wrong, for `error` and `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Unix milliseconds.
    pub timestamp: i64,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
    /// The typed error behind `error_message`, when this process produced it.
    #[serde(skip)]
    pub(crate) error_detail: ErrorDetail,
}

/// The typed error attached to a message this process produced. Not serialized, and
/// ignored by equality: two messages that serialize the same are equal.
#[derive(Clone, Default)]
pub(crate) struct ErrorDetail(pub(crate) Option<Error>);

impl PartialEq for ErrorDetail {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for ErrorDetail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(e) => write!(f, "{e:?}"),
            None => f.write_str("None"),
        }
    }
}

impl AssistantMessage {
    /// An empty message for `api`, `provider` and `model`, stamped now, with stop reason `stop`.
    pub fn new(
        api: impl Into<String>,
        provider: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        AssistantMessage {
            content: Vec::new(),
            api: api.into(),
            provider: provider.into(),
            model: model.into(),
            response_model: None,
            response_id: None,
            diagnostics: None,
            usage: Usage::new(0, 0, 0, 0),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp: now_millis(),
            extra: Extra::new(),
            error_detail: ErrorDetail::default(),
        }
    }

    /// Sets the content blocks.
    #[must_use]
    pub fn with_content(mut self, content: Vec<AssistantContent>) -> Self {
        self.content = content;
        self
    }

    /// Sets the stop reason.
    #[must_use]
    pub fn with_stop_reason(mut self, stop_reason: StopReason) -> Self {
        self.stop_reason = stop_reason;
        self
    }

    /// Sets the usage.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Sets the timestamp (Unix milliseconds).
    #[must_use]
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// Sets the response id.
    #[must_use]
    pub fn with_response_id(mut self, id: impl Into<String>) -> Self {
        self.response_id = Some(id.into());
        self
    }

    /// Marks the message failed with `error`: stop reason `aborted` when the error is an
    /// abort, else `error`, and `errorMessage` set to the error's message. Partial content
    /// is kept.
    #[must_use]
    pub fn with_error(mut self, error: Error) -> Self {
        self.set_error(error);
        self
    }

    /// In-place form of [`with_error`](Self::with_error).
    pub fn set_error(&mut self, error: Error) {
        self.stop_reason = if error.is_aborted() {
            StopReason::Aborted
        } else {
            StopReason::Error
        };
        self.error_message = Some(error.message().to_owned());
        self.error_detail = ErrorDetail(Some(error));
    }

    /// Makes `self` equal to `other`, keeping the blocks that are already equal instead of
    /// copying them: a stream's final message repeats the content it streamed, and a long
    /// reply should not exist three times in memory at its end.
    pub(crate) fn assign_from(&mut self, other: &AssistantMessage) {
        let AssistantMessage {
            content,
            api,
            provider,
            model,
            response_model,
            response_id,
            diagnostics,
            usage,
            stop_reason,
            error_message,
            timestamp,
            extra,
            error_detail,
        } = other;
        self.content.truncate(content.len());
        for (i, block) in content.iter().enumerate() {
            match (self.content.get_mut(i), block) {
                (Some(mine), _) if identical_blocks(mine, block) => {}
                // Same text, new signature (the usual end of a block): the text stays.
                (Some(AssistantContent::Text(mine)), AssistantContent::Text(theirs))
                    if mine.text == theirs.text =>
                {
                    mine.text_signature.clone_from(&theirs.text_signature);
                    mine.extra.clone_from(&theirs.extra);
                }
                (Some(AssistantContent::Thinking(mine)), AssistantContent::Thinking(theirs))
                    if mine.thinking == theirs.thinking =>
                {
                    mine.thinking_signature
                        .clone_from(&theirs.thinking_signature);
                    mine.redacted = theirs.redacted;
                    mine.extra.clone_from(&theirs.extra);
                }
                (Some(mine), _) => *mine = block.clone(),
                (None, _) => self.content.push(block.clone()),
            }
        }
        self.api.clone_from(api);
        self.provider.clone_from(provider);
        self.model.clone_from(model);
        self.response_model.clone_from(response_model);
        self.response_id.clone_from(response_id);
        self.diagnostics.clone_from(diagnostics);
        self.usage.clone_from(usage);
        self.stop_reason.clone_from(stop_reason);
        self.error_message.clone_from(error_message);
        self.timestamp = *timestamp;
        self.extra.clone_from(extra);
        self.error_detail.clone_from(error_detail);
    }

    /// The typed error of a failed message (`stopReason` `error` or `aborted`), or `None`.
    ///
    /// For a message this process produced, the error carries the HTTP status, request id
    /// and `Retry-After` the provider sent; for a message read from elsewhere it is
    /// classified from `errorMessage` with pi's patterns.
    pub fn error(&self) -> Option<Error> {
        if !self.stop_reason.is_failure() {
            return None;
        }
        if let Some(e) = &self.error_detail.0 {
            return Some(e.clone());
        }
        let message = self.error_message.clone().unwrap_or_default();
        Some(match self.stop_reason {
            StopReason::Aborted => Error::new(crate::ErrorKind::Aborted, message),
            _ => Error::from_message(message),
        })
    }

    /// `Ok(self)` for a successful message, the typed error otherwise.
    pub fn into_result(self) -> Result<AssistantMessage, Error> {
        match self.error() {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }

    /// All text blocks, concatenated.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                AssistantContent::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|c| match c {
            AssistantContent::ToolCall(t) => Some(t),
            _ => None,
        })
    }
}

/// The result of running a tool, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
// Serialized with its role first, as pi writes it, on its own as in a `Message`.
#[serde(tag = "role", rename = "toolResult", rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// What the model sees.
    pub content: Vec<Content>,
    /// Structured data for the application (not sent to the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// True when the tool failed.
    pub is_error: bool,
    /// Unix milliseconds.
    pub timestamp: i64,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolResultMessage {
    /// A result for call `tool_call_id` of `tool_name`, stamped now.
    pub fn new(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: Vec<Content>,
        is_error: bool,
    ) -> Self {
        ToolResultMessage {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content,
            details: None,
            is_error,
            timestamp: now_millis(),
            extra: Extra::new(),
        }
    }

    /// Sets `details`.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Sets the timestamp (Unix milliseconds).
    #[must_use]
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// All text blocks, concatenated.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(Content::as_text).collect()
    }
}

/// A message an LLM understands: user, assistant or tool result.
///
/// Reading a message of another `role` is an error: messages of other roles (pi's session
/// roles, a newer pi's) are [`AgentMessage::Custom`](crate::agent::AgentMessage::Custom), and
/// [`convert_to_llm`](crate::session::convert_to_llm) decides what the model sees of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
// Each message type writes its own `role`.
#[serde(untagged)]
#[non_exhaustive]
pub enum Message {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// A tool's result.
    ToolResult(ToolResultMessage),
}

impl Message {
    /// The wire role: `user`, `assistant` or `toolResult`.
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        }
    }

    /// The timestamp (Unix milliseconds).
    pub fn timestamp(&self) -> i64 {
        match self {
            Message::User(m) => m.timestamp,
            Message::Assistant(m) => m.timestamp,
            Message::ToolResult(m) => m.timestamp,
        }
    }
}

impl From<UserMessage> for Message {
    fn from(m: UserMessage) -> Self {
        Message::User(m)
    }
}

impl From<AssistantMessage> for Message {
    fn from(m: AssistantMessage) -> Self {
        Message::Assistant(m)
    }
}

impl From<ToolResultMessage> for Message {
    fn from(m: ToolResultMessage) -> Self {
        Message::ToolResult(m)
    }
}

/// A tool the model may call: a name, a description and JSON-Schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A JSON Schema (an object schema) for the arguments.
    pub parameters: Value,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Tool {
    /// A tool with a hand-written JSON Schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters,
            extra: Extra::new(),
        }
    }
}

/// What is sent to the model: an optional system prompt, the messages and the tools.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Context {
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The conversation so far.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// The tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
}

impl Context {
    /// An empty context.
    pub fn new() -> Self {
        Context::default()
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Appends a message.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<Message>) -> Self {
        self.messages.push(message.into());
        self
    }

    /// Sets the tools.
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<Tool>) -> Self {
        self.tools = Some(tools);
        self
    }
}

/// True when two blocks serialize the same: `==`, and also the same key order in every JSON
/// object and the same sign of zero (`==` ignores both, JSON text does not).
fn identical_blocks(a: &AssistantContent, b: &AssistantContent) -> bool {
    match (a, b) {
        (AssistantContent::Text(a), AssistantContent::Text(b)) => {
            let TextContent {
                text,
                text_signature,
                extra,
            } = a;
            *text == b.text
                && *text_signature == b.text_signature
                && identical_maps(extra, &b.extra)
        }
        (AssistantContent::Thinking(a), AssistantContent::Thinking(b)) => {
            let ThinkingContent {
                thinking,
                thinking_signature,
                redacted,
                extra,
            } = a;
            *thinking == b.thinking
                && *thinking_signature == b.thinking_signature
                && *redacted == b.redacted
                && identical_maps(extra, &b.extra)
        }
        (AssistantContent::ToolCall(a), AssistantContent::ToolCall(b)) => {
            identical_tool_calls(a, b)
        }
        (AssistantContent::Unknown(a), AssistantContent::Unknown(b)) => identical_maps(a, b),
        _ => false,
    }
}

/// [`identical_blocks`] for tool calls.
pub(crate) fn identical_tool_calls(a: &ToolCall, b: &ToolCall) -> bool {
    let ToolCall {
        id,
        name,
        arguments,
        thought_signature,
        extra,
    } = a;
    *id == b.id
        && *name == b.name
        && *thought_signature == b.thought_signature
        && identical_maps(arguments, &b.arguments)
        && identical_maps(extra, &b.extra)
}

fn identical_maps(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && identical_values(va, vb))
}

fn identical_values(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => identical_maps(a, b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| identical_values(a, b))
        }
        (Value::Number(x), Value::Number(y)) => {
            x == y && (!x.is_f64() || x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assign_from_keeps_only_blocks_that_serialize_the_same() {
        let call = |args: Value| AssistantContent::ToolCall(ToolCall::new("c1", "f", args));
        let ab: Value = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
        let ba: Value = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
        // `==` ignores key order and the sign of zero; the JSON does not.
        assert_eq!(call(ab.clone()), call(ba.clone()));
        assert!(!identical_blocks(&call(ab.clone()), &call(ba.clone())));
        assert!(identical_blocks(&call(ab.clone()), &call(ab.clone())));
        assert!(!identical_blocks(
            &call(serde_json::json!({"x": 0.0})),
            &call(serde_json::json!({"x": -0.0}))
        ));
        let mut mine = AssistantMessage::new("a", "p", "m").with_content(vec![call(ab)]);
        let theirs = AssistantMessage::new("a", "p", "m").with_content(vec![call(ba)]);
        mine.assign_from(&theirs);
        assert_eq!(
            serde_json::to_string(&mine).unwrap(),
            serde_json::to_string(&theirs).unwrap()
        );
    }
    use serde_json::json;

    #[test]
    fn unknown_fields_round_trip() {
        let raw = json!({
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "a"},
                 "partialJson": "{\"path\":\"a\"}"},
                {"type": "thinking", "thinking": "hm", "thinkingSignature": "sig", "futureField": 1}
            ],
            "api": "anthropic-messages", "provider": "anthropic", "model": "m",
            "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0,
                      "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3}},
            "stopReason": "toolUse", "timestamp": 5, "newTopLevel": {"x": true}
        });
        let msg: Message = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(serde_json::to_value(&msg).unwrap(), raw);
    }

    #[test]
    fn user_content_string_or_blocks() {
        let m: Message =
            serde_json::from_value(json!({"role": "user", "content": "hi", "timestamp": 1}))
                .unwrap();
        let Message::User(u) = &m else { panic!() };
        assert_eq!(u.content, UserContent::Text("hi".into()));
        let m: Message = serde_json::from_value(json!({"role": "user", "content": [
            {"type": "text", "text": "a"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        ], "timestamp": 1}))
        .unwrap();
        let Message::User(u) = &m else { panic!() };
        assert_eq!(u.content.text(), "a");
    }

    #[test]
    fn error_round_trip_through_message() {
        let m = AssistantMessage::new("a", "p", "m")
            .with_error(Error::from_message("429 rate limit exceeded"));
        assert_eq!(m.stop_reason, StopReason::Error);
        let e = m.error().unwrap();
        assert!(e.is_rate_limited());
        let back: AssistantMessage =
            serde_json::from_value(serde_json::to_value(&m).unwrap()).unwrap();
        assert!(back.error().unwrap().is_rate_limited());
        assert_eq!(back, m);
    }
}
