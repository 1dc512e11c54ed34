//! The Converse request body, as pi-ai builds it and the AWS SDK serializes it: the keys in
//! the SDK's order, absent fields left out.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use crate::llm::error::{Error, ErrorKind};
use crate::llm::message::{AssistantContent, Content, Context, Message, Tool, UserContent};
use crate::llm::model::Model;
use crate::llm::options::{CacheRetention, StreamOptions, ToolChoice};
use crate::llm::thinking::{ThinkingBudgets, ThinkingLevel};
use crate::providers::transform::{skip_unknown_block, transform_messages};

use crate::llm::options::bedrock_claude as is_claude;
use crate::llm::options::{
    bedrock_adaptive as adaptive_thinking, bedrock_candidates as candidates,
};

/// Claude 4.x, 3.7 Sonnet and 3.5 Haiku take cache points; `AWS_BEDROCK_FORCE_CACHE=1`
/// turns them on for a profile whose ARN names no model.
fn supports_prompt_caching(model: &Model) -> bool {
    let candidates = candidates(model);
    if !candidates.iter().any(|s| s.contains("claude")) {
        return std::env::var("AWS_BEDROCK_FORCE_CACHE").as_deref() == Ok("1");
    }
    candidates.iter().any(|s| {
        s.contains("-4-") || s.contains("claude-3-7-sonnet") || s.contains("claude-3-5-haiku")
    })
}

fn cache_retention(options: &StreamOptions) -> CacheRetention {
    options.cache_retention.unwrap_or_else(|| {
        if std::env::var("PI_CACHE_RETENTION").as_deref() == Ok("long") {
            CacheRetention::Long
        } else {
            CacheRetention::Short
        }
    })
}

/// The cache point block, or `None` when caching is off for this call.
fn cache_point(model: &Model, retention: CacheRetention) -> Option<Value> {
    match retention {
        CacheRetention::None => None,
        _ if !supports_prompt_caching(model) => None,
        CacheRetention::Long => Some(json!({"cachePoint": {"type": "default", "ttl": "1h"}})),
        CacheRetention::Short => Some(json!({"cachePoint": {"type": "default"}})),
    }
}

/// Bedrock's tool-call id rule: `[a-zA-Z0-9_-]`, at most 64 characters.
fn normalize_tool_call_id(id: &str, _: &Model, _: &crate::AssistantMessage) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// `{"image": {"format", "source": {"bytes"}}}`; the bytes are the base64 the message holds
/// (the SDK decodes and encodes them again: the same text for canonical base64).
fn image_block(mime_type: &str, data: &str) -> Result<Value, Error> {
    let format = match mime_type {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => {
            return Err(Error::new(
                ErrorKind::Config,
                format!("Unknown image type: {other}"),
            ));
        }
    };
    Ok(json!({"image": {"format": format, "source": {"bytes": data}}}))
}

fn tool_result_content(content: &[Content]) -> Result<Vec<Value>, Error> {
    content
        .iter()
        .filter_map(|c| match c {
            Content::Text(t) => Some(Ok(json!({"text": t.text}))),
            Content::Image(i) => Some(image_block(&i.mime_type, &i.data)),
            Content::Unknown(_) => {
                skip_unknown_block(c.block_type(), "bedrock-converse-stream");
                None
            }
        })
        .collect()
}

fn convert_messages(
    context: &Context,
    model: &Model,
    cache: Option<&Value>,
) -> Result<Vec<Value>, Error> {
    let transformed = transform_messages(&context.messages, model, Some(&normalize_tool_call_id));
    let signatures = is_claude(model);
    let mut out: Vec<Value> = Vec::with_capacity(transformed.len());
    let mut i = 0;
    while i < transformed.len() {
        match transformed[i].as_ref() {
            Message::User(user) => {
                let content = match &user.content {
                    UserContent::Text(text) => vec![json!({"text": text})],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            Content::Text(t) => Some(Ok(json!({"text": t.text}))),
                            Content::Image(img) => Some(image_block(&img.mime_type, &img.data)),
                            Content::Unknown(_) => {
                                skip_unknown_block(b.block_type(), "bedrock-converse-stream");
                                None
                            }
                        })
                        .collect::<Result<_, _>>()?,
                };
                out.push(json!({"role": "user", "content": content}));
            }
            Message::Assistant(assistant) => {
                let mut blocks = Vec::with_capacity(assistant.content.len());
                for block in &assistant.content {
                    match block {
                        AssistantContent::Text(t) if t.text.trim().is_empty() => {}
                        AssistantContent::Text(t) => blocks.push(json!({"text": t.text})),
                        AssistantContent::ToolCall(call) => blocks.push(json!({
                            "toolUse": {"toolUseId": call.id, "name": call.name, "input": call.arguments}
                        })),
                        AssistantContent::Thinking(t) if t.thinking.trim().is_empty() => {}
                        AssistantContent::Thinking(t) if signatures => {
                            match t.thinking_signature.as_deref().filter(|s| !s.trim().is_empty()) {
                                // Without its signature Bedrock rejects a replayed block:
                                // plain text, as for Anthropic.
                                None => blocks.push(json!({"text": t.thinking})),
                                Some(signature) => blocks.push(json!({
                                    "reasoningContent": {"reasoningText": {"text": t.thinking, "signature": signature}}
                                })),
                            }
                        }
                        AssistantContent::Thinking(t) => blocks.push(json!({
                            "reasoningContent": {"reasoningText": {"text": t.thinking}}
                        })),
                        AssistantContent::Unknown(_) => {
                            skip_unknown_block(block.block_type(), "bedrock-converse-stream");
                        }
                    }
                }
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(_) => {
                // Consecutive tool results travel in one user message.
                let mut results = Vec::new();
                while let Some(Message::ToolResult(result)) = transformed.get(i).map(Cow::as_ref) {
                    results.push(json!({"toolResult": {
                        "toolUseId": result.tool_call_id,
                        "content": tool_result_content(&result.content)?,
                        "status": if result.is_error { "error" } else { "success" },
                    }}));
                    i += 1;
                }
                out.push(json!({"role": "user", "content": results}));
                continue;
            }
        }
        i += 1;
    }
    if let (Some(point), Some(last)) = (cache, out.last_mut())
        && last["role"] == "user"
        && let Some(content) = last["content"].as_array_mut()
    {
        content.push(point.clone());
    }
    Ok(out)
}

fn tool_config(tools: &[Tool], choice: Option<ToolChoice>) -> Option<Value> {
    if tools.is_empty() || choice == Some(ToolChoice::None) {
        return None;
    }
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({"toolSpec": {
                "name": t.name,
                "inputSchema": {"json": t.parameters},
                "description": t.description,
            }})
        })
        .collect();
    let mut config = Map::new();
    config.insert("tools".into(), Value::Array(tools));
    let choice = match choice {
        Some(ToolChoice::Auto) => Some(json!({"auto": {}})),
        Some(ToolChoice::Required) => Some(json!({"any": {}})),
        Some(ToolChoice::Tool(name)) => Some(json!({"tool": {"name": name}})),
        Some(ToolChoice::Raw(Value::Object(o))) if o.get("type") == Some(&json!("tool")) => {
            Some(json!({"tool": {"name": o.get("name")}}))
        }
        _ => None,
    };
    if let Some(choice) = choice {
        config.insert("toolChoice".into(), choice);
    }
    Some(Value::Object(config))
}

/// pi's effort for an adaptive Claude model (`xhigh` only where the model takes it).
fn effort(model: &Model, level: ThinkingLevel) -> String {
    if level == ThinkingLevel::Xhigh && candidates(model).iter().any(|s| s.contains("opus-4-7")) {
        return "xhigh".into();
    }
    if let Some(mapped) = model
        .thinking_level_map
        .as_ref()
        .and_then(|m| m.get(&level))
        .and_then(|v| v.as_deref())
    {
        return mapped.to_owned();
    }
    match level {
        ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        _ => "high",
    }
    .into()
}

fn gov_cloud(model: &Model, region: Option<&str>) -> bool {
    if region.is_some_and(|r| r.to_lowercase().starts_with("us-gov-")) {
        return true;
    }
    let id = model.id.to_lowercase();
    id.starts_with("us-gov.") || id.starts_with("arn:aws-us-gov:")
}

/// `additionalModelRequestFields`: Claude's thinking (adaptive, or a budget with the
/// interleaved-thinking beta), only when a level is asked of a reasoning model.
fn additional_fields(
    model: &Model,
    options: &StreamOptions,
    region: Option<&str>,
) -> Option<Value> {
    let level = options.reasoning.filter(|l| *l != ThinkingLevel::Off)?;
    if !model.reasoning || !is_claude(model) {
        return None;
    }
    let display = if gov_cloud(model, region) {
        None
    } else {
        Some(
            options
                .extra
                .get("thinkingDisplay")
                .and_then(Value::as_str)
                .unwrap_or("summarized")
                .to_owned(),
        )
    };
    let mut fields = Map::new();
    let mut thinking = Map::new();
    if adaptive_thinking(model) {
        thinking.insert("type".into(), "adaptive".into());
        if let Some(display) = display {
            thinking.insert("display".into(), display.into());
        }
        fields.insert("thinking".into(), Value::Object(thinking));
        fields.insert(
            "output_config".into(),
            json!({"effort": effort(model, level)}),
        );
    } else {
        let budget_level = if level == ThinkingLevel::Xhigh {
            ThinkingLevel::High
        } else {
            level
        };
        let budget = options
            .thinking_budgets
            .and_then(|b| b.get(budget_level))
            .or_else(|| ThinkingBudgets::DEFAULT.get(level))
            .unwrap_or(16384);
        thinking.insert("type".into(), "enabled".into());
        thinking.insert("budget_tokens".into(), budget.into());
        if let Some(display) = display {
            thinking.insert("display".into(), display.into());
        }
        fields.insert("thinking".into(), Value::Object(thinking));
        let interleaved = options
            .extra
            .get("interleavedThinking")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        if interleaved {
            fields.insert(
                "anthropic_beta".into(),
                json!(["interleaved-thinking-2025-05-14"]),
            );
        }
    }
    Some(Value::Object(fields))
}

/// The request body. `region` is the configured one (options or environment), for the
/// GovCloud rule.
pub(super) fn build_body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    region: Option<&str>,
) -> Result<Value, Error> {
    let cache = cache_point(model, cache_retention(options));
    let mut body = Map::new();
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(context, model, cache.as_ref())?),
    );
    if let Some(prompt) = context.system_prompt.as_deref().filter(|p| !p.is_empty()) {
        let mut system = vec![json!({"text": prompt})];
        system.extend(cache.clone());
        body.insert("system".into(), Value::Array(system));
    }
    let mut inference = Map::new();
    if let Some(n) = options.max_tokens {
        inference.insert("maxTokens".into(), n.into());
    }
    if let Some(t) = options.temperature {
        inference.insert("temperature".into(), t.into());
    }
    body.insert("inferenceConfig".into(), Value::Object(inference));
    if let Some(config) = tool_config(
        context.tools.as_deref().unwrap_or_default(),
        options.effective_tool_choice(),
    ) {
        body.insert("toolConfig".into(), config);
    }
    if let Some(fields) = additional_fields(model, options, region) {
        body.insert("additionalModelRequestFields".into(), fields);
    }
    if let Some(metadata) = options.extra.get("requestMetadata") {
        body.insert("requestMetadata".into(), metadata.clone());
    }
    Ok(Value::Object(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::UserMessage;

    fn claude() -> Model {
        Model::new(
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "bedrock-converse-stream",
            "amazon-bedrock",
            "https://bedrock-runtime.us-east-1.amazonaws.com",
        )
        .with_reasoning(true)
    }

    #[test]
    fn cache_points_follow_the_model_family() {
        let context = Context::new()
            .with_system_prompt("Be brief.")
            .with_message(UserMessage::text("Hi"));
        let body = build_body(&claude(), &context, &StreamOptions::new(), None).unwrap();
        assert_eq!(
            body["system"][1],
            json!({"cachePoint": {"type": "default"}})
        );
        assert_eq!(
            body["messages"][0]["content"][1],
            json!({"cachePoint": {"type": "default"}})
        );
        let nova = Model::new(
            "amazon.nova-lite-v1:0",
            "bedrock-converse-stream",
            "amazon-bedrock",
            "",
        );
        let body = build_body(&nova, &context, &StreamOptions::new(), None).unwrap();
        assert_eq!(body["system"].as_array().unwrap().len(), 1);
        assert_eq!(body["inferenceConfig"], json!({}));
    }

    #[test]
    fn thinking_budget_and_adaptive_effort() {
        let context = Context::new().with_message(UserMessage::text("Hi"));
        let options = StreamOptions::new().with_reasoning(ThinkingLevel::Low);
        let body = build_body(&claude(), &context, &options, None).unwrap();
        assert_eq!(
            body["additionalModelRequestFields"],
            json!({"thinking": {"type": "enabled", "budget_tokens": 2048, "display": "summarized"},
                   "anthropic_beta": ["interleaved-thinking-2025-05-14"]})
        );
        let opus = Model::new(
            "global.anthropic.claude-opus-4-7",
            "bedrock-converse-stream",
            "amazon-bedrock",
            "",
        )
        .with_reasoning(true);
        let options = StreamOptions::new().with_reasoning(ThinkingLevel::Xhigh);
        let body = build_body(&opus, &context, &options, Some("us-gov-west-1")).unwrap();
        assert_eq!(
            body["additionalModelRequestFields"],
            json!({"thinking": {"type": "adaptive"}, "output_config": {"effort": "xhigh"}})
        );
    }

    #[test]
    fn ids_are_made_safe() {
        let m = claude();
        let empty = crate::AssistantMessage::new("a", "b", "c");
        assert_eq!(
            normalize_tool_call_id("call|a.b/c", &m, &empty),
            "call_a_b_c"
        );
        assert_eq!(
            normalize_tool_call_id(&"x".repeat(80), &m, &empty).len(),
            64
        );
    }
}
