//! Stream decoding: `chat.completion.chunk` payloads into [`AssistantMessageEvent`]s, as
//! pi-ai 0.73.1 reads them.
//!
//! [`AssistantMessageEvent`]: crate::AssistantMessageEvent

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::AssistantMessageEvent as E;
use crate::llm::json::{js, parse_streaming_json};
use crate::llm::message::{AssistantContent, AssistantMessage, StopReason, ToolCall, Usage};
use crate::llm::model::{Model, ModelCost};
use crate::providers::http::{Decoder, Emit, repair_json, stream_event_error};
use crate::providers::json_scan::{Cursor, Seen};
use crate::providers::sse::SseEvent;

/// The delta fields that carry reasoning, in pi's order of preference. The one a stream
/// used is kept as the thinking block's `thinkingSignature`, and the reasoning goes back in
/// that field on replay.
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

// ------------------------------------------------------------------------------------------
// Wire types: flat, borrowed, lenient where servers disagree on types.

/// One `chat.completion.chunk`.
#[derive(Debug, Deserialize)]
struct WireChunk<'a> {
    #[serde(default, borrow)]
    id: Text<'a>,
    #[serde(default, borrow)]
    model: Text<'a>,
    #[serde(default, borrow)]
    choices: Choices<'a>,
    #[serde(default)]
    usage: Option<Box<WireUsage>>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
struct WireChoice<'a> {
    #[serde(default)]
    index: Index,
    #[serde(default, borrow)]
    delta: Option<WireDelta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Text<'a>,
    /// Moonshot reports usage here.
    #[serde(default)]
    usage: Option<Box<WireUsage>>,
}

#[derive(Debug, Default, Deserialize)]
struct WireDelta<'a> {
    #[serde(default, borrow)]
    content: DeltaContent<'a>,
    #[serde(default, borrow)]
    reasoning_content: Text<'a>,
    #[serde(default, borrow)]
    reasoning: Text<'a>,
    #[serde(default, borrow)]
    reasoning_text: Text<'a>,
    #[serde(default, borrow)]
    refusal: Text<'a>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<WireToolCall<'a>>>,
    #[serde(default, borrow)]
    reasoning_details: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall<'a> {
    #[serde(default)]
    index: Index,
    #[serde(default, borrow)]
    id: Text<'a>,
    #[serde(default, borrow)]
    function: Option<WireFunction<'a>>,
}

#[derive(Debug, Deserialize)]
struct WireFunction<'a> {
    #[serde(default, borrow)]
    name: Text<'a>,
    #[serde(default, borrow)]
    arguments: Arguments<'a>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Count,
    #[serde(default)]
    completion_tokens: Count,
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
    /// DeepSeek's name for cached prompt tokens.
    #[serde(default)]
    prompt_cache_hit_tokens: Count,
}

#[derive(Debug, Default, Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Count,
    #[serde(default)]
    cache_write_tokens: Count,
}

/// A string field; any other JSON type reads as absent.
#[derive(Debug, Default)]
struct Text<'a>(Option<Cow<'a, str>>);

impl<'a> Text<'a> {
    /// The string when present and not empty (JavaScript truthiness).
    fn non_empty(&self) -> Option<&str> {
        self.0.as_deref().filter(|s| !s.is_empty())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StringVisitor {
            object_as_json: false,
        })
        .map(Text)
    }
}

/// A token count, read by the shared lenient reader ([`crate::providers::wire_count`]):
/// a negative number is 0, a fraction is cut, a huge number saturates, anything else is absent.
#[derive(Debug, Default, Clone, Copy)]
struct Count(Option<u64>);

impl Count {
    fn or_zero(self) -> u64 {
        self.0.unwrap_or(0)
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::providers::wire_count::count(d).map(Count)
    }
}

/// A choice's or tool call's index: as [`Count`], but a negative number is absent.
#[derive(Debug, Default, Clone, Copy)]
struct Index(Option<u64>);

impl<'de> Deserialize<'de> for Index {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::providers::wire_count::index(d).map(Index)
    }
}

/// `delta.content`: a string, or (Mistral's reasoning models) an array of parts.
#[derive(Debug, Default)]
enum DeltaContent<'a> {
    #[default]
    None,
    Text(Cow<'a, str>),
    Parts(Vec<Value>),
}

impl<'de: 'a, 'a> Deserialize<'de> for DeltaContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = DeltaContent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(DeltaContent::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(DeltaContent::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(DeltaContent::Text(Cow::Owned(v)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(DeltaContent::None)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(DeltaContent::None)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(DeltaContent::None)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(DeltaContent::None)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(DeltaContent::None)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(DeltaContent::None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                while let Some(part) = seq.next_element::<Value>()? {
                    parts.push(part);
                }
                Ok(DeltaContent::Parts(parts))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                // A single part object.
                let part = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(DeltaContent::Parts(vec![part]))
            }
        }
        d.deserialize_any(ContentVisitor)
    }
}

/// `function.arguments`: a string fragment; an object (some servers send the arguments
/// whole) reads as its JSON text.
#[derive(Debug, Default)]
struct Arguments<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Arguments<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = d.deserialize_any(StringVisitor {
            object_as_json: true,
        })?;
        Ok(Arguments(value))
    }
}

/// Reads a string (borrowed when it can be) and takes anything else as absent, as
/// JavaScript's `typeof x === "string"` checks do; with `object_as_json`, an object reads as
/// its `JSON.stringify` text.
struct StringVisitor {
    object_as_json: bool,
}

impl<'de> Visitor<'de> for StringVisitor {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v)))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if !self.object_as_json {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(None);
        }
        let value = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Some(Cow::Owned(js::to_string(&value))))
    }
}

/// `choices`, without an allocation for the usual single choice.
#[derive(Debug, Default)]
struct Choices<'a> {
    first: Option<WireChoice<'a>>,
    rest: Vec<WireChoice<'a>>,
}

impl<'a> Choices<'a> {
    fn all(self) -> impl Iterator<Item = WireChoice<'a>> {
        self.first.into_iter().chain(self.rest)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Choices<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ChoicesVisitor;
        impl<'de> Visitor<'de> for ChoicesVisitor {
            type Value = Choices<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Choices::default())
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Choices::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Choices {
                    first: seq.next_element()?,
                    rest: Vec::new(),
                };
                while let Some(choice) = seq.next_element()? {
                    out.rest.push(choice);
                }
                Ok(out)
            }
        }
        d.deserialize_any(ChoicesVisitor)
    }
}

// ------------------------------------------------------------------------------------------
// The decoder

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolCall,
}

/// A tool call being streamed.
#[derive(Debug)]
struct ToolBlock {
    content_index: usize,
    /// The call's `index` in `delta.tool_calls`, once known.
    stream_index: Option<u64>,
    id: String,
    name: String,
}

/// Decodes an OpenAI Chat Completions stream.
///
/// Like pi, a reply has at most one text block and one thinking block (later deltas of
/// either kind extend it), any number of tool calls, and every block ends (`*_end`) when
/// the stream does, in content order.
#[derive(Debug)]
pub(crate) struct CompletionsDecoder {
    model_id: String,
    cost: ModelCost,
    usage: Usage,
    response_id: Option<String>,
    response_model: Option<String>,
    stop_reason: StopReason,
    /// `finish_reason` that makes the reply a failure (`content_filter`, …).
    failed_finish: Option<Error>,
    /// What the model said instead of answering (`delta.refusal`).
    refusal: String,
    /// Content blocks in order.
    blocks: Vec<BlockKind>,
    text: Option<usize>,
    /// The thinking block and the delta field its reasoning came in.
    thinking: Option<(usize, Option<&'static str>)>,
    tools: Vec<ToolBlock>,
    /// The `index` of the choice this reply follows; other choices (`n > 1`) are ignored.
    choice_index: Option<u64>,
    /// OpenRouter's encrypted reasoning per tool-call id, as JSON text.
    reasoning_details: Vec<(String, String)>,
    saw_finish: bool,
    saw_done: bool,
}

impl CompletionsDecoder {
    pub(crate) fn new(model: &Model) -> Self {
        CompletionsDecoder {
            model_id: model.id.clone(),
            cost: model.cost,
            usage: Usage::new(0, 0, 0, 0),
            response_id: None,
            response_model: None,
            stop_reason: StopReason::Stop,
            failed_finish: None,
            refusal: String::new(),
            blocks: Vec::new(),
            text: None,
            thinking: None,
            tools: Vec::new(),
            choice_index: None,
            reasoning_details: Vec::new(),
            saw_finish: false,
            saw_done: false,
        }
    }

    fn new_block(&mut self, kind: BlockKind) -> usize {
        self.blocks.push(kind);
        self.blocks.len() - 1
    }

    fn text_block(&mut self, out: &mut Emit<'_>) -> usize {
        if let Some(index) = self.text {
            return index;
        }
        let index = self.new_block(BlockKind::Text);
        self.text = Some(index);
        out.push(E::TextStart {
            content_index: index,
        });
        index
    }

    fn thinking_block(&mut self, field: Option<&'static str>, out: &mut Emit<'_>) -> usize {
        if let Some((index, _)) = self.thinking {
            return index;
        }
        let index = self.new_block(BlockKind::Thinking);
        self.thinking = Some((index, field));
        out.push(E::ThinkingStart {
            content_index: index,
        });
        index
    }

    /// The tool block a `tool_calls` entry belongs to (by `index`, else by `id`), started if
    /// new. An entry whose `index` is taken by a call with another id starts a new call:
    /// some servers number every call 0.
    fn tool_block(&mut self, call: &WireToolCall<'_>, out: &mut Emit<'_>) -> usize {
        let index = call.index.0;
        let id = call.id.non_empty();
        let by_index = index
            .and_then(|i| self.tools.iter().rposition(|t| t.stream_index == Some(i)))
            .filter(|&k| {
                let known = &self.tools[k].id;
                id.is_none_or(|id| known.is_empty() || known == id)
            });
        let found =
            by_index.or_else(|| id.and_then(|id| self.tools.iter().rposition(|t| t.id == id)));
        let slot = match found {
            Some(slot) => slot,
            None => {
                let content_index = self.new_block(BlockKind::ToolCall);
                let name = call
                    .function
                    .as_ref()
                    .and_then(|f| f.name.non_empty())
                    .unwrap_or("")
                    .to_owned();
                let id = id.unwrap_or("").to_owned();
                out.push(E::ToolcallStart {
                    content_index,
                    id: id.clone(),
                    tool_name: name.clone(),
                });
                self.tools.push(ToolBlock {
                    content_index,
                    stream_index: index,
                    id,
                    name,
                });
                self.tools.len() - 1
            }
        };
        let block = &mut self.tools[slot];
        if block.stream_index.is_none() {
            block.stream_index = index;
        }
        if block.id.is_empty()
            && let Some(id) = id
        {
            id.clone_into(&mut block.id);
        }
        if block.name.is_empty()
            && let Some(name) = call.function.as_ref().and_then(|f| f.name.non_empty())
        {
            name.clone_into(&mut block.name);
        }
        block.content_index
    }

    /// Whether to read `choice`: the first choice index seen is followed; others are
    /// further completions of an `n > 1` request.
    fn follows(&mut self, choice: &WireChoice<'_>) -> bool {
        match (choice.index.0, self.choice_index) {
            (None, _) => true,
            (Some(i), None) => {
                self.choice_index = Some(i);
                true
            }
            (Some(i), Some(followed)) => i == followed,
        }
    }

    fn handle(&mut self, chunk: WireChunk<'_>, out: &mut Emit<'_>) {
        if self.response_id.as_deref().is_none_or(str::is_empty)
            && let Some(id) = chunk.id.0
        {
            self.response_id = Some(id.into_owned());
        }
        if self.response_model.is_none()
            && let Some(model) = chunk.model.non_empty()
            && model != self.model_id
        {
            self.response_model = Some(model.to_owned());
        }
        let chunk_has_usage = chunk.usage.is_some();
        if let Some(usage) = chunk.usage {
            self.usage = parse_usage(&usage);
        }
        let Some(choice) = chunk.choices.all().find(|c| self.follows(c)) else {
            return;
        };
        if !chunk_has_usage && let Some(usage) = &choice.usage {
            self.usage = parse_usage(usage);
        }
        if let Some(reason) = choice.finish_reason.non_empty() {
            self.saw_finish = true;
            match map_finish_reason(reason) {
                Ok(stop) => {
                    self.stop_reason = stop;
                    self.failed_finish = None;
                }
                Err(error) => {
                    self.stop_reason = StopReason::Error;
                    self.failed_finish = Some(error);
                }
            }
        }
        let Some(delta) = choice.delta else {
            return;
        };
        match delta.content {
            DeltaContent::Text(text) if !text.is_empty() => {
                let index = self.text_block(out);
                out.push(E::TextDelta {
                    content_index: index,
                    delta: text.into_owned(),
                });
            }
            DeltaContent::Parts(parts) => self.content_parts(&parts, out),
            _ => {}
        }
        // The first non-empty reasoning field (chutes sends the same text in two).
        let reasoning = [
            &delta.reasoning_content,
            &delta.reasoning,
            &delta.reasoning_text,
        ]
        .into_iter()
        .zip(REASONING_FIELDS)
        .find_map(|(text, field)| text.non_empty().map(|t| (t, field)));
        if let Some((text, field)) = reasoning {
            let index = self.thinking_block(Some(field), out);
            out.push(E::ThinkingDelta {
                content_index: index,
                delta: text.to_owned(),
            });
        }
        if let Some(refusal) = delta.refusal.non_empty() {
            // pi drops refusals; ours shows the text and fails the reply as refused.
            let index = self.text_block(out);
            self.refusal.push_str(refusal);
            out.push(E::TextDelta {
                content_index: index,
                delta: refusal.to_owned(),
            });
        }
        for call in delta.tool_calls.iter().flatten() {
            let index = self.tool_block(call, out);
            let arguments = call
                .function
                .as_ref()
                .and_then(|f| f.arguments.0.as_deref())
                .unwrap_or("");
            out.push(E::ToolcallDelta {
                content_index: index,
                delta: arguments.to_owned(),
            });
        }
        if let Some(raw) = delta.reasoning_details {
            self.reasoning_details(raw);
        }
    }

    /// Mistral's content parts: `{"type":"text","text":…}` and
    /// `{"type":"thinking","thinking":[{"type":"text","text":…}]}` (pi appends the array
    /// itself to the text, as `[object Object]`).
    fn content_parts(&mut self, parts: &[Value], out: &mut Emit<'_>) {
        for part in parts {
            match part.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(text) = part
                        .get("text")
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                    {
                        let index = self.text_block(out);
                        out.push(E::TextDelta {
                            content_index: index,
                            delta: text.to_owned(),
                        });
                    }
                }
                Some("thinking") => {
                    let text: String = match part.get("thinking") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Array(items)) => items
                            .iter()
                            .filter_map(|i| i.get("text").and_then(Value::as_str))
                            .collect(),
                        _ => String::new(),
                    };
                    if !text.is_empty() {
                        let index = self.thinking_block(None, out);
                        out.push(E::ThinkingDelta {
                            content_index: index,
                            delta: text,
                        });
                    }
                }
                _ => {}
            }
        }
    }

    /// OpenRouter's `reasoning_details`: encrypted entries belong to the tool call with their
    /// `id` and are replayed with it (`thoughtSignature`).
    fn reasoning_details(&mut self, raw: &RawValue) {
        let Ok(details) = serde_json::from_str::<Vec<Value>>(raw.get()) else {
            return;
        };
        for detail in details {
            let id = detail
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let has_data = detail.get("data").is_some_and(super::compat::truthy);
            if detail.get("type").and_then(Value::as_str) == Some("reasoning.encrypted")
                && has_data
                && let Some(id) = id
            {
                let json = js::to_string(&detail);
                let id = id.to_owned();
                match self.reasoning_details.iter_mut().find(|(k, _)| *k == id) {
                    Some(entry) => entry.1 = json,
                    None => self.reasoning_details.push((id, json)),
                }
            }
        }
    }

    fn thought_signature(&self, call_id: &str) -> Option<String> {
        self.reasoning_details
            .iter()
            .find(|(id, _)| id == call_id)
            .map(|(_, json)| json.clone())
    }
}

/// pi's `parseChunkUsage`: cached tokens exclude this request's cache writes (OpenRouter
/// counts them in both), and `input` excludes both.
fn parse_usage(raw: &WireUsage) -> Usage {
    let prompt = raw.prompt_tokens.or_zero();
    let details = raw.prompt_tokens_details.as_ref();
    let cached = details
        .and_then(|d| d.cached_tokens.0)
        .or(raw.prompt_cache_hit_tokens.0)
        .unwrap_or(0);
    let cache_write = details.map_or(0, |d| d.cache_write_tokens.or_zero());
    let cache_read = if cache_write > 0 {
        cached.saturating_sub(cache_write)
    } else {
        cached
    };
    let input = prompt
        .saturating_sub(cache_read)
        .saturating_sub(cache_write);
    Usage::new(
        input,
        raw.completion_tokens.or_zero(),
        cache_read,
        cache_write,
    )
}

/// pi's `mapStopReason`.
fn map_finish_reason(reason: &str) -> Result<StopReason, Error> {
    match reason {
        "stop" | "end" => Ok(StopReason::Stop),
        "length" => Ok(StopReason::Length),
        "tool_calls" | "function_call" => Ok(StopReason::ToolUse),
        "content_filter" => Err(Error::new(
            ErrorKind::Refused,
            "Provider finish_reason: content_filter",
        )),
        other => Err(Error::from_message(format!(
            "Provider finish_reason: {other}"
        ))),
    }
}

fn clip(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        Some((i, _)) => Cow::Owned(format!("{}…", &text[..i])),
        None => Cow::Borrowed(text),
    }
}

impl Decoder for CompletionsDecoder {
    fn on_event(&mut self, sse: SseEvent<'_>, out: &mut Emit<'_>) -> Result<(), Error> {
        if self.saw_done {
            return Ok(()); // pi reads nothing after [DONE]
        }
        let data = sse.data();
        if data.starts_with(b"[DONE]") {
            self.saw_done = true;
            return Ok(());
        }
        if data.trim_ascii().is_empty() {
            return Ok(());
        }
        if let Some(chunk) = fast_chunk(data) {
            self.handle(chunk, out);
            return Ok(());
        }
        let chunk = match serde_json::from_slice::<WireChunk<'_>>(data) {
            Ok(chunk) => chunk,
            Err(first) => {
                let text = String::from_utf8_lossy(data);
                let repaired = repair_json(&text);
                let parsed = match &repaired {
                    Cow::Owned(fixed) => serde_json::from_str::<WireChunk<'_>>(fixed).ok(),
                    Cow::Borrowed(_) => None,
                };
                match parsed {
                    Some(chunk) => {
                        if chunk.error.is_some_and(is_truthy_raw) {
                            return Err(stream_event_error(repaired.as_bytes()));
                        }
                        self.handle(chunk, out);
                        return Ok(());
                    }
                    None => {
                        return Err(Error::new(
                            ErrorKind::InvalidResponse,
                            format!(
                                "Could not parse OpenAI stream chunk: {first}; data={}",
                                clip(&text, 300)
                            ),
                        ));
                    }
                }
            }
        };
        // An error inside a successful stream (OpenRouter's upstream failures, …).
        if chunk.error.is_some_and(is_truthy_raw) {
            return Err(stream_event_error(data));
        }
        self.handle(chunk, out);
        Ok(())
    }

    fn on_end(&mut self, out: &mut Emit<'_>) -> Result<(), Error> {
        if !self.saw_done && !self.saw_finish {
            return Err(Error::new(
                ErrorKind::InvalidResponse,
                "OpenAI stream ended before a finish_reason or [DONE]",
            ));
        }
        // pi ends every block here, in content order, not when the next block starts.
        for (content_index, kind) in self.blocks.iter().enumerate() {
            let current = out.message().content.get(content_index);
            let end = match (kind, current) {
                (BlockKind::Text, Some(AssistantContent::Text(t))) => E::TextEnd {
                    content_index,
                    content: t.text.clone(),
                },
                (BlockKind::Thinking, Some(AssistantContent::Thinking(t))) => E::ThinkingEnd {
                    content_index,
                    content: t.thinking.clone(),
                },
                (BlockKind::ToolCall, _) => {
                    let Some(block) = self.tools.iter().find(|t| t.content_index == content_index)
                    else {
                        continue;
                    };
                    let text = out.tool_arguments_text(content_index).unwrap_or("");
                    let mut call = ToolCall::new(
                        block.id.clone(),
                        block.name.clone(),
                        Value::Object(parse_streaming_json(text)),
                    );
                    call.thought_signature = self.thought_signature(&block.id);
                    E::ToolcallEnd {
                        content_index,
                        tool_call: call,
                    }
                }
                _ => continue,
            };
            out.push(end);
        }
        if let Some(error) = self.failed_finish.take() {
            return Err(error);
        }
        if !self.refusal.is_empty() {
            return Err(Error::new(
                ErrorKind::Refused,
                format!("The model refused to answer: {}", clip(&self.refusal, 600)),
            ));
        }
        Ok(())
    }

    fn is_complete(&self) -> bool {
        self.saw_done || self.saw_finish
    }

    fn finish(&mut self, message: &mut AssistantMessage) {
        if let Some((index, field)) = self.thinking
            && let Some(AssistantContent::Thinking(t)) = message.content.get_mut(index)
        {
            t.thinking_signature = field.map(str::to_owned);
        }
        // Ids and names that arrived after a call started, and OpenRouter's signatures, for
        // messages that end without the `toolcall_end` events (errors, aborts).
        for block in &self.tools {
            if let Some(AssistantContent::ToolCall(call)) =
                message.content.get_mut(block.content_index)
            {
                if call.id.is_empty() {
                    call.id.clone_from(&block.id);
                }
                if call.name.is_empty() {
                    call.name.clone_from(&block.name);
                }
                if call.thought_signature.is_none() {
                    call.thought_signature = self.thought_signature(&block.id);
                }
            }
        }
        message.response_id.clone_from(&self.response_id);
        message.response_model.clone_from(&self.response_model);
        message.stop_reason = self.stop_reason.clone();
        let mut usage = self.usage.clone();
        let prices = Model::new("", "", "", "").with_cost(self.cost);
        crate::llm::calculate_cost(&prices, &mut usage);
        usage.recompute_total();
        message.usage = usage;
    }
}

/// JavaScript truthiness of a raw JSON value (`data.error` in the OpenAI SDK).
fn is_truthy_raw(raw: &RawValue) -> bool {
    !matches!(
        raw.get().trim(),
        "null" | "false" | "0" | "\"\"" | "-0" | "0.0"
    )
}

/// The common chunk read without serde: one choice whose delta is text (`content`, maybe
/// with `role` and a null `refusal`), no finish reason and no usage, in the layout OpenAI
/// writes: `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o",
/// "system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"…"},"logprobs":null,
/// "finish_reason":null}],"usage":null}`, members in any order. Anything else (a finish
/// reason, usage, reasoning, tool calls, another member, a value of another type, a repeated
/// member) returns `None` and goes through [`WireChunk`]. A long reply is millions of these
/// chunks, and serde's derived visitors spend most of their time on the members that are not
/// read.
fn fast_chunk(data: &[u8]) -> Option<WireChunk<'_>> {
    let mut c = Cursor::new(data);
    c.byte(b'{')?;
    let mut seen = Seen::default();
    let (mut id, mut model, mut choice) = (None, None, None);
    loop {
        match c.key()? {
            b"id" => {
                seen.first(0)?;
                id = Some(Cow::Borrowed(c.plain_string()?));
            }
            b"model" => {
                seen.first(1)?;
                model = Some(Cow::Borrowed(c.plain_string()?));
            }
            b"choices" => {
                seen.first(2)?;
                choice = Some(text_choice(&mut c)?);
            }
            b"usage" => seen.first(3).and_then(|()| c.null())?,
            b"object" => seen.first(4).and_then(|()| c.skip_string())?,
            b"created" => seen.first(5).and_then(|()| c.integer()).map(drop)?,
            b"system_fingerprint" => seen.first(6).and_then(|()| string_or_null(&mut c))?,
            b"service_tier" => seen.first(7).and_then(|()| string_or_null(&mut c))?,
            b"obfuscation" => seen.first(8).and_then(|()| c.skip_string())?,
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    if !c.at_end() {
        return None;
    }
    Some(WireChunk {
        id: Text(id),
        model: Text(model),
        choices: Choices {
            first: Some(choice?),
            rest: Vec::new(),
        },
        usage: None,
        error: None,
    })
}

/// A string that is not read, or `null`.
fn string_or_null(c: &mut Cursor<'_>) -> Option<()> {
    if c.literal(b"null") {
        Some(())
    } else {
        c.skip_string()
    }
}

/// `[{"index":N,"delta":{"content":"…"},"logprobs":null,"finish_reason":null}]`: one choice
/// with a text delta.
fn text_choice<'a>(c: &mut Cursor<'a>) -> Option<WireChoice<'a>> {
    c.byte(b'[')?;
    c.byte(b'{')?;
    let mut seen = Seen::default();
    let (mut index, mut content) = (None, None);
    loop {
        match c.key()? {
            b"index" => {
                seen.first(0)?;
                index = Some(c.integer()?);
            }
            b"delta" => {
                seen.first(1)?;
                content = Some(text_delta(c)?);
            }
            b"logprobs" => seen.first(2).and_then(|()| c.null())?,
            b"finish_reason" => seen.first(3).and_then(|()| c.null())?,
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    c.byte(b']')?;
    Some(WireChoice {
        index: Index(index),
        delta: Some(WireDelta {
            content: DeltaContent::Text(content?),
            ..WireDelta::default()
        }),
        finish_reason: Text(None),
        usage: None,
    })
}

/// `{"content":"…"}`, maybe with `"role"` and `"refusal":null`.
fn text_delta<'a>(c: &mut Cursor<'a>) -> Option<Cow<'a, str>> {
    c.byte(b'{')?;
    let mut seen = Seen::default();
    let mut content = None;
    loop {
        match c.key()? {
            b"content" => {
                seen.first(0)?;
                content = Some(c.string()?);
            }
            b"role" => seen.first(1).and_then(|()| c.skip_string())?,
            b"refusal" => seen.first(2).and_then(|()| c.null())?,
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    content
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::llm::event::PartialMessage;
    use crate::providers::sse::SseDecoder;

    #[test]
    fn fast_chunk_agrees_with_serde() {
        let cases: &[&[u8]] = &[
            br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1746600000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":" hashmap"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            br#"{"id":"c","choices":[{"index":2,"delta":{"content":"a \"q\" \\ \n \u00e9 \ud83d\ude48"}}],"service_tier":"default","obfuscation":"xyz"}"#,
            b" { \"choices\" : [ { \"delta\" : { \"content\" : \"caf\xc3\xa9 \xf0\x9f\x99\x88\" } } ] , \"model\" : \"m\" }\r\n",
        ];
        for data in cases {
            let fast = fast_chunk(data).expect("fast path taken");
            let slow: WireChunk<'_> = serde_json::from_slice(data).unwrap();
            assert_eq!(
                format!("{fast:?}"),
                format!("{slow:?}"),
                "{}",
                String::from_utf8_lossy(data)
            );
        }
        // Everything else goes to serde (which reads the first ones, rejects the last ones).
        for data in [
            &br#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#[..],
            br#"{"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":1}}"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"a"}}]}"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"}]}}]}"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"content":null}}]}"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"error":{"message":"x"}}"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"x_groq":{}}"#,
            br#"{"id":1,"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            br#"{"id":"c\u0031","choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            br#"{"id":"c","choices":[{"index":-1,"delta":{"content":"a"}}]}"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}"#,
            br#"{"id":"c","id":"d","choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]} x"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]"#,
            br#"{"id":"c","choices":[{"index":0,"delta":{"content":"bad \x escape"}}]}"#,
            b"{\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}",
            b"{\"choices\":[{\"delta\":{\"content\":\"raw\nnewline\"}}]}",
            b"",
        ] {
            assert!(fast_chunk(data).is_none(), "{}", String::from_utf8_lossy(data));
        }
    }

    /// Decodes `lines` (one `data:` payload each) and returns every event and the final
    /// message as JSON.
    fn decode(lines: &[String]) -> (Vec<Value>, Value) {
        let model = Model::new("gpt-4o", "openai-completions", "openai", "");
        let mut decoder = CompletionsDecoder::new(&model);
        let mut state = PartialMessage::new(AssistantMessage::new(
            "openai-completions",
            "openai",
            "gpt-4o",
        ));
        let mut events = Vec::new();
        let mut sse = SseDecoder::new();
        for line in lines {
            sse.feed(format!("data: {line}\n\n").as_bytes());
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
        let mut queue = VecDeque::new();
        decoder.on_end(&mut Emit::new(&mut queue, &state)).unwrap();
        for e in queue {
            state.apply(&e);
            events.push(serde_json::to_value(&e).unwrap());
        }
        let mut message = state.message().clone();
        decoder.finish(&mut message);
        let mut message = serde_json::to_value(&message).unwrap();
        message["timestamp"] = Value::Null; // differs between runs
        (events, message)
    }

    #[test]
    fn fast_and_full_paths_decode_the_same_stream() {
        let compact: Vec<String> = [
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"lo \"x\""},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}"#,
        ]
        .iter()
        .map(|l| (*l).to_owned())
        .collect();
        // The same chunks with a member the fast path does not know: serde reads them all.
        let padded: Vec<String> = compact
            .iter()
            .map(|l| l.replacen('{', r#"{"x_pad":0,"#, 1))
            .collect();
        assert_eq!(
            compact
                .iter()
                .filter(|l| fast_chunk(l.as_bytes()).is_some())
                .count(),
            3
        );
        assert!(padded.iter().all(|l| fast_chunk(l.as_bytes()).is_none()));
        let (fast_events, fast_message) = decode(&compact);
        let (slow_events, slow_message) = decode(&padded);
        assert_eq!(fast_events, slow_events);
        assert_eq!(fast_message, slow_message);
        assert_eq!(fast_message["content"][0]["text"], "Hello \"x\"");
        assert_eq!(fast_message["responseModel"], "gpt-4o-2024-08-06");
        assert_eq!(fast_message["responseId"], "chatcmpl-1");
    }
}
