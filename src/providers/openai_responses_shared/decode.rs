//! Stream decoding: the Responses SSE events become
//! [`AssistantMessageEvent`](E)s (pi's `processResponsesStream`).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::AssistantMessageEvent as E;
use crate::llm::json::js;
use crate::llm::json::parse_streaming_json;
use crate::llm::message::{AssistantContent, AssistantMessage, StopReason, ToolCall, Usage};
use crate::llm::model::Model;
use crate::providers::http::{Decoder, Emit, stream_event_error};
use crate::providers::json_scan::{Cursor, Seen};
use crate::providers::sse::SseEvent;

use super::long_item::unescape_in_place;
use super::request::encode_text_signature;
use super::tier::{TierPricing, apply_service_tier_pricing};

/// One SSE payload, flat: only what the decoder reads, borrowed from the bytes. Items and
/// responses stay raw until an event that needs them is handled: a `response.completed`
/// repeats the whole output, which is skipped, not built.
#[derive(Debug, Deserialize)]
pub(super) struct WireEvent<'a> {
    #[serde(rename = "type", default, borrow)]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) item: Option<&'a RawValue>,
    #[serde(default, borrow)]
    part: Option<WirePartKind<'a>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    response: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub(super) error: Option<&'a RawValue>,
    #[serde(default, borrow)]
    code: Option<&'a RawValue>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
    /// Kept raw: read only by the item events, and a server that sends something odd here
    /// does not make the event unreadable.
    #[serde(default, borrow)]
    output_index: Option<&'a RawValue>,
}

impl WireEvent<'_> {
    /// The `output_index` of an item event, when it is a count.
    pub(super) fn output_index(&self) -> Option<u64> {
        self.output_index.and_then(|raw| raw.get().parse().ok())
    }
}

#[derive(Debug, Deserialize)]
struct WirePartKind<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
struct WireItem<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    phase: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<Vec<WirePart<'a>>>,
    #[serde(default)]
    summary: Option<Vec<serde::de::IgnoredAny>>,
}

#[derive(Debug, Deserialize)]
struct WirePart<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    refusal: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    service_tier: Option<String>,
    #[serde(default)]
    error: Option<WireResponseError>,
    #[serde(default)]
    incomplete_details: Option<WireIncomplete>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    total_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<WireInputDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct WireInputDetails {
    #[serde(default, deserialize_with = "crate::providers::wire_count::count")]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct WireResponseError {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct WireIncomplete {
    #[serde(default)]
    reason: Option<String>,
}

/// The type of the last content part of the current message item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PartKind {
    OutputText,
    Refusal,
    Other,
}

impl PartKind {
    fn of(kind: Option<&str>) -> PartKind {
        match kind {
            Some("output_text") => PartKind::OutputText,
            Some("refusal") => PartKind::Refusal,
            _ => PartKind::Other,
        }
    }
}

/// The output item being streamed (pi's `currentItem`) and whether its block is still open
/// (pi's `currentBlock`): an item's block closes at its `output_item.done`, and events
/// that arrive for it afterwards are ignored.
#[derive(Debug)]
pub(super) enum Current {
    None,
    Reasoning {
        index: usize,
        summary_parts: usize,
        open: bool,
    },
    Message {
        index: usize,
        parts: usize,
        last: PartKind,
        open: bool,
    },
    Call {
        index: usize,
        /// The argument text that is not in the streamed deltas: the item's initial
        /// `arguments`, or a `function_call_arguments.done` text that replaced them.
        base: String,
        /// How much of the streamed argument text `base` replaced.
        base_at: usize,
        open: bool,
    },
}

/// A signature written into the final message.
#[derive(Debug)]
enum Signature {
    Thinking(String),
    Text(String),
}

/// Whose reading of the event stream a decoder follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// pi through the OpenAI SDK: an event with an `error` member fails the stream, `[DONE]`
    /// ends it, `error` events read `Error Code <code>: <message>`.
    Sdk,
    /// pi's own Codex reader: `error` events read `Codex error: <message>`, a failed response
    /// `<message>`, and the stream is over at its first `response.completed`,
    /// `response.done` or `response.incomplete` (statuses pi does not know read as none).
    Codex,
}

/// Decodes the Responses SSE events (pi's `processResponsesStream`).
#[derive(Debug)]
pub(crate) struct ResponsesDecoder {
    /// The model id and prices, for the cost.
    prices: Model,
    pricing: TierPricing,
    pub(super) dialect: Dialect,
    response_id: Option<String>,
    usage: Usage,
    response_tier: Option<String>,
    stop_reason: StopReason,
    /// `response.completed` (or `response.incomplete`) arrived.
    completed: bool,
    /// The stream is over for pi (`[DONE]`, or Codex's final event): the rest is ignored.
    pub(super) done_marker: bool,
    blocks: usize,
    pub(super) current: Current,
    /// The `output_index` of the current item, when it had one. (Item ids cannot tell
    /// items apart: GitHub Copilot's change from event to event.)
    current_output: Option<u64>,
    signatures: Vec<(usize, Signature)>,
}

/// pi's `mapStopReason` of a response status.
fn map_status(status: Option<&str>) -> Result<StopReason, Error> {
    match status {
        None | Some("completed" | "in_progress" | "queued") => Ok(StopReason::Stop),
        Some("incomplete") => Ok(StopReason::Length),
        Some("failed" | "cancelled") => Ok(StopReason::Error),
        Some(other) => Err(Error::from_message(format!(
            "Unhandled stop reason: {other}"
        ))),
    }
}

/// How JavaScript's template literal writes a JSON value (`${event.code}`).
fn template_text(value: Option<&RawValue>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::String(s)) => s,
            _ => raw.get().to_owned(),
        },
    }
}

/// JavaScript truthiness of a raw JSON value.
pub(super) fn truthy(raw: &RawValue) -> bool {
    !matches!(raw.get(), "null" | "false" | "0" | "\"\"" | "-0")
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidResponse, message)
}

fn parse<'a, T: Deserialize<'a>>(raw: &'a RawValue, what: &str) -> Result<T, Error> {
    serde_json::from_str(raw.get())
        .map_err(|e| invalid(format!("Invalid {what} in OpenAI Responses event: {e}")))
}

impl ResponsesDecoder {
    pub(crate) fn new(model: &Model, pricing: TierPricing) -> Self {
        let dialect = match pricing {
            TierPricing::Codex { .. } => Dialect::Codex,
            _ => Dialect::Sdk,
        };
        ResponsesDecoder {
            prices: Model::new(model.id.clone(), "", "", "").with_cost(model.cost),
            pricing,
            dialect,
            response_id: None,
            usage: Usage::new(0, 0, 0, 0),
            response_tier: None,
            stop_reason: StopReason::Stop,
            completed: false,
            done_marker: false,
            blocks: 0,
            current: Current::None,
            current_output: None,
            signatures: Vec::new(),
        }
    }

    fn next_index(&mut self) -> usize {
        let index = self.blocks;
        self.blocks += 1;
        index
    }

    fn handle(
        &mut self,
        event: WireEvent<'_>,
        data: &[u8],
        out: &mut Emit<'_>,
    ) -> Result<(), Error> {
        let Some(kind) = event.kind.as_deref() else {
            return Ok(());
        };
        match kind {
            "response.output_text.delta" => {
                if let (
                    Current::Message {
                        index,
                        parts,
                        last: PartKind::OutputText,
                        open: true,
                    },
                    Some(delta),
                ) = (&self.current, event.delta)
                    && *parts > 0
                {
                    out.push(E::TextDelta {
                        content_index: *index,
                        delta: delta.into_owned(),
                    });
                }
            }
            "response.refusal.delta" => {
                if let (
                    Current::Message {
                        index,
                        parts,
                        last: PartKind::Refusal,
                        open: true,
                    },
                    Some(delta),
                ) = (&self.current, event.delta)
                    && *parts > 0
                {
                    out.push(E::TextDelta {
                        content_index: *index,
                        delta: delta.into_owned(),
                    });
                }
            }
            "response.reasoning_summary_text.delta" => {
                if let (
                    Current::Reasoning {
                        index,
                        summary_parts,
                        open: true,
                    },
                    Some(delta),
                ) = (&self.current, event.delta)
                    && *summary_parts > 0
                {
                    out.push(E::ThinkingDelta {
                        content_index: *index,
                        delta: delta.into_owned(),
                    });
                }
            }
            "response.reasoning_text.delta" => {
                if let (
                    Current::Reasoning {
                        index, open: true, ..
                    },
                    Some(delta),
                ) = (&self.current, event.delta)
                {
                    out.push(E::ThinkingDelta {
                        content_index: *index,
                        delta: delta.into_owned(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                if let (
                    Current::Call {
                        index, open: true, ..
                    },
                    Some(delta),
                ) = (&self.current, event.delta)
                {
                    out.push(E::ToolcallDelta {
                        content_index: *index,
                        delta: delta.into_owned(),
                    });
                }
            }
            "response.created" => {
                if let Some(raw) = event.response {
                    let response: WireResponse = parse(raw, "response")?;
                    self.response_id = response.id;
                }
            }
            "response.output_item.added" => {
                if let Some(raw) = event.item {
                    let output_index = event.output_index();
                    self.item_added(parse(raw, "output item")?, output_index, out);
                }
            }
            "response.reasoning_summary_part.added" => {
                if let Current::Reasoning { summary_parts, .. } = &mut self.current {
                    *summary_parts += 1;
                }
            }
            "response.reasoning_summary_part.done" => {
                if let Current::Reasoning {
                    index,
                    summary_parts,
                    open: true,
                } = &self.current
                    && *summary_parts > 0
                {
                    out.push(E::ThinkingDelta {
                        content_index: *index,
                        delta: "\n\n".to_owned(),
                    });
                }
            }
            "response.content_part.added" => {
                if let Current::Message { parts, last, .. } = &mut self.current {
                    let kind = PartKind::of(event.part.as_ref().and_then(|p| p.kind.as_deref()));
                    // Only text and refusal parts count (pi drops reasoning text parts).
                    if kind != PartKind::Other {
                        *parts += 1;
                        *last = kind;
                    }
                }
            }
            "response.function_call_arguments.done" => {
                let Current::Call {
                    index,
                    base,
                    base_at,
                    open: true,
                } = &mut self.current
                else {
                    return Ok(());
                };
                let Some(arguments) = event.arguments else {
                    return Ok(());
                };
                let streamed = out.tool_arguments_text(*index).unwrap_or("");
                let rest = &streamed[(*base_at).min(streamed.len())..];
                // The arguments so far are `base + rest`; the full text either extends them
                // (the missing end is one more delta) or replaces them.
                match arguments
                    .strip_prefix(base.as_str())
                    .and_then(|a| a.strip_prefix(rest))
                {
                    Some(missing) => {
                        if !missing.is_empty() {
                            out.push(E::ToolcallDelta {
                                content_index: *index,
                                delta: missing.to_owned(),
                            });
                        }
                    }
                    None => {
                        *base = arguments.into_owned();
                        *base_at = streamed.len();
                    }
                }
            }
            "response.output_item.done" => {
                if let Some(raw) = event.item {
                    self.item_done(raw, event.output_index(), out)?;
                }
            }
            // pi reads only `response.completed`; a response cut by `max_output_tokens`
            // ends with `response.incomplete` instead, which carries the same usage and the
            // status `incomplete` (stop reason `length`).
            "response.completed" | "response.incomplete" | "response.done"
                if kind != "response.done" || self.dialect == Dialect::Codex =>
            {
                let mut response: WireResponse = match event.response {
                    Some(raw) => parse(raw, "response")?,
                    None => WireResponse::default(),
                };
                self.completed = true;
                if self.dialect == Dialect::Codex {
                    // Nothing after the final event is read.
                    self.done_marker = true;
                    response.status = response.status.filter(|s| {
                        matches!(
                            s.as_str(),
                            "completed"
                                | "incomplete"
                                | "failed"
                                | "cancelled"
                                | "queued"
                                | "in_progress"
                        )
                    });
                }
                if response.id.as_deref().is_some_and(|id| !id.is_empty()) {
                    self.response_id = response.id;
                }
                if let Some(u) = response.usage {
                    let cached = u
                        .input_tokens_details
                        .and_then(|d| d.cached_tokens)
                        .unwrap_or(0);
                    // OpenAI counts cached tokens inside input_tokens.
                    let input = u.input_tokens.unwrap_or(0).saturating_sub(cached);
                    let mut usage = Usage::new(input, u.output_tokens.unwrap_or(0), cached, 0);
                    usage.total_tokens = Some(u.total_tokens.unwrap_or(0));
                    self.usage = usage;
                }
                self.response_tier = response.service_tier;
                let status = match (kind, response.status.as_deref(), self.dialect) {
                    ("response.incomplete", None, Dialect::Sdk) => Some("incomplete"),
                    (_, status, _) => status,
                };
                self.stop_reason = map_status(status)?;
                if self.stop_reason == StopReason::Stop
                    && out
                        .message()
                        .content
                        .iter()
                        .any(|b| matches!(b, AssistantContent::ToolCall(_)))
                {
                    self.stop_reason = StopReason::ToolUse;
                }
            }
            "response.failed" => {
                let response: WireResponse = match event.response {
                    Some(raw) => parse(raw, "response")?,
                    None => WireResponse::default(),
                };
                let message = match self.dialect {
                    Dialect::Codex => response
                        .error
                        .and_then(|e| e.message)
                        .filter(|m| !m.is_empty())
                        .unwrap_or_else(|| "Codex response failed".to_owned()),
                    Dialect::Sdk => match (response.error, response.incomplete_details) {
                        (Some(error), _) => format!(
                            "{}: {}",
                            error
                                .code
                                .filter(|c| !c.is_empty())
                                .as_deref()
                                .unwrap_or("unknown"),
                            error
                                .message
                                .filter(|m| !m.is_empty())
                                .as_deref()
                                .unwrap_or("no message")
                        ),
                        (
                            None,
                            Some(WireIncomplete {
                                reason: Some(reason),
                            }),
                        ) if !reason.is_empty() => format!("incomplete: {reason}"),
                        _ => "Unknown error (no error details in response)".to_owned(),
                    },
                };
                return Err(Error::from_message(message));
            }
            "error" => {
                let message = match self.dialect {
                    Dialect::Sdk => format!(
                        "Error Code {}: {}",
                        template_text(event.code),
                        template_text(event.message)
                    ),
                    Dialect::Codex => {
                        let truthy_text = |raw: Option<&RawValue>| {
                            raw.filter(|r| truthy(r)).map(|r| template_text(Some(r)))
                        };
                        let what = truthy_text(event.message)
                            .or_else(|| truthy_text(event.code))
                            .unwrap_or_else(|| {
                                serde_json::from_slice::<Value>(data)
                                    .map(|v| js::to_string(&v))
                                    .unwrap_or_default()
                            });
                        format!("Codex error: {what}")
                    }
                };
                return Err(Error::from_message(message));
            }
            _ => {} // server tools' progress events, annotations, and types added later
        }
        Ok(())
    }

    /// Ends the current item's block if it is still open (a new item was added before the
    /// current one's `output_item.done`), with the content it has.
    fn close_current(&mut self, out: &mut Emit<'_>) {
        let content = &out.message().content;
        let end = match &mut self.current {
            Current::Reasoning {
                index,
                open: open @ true,
                ..
            } => {
                *open = false;
                let text = match content.get(*index) {
                    Some(AssistantContent::Thinking(t)) => t.thinking.clone(),
                    _ => String::new(),
                };
                E::ThinkingEnd {
                    content_index: *index,
                    content: text,
                }
            }
            Current::Message {
                index,
                open: open @ true,
                ..
            } => {
                *open = false;
                let text = match content.get(*index) {
                    Some(AssistantContent::Text(t)) => t.text.clone(),
                    _ => String::new(),
                };
                E::TextEnd {
                    content_index: *index,
                    content: text,
                }
            }
            Current::Call {
                index,
                base,
                base_at,
                open: open @ true,
            } => {
                *open = false;
                let streamed = out.tool_arguments_text(*index).unwrap_or("");
                let rest = &streamed[(*base_at).min(streamed.len())..];
                let arguments = parse_streaming_json(&format!("{base}{rest}"));
                let (id, name) = match content.get(*index) {
                    Some(AssistantContent::ToolCall(call)) => (call.id.clone(), call.name.clone()),
                    _ => (String::new(), String::new()),
                };
                E::ToolcallEnd {
                    content_index: *index,
                    tool_call: ToolCall::new(id, name, Value::Object(arguments)),
                }
            }
            _ => return,
        };
        tracing::warn!(
            "Responses stream added an output item before the previous one was done; ending that one"
        );
        out.push(end);
    }

    fn item_added(&mut self, item: WireItem<'_>, output_index: Option<u64>, out: &mut Emit<'_>) {
        if matches!(
            item.kind.as_deref(),
            Some("reasoning" | "message" | "function_call")
        ) {
            self.close_current(out);
            self.current_output = output_index;
        }
        match item.kind.as_deref() {
            Some("reasoning") => {
                let index = self.next_index();
                self.current = Current::Reasoning {
                    index,
                    summary_parts: item.summary.map_or(0, |s| s.len()),
                    open: true,
                };
                out.push(E::ThinkingStart {
                    content_index: index,
                });
            }
            Some("message") => {
                let index = self.next_index();
                let content = item.content.unwrap_or_default();
                self.current = Current::Message {
                    index,
                    parts: content.len(),
                    last: PartKind::of(content.last().and_then(|p| p.kind.as_deref())),
                    open: true,
                };
                out.push(E::TextStart {
                    content_index: index,
                });
            }
            Some("function_call") => {
                let index = self.next_index();
                let id = call_id(&item);
                self.current = Current::Call {
                    index,
                    base: item.arguments.map(Cow::into_owned).unwrap_or_default(),
                    base_at: 0,
                    open: true,
                };
                out.push(E::ToolcallStart {
                    content_index: index,
                    id,
                    tool_name: item.name.map(Cow::into_owned).unwrap_or_default(),
                });
            }
            // Server-side tools and their results are not part of pi's message model.
            _ => {}
        }
    }

    /// True when the `output_index` of an `output_item.done` is not the current item's
    /// (both known and different).
    pub(super) fn is_other_item(&self, output_index: Option<u64>) -> bool {
        matches!((output_index, self.current_output), (Some(a), Some(b)) if a != b)
    }

    fn item_done(
        &mut self,
        raw: &RawValue,
        output_index: Option<u64>,
        out: &mut Emit<'_>,
    ) -> Result<(), Error> {
        let item: WireItem<'_> = parse(raw, "output item")?;
        let other = self.is_other_item(output_index);
        if other && item.kind.as_deref() != Some("function_call") {
            // The done of an item that was never added: the current item stays open (its
            // next deltas are still its own).
            tracing::warn!(
                output_index,
                "Responses stream finished an output item that was not added; ignored"
            );
            return Ok(());
        }
        let current = if other {
            // A call that was never added is added below; the current item is not touched.
            &mut Current::None
        } else {
            &mut self.current
        };
        match (item.kind.as_deref(), current) {
            (
                Some("reasoning"),
                Current::Reasoning {
                    index,
                    open: open @ true,
                    ..
                },
            ) => {
                *open = false;
                let index = *index;
                // The whole item is the signature, replayed verbatim (pi's JSON.stringify).
                let whole: Value = parse(raw, "reasoning item")?;
                let joined = |key: &str, field: &str| -> String {
                    whole
                        .get(key)
                        .and_then(Value::as_array)
                        .map(|parts| {
                            parts
                                .iter()
                                .map(|p| p.get(field).and_then(Value::as_str).unwrap_or(""))
                                .collect::<Vec<_>>()
                                .join("\n\n")
                        })
                        .unwrap_or_default()
                };
                let mut text = joined("summary", "text");
                if text.is_empty() {
                    text = joined("content", "text");
                }
                if text.is_empty()
                    && let Some(AssistantContent::Thinking(t)) = out.message().content.get(index)
                {
                    text.clone_from(&t.thinking);
                }
                self.signatures
                    .push((index, Signature::Thinking(js::to_string(&whole))));
                out.push(E::ThinkingEnd {
                    content_index: index,
                    content: text,
                });
            }
            (
                Some("message"),
                Current::Message {
                    index,
                    open: open @ true,
                    ..
                },
            ) => {
                *open = false;
                let index = *index;
                let mut parts = item.content.unwrap_or_default().into_iter().map(|p| {
                    let text = if p.kind.as_deref() == Some("output_text") {
                        p.text
                    } else {
                        p.refusal
                    };
                    text.unwrap_or_default()
                });
                // Usually one part: its text is taken as it is, not copied.
                let mut text = parts.next().map(Cow::into_owned).unwrap_or_default();
                for part in parts {
                    text.push_str(&part);
                }
                self.signatures.push((
                    index,
                    Signature::Text(encode_text_signature(
                        item.id.as_deref(),
                        item.phase.as_deref(),
                    )),
                ));
                out.push(E::TextEnd {
                    content_index: index,
                    content: text,
                });
            }
            (Some("function_call"), current) => {
                let open_call = match current {
                    Current::Call {
                        index,
                        base,
                        base_at,
                        open,
                    } if *open => {
                        *open = false;
                        Some((*index, std::mem::take(base), *base_at))
                    }
                    // A call done while another item is open: that item stays open (its
                    // next deltas are still its own), the call is added below.
                    _ => None,
                };
                let from_item = || {
                    let text = item.arguments.as_deref().filter(|a| !a.is_empty());
                    parse_streaming_json(text.unwrap_or("{}"))
                };
                match open_call {
                    Some((index, base, base_at)) => {
                        let streamed = out.tool_arguments_text(index).unwrap_or("");
                        let rest = &streamed[base_at.min(streamed.len())..];
                        let arguments = if base.is_empty() && rest.is_empty() {
                            from_item()
                        } else if base.is_empty() {
                            parse_streaming_json(rest)
                        } else {
                            parse_streaming_json(&format!("{base}{rest}"))
                        };
                        let (id, name) = match out.message().content.get(index) {
                            Some(AssistantContent::ToolCall(call)) => {
                                (call.id.clone(), call.name.clone())
                            }
                            _ => (
                                call_id(&item),
                                item.name.as_deref().unwrap_or("").to_owned(),
                            ),
                        };
                        out.push(E::ToolcallEnd {
                            content_index: index,
                            tool_call: ToolCall::new(id, name, Value::Object(arguments)),
                        });
                    }
                    None => {
                        // A call whose item was never added: pi ends a tool call that is not
                        // in the message; ours adds it.
                        let index = self.next_index();
                        let id = call_id(&item);
                        let name = item.name.as_deref().unwrap_or("").to_owned();
                        out.push(E::ToolcallStart {
                            content_index: index,
                            id: id.clone(),
                            tool_name: name.clone(),
                        });
                        out.push(E::ToolcallEnd {
                            content_index: index,
                            tool_call: ToolCall::new(id, name, Value::Object(from_item())),
                        });
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// pi's tool-call id: `"<call_id>|<item id>"` (JavaScript writes a missing part as
/// `undefined`).
fn call_id(item: &WireItem<'_>) -> String {
    format!(
        "{}|{}",
        item.call_id.as_deref().unwrap_or("undefined"),
        item.id.as_deref().unwrap_or("undefined")
    )
}

impl Decoder for ResponsesDecoder {
    fn on_event(&mut self, sse: SseEvent<'_>, out: &mut Emit<'_>) -> Result<(), Error> {
        if self.done_marker {
            return Ok(());
        }
        let data = sse.data();
        match self.dialect {
            Dialect::Sdk => {
                if data.starts_with(b"[DONE]") {
                    self.done_marker = true;
                    return Ok(());
                }
                // The SDK hands Assistants `thread.*` events on without a `type`: pi skips
                // them.
                if sse.event_bytes().starts_with(b"thread.") {
                    return Ok(());
                }
            }
            Dialect::Codex => {
                if data.trim_ascii() == b"[DONE]" {
                    return Ok(());
                }
            }
        }
        if data.trim_ascii().is_empty() {
            return Ok(());
        }
        if let Some(event) = fast_delta(data) {
            return self.handle(event, data, out);
        }
        let event: WireEvent<'_> = serde_json::from_slice(data).map_err(|e| {
            let text = String::from_utf8_lossy(data);
            let what = match self.dialect {
                Dialect::Sdk => {
                    format!("Could not parse OpenAI Responses SSE event {}", sse.event())
                }
                Dialect::Codex => "Invalid Codex SSE JSON".to_owned(),
            };
            invalid(format!("{what}: {e}; data={}", clip(&text, 300)))
        })?;
        // The SDK throws on any event with an `error` member.
        if self.dialect == Dialect::Sdk && event.error.is_some_and(truthy) {
            return Err(stream_event_error(data));
        }
        self.handle(event, data, out)
    }

    fn wants_large_event(&self, name: &[u8]) -> bool {
        name == b"response.output_item.done"
    }

    /// A long `output_item.done` of a message (it repeats the whole reply) has its text
    /// unescaped in place: the reply is then held twice (message and `text_end`), not three
    /// times.
    fn on_large_event(
        &mut self,
        name: &[u8],
        mut data: Vec<u8>,
        out: &mut Emit<'_>,
    ) -> Result<(), Error> {
        let Some(long) = self.long_message_text(name, &data) else {
            return self.on_event(SseEvent::new(name, &data), out);
        };
        let Current::Message { index, open, .. } = &mut self.current else {
            return self.on_event(SseEvent::new(name, &data), out);
        };
        let index = *index;
        let Some(text) = unescape_in_place(&mut data, long.quoted) else {
            return self.on_event(SseEvent::new(name, &data), out);
        };
        *open = false;
        self.signatures.push((
            index,
            Signature::Text(encode_text_signature(
                long.id.as_deref(),
                long.phase.as_deref(),
            )),
        ));
        out.push(E::TextEnd {
            content_index: index,
            content: text,
        });
        Ok(())
    }

    fn on_end(&mut self, _out: &mut Emit<'_>) -> Result<(), Error> {
        if self.completed {
            Ok(())
        } else {
            Err(invalid(
                "OpenAI Responses stream ended before response.completed".to_owned(),
            ))
        }
    }

    fn is_complete(&self) -> bool {
        self.completed
    }

    fn finish(&mut self, message: &mut AssistantMessage) {
        for (index, signature) in self.signatures.drain(..) {
            match (message.content.get_mut(index), signature) {
                (Some(AssistantContent::Thinking(t)), Signature::Thinking(s)) => {
                    t.thinking_signature = Some(s);
                }
                (Some(AssistantContent::Text(t)), Signature::Text(s)) => {
                    t.text_signature = Some(s);
                }
                _ => {}
            }
        }
        message.response_id.clone_from(&self.response_id);
        message.stop_reason = self.stop_reason.clone();
        let mut usage = self.usage.clone();
        if self.completed {
            crate::llm::calculate_cost(&self.prices, &mut usage);
            let reported = self.response_tier.as_deref();
            let tier = match &self.pricing {
                TierPricing::None => None,
                TierPricing::OpenAi { requested } => reported.or(requested.as_deref()),
                TierPricing::Codex { requested } => match (reported, requested.as_deref()) {
                    (Some("default"), Some(r @ ("flex" | "priority"))) => Some(r),
                    (reported, requested) => reported.or(requested),
                },
            };
            if tier.is_some() {
                apply_service_tier_pricing(&mut usage, &self.prices.id, tier);
            }
        }
        message.usage = usage;
    }
}

/// The common event read without serde: a delta (text, refusal, reasoning, arguments) in
/// the layout OpenAI writes, `{"type":"response.output_text.delta","sequence_number":5,
/// "item_id":"msg_1","output_index":0,"content_index":0,"delta":"…","logprobs":[]}`, its
/// members in any order. Anything else (another member or event type, a value of another
/// type, a repeated member) returns `None` and goes through [`WireEvent`]. A long reply is
/// millions of these events, and serde's derived visitor spends most of its time matching
/// and skipping the members that are not read.
fn fast_delta(data: &[u8]) -> Option<WireEvent<'_>> {
    let mut c = Cursor::new(data);
    c.byte(b'{')?;
    let mut seen = Seen::default();
    let (mut kind, mut delta) = (None, None);
    loop {
        match c.key()? {
            b"type" => {
                seen.first(0)?;
                kind = Some(c.plain_string()?);
            }
            b"delta" => {
                seen.first(1)?;
                delta = Some(c.string()?);
            }
            b"sequence_number" => seen.first(2).and_then(|()| c.integer()).map(drop)?,
            b"output_index" => seen.first(3).and_then(|()| c.integer()).map(drop)?,
            b"content_index" => seen.first(4).and_then(|()| c.integer()).map(drop)?,
            b"summary_index" => seen.first(5).and_then(|()| c.integer()).map(drop)?,
            b"item_id" => seen.first(6).and_then(|()| c.skip_string())?,
            b"obfuscation" => seen.first(7).and_then(|()| c.skip_string())?,
            b"logprobs" => seen.first(8).and_then(|()| c.empty_array())?,
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    let kind = kind?;
    let is_delta = matches!(
        kind,
        "response.output_text.delta"
            | "response.refusal.delta"
            | "response.reasoning_summary_text.delta"
            | "response.reasoning_text.delta"
            | "response.function_call_arguments.delta"
    );
    if !is_delta || !c.at_end() {
        return None;
    }
    Some(WireEvent {
        kind: Some(Cow::Borrowed(kind)),
        delta: Some(delta?),
        item: None,
        part: None,
        arguments: None,
        response: None,
        error: None,
        code: None,
        message: None,
        output_index: None,
    })
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

    use crate::providers::openai_responses_shared::TierPricing;
    use crate::providers::openai_responses_shared::responses_model;

    #[test]
    fn fast_delta_agrees_with_serde() {
        let cases: &[&[u8]] = &[
            br#"{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_perf0000","output_index":0,"content_index":0,"delta":" on","logprobs":[]}"#,
            br#"{"type":"response.reasoning_summary_text.delta","sequence_number":7,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"a \"q\" \\ \n \u00e9 \ud83d\ude48","obfuscation":"x1"}"#,
            br#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"path\": \"a"}"#,
            br#"{"type":"response.refusal.delta","delta":""}"#,
            br#"{"type":"response.reasoning_text.delta","delta":"t"}"#,
            b" { \"delta\" : \"caf\xc3\xa9 \xf0\x9f\x99\x88\" , \"type\" : \"response.output_text.delta\" }\r\n",
        ];
        for data in cases {
            let fast = fast_delta(data).expect("fast path taken");
            let slow: WireEvent<'_> = serde_json::from_slice(data).unwrap();
            assert_eq!(fast.kind, slow.kind);
            assert_eq!(fast.delta, slow.delta, "{}", String::from_utf8_lossy(data));
            assert!(slow.item.is_none() && slow.part.is_none() && slow.arguments.is_none());
            assert!(slow.response.is_none() && slow.error.is_none());
            assert!(slow.code.is_none() && slow.message.is_none());
        }
        // Everything else goes to serde (which reads the first ones, rejects the last ones).
        for data in [
            &br#"{"type":"response.output_text.done","item_id":"m","text":"x"}"#[..],
            br#"{"type":"response.output_text.delta","delta":"x","error":{"message":"boom"}}"#,
            br#"{"type":"response.output_text.delta","delta":"x","logprobs":[{"token":"x"}]}"#,
            br#"{"type":"response.output_text.delta","delta":null}"#,
            br#"{"type":"response.output_text.delta"}"#,
            br#"{"delta":"x"}"#,
            br#"{"type":"response.output_text.delta","delta":"x","sequence_number":-1}"#,
            br#"{"type":"response.output_text.delta","delta":"x","sequence_number":1.5}"#,
            br#"{"type":"response.output_text.delta","delta":"x","item_id":"m\u0031"}"#,
            br#"{"type":"response.output_text.delta","delta":"x","delta":"y"}"#,
            br#"{"type":"response.output_text.delta","delta":"x"} x"#,
            br#"{"type":"response.output_text.delta","delta":"x""#,
            br#"{"type":"response.output_text.delta","delta":"bad \x escape"}"#,
            b"{\"type\":\"response.output_text.delta\",\"delta\":\"\xff\"}",
            b"{\"type\":\"response.output_text.delta\",\"delta\":\"raw\nnewline\"}",
            br#"{"type":"response.output_text.delta","sequence_number":01,"delta":"x"}"#,
            b"",
        ] {
            assert!(
                fast_delta(data).is_none(),
                "{}",
                String::from_utf8_lossy(data)
            );
        }
    }

    #[test]
    fn fast_and_full_paths_decode_the_same_stream() {
        use crate::llm::event::PartialMessage;
        use std::collections::VecDeque;

        // One stream as OpenAI writes it (deltas take the fast path).
        let compact = [
            r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}"#,
            r#"{"type":"response.content_part.added","item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}"#,
            r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","logprobs":[]}"#,
            r#"{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"lo \"x\"","logprobs":[]}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Hello \"x\""}],"role":"assistant"}}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"write","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","sequence_number":8,"item_id":"fc_1","output_index":1,"delta":"{\"path\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_1","output_index":1,"delta":"\"a\"}"}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"write","arguments":"{\"path\":\"a\"}"}}"#,
            r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}}"#,
        ];
        let run = |lines: &[String]| {
            let model = responses_model("openai", "gpt-5");
            let mut decoder = ResponsesDecoder::new(&model, TierPricing::None);
            let mut state =
                PartialMessage::new(AssistantMessage::new("openai-responses", "openai", "gpt-5"));
            let mut events = Vec::new();
            for line in lines {
                let frame = format!("data: {line}\n\n");
                let mut sse = crate::providers::sse::SseDecoder::new();
                sse.feed(frame.as_bytes());
                let event = sse.next_event().unwrap();
                let mut queue = VecDeque::new();
                decoder
                    .on_event(event, &mut Emit::new(&mut queue, &state))
                    .unwrap();
                for e in queue {
                    state.apply(&e);
                    events.push(serde_json::to_value(&e).unwrap());
                }
            }
            let mut message = state.message().clone();
            decoder.finish(&mut message);
            let mut message = serde_json::to_value(&message).unwrap();
            message["timestamp"] = Value::Null; // differs between runs
            (events, message)
        };
        let compact: Vec<String> = compact.iter().map(|l| (*l).to_owned()).collect();
        // The same events with a member the fast path does not know: serde reads them all.
        let padded: Vec<String> = compact
            .iter()
            .map(|l| l.replacen('{', r#"{"x_pad":0,"#, 1))
            .collect();
        assert_eq!(
            compact
                .iter()
                .filter(|l| fast_delta(l.as_bytes()).is_some())
                .count(),
            4
        );
        assert!(padded.iter().all(|l| fast_delta(l.as_bytes()).is_none()));
        let (fast_events, fast_message) = run(&compact);
        let (slow_events, slow_message) = run(&padded);
        assert_eq!(fast_events, slow_events);
        assert_eq!(fast_message, slow_message);
        assert_eq!(fast_message["content"][0]["text"], "Hello \"x\"");
        assert_eq!(fast_message["content"][1]["arguments"]["path"], "a");
    }

    #[test]
    fn stop_statuses() {
        assert_eq!(map_status(None).unwrap(), StopReason::Stop);
        assert_eq!(map_status(Some("completed")).unwrap(), StopReason::Stop);
        assert_eq!(map_status(Some("incomplete")).unwrap(), StopReason::Length);
        assert_eq!(map_status(Some("cancelled")).unwrap(), StopReason::Error);
        assert_eq!(
            map_status(Some("weird")).unwrap_err().message(),
            "Unhandled stop reason: weird"
        );
    }
}
