//! The request side: the Responses options (`reasoning`), pi's tool-call ids, and the
//! `input` items and tools a conversation becomes.

use serde_json::{Map, Value, json};

use crate::llm::error::{Error, ErrorKind};
use crate::llm::json::js;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, Context, Message, Tool, UserContent,
};
use crate::llm::model::Model;
use crate::llm::thinking::ThinkingLevel;
use crate::providers::transform::{skip_unknown_block, skip_unknown_blocks, transform_messages};

// ------------------------------------------------------------------------------------------
// Options

/// The reasoning options of a Responses api (`reasoningEffort`, `reasoningSummary`).
#[derive(Debug, Default)]
pub(crate) struct ReasoningOptions {
    /// `reasoningEffort`: a level name (mapped through the model's `thinkingLevelMap`).
    pub(crate) effort: Option<String>,
    /// `reasoningSummary`: `auto`, `detailed`, `concise` (default `auto`).
    pub(crate) summary: Option<String>,
}

impl ReasoningOptions {
    /// From an api's typed options.
    pub(crate) fn of(effort: Option<&String>, summary: Option<&String>) -> Self {
        ReasoningOptions {
            effort: effort.cloned(),
            summary: summary.cloned(),
        }
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
pub(super) fn encode_text_signature(id: Option<&str>, phase: Option<&str>) -> String {
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

/// The `tools` parameter: function tools with the given `strict` (`Some(false)`; Codex:
/// `None`, sent as `null`), borrowing each tool's schema.
pub(crate) fn convert_tools(tools: &[Tool], strict: Option<bool>) -> Vec<FunctionTool<'_>> {
    tools
        .iter()
        .map(|tool| FunctionTool {
            kind: "function",
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
            strict,
        })
        .collect()
}

/// One entry of `tools`.
#[derive(Debug, serde::Serialize)]
pub(crate) struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::StopReason;
    use crate::llm::message::{TextContent, ThinkingContent, ToolResultMessage, UserMessage};

    use crate::providers::openai_responses_shared::responses_model;

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
}
