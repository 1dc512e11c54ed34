//! The `generateContent` request body of pi's Google providers (`google-generative-ai` and
//! `google-vertex` send the same one), as `@google/genai` puts pi's parameters on the wire:
//! `contents`, `systemInstruction`, `tools`, `toolConfig` and `generationConfig`.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::llm::error::Error;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, Context, Message, UserContent,
};
use crate::llm::model::Model;
use crate::llm::options::{GoogleOptions, GoogleThinking, GoogleVertexOptions, StreamOptions};
use crate::providers::body::{TOOLS, WithTools};
use crate::providers::transform::{skip_unknown_block, skip_unknown_blocks, transform_messages};

/// Which of pi's two Google providers a request is for (they differ in details).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    /// `google-generative-ai` (the Gemini API).
    GenerativeAi,
    /// `google-vertex` (Vertex AI).
    Vertex,
}

/// The thought signature Google documents for replaying a function call that has none
/// (another model's call, a hand-written history). Gemini 3 on the Gemini API rejects a
/// model turn whose first function call is unsigned.
pub(crate) const SKIP_THOUGHT_SIGNATURE: &str = "skip_thought_signature_validator";

/// Text sent for a tool result that only holds images.
const IMAGE_ONLY_RESULT: &str = "(see attached image)";
/// Text before the images of a tool result sent as a separate turn (Gemini before 3).
const TOOL_RESULT_IMAGE: &str = "Tool result image:";

/// The request body for `model`.
pub(crate) fn build_body<'a>(
    model: &Model,
    context: &'a Context,
    options: &StreamOptions,
    flavour: Flavour,
) -> Result<WithTools<GoogleTools<'a>>, Error> {
    // Vertex has options of its own (the Gemini ones plus its project, location and token),
    // so that neither reports the other's keys as unknown.
    let thinking = match flavour {
        Flavour::GenerativeAi => options.api_options::<GoogleOptions>()?.thinking,
        Flavour::Vertex => options.api_options::<GoogleVertexOptions>()?.thinking,
    };
    build_body_with(model, context, options, flavour, thinking.as_ref())
}

/// [`build_body`] with the `thinking` option already read.
pub(crate) fn build_body_with<'a>(
    model: &Model,
    context: &'a Context,
    options: &StreamOptions,
    flavour: Flavour,
    thinking: Option<&GoogleThinking>,
) -> Result<WithTools<GoogleTools<'a>>, Error> {
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(convert_messages(model, context, flavour)),
    );
    if let Some(prompt) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": prompt}], "role": "user"}),
        );
    }
    let mut tools = None;
    if let Some(list) = context.tools.as_deref().filter(|t| !t.is_empty()) {
        let function_declarations = list
            .iter()
            .map(|t| Declaration {
                name: &t.name,
                description: &t.description,
                parameters_json_schema: &t.parameters,
            })
            .collect();
        tools = Some([FunctionDeclarations {
            function_declarations,
        }]);
        body.insert(TOOLS.into(), Value::Null);
        if let Some(choice) = options.effective_tool_choice() {
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": choice.google()}),
            );
        }
    }
    let mut generation = Map::new();
    if let Some(t) = options.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(n) = options.max_tokens {
        generation.insert("maxOutputTokens".into(), n.into());
    }
    if let Some(config) = thinking_config(model, thinking, flavour) {
        generation.insert("thinkingConfig".into(), config);
    }
    // `@google/genai` always sends it, empty or not.
    body.insert("generationConfig".into(), Value::Object(generation));
    Ok(WithTools { body, tools })
}

/// `tools`: one entry holding every declaration, borrowing the tools' schemas.
pub(crate) type GoogleTools<'a> = [FunctionDeclarations<'a>; 1];

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FunctionDeclarations<'a> {
    function_declarations: Vec<Declaration<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Declaration<'a> {
    name: &'a str,
    description: &'a str,
    parameters_json_schema: &'a Value,
}

/// `thinkingConfig`: with thinking on (reasoning models only), `includeThoughts` plus the
/// level or the budget; with thinking explicitly off, the lowest setting the model accepts.
fn thinking_config(
    model: &Model,
    thinking: Option<&GoogleThinking>,
    flavour: Flavour,
) -> Option<Value> {
    let thinking = thinking?;
    if !model.reasoning {
        return None;
    }
    if !thinking.enabled {
        return Some(disabled_thinking_config(&model.id, flavour));
    }
    let mut config = Map::new();
    config.insert("includeThoughts".into(), true.into());
    if let Some(level) = &thinking.level {
        // Vertex's SDK maps the level through its enum; an unknown name is left out.
        let known = matches!(
            level.as_str(),
            "THINKING_LEVEL_UNSPECIFIED" | "MINIMAL" | "LOW" | "MEDIUM" | "HIGH"
        );
        if flavour == Flavour::GenerativeAi || known {
            config.insert("thinkingLevel".into(), level.clone().into());
        }
    } else if let Some(budget) = thinking.budget_tokens {
        config.insert("thinkingBudget".into(), budget.into());
    }
    Some(Value::Object(config))
}

/// Gemini 2.x turns thinking off with a zero budget; Gemini 3 (and Gemma 4 on the Gemini
/// API) cannot, so they get their lowest level, without `includeThoughts`.
fn disabled_thinking_config(model_id: &str, flavour: Flavour) -> Value {
    let id = model_id.to_lowercase();
    if is_gemini3(&id, "pro") {
        json!({"thinkingLevel": "LOW"})
    } else if is_gemini3(&id, "flash") || (flavour == Flavour::GenerativeAi && is_gemma4(&id)) {
        json!({"thinkingLevel": "MINIMAL"})
    } else {
        json!({"thinkingBudget": 0})
    }
}

/// `gemini-3-<family>` or `gemini-3.<n>-<family>` anywhere in the (lowercased) id.
fn is_gemini3(id: &str, family: &str) -> bool {
    static PRO: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"gemini-3(?:\.\d+)?-pro").ok());
    static FLASH: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"gemini-3(?:\.\d+)?-flash").ok());
    let re = if family == "pro" { &PRO } else { &FLASH };
    re.as_ref().is_some_and(|re| re.is_match(id))
}

fn is_gemma4(id: &str) -> bool {
    id.contains("gemma4") || id.contains("gemma-4")
}

/// The major version of a Gemini model id (`gemini-2.5-pro` → 2, `gemini-live-3…` → 3).
pub(crate) fn gemini_major_version(model_id: &str) -> Option<u32> {
    let id = model_id.to_lowercase();
    let rest = id.strip_prefix("gemini-")?;
    let rest = rest.strip_prefix("live-").unwrap_or(rest);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest[..digits].parse().ok()
}

/// Models served through Google's apis that need (and get) tool-call ids: Claude and
/// gpt-oss.
pub(crate) fn requires_tool_call_id(model_id: &str) -> bool {
    model_id.starts_with("claude-") || model_id.starts_with("gpt-oss-")
}

/// A tool-call id these models accept: `[a-zA-Z0-9_-]`, at most 64 characters. Like
/// JavaScript's regex over UTF-16, a character outside the Basic Multilingual Plane
/// becomes two underscores.
fn sanitize_tool_call_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
        }
        if out.len() >= 64 {
            break;
        }
    }
    out.truncate(64);
    out
}

/// Gemini 3 and later take images inside a function response; older Gemini models get
/// them as a separate user turn. Other models (Claude, Gemma, …) take them inline.
fn multimodal_function_response(model_id: &str) -> bool {
    gemini_major_version(model_id).is_none_or(|v| v >= 3)
}

/// Google's thought signatures are bytes, sent as base64.
fn is_valid_signature(signature: &str) -> bool {
    let body = signature.trim_end_matches('=');
    !signature.is_empty()
        && signature.len().is_multiple_of(4)
        && signature.len() - body.len() <= 2
        && !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// A signature to replay: only from the same provider and model, and only valid base64.
fn replay_signature(same_model: bool, signature: Option<&str>) -> Option<&str> {
    signature.filter(|s| same_model && is_valid_signature(s))
}

fn inline_data(mime_type: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": mime_type, "data": data}})
}

/// pi's `convertMessages`: the conversation as Gemini `contents`.
fn convert_messages(model: &Model, context: &Context, flavour: Flavour) -> Vec<Value> {
    let with_ids = requires_tool_call_id(&model.id);
    let normalize = |id: &str, _: &Model, _: &AssistantMessage| {
        if with_ids {
            sanitize_tool_call_id(id)
        } else {
            id.to_owned()
        }
    };
    // Gemini 3 on the Gemini API rejects a turn whose first call has no signature.
    let sentinel =
        flavour == Flavour::GenerativeAi && gemini_major_version(&model.id).is_some_and(|v| v >= 3);
    let messages = transform_messages(&context.messages, model, Some(&normalize));
    let mut contents: Vec<Value> = Vec::with_capacity(messages.len());
    for message in &messages {
        match message.as_ref() {
            Message::User(user) => match &user.content {
                UserContent::Text(text) => {
                    contents.push(json!({"parts": [{"text": text}], "role": "user"}));
                }
                UserContent::Blocks(blocks) => {
                    let parts: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            Content::Text(t) => Some(json!({"text": t.text})),
                            Content::Image(i) => Some(inline_data(&i.mime_type, &i.data)),
                            Content::Unknown(_) => {
                                skip_unknown_block(b.block_type(), &model.api);
                                None
                            }
                        })
                        .collect();
                    if !parts.is_empty() {
                        contents.push(json!({"parts": parts, "role": "user"}));
                    }
                }
            },
            Message::Assistant(assistant) => {
                let same_model =
                    assistant.provider == model.provider && assistant.model == model.id;
                let mut parts = Vec::with_capacity(assistant.content.len());
                let mut first_call = true;
                for block in &assistant.content {
                    match block {
                        AssistantContent::Text(t) => {
                            if t.text.trim().is_empty() {
                                continue;
                            }
                            let mut part = json!({"text": t.text});
                            if let Some(sig) =
                                replay_signature(same_model, t.text_signature.as_deref())
                            {
                                part["thoughtSignature"] = sig.into();
                            }
                            parts.push(part);
                        }
                        AssistantContent::Thinking(t) => {
                            if t.thinking.trim().is_empty() {
                                continue;
                            }
                            if same_model {
                                let mut part = json!({"thought": true, "text": t.thinking});
                                if let Some(sig) =
                                    replay_signature(true, t.thinking_signature.as_deref())
                                {
                                    part["thoughtSignature"] = sig.into();
                                }
                                parts.push(part);
                            } else {
                                // Another model's reasoning: plain text, no tags to mimic.
                                parts.push(json!({"text": t.thinking}));
                            }
                        }
                        AssistantContent::ToolCall(call) => {
                            let mut function_call = json!({
                                "name": call.name,
                                "args": call.arguments,
                            });
                            if with_ids {
                                function_call["id"] = call.id.clone().into();
                            }
                            let mut part = json!({"functionCall": function_call});
                            let signature =
                                replay_signature(same_model, call.thought_signature.as_deref())
                                    .or((sentinel && first_call).then_some(SKIP_THOUGHT_SIGNATURE));
                            if let Some(sig) = signature {
                                part["thoughtSignature"] = sig.into();
                            }
                            first_call = false;
                            parts.push(part);
                        }
                        AssistantContent::Unknown(_) => {
                            skip_unknown_block(block.block_type(), &model.api);
                        }
                    }
                }
                if !parts.is_empty() {
                    contents.push(json!({"parts": parts, "role": "model"}));
                }
            }
            Message::ToolResult(result) => {
                skip_unknown_blocks(&result.content, &model.api);
                let text = result
                    .content
                    .iter()
                    .filter_map(Content::as_text)
                    .collect::<Vec<_>>()
                    .join("\n");
                let images: Vec<Value> = if model.supports_images() {
                    result
                        .content
                        .iter()
                        .filter_map(|c| match c {
                            Content::Image(i) => Some(inline_data(&i.mime_type, &i.data)),
                            Content::Text(_) | Content::Unknown(_) => None,
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let inline_images = multimodal_function_response(&model.id);
                let value = if !text.is_empty() {
                    text
                } else if !images.is_empty() {
                    IMAGE_ONLY_RESULT.to_owned()
                } else {
                    String::new()
                };
                let mut response = json!({
                    "name": result.tool_name,
                    "response": if result.is_error { json!({"error": value}) } else { json!({"output": value}) },
                });
                if !images.is_empty() && inline_images {
                    response["parts"] = Value::Array(images.clone());
                }
                if with_ids {
                    response["id"] = result.tool_call_id.clone().into();
                }
                let part = json!({"functionResponse": response});
                // All function responses of a turn go in one user content.
                let merged = match contents.last_mut() {
                    Some(last) if is_function_response_turn(last) => {
                        if let Some(parts) = last["parts"].as_array_mut() {
                            parts.push(part.clone());
                        }
                        true
                    }
                    _ => false,
                };
                if !merged {
                    contents.push(json!({"parts": [part], "role": "user"}));
                }
                if !images.is_empty() && !inline_images {
                    let mut parts = vec![json!({"text": TOOL_RESULT_IMAGE})];
                    parts.extend(images);
                    contents.push(json!({"parts": parts, "role": "user"}));
                }
            }
        }
    }
    contents
}

/// A user content holding function responses.
fn is_function_response_turn(content: &Value) -> bool {
    content["role"] == "user"
        && content["parts"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::error::ErrorKind;
    use crate::llm::message::StopReason;
    use crate::llm::message::{
        TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage,
    };
    use crate::llm::model::{InputModality, api};

    fn gemini(id: &str) -> Model {
        Model::new(id, api::GOOGLE_GENERATIVE_AI, "google", "")
            .with_reasoning(true)
            .with_input(vec![InputModality::Text, InputModality::Image])
    }

    fn body(model: &Model, ctx: &Context, opts: &StreamOptions) -> Value {
        build_body(model, ctx, opts, Flavour::GenerativeAi)
            .unwrap()
            .to_value()
    }

    #[test]
    fn blocks_of_unknown_types_are_not_sent() {
        let model = gemini("gemini-3-pro");
        let (with, without) =
            crate::providers::transform::contexts_with_and_without_unknown_blocks(&model);
        let body = |c: &Context| body(&model, c, &StreamOptions::new());
        assert!(!body(&with).to_string().contains("futureBlock"));
        assert_eq!(body(&with), body(&without));
    }

    fn own(model: &Model, content: Vec<AssistantContent>) -> AssistantMessage {
        AssistantMessage::new(&model.api, &model.provider, &model.id)
            .with_content(content)
            .with_stop_reason(StopReason::ToolUse)
    }

    fn call(id: &str, name: &str, signature: Option<&str>) -> AssistantContent {
        let mut c = ToolCall::new(id, name, json!({"p": 1}));
        c.thought_signature = signature.map(str::to_owned);
        AssistantContent::ToolCall(c)
    }

    fn result(id: &str, name: &str, content: Vec<Content>, is_error: bool) -> Message {
        ToolResultMessage::new(id, name, content, is_error).into()
    }

    #[test]
    fn top_level_fields_and_empty_generation_config() {
        let ctx = Context::new()
            .with_system_prompt("Be brief.")
            .with_message(UserMessage::text("hi"))
            .with_tools(vec![crate::llm::message::Tool::new(
                "read",
                "Read a file",
                json!({"type": "object", "$schema": "x", "properties": {"a": {"anyOf": [{"type": "string"}, {"const": 1}]}}}),
            )]);
        let b = body(&gemini("gemini-2.5-flash"), &ctx, &StreamOptions::new());
        assert_eq!(
            b,
            json!({
                "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                "systemInstruction": {"parts": [{"text": "Be brief."}], "role": "user"},
                "tools": [{"functionDeclarations": [{
                    "name": "read", "description": "Read a file",
                    // The full JSON Schema, as pi sends it (parametersJsonSchema accepts it).
                    "parametersJsonSchema": {"type": "object", "$schema": "x", "properties": {"a": {"anyOf": [{"type": "string"}, {"const": 1}]}}}
                }]}],
                "generationConfig": {}
            })
        );
        let opts = StreamOptions::new()
            .with_temperature(0.5)
            .with_max_tokens(100)
            .with_extra("toolChoice", json!("any"));
        let b = body(&gemini("gemini-2.5-flash"), &ctx, &opts);
        assert_eq!(
            b["toolConfig"],
            json!({"functionCallingConfig": {"mode": "ANY"}})
        );
        assert_eq!(
            b["generationConfig"],
            json!({"temperature": 0.5, "maxOutputTokens": 100})
        );
        for (choice, mode) in [
            ("none", Some("NONE")),
            ("auto", Some("AUTO")),
            ("other", Some("AUTO")),
            ("", None),
        ] {
            let b = body(
                &gemini("g"),
                &ctx,
                &StreamOptions::new().with_extra("toolChoice", json!(choice)),
            );
            assert_eq!(
                b["toolConfig"]["functionCallingConfig"]["mode"].as_str(),
                mode
            );
        }
        // No tools: no toolConfig either.
        let bare = Context::new().with_message(UserMessage::text("hi"));
        let b = body(&gemini("g"), &bare, &opts);
        assert!(b.get("tools").is_none() && b.get("toolConfig").is_none());
        assert!(b.get("systemInstruction").is_none());
        let bad = StreamOptions::new().with_extra("thinking", json!({"enabled": "yes"}));
        let err = build_body(&gemini("g"), &bare, &bad, Flavour::GenerativeAi).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
    }

    #[test]
    fn thinking_config_per_model_family() {
        let ctx = Context::new().with_message(UserMessage::text("hi"));
        let with = |thinking: Value| StreamOptions::new().with_extra("thinking", thinking);
        let cfg = |id: &str, thinking: Value, flavour: Flavour| {
            build_body(&gemini(id), &ctx, &with(thinking), flavour)
                .unwrap()
                .to_value()["generationConfig"]
                .get("thinkingConfig")
                .cloned()
        };
        let g = Flavour::GenerativeAi;
        let v = Flavour::Vertex;
        let on_budget = json!({"enabled": true, "budgetTokens": 8192});
        assert_eq!(
            cfg("gemini-2.5-pro", on_budget.clone(), g),
            Some(json!({"includeThoughts": true, "thinkingBudget": 8192}))
        );
        let on_level = json!({"enabled": true, "level": "HIGH", "budgetTokens": 1});
        assert_eq!(
            cfg("gemini-3-pro-preview", on_level, g),
            Some(json!({"includeThoughts": true, "thinkingLevel": "HIGH"}))
        );
        let odd = json!({"enabled": true, "level": "EXTREME"});
        assert_eq!(
            cfg("gemini-3-pro-preview", odd.clone(), g),
            Some(json!({"includeThoughts": true, "thinkingLevel": "EXTREME"}))
        );
        assert_eq!(
            cfg("gemini-3-pro-preview", odd, v),
            Some(json!({"includeThoughts": true}))
        );
        let off = json!({"enabled": false});
        assert_eq!(
            cfg("gemini-2.5-flash", off.clone(), g),
            Some(json!({"thinkingBudget": 0}))
        );
        assert_eq!(
            cfg("gemini-3.1-pro-preview", off.clone(), g),
            Some(json!({"thinkingLevel": "LOW"}))
        );
        assert_eq!(
            cfg("gemini-3-flash-preview", off.clone(), v),
            Some(json!({"thinkingLevel": "MINIMAL"}))
        );
        assert_eq!(
            cfg("gemma-4-27b-it", off.clone(), g),
            Some(json!({"thinkingLevel": "MINIMAL"}))
        );
        assert_eq!(
            cfg("gemma-4-27b-it", off.clone(), v),
            Some(json!({"thinkingBudget": 0}))
        );
        // Only reasoning models, and only when the option is there.
        let plain = gemini("gemini-2.0-flash").with_reasoning(false);
        let b = build_body(&plain, &ctx, &with(on_budget), g)
            .unwrap()
            .to_value();
        assert!(b["generationConfig"].get("thinkingConfig").is_none());
        let b = build_body(&gemini("gemini-2.5-pro"), &ctx, &StreamOptions::new(), g)
            .unwrap()
            .to_value();
        assert!(b["generationConfig"].get("thinkingConfig").is_none());
    }

    #[test]
    fn thought_signatures_replayed_for_same_model_only_and_only_if_base64() {
        let m = gemini("gemini-2.5-pro");
        let mine = own(
            &m,
            vec![
                AssistantContent::Thinking(ThinkingContent::new("plan").with_signature("c2lnMQ==")),
                AssistantContent::Thinking(
                    ThinkingContent::new("bad sig").with_signature("not base64!"),
                ),
                AssistantContent::Thinking(ThinkingContent::new("   ")),
                AssistantContent::Text(TextContent::new("answer").with_signature("c2ln")),
                AssistantContent::Text(TextContent::new(" ")),
                call("c1", "read", Some("c2lnMg==")),
                call("c2", "read", Some("abc")),
            ],
        );
        let mut other = own(&m, mine.content.clone());
        other.model = "gemini-2.5-flash".into();
        let ctx = Context::new()
            .with_message(UserMessage::text("hi"))
            .with_message(mine)
            .with_message(result("c1", "read", vec![Content::text("a")], false))
            .with_message(result("c2", "read", vec![Content::text("b")], false))
            .with_message(other)
            .with_message(result("c1", "read", vec![Content::text("a")], false))
            .with_message(result("c2", "read", vec![Content::text("b")], false));
        let b = body(&m, &ctx, &StreamOptions::new());
        assert_eq!(
            b["contents"][1]["parts"],
            json!([
                {"thought": true, "text": "plan", "thoughtSignature": "c2lnMQ=="},
                {"thought": true, "text": "bad sig"},
                {"text": "answer", "thoughtSignature": "c2ln"},
                {"functionCall": {"name": "read", "args": {"p": 1}}, "thoughtSignature": "c2lnMg=="},
                {"functionCall": {"name": "read", "args": {"p": 1}}}
            ])
        );
        // Another model's turn: thinking is plain text, no signatures, no ids.
        assert_eq!(
            b["contents"][3]["parts"],
            json!([
                {"text": "plan"},
                {"text": "bad sig"},
                {"text": "answer"},
                {"functionCall": {"name": "read", "args": {"p": 1}}},
                {"functionCall": {"name": "read", "args": {"p": 1}}}
            ])
        );
        for (sig, ok) in [
            ("QQ==", true),
            ("QUI=", true),
            ("QUJD", true),
            ("a+/9", true),
            ("QQ=", false),
            ("Q===", false),
            ("====", false),
            ("", false),
            ("QU JD", false),
            ("skip_thought_signature_validator", false),
        ] {
            assert_eq!(is_valid_signature(sig), ok, "{sig}");
        }
    }

    #[test]
    fn gemini3_unsigned_first_call_gets_the_sentinel_on_the_gemini_api() {
        let m = gemini("gemini-3-pro-preview");
        let claude = AssistantMessage::new("anthropic-messages", "anthropic", "claude-x")
            .with_content(vec![
                AssistantContent::text("let me look"),
                call("toolu_1", "read", None),
                call("toolu_2", "read", None),
            ])
            .with_stop_reason(StopReason::ToolUse);
        let signed_second = own(
            &m,
            vec![call("a", "read", Some("c2ln")), call("b", "read", None)],
        );
        let ctx = Context::new()
            .with_message(UserMessage::text("hi"))
            .with_message(claude)
            .with_message(result("toolu_1", "read", vec![Content::text("1")], false))
            .with_message(result("toolu_2", "read", vec![Content::text("2")], false))
            .with_message(signed_second)
            .with_message(result("a", "read", vec![Content::text("3")], false))
            .with_message(result("b", "read", vec![Content::text("4")], false));
        let b = body(&m, &ctx, &StreamOptions::new());
        let sigs = |i: usize| -> Vec<Option<String>> {
            b["contents"][i]["parts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p.get("functionCall").is_some())
                .map(|p| p["thoughtSignature"].as_str().map(str::to_owned))
                .collect()
        };
        // Only the first call of a turn carries a signature (parallel calls).
        assert_eq!(sigs(1), vec![Some(SKIP_THOUGHT_SIGNATURE.to_owned()), None]);
        assert_eq!(sigs(3), vec![Some("c2ln".to_owned()), None]);
        // Vertex rejects the sentinel (pi 0.73.1 sends none); older Gemini does not need it.
        let v = build_body(&m, &ctx, &StreamOptions::new(), Flavour::Vertex)
            .unwrap()
            .to_value();
        assert!(
            v["contents"][1]["parts"][1]
                .get("thoughtSignature")
                .is_none()
        );
        let old = body(&gemini("gemini-2.5-pro"), &ctx, &StreamOptions::new());
        assert!(
            old["contents"][1]["parts"][1]
                .get("thoughtSignature")
                .is_none()
        );
    }

    #[test]
    fn function_responses_merge_and_images_go_where_the_model_takes_them() {
        let ctx = |m: &Model| {
            Context::new()
                .with_message(UserMessage::blocks(vec![
                    Content::text("see"),
                    Content::image("AAAA", "image/png"),
                ]))
                .with_message(own(
                    m,
                    vec![
                        call("t1", "shot", None),
                        call("t2", "read", None),
                        call("t3", "read", None),
                    ],
                ))
                .with_message(result(
                    "t1",
                    "shot",
                    vec![Content::image("BBBB", "image/jpeg")],
                    false,
                ))
                .with_message(result(
                    "t2",
                    "read",
                    vec![Content::text("a"), Content::text("b")],
                    true,
                ))
                .with_message(result("t3", "read", vec![], false))
        };
        let g3 = gemini("gemini-3-flash-preview");
        let b = body(&g3, &ctx(&g3), &StreamOptions::new());
        assert_eq!(
            b["contents"][0],
            json!({"role": "user", "parts": [{"text": "see"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]})
        );
        assert_eq!(
            b["contents"][2],
            json!({"role": "user", "parts": [
                {"functionResponse": {"name": "shot", "response": {"output": "(see attached image)"},
                    "parts": [{"inlineData": {"mimeType": "image/jpeg", "data": "BBBB"}}]}},
                {"functionResponse": {"name": "read", "response": {"error": "a\nb"}}},
                {"functionResponse": {"name": "read", "response": {"output": ""}}}
            ]})
        );
        assert_eq!(b["contents"].as_array().unwrap().len(), 3);

        // Gemini 2.x: the image follows in its own user turn, and the next result starts
        // a new function-response turn.
        let g2 = gemini("gemini-2.5-flash");
        let b = body(&g2, &ctx(&g2), &StreamOptions::new());
        assert_eq!(
            b["contents"][2],
            json!({"role": "user", "parts": [{"functionResponse": {"name": "shot", "response": {"output": "(see attached image)"}}}]})
        );
        assert_eq!(
            b["contents"][3],
            json!({"role": "user", "parts": [{"text": "Tool result image:"}, {"inlineData": {"mimeType": "image/jpeg", "data": "BBBB"}}]})
        );
        assert_eq!(b["contents"][4]["parts"].as_array().unwrap().len(), 2);

        // A text-only model gets placeholders instead of images.
        let text_only = gemini("gemini-3-flash-preview").with_input(vec![InputModality::Text]);
        let b = body(&text_only, &ctx(&text_only), &StreamOptions::new());
        assert_eq!(
            b["contents"][2]["parts"][0]["functionResponse"]["response"],
            json!({"output": "(tool image omitted: model does not support images)"})
        );
        assert!(!b.to_string().contains("inlineData"));
    }

    #[test]
    fn tool_call_ids_only_for_claude_and_gpt_oss() {
        let claude = Model::new("claude-sonnet-4-5", api::GOOGLE_VERTEX, "google-vertex", "");
        let foreign = AssistantMessage::new("openai-responses", "openai", "gpt-5")
            .with_content(vec![call("call_1|fc_x.y", "read", None)])
            .with_stop_reason(StopReason::ToolUse);
        let ctx = Context::new()
            .with_message(UserMessage::text("hi"))
            .with_message(foreign)
            .with_message(result(
                "call_1|fc_x.y",
                "read",
                vec![Content::text("ok")],
                false,
            ));
        let b = build_body(&claude, &ctx, &StreamOptions::new(), Flavour::Vertex)
            .unwrap()
            .to_value();
        assert_eq!(
            b["contents"][1]["parts"][0]["functionCall"]["id"],
            "call_1_fc_x_y"
        );
        assert_eq!(
            b["contents"][2]["parts"][0]["functionResponse"]["id"],
            "call_1_fc_x_y"
        );
        let g = body(&gemini("gemini-2.5-pro"), &ctx, &StreamOptions::new());
        assert!(
            g["contents"][1]["parts"][0]["functionCall"]
                .get("id")
                .is_none()
        );
        assert!(
            g["contents"][2]["parts"][0]["functionResponse"]
                .get("id")
                .is_none()
        );
        assert_eq!(sanitize_tool_call_id(&"é".repeat(70)).len(), 64);
        assert_eq!(sanitize_tool_call_id("a😀b"), "a__b");
        assert!(requires_tool_call_id("gpt-oss-120b") && !requires_tool_call_id("gemini-claude-"));
    }

    #[test]
    fn gemini_versions() {
        assert_eq!(gemini_major_version("gemini-2.5-pro"), Some(2));
        assert_eq!(gemini_major_version("Gemini-3-flash"), Some(3));
        assert_eq!(gemini_major_version("gemini-live-10-x"), Some(10));
        assert_eq!(gemini_major_version("gemma-4"), None);
        assert_eq!(gemini_major_version("gemini-pro"), None);
        assert!(
            multimodal_function_response("claude-x")
                && !multimodal_function_response("gemini-1.5-pro")
        );
    }
}
