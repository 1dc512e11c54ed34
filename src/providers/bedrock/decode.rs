//! Stream decoding: the Converse stream's events (event-stream frames, see
//! [`eventstream`](super::eventstream)) become [`AssistantMessageEvent`](E)s, as pi-ai's
//! Bedrock provider makes them.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::AssistantMessageEvent as E;
use crate::llm::json::parse_streaming_json;
use crate::llm::message::{AssistantContent, AssistantMessage, StopReason, ToolCall, Usage};
use crate::llm::model::{Model, ModelCost};
use crate::providers::http::{Decoder, Emit, Framing};
use crate::providers::json_scan::Cursor;
use crate::providers::sse::SseEvent;

/// `contentBlockStart`, `contentBlockDelta`, `contentBlockStop`, `messageStart`,
/// `messageStop` and `metadata` payloads, flat: only the fields read, borrowed when they
/// need no unescaping.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireEvent<'a> {
    #[serde(default)]
    content_block_index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<WireDelta<'a>>,
    #[serde(default)]
    start: Option<WireStart>,
    #[serde(default, borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireDelta<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_use: Option<WireToolUseDelta<'a>>,
    #[serde(default, borrow)]
    reasoning_content: Option<WireReasoning<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct WireToolUseDelta<'a> {
    #[serde(default, borrow)]
    input: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireReasoning<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireStart {
    #[serde(default)]
    tool_use: Option<WireToolUseStart>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireToolUseStart {
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    total_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    cache_write_input_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolCall,
}

/// A block whose `contentBlockStop` has not arrived.
#[derive(Debug)]
struct OpenBlock {
    /// Bedrock's `contentBlockIndex`.
    wire_index: u64,
    content_index: usize,
    kind: BlockKind,
}

/// Decodes Bedrock's Converse stream.
#[derive(Debug)]
pub(crate) struct BedrockDecoder {
    cost: ModelCost,
    usage: Usage,
    /// Bedrock's `totalTokens`, when it sent one.
    total: Option<u64>,
    stop_reason: StopReason,
    /// Why a stop reason makes the reply a failure.
    failed_stop: Option<Error>,
    blocks: usize,
    open: Vec<OpenBlock>,
    /// Every thinking block's signature, by content index (pi starts each with "").
    signatures: Vec<(usize, String)>,
    saw_stop: bool,
}

impl BedrockDecoder {
    pub(crate) fn new(model: &Model) -> Self {
        BedrockDecoder {
            cost: model.cost,
            usage: Usage::new(0, 0, 0, 0),
            total: None,
            stop_reason: StopReason::Stop,
            failed_stop: None,
            blocks: 0,
            open: Vec::new(),
            signatures: Vec::new(),
            saw_stop: false,
        }
    }

    fn open_block(&self, wire_index: u64) -> Option<&OpenBlock> {
        self.open.iter().find(|b| b.wire_index == wire_index)
    }

    fn start(&mut self, wire_index: u64, kind: BlockKind) -> usize {
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
    fn end_event(block: &OpenBlock, out: &Emit<'_>) -> Option<E> {
        let ci = block.content_index;
        Some(match (block.kind, out.message().content.get(ci)) {
            (BlockKind::Text, Some(AssistantContent::Text(t))) => E::TextEnd {
                content_index: ci,
                content: t.text.clone(),
            },
            (BlockKind::Thinking, Some(AssistantContent::Thinking(t))) => E::ThinkingEnd {
                content_index: ci,
                content: t.thinking.clone(),
            },
            (BlockKind::ToolCall, Some(AssistantContent::ToolCall(call))) => {
                let text = out.tool_arguments_text(ci).unwrap_or("");
                E::ToolcallEnd {
                    content_index: ci,
                    tool_call: ToolCall::new(
                        call.id.clone(),
                        call.name.clone(),
                        Value::Object(parse_streaming_json(text)),
                    ),
                }
            }
            _ => return None,
        })
    }

    fn handle(
        &mut self,
        name: &[u8],
        event: WireEvent<'_>,
        out: &mut Emit<'_>,
    ) -> Result<(), Error> {
        match name {
            b"messageStart" if event.role.as_deref().is_some_and(|r| r != "assistant") => {
                return Err(Error::new(
                    ErrorKind::InvalidResponse,
                    "Unexpected assistant message start but got user message start instead",
                ));
            }
            b"contentBlockStart" => {
                let (Some(index), Some(tool)) = (
                    event.content_block_index,
                    event.start.and_then(|s| s.tool_use),
                ) else {
                    return Ok(());
                };
                let ci = self.start(index, BlockKind::ToolCall);
                out.push(E::ToolcallStart {
                    content_index: ci,
                    id: tool.tool_use_id.unwrap_or_default(),
                    tool_name: tool.name.unwrap_or_default(),
                });
            }
            b"contentBlockDelta" => {
                let (Some(index), Some(delta)) = (event.content_block_index, event.delta) else {
                    return Ok(());
                };
                let open = self.open_block(index).map(|b| (b.content_index, b.kind));
                if let Some(text) = delta.text {
                    // Text blocks have no start event: the first delta opens one.
                    let ci = match open {
                        None => {
                            let ci = self.start(index, BlockKind::Text);
                            out.push(E::TextStart { content_index: ci });
                            ci
                        }
                        Some((ci, BlockKind::Text)) => ci,
                        Some(_) => return Ok(()),
                    };
                    out.push(E::TextDelta {
                        content_index: ci,
                        delta: text.into_owned(),
                    });
                } else if let Some(tool) = delta.tool_use {
                    if let Some((ci, BlockKind::ToolCall)) = open {
                        out.push(E::ToolcallDelta {
                            content_index: ci,
                            delta: tool.input.map(Cow::into_owned).unwrap_or_default(),
                        });
                    }
                } else if let Some(reasoning) = delta.reasoning_content {
                    let ci = match open {
                        None => {
                            let ci = self.start(index, BlockKind::Thinking);
                            self.signatures.push((ci, String::new()));
                            out.push(E::ThinkingStart { content_index: ci });
                            ci
                        }
                        Some((ci, BlockKind::Thinking)) => ci,
                        Some(_) => return Ok(()),
                    };
                    if let Some(text) = reasoning.text.filter(|t| !t.is_empty()) {
                        out.push(E::ThinkingDelta {
                            content_index: ci,
                            delta: text.into_owned(),
                        });
                    }
                    if let Some(signature) = reasoning.signature.filter(|s| !s.is_empty())
                        && let Some((_, sig)) = self.signatures.iter_mut().find(|(i, _)| *i == ci)
                    {
                        sig.push_str(&signature);
                    }
                }
            }
            b"contentBlockStop" => {
                let Some(position) = event
                    .content_block_index
                    .and_then(|i| self.open.iter().position(|b| b.wire_index == i))
                else {
                    return Ok(());
                };
                let block = self.open.remove(position);
                if let Some(end) = Self::end_event(&block, out) {
                    out.push(end);
                }
            }
            b"messageStop" => {
                self.saw_stop = true;
                match map_stop_reason(event.stop_reason.as_deref()) {
                    Ok(reason) => self.stop_reason = reason,
                    Err(error) => {
                        self.stop_reason = StopReason::Error;
                        self.failed_stop = Some(error);
                    }
                }
            }
            b"metadata" => {
                if let Some(u) = event.usage {
                    self.usage.input = u.input_tokens.unwrap_or(0);
                    self.usage.output = u.output_tokens.unwrap_or(0);
                    self.usage.cache_read = u.cache_read_input_tokens.unwrap_or(0);
                    self.usage.cache_write = u.cache_write_input_tokens.unwrap_or(0);
                    self.total = u.total_tokens.filter(|&n| n > 0);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// pi's `mapStopReason`. A stop reason pi maps to `error` says what it was (pi: "An
/// unknown error occurred"); a guardrail or content filter is a refusal.
fn map_stop_reason(reason: Option<&str>) -> Result<StopReason, Error> {
    match reason {
        Some("end_turn" | "stop_sequence") => Ok(StopReason::Stop),
        Some("max_tokens" | "model_context_window_exceeded") => Ok(StopReason::Length),
        Some("tool_use") => Ok(StopReason::ToolUse),
        Some(reason @ ("guardrail_intervened" | "content_filtered")) => Err(Error::new(
            ErrorKind::Refused,
            format!("The model refused to answer (stop reason: {reason})"),
        )),
        Some(other) => Err(Error::new(
            ErrorKind::Provider,
            format!("Bedrock stopped the reply: {other}"),
        )),
        None => Err(Error::new(
            ErrorKind::Provider,
            "Bedrock stopped the reply without a stop reason",
        )),
    }
}

/// The error of an exception frame, worded as pi words it (`Throttling error: …`) so that
/// the retry and context-overflow patterns recognise it, and classified: throttling is
/// retryable, a validation error is not.
fn exception_error(name: &str, data: &[u8]) -> Error {
    #[derive(Deserialize)]
    struct Payload {
        #[serde(default, alias = "Message")]
        message: Option<String>,
    }
    let message = serde_json::from_slice::<Payload>(data)
        .ok()
        .and_then(|p| p.message)
        .unwrap_or_else(|| String::from_utf8_lossy(data).into_owned());
    let (prefix, kind) = match name {
        "internalServerException" => ("Internal server error", ErrorKind::Overloaded),
        "modelStreamErrorException" => ("Model stream error", ErrorKind::Provider),
        "validationException" => ("Validation error", ErrorKind::Provider),
        "throttlingException" => ("Throttling error", ErrorKind::RateLimited),
        "serviceUnavailableException" => ("Service unavailable", ErrorKind::Overloaded),
        other => (other, ErrorKind::Provider),
    };
    let text = format!("{prefix}: {message}");
    let kind = if crate::llm::error::is_overflow_message(&text) {
        ErrorKind::ContextOverflow
    } else {
        kind
    };
    Error::new(kind, text)
}

/// The common delta, read without serde's struct machinery: Bedrock's own layout,
/// `{"contentBlockIndex":N,"delta":{"text":"…"}|{"toolUse":{"input":"…"}},"p":"…"}` (the
/// padding optional). Anything else returns `None` and goes through [`WireEvent`]; what this
/// accepts, serde reads the same way (`Cursor` is strict). A long reply is hundreds of
/// thousands of these.
fn fast_delta(data: &[u8]) -> Option<WireEvent<'_>> {
    let mut c = Cursor::new(data);
    c.byte(b'{')?;
    if c.key()? != b"contentBlockIndex" {
        return None;
    }
    let index = c.integer()?;
    if !c.next(b'}')? || c.key()? != b"delta" {
        return None;
    }
    c.byte(b'{')?;
    let mut delta = WireDelta::default();
    match c.key()? {
        b"text" => delta.text = Some(c.long_string()?),
        b"toolUse" => {
            c.byte(b'{')?;
            if c.key()? != b"input" {
                return None;
            }
            delta.tool_use = Some(WireToolUseDelta {
                input: Some(c.long_string()?),
            });
            if c.next(b'}')? {
                return None;
            }
        }
        _ => return None,
    }
    if c.next(b'}')? {
        return None;
    }
    if c.next(b'}')? {
        if c.key()? != b"p" {
            return None;
        }
        c.skip_string()?;
        if c.next(b'}')? {
            return None;
        }
    }
    if !c.at_end() {
        return None;
    }
    Some(WireEvent {
        content_block_index: Some(index),
        delta: Some(delta),
        ..WireEvent::default()
    })
}

/// The event names this decoder reads.
fn is_message_event(name: &[u8]) -> bool {
    matches!(
        name,
        b"messageStart"
            | b"contentBlockStart"
            | b"contentBlockDelta"
            | b"contentBlockStop"
            | b"messageStop"
            | b"metadata"
    )
}

impl Decoder for BedrockDecoder {
    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Emit<'_>) -> Result<(), Error> {
        let name = event.event_bytes();
        if name.ends_with(b"Exception") {
            return Err(exception_error(event.event(), event.data()));
        }
        if name == b"error" {
            #[derive(Deserialize)]
            struct Frame {
                code: String,
                message: String,
            }
            let frame: Frame = serde_json::from_slice(event.data()).map_err(|e| {
                Error::new(ErrorKind::InvalidResponse, format!("Bad error frame: {e}"))
            })?;
            return Err(Error::new(
                ErrorKind::Provider,
                format!("{}: {}", frame.code, frame.message),
            ));
        }
        if !is_message_event(name) {
            return Ok(());
        }
        if name == b"contentBlockDelta"
            && let Some(delta) = fast_delta(event.data())
        {
            return self.handle(name, delta, out);
        }
        let parsed: WireEvent<'_> = serde_json::from_slice(event.data()).map_err(|e| {
            Error::new(
                ErrorKind::InvalidResponse,
                format!("Could not parse Bedrock event {}: {e}", event.event()),
            )
        })?;
        self.handle(name, parsed, out)
    }

    fn on_end(&mut self, out: &mut Emit<'_>) -> Result<(), Error> {
        if !self.saw_stop {
            // pi reports a stream cut before `messageStop` as a success; it is not one.
            for block in std::mem::take(&mut self.open) {
                if let Some(end) = Self::end_event(&block, out) {
                    out.push(end);
                }
            }
            return Err(Error::new(
                ErrorKind::InvalidResponse,
                "Bedrock stream ended before messageStop",
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
        for (ci, signature) in &self.signatures {
            if let Some(AssistantContent::Thinking(t)) = message.content.get_mut(*ci) {
                t.thinking_signature = Some(signature.clone());
            }
        }
        message.stop_reason = self.stop_reason.clone();
        let mut usage = self.usage.clone();
        usage.total_tokens = Some(
            self.total
                .unwrap_or_else(|| usage.input.saturating_add(usage.output)),
        );
        let prices = Model::new("", "", "", "").with_cost(self.cost);
        crate::llm::calculate_cost(&prices, &mut usage);
        message.usage = usage;
    }

    fn framing(&self) -> Framing {
        Framing::AwsEventStream
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &WireEvent<'_>, b: &WireEvent<'_>) -> bool {
        let delta = |e: &WireEvent<'_>| {
            e.delta.as_ref().map(|d| {
                (
                    d.text.as_deref().map(str::to_owned),
                    d.tool_use
                        .as_ref()
                        .map(|t| t.input.as_deref().map(str::to_owned)),
                )
            })
        };
        a.content_block_index == b.content_block_index && delta(a) == delta(b)
    }

    #[test]
    fn fast_delta_agrees_with_serde() {
        let taken: &[&[u8]] = &[
            br#"{"contentBlockIndex":0,"delta":{"text":"Hello"},"p":"abcdefgh"}"#,
            br#"{"contentBlockIndex":12,"delta":{"text":"a \"q\" \\ \n \u00e9 \ud83d\ude48"}}"#,
            br#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"a\": 1"}},"p":"xy"}"#,
            br#"{ "contentBlockIndex" : 3 , "delta" : { "text" : "" } , "p" : "" }"#,
        ];
        for data in taken {
            let fast = fast_delta(data).expect("fast path taken");
            let slow: WireEvent<'_> = serde_json::from_slice(data).unwrap();
            assert!(same(&fast, &slow), "{}", String::from_utf8_lossy(data));
        }
        // Left to serde: other members, other delta kinds, numbers serde reads otherwise,
        // padding that is not plain ASCII, trailing junk, invalid escapes.
        let refused: &[&[u8]] = &[
            br#"{"delta":{"text":"x"},"contentBlockIndex":0}"#,
            br#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"x"}}}"#,
            br#"{"contentBlockIndex":0,"delta":{"text":"x","extra":1}}"#,
            br#"{"contentBlockIndex":1.0,"delta":{"text":"x"}}"#,
            br#"{"contentBlockIndex":0,"delta":{"text":"x"},"p":"\\u00e9"}"#,
            br#"{"contentBlockIndex":0,"delta":{"text":"x"},"q":"a"}"#,
            br#"{"contentBlockIndex":0,"delta":{"text":"x"}}junk"#,
            br#"{"contentBlockIndex":0,"delta":{"text":"\x"}}"#,
            br#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"x","name":"y"}}}"#,
        ];
        for data in refused {
            assert!(
                fast_delta(data).is_none(),
                "{}",
                String::from_utf8_lossy(data)
            );
        }
    }
}
