//! Request encoding: the body, URL and headers pi-ai 0.73.1 sends to `/chat/completions`.

use serde_json::{Map, Value, json};

use super::compat::{CacheControlFormat, OpenAiCompletionsCompat, ThinkingFormat, truthy};
use crate::error::{Error, ErrorKind};
use crate::json::js;
use crate::message::{
    AssistantContent, AssistantMessage, Content, Context, Message, Tool, UserContent,
};
use crate::model::Model;
use crate::options::{ApiKey, CacheRetention, StreamOptions};
use crate::providers::http::HttpRequest;
use crate::providers::http::cloudflare;
use crate::providers::http::copilot::copilot_headers;
use crate::providers::transform::transform_messages;
use crate::thinking::ThinkingLevel;

/// The OpenAI SDK's base URL, for a model without one.
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// pi's bridge between tool results and a following user message.
const ASSISTANT_AFTER_TOOL_RESULT: &str = "I have processed the tool results.";
/// The user message that carries tool-result images to a vision model.
const TOOL_IMAGES_INTRO: &str = "Attached image(s) from tool result:";
/// A tool result's text when it has none (images only, or empty).
const SEE_ATTACHED_IMAGE: &str = "(see attached image)";

/// The provider options of `options.extra` this api reads (pi's names).
#[derive(Debug, Default)]
struct ProviderOptions<'a> {
    /// `reasoningEffort`: the thinking level, as [`to_provider_options`] fills it.
    ///
    /// [`to_provider_options`]: crate::to_provider_options
    reasoning_effort: Option<&'a str>,
    /// `toolChoice`: sent as `tool_choice` as given.
    tool_choice: Option<&'a Value>,
}

impl<'a> ProviderOptions<'a> {
    fn from_extra(extra: &'a Map<String, Value>) -> Result<Self, Error> {
        let reasoning_effort = match extra.get("reasoningEffort") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("Invalid OpenAI option reasoningEffort: {other} (expected a string)"),
                ));
            }
        };
        let tool_choice = extra.get("toolChoice").filter(|v| truthy(v));
        Ok(ProviderOptions {
            reasoning_effort,
            tool_choice,
        })
    }
}

fn resolve_cache_retention(options: &StreamOptions) -> CacheRetention {
    options.cache_retention.unwrap_or_else(|| {
        if std::env::var("PI_CACHE_RETENTION").as_deref() == Ok("long") {
            CacheRetention::Long
        } else {
            CacheRetention::Short
        }
    })
}

/// The key: the options', the provider's environment variable, else `OPENAI_API_KEY` (the
/// OpenAI SDK's own fallback).
fn resolve_key(model: &Model, options: &StreamOptions) -> Result<ApiKey, Error> {
    crate::resolve_api_key(model, options).or_else(|_| {
        std::env::var("OPENAI_API_KEY")
            .ok()
            .filter(|k| !k.is_empty())
            .map(ApiKey::from)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Auth,
                    "OpenAI API key is required. Set OPENAI_API_KEY environment variable or pass it as an argument.",
                )
            })
    })
}

/// The request for one call.
pub(super) fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<HttpRequest, Error> {
    let key = resolve_key(model, options)?;
    let opts = ProviderOptions::from_extra(&options.extra)?;
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
    let mut request = HttpRequest::post_json(url, body).header("accept", "application/json");
    if model.provider == "cloudflare-ai-gateway" {
        // The gateway's own auth; no Authorization header unless the caller sets one.
        request = request.header("cf-aig-authorization", format!("Bearer {}", key.expose()));
    } else {
        request = request.header("authorization", format!("Bearer {}", key.expose()));
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
fn build_body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    opts: &ProviderOptions<'_>,
    compat: &OpenAiCompletionsCompat,
    retention: CacheRetention,
) -> Value {
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
        body.insert("temperature".into(), json!(t));
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
    if let Some(tools) = tools.take() {
        let has_tools = !tools.is_empty();
        body.insert("tools".into(), Value::Array(tools));
        if has_tools && compat.zai_tool_stream {
            body.insert("tool_stream".into(), true.into());
        }
    }
    if let Some(choice) = opts.tool_choice {
        body.insert("tool_choice".into(), choice.clone());
    }
    if model.reasoning {
        insert_reasoning(&mut body, model, opts.reasoning_effort, compat);
    }
    if model.base_url.contains("openrouter.ai")
        && let Some(routing) = model
            .compat_value("openRouterRouting")
            .filter(|v| truthy(v))
    {
        body.insert("provider".into(), routing.clone());
    }
    if model.base_url.contains("ai-gateway.vercel.sh")
        && let Some(gateway) = model
            .compat_value("vercelGatewayRouting")
            .filter(|v| truthy(v))
            .and_then(super::compat::vercel_gateway_options)
    {
        body.insert("providerOptions".into(), json!({"gateway": gateway}));
    }
    Value::Object(body)
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

fn convert_tools(tools: &[Tool], compat: &OpenAiCompletionsCompat) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let mut function = Map::new();
            function.insert("name".into(), tool.name.clone().into());
            function.insert("description".into(), tool.description.clone().into());
            function.insert("parameters".into(), tool.parameters.clone());
            if compat.supports_strict_mode {
                function.insert("strict".into(), false.into());
            }
            json!({"type": "function", "function": function})
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
                        if blocks.is_empty() {
                            continue;
                        }
                        let content: Vec<Value> = blocks
                            .iter()
                            .map(|b| match b {
                                Content::Text(t) => json!({"type": "text", "text": t.text}),
                                Content::Image(img) => image_url(&img.data, &img.mime_type),
                            })
                            .collect();
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
    tools: Option<&mut [Value]>,
    cache: &Value,
) {
    if let Some(system) = messages
        .iter_mut()
        .find(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
    {
        mark_text(system, cache);
    }
    if let Some(last) = tools.and_then(|t| t.last_mut())
        && let Value::Object(tool) = last
    {
        tool.insert("cache_control".into(), cache.clone());
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
