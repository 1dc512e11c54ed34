//! Decoding `streamGenerateContent?alt=sse`: each SSE event is a whole
//! `GenerateContentResponse` chunk. The parts of its first candidate become pi's events:
//! text and `thought: true` parts open text and thinking blocks (a new block when the kind
//! changes), a complete `functionCall` is `toolcall_start` + one `toolcall_delta` with the
//! whole JSON + `toolcall_end`, and Vertex's streamed arguments (`partialArgs`,
//! `willContinue`) are one tool call whose arguments stream as they arrive.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::fast_chunk::{TextChunk, text_chunk};
use super::partial_args::{PartialArgs, WireArg};
use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::AssistantMessageEvent as E;
use crate::llm::json::js;
use crate::llm::message::{AssistantContent, AssistantMessage, StopReason, ToolCall, Usage};
use crate::llm::model::{Model, ModelCost};
use crate::providers::http::{Decoder, Emit, stream_event_error};
use crate::providers::sse::SseEvent;

/// Counter of synthesized tool-call ids (`<name>_<ms>_<n>`), process-wide as in pi.
static TOOL_CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

/// An id for a call Google sent without one (or with one already used in the message).
fn synthesize_id(name: Option<&str>) -> String {
    let n = TOOL_CALL_COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
    // pi interpolates a missing name as "undefined".
    format!(
        "{}_{}_{n}",
        name.unwrap_or("undefined"),
        crate::llm::message::now_millis()
    )
}

// ------------------------------------------------------------------------------------------
// Wire types: only what is read, borrowed where possible.

#[derive(Debug, Deserialize)]
struct WireChunk<'a> {
    #[serde(default, borrow, deserialize_with = "first_candidate")]
    candidates: Option<WireCandidate<'a>>,
    #[serde(default, rename = "usageMetadata")]
    usage_metadata: Option<WireUsage>,
    #[serde(default, borrow, rename = "responseId")]
    response_id: Option<Cow<'a, str>>,
    #[serde(default, rename = "promptFeedback")]
    prompt_feedback: Option<Box<WirePromptFeedback>>,
    /// An error reported inside the stream.
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
struct WireCandidate<'a> {
    #[serde(default, borrow)]
    content: Option<WireContent<'a>>,
    #[serde(default, borrow, rename = "finishReason")]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default, rename = "finishMessage")]
    finish_message: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireContent<'a> {
    #[serde(default, borrow)]
    parts: Option<Vec<WirePart<'a>>>,
}

#[derive(Debug, Deserialize)]
struct WirePart<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default, borrow, rename = "thoughtSignature")]
    thought_signature: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "functionCall")]
    function_call: Option<Box<WireFunctionCall<'a>>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireFunctionCall<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default, borrow)]
    partial_args: Option<Vec<WireArg<'a>>>,
    #[serde(default)]
    will_continue: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    prompt_token_count: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    cached_content_token_count: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    candidates_token_count: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    thoughts_token_count: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    total_token_count: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
    #[serde(default)]
    block_reason_message: Option<String>,
}

/// The first element of `candidates` (pi reads only `candidates[0]`); the others are
/// skipped without being built.
fn first_candidate<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<WireCandidate<'de>>, D::Error> {
    struct First;
    impl<'de> Visitor<'de> for First {
        type Value = Option<WireCandidate<'de>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of candidates")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let first = seq.next_element::<WireCandidate<'de>>()?;
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }
    d.deserialize_any(First)
}

// ------------------------------------------------------------------------------------------
// The decoder

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
}

/// The text or thinking block parts are appended to.
#[derive(Debug)]
struct OpenBlock {
    kind: BlockKind,
    content_index: usize,
}

/// A function call whose arguments are still streaming (`willContinue`).
#[derive(Debug)]
struct StreamingCall {
    content_index: usize,
    id: String,
    name: String,
    signature: Option<String>,
    args: PartialArgs,
}

/// Decodes a Gemini / Vertex stream.
#[derive(Debug)]
pub(crate) struct GoogleDecoder {
    cost: ModelCost,
    usage: Usage,
    response_id: Option<String>,
    stop_reason: StopReason,
    /// A finish reason that makes the reply a failure (`SAFETY`, `RECITATION`, …).
    failed_stop: Option<Error>,
    saw_finish: bool,
    /// Content blocks started so far.
    blocks: usize,
    open: Option<OpenBlock>,
    streaming: Option<StreamingCall>,
    /// Text pushed for the open block during the current SSE event (not in
    /// [`Emit::message`] yet).
    pending: String,
    /// The last non-empty signature of each text or thinking block.
    signatures: Vec<(usize, String)>,
    /// Ids of the tool calls of this message.
    tool_ids: Vec<String>,
    /// The latest `usageMetadata`, when it came with a chunk read by the fast path (empty
    /// once read).
    usage_raw: Vec<u8>,
}

impl GoogleDecoder {
    pub(crate) fn new(model: &Model) -> Self {
        GoogleDecoder {
            cost: model.cost,
            usage: Usage::new(0, 0, 0, 0),
            response_id: None,
            stop_reason: StopReason::Stop,
            failed_stop: None,
            saw_finish: false,
            blocks: 0,
            open: None,
            streaming: None,
            pending: String::new(),
            signatures: Vec::new(),
            tool_ids: Vec::new(),
            usage_raw: Vec::new(),
        }
    }

    fn next_index(&mut self) -> usize {
        let index = self.blocks;
        self.blocks += 1;
        index
    }

    /// Ends the open text or thinking block.
    fn end_block(&mut self, out: &mut Emit<'_>) {
        let Some(block) = self.open.take() else {
            return;
        };
        let ci = block.content_index;
        let mut content = match (block.kind, out.message().content.get(ci)) {
            (BlockKind::Text, Some(AssistantContent::Text(t))) => t.text.clone(),
            (BlockKind::Thinking, Some(AssistantContent::Thinking(t))) => t.thinking.clone(),
            _ => String::new(),
        };
        content.push_str(&self.pending);
        self.pending.clear();
        out.push(match block.kind {
            BlockKind::Text => E::TextEnd {
                content_index: ci,
                content,
            },
            BlockKind::Thinking => E::ThinkingEnd {
                content_index: ci,
                content,
            },
        });
    }

    /// A text part. `more_parts`: other parts follow in the same chunk (then the text is
    /// also kept in `pending`, for the block's end event).
    fn on_text(
        &mut self,
        text: Cow<'_, str>,
        thought: bool,
        signature: Option<&str>,
        more_parts: bool,
        out: &mut Emit<'_>,
    ) {
        self.close_call(out);
        let kind = if thought {
            BlockKind::Thinking
        } else {
            BlockKind::Text
        };
        if self.open.as_ref().is_none_or(|b| b.kind != kind) {
            self.end_block(out);
            let content_index = self.next_index();
            out.push(match kind {
                BlockKind::Text => E::TextStart { content_index },
                BlockKind::Thinking => E::ThinkingStart { content_index },
            });
            self.open = Some(OpenBlock {
                kind,
                content_index,
            });
        }
        let ci = self.open.as_ref().map_or(0, |b| b.content_index);
        if let Some(sig) = signature.filter(|s| !s.is_empty()) {
            match self.signatures.last_mut() {
                Some((index, kept)) if *index == ci => sig.clone_into(kept),
                _ => self.signatures.push((ci, sig.to_owned())),
            }
        }
        if more_parts {
            self.pending.push_str(&text);
        }
        let delta = text.into_owned();
        out.push(match kind {
            BlockKind::Text => E::TextDelta {
                content_index: ci,
                delta,
            },
            BlockKind::Thinking => E::ThinkingDelta {
                content_index: ci,
                delta,
            },
        });
    }

    /// The id for a call: Google's, unless missing or already used in this message.
    fn call_id(&mut self, provided: Option<String>, name: Option<&str>) -> String {
        let id = match provided.filter(|id| !id.is_empty() && !self.tool_ids.contains(id)) {
            Some(id) => id,
            None => synthesize_id(name),
        };
        self.tool_ids.push(id.clone());
        id
    }

    fn on_function_call(
        &mut self,
        mut call: WireFunctionCall<'_>,
        signature: Option<&str>,
        out: &mut Emit<'_>,
    ) {
        let signature = signature.filter(|s| !s.is_empty());
        let continues = call.will_continue == Some(true);
        if self.streaming.is_some() && call.name.is_none() {
            // The next fragments of the call being streamed.
            self.continue_call(&call, signature, out);
            return;
        }
        // A new call ends whatever was open.
        self.close_call(out);
        let is_empty = call.name.is_none()
            && call.id.is_none()
            && call.args.is_none()
            && call.partial_args.is_none();
        if is_empty {
            // A bare terminator with nothing open carries nothing.
            return;
        }
        self.end_block(out);
        let content_index = self.next_index();
        let id = self.call_id(call.id.take(), call.name.as_deref());
        let name = call.name.take().unwrap_or_default();
        out.push(E::ToolcallStart {
            content_index,
            id: id.clone(),
            tool_name: name.clone(),
        });
        if continues || call.partial_args.is_some() {
            let initial = match call.args.take() {
                Some(Value::Object(map)) => map,
                _ => Map::new(),
            };
            let mut delta = String::new();
            let args = PartialArgs::new(initial, &mut delta);
            if !delta.is_empty() {
                out.push(E::ToolcallDelta {
                    content_index,
                    delta,
                });
            }
            self.streaming = Some(StreamingCall {
                content_index,
                id,
                name,
                signature: signature.map(str::to_owned),
                args,
            });
            self.continue_call(&call, None, out);
            return;
        }
        // A complete call: its whole arguments at once.
        let arguments = call.args.unwrap_or_else(|| Value::Object(Map::new()));
        out.push(E::ToolcallDelta {
            content_index,
            delta: js::to_string(&arguments),
        });
        let mut tool_call = ToolCall::new(id, name, arguments);
        tool_call.thought_signature = signature.map(str::to_owned);
        out.push(E::ToolcallEnd {
            content_index,
            tool_call,
        });
    }

    /// Applies a part's argument fragments to the streaming call; ends the call unless the
    /// part says more follows.
    fn continue_call(
        &mut self,
        call: &WireFunctionCall<'_>,
        signature: Option<&str>,
        out: &mut Emit<'_>,
    ) {
        let Some(open) = self.streaming.as_mut() else {
            return;
        };
        if let Some(sig) = signature {
            open.signature = Some(sig.to_owned());
        }
        let mut delta = String::new();
        for arg in call.partial_args.iter().flatten() {
            open.args.apply(arg, &mut delta);
        }
        if !delta.is_empty() {
            out.push(E::ToolcallDelta {
                content_index: open.content_index,
                delta,
            });
        }
        if call.will_continue != Some(true) {
            self.close_call(out);
        }
    }

    /// Ends the streaming call, if any: the closing text, then `toolcall_end`.
    fn close_call(&mut self, out: &mut Emit<'_>) {
        let Some(call) = self.streaming.take() else {
            return;
        };
        let mut delta = String::new();
        let arguments = call.args.finish(&mut delta);
        if !delta.is_empty() {
            out.push(E::ToolcallDelta {
                content_index: call.content_index,
                delta,
            });
        }
        let mut tool_call = ToolCall::new(call.id, call.name, Value::Object(arguments));
        tool_call.thought_signature = call.signature;
        out.push(E::ToolcallEnd {
            content_index: call.content_index,
            tool_call,
        });
    }

    /// pi's arithmetic: cached tokens are not input, thoughts are output, the total is
    /// Google's.
    fn set_usage(&mut self, u: &WireUsage) {
        self.usage_raw.clear();
        let prompt = u.prompt_token_count.unwrap_or(0);
        let cached = u.cached_content_token_count.unwrap_or(0);
        self.usage.input = prompt.saturating_sub(cached);
        self.usage.output = u
            .candidates_token_count
            .unwrap_or(0)
            .saturating_add(u.thoughts_token_count.unwrap_or(0));
        self.usage.cache_read = cached;
        self.usage.cache_write = 0;
        self.usage.total_tokens = Some(u.total_token_count.unwrap_or(0));
    }

    /// Reads the `usageMetadata` the fast path kept raw, if it is the latest.
    fn read_raw_usage(&mut self) -> Result<(), Error> {
        if self.usage_raw.is_empty() {
            return Ok(());
        }
        let parsed = serde_json::from_slice::<WireUsage>(&self.usage_raw);
        self.usage_raw.clear();
        match parsed {
            Ok(u) => {
                self.set_usage(&u);
                Ok(())
            }
            Err(e) => Err(Error::new(
                ErrorKind::InvalidResponse,
                format!("Could not parse Gemini usageMetadata: {e}"),
            )),
        }
    }

    /// The common chunk, read by [`fast_chunk::text_chunk`].
    fn handle_text(&mut self, chunk: TextChunk<'_>, out: &mut Emit<'_>) {
        if self.response_id.is_none()
            && let Some(id) = chunk.response_id.filter(|id| !id.is_empty())
        {
            self.response_id = Some(id.to_owned());
        }
        self.on_text(chunk.text, chunk.thought, None, false, out);
        if let Some(raw) = chunk.usage {
            // Kept raw: only the last one counts, read at the end.
            self.usage_raw.clear();
            self.usage_raw.extend_from_slice(raw);
        }
    }

    fn handle(&mut self, chunk: WireChunk<'_>, out: &mut Emit<'_>) -> Result<(), Error> {
        if self.response_id.is_none()
            && let Some(id) = chunk.response_id.as_deref().filter(|id| !id.is_empty())
        {
            self.response_id = Some(id.to_owned());
        }
        let candidate = chunk.candidates;
        let (parts, finish) = match candidate {
            Some(c) => (
                c.content.and_then(|c| c.parts).unwrap_or_default(),
                c.finish_reason.map(|r| (r, c.finish_message)),
            ),
            None => (Vec::new(), None),
        };
        let count = parts.len();
        for (i, mut part) in parts.into_iter().enumerate() {
            if let Some(text) = part.text.take() {
                let thought = part.thought == Some(true);
                let signature = part.thought_signature.as_deref();
                self.on_text(text, thought, signature, i + 1 < count, out);
            }
            if let Some(call) = part.function_call.take() {
                self.on_function_call(*call, part.thought_signature.as_deref(), out);
            }
        }
        if let Some((reason, message)) = finish {
            self.saw_finish = true;
            match map_finish_reason(&reason, message.as_deref())? {
                Ok(stop) => self.stop_reason = stop,
                Err(error) => {
                    self.stop_reason = StopReason::Error;
                    self.failed_stop = Some(error);
                }
            }
            if !self.tool_ids.is_empty() {
                self.stop_reason = StopReason::ToolUse;
                self.failed_stop = None;
            }
        }
        if let Some(u) = chunk.usage_metadata {
            self.set_usage(&u);
        }
        if let Some(feedback) = chunk.prompt_feedback
            && let Some(reason) = feedback.block_reason.filter(|r| !r.is_empty())
        {
            // pi ends such a reply as an empty success; it is a refusal.
            self.saw_finish = true;
            let mut message = format!("The prompt was blocked (reason: {reason})");
            if let Some(detail) = feedback.block_reason_message.filter(|m| !m.is_empty()) {
                message.push_str(": ");
                message.push_str(&detail);
            }
            return Err(Error::new(ErrorKind::Refused, message));
        }
        Ok(())
    }
}

/// pi's `mapStopReason`. The outer `Err` is a finish reason pi does not know (the stream
/// ends at once, "Unhandled stop reason: …"); the inner `Err` a known reason that makes the
/// reply a failure, told with what Google said.
fn map_finish_reason(
    reason: &str,
    message: Option<&str>,
) -> Result<Result<StopReason, Error>, Error> {
    let with_message = |mut text: String| {
        if let Some(m) = message.filter(|m| !m.is_empty()) {
            text.push_str(": ");
            text.push_str(m);
        }
        text
    };
    Ok(match reason {
        "STOP" => Ok(StopReason::Stop),
        "MAX_TOKENS" => Ok(StopReason::Length),
        "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "SAFETY"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "RECITATION" => Err(Error::new(
            ErrorKind::Refused,
            with_message(format!(
                "The response was blocked (finish reason: {reason})"
            )),
        )),
        "IMAGE_OTHER"
        | "FINISH_REASON_UNSPECIFIED"
        | "OTHER"
        | "LANGUAGE"
        | "MALFORMED_FUNCTION_CALL"
        | "UNEXPECTED_TOOL_CALL"
        | "NO_IMAGE" => Err(Error::new(
            ErrorKind::Provider,
            with_message(format!("The model stopped with finish reason {reason}")),
        )),
        other => {
            return Err(Error::from_message(format!(
                "Unhandled stop reason: {other}"
            )));
        }
    })
}

impl Decoder for GoogleDecoder {
    fn on_event(&mut self, sse: SseEvent<'_>, out: &mut Emit<'_>) -> Result<(), Error> {
        self.pending.clear();
        let data = sse.data();
        if data.trim_ascii().is_empty() {
            return Ok(());
        }
        if let Some(chunk) = text_chunk(data, self.response_id.is_none()) {
            self.handle_text(chunk, out);
            return Ok(());
        }
        match serde_json::from_slice::<WireChunk<'_>>(data) {
            Ok(chunk) if chunk.error.is_some() => Err(stream_event_error(data)),
            Ok(chunk) => self.handle(chunk, out),
            Err(e) => Err(Error::new(
                ErrorKind::InvalidResponse,
                format!(
                    "Could not parse Gemini stream chunk: {e}; data={}",
                    clip(&String::from_utf8_lossy(data), 300)
                ),
            )),
        }
    }

    fn on_end(&mut self, out: &mut Emit<'_>) -> Result<(), Error> {
        self.pending.clear();
        self.close_call(out);
        self.end_block(out);
        self.read_raw_usage()?;
        if !self.saw_finish {
            return Err(Error::new(
                ErrorKind::InvalidResponse,
                "Gemini stream ended without a finish reason",
            ));
        }
        match self.failed_stop.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn is_complete(&self) -> bool {
        self.saw_finish
    }

    fn finish(&mut self, message: &mut AssistantMessage) {
        // A failed stream may end before `on_end`: keep the usage if it reads.
        let _ = self.read_raw_usage();
        for (index, signature) in &self.signatures {
            match message.content.get_mut(*index) {
                Some(AssistantContent::Text(t)) => t.text_signature = Some(signature.clone()),
                Some(AssistantContent::Thinking(t)) => {
                    t.thinking_signature = Some(signature.clone());
                }
                _ => {}
            }
        }
        message.response_id.clone_from(&self.response_id);
        message.stop_reason = self.stop_reason.clone();
        let mut usage = self.usage.clone();
        let prices = Model::new("", "", "", "").with_cost(self.cost);
        crate::llm::calculate_cost(&prices, &mut usage);
        message.usage = usage;
    }
}

fn clip(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}
