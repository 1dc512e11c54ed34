//! Stream decoding: Mistral's `chat.completion.chunk` payloads into
//! [`AssistantMessageEvent`](E)s, as pi-ai 0.73.1 reads them through the Mistral SDK.
//!
//! The SDK validates every chunk before pi sees it (`CompletionEvent$inboundSchema`): a chunk
//! without a string `id` or `model`, a `choices` array, a choice without an integer `index`,
//! a `delta` object or a `finish_reason` (`null` or a string), a member of the wrong type,
//! or data that is not JSON, ends the reply with an error. The wire types below check the
//! same things; content parts the SDK does not recognise are skipped, as it skips them.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::request::derive_tool_call_id;
use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::AssistantMessageEvent as E;
use crate::llm::json::{js, parse_streaming_json};
use crate::llm::message::{AssistantContent, AssistantMessage, StopReason, ToolCall, Usage};
use crate::llm::model::{Model, ModelCost};
use crate::providers::http::{Decoder, Emit, stream_event_error};
use crate::providers::json_scan::{Cursor, Seen};
use crate::providers::sse::SseEvent;

// ------------------------------------------------------------------------------------------
// Wire types, as strict as the SDK's schemas.

/// `CompletionChunk`.
#[derive(Debug, Deserialize)]
struct WireChunk<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(default)]
    #[allow(dead_code)]
    object: Present<Str>,
    #[serde(default)]
    #[allow(dead_code)]
    created: Present<Int>,
    #[allow(dead_code)]
    model: Str,
    #[serde(default)]
    usage: Present<WireUsage>,
    #[serde(borrow)]
    choices: Vec<WireChoice<'a>>,
}

/// `UsageInfo` (other members are allowed).
#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Present<Int>,
    #[serde(default)]
    completion_tokens: Present<Int>,
    #[serde(default)]
    total_tokens: Present<Int>,
    #[serde(default)]
    #[allow(dead_code)]
    prompt_audio_seconds: Option<Int>,
    #[serde(default)]
    #[allow(dead_code)]
    service_tier: Option<Str>,
}

/// `CompletionResponseStreamChoice`.
#[derive(Debug, Deserialize)]
struct WireChoice<'a> {
    #[allow(dead_code)]
    index: Int,
    #[serde(borrow)]
    delta: WireDelta<'a>,
    #[serde(borrow)]
    finish_reason: NullableText<'a>,
}

/// `DeltaMessage`.
#[derive(Debug, Deserialize)]
struct WireDelta<'a> {
    #[serde(default)]
    #[allow(dead_code)]
    role: Option<Str>,
    #[serde(default, borrow)]
    content: Option<DeltaContent<'a>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<WireToolCall<'a>>>,
    #[serde(default)]
    #[allow(dead_code)]
    tool_call_id: Option<Str>,
    #[serde(default)]
    #[allow(dead_code)]
    index: Option<Int>,
    #[serde(default)]
    #[allow(dead_code)]
    metadata: Option<Object>,
}

/// `ToolCall`: `id` defaults to `"null"`, `index` to 0.
#[derive(Debug, Deserialize)]
struct WireToolCall<'a> {
    #[serde(default)]
    id: Present<String>,
    #[serde(default, rename = "type")]
    #[allow(dead_code)]
    kind: Present<Str>,
    #[serde(borrow)]
    function: WireFunction<'a>,
    #[serde(default)]
    index: Present<Int>,
}

/// `FunctionCall`: `arguments` is a string or an object.
#[derive(Debug, Deserialize)]
struct WireFunction<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    arguments: Arguments<'a>,
}

/// A member that may be absent but not `null`: the value's own type decides what it takes.
#[derive(Debug)]
struct Present<T>(Option<T>);

impl<T> Default for Present<T> {
    fn default() -> Self {
        Present(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Present<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|v| Present(Some(v)))
    }
}

/// A string whose value is not read.
#[derive(Debug)]
struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
        }
        d.deserialize_str(V)
    }
}

/// An object whose members are not read.
#[derive(Debug)]
struct Object;

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Object;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Object)
            }
        }
        d.deserialize_map(V)
    }
}

/// The largest integer a double holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// zod's `z.int()`: a safe integer, `1.0` included.
#[derive(Debug, Clone, Copy)]
struct Int(i64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Int;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a safe integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
                self.visit_f64(v as f64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Int, E> {
                if v.is_finite() && v.fract() == 0.0 && v.abs() <= MAX_SAFE {
                    Ok(Int(v as i64))
                } else {
                    Err(E::invalid_value(de::Unexpected::Float(v), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// `finish_reason`: required, `null` or a string.
#[derive(Debug)]
struct NullableText<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for NullableText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NullableText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("null or a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(NullableText(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(NullableText(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(NullableText(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// `delta.content`: a string, or an array of content chunks (read later, leniently).
#[derive(Debug)]
enum DeltaContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Value>),
}

impl<'de: 'a, 'a> Deserialize<'de> for DeltaContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DeltaContent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content chunks")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(DeltaContent::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(DeltaContent::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                while let Some(part) = seq.next_element::<Value>()? {
                    parts.push(part);
                }
                Ok(DeltaContent::Parts(parts))
            }
        }
        d.deserialize_any(V)
    }
}

/// `function.arguments`: a string, or an object (read as its `JSON.stringify` text).
#[derive(Debug)]
struct Arguments<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Arguments<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Arguments<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an object")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Arguments(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Arguments(Cow::Owned(v.to_owned())))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let value = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Arguments(Cow::Owned(js::to_string(&value))))
            }
        }
        d.deserialize_any(V)
    }
}

/// What a content chunk of `delta.content` is, as the SDK reads it.
enum Item<'v> {
    /// A string, or a `text` chunk.
    Text(&'v str),
    /// A `thinking` chunk: the text of its text parts.
    Thinking(String),
    /// Anything else (other chunk types, chunks the SDK does not recognise).
    Other,
}

/// A content chunk of an array. The SDK turns a chunk that fails its schema into an
/// "unknown" chunk, which pi skips (a string inside the array included).
fn item(part: &Value) -> Item<'_> {
    let Value::Object(chunk) = part else {
        return Item::Other;
    };
    match chunk.get("type").and_then(Value::as_str) {
        Some("text") => match chunk.get("text") {
            Some(Value::String(text)) => Item::Text(text),
            _ => Item::Other,
        },
        Some("thinking") => thinking_text(chunk).map_or(Item::Other, Item::Thinking),
        _ => Item::Other,
    }
}

/// The text of a valid `ThinkChunk`: its parts are text, reference or tool-reference chunks
/// (any other part makes the whole chunk unknown); the text parts' non-empty texts, joined.
fn thinking_text(chunk: &serde_json::Map<String, Value>) -> Option<String> {
    let Some(Value::Array(parts)) = chunk.get("thinking") else {
        return None;
    };
    if !matches!(
        chunk.get("signature"),
        None | Some(Value::Null | Value::String(_))
    ) || !matches!(chunk.get("closed"), None | Some(Value::Bool(_)))
    {
        return None;
    }
    let mut text = String::new();
    for part in parts {
        let Value::Object(part) = part else {
            return None;
        };
        let kind = part.get("type");
        let is = |name: &str| kind.is_none() || kind.and_then(Value::as_str) == Some(name);
        let string = |key: &str| part.get(key).and_then(Value::as_str);
        let nullable_string =
            |key: &str| matches!(part.get(key), None | Some(Value::Null | Value::String(_)));
        if is("text")
            && let Some(t) = string("text")
        {
            text.push_str(t);
            continue;
        }
        let tool_reference = is("tool_reference")
            && string("tool").is_some()
            && string("title").is_some()
            && ["url", "favicon", "description"]
                .iter()
                .all(|k| nullable_string(k));
        let reference = is("reference")
            && part
                .get("reference_ids")
                .and_then(Value::as_array)
                .is_some_and(|ids| {
                    ids.iter().all(|id| {
                        id.is_string()
                            || id
                                .as_f64()
                                .is_some_and(|x| x.fract() == 0.0 && x.abs() <= MAX_SAFE)
                    })
                });
        // Valid parts without text add nothing; any other part voids the chunk.
        if !tool_reference && !reference {
            return None;
        }
    }
    Some(text)
}

// ------------------------------------------------------------------------------------------
// The fast path

/// A chunk in a common layout, read by [`fast_chunk`].
#[derive(Debug, PartialEq)]
struct FastChunk<'a> {
    id: Cow<'a, str>,
    /// `None` when `choices` is empty.
    choice: Option<FastChoice<'a>>,
}

#[derive(Debug, PartialEq)]
struct FastChoice<'a> {
    finish_reason: Option<Cow<'a, str>>,
    content: FastContent<'a>,
    call: Option<Call<'a>>,
}

/// `delta.content`: absent or `null`, a string or a one-chunk array of a `text` chunk
/// (both [`FastContent::Text`]), or a one-chunk array of a `thinking` chunk of text parts
/// (their texts, joined).
#[derive(Debug, PartialEq)]
enum FastContent<'a> {
    None,
    Text(Cow<'a, str>),
    Thinking(Cow<'a, str>),
}

/// `Number.MAX_SAFE_INTEGER`, as an integer.
const MAX_SAFE_INT: u64 = 9_007_199_254_740_991;

/// The common chunks, read without serde: one choice (or none) whose delta holds text, a
/// text or thinking chunk, or one tool call with a string `arguments`, in the layouts Mistral
/// writes, members in any order:
/// `{"id":"…","object":"chat.completion.chunk","created":N,"model":"…","choices":[{"index":0,
/// "delta":{"content":"…"},"finish_reason":null}],"p":"…"}` (`"logprobs":null` in the
/// choice; `"role"`, `"index"`, `"tool_calls":[{"id":"…","type":"function","function":
/// {"name":"…","arguments":"…"},"index":0}]` in the delta).
///
/// Anything else returns `None` and goes through [`WireChunk`]: usage, two choices or tool
/// calls, other content chunks, members this path does not know, a repeated member, a value
/// of a type this path does not take (even one serde takes: `1.0` as an integer, an object
/// as `arguments`), whatever serde refuses. What this path takes, serde reads the same way.
///
/// A chunk that starts with the bytes of `head` (an earlier chunk's, up to its delta) is
/// read from there on: reading is forward-only and looks at no byte past the `:` that ends
/// the head, so the same bytes read the same way. The chunks of a stream start with the
/// same head, which is most of a small chunk.
fn fast_chunk<'a>(data: &'a [u8], head: &mut Head) -> Option<FastChunk<'a>> {
    let mut c;
    let mut top = Top::default();
    let mut new_head = None;
    if let Some(resumed) = head.resume(data) {
        c = resumed;
        let state = &head.state;
        top.seen = state.seen;
        top.model = state.model;
        if let Some(at) = state.id.clone() {
            top.id = Some(Cow::Borrowed(std::str::from_utf8(data.get(at)?).ok()?));
        }
        // The head ends in the first choice, after `"index":N,"delta":`.
        let mut choice = Choice {
            members: 2,
            index: true,
            ..Choice::default()
        };
        choice.seen.first(0)?;
        choice.seen.first(1)?;
        choice.delta = Some(fast_delta(&mut c)?);
        top.choices = Some(Some(end_choice(&mut c, choice, &mut None)?));
    } else {
        c = Cursor::new(data);
        c.byte(b'{')?;
        top_member(&mut c, &mut top, &mut new_head)?;
    }
    while c.next(b'}')? {
        top_member(&mut c, &mut top, &mut new_head)?;
    }
    if !top.model || !c.at_end() {
        return None;
    }
    let chunk = FastChunk {
        id: top.id?,
        choice: top.choices?,
    };
    if let Some((len, state)) = new_head {
        head.keep(&data[..len], state);
    }
    Some(chunk)
}

/// The head of a chunk [`fast_chunk`] read: its bytes up to the first choice's `delta`
/// value, and what reading them gave.
#[derive(Debug, Default)]
struct Head {
    /// Empty when there is none.
    bytes: Vec<u8>,
    state: HeadState,
}

/// What reading a head gave: the chunk's members read (the first choice's `index` aside).
#[derive(Debug, Default, Clone)]
struct HeadState {
    seen: Seen,
    /// Where the chunk's `id` is, when the head holds it.
    id: Option<Range<usize>>,
    model: bool,
}

impl Head {
    /// A cursor past the head, if `data` starts with it.
    fn resume<'a>(&self, data: &'a [u8]) -> Option<Cursor<'a>> {
        if self.bytes.is_empty() || !data.starts_with(&self.bytes) {
            return None;
        }
        Cursor::resume(data, self.bytes.len())
    }

    fn keep(&mut self, bytes: &[u8], state: HeadState) {
        if self.bytes != bytes {
            self.bytes.clear();
            self.bytes.extend_from_slice(bytes);
        }
        self.state = state;
    }
}

/// The chunk's members read so far.
#[derive(Debug, Default)]
struct Top<'a> {
    seen: Seen,
    id: Option<Cow<'a, str>>,
    /// Where `id` is in the chunk, when it has no escapes.
    id_at: Option<Range<usize>>,
    model: bool,
    choices: Option<Option<FastChoice<'a>>>,
}

/// One member of the chunk. Sets `head` to the chunk's head (its length and state) when one
/// can be resumed from: `index` the only member of the choice before `delta`, and an `id`
/// read before, if any, without escapes.
fn top_member<'a>(
    c: &mut Cursor<'a>,
    top: &mut Top<'a>,
    head: &mut Option<(usize, HeadState)>,
) -> Option<()> {
    match c.key()? {
        b"id" => {
            top.seen.first(0)?;
            c.peek()?;
            let start = c.pos();
            let id = c.string()?;
            if let Cow::Borrowed(_) = id {
                // Inside the quotes.
                top.id_at = Some(start + 1..c.pos() - 1);
            }
            top.id = Some(id);
        }
        b"object" => top.seen.first(1).and_then(|()| c.skip_string())?,
        b"created" => top.seen.first(2).and_then(|()| safe_integer(c)).map(drop)?,
        b"model" => {
            top.seen.first(3)?;
            c.skip_string()?;
            top.model = true;
        }
        b"choices" => {
            top.seen.first(4)?;
            let mut at_delta = None;
            top.choices = Some(fast_choices(c, &mut at_delta)?);
            if let Some(len) = at_delta
                && (top.id.is_none() || top.id_at.is_some())
            {
                let state = HeadState {
                    seen: top.seen,
                    id: top.id_at.clone(),
                    model: top.model,
                };
                *head = Some((len, state));
            }
        }
        // Mistral's padding: a member the SDK does not read.
        b"p" => top.seen.first(5).and_then(|()| c.skip_string())?,
        _ => return None,
    }
    Some(())
}

/// A safe integer written as plain digits (what [`Int`] takes, `1.0` and negatives aside).
fn safe_integer(c: &mut Cursor<'_>) -> Option<u64> {
    c.integer().filter(|&n| n <= MAX_SAFE_INT)
}

/// `null`, if it comes next.
fn null(c: &mut Cursor<'_>) -> bool {
    c.literal(b"null")
}

/// The choice's members read so far.
#[derive(Debug, Default)]
struct Choice<'a> {
    seen: Seen,
    /// How many members.
    members: usize,
    index: bool,
    delta: Option<(FastContent<'a>, Option<Call<'a>>)>,
    finish_reason: Option<Option<Cow<'a, str>>>,
}

/// `[]` or `[<choice>]`. `at_delta`: where the `delta` value starts, when `index` is the only
/// member before it.
fn fast_choices<'a>(
    c: &mut Cursor<'a>,
    at_delta: &mut Option<usize>,
) -> Option<Option<FastChoice<'a>>> {
    c.byte(b'[')?;
    if c.peek()? == b']' {
        c.byte(b']')?;
        return Some(None);
    }
    c.byte(b'{')?;
    let mut choice = Choice::default();
    let key = c.key()?;
    choice_member(c, &mut choice, key)?;
    end_choice(c, choice, at_delta).map(Some)
}

/// The choice's members after those read, and the end of `choices`.
fn end_choice<'a>(
    c: &mut Cursor<'a>,
    mut choice: Choice<'a>,
    at_delta: &mut Option<usize>,
) -> Option<FastChoice<'a>> {
    while c.next(b'}')? {
        let key = c.key()?;
        if key == b"delta" && choice.members == 1 && choice.index {
            *at_delta = Some(c.pos());
        }
        choice_member(c, &mut choice, key)?;
    }
    c.byte(b']')?;
    let (content, call) = choice.delta?;
    choice.index.then_some(FastChoice {
        finish_reason: choice.finish_reason?,
        content,
        call,
    })
}

/// The value of the choice's member `key`.
fn choice_member<'a>(c: &mut Cursor<'a>, choice: &mut Choice<'a>, key: &[u8]) -> Option<()> {
    choice.members += 1;
    match key {
        b"index" => {
            choice.seen.first(0)?;
            safe_integer(c)?;
            choice.index = true;
        }
        b"delta" => {
            choice.seen.first(1)?;
            choice.delta = Some(fast_delta(c)?);
        }
        b"finish_reason" => {
            choice.seen.first(2)?;
            choice.finish_reason = Some(if null(c) { None } else { Some(c.string()?) });
        }
        b"logprobs" => choice.seen.first(3).and_then(|()| c.null())?,
        _ => return None,
    }
    Some(())
}

/// The delta object: `content`, `tool_calls` (`null`, `[]` or one call), `role`, `index`.
fn fast_delta<'a>(c: &mut Cursor<'a>) -> Option<(FastContent<'a>, Option<Call<'a>>)> {
    c.byte(b'{')?;
    let (mut content, mut call) = (FastContent::None, None);
    if c.peek()? == b'}' {
        c.byte(b'}')?;
        return Some((content, call));
    }
    let mut seen = Seen::default();
    loop {
        match c.key()? {
            b"content" => {
                seen.first(0)?;
                content = match c.peek()? {
                    b'"' => FastContent::Text(c.long_string()?),
                    b'[' => fast_content_chunk(c)?,
                    b'n' if null(c) => FastContent::None,
                    _ => return None,
                };
            }
            b"tool_calls" => {
                seen.first(1)?;
                if !null(c) {
                    c.byte(b'[')?;
                    if c.peek()? == b']' {
                        c.byte(b']')?;
                    } else {
                        call = Some(fast_tool_call(c)?);
                        c.byte(b']')?;
                    }
                }
            }
            b"role" => {
                seen.first(2)?;
                if !null(c) {
                    c.skip_string()?;
                }
            }
            b"index" => {
                seen.first(3)?;
                if !null(c) {
                    safe_integer(c)?;
                }
            }
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    Some((content, call))
}

/// `[{"type":"text","text":"…"}]` or `[{"type":"thinking","thinking":[<text parts>]}]`.
fn fast_content_chunk<'a>(c: &mut Cursor<'a>) -> Option<FastContent<'a>> {
    c.byte(b'[')?;
    c.byte(b'{')?;
    let mut seen = Seen::default();
    let (mut kind, mut text, mut thinking) = (None, None, None);
    loop {
        match c.key()? {
            b"type" => {
                seen.first(0)?;
                kind = Some(c.plain_string()?);
            }
            b"text" => {
                seen.first(1)?;
                text = Some(c.long_string()?);
            }
            b"thinking" => {
                seen.first(2)?;
                thinking = Some(fast_thinking_parts(c)?);
            }
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    c.byte(b']')?;
    match (kind?, text, thinking) {
        ("text", Some(text), None) => Some(FastContent::Text(text)),
        ("thinking", None, Some(thinking)) => Some(FastContent::Thinking(thinking)),
        _ => None,
    }
}

/// A thinking chunk's parts, each `{"type":"text","text":"…"}` or `{"text":"…"}`: their
/// texts, joined.
fn fast_thinking_parts<'a>(c: &mut Cursor<'a>) -> Option<Cow<'a, str>> {
    c.byte(b'[')?;
    let mut joined = Cow::Borrowed("");
    if c.peek()? == b']' {
        c.byte(b']')?;
        return Some(joined);
    }
    loop {
        c.byte(b'{')?;
        let mut seen = Seen::default();
        let mut text = None;
        loop {
            match c.key()? {
                b"type" => {
                    seen.first(0)?;
                    if c.plain_string()? != "text" {
                        return None;
                    }
                }
                b"text" => {
                    seen.first(1)?;
                    text = Some(c.long_string()?);
                }
                _ => return None,
            }
            if !c.next(b'}')? {
                break;
            }
        }
        let text = text?;
        if joined.is_empty() {
            joined = text;
        } else {
            joined.to_mut().push_str(&text);
        }
        if !c.next(b']')? {
            break;
        }
    }
    Some(joined)
}

/// `{"id":"…","type":"function","function":{"name":"…","arguments":"…"},"index":N}`, `id`,
/// `type` and `index` optional.
fn fast_tool_call<'a>(c: &mut Cursor<'a>) -> Option<Call<'a>> {
    c.byte(b'{')?;
    let mut seen = Seen::default();
    let (mut id, mut index, mut function) = (None, 0, None);
    loop {
        match c.key()? {
            b"id" => {
                seen.first(0)?;
                id = Some(c.string()?);
            }
            b"type" => seen.first(1).and_then(|()| c.skip_string())?,
            b"function" => {
                seen.first(2)?;
                function = Some(fast_function(c)?);
            }
            b"index" => {
                seen.first(3)?;
                index = i64::try_from(safe_integer(c)?).ok()?;
            }
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    let (name, arguments) = function?;
    Some(Call {
        id,
        index,
        name,
        arguments,
    })
}

/// `{"name":"…","arguments":"…"}`.
fn fast_function<'a>(c: &mut Cursor<'a>) -> Option<(Cow<'a, str>, Cow<'a, str>)> {
    c.byte(b'{')?;
    let mut seen = Seen::default();
    let (mut name, mut arguments) = (None, None);
    loop {
        match c.key()? {
            b"name" => {
                seen.first(0)?;
                name = Some(c.string()?);
            }
            b"arguments" => {
                seen.first(1)?;
                arguments = Some(c.long_string()?);
            }
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    Some((name?, arguments?))
}

// ------------------------------------------------------------------------------------------
// The decoder

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
}

/// The text or thinking block that is open (pi's `currentBlock`).
#[derive(Debug)]
struct Current {
    kind: Kind,
    content_index: usize,
    /// Started during the current SSE event: the consumer's message does not hold it yet.
    fresh: bool,
    /// The deltas pushed during the current SSE event.
    pending: String,
}

/// A tool call, keyed by pi's `<id>:<index>`: the pair itself, which that text names
/// (the index, an integer, is what follows the last colon).
#[derive(Debug)]
struct ToolBlock {
    id: String,
    index: i64,
    content_index: usize,
    name: String,
}

/// A tool call of a chunk, read by [`WireToolCall`] or by the fast path.
#[derive(Debug, PartialEq)]
struct Call<'a> {
    /// `None` when absent (the SDK's default, `"null"`).
    id: Option<Cow<'a, str>>,
    index: i64,
    name: Cow<'a, str>,
    arguments: Cow<'a, str>,
}

impl<'a> From<WireToolCall<'a>> for Call<'a> {
    fn from(call: WireToolCall<'a>) -> Self {
        Call {
            id: call.id.0.map(Cow::Owned),
            index: call.index.0.map_or(0, |i| i.0),
            name: call.function.name,
            arguments: call.function.arguments.0,
        }
    }
}

/// Decodes a Mistral chat stream.
///
/// As pi: a text or thinking block is ended when a block of the other kind starts or a tool
/// call arrives; a tool call is found again by its id and index; every tool call ends after
/// the last block, at the end of the stream.
#[derive(Debug)]
pub(crate) struct MistralDecoder {
    cost: ModelCost,
    usage: Usage,
    response_id: Option<String>,
    stop_reason: StopReason,
    /// Content blocks so far.
    blocks: usize,
    current: Option<Current>,
    tools: Vec<ToolBlock>,
    saw_finish: bool,
    saw_done: bool,
    /// The head of the chunks the fast path reads.
    head: Head,
    /// Tests: every chunk read by serde, as before the fast path.
    #[cfg(test)]
    serde_only: bool,
}

impl MistralDecoder {
    pub(crate) fn new(model: &Model) -> Self {
        MistralDecoder {
            cost: model.cost,
            usage: Usage::new(0, 0, 0, 0),
            response_id: None,
            stop_reason: StopReason::Stop,
            blocks: 0,
            current: None,
            tools: Vec::new(),
            saw_finish: false,
            saw_done: false,
            head: Head::default(),
            #[cfg(test)]
            serde_only: false,
        }
    }

    /// A new SSE event: what was pushed before is in the consumer's message now.
    fn settle(&mut self) {
        if let Some(current) = &mut self.current {
            current.fresh = false;
            current.pending.clear();
        }
    }

    /// Ends the open text or thinking block.
    fn finish_current(&mut self, out: &mut Emit<'_>) {
        let Some(current) = self.current.take() else {
            return;
        };
        let index = current.content_index;
        let mut content = if current.fresh {
            String::new()
        } else {
            match (current.kind, out.message().content.get(index)) {
                (Kind::Text, Some(AssistantContent::Text(t))) => t.text.clone(),
                (Kind::Thinking, Some(AssistantContent::Thinking(t))) => t.thinking.clone(),
                _ => String::new(),
            }
        };
        content.push_str(&current.pending);
        out.push(match current.kind {
            Kind::Text => E::TextEnd {
                content_index: index,
                content,
            },
            Kind::Thinking => E::ThinkingEnd {
                content_index: index,
                content,
            },
        });
    }

    /// Appends `delta` to the open block of `kind`, starting one (and ending the other kind)
    /// when needed.
    fn delta(&mut self, kind: Kind, delta: Cow<'_, str>, out: &mut Emit<'_>) {
        if self.current.as_ref().is_none_or(|c| c.kind != kind) {
            self.finish_current(out);
            let content_index = self.blocks;
            self.blocks += 1;
            out.push(match kind {
                Kind::Text => E::TextStart { content_index },
                Kind::Thinking => E::ThinkingStart { content_index },
            });
            self.current = Some(Current {
                kind,
                content_index,
                fresh: true,
                pending: String::new(),
            });
        }
        let Some(current) = &mut self.current else {
            return;
        };
        current.pending.push_str(&delta);
        let content_index = current.content_index;
        let delta = delta.into_owned();
        out.push(match kind {
            Kind::Text => E::TextDelta {
                content_index,
                delta,
            },
            Kind::Thinking => E::ThinkingDelta {
                content_index,
                delta,
            },
        });
    }

    fn tool_call(&mut self, call: Call<'_>, out: &mut Emit<'_>) {
        self.finish_current(out);
        let index = call.index;
        let derived;
        let id = match call.id.as_deref() {
            Some(id) if !id.is_empty() && id != "null" => id,
            // The SDK's default id is "null".
            _ => {
                derived = derive_tool_call_id(&format!("toolcall:{index}"), 0);
                derived.as_str()
            }
        };
        let found = self.tools.iter().find(|t| t.index == index && t.id == id);
        let content_index = match found {
            Some(block) => block.content_index,
            None => {
                let content_index = self.blocks;
                self.blocks += 1;
                let name = call.name.into_owned();
                out.push(E::ToolcallStart {
                    content_index,
                    id: id.to_owned(),
                    tool_name: name.clone(),
                });
                self.tools.push(ToolBlock {
                    id: id.to_owned(),
                    index,
                    content_index,
                    name,
                });
                content_index
            }
        };
        out.push(E::ToolcallDelta {
            content_index,
            delta: call.arguments.into_owned(),
        });
    }

    /// pi's `output.responseId ||= chunk.id`.
    fn response_id(&mut self, id: Cow<'_, str>) {
        if self.response_id.as_deref().is_none_or(str::is_empty) {
            self.response_id = Some(id.into_owned());
        }
    }

    fn finish_reason(&mut self, reason: Option<&str>) {
        if let Some(reason) = reason.filter(|r| !r.is_empty()) {
            self.saw_finish = true;
            self.stop_reason = match reason {
                "length" | "model_length" => StopReason::Length,
                "tool_calls" => StopReason::ToolUse,
                "error" => StopReason::Error,
                _ => StopReason::Stop,
            };
        }
    }

    fn handle(&mut self, chunk: WireChunk<'_>, out: &mut Emit<'_>) {
        self.response_id(chunk.id);
        if let Some(usage) = chunk.usage.0 {
            let count = |c: Present<Int>| c.0.map_or(0, |i| u64::try_from(i.0).unwrap_or(0));
            let input = count(usage.prompt_tokens);
            let output = count(usage.completion_tokens);
            let total = match count(usage.total_tokens) {
                0 => input + output,
                total => total,
            };
            let mut next = Usage::new(input, output, 0, 0);
            next.total_tokens = Some(total);
            let prices = Model::new("", "", "", "").with_cost(self.cost);
            crate::llm::calculate_cost(&prices, &mut next);
            self.usage = next;
        }
        let Some(choice) = chunk.choices.into_iter().next() else {
            return;
        };
        self.finish_reason(choice.finish_reason.0.as_deref());
        let delta = choice.delta;
        match delta.content {
            None => {}
            // An empty string starts a text block too, as in pi.
            Some(DeltaContent::Text(text)) => self.delta(Kind::Text, text, out),
            Some(DeltaContent::Parts(parts)) => {
                for part in &parts {
                    match item(part) {
                        Item::Text(text) => self.delta(Kind::Text, Cow::Borrowed(text), out),
                        Item::Thinking(text) if !text.is_empty() => {
                            self.delta(Kind::Thinking, Cow::Owned(text), out);
                        }
                        Item::Thinking(_) | Item::Other => {}
                    }
                }
            }
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.tool_call(call.into(), out);
        }
    }

    /// A chunk the fast path read: as [`handle`](Self::handle) does the same chunk.
    fn handle_fast(&mut self, chunk: FastChunk<'_>, out: &mut Emit<'_>) {
        self.response_id(chunk.id);
        let Some(choice) = chunk.choice else {
            return;
        };
        self.finish_reason(choice.finish_reason.as_deref());
        match choice.content {
            FastContent::None => {}
            FastContent::Text(text) => self.delta(Kind::Text, text, out),
            FastContent::Thinking(text) if !text.is_empty() => {
                self.delta(Kind::Thinking, text, out);
            }
            FastContent::Thinking(_) => {}
        }
        if let Some(call) = choice.call {
            self.tool_call(call, out);
        }
    }

    /// Reads a chunk with serde. `data` need not be UTF-8: serde checks every string it
    /// reads and skips the others unchecked, so where it reads the bytes, it reads them as it
    /// reads their lossy decoding (what the SDK reads: `U+FFFD` for what is not UTF-8, only
    /// ever in place of bytes that are not ASCII, so inside strings); where it refuses them,
    /// the lossy decoding is read instead.
    fn decode(&mut self, data: &[u8], out: &mut Emit<'_>) -> Result<(), Error> {
        let error = match serde_json::from_slice::<WireChunk<'_>>(data) {
            Ok(chunk) => {
                self.handle(chunk, out);
                return Ok(());
            }
            Err(error) => error,
        };
        if std::str::from_utf8(data).is_err() {
            // Valid UTF-8: this recursion ends at the next call.
            let text = String::from_utf8_lossy(data).into_owned();
            return self.decode(text.as_bytes(), out);
        }
        // JSON.parse takes a lone UTF-16 surrogate escape, which pi then drops from the text
        // (`sanitizeSurrogates`); serde refuses it.
        if let Some(clean) = without_lone_surrogates(data)
            && let Ok(chunk) = serde_json::from_slice::<WireChunk<'_>>(&clean)
        {
            self.handle(chunk, out);
            return Ok(());
        }
        Err(invalid_chunk(data, &error))
    }
}

/// `data` without the `\uXXXX` escapes of UTF-16 surrogates that are not half of a pair;
/// `None` when it has none.
fn without_lone_surrogates(data: &[u8]) -> Option<Vec<u8>> {
    /// The code unit of the `\uXXXX` escape at `i`, if there is one.
    fn unit(data: &[u8], i: usize) -> Option<u16> {
        let hex = data.get(i..i + 6)?.strip_prefix(b"\\u")?;
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    }
    let high = |u: u16| (0xd800..0xdc00).contains(&u);
    let low = |u: u16| (0xdc00..0xe000).contains(&u);
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < data.len() {
        if data[i] != b'\\' {
            if let Some(out) = &mut out {
                out.push(data[i]);
            }
            i += 1;
            continue;
        }
        let len = match unit(data, i) {
            Some(u) if high(u) && unit(data, i + 6).is_some_and(low) => 12,
            Some(u) if high(u) || low(u) => {
                // A lone half: dropped.
                out.get_or_insert_with(|| data[..i].to_vec());
                i += 6;
                continue;
            }
            Some(_) => 6,
            None => 2.min(data.len() - i),
        };
        if let Some(out) = &mut out {
            out.extend_from_slice(&data[i..i + len]);
        }
        i += len;
    }
    out
}

/// The error for a chunk the SDK would refuse: the provider's error when it is one
/// (`{"object":"error","message":…}`), else what is wrong with it.
fn invalid_chunk(data: &[u8], error: &serde_json::Error) -> Error {
    if let Ok(Value::Object(value)) = serde_json::from_slice::<Value>(data)
        && (value.get("object").and_then(Value::as_str) == Some("error")
            || value.get("error").is_some_and(|e| !e.is_null()))
    {
        return stream_event_error(data);
    }
    let text = String::from_utf8_lossy(data);
    let shown: String = text.chars().take(300).collect();
    let ellipsis = if shown.len() < text.len() { "…" } else { "" };
    let what = if error.is_syntax() || error.is_eof() {
        "is not JSON"
    } else {
        "does not match the SDK's schema"
    };
    Error::new(
        ErrorKind::InvalidResponse,
        format!("Mistral stream chunk {what}: {error}; data={shown}{ellipsis}"),
    )
}

impl Decoder for MistralDecoder {
    fn on_event(&mut self, sse: SseEvent<'_>, out: &mut Emit<'_>) -> Result<(), Error> {
        if self.saw_done {
            return Ok(()); // the SDK stops reading at [DONE]
        }
        self.settle();
        let data = sse.data();
        if data == b"[DONE]" {
            self.saw_done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        #[cfg(test)]
        if self.serde_only {
            // The reading before the fast path: UTF-8 checked (and decoded lossily) first.
            return match std::str::from_utf8(data) {
                Ok(_) => self.decode(data, out),
                Err(_) => {
                    let text = String::from_utf8_lossy(data).into_owned();
                    self.decode(text.as_bytes(), out)
                }
            };
        }
        // The fast path reads only UTF-8 (it checks every string it takes).
        if let Some(chunk) = fast_chunk(data, &mut self.head) {
            self.handle_fast(chunk, out);
            return Ok(());
        }
        self.decode(data, out)
    }

    fn on_end(&mut self, out: &mut Emit<'_>) -> Result<(), Error> {
        if !self.saw_done && !self.saw_finish {
            return Err(Error::new(
                ErrorKind::InvalidResponse,
                "Mistral stream ended before a finish_reason or [DONE]",
            ));
        }
        self.settle();
        self.finish_current(out);
        for block in &self.tools {
            let text = out.tool_arguments_text(block.content_index).unwrap_or("");
            let call = ToolCall::new(
                block.id.clone(),
                block.name.clone(),
                Value::Object(parse_streaming_json(text)),
            );
            out.push(E::ToolcallEnd {
                content_index: block.content_index,
                tool_call: call,
            });
        }
        Ok(())
    }

    fn is_complete(&self) -> bool {
        self.saw_done || self.saw_finish
    }

    fn finish(&mut self, message: &mut AssistantMessage) {
        message.response_id.clone_from(&self.response_id);
        message.stop_reason = self.stop_reason.clone();
        message.usage = self.usage.clone();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use serde_json::json;

    use super::*;
    use crate::llm::event::PartialMessage;
    use crate::providers::sse::SseDecoder;

    fn model() -> Model {
        Model::new(
            "magistral-medium-latest",
            "mistral-conversations",
            "mistral",
            "",
        )
        .with_cost(ModelCost::new(2.0, 5.0, 0.0, 0.0))
    }

    /// Decodes `sse` (split into one-byte pieces when `bytewise`) and returns every event as
    /// pi writes it (no `partial`, `toolcall_start` without id and name, timestamp 0) and the
    /// final message (or the error).
    fn run(sse: &str, bytewise: bool) -> (Vec<Value>, Result<Value, Error>) {
        run_bytes(sse.as_bytes(), bytewise, false)
    }

    /// [`run`] on bytes; `serde_only`: without the fast path (as before it).
    fn run_bytes(
        sse: &[u8],
        bytewise: bool,
        serde_only: bool,
    ) -> (Vec<Value>, Result<Value, Error>) {
        let mut decoder = MistralDecoder::new(&model());
        decoder.serde_only = serde_only;
        let mut state = PartialMessage::new(AssistantMessage::new(
            "mistral-conversations",
            "mistral",
            "magistral-medium-latest",
        ));
        let mut events = Vec::new();
        let mut record = |state: &mut PartialMessage, queue: VecDeque<E>| {
            for e in queue {
                state.apply(&e);
                let mut v = serde_json::to_value(&e).unwrap();
                if let Some(map) = v.as_object_mut()
                    && map["type"] == "toolcall_start"
                {
                    map.remove("id");
                    map.remove("toolName");
                }
                events.push(v);
            }
        };
        let mut sse_decoder = SseDecoder::new();
        let pieces: Vec<&[u8]> = if bytewise {
            sse.chunks(1).collect()
        } else {
            vec![sse]
        };
        let mut failed = None;
        'feed: for piece in pieces {
            sse_decoder.feed(piece);
            while let Some(event) = sse_decoder.next_event() {
                let mut queue = VecDeque::new();
                let result = decoder.on_event(event, &mut Emit::new(&mut queue, &state));
                record(&mut state, queue);
                if let Err(e) = result {
                    failed = Some(e);
                    break 'feed;
                }
            }
        }
        if failed.is_none() {
            let mut queue = VecDeque::new();
            let result = decoder.on_end(&mut Emit::new(&mut queue, &state));
            record(&mut state, queue);
            failed = result.err();
        }
        let mut message = state.message().clone();
        decoder.finish(&mut message);
        let mut message = serde_json::to_value(&message).unwrap();
        message["timestamp"] = json!(0);
        (events, failed.map_or(Ok(message), Err))
    }

    fn chunk(delta: Value, finish: Option<&str>) -> Value {
        json!({"id": "cmpl-1", "object": "chat.completion.chunk", "created": 1,
               "model": "magistral-medium-latest",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    }

    fn sse(chunks: &[Value], done: bool) -> String {
        let mut out: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        if done {
            out.push_str("data: [DONE]\n\n");
        }
        out
    }

    /// Text, thinking and tool calls interleaved; the events and the message are pi's for
    /// the same bytes (pi-ai 0.73.1 under node).
    #[test]
    fn interleaved_blocks_match_pi() {
        let mut last = chunk(
            json!({"tool_calls": [{"function": {"name": "ls", "arguments": {"dir": ".", "n": 1.0}}, "index": 1}]}),
            Some("tool_calls"),
        );
        last["usage"] = json!({"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19});
        let text = sse(
            &[
                chunk(json!({"role": "assistant", "content": ""}), None),
                chunk(
                    json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Let me "}]}]}),
                    None,
                ),
                chunk(
                    json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "think"}, {"type": "text", "text": ""}]}, {"type": "text", "text": "Answer"}]}),
                    None,
                ),
                chunk(json!({"content": " more"}), None),
                chunk(
                    json!({"tool_calls": [{"id": "abc123xyz", "function": {"name": "read", "arguments": "{\"pa"}, "index": 0}]}),
                    None,
                ),
                chunk(
                    json!({"tool_calls": [{"id": "abc123xyz", "function": {"name": "read", "arguments": "th\":\"a\"}"}, "index": 0}]}),
                    None,
                ),
                chunk(json!({"content": "after"}), None),
                chunk(
                    json!({"content": [{"type": "thinking", "thinking": []}, "str", {"type": "image_url", "image_url": "x"}]}),
                    None,
                ),
                last,
            ],
            true,
        );
        // (The driver pushes `start`.)
        let expected_events = json!([
            {"type": "text_start", "contentIndex": 0},
            {"type": "text_delta", "contentIndex": 0, "delta": ""},
            {"type": "text_end", "contentIndex": 0, "content": ""},
            {"type": "thinking_start", "contentIndex": 1},
            {"type": "thinking_delta", "contentIndex": 1, "delta": "Let me "},
            {"type": "thinking_delta", "contentIndex": 1, "delta": "think"},
            {"type": "thinking_end", "contentIndex": 1, "content": "Let me think"},
            {"type": "text_start", "contentIndex": 2},
            {"type": "text_delta", "contentIndex": 2, "delta": "Answer"},
            {"type": "text_delta", "contentIndex": 2, "delta": " more"},
            {"type": "text_end", "contentIndex": 2, "content": "Answer more"},
            {"type": "toolcall_start", "contentIndex": 3},
            {"type": "toolcall_delta", "contentIndex": 3, "delta": "{\"pa"},
            {"type": "toolcall_delta", "contentIndex": 3, "delta": "th\":\"a\"}"},
            {"type": "text_start", "contentIndex": 4},
            {"type": "text_delta", "contentIndex": 4, "delta": "after"},
            {"type": "text_end", "contentIndex": 4, "content": "after"},
            {"type": "toolcall_start", "contentIndex": 5},
            {"type": "toolcall_delta", "contentIndex": 5, "delta": "{\"dir\":\".\",\"n\":1}"},
            {"type": "toolcall_end", "contentIndex": 3, "toolCall": {"type": "toolCall", "id": "abc123xyz", "name": "read", "arguments": {"path": "a"}}},
            {"type": "toolcall_end", "contentIndex": 5, "toolCall": {"type": "toolCall", "id": "toolcall1", "name": "ls", "arguments": {"dir": ".", "n": 1}}}
        ]);
        let expected_message = json!({"role": "assistant", "content": [
                {"type": "text", "text": ""}, {"type": "thinking", "thinking": "Let me think"},
                {"type": "text", "text": "Answer more"},
                {"type": "toolCall", "id": "abc123xyz", "name": "read", "arguments": {"path": "a"}},
                {"type": "text", "text": "after"},
                {"type": "toolCall", "id": "toolcall1", "name": "ls", "arguments": {"dir": ".", "n": 1}}],
            "api": "mistral-conversations", "provider": "mistral", "model": "magistral-medium-latest",
            "usage": {"input": 12, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 19,
                      "cost": {"input": 2.4e-05, "output": 3.5000000000000004e-05, "cacheRead": 0, "cacheWrite": 0, "total": 5.9000000000000004e-05}},
            "stopReason": "toolUse", "timestamp": 0, "responseId": "cmpl-1"});
        for bytewise in [false, true] {
            let (events, message) = run(&text, bytewise);
            assert_eq!(Value::Array(events), expected_events, "bytewise {bytewise}");
            assert_eq!(message.unwrap(), expected_message);
        }
    }

    fn text_of(events: &[Value]) -> Vec<&str> {
        events.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    #[test]
    fn a_stream_cut_before_its_end_is_an_error() {
        let (_, end) = run(
            &sse(&[chunk(json!({"content": "Hel"}), None)], false),
            false,
        );
        let error = end.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse);
        assert!(error.message().contains("[DONE]"), "{error:?}");
        // A finish reason without [DONE] is complete.
        let (events, end) = run(
            &sse(
                &[
                    chunk(json!({"content": "Hel"}), None),
                    chunk(json!({}), Some("stop")),
                ],
                false,
            ),
            false,
        );
        assert_eq!(text_of(&events), ["text_start", "text_delta", "text_end"]);
        assert_eq!(end.unwrap()["stopReason"], "stop");
        // [DONE] without a finish reason too (pi's default stop reason).
        let (_, end) = run(&sse(&[chunk(json!({"content": "x"}), None)], true), false);
        assert_eq!(end.unwrap()["stopReason"], "stop");
    }

    #[test]
    fn nothing_after_done_is_read() {
        let mut text = sse(&[chunk(json!({"content": "a"}), None)], true);
        text.push_str("data: {not json\n\ndata: ");
        text.push_str(&chunk(json!({"content": "b"}), Some("length")).to_string());
        text.push_str("\n\n");
        let (_, end) = run(&text, false);
        let message = end.unwrap();
        assert_eq!(message["content"], json!([{"type": "text", "text": "a"}]));
        assert_eq!(message["stopReason"], "stop");
    }

    #[test]
    fn finish_reasons() {
        for (reason, stop) in [
            ("stop", "stop"),
            ("length", "length"),
            ("model_length", "length"),
            ("tool_calls", "toolUse"),
            ("error", "error"),
            ("something_new", "stop"),
            ("", "stop"),
        ] {
            let (_, end) = run(
                &sse(&[chunk(json!({"content": "x"}), Some(reason))], true),
                false,
            );
            assert_eq!(end.unwrap()["stopReason"], stop, "{reason}");
        }
    }

    #[test]
    fn usage_and_response_id() {
        let mut first = chunk(json!({"content": ""}), None);
        first["id"] = json!("");
        let mut second = chunk(json!({"content": "a"}), None);
        second["id"] = json!("cmpl-2");
        second["usage"] = json!({"prompt_tokens": 100, "completion_tokens": 1});
        let mut third = chunk(json!({}), Some("stop"));
        third["id"] = json!("cmpl-3");
        third["usage"] = json!({"prompt_tokens": 1000, "completion_tokens": 20.0, "total_tokens": 0, "prompt_audio_seconds": null, "x": [1]});
        let (_, end) = run(&sse(&[first, second, third], true), false);
        let message = end.unwrap();
        assert_eq!(message["responseId"], "cmpl-2");
        assert_eq!(
            message["usage"],
            json!({"input": 1000, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1020,
                   "cost": {"input": 0.002, "output": 0.0001, "cacheRead": 0, "cacheWrite": 0, "total": 0.0021}})
        );
        // No usage at all: zeros.
        let (_, end) = run(&sse(&[chunk(json!({}), Some("stop"))], true), false);
        assert_eq!(end.unwrap()["usage"]["totalTokens"], 0);
    }

    #[test]
    fn tool_calls_are_keyed_by_id_and_index() {
        let text = sse(
            &[
                // No id: pi's id from the index ("toolcall:10" hashed).
                chunk(
                    json!({"tool_calls": [{"function": {"name": "a", "arguments": "{}"}, "index": 10}]}),
                    None,
                ),
                // The SDK's default id "null" is no id either.
                chunk(
                    json!({"tool_calls": [{"id": "null", "function": {"name": "a", "arguments": ""}, "index": 10}]}),
                    None,
                ),
                // The same id at another index is another call.
                chunk(
                    json!({"tool_calls": [{"id": "x", "function": {"name": "b", "arguments": "{\"k\":"}}, {"id": "x", "function": {"name": "c", "arguments": "{}"}, "index": 1}]}),
                    None,
                ),
                chunk(
                    json!({"tool_calls": [{"id": "x", "function": {"name": "ignored", "arguments": "1}"}, "index": 0}]}),
                    Some("tool_calls"),
                ),
            ],
            true,
        );
        let (events, end) = run(&text, false);
        assert_eq!(
            text_of(&events),
            [
                "toolcall_start",
                "toolcall_delta",
                "toolcall_delta",
                "toolcall_start",
                "toolcall_delta",
                "toolcall_start",
                "toolcall_delta",
                "toolcall_delta",
                "toolcall_end",
                "toolcall_end",
                "toolcall_end"
            ]
        );
        let message = end.unwrap();
        assert_eq!(
            message["content"],
            json!([
                {"type": "toolCall", "id": "3o69b1b2x", "name": "a", "arguments": {}},
                {"type": "toolCall", "id": "x", "name": "b", "arguments": {"k": 1}},
                {"type": "toolCall", "id": "x", "name": "c", "arguments": {}}
            ])
        );
        assert_eq!(message["stopReason"], "toolUse");
    }

    #[test]
    fn chunks_the_sdk_refuses_are_errors() {
        let base = chunk(json!({"content": "x"}), None);
        let mut cases = Vec::new();
        for (path, value) in [
            ("/model", Value::Null),
            ("/id", json!(1)),
            ("/object", Value::Null),
            ("/created", json!(1.5)),
            ("/usage", Value::Null),
            ("/choices", Value::Null),
            ("/choices/0/index", json!("0")),
            ("/choices/0/delta", Value::Null),
            ("/choices/0/finish_reason", json!(3)),
            ("/choices/0/delta/content", json!(5)),
            ("/choices/0/delta/role", json!(1)),
            ("/choices/0/delta/tool_calls", json!({})),
            (
                "/choices/0/delta/tool_calls",
                json!([{"id": null, "function": {"name": "f", "arguments": ""}}]),
            ),
            (
                "/choices/0/delta/tool_calls",
                json!([{"id": "a", "function": {"arguments": ""}}]),
            ),
            (
                "/choices/0/delta/tool_calls",
                json!([{"id": "a", "function": {"name": "f", "arguments": null}}]),
            ),
            (
                "/choices/0/delta/tool_calls",
                json!([{"id": "a", "index": 0.5, "function": {"name": "f", "arguments": ""}}]),
            ),
        ] {
            let mut bad = base.clone();
            let (parent, key) = path.rsplit_once('/').unwrap();
            match bad.pointer_mut(parent).unwrap() {
                Value::Object(map) => {
                    map.insert(key.to_owned(), value);
                }
                other => other[key.parse::<usize>().unwrap()] = value,
            }
            cases.push(bad);
        }
        let mut missing = base.clone();
        missing["choices"][0]
            .as_object_mut()
            .unwrap()
            .remove("finish_reason");
        cases.push(missing);
        let mut missing = base.clone();
        missing.as_object_mut().unwrap().remove("model");
        cases.push(missing);
        cases.push(json!([1]));
        for bad in cases {
            let text = sse(&[chunk(json!({"content": "a"}), None), bad.clone()], true);
            let (events, end) = run(&text, false);
            let error = end.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{bad}: {error:?}");
            assert!(error.message().contains("schema"), "{bad}: {error:?}");
            // The first chunk's text is kept; nothing of the refused one.
            assert_eq!(text_of(&events), ["text_start", "text_delta"], "{bad}");
        }
        let (_, end) = run("data: {nope\n\n", false);
        assert!(end.unwrap_err().message().contains("is not JSON"));
        // What the SDK accepts: 1.0 as an integer, null where nullable, unknown members.
        let mut fine = base.clone();
        fine["created"] = json!(1.0);
        fine["extra"] = json!({"a": 1});
        fine["choices"][0]["delta"]["tool_calls"] = Value::Null;
        fine["choices"][0]["delta"]["role"] = Value::Null;
        fine["usage"] = json!({});
        assert!(run(&sse(&[fine], true), false).1.is_ok());
    }

    #[test]
    fn an_error_object_in_the_stream_is_the_providers_error() {
        let text = "data: {\"object\":\"error\",\"message\":\"Service tier capacity exceeded\",\"type\":\"service_tier_capacity_exceeded\",\"code\":\"3505\"}\n\n";
        let error = run(text, false).1.unwrap_err();
        assert!(
            error.message().contains("Service tier capacity exceeded"),
            "{error:?}"
        );
    }

    #[test]
    fn content_parts_the_sdk_does_not_know_are_skipped() {
        let text = sse(
            &[chunk(
                json!({"content": [
                    {"type": "text"},
                    {"type": "text", "text": 5},
                    {"type": "thinking", "thinking": "not an array"},
                    {"type": "thinking", "thinking": [{"type": "text", "text": "a"}, {"type": "weird"}]},
                    {"type": "thinking", "thinking": [{"type": "text", "text": "b"}], "signature": 3},
                    {"type": "thinking", "thinking": [{"text": "c"}, {"type": "reference", "reference_ids": [1, "x"]},
                                                      {"type": "tool_reference", "tool": "web", "title": "T", "url": null}]},
                    {"type": "document_url", "document_url": "u"},
                    7
                ]}),
                Some("stop"),
            )],
            true,
        );
        let (_, end) = run(&text, false);
        assert_eq!(
            end.unwrap()["content"],
            json!([{"type": "thinking", "thinking": "c"}])
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_as_the_sdk_decodes_it() {
        let mut bytes = b"data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a".to_vec();
        bytes.push(0xff);
        bytes.extend_from_slice(b"b\"},\"finish_reason\":\"stop\"}]}\n\n");
        let mut decoder = MistralDecoder::new(&model());
        let state = PartialMessage::new(AssistantMessage::new("", "", ""));
        let mut sse = SseDecoder::new();
        sse.feed(&bytes);
        let mut queue = VecDeque::new();
        decoder
            .on_event(
                sse.next_event().unwrap(),
                &mut Emit::new(&mut queue, &state),
            )
            .unwrap();
        assert!(
            queue
                .iter()
                .any(|e| matches!(e, E::TextDelta { delta, .. } if delta == "a\u{fffd}b"))
        );
    }

    #[test]
    fn lone_surrogate_escapes_are_dropped_as_pi_drops_them() {
        let clean =
            |s: &str| without_lone_surrogates(s.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(clean(r#""a\ud83d\ude48b""#), None);
        assert_eq!(clean(r#""a\ud83db""#).as_deref(), Some(r#""ab""#));
        assert_eq!(
            clean(r#""a\ude48\\ud83d""#).as_deref(),
            Some(r#""a\\ud83d""#)
        );
        assert_eq!(
            clean(r#""\ud83d\u0041\uDC00""#).as_deref(),
            Some(r#""\u0041""#)
        );
        let text = sse(&[chunk(json!({"content": "x"}), Some("stop"))], true).replacen(
            "\"x\"",
            r#""a\ud83d\ud83d\ude48""#,
            1,
        );
        let (_, end) = run(&text, false);
        assert_eq!(end.unwrap()["content"][0]["text"], "a\u{1f648}");
    }

    /// What the decoder takes from a chunk, whichever path read it.
    #[derive(Debug, PartialEq)]
    struct Reading {
        id: String,
        usage: bool,
        choices: usize,
        finish_reason: Option<String>,
        deltas: Vec<(Kind, String)>,
        calls: Vec<(Option<String>, i64, String, String)>,
    }

    fn call_reading(call: Call<'_>) -> (Option<String>, i64, String, String) {
        (
            call.id.map(Cow::into_owned),
            call.index,
            call.name.into_owned(),
            call.arguments.into_owned(),
        )
    }

    /// serde's reading, as [`MistralDecoder::handle`] takes it.
    fn serde_reading(chunk: WireChunk<'_>) -> Reading {
        let mut reading = Reading {
            id: chunk.id.into_owned(),
            usage: chunk.usage.0.is_some(),
            choices: chunk.choices.len(),
            finish_reason: None,
            deltas: Vec::new(),
            calls: Vec::new(),
        };
        if let Some(choice) = chunk.choices.into_iter().next() {
            reading.finish_reason = choice.finish_reason.0.map(Cow::into_owned);
            match choice.delta.content {
                None => {}
                Some(DeltaContent::Text(text)) => {
                    reading.deltas.push((Kind::Text, text.into_owned()));
                }
                Some(DeltaContent::Parts(parts)) => {
                    for part in &parts {
                        match item(part) {
                            Item::Text(text) => reading.deltas.push((Kind::Text, text.to_owned())),
                            Item::Thinking(text) if !text.is_empty() => {
                                reading.deltas.push((Kind::Thinking, text));
                            }
                            Item::Thinking(_) | Item::Other => {}
                        }
                    }
                }
            }
            for call in choice.delta.tool_calls.into_iter().flatten() {
                reading.calls.push(call_reading(call.into()));
            }
        }
        reading
    }

    /// The fast path's reading, as [`MistralDecoder::handle_fast`] takes it.
    fn fast_reading(chunk: FastChunk<'_>) -> Reading {
        let mut reading = Reading {
            id: chunk.id.into_owned(),
            usage: false,
            choices: usize::from(chunk.choice.is_some()),
            finish_reason: None,
            deltas: Vec::new(),
            calls: Vec::new(),
        };
        if let Some(choice) = chunk.choice {
            reading.finish_reason = choice.finish_reason.map(Cow::into_owned);
            match choice.content {
                FastContent::None => {}
                FastContent::Text(text) => reading.deltas.push((Kind::Text, text.into_owned())),
                FastContent::Thinking(text) if !text.is_empty() => {
                    reading.deltas.push((Kind::Thinking, text.into_owned()));
                }
                FastContent::Thinking(_) => {}
            }
            reading.calls.extend(choice.call.map(call_reading));
        }
        reading
    }

    /// Whatever the fast path reads, serde reads the same way; read again from its head, it
    /// reads the same.
    fn assert_fast_agrees(data: &[u8]) -> bool {
        let mut head = Head::default();
        let Some(fast) = fast_chunk(data, &mut head) else {
            assert!(head.bytes.is_empty());
            return false;
        };
        let shown = String::from_utf8_lossy(data);
        let serde = serde_json::from_slice::<WireChunk<'_>>(data)
            .unwrap_or_else(|e| panic!("serde refuses what the fast path reads: {e}: {shown}"));
        let fast = fast_reading(fast);
        assert_eq!(fast, serde_reading(serde), "{shown}");
        if !head.bytes.is_empty() {
            let again = fast_chunk(data, &mut head).map(fast_reading);
            assert_eq!(again.as_ref(), Some(&fast), "{shown}");
        }
        true
    }

    #[test]
    fn fast_chunk_reads_the_common_layouts() {
        let head = r#""id":"d3a0f557","object":"chat.completion.chunk","created":1757759492,"model":"mistral-tiny""#;
        for (choice, tail) in [
            (
                r#"{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"content":"Why \"x\"\n caf\u00e9 é 🙈"},"finish_reason":null}"#,
                r#","p":"abcdefghijklmnopqr""#,
            ),
            (
                r#"{"index":0,"delta":{"content":"France"},"finish_reason":null,"logprobs":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"content":""},"finish_reason":"stop"}"#,
                "",
            ),
            (r#"{"index":0,"delta":{},"finish_reason":"stop"}"#, ""),
            (
                r#"{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"Okay"}]}]},"finish_reason":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"think"},{"text":" more"}]}]},"finish_reason":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"content":[{"type":"thinking","thinking":[]}]},"finish_reason":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"content":[{"text":"2 + 2 = 4","type":"text"}]},"finish_reason":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"tool_calls":[{"id":"D681PevKs","index":0,"function":{"name":"write","arguments":"{\"path\":\"a\""}}]},"finish_reason":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"content":null,"tool_calls":[{"id":"EscTeQY62","function":{"name":"get_weather","arguments":"{\"city\": \"San Francisco\"}"}}]},"finish_reason":"tool_calls","logprobs":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-9","type":"function","function":{"name":"webSearchTool","arguments":""},"index":0}],"index":0,"content":""},"finish_reason":null,"logprobs":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"tool_calls":[{"type":"function","function":{"name":"","arguments":" weather"},"index":3}],"index":null,"role":null,"content":""},"finish_reason":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"tool_calls":null,"content":"x"},"finish_reason":null}"#,
                "",
            ),
            (
                r#"{"index":0,"delta":{"tool_calls":[],"content":"x"},"finish_reason":null}"#,
                "",
            ),
        ] {
            let data = format!(r#"{{{head},"choices":[{choice}]{tail}}}"#);
            assert!(assert_fast_agrees(data.as_bytes()), "not read: {data}");
            // Spaced, members in another order.
            let spaced = format!(
                "{{ \"choices\" : [ {} ] ,\n\t{}{tail} }}\r\n",
                choice.replace("\":", "\": ").replace(",\"", ", \""),
                head.replace(',', " , ")
            );
            assert!(assert_fast_agrees(spaced.as_bytes()), "not read: {spaced}");
        }
        let no_choice = format!(r#"{{{head},"choices":[]}}"#);
        assert!(assert_fast_agrees(no_choice.as_bytes()));
    }

    #[test]
    fn anything_else_goes_to_serde() {
        let head = r#""id":"c","object":"chat.completion.chunk","created":1,"model":"m""#;
        let delta = r#"{"content":"x"}"#;
        let choice = |c: &str| format!(r#"{{{head},"choices":[{c}]}}"#);
        let with_delta = |d: &str| {
            choice(&format!(
                r#"{{"index":0,"delta":{d},"finish_reason":null}}"#
            ))
        };
        let ok_choice = format!(r#"{{"index":0,"delta":{delta},"finish_reason":null}}"#);
        let mut cases: Vec<String> = vec![
            // What serde reads, not this path.
            format!(r#"{{{head},"choices":[{ok_choice}],"usage":{{"prompt_tokens":1}}}}"#),
            format!(r#"{{{head},"choices":[{ok_choice},{ok_choice}]}}"#),
            format!(r#"{{{head},"choices":[{ok_choice}],"extra":1}}"#),
            format!(r#"{{{head},"choices":[{ok_choice}],"p":"\u00e9"}}"#),
            format!(r#"{{{head},"choices":[{ok_choice}],"p":"é"}}"#),
            choice(r#"{"index":0,"delta":{"content":"x"},"finish_reason":null,"logprobs":{}}"#),
            choice(r#"{"index":1.0,"delta":{"content":"x"},"finish_reason":null}"#),
            choice(r#"{"index":-1,"delta":{"content":"x"},"finish_reason":null}"#),
            r#"{"id":"c","created":1e3,"model":"m","choices":[]}"#.to_owned(),
            r#"{"id":"c","model":"m\u0031","choices":[]}"#.to_owned(),
            r#"{"\u0069d":"c","model":"m","choices":[]}"#.to_owned(),
            with_delta(r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#),
            with_delta(r#"{"content":[{"type":"text","text":"a","extra":1}]}"#),
            with_delta(r#"{"content":[{"type":"thinking","thinking":[{"type":"text","text":"a"}],"signature":null}]}"#),
            with_delta(r#"{"content":[{"type":"thinking","thinking":[{"type":"reference","reference_ids":[1]}]}]}"#),
            with_delta(r#"{"content":[{"type":"image_url","image_url":"x"}]}"#),
            with_delta(r#"{"content":[]}"#),
            with_delta(r#"{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"a":1}}}]}"#),
            with_delta(r#"{"tool_calls":[{"id":"a","function":{"name":"f","arguments":""}},{"id":"b","function":{"name":"f","arguments":""}}]}"#),
            with_delta(r#"{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"","x":1}}]}"#),
            with_delta(r#"{"tool_call_id":"a","content":"x"}"#),
            with_delta(r#"{"metadata":{},"content":"x"}"#),
            // What serde refuses.
            r#"{"model":"m","choices":[]}"#.to_owned(),
            r#"{"id":"c","choices":[]}"#.to_owned(),
            r#"{"id":"c","model":"m"}"#.to_owned(),
            r#"{"id":null,"model":"m","choices":[]}"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[],"created":9007199254740992}"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[],"created":1.5}"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[],"object":null}"#.to_owned(),
            r#"{"id":"c","id":"d","model":"m","choices":[]}"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[]} x"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[]"#.to_owned(),
            r#"{"id":"lone \ud83d","model":"m","choices":[]}"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[{"delta":{},"finish_reason":null}]}"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[{"index":0,"finish_reason":null}]}"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[{"index":0,"delta":{}}]}"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[{"index":0,"delta":null,"finish_reason":null}]}"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[{"index":0,"delta":{},"finish_reason":3}]}"#.to_owned(),
            r#"{"id":"c","model":"m","choices":[{"index":0,"index":0,"delta":{},"finish_reason":null}]}"#.to_owned(),
            with_delta(r#"{"content":5}"#),
            with_delta(r#"{"content":"a","content":"b"}"#),
            with_delta(r#"{"role":1}"#),
            with_delta(r#"{"index":0.5}"#),
            with_delta(r#"{"tool_calls":{}}"#),
            with_delta(r#"{"tool_calls":[{"id":null,"function":{"name":"f","arguments":""}}]}"#),
            with_delta(r#"{"tool_calls":[{"id":"a","function":{"arguments":""}}]}"#),
            with_delta(r#"{"tool_calls":[{"id":"a","function":{"name":"f","arguments":null}}]}"#),
            with_delta(r#"{"tool_calls":[{"id":"a","index":0.5,"function":{"name":"f","arguments":""}}]}"#),
            with_delta(r#"{"tool_calls":[{"id":"a","type":null,"function":{"name":"f","arguments":""}}]}"#),
            with_delta(r#"{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"","name":"g"}}]}"#),
            with_delta(r#"{"content":"bad \x escape"}"#),
            with_delta("{\"content\":\"raw\nnewline\"}"),
            String::new(),
            "[1]".to_owned(),
        ];
        cases.push(with_delta("{\"content\":\"\u{0}\"}"));
        for data in &cases {
            assert!(
                fast_chunk(data.as_bytes(), &mut Head::default()).is_none(),
                "{data}"
            );
        }
        let mut bytes = with_delta(r#"{"content":"a"}"#).into_bytes();
        bytes.insert(bytes.len() - 8, 0xff);
        assert!(fast_chunk(&bytes, &mut Head::default()).is_none());
    }

    /// Decodes `body` with and without the fast path: the same events and the same end.
    fn assert_paths_agree(body: &[u8]) {
        let (fast_events, fast_end) = run_bytes(body, false, false);
        let (slow_events, slow_end) = run_bytes(body, false, true);
        let shown = String::from_utf8_lossy(body);
        assert_eq!(fast_events, slow_events, "{shown}");
        match (fast_end, slow_end) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{shown}"),
            (Err(a), Err(b)) => {
                assert_eq!(a.kind(), b.kind(), "{shown}");
                assert_eq!(a.message(), b.message(), "{shown}");
            }
            (a, b) => panic!("{a:?} vs {b:?}: {shown}"),
        }
    }

    /// The recorded streams decode the same with and without the fast path, which reads most
    /// of their chunks.
    #[test]
    fn recorded_streams_decode_the_same_on_both_paths() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mistral");
        let (mut chunks, mut fast) = (0, 0);
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "sse") {
                continue;
            }
            let body = std::fs::read(&path).unwrap();
            assert_paths_agree(&body);
            let text = String::from_utf8_lossy(&body);
            for line in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
                if line != "[DONE]" {
                    chunks += 1;
                    fast += usize::from(assert_fast_agrees(line.as_bytes()));
                }
            }
        }
        assert!(chunks > 50 && fast * 10 > chunks * 8, "{fast} of {chunks}");
    }

    #[test]
    fn bytes_that_are_not_utf8_read_as_before() {
        let ok = r#"{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]"#;
        let mut bodies = Vec::new();
        // In a member serde skips unchecked, in one it reads, in a name, outside strings.
        for (marker, at) in [
            (",\"p\":\"x", 0),
            (",\"p\":\"x", 1),
            ("\"content\":\"a", 0),
            ("\"id\":\"c", 0),
            (",\"q", 0),
            ("}]", 0),
        ] {
            let mut chunk = format!("{ok},\"p\":\"xyz\",\"q\":1}}").into_bytes();
            let pos = String::from_utf8_lossy(&chunk).find(marker).unwrap() + marker.len() - at;
            chunk.insert(pos, 0xff);
            let mut body = b"data: ".to_vec();
            body.extend_from_slice(&chunk);
            body.extend_from_slice(b"\n\ndata: [DONE]\n\n");
            bodies.push(body);
        }
        for body in &bodies {
            assert_paths_agree(body);
        }
        // Read where only skipped bytes are not UTF-8; the content's byte is U+FFFD.
        assert!(run_bytes(&bodies[0], false, false).1.is_ok());
        assert_eq!(
            run_bytes(&bodies[2], false, false).1.unwrap()["content"][0]["text"],
            "a\u{fffd}"
        );
    }

    /// The fast path against serde on generated chunks: the layouts Mistral writes (members
    /// in any order, spaced or not, optional members present or not), values of every type
    /// in every member, repeated members, and edited bytes.
    mod props {
        use super::*;
        use proptest::prelude::*;
        use proptest::strategy::{BoxedStrategy, Union};

        /// A JSON text, and whether the fast path must read it.
        type Json = (String, bool);

        /// A member: absent, or its name and value; and whether the fast path must read it.
        type Member = (Option<(String, String)>, bool);

        fn config() -> ProptestConfig {
            ProptestConfig {
                cases: 1024,
                failure_persistence: None,
                ..ProptestConfig::default()
            }
        }

        /// How serde reads a string literal: `None` refused, else whether it is plain ASCII.
        fn plain_ascii(lit: &str) -> Option<bool> {
            let text: String = serde_json::from_str(lit).ok()?;
            Some(!lit.contains('\\') && text.is_ascii())
        }

        /// Options by weight (an option of weight 0 is left out).
        fn one_of<T: fmt::Debug + Clone + 'static>(
            options: Vec<(u32, BoxedStrategy<T>)>,
        ) -> BoxedStrategy<T> {
            Union::new_weighted(options.into_iter().filter(|(w, _)| *w > 0).collect()).boxed()
        }

        /// An option's weight: none in a clean chunk (one the fast path reads) when the fast
        /// path refuses the option.
        fn w(clean: bool, weight: u32, ok: bool) -> u32 {
            if clean && !ok { 0 } else { weight }
        }

        /// String literals: plain, with escapes (some serde would not write), non-ASCII, and
        /// (unless `clean`) ones serde refuses (a lone surrogate, a bad escape, a raw control
        /// character, no closing quote).
        fn string_literal(clean: bool) -> BoxedStrategy<String> {
            let fixed = |s: &str| Just(s.to_owned()).boxed();
            one_of(vec![
                (
                    6,
                    "[a-zA-Z0-9 _.:-]{0,10}"
                        .prop_map(|t| format!("\"{t}\""))
                        .boxed(),
                ),
                (
                    2,
                    "\\PC{0,8}"
                        .prop_map(|t| serde_json::to_string(&t).unwrap())
                        .boxed(),
                ),
                (
                    1,
                    fixed(&serde_json::to_string("a \"q\" \\ / \n\t caf\u{e9} \u{1f648}").unwrap()),
                ),
                (1, fixed(r#""a\/b\u00e9\ud83d\ude48""#)),
                (w(clean, 1, false), fixed(r#""lone \ud83d""#)),
                (w(clean, 1, false), fixed("\"raw \u{1} control\"")),
                (w(clean, 1, false), fixed(r#""bad \x""#)),
                (w(clean, 1, false), fixed(r#""ends in \""#)),
            ])
        }

        /// A string the fast path reads (any valid one).
        fn read_string(clean: bool) -> BoxedStrategy<Json> {
            string_literal(clean)
                .prop_map(|lit| {
                    let ok = plain_ascii(&lit).is_some();
                    (lit, ok)
                })
                .boxed()
        }

        /// A string the fast path skips (plain ASCII only).
        fn skipped_string(clean: bool) -> BoxedStrategy<Json> {
            if clean {
                return "[a-zA-Z0-9 _.:-]{0,10}"
                    .prop_map(|t| (format!("\"{t}\""), true))
                    .boxed();
            }
            string_literal(clean)
                .prop_map(|lit| {
                    let ok = plain_ascii(&lit) == Some(true);
                    (lit, ok)
                })
                .boxed()
        }

        /// Values of other types (and a string), which the fast path refuses where they
        /// stand.
        fn other() -> BoxedStrategy<Json> {
            prop_oneof![
                Just("null"),
                Just("1"),
                Just("1.0"),
                Just("-2"),
                Just("true"),
                Just("{}"),
                Just("[]"),
                Just("\"s\""),
                Just("{\"a\":[1,\"b\"]}"),
            ]
            .prop_map(|v| (v.to_owned(), false))
            .boxed()
        }

        fn fixed(text: &str, ok: bool) -> BoxedStrategy<Json> {
            Just((text.to_owned(), ok)).boxed()
        }

        fn integer(clean: bool) -> BoxedStrategy<Json> {
            one_of(vec![
                (
                    6,
                    (0u64..2_000_000_000)
                        .prop_map(|n| (n.to_string(), true))
                        .boxed(),
                ),
                (1, fixed("9007199254740991", true)),
                (w(clean, 1, false), fixed("9007199254740992", false)),
                (w(clean, 1, false), fixed("1e3", false)),
                (w(clean, 1, false), fixed("1.0", false)),
                (w(clean, 1, false), fixed("1.5", false)),
                (w(clean, 1, false), fixed("-3", false)),
                (w(clean, 1, false), fixed("01", false)),
                (w(clean, 1, false), fixed("123456789012345678901", false)),
            ])
        }

        /// A member named `name`: one of `values` (by weight), or absent with weight
        /// `absent` (`absent_ok`: the fast path reads the object without it).
        fn member(
            clean: bool,
            name: &'static str,
            values: Vec<(u32, BoxedStrategy<Json>)>,
            absent: u32,
            absent_ok: bool,
        ) -> BoxedStrategy<Member> {
            let mut options: Vec<(u32, BoxedStrategy<Member>)> = values
                .into_iter()
                .map(|(weight, s)| {
                    let s = s
                        .prop_map(move |(v, ok)| (Some((format!("\"{name}\""), v)), ok))
                        .boxed();
                    (weight, s)
                })
                .collect();
            options.push((w(clean, absent, absent_ok), Just((None, absent_ok)).boxed()));
            one_of(options)
        }

        /// An object of `members`, in their order or any other, in one of the layouts, maybe (unless
        /// `clean`) with a member repeated (the fast path refuses that: serde refuses a
        /// repeated member it reads).
        fn object(clean: bool, members: Vec<BoxedStrategy<Member>>) -> BoxedStrategy<Json> {
            let repeat = if clean {
                Just(None).boxed()
            } else {
                prop::option::weighted(0.05, any::<prop::sample::Index>()).boxed()
            };
            (
                members,
                prop_oneof![Just((":", ",")), Just((": ", ", ")), Just((" : ", " ,\n "))],
                repeat,
            )
                .prop_flat_map(|(members, style, repeat)| {
                    let ok = members.iter().all(|(_, ok)| *ok);
                    let mut present: Vec<(String, String)> =
                        members.into_iter().filter_map(|(m, _)| m).collect();
                    let repeated = match repeat {
                        Some(i) if !present.is_empty() => {
                            present.push(present[i.index(present.len())].clone());
                            true
                        }
                        _ => false,
                    };
                    (
                        // Mistral's order (the members' here), or any.
                        prop_oneof![
                            Just(present.clone()).boxed(),
                            Just(present).prop_shuffle().boxed()
                        ],
                        Just(style),
                        Just(ok && !repeated),
                    )
                })
                .prop_map(|(present, (colon, comma), ok)| {
                    let members: Vec<String> = present
                        .iter()
                        .map(|(k, v)| format!("{k}{colon}{v}"))
                        .collect();
                    (format!("{{{}}}", members.join(comma)), ok)
                })
                .boxed()
        }

        /// An array of `items`, in a layout; `ok`: the fast path reads an array of so many.
        fn array(items: Vec<BoxedStrategy<Json>>, ok: bool) -> BoxedStrategy<Json> {
            (items, prop_oneof![Just(","), Just(", ")])
                .prop_map(move |(items, comma)| {
                    let all = items.iter().all(|(_, ok)| *ok);
                    let texts: Vec<String> = items.into_iter().map(|(t, _)| t).collect();
                    (format!("[{}]", texts.join(comma)), ok && all)
                })
                .boxed()
        }

        /// One item, or two, in an array.
        fn one(item: BoxedStrategy<Json>) -> BoxedStrategy<Json> {
            array(vec![item], true)
        }

        fn two(item: BoxedStrategy<Json>) -> BoxedStrategy<Json> {
            array(vec![item.clone(), item], false)
        }

        fn function(clean: bool) -> BoxedStrategy<Json> {
            let c = clean;
            object(
                c,
                vec![
                    member(
                        c,
                        "name",
                        vec![(8, read_string(c)), (w(c, 1, false), other())],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "arguments",
                        vec![
                            (7, read_string(c)),
                            (w(c, 1, false), fixed("{\"a\":1}", false)),
                            (w(c, 1, false), other()),
                        ],
                        1,
                        false,
                    ),
                ],
            )
        }

        fn tool_call(clean: bool) -> BoxedStrategy<Json> {
            let c = clean;
            let small = (0u64..4).prop_map(|n| (n.to_string(), true)).boxed();
            object(
                c,
                vec![
                    member(
                        c,
                        "id",
                        vec![
                            (5, read_string(c)),
                            (3, fixed("\"D681PevKs\"", true)),
                            (1, fixed("\"null\"", true)),
                            (1, fixed("\"\"", true)),
                            (w(c, 1, false), other()),
                        ],
                        3,
                        true,
                    ),
                    member(
                        c,
                        "type",
                        vec![(3, fixed("\"function\"", true)), (w(c, 1, false), other())],
                        4,
                        true,
                    ),
                    member(
                        c,
                        "function",
                        vec![(8, function(c)), (w(c, 1, false), other())],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "index",
                        vec![(4, small), (1, integer(c)), (w(c, 1, false), other())],
                        3,
                        true,
                    ),
                ],
            )
        }

        /// A part of a thinking chunk.
        fn thinking_part(clean: bool) -> BoxedStrategy<Json> {
            let c = clean;
            let text_part = object(
                c,
                vec![
                    member(
                        c,
                        "type",
                        vec![
                            (6, fixed("\"text\"", true)),
                            (w(c, 1, false), fixed("\"reference\"", false)),
                            (w(c, 1, false), other()),
                        ],
                        2,
                        true,
                    ),
                    member(
                        c,
                        "text",
                        vec![(8, read_string(c)), (w(c, 1, false), other())],
                        1,
                        false,
                    ),
                ],
            );
            one_of(vec![
                (6, text_part),
                (
                    w(c, 1, false),
                    fixed(r#"{"type":"reference","reference_ids":[1,"x"]}"#, false),
                ),
                (
                    w(c, 1, false),
                    fixed(
                        r#"{"type":"tool_reference","tool":"web","title":"T"}"#,
                        false,
                    ),
                ),
                (w(c, 1, false), fixed(r#"{"type":"weird"}"#, false)),
                (w(c, 1, false), fixed("\"str\"", false)),
            ])
        }

        /// A chunk of `delta.content`.
        fn content_chunk(clean: bool) -> BoxedStrategy<Json> {
            let c = clean;
            let text = object(
                c,
                vec![
                    member(
                        c,
                        "type",
                        vec![(8, fixed("\"text\"", true)), (w(c, 1, false), other())],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "text",
                        vec![(8, read_string(c)), (w(c, 1, false), other())],
                        1,
                        false,
                    ),
                    member(c, "extra", vec![(w(c, 1, false), other())], 8, true),
                ],
            );
            let parts = prop::collection::vec(thinking_part(c), 0..3)
                .prop_flat_map(|parts| {
                    array(parts.into_iter().map(|p| Just(p).boxed()).collect(), true)
                })
                .boxed();
            let thinking = object(
                c,
                vec![
                    member(
                        c,
                        "type",
                        vec![
                            (8, fixed("\"thinking\"", true)),
                            (w(c, 1, false), fixed("\"text\"", false)),
                        ],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "thinking",
                        vec![(8, parts), (w(c, 1, false), other())],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "signature",
                        vec![
                            (w(c, 1, false), fixed("null", false)),
                            (w(c, 1, false), fixed("\"sig\"", false)),
                            (w(c, 1, false), other()),
                        ],
                        8,
                        true,
                    ),
                    member(
                        c,
                        "closed",
                        vec![
                            (w(c, 1, false), fixed("true", false)),
                            (w(c, 1, false), other()),
                        ],
                        8,
                        true,
                    ),
                ],
            );
            one_of(vec![
                (3, text),
                (3, thinking),
                (
                    w(c, 1, false),
                    fixed(r#"{"type":"image_url","image_url":"x"}"#, false),
                ),
                (w(c, 1, false), fixed("\"str\"", false)),
                (w(c, 1, false), fixed("7", false)),
            ])
        }

        fn content(clean: bool) -> BoxedStrategy<Json> {
            let c = clean;
            one_of(vec![
                (6, read_string(c)),
                (1, fixed("null", true)),
                (3, one(content_chunk(c))),
                (w(c, 1, false), two(content_chunk(c))),
                (w(c, 1, false), fixed("[]", false)),
                (w(c, 1, false), other()),
            ])
        }

        fn delta(clean: bool) -> BoxedStrategy<Json> {
            let c = clean;
            object(
                c,
                vec![
                    member(
                        c,
                        "role",
                        vec![
                            (2, fixed("\"assistant\"", true)),
                            (1, skipped_string(c)),
                            (1, fixed("null", true)),
                            (w(c, 1, false), other()),
                        ],
                        6,
                        true,
                    ),
                    member(
                        c,
                        "content",
                        vec![(10, content(c)), (w(c, 1, false), other())],
                        4,
                        true,
                    ),
                    member(
                        c,
                        "tool_calls",
                        vec![
                            (4, one(tool_call(c))),
                            (1, fixed("[]", true)),
                            (1, fixed("null", true)),
                            (w(c, 1, false), two(tool_call(c))),
                            (w(c, 1, false), other()),
                        ],
                        5,
                        true,
                    ),
                    member(
                        c,
                        "index",
                        vec![
                            (2, fixed("0", true)),
                            (1, fixed("null", true)),
                            (1, integer(c)),
                            (w(c, 1, false), other()),
                        ],
                        6,
                        true,
                    ),
                    member(
                        c,
                        "tool_call_id",
                        vec![
                            (w(c, 1, false), fixed("\"a\"", false)),
                            (w(c, 1, false), other()),
                        ],
                        12,
                        true,
                    ),
                ],
            )
        }

        fn choice(clean: bool) -> BoxedStrategy<Json> {
            let c = clean;
            object(
                c,
                vec![
                    member(
                        c,
                        "index",
                        vec![
                            (8, fixed("0", true)),
                            (1, integer(c)),
                            (w(c, 1, false), other()),
                        ],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "delta",
                        vec![(10, delta(c)), (w(c, 1, false), other())],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "finish_reason",
                        vec![
                            (6, fixed("null", true)),
                            (1, fixed("\"stop\"", true)),
                            (1, fixed("\"tool_calls\"", true)),
                            (1, read_string(c)),
                            (w(c, 1, false), other()),
                        ],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "logprobs",
                        vec![(3, fixed("null", true)), (w(c, 1, false), other())],
                        6,
                        true,
                    ),
                ],
            )
        }

        /// A whole chunk; `clean`: one the fast path reads.
        fn chunk(clean: bool) -> BoxedStrategy<Json> {
            let c = clean;
            object(
                c,
                vec![
                    member(
                        c,
                        "id",
                        vec![(8, read_string(c)), (w(c, 1, false), other())],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "object",
                        vec![
                            (6, fixed("\"chat.completion.chunk\"", true)),
                            (1, skipped_string(c)),
                            (w(c, 1, false), other()),
                        ],
                        2,
                        true,
                    ),
                    member(
                        c,
                        "created",
                        vec![(6, integer(c)), (w(c, 1, false), other())],
                        2,
                        true,
                    ),
                    member(
                        c,
                        "model",
                        vec![(8, skipped_string(c)), (w(c, 1, false), other())],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "choices",
                        vec![
                            (10, one(choice(c))),
                            (1, fixed("[]", true)),
                            (w(c, 1, false), two(choice(c))),
                            (w(c, 1, false), other()),
                        ],
                        1,
                        false,
                    ),
                    member(
                        c,
                        "usage",
                        vec![
                            (
                                w(c, 1, false),
                                fixed(r#"{"prompt_tokens":3,"completion_tokens":2}"#, false),
                            ),
                            (w(c, 1, false), other()),
                        ],
                        8,
                        true,
                    ),
                    member(
                        c,
                        "p",
                        vec![(4, skipped_string(c)), (w(c, 1, false), other())],
                        5,
                        true,
                    ),
                    member(c, "error", vec![(w(c, 1, false), other())], 12, true),
                ],
            )
        }

        /// Chunks of every kind, and chunks the fast path reads.
        fn any_chunk() -> BoxedStrategy<Json> {
            prop_oneof![chunk(false), chunk(true)].boxed()
        }

        /// Byte edits: each removes, inserts or replaces a byte (JSON's structural bytes,
        /// quotes, escapes, bytes that are not UTF-8).
        fn edits() -> BoxedStrategy<Vec<(prop::sample::Index, u8, u8)>> {
            let byte = prop_oneof![
                Just(b'"'),
                Just(b'\\'),
                Just(b','),
                Just(b':'),
                Just(b'{'),
                Just(b'}'),
                Just(b'['),
                Just(b']'),
                Just(b' '),
                Just(b'0'),
                Just(b'n'),
                Just(b'.'),
                Just(0x01),
                Just(0xff),
                Just(0xc3),
            ];
            prop_oneof![
                3 => Just(Vec::new()),
                1 => prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, byte), 1..3),
            ]
            .boxed()
        }

        fn edit(text: &[u8], edits: &[(prop::sample::Index, u8, u8)]) -> Vec<u8> {
            let mut bytes = text.to_vec();
            for (at, how, byte) in edits {
                let i = at.index(bytes.len() + 1);
                match how {
                    0 if i < bytes.len() => {
                        bytes.remove(i);
                    }
                    1 if i < bytes.len() => bytes[i] = *byte,
                    _ => bytes.insert(i, *byte),
                }
            }
            bytes
        }

        proptest! {
            #![proptest_config(config())]

            /// Whatever the fast path reads, serde reads the same way; every chunk of the
            /// kinds it is meant for, it reads.
            #[test]
            fn fast_chunks_read_as_serde_reads_them((text, fast) in any_chunk(), edits in edits()) {
                let data = edit(text.as_bytes(), &edits);
                let read = assert_fast_agrees(&data);
                if edits.is_empty() && fast {
                    prop_assert!(read, "not read: {}", text);
                }
            }

            /// A chunk that starts with another chunk's head (then the rest of that chunk, or
            /// of a third one, edited or not) reads the same from the head as from its start.
            #[test]
            fn chunks_read_from_a_head_as_from_their_start(
                (a, _) in chunk(true),
                (b, _) in chunk(true),
                own in any::<bool>(),
                edits in edits(),
            ) {
                let (mut head_a, mut head_b) = (Head::default(), Head::default());
                prop_assert!(fast_chunk(a.as_bytes(), &mut head_a).is_some(), "{}", a);
                prop_assert!(fast_chunk(b.as_bytes(), &mut head_b).is_some(), "{}", b);
                let (from, head) = if own { (&a, &head_a) } else { (&b, &head_b) };
                if head_a.bytes.is_empty() || head.bytes.is_empty() {
                    return Ok(());
                }
                let rest = edit(&from.as_bytes()[head.bytes.len()..], &edits);
                let data = [&head_a.bytes[..], &rest].concat();
                let resumed = fast_chunk(&data, &mut head_a).map(fast_reading);
                let fresh = fast_chunk(&data, &mut Head::default()).map(fast_reading);
                prop_assert_eq!(&resumed, &fresh, "{}", String::from_utf8_lossy(&data));
                assert_fast_agrees(&data);
            }

            /// Streams of such chunks decode the same with and without the fast path: the
            /// same events, the same message or the same error.
            #[test]
            fn streams_decode_the_same_on_both_paths(
                chunks in prop::collection::vec((any_chunk(), edits()), 1..6),
                done in any::<bool>(),
            ) {
                let mut body = Vec::new();
                for ((text, _), edits) in &chunks {
                    body.extend_from_slice(b"data: ");
                    body.extend(edit(text.as_bytes(), edits).into_iter().filter(|&b| b != b'\n' && b != b'\r'));
                    body.extend_from_slice(b"\n\n");
                }
                if done {
                    body.extend_from_slice(b"data: [DONE]\n\n");
                }
                assert_paths_agree(&body);
            }
        }
    }
}
