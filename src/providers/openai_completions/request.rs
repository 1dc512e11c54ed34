//! Request encoding: the body, URL and headers pi-ai 0.73.1 sends to `/chat/completions`.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::compat::{CacheControlFormat, OpenAiCompletionsCompat, ThinkingFormat, truthy};
use crate::llm::error::{Error, ErrorKind};
use crate::llm::json::js;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, Context, Message, Tool, UserContent,
};
use crate::llm::model::Model;
use crate::llm::options::{ApiKey, CacheRetention, OpenAiCompletionsOptions, StreamOptions};
use crate::llm::thinking::ThinkingLevel;
use crate::providers::body::{TOOLS, WithTools};
use crate::providers::http::HttpRequest;
use crate::providers::http::cloudflare;
use crate::providers::http::copilot::copilot_headers;
use crate::providers::transform::{skip_unknown_block, skip_unknown_blocks, transform_messages};

/// The OpenAI SDK's base URL, for a model without one.
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// pi's bridge between tool results and a following user message.
const ASSISTANT_AFTER_TOOL_RESULT: &str = "I have processed the tool results.";
/// The user message that carries tool-result images to a vision model.
const TOOL_IMAGES_INTRO: &str = "Attached image(s) from tool result:";
/// A tool result's text when it has none (images only, or empty).
const SEE_ATTACHED_IMAGE: &str = "(see attached image)";

fn resolve_cache_retention(options: &StreamOptions) -> CacheRetention {
    options.cache_retention.unwrap_or_else(|| {
        if std::env::var("PI_CACHE_RETENTION").as_deref() == Ok("long") {
            CacheRetention::Long
        } else {
            CacheRetention::Short
        }
    })
}

/// The key: the options', the provider's environment variable, none for a keyless model,
/// else `OPENAI_API_KEY` (the OpenAI SDK's own fallback) but only for OpenAI's own endpoint:
/// pi's `stream` sends it to whatever server the model names (a listed deviation).
/// [`stream_simple`](crate::stream_simple) never falls back (pi's `streamSimple` refuses).
fn resolve_key(model: &Model, options: &StreamOptions) -> Result<Option<ApiKey>, Error> {
    crate::llm::env_keys::request_key(model, options).or_else(|error| {
        let env = std::env::var("OPENAI_API_KEY")
            .ok()
            .filter(|k| !k.is_empty());
        match env {
            None => Err(Error::new(
                ErrorKind::Auth,
                "OpenAI API key is required. Set OPENAI_API_KEY environment variable or pass it as an argument.",
            )),
            Some(key) if is_openai_endpoint(model) => Ok(Some(ApiKey::from(key))),
            Some(_) => Err(error),
        }
    })
}

/// True when `model` is served by OpenAI's API (`api.openai.com`, or no base URL).
pub(crate) fn is_openai_endpoint(model: &Model) -> bool {
    !cloudflare::is_cloudflare_provider(&model.provider)
        && crate::llm::env_keys::is_vendor_endpoint(&model.base_url, |host| {
            host == "api.openai.com"
        })
}

/// The request for one call.
pub(super) fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<HttpRequest, Error> {
    let key = resolve_key(model, options)?;
    let opts: OpenAiCompletionsOptions = options.api_options()?;
    let compat = OpenAiCompletionsCompat::for_model(model);
    let retention = resolve_cache_retention(options);
    let body = build_body(model, context, options, &opts, &compat, retention);

    let base_url = if cloudflare::is_cloudflare_provider(&model.provider) {
        cloudflare::resolve_base_url(model)?
    } else if model.base_url.is_empty() {
        DEFAULT_BASE_URL.to_owned()
    } else {
        model.base_url.clone()
    };
    let url = format!("{}/chat/completions", base_url.trim_end_matches('/'));
    let mut request =
        HttpRequest::post_serialized(url, &body)?.header("accept", "application/json");
    match &key {
        // A keyless model: no credentials.
        None => {}
        Some(key) if model.provider == "cloudflare-ai-gateway" => {
            // The gateway's own auth; no Authorization header unless the caller sets one.
            request = request.header("cf-aig-authorization", format!("Bearer {}", key.expose()));
        }
        Some(key) => request = request.header("authorization", format!("Bearer {}", key.expose())),
    }
    if model.provider == "github-copilot" {
        for (name, value) in copilot_headers(&context.messages) {
            request = request.header(name, value);
        }
    }
    if compat.send_session_affinity_headers
        && retention != CacheRetention::None
        && let Some(session) = options.session_id.as_deref().filter(|s| !s.is_empty())
    {
        for name in ["session_id", "x-client-request-id", "x-session-affinity"] {
            request = request.header(name, session);
        }
    }
    Ok(request)
}

/// pi's `buildParams`, keys in pi's order.
fn build_body<'a>(
    model: &Model,
    context: &'a Context,
    options: &StreamOptions,
    opts: &OpenAiCompletionsOptions,
    compat: &OpenAiCompletionsCompat,
    retention: CacheRetention,
) -> WithTools<Vec<FunctionTool<'a>>> {
    let mut messages = convert_messages(model, context, compat);
    let long = retention == CacheRetention::Long && compat.supports_long_cache_retention;
    let mut body = Map::new();
    body.insert("model".into(), model.id.clone().into());
    // `messages` is inserted here and filled below, once cache markers are placed.
    body.insert("messages".into(), Value::Null);
    body.insert("stream".into(), true.into());
    let session = options.session_id.as_deref();
    if let Some(session) = session
        && ((model.base_url.contains("api.openai.com") && retention != CacheRetention::None)
            || long)
    {
        body.insert("prompt_cache_key".into(), session.into());
    }
    if long {
        body.insert("prompt_cache_retention".into(), "24h".into());
    }
    if compat.supports_usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        body.insert("store".into(), false.into());
    }
    if let Some(max) = options.max_tokens.filter(|&n| n > 0) {
        body.insert(compat.max_tokens_field.as_str().into(), max.into());
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), js_number(t));
    }
    let mut tools = match context.tools.as_deref() {
        Some(tools) if !tools.is_empty() => {
            let converted = convert_tools(tools, compat);
            Some(converted)
        }
        // Proxies to Anthropic (LiteLLM) require `tools` once the history has tool calls.
        _ if has_tool_history(&context.messages) => Some(Vec::new()),
        _ => None,
    };
    if let Some(cache) = cache_control(compat, retention) {
        apply_anthropic_cache_control(&mut messages, tools.as_deref_mut(), &cache);
    }
    body.insert("messages".into(), Value::Array(messages));
    if let Some(list) = &tools {
        body.insert(TOOLS.into(), Value::Null);
        if !list.is_empty() && compat.zai_tool_stream {
            body.insert("tool_stream".into(), true.into());
        }
    }
    if let Some(choice) = options.effective_tool_choice() {
        body.insert("tool_choice".into(), choice.openai_completions());
    }
    if model.reasoning {
        insert_reasoning(&mut body, model, opts.reasoning_effort.as_deref(), compat);
    }
    if model.base_url.contains("openrouter.ai")
        && let Some(routing) = compat.open_router_routing.as_ref().filter(|v| truthy(v))
    {
        body.insert("provider".into(), routing.clone());
    }
    if model.base_url.contains("ai-gateway.vercel.sh")
        && let Some(gateway) = compat
            .vercel_gateway_routing
            .as_ref()
            .filter(|v| truthy(v))
            .and_then(super::compat::vercel_gateway_options)
    {
        body.insert("providerOptions".into(), json!({"gateway": gateway}));
    }
    WithTools { body, tools }
}

/// A number as JavaScript writes it: `1`, not `1.0`.
fn js_number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        Value::from(x as i64)
    } else {
        json!(x)
    }
}

/// The level's value for the provider: the model's `thinkingLevelMap` entry, else the level.
fn mapped_effort<'a>(model: &'a Model, effort: &'a str) -> &'a str {
    effort
        .parse::<ThinkingLevel>()
        .ok()
        .and_then(|level| model.thinking_level_map.as_ref()?.get(&level)?.as_deref())
        .unwrap_or(effort)
}

/// The reasoning fields of a reasoning model, per the compat's [`ThinkingFormat`].
fn insert_reasoning(
    body: &mut Map<String, Value>,
    model: &Model,
    effort: Option<&str>,
    compat: &OpenAiCompletionsCompat,
) {
    let on = effort.is_some();
    let off_entry = model
        .thinking_level_map
        .as_ref()
        .and_then(|m| m.get(&ThinkingLevel::Off));
    match compat.thinking_format {
        ThinkingFormat::Zai | ThinkingFormat::Qwen => {
            body.insert("enable_thinking".into(), on.into());
        }
        ThinkingFormat::QwenChatTemplate => {
            body.insert(
                "chat_template_kwargs".into(),
                json!({"enable_thinking": on, "preserve_thinking": true}),
            );
        }
        ThinkingFormat::DeepSeek => {
            body.insert(
                "thinking".into(),
                json!({"type": if on { "enabled" } else { "disabled" }}),
            );
            if let Some(effort) = effort {
                body.insert(
                    "reasoning_effort".into(),
                    mapped_effort(model, effort).into(),
                );
            }
        }
        ThinkingFormat::OpenRouter => match effort {
            Some(effort) => {
                body.insert(
                    "reasoning".into(),
                    json!({"effort": mapped_effort(model, effort)}),
                );
            }
            // `off: null` in the map means: send nothing.
            None => match off_entry {
                Some(None) => {}
                Some(Some(off)) => {
                    body.insert("reasoning".into(), json!({"effort": off}));
                }
                None => {
                    body.insert("reasoning".into(), json!({"effort": "none"}));
                }
            },
        },
        ThinkingFormat::OpenAi if compat.supports_reasoning_effort => match effort {
            Some(effort) => {
                body.insert(
                    "reasoning_effort".into(),
                    mapped_effort(model, effort).into(),
                );
            }
            None => {
                if let Some(Some(off)) = off_entry {
                    body.insert("reasoning_effort".into(), off.clone().into());
                }
            }
        },
        ThinkingFormat::OpenAi => {}
    }
}

fn has_tool_history(messages: &[Message]) -> bool {
    messages.iter().any(|m| match m {
        Message::ToolResult(_) => true,
        Message::Assistant(a) => a.tool_calls().next().is_some(),
        Message::User(_) => false,
    })
}

/// One entry of `tools`: `{"type": "function", "function": {…}}`, borrowing the tool.
#[derive(Debug, Serialize)]
pub(super) struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Value>,
}

#[derive(Debug, Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

fn convert_tools<'a>(tools: &'a [Tool], compat: &OpenAiCompletionsCompat) -> Vec<FunctionTool<'a>> {
    tools
        .iter()
        .map(|tool| FunctionTool {
            kind: "function",
            function: Function {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
                strict: compat.supports_strict_mode.then_some(false),
            },
            cache_control: None,
        })
        .collect()
}

/// Tool-call ids of other apis: a Responses-style `call|item` id keeps its call part,
/// sanitized and cut to 40 characters (OpenAI's limit); provider `openai` cuts any id to 40.
pub(super) fn normalize_tool_call_id(id: &str, model: &Model, _: &AssistantMessage) -> String {
    if let Some((call, _)) = id.split_once('|') {
        let mut out = String::with_capacity(call.len());
        for c in call.chars() {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                out.push(c);
            } else {
                // pi's regex replaces UTF-16 code units: one `_` per unit.
                out.extend(std::iter::repeat_n('_', c.len_utf16()));
            }
        }
        out.truncate(40);
        return out;
    }
    if model.provider == "openai" {
        return truncate_utf16(id, 40).to_owned();
    }
    id.to_owned()
}

/// The longest prefix of `s` of at most `max` UTF-16 code units (JavaScript's `slice`,
/// without splitting a character).
fn truncate_utf16(s: &str, max: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max {
            return &s[..i];
        }
    }
    s
}

fn image_url(data: &str, mime_type: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
}

/// pi's `convertMessages`.
fn convert_messages(
    model: &Model,
    context: &Context,
    compat: &OpenAiCompletionsCompat,
) -> Vec<Value> {
    let transformed = transform_messages(&context.messages, model, Some(&normalize_tool_call_id));
    let mut params: Vec<Value> = Vec::with_capacity(transformed.len() + 1);
    if let Some(prompt) = context.system_prompt.as_deref().filter(|p| !p.is_empty()) {
        let role = if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        params.push(json!({"role": role, "content": prompt}));
    }
    let bridge = || json!({"role": "assistant", "content": ASSISTANT_AFTER_TOOL_RESULT});
    // The role of the last message sent ("toolResult" for a batch of tool messages).
    let mut last_role: Option<&str> = None;
    let mut i = 0;
    while i < transformed.len() {
        let message = transformed[i].as_ref();
        i += 1;
        if compat.requires_assistant_after_tool_result
            && last_role == Some("toolResult")
            && matches!(message, Message::User(_))
        {
            params.push(bridge());
        }
        match message {
            Message::User(user) => {
                match &user.content {
                    UserContent::Text(text) => {
                        params.push(json!({"role": "user", "content": text}));
                    }
                    UserContent::Blocks(blocks) => {
                        let content: Vec<Value> = blocks
                            .iter()
                            .filter_map(|b| match b {
                                Content::Text(t) => Some(json!({"type": "text", "text": t.text})),
                                Content::Image(img) => Some(image_url(&img.data, &img.mime_type)),
                                Content::Unknown(_) => {
                                    skip_unknown_block(b.block_type(), &model.api);
                                    None
                                }
                            })
                            .collect();
                        if content.is_empty() {
                            continue;
                        }
                        params.push(json!({"role": "user", "content": content}));
                    }
                }
                last_role = Some("user");
            }
            Message::Assistant(assistant) => {
                let Some(converted) = convert_assistant(assistant, model, compat) else {
                    continue;
                };
                params.push(converted);
                last_role = Some("assistant");
            }
            Message::ToolResult(_) => {
                // Consecutive results go out together; their images follow in one user
                // message (tool messages cannot carry images).
                let mut images = Vec::new();
                let mut j = i - 1;
                while let Some(Message::ToolResult(result)) = transformed.get(j).map(AsRef::as_ref)
                {
                    skip_unknown_blocks(&result.content, &model.api);
                    let texts: Vec<&str> =
                        result.content.iter().filter_map(Content::as_text).collect();
                    let text = texts.join("\n");
                    let mut tool = Map::new();
                    tool.insert("role".into(), "tool".into());
                    tool.insert(
                        "content".into(),
                        if text.is_empty() {
                            SEE_ATTACHED_IMAGE.into()
                        } else {
                            text.into()
                        },
                    );
                    tool.insert("tool_call_id".into(), result.tool_call_id.clone().into());
                    if compat.requires_tool_result_name && !result.tool_name.is_empty() {
                        tool.insert("name".into(), result.tool_name.clone().into());
                    }
                    params.push(Value::Object(tool));
                    if model.supports_images() {
                        images.extend(result.content.iter().filter_map(|c| match c {
                            Content::Image(img) => Some(image_url(&img.data, &img.mime_type)),
                            Content::Text(_) => None,
                            Content::Unknown(_) => {
                                skip_unknown_block(c.block_type(), &model.api);
                                None
                            }
                        }));
                    }
                    j += 1;
                }
                i = j;
                if images.is_empty() {
                    last_role = Some("toolResult");
                } else {
                    if compat.requires_assistant_after_tool_result {
                        params.push(bridge());
                    }
                    let mut content = vec![json!({"type": "text", "text": TOOL_IMAGES_INTRO})];
                    content.extend(images);
                    params.push(json!({"role": "user", "content": content}));
                    last_role = Some("user");
                }
            }
        }
    }
    params
}

/// One assistant message, or `None` when it has neither content nor tool calls.
fn convert_assistant(
    assistant: &AssistantMessage,
    model: &Model,
    compat: &OpenAiCompletionsCompat,
) -> Option<Value> {
    for block in &assistant.content {
        if let AssistantContent::Unknown(_) = block {
            skip_unknown_block(block.block_type(), &model.api);
        }
    }
    let mut out = Map::new();
    out.insert("role".into(), "assistant".into());
    // Some servers reject `null` content where the bridge message is needed.
    out.insert(
        "content".into(),
        if compat.requires_assistant_after_tool_result {
            "".into()
        } else {
            Value::Null
        },
    );
    let texts: Vec<&str> = assistant
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantContent::Text(t) if !t.text.trim().is_empty() => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let text = texts.concat();
    let thinking: Vec<(&str, Option<&str>)> = assistant
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantContent::Thinking(t) if !t.thinking.trim().is_empty() => {
                Some((t.thinking.as_str(), t.thinking_signature.as_deref()))
            }
            _ => None,
        })
        .collect();
    if let Some(&(_, signature)) = thinking.first() {
        if compat.requires_thinking_as_text {
            let joined: Vec<&str> = thinking.iter().map(|(t, _)| *t).collect();
            let mut parts = vec![json!({"type": "text", "text": joined.join("\n\n")})];
            parts.extend(texts.iter().map(|t| json!({"type": "text", "text": t})));
            out.insert("content".into(), Value::Array(parts));
        } else {
            // Plain string content: arrays made some servers echo the structure back.
            if !text.is_empty() {
                out.insert("content".into(), text.into());
            }
            // The field the reasoning came in (`reasoning_content`, …) carries it back.
            if let Some(field) = signature.filter(|s| !s.is_empty()) {
                let joined: Vec<&str> = thinking.iter().map(|(t, _)| *t).collect();
                out.insert(field.to_owned(), joined.join("\n").into());
            }
        }
    } else if !text.is_empty() {
        out.insert("content".into(), text.into());
    }
    let calls: Vec<_> = assistant.tool_calls().collect();
    if !calls.is_empty() {
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": js::to_string(&Value::Object(c.arguments.clone())),
                    },
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(tool_calls));
        // OpenRouter's encrypted reasoning, kept on the calls it came with.
        let details: Vec<Value> = calls
            .iter()
            .filter_map(|c| c.thought_signature.as_deref())
            .filter_map(|s| serde_json::from_str::<Value>(s).ok())
            .filter(truthy)
            .collect();
        if !details.is_empty() {
            out.insert("reasoning_details".into(), Value::Array(details));
        }
    }
    if compat.requires_reasoning_content_on_assistant_messages
        && model.reasoning
        && !out.contains_key("reasoning_content")
    {
        out.insert("reasoning_content".into(), "".into());
    }
    let has_content = match &out["content"] {
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    };
    (has_content || out.contains_key("tool_calls")).then_some(Value::Object(out))
}

/// The Anthropic-style marker for `cacheControlFormat: "anthropic"`, if caching is on.
fn cache_control(compat: &OpenAiCompletionsCompat, retention: CacheRetention) -> Option<Value> {
    if compat.cache_control_format != Some(CacheControlFormat::Anthropic)
        || retention == CacheRetention::None
    {
        return None;
    }
    if retention == CacheRetention::Long && compat.supports_long_cache_retention {
        Some(json!({"type": "ephemeral", "ttl": "1h"}))
    } else {
        Some(json!({"type": "ephemeral"}))
    }
}

/// Markers on the system prompt, the last tool, and the last user or assistant message
/// with text.
fn apply_anthropic_cache_control(
    messages: &mut [Value],
    tools: Option<&mut [FunctionTool<'_>]>,
    cache: &Value,
) {
    if let Some(system) = messages
        .iter_mut()
        .find(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
    {
        mark_text(system, cache);
    }
    if let Some(last) = tools.and_then(|t| t.last_mut()) {
        last.cache_control = Some(cache.clone());
    }
    for message in messages.iter_mut().rev() {
        if matches!(message["role"].as_str(), Some("user" | "assistant"))
            && mark_text(message, cache)
        {
            break;
        }
    }
}

/// Marks the message's text: string content becomes one text part; in parts, the last text
/// part. False when there is no text to mark.
fn mark_text(message: &mut Value, cache: &Value) -> bool {
    match &mut message["content"] {
        Value::String(s) if s.is_empty() => false,
        content @ Value::String(_) => {
            let text = content.take();
            *content = json!([{"type": "text", "text": text, "cache_control": cache}]);
            true
        }
        Value::Array(parts) => match parts.iter_mut().rev().find(|p| p["type"] == "text") {
            Some(Value::Object(part)) => {
                part.insert("cache_control".into(), cache.clone());
                true
            }
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::{
        StopReason, ThinkingContent, ToolCall, ToolResultMessage, UserMessage,
    };
    use crate::llm::model::{InputModality, api};
    use std::collections::BTreeMap;

    fn model(provider: &str, url: &str) -> Model {
        Model::new("gpt-test", api::OPENAI_COMPLETIONS, provider, url)
            .with_input(vec![InputModality::Text, InputModality::Image])
    }

    fn openai() -> Model {
        model("openai", "https://api.openai.com/v1/")
    }

    fn key() -> StreamOptions {
        StreamOptions::new().with_api_key("sk-test")
    }

    fn encode(
        model: &Model,
        ctx: &Context,
        options: &StreamOptions,
    ) -> (Value, Vec<(String, String)>, String) {
        let request = build_request(model, ctx, options).unwrap();
        let (url, headers) = request.parts();
        (request.body(), headers.to_vec(), url.to_owned())
    }

    fn body(model: &Model, ctx: &Context, options: &StreamOptions) -> Value {
        encode(model, ctx, options).0
    }

    #[test]
    fn blocks_of_unknown_types_are_not_sent() {
        let model = openai();
        let (with, without) =
            crate::providers::transform::contexts_with_and_without_unknown_blocks(&model);
        let body = |c: &Context| body(&model, c, &key());
        assert!(!body(&with).to_string().contains("futureBlock"));
        assert_eq!(body(&with), body(&without));
    }

    use crate::providers::http::header_in as header;

    fn hi() -> Context {
        Context::new()
            .with_system_prompt("Be brief.")
            .with_message(UserMessage::text("hi"))
    }

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    fn assistant(content: Vec<AssistantContent>) -> AssistantMessage {
        AssistantMessage::new(api::OPENAI_COMPLETIONS, "openai", "gpt-test")
            .with_content(content)
            .with_stop_reason(StopReason::ToolUse)
    }

    #[test]
    fn openai_defaults_url_auth_and_body() {
        let options = key()
            .with_session_id("sess-1")
            .with_max_tokens(1000)
            .with_temperature(1.0);
        let (body, headers, url) = encode(&openai(), &hi(), &options);
        assert_eq!(url, "https://api.openai.com/v1/chat/completions");
        assert_eq!(header(&headers, "authorization"), Some("Bearer sk-test"));
        assert_eq!(header(&headers, "accept"), Some("application/json"));
        assert_eq!(header(&headers, "session_id"), None);
        assert_eq!(
            keys(&body),
            [
                "model",
                "messages",
                "stream",
                "prompt_cache_key",
                "stream_options",
                "store",
                "max_completion_tokens",
                "temperature"
            ]
        );
        assert_eq!(body["prompt_cache_key"], "sess-1");
        assert_eq!(body["temperature"].to_string(), "1");
        assert_eq!(
            body["messages"],
            json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
        );
        // A reasoning model gets the developer role, unless the server lacks it.
        let reasoning = openai().with_reasoning(true);
        assert_eq!(body_of(&reasoning)["messages"][0]["role"], "developer");
        let xai = model("xai", "https://api.x.ai/v1").with_reasoning(true);
        assert_eq!(body_of(&xai)["messages"][0]["role"], "system");
        let xai_body = body_of(&xai);
        assert!(xai_body.get("store").is_none() && xai_body.get("prompt_cache_key").is_none());
        let empty = Model::new("gpt-test", api::OPENAI_COMPLETIONS, "custom", "");
        assert_eq!(
            encode(&empty, &hi(), &key()).2,
            DEFAULT_BASE_URL.to_owned() + "/chat/completions"
        );
    }

    fn body_of(model: &Model) -> Value {
        body(model, &hi(), &key().with_session_id("s"))
    }

    #[test]
    fn prompt_cache_key_and_retention() {
        let local = model("vllm", "http://localhost:8000/v1");
        let opts = key().with_session_id("s");
        assert!(body(&local, &hi(), &opts).get("prompt_cache_key").is_none());
        let long = opts.clone().with_cache_retention(CacheRetention::Long);
        let b = body(&local, &hi(), &long);
        assert_eq!(
            (&b["prompt_cache_key"], &b["prompt_cache_retention"]),
            (&json!("s"), &json!("24h"))
        );
        let none = opts.clone().with_cache_retention(CacheRetention::None);
        let b = body(&openai(), &hi(), &none);
        assert!(b.get("prompt_cache_key").is_none() && b.get("prompt_cache_retention").is_none());
        // Cloudflare has no long retention: no key, no retention.
        let workers = model(
            "custom",
            "https://api.cloudflare.com/client/v4/accounts/a/ai/v1",
        );
        let b = body(&workers, &hi(), &long);
        assert!(b.get("prompt_cache_key").is_none() && b.get("prompt_cache_retention").is_none());
        // Without a session id there is no key.
        assert!(
            body(&openai(), &hi(), &key())
                .get("prompt_cache_key")
                .is_none()
        );
    }

    #[test]
    fn token_limit_field_and_usage_option() {
        let moonshot = model("moonshotai", "https://api.moonshot.ai/v1");
        let b = body(&moonshot, &hi(), &key().with_max_tokens(5));
        assert_eq!(b["max_tokens"], 5);
        assert!(b.get("max_completion_tokens").is_none());
        let quiet = openai().with_compat(json!({"supportsUsageInStreaming": false}));
        let b = body(&quiet, &hi(), &key().with_max_tokens(0));
        assert!(b.get("stream_options").is_none() && b.get("max_completion_tokens").is_none());
    }

    fn with_effort(effort: Option<&str>) -> StreamOptions {
        match effort {
            Some(e) => key().with_extra("reasoningEffort", e.into()),
            None => key(),
        }
    }

    fn reasoning_fields(model: &Model, effort: Option<&str>) -> Value {
        let b = body(model, &hi(), &with_effort(effort));
        let mut out = Map::new();
        for k in [
            "reasoning_effort",
            "reasoning",
            "thinking",
            "enable_thinking",
            "chat_template_kwargs",
        ] {
            if let Some(v) = b.get(k) {
                out.insert(k.into(), v.clone());
            }
        }
        Value::Object(out)
    }

    fn format(name: &str) -> Model {
        openai()
            .with_reasoning(true)
            .with_compat(json!({"thinkingFormat": name}))
    }

    #[test]
    fn reasoning_per_thinking_format() {
        let mut map = BTreeMap::new();
        map.insert(ThinkingLevel::High, Some("max".to_owned()));
        map.insert(ThinkingLevel::Off, Some("minimal".to_owned()));
        let mut openai_mapped = openai().with_reasoning(true);
        openai_mapped.thinking_level_map = Some(map.clone());
        assert_eq!(
            reasoning_fields(&openai_mapped, Some("high")),
            json!({"reasoning_effort": "max"})
        );
        assert_eq!(
            reasoning_fields(&openai_mapped, Some("low")),
            json!({"reasoning_effort": "low"})
        );
        assert_eq!(
            reasoning_fields(&openai_mapped, None),
            json!({"reasoning_effort": "minimal"})
        );
        assert_eq!(
            reasoning_fields(&openai().with_reasoning(true), None),
            json!({})
        );
        // Not a reasoning model, or no reasoning_effort support: nothing.
        assert_eq!(reasoning_fields(&openai(), Some("high")), json!({}));
        let grok = model("xai", "https://api.x.ai/v1").with_reasoning(true);
        assert_eq!(reasoning_fields(&grok, Some("high")), json!({}));

        for name in ["zai", "qwen"] {
            assert_eq!(
                reasoning_fields(&format(name), Some("low")),
                json!({"enable_thinking": true})
            );
            assert_eq!(
                reasoning_fields(&format(name), None),
                json!({"enable_thinking": false})
            );
        }
        assert_eq!(
            reasoning_fields(&format("qwen-chat-template"), Some("low")),
            json!({"chat_template_kwargs": {"enable_thinking": true, "preserve_thinking": true}})
        );
        assert_eq!(
            reasoning_fields(&format("deepseek"), Some("high")),
            json!({"thinking": {"type": "enabled"}, "reasoning_effort": "high"})
        );
        assert_eq!(
            reasoning_fields(&format("deepseek"), None),
            json!({"thinking": {"type": "disabled"}})
        );
        assert_eq!(
            reasoning_fields(&format("openrouter"), Some("medium")),
            json!({"reasoning": {"effort": "medium"}})
        );
        assert_eq!(
            reasoning_fields(&format("openrouter"), None),
            json!({"reasoning": {"effort": "none"}})
        );
        let mut router = format("openrouter");
        router.thinking_level_map = Some(map.clone());
        assert_eq!(
            reasoning_fields(&router, None),
            json!({"reasoning": {"effort": "minimal"}})
        );
        map.insert(ThinkingLevel::Off, None);
        router.thinking_level_map = Some(map);
        assert_eq!(reasoning_fields(&router, None), json!({}));

        let bad = key().with_extra("reasoningEffort", json!(3));
        let err = build_request(&openai(), &hi(), &bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
    }

    #[test]
    fn tools_strict_choice_and_history() {
        let tools = vec![Tool::new("read", "Read a file", json!({"type": "object"}))];
        let ctx = hi().with_tools(tools.clone());
        let b = body(
            &openai(),
            &ctx,
            &key().with_extra("toolChoice", json!("required")),
        );
        assert_eq!(
            b["tools"],
            json!([{"type": "function", "function": {"name": "read", "description": "Read a file",
                    "parameters": {"type": "object"}, "strict": false}}])
        );
        assert_eq!(b["tool_choice"], "required");
        assert!(b.get("tool_stream").is_none());
        let zai = model("zai", "https://api.z.ai/api/paas/v4")
            .with_compat(json!({"zaiToolStream": true}));
        let b = body(&zai, &ctx, &key());
        assert_eq!(b["tool_stream"], true);
        let kimi = model("moonshotai", "https://api.moonshot.ai/v1");
        assert!(
            body(&kimi, &ctx, &key())["tools"][0]["function"]
                .get("strict")
                .is_none()
        );

        // Tool calls in the history but no tools: an empty list (and no tool_stream).
        let history = hi()
            .with_message(assistant(vec![AssistantContent::tool_call(
                "c1",
                "read",
                json!({"path": "a"}),
            )]))
            .with_message(ToolResultMessage::new(
                "c1",
                "read",
                vec![Content::text("A")],
                false,
            ));
        let b = body(&zai, &history, &key());
        assert_eq!(b["tools"], json!([]));
        assert!(b.get("tool_stream").is_none());
        assert!(body(&openai(), &hi(), &key()).get("tools").is_none());
    }

    #[test]
    fn assistant_replay_rules() {
        let mut call = ToolCall::new("c1", "bash", json!({"n": 5.0, "s": "x"}));
        call.thought_signature =
            Some(r#"{"type":"reasoning.encrypted","id":"c1","data":"E"}"#.into());
        let mut bad_sig = ToolCall::new("c2", "ls", json!({}));
        bad_sig.thought_signature = Some("not json".into());
        let replay = assistant(vec![
            AssistantContent::Thinking(
                ThinkingContent::new("step 1").with_signature("reasoning_content"),
            ),
            AssistantContent::Thinking(ThinkingContent::new("step 2")),
            AssistantContent::text("Hello"),
            AssistantContent::text("   "),
            AssistantContent::text(" world"),
            AssistantContent::ToolCall(call),
            AssistantContent::ToolCall(bad_sig),
        ]);
        let ctx = Context::new()
            .with_message(UserMessage::text("go"))
            .with_message(replay.clone())
            .with_message(ToolResultMessage::new(
                "c1",
                "bash",
                vec![Content::text("ok")],
                false,
            ))
            .with_message(ToolResultMessage::new("c2", "ls", vec![], false));
        let b = body(&openai(), &ctx, &key());
        assert_eq!(
            b["messages"][1],
            json!({
                "role": "assistant",
                "content": "Hello world",
                "reasoning_content": "step 1\nstep 2",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"n\":5,\"s\":\"x\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
                "reasoning_details": [{"type": "reasoning.encrypted", "id": "c1", "data": "E"}]
            })
        );
        assert_eq!(
            keys(&b["messages"][1]),
            [
                "role",
                "content",
                "reasoning_content",
                "tool_calls",
                "reasoning_details"
            ]
        );
        // An empty tool result reads "(see attached image)", as pi writes it.
        assert_eq!(b["messages"][3]["content"], SEE_ATTACHED_IMAGE);

        // Thinking as text: a text part first, then the texts as parts.
        let as_text = openai().with_compat(json!({"requiresThinkingAsText": true}));
        let b = body(&as_text, &ctx, &key());
        assert_eq!(
            b["messages"][1]["content"],
            json!([{"type": "text", "text": "step 1\n\nstep 2"}, {"type": "text", "text": "Hello"}, {"type": "text", "text": " world"}])
        );
        assert!(b["messages"][1].get("reasoning_content").is_none());

        // DeepSeek wants reasoning_content on every assistant message of a reasoning model.
        let deepseek = model("deepseek", "https://api.deepseek.com/v1").with_reasoning(true);
        let plain = Context::new()
            .with_message(UserMessage::text("go"))
            .with_message(
                assistant(vec![AssistantContent::text("done")]).with_stop_reason(StopReason::Stop),
            );
        let b = body(&deepseek, &plain, &key());
        assert_eq!(
            b["messages"][1],
            json!({"role": "assistant", "content": "done", "reasoning_content": ""})
        );

        // Nothing to say and no calls: dropped (an aborted turn with only whitespace).
        let empty = Context::new()
            .with_message(UserMessage::text("go"))
            .with_message(
                assistant(vec![
                    AssistantContent::text(" "),
                    AssistantContent::Thinking(ThinkingContent::new("unsigned")),
                ])
                .with_stop_reason(StopReason::Stop),
            )
            .with_message(UserMessage::text("again"));
        let b = body(&openai(), &empty, &key());
        assert_eq!(
            b["messages"],
            json!([{"role": "user", "content": "go"}, {"role": "user", "content": "again"}])
        );
    }

    #[test]
    fn users_images_and_tool_results() {
        let ctx = Context::new()
            .with_message(UserMessage::blocks(vec![
                Content::text("look"),
                Content::image("AAAA", "image/png"),
            ]))
            .with_message(UserMessage::blocks(vec![]))
            .with_message(assistant(vec![
                AssistantContent::tool_call("c1", "shot", json!({})),
                AssistantContent::tool_call("c2", "read", json!({})),
            ]))
            .with_message(ToolResultMessage::new(
                "c1",
                "shot",
                vec![Content::image("BBBB", "image/jpeg")],
                false,
            ))
            .with_message(ToolResultMessage::new(
                "c2",
                "read",
                vec![
                    Content::text("a"),
                    Content::text("b"),
                    Content::image("CCCC", "image/gif"),
                ],
                true,
            ))
            .with_message(UserMessage::text("next"));
        let named = openai().with_compat(
            json!({"requiresToolResultName": true, "requiresAssistantAfterToolResult": true}),
        );
        let b = body(&named, &ctx, &key());
        let img = |mime: &str, data: &str| json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}});
        assert_eq!(
            b["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "look"}, img("image/png", "AAAA")]},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ]},
                {"role": "tool", "content": SEE_ATTACHED_IMAGE, "tool_call_id": "c1", "name": "shot"},
                {"role": "tool", "content": "a\nb", "tool_call_id": "c2", "name": "read"},
                {"role": "assistant", "content": ASSISTANT_AFTER_TOOL_RESULT},
                {"role": "user", "content": [{"type": "text", "text": TOOL_IMAGES_INTRO}, img("image/jpeg", "BBBB"), img("image/gif", "CCCC")]},
                {"role": "user", "content": "next"}
            ])
        );

        // Without images the bridge goes between the results and the user message; a text
        // model gets placeholders instead of images.
        let text_only = named.clone().with_input(vec![InputModality::Text]);
        let b = body(&text_only, &ctx, &key());
        let roles: Vec<&str> = b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            ["user", "assistant", "tool", "tool", "assistant", "user"]
        );
        assert_eq!(
            b["messages"][2]["content"],
            crate::providers::transform::TOOL_IMAGE_PLACEHOLDER
        );
        assert_eq!(
            b["messages"][0]["content"][1]["text"],
            crate::providers::transform::USER_IMAGE_PLACEHOLDER
        );
    }

    #[test]
    fn tool_call_ids_of_other_apis() {
        let any = AssistantMessage::new("", "", "");
        let other = model("groq", "https://api.groq.com/openai/v1");
        assert_eq!(
            normalize_tool_call_id("call_1|fc_+/=xyz", &other, &any),
            "call_1"
        );
        assert_eq!(normalize_tool_call_id("ca.ll|x", &other, &any), "ca_ll");
        assert_eq!(
            normalize_tool_call_id("a😀b|x", &other, &any),
            "a__b",
            "one _ per UTF-16 unit"
        );
        assert_eq!(
            normalize_tool_call_id(&format!("{}|x", "c".repeat(50)), &other, &any).len(),
            40
        );
        assert_eq!(
            normalize_tool_call_id(&"x".repeat(50), &other, &any).len(),
            50
        );
        assert_eq!(
            normalize_tool_call_id(&"x".repeat(50), &openai(), &any).len(),
            40
        );
        assert_eq!(
            normalize_tool_call_id(&"é".repeat(50), &openai(), &any)
                .chars()
                .count(),
            40
        );

        // Through transform_messages: a Responses call id and its result.
        let foreign = AssistantMessage::new("openai-responses", "openai", "gpt-5")
            .with_content(vec![AssistantContent::tool_call(
                "call_9|fc_abc",
                "read",
                json!({}),
            )])
            .with_stop_reason(StopReason::ToolUse);
        let ctx = Context::new()
            .with_message(UserMessage::text("go"))
            .with_message(foreign)
            .with_message(ToolResultMessage::new(
                "call_9|fc_abc",
                "read",
                vec![Content::text("ok")],
                false,
            ));
        let b = body(&openai(), &ctx, &key());
        assert_eq!(b["messages"][1]["tool_calls"][0]["id"], "call_9");
        assert_eq!(b["messages"][2]["tool_call_id"], "call_9");
    }

    #[test]
    fn anthropic_cache_markers_for_openrouter_claude() {
        let claude = Model::new(
            "anthropic/claude-sonnet-4.5",
            api::OPENAI_COMPLETIONS,
            "openrouter",
            "https://openrouter.ai/api/v1",
        );
        let ctx = hi()
            .with_message(
                assistant(vec![AssistantContent::text("reply")]).with_stop_reason(StopReason::Stop),
            )
            .with_message(ToolResultMessage::new(
                "x",
                "y",
                vec![Content::text("z")],
                false,
            ))
            .with_tools(vec![
                Tool::new("a", "A", json!({"type": "object"})),
                Tool::new("b", "B", json!({"type": "object"})),
            ]);
        let b = body(
            &claude,
            &ctx,
            &key().with_cache_retention(CacheRetention::Long),
        );
        let mark = json!({"type": "ephemeral", "ttl": "1h"});
        assert_eq!(
            b["messages"][0]["content"],
            json!([{"type": "text", "text": "Be brief.", "cache_control": mark}])
        );
        assert_eq!(b["messages"][1]["content"], "hi");
        // The last user or assistant message with text (tool messages are skipped).
        assert_eq!(
            b["messages"][2]["content"],
            json!([{"type": "text", "text": "reply", "cache_control": mark}])
        );
        assert!(b["tools"][0].get("cache_control").is_none());
        assert_eq!(b["tools"][1]["cache_control"], mark);
        assert_eq!(b["reasoning"], Value::Null, "not a reasoning model");
        let b = body(&claude, &ctx, &key());
        assert_eq!(b["tools"][1]["cache_control"], json!({"type": "ephemeral"}));
        let b = body(
            &claude,
            &ctx,
            &key().with_cache_retention(CacheRetention::None),
        );
        assert!(!b.to_string().contains("cache_control"));
        // Parts: the last text part is marked.
        let parts = Context::new().with_message(UserMessage::blocks(vec![
            Content::text("a"),
            Content::text("b"),
            Content::image("I", "image/png"),
        ]));
        let b = body(
            &claude
                .clone()
                .with_input(vec![InputModality::Text, InputModality::Image]),
            &parts,
            &key(),
        );
        assert_eq!(
            b["messages"][0]["content"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(
            b["messages"][0]["content"][0]
                .get("cache_control")
                .is_none()
        );
    }

    #[test]
    fn gateway_routing() {
        let router = model("openrouter", "https://openrouter.ai/api/v1").with_compat(
            json!({"openRouterRouting": {"order": ["anthropic"], "allow_fallbacks": false}}),
        );
        assert_eq!(
            body(&router, &hi(), &key())["provider"],
            json!({"order": ["anthropic"], "allow_fallbacks": false})
        );
        let elsewhere = model("openrouter", "https://proxy.example/v1")
            .with_compat(json!({"openRouterRouting": {"order": ["x"]}}));
        assert!(body(&elsewhere, &hi(), &key()).get("provider").is_none());
        let vercel = model("vercel-ai-gateway", "https://ai-gateway.vercel.sh/v1")
            .with_compat(json!({"vercelGatewayRouting": {"only": ["bedrock"], "order": null}}));
        assert_eq!(
            body(&vercel, &hi(), &key())["providerOptions"],
            json!({"gateway": {"only": ["bedrock"]}})
        );
        let unset = model("vercel-ai-gateway", "https://ai-gateway.vercel.sh/v1")
            .with_compat(json!({"vercelGatewayRouting": {}}));
        assert!(body(&unset, &hi(), &key()).get("providerOptions").is_none());
    }

    #[test]
    fn copilot_cloudflare_and_affinity_headers() {
        let ctx = hi().with_message(assistant(vec![AssistantContent::text("x")]));
        let copilot = model("github-copilot", "https://api.githubcopilot.com");
        let (_, headers, url) = encode(&copilot, &ctx, &key());
        assert_eq!(url, "https://api.githubcopilot.com/chat/completions");
        assert_eq!(header(&headers, "X-Initiator"), Some("agent"));
        assert_eq!(
            header(&headers, "Openai-Intent"),
            Some("conversation-edits")
        );
        assert_eq!(header(&headers, "authorization"), Some("Bearer sk-test"));

        let gateway = model(
            "cloudflare-ai-gateway",
            "https://gateway.ai.cloudflare.com/v1/{PI_TEST_UNSET_CF_ACCOUNT_7}/g/compat",
        );
        let err = build_request(&gateway, &hi(), &key()).unwrap_err();
        assert_eq!(
            err.message(),
            "PI_TEST_UNSET_CF_ACCOUNT_7 is required for provider cloudflare-ai-gateway but is not set."
        );
        let gateway = model(
            "cloudflare-ai-gateway",
            "https://gateway.ai.cloudflare.com/v1/acct/g/compat",
        );
        let (b, headers, _) = encode(&gateway, &hi(), &key());
        assert_eq!(
            header(&headers, "cf-aig-authorization"),
            Some("Bearer sk-test")
        );
        assert_eq!(header(&headers, "authorization"), None);
        assert_eq!(b["max_tokens"], Value::Null);

        let sticky = model("custom", "https://llm.example/v1")
            .with_compat(json!({"sendSessionAffinityHeaders": true}));
        let (_, headers, _) = encode(&sticky, &hi(), &key().with_session_id("sess-9"));
        for name in ["session_id", "x-client-request-id", "x-session-affinity"] {
            assert_eq!(header(&headers, name), Some("sess-9"), "{name}");
        }
        let (_, headers, _) = encode(
            &sticky,
            &hi(),
            &key()
                .with_session_id("sess-9")
                .with_cache_retention(CacheRetention::None),
        );
        assert_eq!(header(&headers, "session_id"), None);
    }

    #[test]
    fn missing_key() {
        let model = Model::new(
            "m",
            api::OPENAI_COMPLETIONS,
            "pi-test-no-such-provider",
            "http://127.0.0.1:9/v1",
        );
        match std::env::var("OPENAI_API_KEY") {
            Ok(k) if !k.is_empty() => {
                let (_, headers, _) = encode(&model, &hi(), &StreamOptions::new());
                assert_eq!(
                    header(&headers, "authorization"),
                    Some(format!("Bearer {k}").as_str())
                );
            }
            _ => {
                let err = build_request(&model, &hi(), &StreamOptions::new()).unwrap_err();
                assert!(err.is_auth());
                assert!(
                    err.message().starts_with("OpenAI API key is required"),
                    "{err:?}"
                );
            }
        }
    }
}
