//! What the OpenAI Responses apis (`openai-responses`, `azure-openai-responses`) share, as
//! pi's `openai-responses-shared`: the `input` items a conversation becomes, the tools, the
//! `reasoning` parameters, the tool-call id rule, and the decoder of the Responses SSE
//! events.
//!
//! The behaviour is described in [`openai_responses`](super::openai_responses).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::AssistantMessageEvent as E;
use crate::llm::json::js;
use crate::llm::json::parse_streaming_json;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, Context, Message, StopReason, Tool, ToolCall,
    Usage, UserContent,
};
use crate::llm::model::Model;
use crate::llm::thinking::ThinkingLevel;
use crate::providers::http::{Decoder, Emit, stream_event_error};
use crate::providers::json_scan::{Cursor, Seen};
use crate::providers::sse::SseEvent;
use crate::providers::transform::{skip_unknown_block, skip_unknown_blocks, transform_messages};

// ------------------------------------------------------------------------------------------
// Options

/// The Responses options of `options.extra`, by pi's names.
#[derive(Debug, Default)]
pub(crate) struct ReasoningOptions {
    /// `reasoningEffort`: a level name (mapped through the model's `thinkingLevelMap`).
    pub(crate) effort: Option<String>,
    /// `reasoningSummary`: `auto`, `detailed`, `concise` (default `auto`).
    pub(crate) summary: Option<String>,
}

/// A string option of `extra`, or an error naming it when it is not a string. `null` and
/// absent are `None`, as is the empty string (pi tests these options for truthiness).
pub(crate) fn string_option(
    extra: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>, Error> {
    match extra.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(Error::new(
            ErrorKind::Config,
            format!("Invalid OpenAI Responses option {key}: expected a string, got {other}"),
        )),
    }
}

impl ReasoningOptions {
    pub(crate) fn from_extra(extra: &Map<String, Value>) -> Result<Self, Error> {
        Ok(ReasoningOptions {
            effort: string_option(extra, "reasoningEffort")?,
            summary: string_option(extra, "reasoningSummary")?,
        })
    }
}

/// The `reasoning` and `include` parameters of a reasoning model (pi's `buildParams`):
/// with an effort or a summary, `{effort, summary}` and the encrypted reasoning content;
/// without, `{effort: "none"}` (or the model's `thinkingLevelMap.off`) unless the map sets
/// `off` to `null` or `allow_none` is false (GitHub Copilot).
pub(crate) fn insert_reasoning(
    body: &mut Map<String, Value>,
    model: &Model,
    options: &ReasoningOptions,
    allow_none: bool,
) {
    if !model.reasoning {
        return;
    }
    let map = model.thinking_level_map.as_ref();
    if options.effort.is_some() || options.summary.is_some() {
        let effort = match &options.effort {
            Some(effort) => effort
                .parse::<ThinkingLevel>()
                .ok()
                .and_then(|level| map?.get(&level)?.clone())
                .unwrap_or_else(|| effort.clone()),
            None => "medium".to_owned(),
        };
        let summary = options.summary.as_deref().unwrap_or("auto");
        body.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": summary}),
        );
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    } else if allow_none {
        let off = map.and_then(|m| m.get(&ThinkingLevel::Off));
        match off {
            Some(None) => {} // `off: null`: the model cannot turn reasoning off
            Some(Some(effort)) => {
                body.insert("reasoning".into(), json!({"effort": effort}));
            }
            None => {
                body.insert("reasoning".into(), json!({"effort": "none"}));
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Ids

/// pi's `shortHash`: two 32-bit multiplicative hashes over the UTF-16 code units, written in
/// base 36.
pub(crate) fn short_hash(text: &str) -> String {
    let mut h1: u32 = 0xdead_beef;
    let mut h2: u32 = 0x41c6_ce57;
    for unit in text.encode_utf16() {
        let ch = u32::from(unit);
        h1 = (h1 ^ ch).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ ch).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    let mut out = base36(h2);
    out.push_str(&base36(h1));
    out
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// `[A-Za-z0-9_-]` only (each other UTF-16 unit becomes `_`), 64 characters at most, no
/// trailing `_`.
fn normalize_id_part(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for c in part.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
        }
    }
    out.truncate(64);
    let kept = out.trim_end_matches('_').len();
    out.truncate(kept);
    out
}

/// The item id a call of another provider is given: `fc_<hash>`.
fn foreign_item_id(item_id: &str) -> String {
    let mut id = format!("fc_{}", short_hash(item_id));
    id.truncate(64);
    id
}

/// pi's tool-call id rule for the Responses apis. `allowed` lists the providers whose ids
/// are `call_id|item_id` pairs this api understands; for any other target provider the id
/// is only sanitized.
pub(crate) fn normalize_tool_call_id(
    id: &str,
    model: &Model,
    source: &AssistantMessage,
    allowed: &[&str],
) -> String {
    if !allowed.contains(&model.provider.as_str()) {
        return normalize_id_part(id);
    }
    let mut parts = id.split('|');
    let (Some(call_id), Some(item_id)) = (parts.next(), parts.next()) else {
        return normalize_id_part(id);
    };
    let call_id = normalize_id_part(call_id);
    let foreign = source.provider != model.provider || source.api != model.api;
    let mut item_id = if foreign {
        foreign_item_id(item_id)
    } else {
        normalize_id_part(item_id)
    };
    if !item_id.starts_with("fc_") {
        item_id = normalize_id_part(&format!("fc_{item_id}"));
    }
    format!("{call_id}|{item_id}")
}

// ------------------------------------------------------------------------------------------
// Request encoding

/// A text block's `textSignature`: the message item id and its phase.
struct TextSignature {
    id: String,
    phase: Option<String>,
}

/// pi's `parseTextSignature`: the v1 JSON form, else the whole text is the id.
fn parse_text_signature(signature: &str) -> TextSignature {
    if signature.starts_with('{')
        && let Ok(Value::Object(map)) = serde_json::from_str::<Value>(signature)
        && map.get("v").and_then(Value::as_f64) == Some(1.0)
        && let Some(Value::String(id)) = map.get("id")
    {
        let phase = map
            .get("phase")
            .and_then(Value::as_str)
            .filter(|p| matches!(*p, "commentary" | "final_answer"))
            .map(str::to_owned);
        return TextSignature {
            id: id.clone(),
            phase,
        };
    }
    TextSignature {
        id: signature.to_owned(),
        phase: None,
    }
}

/// pi's `encodeTextSignatureV1`: `{"v":1,"id":…,"phase":…}` (an absent id is left out, as
/// `JSON.stringify` leaves out `undefined`).
fn encode_text_signature(id: Option<&str>, phase: Option<&str>) -> String {
    let mut out = String::from(r#"{"v":1"#);
    if let Some(id) = id {
        out.push_str(r#","id":"#);
        out.push_str(&Value::from(id).to_string());
    }
    if let Some(phase) = phase.filter(|p| !p.is_empty()) {
        out.push_str(r#","phase":"#);
        out.push_str(&Value::from(phase).to_string());
    }
    out.push('}');
    out
}

fn image_part(data: &str, mime_type: &str) -> Value {
    json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{mime_type};base64,{data}")})
}

/// The `input` items for `context` (pi's `convertResponsesMessages`). `allowed` is the id
/// rule's list of providers (see [`normalize_tool_call_id`]); the system prompt is the first
/// item when `include_system_prompt` (Codex sends it as `instructions` instead). Fails only
/// on a thinking block of this model whose signature is not a reasoning item in JSON (pi
/// fails the same way).
pub(crate) fn convert_messages(
    model: &Model,
    context: &Context,
    allowed: &[&str],
    include_system_prompt: bool,
) -> Result<Vec<Value>, Error> {
    let normalize = |id: &str, target: &Model, source: &AssistantMessage| {
        normalize_tool_call_id(id, target, source, allowed)
    };
    let transformed = transform_messages(&context.messages, model, Some(&normalize));
    let mut items = Vec::with_capacity(transformed.len() + 1);
    if let Some(prompt) = context
        .system_prompt
        .as_deref()
        .filter(|p| include_system_prompt && !p.is_empty())
    {
        let role = if model.reasoning {
            "developer"
        } else {
            "system"
        };
        items.push(json!({"role": role, "content": prompt}));
    }
    let vision = model.supports_images();
    // pi numbers messages for `msg_<n>` ids, not counting those that add no item.
    let mut index = 0usize;
    for message in &transformed {
        match message.as_ref() {
            Message::User(user) => match &user.content {
                UserContent::Text(text) => {
                    items.push(
                        json!({"role": "user", "content": [{"type": "input_text", "text": text}]}),
                    );
                }
                UserContent::Blocks(blocks) => {
                    let content: Vec<Value> = blocks
                        .iter()
                        .filter_map(|block| match block {
                            Content::Text(t) => Some(json!({"type": "input_text", "text": t.text})),
                            Content::Image(i) => Some(image_part(&i.data, &i.mime_type)),
                            Content::Unknown(_) => {
                                skip_unknown_block(block.block_type(), &model.api);
                                None
                            }
                        })
                        .collect();
                    if content.is_empty() {
                        continue;
                    }
                    items.push(json!({"role": "user", "content": content}));
                }
            },
            Message::Assistant(assistant) => {
                let different_model = assistant.model != model.id
                    && assistant.provider == model.provider
                    && assistant.api == model.api;
                let before = items.len();
                for block in &assistant.content {
                    match block {
                        AssistantContent::Thinking(t) => {
                            let Some(signature) =
                                t.thinking_signature.as_deref().filter(|s| !s.is_empty())
                            else {
                                continue;
                            };
                            let item: Value = serde_json::from_str(signature).map_err(|e| {
                                Error::new(
                                    ErrorKind::Config,
                                    format!(
                                        "Cannot replay a thinking block: its thinkingSignature is not an OpenAI reasoning item ({e})"
                                    ),
                                )
                            })?;
                            items.push(item);
                        }
                        AssistantContent::Text(t) => {
                            let signature = t.text_signature.as_deref().map(parse_text_signature);
                            let id = match &signature {
                                Some(s) if s.id.is_empty() => format!("msg_{index}"),
                                Some(s) if s.id.encode_utf16().count() > 64 => {
                                    format!("msg_{}", short_hash(&s.id))
                                }
                                Some(s) => s.id.clone(),
                                None => format!("msg_{index}"),
                            };
                            let mut item = json!({
                                "type": "message",
                                "role": "assistant",
                                "content": [{"type": "output_text", "text": t.text, "annotations": []}],
                                "status": "completed",
                                "id": id,
                            });
                            if let Some(phase) = signature.and_then(|s| s.phase) {
                                item["phase"] = phase.into();
                            }
                            items.push(item);
                        }
                        AssistantContent::ToolCall(call) => {
                            let mut parts = call.id.split('|');
                            let call_id = parts.next().unwrap_or_default();
                            let item_id = parts
                                .next()
                                .filter(|id| !(different_model && id.starts_with("fc_")));
                            let mut item = Map::new();
                            item.insert("type".into(), "function_call".into());
                            if let Some(id) = item_id {
                                item.insert("id".into(), id.into());
                            }
                            item.insert("call_id".into(), call_id.into());
                            item.insert("name".into(), call.name.clone().into());
                            item.insert(
                                "arguments".into(),
                                js::to_string(&Value::Object(call.arguments.clone())).into(),
                            );
                            items.push(Value::Object(item));
                        }
                        AssistantContent::Unknown(_) => {
                            skip_unknown_block(block.block_type(), &model.api);
                        }
                    }
                }
                if items.len() == before {
                    continue;
                }
            }
            Message::ToolResult(result) => {
                skip_unknown_blocks(&result.content, &model.api);
                let texts: Vec<&str> = result.content.iter().filter_map(Content::as_text).collect();
                let text = texts.join("\n");
                let has_images = result
                    .content
                    .iter()
                    .any(|c| matches!(c, Content::Image(_)));
                let call_id = result.tool_call_id.split('|').next().unwrap_or_default();
                let output = if has_images && vision {
                    let mut parts = Vec::new();
                    if !text.is_empty() {
                        parts.push(json!({"type": "input_text", "text": text}));
                    }
                    for block in &result.content {
                        if let Content::Image(i) = block {
                            parts.push(image_part(&i.data, &i.mime_type));
                        }
                    }
                    Value::Array(parts)
                } else if text.is_empty() {
                    Value::from("(see attached image)")
                } else {
                    Value::from(text)
                };
                items.push(
                    json!({"type": "function_call_output", "call_id": call_id, "output": output}),
                );
            }
        }
        index += 1;
    }
    Ok(items)
}

/// The `tools` parameter: function tools with the given `strict` (`false`; Codex: `null`).
pub(crate) fn convert_tools(tools: &[Tool], strict: &Value) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": strict,
            })
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// Stream decoding

/// One SSE payload, flat: only what the decoder reads, borrowed from the bytes. Items and
/// responses stay raw until an event that needs them is handled: a `response.completed`
/// repeats the whole output, which is skipped, not built.
#[derive(Debug, Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item: Option<&'a RawValue>,
    #[serde(default, borrow)]
    part: Option<WirePartKind<'a>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    response: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
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
    fn output_index(&self) -> Option<u64> {
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
enum PartKind {
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
enum Current {
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

/// How a decoder prices usage by service tier.
#[derive(Debug, Clone)]
pub(crate) enum TierPricing {
    /// Azure: no tier multiplier.
    None,
    /// OpenAI: `flex` ×0.5, `priority` ×2 (×2.5 for gpt-5.5), from the response's tier, else
    /// the requested one.
    OpenAi { requested: Option<String> },
    /// Codex: as OpenAI, but a requested `flex` or `priority` wins over a reported `default`.
    Codex { requested: Option<String> },
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
    dialect: Dialect,
    response_id: Option<String>,
    usage: Usage,
    response_tier: Option<String>,
    stop_reason: StopReason,
    /// `response.completed` (or `response.incomplete`) arrived.
    completed: bool,
    /// The stream is over for pi (`[DONE]`, or Codex's final event): the rest is ignored.
    done_marker: bool,
    blocks: usize,
    current: Current,
    /// The `output_index` of the current item, when it had one. (Item ids cannot tell
    /// items apart: GitHub Copilot's change from event to event.)
    current_output: Option<u64>,
    signatures: Vec<(usize, Signature)>,
}

/// The multiplier of a service tier (pi's `getServiceTierCostMultiplier`).
pub(crate) fn service_tier_multiplier(model_id: &str, tier: Option<&str>) -> f64 {
    match tier {
        Some("flex") => 0.5,
        Some("priority") if model_id == "gpt-5.5" => 2.5,
        Some("priority") => 2.0,
        _ => 1.0,
    }
}

/// Scales every cost of `usage` by the tier's multiplier (pi's `applyServiceTierPricing`).
pub(crate) fn apply_service_tier_pricing(usage: &mut Usage, model_id: &str, tier: Option<&str>) {
    let multiplier = service_tier_multiplier(model_id, tier);
    if multiplier == 1.0 {
        return;
    }
    let cost = &mut usage.cost;
    cost.input *= multiplier;
    cost.output *= multiplier;
    cost.cache_read *= multiplier;
    cost.cache_write *= multiplier;
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write;
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
fn truthy(raw: &RawValue) -> bool {
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
    fn is_other_item(&self, output_index: Option<u64>) -> bool {
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

/// An `output_item.done` event with a message item, read with its text left raw (the
/// same members and types as [`WireItem`], so that it accepts what that accepts).
#[derive(Debug, Deserialize)]
struct WireLongItem<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    #[allow(dead_code)]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    #[allow(dead_code)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    #[allow(dead_code)]
    arguments: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    phase: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<Vec<WireLongPart<'a>>>,
    #[serde(default)]
    #[allow(dead_code)]
    summary: Option<Vec<serde::de::IgnoredAny>>,
}

#[derive(Debug, Deserialize)]
struct WireLongPart<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<&'a RawValue>,
    #[serde(default, borrow)]
    #[allow(dead_code)]
    refusal: Option<Cow<'a, str>>,
}

/// Where the text of a long message item is in its event, and what its signature needs.
#[derive(Debug)]
struct LongText {
    /// The quoted JSON string.
    quoted: std::ops::Range<usize>,
    id: Option<String>,
    phase: Option<String>,
}

impl ResponsesDecoder {
    /// The text of `data` if it is the `output_item.done` of the open message item with one
    /// text part, as [`on_event`](Decoder::on_event) would read it; `None` for anything
    /// else.
    fn long_message_text(&self, name: &[u8], data: &[u8]) -> Option<LongText> {
        if self.done_marker
            || (self.dialect == Dialect::Sdk && name.starts_with(b"thread."))
            || data.trim_ascii_start().first() != Some(&b'{')
            || !matches!(self.current, Current::Message { open: true, .. })
        {
            return None;
        }
        let event: WireEvent<'_> = serde_json::from_slice(data).ok()?;
        if event.kind.as_deref() != Some("response.output_item.done")
            || (self.dialect == Dialect::Sdk && event.error.is_some_and(truthy))
        {
            return None;
        }
        let item: WireLongItem<'_> = serde_json::from_str(event.item?.get()).ok()?;
        let [part] = item.content.as_deref()? else {
            return None;
        };
        if item.kind.as_deref() != Some("message")
            || part.kind.as_deref() != Some("output_text")
            || self.is_other_item(event.output_index())
        {
            return None;
        }
        let raw = part.text?.get().as_bytes();
        if raw.first() != Some(&b'"') {
            return None;
        }
        let start = (raw.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
        Some(LongText {
            quoted: start..start + raw.len(),
            id: item.id.map(Cow::into_owned),
            phase: item.phase.map(Cow::into_owned),
        })
    }
}

/// Unescapes the JSON string at `quoted` in `data` in place and makes `data` that text,
/// without a copy. `None` (and `data` untouched) when it holds an escape this does not
/// write (a UTF-16 surrogate): serde reads those. Once writing starts it cannot fail. `data` must be valid UTF-8 and the
/// string valid JSON (serde checked both when it found the string).
fn unescape_in_place(data: &mut Vec<u8>, quoted: std::ops::Range<usize>) -> Option<String> {
    let hex = |digits: &[u8]| {
        digits.iter().try_fold(0u32, |n, &d| {
            let v = char::from(d).to_digit(16)?;
            Some(n * 16 + v)
        })
    };
    let body = quoted.start + 1..quoted.end.checked_sub(1)?;
    // Check every escape first, so that nothing is written unless all of it can be.
    let mut i = body.start;
    while let Some(k) = memchr::memchr(b'\\', data.get(i..body.end)?) {
        let at = i + k;
        match *data.get(at + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i = at + 2,
            b'u' => {
                let code = hex(data.get(at + 2..at + 6)?)?;
                if (0xD800..0xE000).contains(&code) {
                    return None;
                }
                i = at + 6;
            }
            _ => return None,
        }
    }
    // Write the text over the string, from its opening quote: it only gets shorter.
    let (mut read, mut write) = (body.start, quoted.start);
    loop {
        let next = memchr::memchr(b'\\', &data[read..body.end]).map_or(body.end, |k| read + k);
        data.copy_within(read..next, write);
        write += next - read;
        if next == body.end {
            break;
        }
        let mut utf8 = [0u8; 4];
        let (bytes, len): (&[u8], usize) = match data[next + 1] {
            b'u' => {
                // Checked above: four hex digits, not a surrogate.
                let c = hex(&data[next + 2..next + 6])
                    .and_then(char::from_u32)
                    .unwrap_or(char::REPLACEMENT_CHARACTER);
                (c.encode_utf8(&mut utf8).as_bytes(), 6)
            }
            e => (
                match e {
                    b'b' => b"\x08",
                    b'f' => b"\x0c",
                    b'n' => b"\n",
                    b'r' => b"\r",
                    b't' => b"\t",
                    b'"' => b"\"",
                    b'/' => b"/",
                    _ => b"\\",
                },
                2,
            ),
        };
        data[write..write + bytes.len()].copy_from_slice(bytes);
        write += bytes.len();
        read = next + len;
    }
    data.truncate(write);
    data.drain(..quoted.start);
    // The buffer grew by doubling while the event arrived: give back what the text does
    // not use (the message holds the same text; the peak is the two of them).
    data.shrink_to_fit();
    // Valid: UTF-8 text with escapes turned into whole characters.
    Some(
        String::from_utf8(std::mem::take(data))
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
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
    use crate::llm::message::{TextContent, ThinkingContent, ToolResultMessage, UserMessage};
    use crate::llm::model::{InputModality, ModelCost};

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
    fn unescape_in_place_agrees_with_serde() {
        for text in [
            r#""""#,
            r#""plain""#,
            r#""a \"q\" \\ \/ \b\f\n\r\t \u00e9\u0041 \u20ac end""#,
            "\"caf\u{e9} \u{1f648} \\n\"",
            r#""\\\\\"""#,
        ] {
            let want: String = serde_json::from_str(text).unwrap();
            let mut data = format!("{{\"text\":{text},\"x\":1}}").into_bytes();
            let start = 8;
            let got = unescape_in_place(&mut data, start..start + text.len());
            assert_eq!(got.as_deref(), Some(want.as_str()), "{text}");
        }
        // A surrogate pair is left to serde, and nothing is written.
        let mut data = br#"{"text":"a \n \ud83d\ude48"}"#.to_vec();
        let before = data.clone();
        let end = data.len() - 1;
        assert_eq!(unescape_in_place(&mut data, 8..end), None);
        assert_eq!(data, before);
    }

    /// Decodes `lines` (one `data:` payload each); with `large`, every event is handed over
    /// as a long one (as the driver does for events of at least `LARGE_EVENT` bytes).
    fn decode_responses(lines: &[String], large: bool) -> (Vec<Value>, Value) {
        use crate::llm::event::PartialMessage;
        use std::collections::VecDeque;

        let model = responses_model("openai", "gpt-5");
        let mut decoder = ResponsesDecoder::new(&model, TierPricing::None);
        let mut state =
            PartialMessage::new(AssistantMessage::new("openai-responses", "openai", "gpt-5"));
        let mut events = Vec::new();
        for line in lines {
            let mut queue = VecDeque::new();
            let mut out = Emit::new(&mut queue, &state);
            let name = b"response.event";
            let result = if large {
                decoder.on_large_event(name, line.as_bytes().to_vec(), &mut out)
            } else {
                decoder.on_event(SseEvent::new(name, line.as_bytes()), &mut out)
            };
            if let Err(error) = result {
                events.push(Value::String(error.message().to_owned()));
            }
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
    }

    #[test]
    fn long_events_read_as_any_event() {
        let start = [
            r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}"#,
            r#"{"type":"response.content_part.added","item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}"#,
            r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}"#,
        ];
        let completed = r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}}"#;
        let done = |item: &str| {
            format!(r#"{{"type":"response.output_item.done","output_index":0,"item":{item}}}"#)
        };
        let endings = [
            // Unescaped in place: the message's text differs from the deltas, it wins.
            done(
                r#"{"id":"msg_1","type":"message","status":"completed","phase":"final_answer","content":[{"type":"output_text","annotations":[],"text":"Hi \"there\"\n\u00e9"}],"role":"assistant"}"#,
            ),
            // Read by serde: a surrogate pair, two parts, a refusal, bad member types,
            // another item, an error member, broken JSON.
            done(
                r#"{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"\ud83d\ude48"}]}"#,
            ),
            done(
                r#"{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"a"},{"type":"output_text","text":"b"}]}"#,
            ),
            done(
                r#"{"id":"msg_1","type":"message","content":[{"type":"refusal","refusal":"no"}]}"#,
            ),
            done(r#"{"id":"msg_1","type":"message","name":5,"content":[{"type":"output_text","text":"x"}]}"#),
            done(r#"{"id":"msg_1","type":"message","content":[{"type":"output_text","text":5}]}"#),
            done(r#"{"id":"msg_1","type":"message","content":[{"type":"output_text","text":null}]}"#),
            done(r#"{"id":"fc_1","type":"function_call","call_id":"c","name":"f","arguments":"{}"}"#),
            r#"{"type":"response.output_item.done","error":{"message":"boom"},"item":{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"x"}]}}"#.to_owned(),
            r#"{"type":"response.output_item.done","item":{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"x"}]"#.to_owned(),
            "[DONE]".to_owned(),
        ];
        for ending in &endings {
            let lines: Vec<String> = start
                .iter()
                .map(|l| (*l).to_owned())
                .chain([ending.clone(), completed.to_owned()])
                .collect();
            let (large_events, large_message) = decode_responses(&lines, true);
            let (events, message) = decode_responses(&lines, false);
            assert_eq!(large_events, events, "{ending}");
            assert_eq!(large_message, message, "{ending}");
        }
        let lines: Vec<String> = start
            .iter()
            .map(|l| (*l).to_owned())
            .chain([endings_first(), completed.to_owned()])
            .collect();
        // The first ending is the one read in place; the others are not (the surrogate
        // pair is found, then left to serde).
        let mut decoder =
            ResponsesDecoder::new(&responses_model("openai", "gpt-5"), TierPricing::None);
        let state = crate::llm::event::PartialMessage::new(AssistantMessage::new("a", "p", "m"));
        for line in start {
            let mut queue = std::collections::VecDeque::new();
            decoder
                .on_event(
                    SseEvent::new(b"", line.as_bytes()),
                    &mut Emit::new(&mut queue, &state),
                )
                .unwrap();
        }
        let found: Vec<bool> = endings
            .iter()
            .map(|e| decoder.long_message_text(b"", e.as_bytes()).is_some())
            .collect();
        assert_eq!(found[..3], [true, true, false]);
        // Only that event is handed over (a long `response.completed` is read in place).
        assert!(decoder.wants_large_event(b"response.output_item.done"));
        assert!(!decoder.wants_large_event(b"response.completed"));
        assert!(found[3..].iter().all(|f| !f));
        let (_, message) = decode_responses(&lines, true);
        assert_eq!(message["content"][0]["text"], "Hi \"there\"\n\u{e9}");
        assert_eq!(
            message["content"][0]["textSignature"],
            r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#
        );
    }

    fn endings_first() -> String {
        r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","phase":"final_answer","content":[{"type":"output_text","annotations":[],"text":"Hi \"there\"\n\u00e9"}],"role":"assistant"}}"#.to_owned()
    }

    #[test]
    fn short_hash_matches_pi() {
        // Values from pi-ai 0.73.1's shortHash.
        for (input, want) in [
            ("", "k4n83c7h0j2b"),
            ("abc", "y0biex7f9bbh"),
            ("call_abc|fc_xyz", "1vb1f7uyitpow"),
            ("é🙈", "5q56rm1x795kj"),
            ("item+/=", "xfoazco3biir"),
        ] {
            assert_eq!(short_hash(input), want, "{input}");
        }
    }

    #[test]
    fn service_tier_multipliers() {
        assert_eq!(service_tier_multiplier("gpt-5", Some("flex")), 0.5);
        assert_eq!(service_tier_multiplier("gpt-5", Some("priority")), 2.0);
        assert_eq!(service_tier_multiplier("gpt-5.5", Some("priority")), 2.5);
        assert_eq!(service_tier_multiplier("gpt-5", Some("default")), 1.0);
        assert_eq!(service_tier_multiplier("gpt-5", None), 1.0);
        let model =
            Model::new("gpt-5", "", "", "").with_cost(ModelCost::new(1.25, 10.0, 0.125, 0.0));
        let mut usage = Usage::new(1000, 2000, 3000, 0);
        crate::llm::calculate_cost(&model, &mut usage);
        let base = usage.cost;
        apply_service_tier_pricing(&mut usage, "gpt-5", Some("flex"));
        assert_eq!(usage.cost.input, base.input * 0.5);
        assert_eq!(usage.cost.output, base.output * 0.5);
        assert_eq!(usage.cost.cache_read, base.cache_read * 0.5);
        assert_eq!(
            usage.cost.total,
            usage.cost.input + usage.cost.output + usage.cost.cache_read
        );
    }

    fn responses_model(provider: &str, id: &str) -> Model {
        Model::new(
            id,
            "openai-responses",
            provider,
            "https://api.openai.com/v1",
        )
        .with_reasoning(true)
        .with_input(vec![InputModality::Text, InputModality::Image])
    }

    const OPENAI: &[&str] = &["openai", "openai-codex", "opencode"];

    #[test]
    fn blocks_of_unknown_types_are_not_sent() {
        let model = Model::new("gpt-5", "openai-responses", "openai", "").with_reasoning(true);
        let (with, without) =
            crate::providers::transform::contexts_with_and_without_unknown_blocks(&model);
        let body = |c: &Context| Value::Array(convert_messages(&model, c, OPENAI, true).unwrap());
        assert!(!body(&with).to_string().contains("futureBlock"));
        assert_eq!(body(&with), body(&without));
    }

    #[test]
    fn foreign_ids_are_hashed_and_sanitized() {
        let target = responses_model("openai", "gpt-5");
        let anthropic = AssistantMessage::new("anthropic-messages", "anthropic", "claude");
        assert_eq!(
            normalize_tool_call_id("toolu_01.x", &target, &anthropic, OPENAI),
            "toolu_01_x"
        );
        let copilot = AssistantMessage::new("openai-responses", "github-copilot", "gpt-5");
        assert_eq!(
            normalize_tool_call_id("call_1|item+/=", &target, &copilot, OPENAI),
            format!("call_1|fc_{}", short_hash("item+/="))
        );
        // Same provider and api, other model: the item id is kept, sanitized and prefixed.
        let sibling = AssistantMessage::new("openai-responses", "openai", "gpt-4.1");
        assert_eq!(
            normalize_tool_call_id("call_1|rs.9", &target, &sibling, OPENAI),
            "call_1|fc_rs_9"
        );
        assert_eq!(
            normalize_tool_call_id("call_1|fc_ok", &target, &sibling, OPENAI),
            "call_1|fc_ok"
        );
        // Long ids: 64 characters, no trailing underscore.
        let long = format!("{}|fc_1", "a".repeat(63) + "!!!");
        assert_eq!(
            normalize_tool_call_id(&long, &target, &anthropic, OPENAI),
            format!("{}|fc_{}", "a".repeat(63), short_hash("fc_1"))
        );
        // Other targets only sanitize.
        let other = responses_model("my-proxy", "gpt-5");
        assert_eq!(
            normalize_tool_call_id("call_1|fc_2", &other, &anthropic, OPENAI),
            "call_1_fc_2"
        );
        // A non-BMP character is two UTF-16 units, so two underscores.
        assert_eq!(normalize_id_part("a🙈b"), "a__b");
    }

    fn assistant(provider: &str, model: &str, content: Vec<AssistantContent>) -> AssistantMessage {
        AssistantMessage::new("openai-responses", provider, model)
            .with_content(content)
            .with_stop_reason(StopReason::ToolUse)
    }

    #[test]
    fn replay_of_own_reasoning_text_and_calls() {
        let target = responses_model("openai", "gpt-5");
        let reasoning = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"plan"}],"encrypted_content":"enc"}"#;
        let own = assistant(
            "openai",
            "gpt-5",
            vec![
                AssistantContent::Thinking(ThinkingContent::new("plan").with_signature(reasoning)),
                AssistantContent::Text(
                    TextContent::new("hi")
                        .with_signature(r#"{"v":1,"id":"msg_a","phase":"commentary"}"#),
                ),
                AssistantContent::Text(TextContent::new("legacy").with_signature("msg_legacy")),
                AssistantContent::Text(TextContent::new("long").with_signature("m".repeat(65))),
                AssistantContent::tool_call("call_1|fc_1", "read", json!({"b": 1.0, "a": "x"})),
            ],
        );
        let ctx = Context::new()
            .with_system_prompt("sys")
            .with_message(UserMessage::text("go"))
            .with_message(own)
            .with_message(ToolResultMessage::new(
                "call_1|fc_1",
                "read",
                vec![Content::text("ok")],
                false,
            ));
        let items = convert_messages(&target, &ctx, OPENAI, true).unwrap();
        assert_eq!(
            Value::Array(items),
            json!([
                {"role": "developer", "content": "sys"},
                {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
                {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "enc"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi", "annotations": []}], "status": "completed", "id": "msg_a", "phase": "commentary"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "legacy", "annotations": []}], "status": "completed", "id": "msg_legacy"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "long", "annotations": []}], "status": "completed", "id": format!("msg_{}", short_hash(&"m".repeat(65)))},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"b\":1,\"a\":\"x\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "ok"}
            ])
        );
    }

    #[test]
    fn replay_across_models() {
        let target = responses_model("openai", "gpt-5");
        let reasoning = r#"{"id":"rs_1","type":"reasoning","summary":[]}"#;
        let content = || {
            vec![
                AssistantContent::Thinking(
                    ThinkingContent::new("thought").with_signature(reasoning),
                ),
                AssistantContent::Text(
                    TextContent::new("hi").with_signature(r#"{"v":1,"id":"msg_a"}"#),
                ),
                AssistantContent::tool_call("call_1|fc_1", "read", json!({})),
            ]
        };
        // Another OpenAI model: thinking becomes text, signatures go, the fc_ id is dropped.
        let sibling = assistant("openai", "gpt-4.1", content());
        // Another provider: the item id is hashed.
        let foreign = AssistantMessage::new("anthropic-messages", "anthropic", "claude")
            .with_content(vec![
                AssistantContent::Thinking(ThinkingContent::new("t").with_signature("sig")),
                AssistantContent::tool_call("toolu_1", "read", json!({})),
            ])
            .with_stop_reason(StopReason::ToolUse);
        let ctx = Context::new()
            .with_message(sibling)
            .with_message(ToolResultMessage::new("call_1|fc_1", "read", vec![], false))
            .with_message(foreign)
            .with_message(ToolResultMessage::new(
                "toolu_1",
                "read",
                vec![Content::text("a"), Content::image("AAAA", "image/png")],
                false,
            ));
        let items = convert_messages(&target, &ctx, OPENAI, true).unwrap();
        assert_eq!(
            Value::Array(items),
            json!([
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "thought", "annotations": []}], "status": "completed", "id": "msg_0"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi", "annotations": []}], "status": "completed", "id": "msg_0"},
                {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "(see attached image)"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "t", "annotations": []}], "status": "completed", "id": "msg_2"},
                {"type": "function_call", "call_id": "toolu_1", "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "toolu_1", "output": [
                    {"type": "input_text", "text": "a"},
                    {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AAAA"}
                ]}
            ])
        );
    }

    #[test]
    fn bad_reasoning_signature_is_an_error() {
        let target = responses_model("openai", "gpt-5");
        let own = assistant(
            "openai",
            "gpt-5",
            vec![AssistantContent::Thinking(
                ThinkingContent::new("x").with_signature("not json"),
            )],
        );
        let ctx = Context::new().with_message(own);
        let err = convert_messages(&target, &ctx, OPENAI, true).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
    }

    #[test]
    fn reasoning_parameters() {
        let model = responses_model("openai", "gpt-5");
        let params = |model: &Model, effort: Option<&str>, summary: Option<&str>, none: bool| {
            let mut body = Map::new();
            let options = ReasoningOptions {
                effort: effort.map(str::to_owned),
                summary: summary.map(str::to_owned),
            };
            insert_reasoning(&mut body, model, &options, none);
            Value::Object(body)
        };
        assert_eq!(
            params(&model, None, None, true),
            json!({"reasoning": {"effort": "none"}})
        );
        assert_eq!(params(&model, None, None, false), json!({}));
        assert_eq!(
            params(&model, Some("high"), None, true),
            json!({"reasoning": {"effort": "high", "summary": "auto"}, "include": ["reasoning.encrypted_content"]})
        );
        assert_eq!(
            params(&model, None, Some("detailed"), true)["reasoning"],
            json!({"effort": "medium", "summary": "detailed"})
        );
        let mut mapped = model.clone();
        mapped.thinking_level_map = Some(
            [
                (ThinkingLevel::Off, None),
                (ThinkingLevel::Xhigh, Some("max".to_owned())),
            ]
            .into_iter()
            .collect(),
        );
        assert_eq!(params(&mapped, None, None, true), json!({}));
        assert_eq!(
            params(&mapped, Some("xhigh"), None, true)["reasoning"]["effort"],
            "max"
        );
        mapped.thinking_level_map = Some(
            [(ThinkingLevel::Off, Some("minimal".to_owned()))]
                .into_iter()
                .collect(),
        );
        assert_eq!(
            params(&mapped, None, None, true),
            json!({"reasoning": {"effort": "minimal"}})
        );
        assert_eq!(
            params(
                &model.clone().with_reasoning(false),
                Some("high"),
                None,
                true
            ),
            json!({})
        );
    }

    #[test]
    fn text_signatures() {
        assert_eq!(
            encode_text_signature(Some("msg_1"), Some("final_answer")),
            r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#
        );
        assert_eq!(
            encode_text_signature(Some("m\"1"), None),
            r#"{"v":1,"id":"m\"1"}"#
        );
        assert_eq!(encode_text_signature(None, None), r#"{"v":1}"#);
        let parsed = parse_text_signature(r#"{"v":1,"id":"msg_1","phase":"other"}"#);
        assert_eq!((parsed.id.as_str(), parsed.phase), ("msg_1", None));
        let parsed = parse_text_signature(r#"{"v":2,"id":"msg_1"}"#);
        assert_eq!(parsed.id, r#"{"v":2,"id":"msg_1"}"#);
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
