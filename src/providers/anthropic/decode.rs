//! Stream decoding: Anthropic's SSE events become [`AssistantMessageEvent`](E)s.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::AssistantMessageEvent as E;
use crate::llm::json::parse_streaming_json;
use crate::llm::message::{AssistantContent, AssistantMessage, StopReason, ToolCall, Usage};
use crate::llm::model::{Model, ModelCost};
use crate::providers::http::{Decoder, Emit, repair_json, stream_event_error};
use crate::providers::sse::SseEvent;

/// Text of a redacted thinking block (its payload is in the signature).
const REDACTED_THINKING: &str = "[Reasoning redacted]";

/// One SSE payload, flat: only the fields this decoder reads, borrowed from the bytes when
/// they need no unescaping. Kept small (rare parts boxed): serde builds and moves it once per
/// event, millions of times in a long reply.
#[derive(Debug, Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<WireDelta<'a>>,
    #[serde(default)]
    content_block: Option<Box<WireBlock>>,
    #[serde(default)]
    message: Option<Box<WireMessage>>,
    #[serde(default)]
    usage: Option<Box<WireUsage>>,
}

#[derive(Debug, Deserialize)]
struct WireDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    /// The payload of a text, thinking, input-JSON or signature delta (one per delta type).
    #[serde(
        default,
        borrow,
        alias = "thinking",
        alias = "partial_json",
        alias = "signature"
    )]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    stop_details: Option<Box<WireStopDetails>>,
}

/// Why the model refused (`message_delta.delta.stop_details`).
#[derive(Debug, Default, Deserialize)]
struct WireStopDetails {
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    explanation: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    data: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolCall,
}

/// A content block that has started and not stopped.
#[derive(Debug)]
struct OpenBlock {
    /// Anthropic's `index`.
    wire_index: u64,
    /// Index in the message content.
    content_index: usize,
    kind: BlockKind,
}

/// What the events do not carry about a thinking block.
#[derive(Debug)]
struct ThinkingMeta {
    content_index: usize,
    signature: String,
    redacted: bool,
}

/// Decodes Anthropic's SSE events.
#[derive(Debug)]
pub(crate) struct AnthropicDecoder {
    cost: ModelCost,
    /// With a subscription token: the context's tool names, to map Claude Code names back.
    oauth_tools: Option<Vec<String>>,
    usage: Usage,
    response_id: Option<String>,
    stop_reason: StopReason,
    /// A stop reason that makes the reply a failure (`refusal`, `sensitive`, unknown).
    failed_stop: Option<Error>,
    blocks: usize,
    open: Vec<OpenBlock>,
    thinking: Vec<ThinkingMeta>,
    saw_start: bool,
    saw_stop: bool,
}

impl AnthropicDecoder {
    pub(crate) fn new(cost: ModelCost, oauth_tools: Option<Vec<String>>) -> Self {
        AnthropicDecoder {
            cost,
            oauth_tools,
            usage: Usage::new(0, 0, 0, 0),
            response_id: None,
            stop_reason: StopReason::Stop,
            failed_stop: None,
            blocks: 0,
            open: Vec::new(),
            thinking: Vec::new(),
            saw_start: false,
            saw_stop: false,
        }
    }

    /// The open block for Anthropic's `index`; a later start at the same index wins.
    fn open_block(&self, wire_index: Option<u64>) -> Option<&OpenBlock> {
        let wire_index = wire_index?;
        self.open.iter().rev().find(|b| b.wire_index == wire_index)
    }

    /// Starts a block at Anthropic's `index`. A block still open at that index (a second
    /// `content_block_start` without a stop in between) is ended first, so that every block
    /// the consumer saw start gets its `*_end`.
    fn start_block(&mut self, wire_index: u64, kind: BlockKind, out: &mut Emit<'_>) -> usize {
        if let Some(position) = self.open.iter().rposition(|b| b.wire_index == wire_index) {
            let block = self.open.remove(position);
            tracing::warn!(
                index = wire_index,
                "Anthropic stream started a block at an index whose block is still open; ending that one"
            );
            if let Some(end) = self.end_event(&block, out) {
                out.push(end);
            }
        }
        let content_index = self.blocks;
        self.blocks += 1;
        self.open.push(OpenBlock {
            wire_index,
            content_index,
            kind,
        });
        content_index
    }

    /// The `*_end` of `block`, from the message as the consumer has it.
    fn end_event(&self, block: &OpenBlock, out: &Emit<'_>) -> Option<E> {
        let ci = block.content_index;
        let current = out.message().content.get(ci);
        Some(match (block.kind, current) {
            (BlockKind::Text, Some(AssistantContent::Text(t))) => E::TextEnd {
                content_index: ci,
                content: t.text.clone(),
            },
            (BlockKind::Thinking, _) => {
                let redacted = self
                    .thinking
                    .iter()
                    .any(|m| m.content_index == ci && m.redacted);
                let content = match current {
                    _ if redacted => REDACTED_THINKING.to_owned(),
                    Some(AssistantContent::Thinking(t)) => t.thinking.clone(),
                    _ => String::new(),
                };
                E::ThinkingEnd {
                    content_index: ci,
                    content,
                }
            }
            (BlockKind::ToolCall, Some(AssistantContent::ToolCall(call))) => {
                let text = out.tool_arguments_text(ci).unwrap_or("");
                let mut done = ToolCall::new(
                    call.id.clone(),
                    call.name.clone(),
                    Value::Object(parse_streaming_json(text)),
                );
                done.thought_signature.clone_from(&call.thought_signature);
                E::ToolcallEnd {
                    content_index: ci,
                    tool_call: done,
                }
            }
            _ => return None,
        })
    }

    pub(super) fn tool_name(&self, name: String) -> String {
        match &self.oauth_tools {
            Some(tools) => tools
                .iter()
                .find(|t| t.eq_ignore_ascii_case(&name))
                .cloned()
                .unwrap_or(name),
            None => name,
        }
    }

    fn handle(&mut self, event: WireEvent<'_>, out: &mut Emit<'_>) -> Result<(), Error> {
        match &*event.kind {
            "message_start" => {
                self.saw_start = true;
                if let Some(message) = event.message {
                    self.response_id = message.id;
                    let u = message.usage.unwrap_or_default();
                    self.usage.input = u.input_tokens.unwrap_or(0);
                    self.usage.output = u.output_tokens.unwrap_or(0);
                    self.usage.cache_read = u.cache_read_input_tokens.unwrap_or(0);
                    self.usage.cache_write = u.cache_creation_input_tokens.unwrap_or(0);
                }
            }
            "content_block_start" => {
                let (Some(index), Some(block)) = (event.index, event.content_block) else {
                    return Ok(());
                };
                match block.kind.as_str() {
                    "text" => {
                        let ci = self.start_block(index, BlockKind::Text, out);
                        out.push(E::TextStart { content_index: ci });
                    }
                    "thinking" | "redacted_thinking" => {
                        let redacted = block.kind == "redacted_thinking";
                        let ci = self.start_block(index, BlockKind::Thinking, out);
                        self.thinking.push(ThinkingMeta {
                            content_index: ci,
                            signature: if redacted {
                                block.data.unwrap_or_default()
                            } else {
                                String::new()
                            },
                            redacted,
                        });
                        out.push(E::ThinkingStart { content_index: ci });
                    }
                    "tool_use" => {
                        let ci = self.start_block(index, BlockKind::ToolCall, out);
                        let name = self.tool_name(block.name.unwrap_or_default());
                        out.push(E::ToolcallStart {
                            content_index: ci,
                            id: block.id.unwrap_or_default(),
                            tool_name: name,
                        });
                    }
                    // Server tools (web search, code execution, MCP) and their results are
                    // not part of pi's message model.
                    _ => {}
                }
            }
            "content_block_delta" => {
                let (Some(block), Some(delta)) = (self.open_block(event.index), event.delta) else {
                    return Ok(());
                };
                let ci = block.content_index;
                match (delta.kind.as_deref(), block.kind) {
                    (Some("text_delta"), BlockKind::Text) => out.push(E::TextDelta {
                        content_index: ci,
                        delta: delta.text.map(Cow::into_owned).unwrap_or_default(),
                    }),
                    (Some("thinking_delta"), BlockKind::Thinking) => out.push(E::ThinkingDelta {
                        content_index: ci,
                        delta: delta.text.map(Cow::into_owned).unwrap_or_default(),
                    }),
                    (Some("input_json_delta"), BlockKind::ToolCall) => out.push(E::ToolcallDelta {
                        content_index: ci,
                        delta: delta.text.map(Cow::into_owned).unwrap_or_default(),
                    }),
                    (Some("signature_delta"), BlockKind::Thinking) => {
                        if let (Some(meta), Some(sig)) = (
                            self.thinking.iter_mut().find(|m| m.content_index == ci),
                            delta.text,
                        ) {
                            meta.signature.push_str(&sig);
                        }
                    }
                    _ => {} // citations and deltas of server tool blocks
                }
            }
            "content_block_stop" => {
                let Some(position) = event
                    .index
                    .and_then(|wire| self.open.iter().rposition(|b| b.wire_index == wire))
                else {
                    return Ok(());
                };
                let block = self.open.remove(position);
                if let Some(end) = self.end_event(&block, out) {
                    out.push(end);
                }
            }
            "message_delta" => {
                let (reason, details) = match event.delta {
                    Some(d) => (d.stop_reason, d.stop_details),
                    None => (None, None),
                };
                if let Some(reason) = reason {
                    match map_stop_reason(&reason, details.map(|d| *d).unwrap_or_default()) {
                        Ok(r) => self.stop_reason = r,
                        Err(e) => {
                            self.stop_reason = StopReason::Error;
                            self.failed_stop = Some(e);
                        }
                    }
                }
                // Only fields that are present: proxies omit input_tokens here.
                if let Some(u) = event.usage {
                    if let Some(n) = u.input_tokens {
                        self.usage.input = n;
                    }
                    if let Some(n) = u.output_tokens {
                        self.usage.output = n;
                    }
                    if let Some(n) = u.cache_read_input_tokens {
                        self.usage.cache_read = n;
                    }
                    if let Some(n) = u.cache_creation_input_tokens {
                        self.usage.cache_write = n;
                    }
                }
            }
            "message_stop" => self.saw_stop = true,
            _ => {} // ping and event types added later
        }
        Ok(())
    }
}

/// pi's `mapStopReason`; a refusal is an error that says so (pi: "An unknown error
/// occurred").
fn map_stop_reason(reason: &str, details: WireStopDetails) -> Result<StopReason, Error> {
    match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => Ok(StopReason::Stop),
        "max_tokens" => Ok(StopReason::Length),
        "tool_use" => Ok(StopReason::ToolUse),
        "refusal" | "sensitive" => {
            let mut message = format!("The model refused to answer (stop reason: {reason}");
            if let Some(category) = details.category {
                message.push_str(&format!(", category: {category}"));
            }
            message.push(')');
            if let Some(explanation) = details.explanation {
                message.push_str(&format!(": {explanation}"));
            }
            Err(Error::new(ErrorKind::Refused, message))
        }
        other => Err(Error::from_message(format!(
            "Unhandled stop reason: {other}"
        ))),
    }
}

/// The common case, read without serde's struct machinery: a delta in Anthropic's own
/// compact layout, `{"type":"content_block_delta","index":N,"delta":{"type":"<kind>_delta",
/// "<field>":"<string>"}}`. Anything else (other layouts, whitespace, extra fields) returns
/// `None` and goes through [`WireEvent`]. A long reply is millions of these events: on the
/// perf harness's `text-large` (3.78 M deltas) this path cut the whole process's CPU time
/// from about 3.0 s to 1.9 s.
fn fast_delta(data: &[u8]) -> Option<WireEvent<'_>> {
    const PREFIX: &[u8] = br#"{"type":"content_block_delta","index":"#;
    let rest = data.strip_prefix(PREFIX)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let index = rest[..digits]
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    let rest = rest[digits..].strip_prefix(br#","delta":{"type":""#)?;
    let (kind, rest) = if let Some(r) = rest.strip_prefix(br#"text_delta","text":""#) {
        ("text_delta", r)
    } else if let Some(r) = rest.strip_prefix(br#"thinking_delta","thinking":""#) {
        ("thinking_delta", r)
    } else {
        let r = rest.strip_prefix(br#"input_json_delta","partial_json":""#)?;
        ("input_json_delta", r)
    };
    // `rest` is the string's content, its closing quote and `}}`.
    let inner = rest.strip_suffix(br#""}}"#)?;
    // Deltas are a few bytes: a plain loop beats a SIMD search's set-up here.
    let text = if inner.iter().any(|&b| b == b'"' || b == b'\\') {
        // Escapes (or a quote that would end the string early): serde reads the string
        // from its opening quote and rejects anything after its closing one.
        let start = data.len() - rest.len() - 1;
        Cow::Owned(serde_json::from_slice::<String>(&data[start..data.len() - 2]).ok()?)
    } else {
        Cow::Borrowed(std::str::from_utf8(inner).ok()?)
    };
    Some(WireEvent {
        kind: Cow::Borrowed("content_block_delta"),
        index: Some(index),
        delta: Some(WireDelta {
            kind: Some(Cow::Borrowed(kind)),
            text: Some(text),
            stop_reason: None,
            stop_details: None,
        }),
        content_block: None,
        message: None,
        usage: None,
    })
}

/// The SSE event names that carry message events.
fn is_message_event(name: &[u8]) -> bool {
    matches!(
        name,
        b"message_start"
            | b"message_delta"
            | b"message_stop"
            | b"content_block_start"
            | b"content_block_delta"
            | b"content_block_stop"
    )
}

impl Decoder for AnthropicDecoder {
    fn on_event(&mut self, sse: SseEvent<'_>, out: &mut Emit<'_>) -> Result<(), Error> {
        let name = sse.event_bytes();
        if name == b"error" {
            return Err(stream_event_error(sse.data()));
        }
        // pi reads only the message events; a stream without `event:` lines is read by the
        // payload's own `type`.
        if !(name.is_empty() || is_message_event(name)) {
            return Ok(());
        }
        let data = sse.data();
        if let Some(event) = fast_delta(data) {
            return self.handle(event, out);
        }
        match serde_json::from_slice::<WireEvent<'_>>(data) {
            Ok(event) => self.handle(event, out),
            Err(first) => {
                let text = String::from_utf8_lossy(data);
                let repaired = repair_json(&text);
                match serde_json::from_str::<WireEvent<'_>>(&repaired) {
                    Ok(event) if matches!(repaired, Cow::Owned(_)) => self.handle(event, out),
                    _ if name.is_empty() && data.trim_ascii().is_empty() => Ok(()),
                    _ => Err(Error::new(
                        ErrorKind::InvalidResponse,
                        format!(
                            "Could not parse Anthropic SSE event {}: {first}; data={}",
                            sse.event(),
                            clip(&text, 300)
                        ),
                    )),
                }
            }
        }
    }

    fn on_end(&mut self, _out: &mut Emit<'_>) -> Result<(), Error> {
        if !self.saw_start {
            return Err(Error::new(
                ErrorKind::InvalidResponse,
                "Anthropic stream ended before message_start",
            ));
        }
        if !self.saw_stop {
            return Err(Error::new(
                ErrorKind::InvalidResponse,
                "Anthropic stream ended before message_stop",
            ));
        }
        match self.failed_stop.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn is_complete(&self) -> bool {
        self.saw_stop
    }

    fn finish(&mut self, message: &mut AssistantMessage) {
        for meta in &self.thinking {
            if let Some(AssistantContent::Thinking(t)) = message.content.get_mut(meta.content_index)
            {
                t.thinking_signature = Some(meta.signature.clone());
                if meta.redacted {
                    t.redacted = Some(true);
                    REDACTED_THINKING.clone_into(&mut t.thinking);
                }
            }
        }
        message.response_id.clone_from(&self.response_id);
        message.stop_reason = self.stop_reason.clone();
        let mut usage = self.usage.clone();
        let prices = Model::new("", "", "", "").with_cost(self.cost);
        crate::llm::calculate_cost(&prices, &mut usage);
        usage.recompute_total();
        message.usage = usage;
    }
}

fn clip(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_delta_agrees_with_serde() {
        let cases: &[&[u8]] = &[
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
            br#"{"type":"content_block_delta","index":12,"delta":{"type":"thinking_delta","thinking":"a \"q\" \\ \n \u00e9 \ud83d\ude48"}}"#,
            br#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 1"}}"#,
            "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"caf\u{e9} \u{1f648}\"}}".as_bytes(),
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}"#,
        ];
        for data in cases {
            let fast = fast_delta(data).expect("fast path taken");
            let slow: WireEvent<'_> = serde_json::from_slice(data).unwrap();
            assert_eq!(fast.index, slow.index);
            let (f, s) = (fast.delta.unwrap(), slow.delta.unwrap());
            assert_eq!(f.kind, s.kind);
            assert_eq!(f.text, s.text, "{}", String::from_utf8_lossy(data));
        }
        // Other layouts and broken strings fall back to serde.
        for data in [
            &br#"{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}"#[..],
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","extra":1}}"#,
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"unterminated"#,
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bad \x escape"}}"#,
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ends in \"#,
            b"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\xff\"}}",
        ] {
            assert!(fast_delta(data).is_none(), "{}", String::from_utf8_lossy(data));
        }
    }

    #[test]
    fn stop_reasons() {
        assert_eq!(
            map_stop_reason("end_turn", WireStopDetails::default()).unwrap(),
            StopReason::Stop
        );
        assert_eq!(
            map_stop_reason("pause_turn", WireStopDetails::default()).unwrap(),
            StopReason::Stop
        );
        assert_eq!(
            map_stop_reason("max_tokens", WireStopDetails::default()).unwrap(),
            StopReason::Length
        );
        assert_eq!(
            map_stop_reason("tool_use", WireStopDetails::default()).unwrap(),
            StopReason::ToolUse
        );
        assert_eq!(
            map_stop_reason("sensitive", WireStopDetails::default())
                .unwrap_err()
                .kind(),
            ErrorKind::Refused
        );
        let e = map_stop_reason("model_context_window_exceeded", WireStopDetails::default())
            .unwrap_err();
        assert!(e.is_context_overflow(), "{e:?}");
    }
}
