//! The request: the body (messages, tools, thinking, prompt caching) and the headers
//! (key or subscription token, betas, Claude Code's identity) pi's SDK sends.

use std::borrow::Cow;
use std::sync::LazyLock;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::llm::compat::AnthropicMessagesCompatSettings;
use crate::llm::error::Error;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, Context, Message, Tool, UserContent,
};
use crate::llm::model::Model;
use crate::llm::options::{AnthropicOptions, CacheRetention, StreamOptions};
use crate::providers::body::{EMPTY_ARRAY, EMPTY_OBJECT};
use crate::providers::http::copilot::copilot_headers;
use crate::providers::http::{HttpRequest, cloudflare};
use crate::providers::transform::{skip_unknown_block, skip_unknown_blocks, transform_messages};

use super::ANTHROPIC_VERSION;

const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
/// The Claude Code version pi presents with subscription tokens.
const CLAUDE_CODE_VERSION: &str = "2.1.75";
const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";
/// Claude Code's tool names; a subscription token sends tools under these casings.
const CLAUDE_CODE_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

/// The `compat` settings of an Anthropic-compatible endpoint.
struct Compat {
    eager_tool_input_streaming: bool,
    long_cache_retention: bool,
}

impl Compat {
    fn of(model: &Model) -> Compat {
        let set = AnthropicMessagesCompatSettings::of(model);
        Compat {
            eager_tool_input_streaming: set.supports_eager_tool_input_streaming.unwrap_or(true),
            long_cache_retention: set.supports_long_cache_retention.unwrap_or(true),
        }
    }
}

/// True for models that think adaptively: the crate's one list
/// (`llm::options`' `ADAPTIVE_THINKING_MODELS`, which `stream_simple` reads too).
fn supports_adaptive_thinking(model_id: &str) -> bool {
    crate::llm::options::anthropic_adaptive(model_id)
}

fn is_oauth_token(key: &str) -> bool {
    key.contains("sk-ant-oat")
}

/// `{"type": "ephemeral"}` and its one-hour form: the only two `cache_control` values.
static EPHEMERAL: LazyLock<Value> = LazyLock::new(|| json!({"type": "ephemeral"}));
static EPHEMERAL_1H: LazyLock<Value> = LazyLock::new(|| json!({"type": "ephemeral", "ttl": "1h"}));

fn cache_control(compat: &Compat, options: &StreamOptions) -> Option<&'static Value> {
    let retention = options.cache_retention.unwrap_or_else(|| {
        if std::env::var("PI_CACHE_RETENTION").as_deref() == Ok("long") {
            CacheRetention::Long
        } else {
            CacheRetention::Short
        }
    });
    match retention {
        CacheRetention::None => None,
        CacheRetention::Long if compat.long_cache_retention => Some(&EPHEMERAL_1H),
        _ => Some(&EPHEMERAL),
    }
}

/// The request, and whether it authenticates with a subscription (OAuth) token.
pub(super) fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<(HttpRequest, bool), Error> {
    // `None`: a keyless model (a local server), sent without credentials.
    let key = crate::llm::env_keys::request_key(model, options)?;
    let opts: AnthropicOptions = options.api_options()?;
    let copilot = model.provider == "github-copilot";
    let cloudflare = model.provider == "cloudflare-ai-gateway";
    let oauth = !copilot && !cloudflare && key.as_ref().is_some_and(|k| is_oauth_token(k.expose()));
    // Read once: a key it does not know is logged once per request.
    let compat = Compat::of(model);
    let transformed = transform_messages(&context.messages, model, Some(&normalize_tool_call_id));
    let body = build_body(model, context, &transformed, options, &opts, &compat, oauth);

    let mut betas: Vec<&str> = Vec::new();
    if context.tools.as_ref().is_some_and(|t| !t.is_empty()) && !compat.eager_tool_input_streaming {
        betas.push(FINE_GRAINED_TOOL_STREAMING_BETA);
    }
    if opts.interleaved_thinking.unwrap_or(true) && !supports_adaptive_thinking(&model.id) {
        betas.push(INTERLEAVED_THINKING_BETA);
    }

    let base_url = if cloudflare {
        cloudflare::resolve_base_url(model)?
    } else if model.base_url.is_empty() {
        DEFAULT_BASE_URL.to_owned()
    } else {
        model.base_url.clone()
    };
    let url = format!("{}/v1/messages", base_url.trim_end_matches('/'));
    let mut request = HttpRequest::post_serialized(url, &body)?
        .header("accept", "application/json")
        .header("anthropic-version", ANTHROPIC_VERSION)
        .header("anthropic-dangerous-direct-browser-access", "true");
    match &key {
        None => {}
        Some(key) if cloudflare => {
            request = request.header("cf-aig-authorization", format!("Bearer {}", key.expose()));
        }
        Some(key) if copilot || oauth => {
            request = request.header("authorization", format!("Bearer {}", key.expose()));
        }
        Some(key) => request = request.header("x-api-key", key.expose()),
    }
    if oauth {
        let mut all = vec!["claude-code-20250219", "oauth-2025-04-20"];
        all.extend(betas);
        request = request
            .header("anthropic-beta", all.join(","))
            .header("user-agent", format!("claude-cli/{CLAUDE_CODE_VERSION}"))
            .header("x-app", "cli");
    } else if !betas.is_empty() {
        request = request.header("anthropic-beta", betas.join(","));
    }
    if copilot {
        for (name, value) in copilot_headers(&context.messages) {
            request = request.header(name, value);
        }
    }
    Ok((request, oauth))
}

/// The request body, in pi's key order, borrowing the context (and its transformed
/// messages) instead of copying them into `Value`s.
#[derive(Debug, Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<MessageParam<'a>>,
    max_tokens: u64,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<ToolParam<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
}

fn build_body<'a>(
    model: &'a Model,
    context: &'a Context,
    transformed: &'a [Cow<'a, Message>],
    options: &StreamOptions,
    opts: &AnthropicOptions,
    compat: &Compat,
    oauth: bool,
) -> Body<'a> {
    let cache = cache_control(compat, options);
    let max_tokens = options
        .max_tokens
        .filter(|&n| n > 0)
        .unwrap_or(model.max_tokens / 3);

    let system_prompt = context.system_prompt.as_deref().filter(|s| !s.is_empty());
    let mut system = Vec::new();
    if oauth {
        system.push(Block::Text {
            text: CLAUDE_CODE_IDENTITY,
            cache_control: cache,
        });
    }
    if let Some(prompt) = system_prompt {
        system.push(Block::Text {
            text: prompt,
            cache_control: cache,
        });
    }

    let thinking_enabled = opts.thinking_enabled == Some(true);
    let temperature = options.temperature.filter(|_| !thinking_enabled);
    let tools = context
        .tools
        .as_ref()
        .filter(|t| !t.is_empty())
        .map(|list| convert_tools(list, oauth, compat.eager_tool_input_streaming, cache));
    let (mut thinking, mut output_config) = (None, None);
    if model.reasoning {
        if thinking_enabled {
            let display = opts.thinking_display.as_deref().unwrap_or("summarized");
            if supports_adaptive_thinking(&model.id) {
                thinking = Some(json!({"type": "adaptive", "display": display}));
                output_config = opts.effort.as_ref().map(|effort| json!({"effort": effort}));
            } else {
                let budget = opts
                    .thinking_budget_tokens
                    .filter(|&b| b > 0)
                    .unwrap_or(1024);
                thinking =
                    Some(json!({"type": "enabled", "budget_tokens": budget, "display": display}));
            }
        } else if opts.thinking_enabled == Some(false) {
            thinking = Some(json!({"type": "disabled"}));
        }
    }
    let metadata = options
        .metadata
        .as_ref()
        .and_then(|m| m.get("user_id"))
        .and_then(Value::as_str)
        .map(|user_id| json!({"user_id": user_id}));
    Body {
        model: &model.id,
        messages: convert_messages(transformed, oauth, cache),
        max_tokens,
        stream: true,
        system,
        temperature,
        tools,
        thinking,
        output_config,
        metadata,
        tool_choice: options.effective_tool_choice().map(|c| c.anthropic()),
    }
}

/// Anthropic's tool-call id rule: `[a-zA-Z0-9_-]`, at most 64 characters.
fn normalize_tool_call_id(id: &str, _: &Model, _: &AssistantMessage) -> String {
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

fn to_claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_owned(), |t| (*t).to_owned())
}

/// One entry of `messages`.
#[derive(Debug, Serialize)]
struct MessageParam<'a> {
    role: &'static str,
    content: ContentParam<'a>,
}

/// A message's content: a plain string, or blocks.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ContentParam<'a> {
    Text(&'a str),
    Blocks(Vec<Block<'a>>),
}

/// A content block, `type` first, then its members in pi's order.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<&'a Value>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<&'a Value>,
    },
    RedactedThinking {
        data: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: Cow<'a, str>,
        input: &'a Map<String, Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ToolResultContent<'a>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<&'a Value>,
    },
}

impl<'a> Block<'a> {
    fn image(data: &'a str, media_type: &'a str) -> Self {
        Block::Image {
            source: ImageSource {
                kind: "base64",
                media_type,
                data,
            },
            cache_control: None,
        }
    }

    /// Marks the block for prompt caching; false for a block that cannot carry the mark.
    fn mark(&mut self, cache: &'a Value) -> bool {
        match self {
            Block::Text { cache_control, .. }
            | Block::Image { cache_control, .. }
            | Block::ToolResult { cache_control, .. } => {
                *cache_control = Some(cache);
                true
            }
            _ => false,
        }
    }
}

#[derive(Debug, Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

/// A tool result's content: a string when it is only text, else blocks.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ToolResultContent<'a> {
    Text(String),
    Blocks(Vec<Block<'a>>),
}

/// A tool result's content: a string when it is only text, else blocks (an image-only result
/// gets a placeholder text first).
fn tool_result_content(content: &[Content]) -> ToolResultContent<'_> {
    skip_unknown_blocks(content, "anthropic-messages");
    if !content.iter().any(|c| matches!(c, Content::Image(_))) {
        let texts: Vec<&str> = content.iter().filter_map(Content::as_text).collect();
        return ToolResultContent::Text(texts.join("\n"));
    }
    let mut blocks: Vec<Block<'_>> = content
        .iter()
        .filter_map(|c| match c {
            Content::Text(t) => Some(Block::Text {
                text: &t.text,
                cache_control: None,
            }),
            Content::Image(i) => Some(Block::image(&i.data, &i.mime_type)),
            Content::Unknown(_) => None,
        })
        .collect();
    if !content.iter().any(|c| matches!(c, Content::Text(_))) {
        blocks.insert(
            0,
            Block::Text {
                text: "(see attached image)",
                cache_control: None,
            },
        );
    }
    ToolResultContent::Blocks(blocks)
}

fn convert_messages<'a>(
    transformed: &'a [Cow<'a, Message>],
    oauth: bool,
    cache: Option<&'a Value>,
) -> Vec<MessageParam<'a>> {
    let mut params: Vec<MessageParam<'a>> = Vec::with_capacity(transformed.len());
    let mut i = 0;
    while i < transformed.len() {
        match transformed[i].as_ref() {
            Message::User(user) => match &user.content {
                UserContent::Text(text) => {
                    if !text.trim().is_empty() {
                        params.push(MessageParam {
                            role: "user",
                            content: ContentParam::Text(text),
                        });
                    }
                }
                UserContent::Blocks(blocks) => {
                    let blocks: Vec<Block<'a>> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            Content::Text(t) if t.text.trim().is_empty() => None,
                            Content::Text(t) => Some(Block::Text {
                                text: &t.text,
                                cache_control: None,
                            }),
                            Content::Image(img) => Some(Block::image(&img.data, &img.mime_type)),
                            Content::Unknown(_) => {
                                skip_unknown_block(b.block_type(), "anthropic-messages");
                                None
                            }
                        })
                        .collect();
                    if !blocks.is_empty() {
                        params.push(MessageParam {
                            role: "user",
                            content: ContentParam::Blocks(blocks),
                        });
                    }
                }
            },
            Message::Assistant(assistant) => {
                let mut blocks = Vec::with_capacity(assistant.content.len());
                for block in &assistant.content {
                    match block {
                        AssistantContent::Text(t) => {
                            if !t.text.trim().is_empty() {
                                blocks.push(Block::Text {
                                    text: &t.text,
                                    cache_control: None,
                                });
                            }
                        }
                        AssistantContent::Thinking(t) => {
                            if t.is_redacted() {
                                blocks.push(Block::RedactedThinking {
                                    data: t.thinking_signature.as_deref().unwrap_or(""),
                                });
                            } else if t.thinking.trim().is_empty() {
                                continue;
                            } else if let Some(sig) = t
                                .thinking_signature
                                .as_deref()
                                .filter(|s| !s.trim().is_empty())
                            {
                                blocks.push(Block::Thinking {
                                    thinking: &t.thinking,
                                    signature: sig,
                                });
                            } else {
                                // No signature (an aborted stream): plain text, no tags.
                                blocks.push(Block::Text {
                                    text: &t.thinking,
                                    cache_control: None,
                                });
                            }
                        }
                        AssistantContent::ToolCall(call) => {
                            let name = if oauth {
                                Cow::Owned(to_claude_code_name(&call.name))
                            } else {
                                Cow::Borrowed(call.name.as_str())
                            };
                            blocks.push(Block::ToolUse {
                                id: &call.id,
                                name,
                                input: &call.arguments,
                            });
                        }
                        AssistantContent::Unknown(_) => {
                            skip_unknown_block(block.block_type(), "anthropic-messages");
                        }
                    }
                }
                if !blocks.is_empty() {
                    params.push(MessageParam {
                        role: "assistant",
                        content: ContentParam::Blocks(blocks),
                    });
                }
            }
            Message::ToolResult(_) => {
                // Consecutive results go in one user message (z.ai requires it).
                let mut results = Vec::new();
                while let Some(Message::ToolResult(r)) = transformed.get(i).map(AsRef::as_ref) {
                    results.push(Block::ToolResult {
                        tool_use_id: &r.tool_call_id,
                        content: tool_result_content(&r.content),
                        is_error: r.is_error,
                        cache_control: None,
                    });
                    i += 1;
                }
                params.push(MessageParam {
                    role: "user",
                    content: ContentParam::Blocks(results),
                });
                continue;
            }
        }
        i += 1;
    }
    // Cache the conversation up to the last user turn.
    if let Some(cache) = cache
        && let Some(last) = params.last_mut()
        && last.role == "user"
    {
        match &mut last.content {
            ContentParam::Blocks(blocks) => {
                if let Some(block) = blocks.last_mut() {
                    block.mark(cache);
                }
            }
            ContentParam::Text(text) => {
                last.content = ContentParam::Blocks(vec![Block::Text {
                    text,
                    cache_control: Some(cache),
                }]);
            }
        }
    }
    params
}

/// One entry of `tools`, borrowing the tool's schema.
#[derive(Debug, Serialize)]
pub(super) struct ToolParam<'a> {
    name: Cow<'a, str>,
    description: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    eager_input_streaming: bool,
    input_schema: InputSchema<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<&'a Value>,
}

/// `{"type": "object", "properties": …, "required": …}` from the tool's schema.
#[derive(Debug, Serialize)]
struct InputSchema<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    properties: &'a Value,
    required: &'a Value,
}

fn convert_tools<'a>(
    tools: &'a [Tool],
    oauth: bool,
    eager: bool,
    cache: Option<&'a Value>,
) -> Vec<ToolParam<'a>> {
    let last = tools.len().saturating_sub(1);
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| ToolParam {
            name: if oauth {
                Cow::Owned(to_claude_code_name(&tool.name))
            } else {
                Cow::Borrowed(&tool.name)
            },
            description: &tool.description,
            eager_input_streaming: eager,
            input_schema: InputSchema {
                kind: "object",
                properties: tool.parameters.get("properties").unwrap_or(&EMPTY_OBJECT),
                required: tool.parameters.get("required").unwrap_or(&EMPTY_ARRAY),
            },
            cache_control: cache.filter(|_| i == last),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::error::ErrorKind;
    use crate::llm::message::StopReason;
    use crate::llm::message::{ThinkingContent, ToolResultMessage, UserMessage};
    use crate::llm::model::InputModality;
    use crate::llm::model::ModelCost;
    use crate::llm::model::api;
    use crate::providers::anthropic::AnthropicDecoder;

    fn model() -> Model {
        Model::new(
            "claude-sonnet-4-5",
            api::ANTHROPIC_MESSAGES,
            "anthropic",
            "https://api.anthropic.com/",
        )
        .with_reasoning(true)
        .with_max_tokens(64_000)
        .with_input(vec![InputModality::Text, InputModality::Image])
    }

    fn encode(
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> (Value, Vec<(String, String)>, String) {
        let (request, _) = build_request(model, context, options).unwrap();
        let (url, headers) = request.parts();
        (request.body(), headers.to_vec(), url.to_owned())
    }

    use crate::providers::http::header_in as header;

    fn key() -> StreamOptions {
        StreamOptions::new().with_api_key("sk-ant-api-key")
    }

    #[test]
    fn blocks_of_unknown_types_are_not_sent() {
        let model = model();
        let (with, without) =
            crate::providers::transform::contexts_with_and_without_unknown_blocks(&model);
        let body = |c: &Context| encode(&model, c, &key()).0;
        assert!(!body(&with).to_string().contains("futureBlock"));
        assert_eq!(body(&with), body(&without));
    }

    #[test]
    fn defaults_api_key_headers_and_max_tokens() {
        let ctx = Context::new()
            .with_system_prompt("Be brief.")
            .with_message(UserMessage::text("hi"));
        let (body, headers, url) = encode(&model(), &ctx, &key());
        assert_eq!(url, "https://api.anthropic.com/v1/messages");
        assert_eq!(header(&headers, "x-api-key"), Some("sk-ant-api-key"));
        assert_eq!(header(&headers, "anthropic-version"), Some("2023-06-01"));
        assert_eq!(
            header(&headers, "anthropic-beta"),
            Some("interleaved-thinking-2025-05-14")
        );
        assert_eq!(header(&headers, "authorization"), None);
        assert_eq!(body["max_tokens"], 64_000 / 3);
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
            ]}])
        );
        assert!(body.get("thinking").is_none() && body.get("temperature").is_none());
    }

    #[test]
    fn oauth_token_uses_claude_code_identity() {
        let ctx = Context::new()
            .with_system_prompt("Be brief.")
            .with_message(UserMessage::text("hi"))
            .with_tools(vec![Tool::new(
                "read",
                "Read a file",
                json!({"type": "object"}),
            )]);
        let options = StreamOptions::new().with_api_key("sk-ant-oat01-secret");
        let (request, oauth) = build_request(&model(), &ctx, &options).unwrap();
        assert!(oauth);
        let (_, headers) = request.parts();
        assert_eq!(
            header(headers, "authorization"),
            Some("Bearer sk-ant-oat01-secret")
        );
        assert_eq!(header(headers, "x-api-key"), None);
        assert_eq!(
            header(headers, "anthropic-beta"),
            Some("claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14")
        );
        assert_eq!(header(headers, "x-app"), Some("cli"));
        let body = request.body();
        assert_eq!(body["system"][0]["text"], CLAUDE_CODE_IDENTITY);
        assert_eq!(body["system"][1]["text"], "Be brief.");
        assert_eq!(body["tools"][0]["name"], "Read");
        // Inbound names map back to the context's tool.
        let decoder = AnthropicDecoder::new(ModelCost::default(), Some(vec!["read".into()]));
        assert_eq!(decoder.tool_name("Read".into()), "read");
    }

    #[test]
    fn cache_retention_none_and_long() {
        let ctx = Context::new()
            .with_system_prompt("s")
            .with_message(UserMessage::text("hi"))
            .with_tools(vec![
                Tool::new("a", "A", json!({"type": "object"})),
                Tool::new("b", "B", json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]})),
            ]);
        let (body, _, _) = encode(
            &model(),
            &ctx,
            &key().with_cache_retention(CacheRetention::None),
        );
        assert!(!body.to_string().contains("cache_control"));
        assert_eq!(body["messages"][0]["content"], "hi");
        let (body, _, _) = encode(
            &model(),
            &ctx,
            &key().with_cache_retention(CacheRetention::Long),
        );
        let long = json!({"type": "ephemeral", "ttl": "1h"});
        assert_eq!(body["system"][0]["cache_control"], long);
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["cache_control"], long);
        assert_eq!(
            body["tools"][1]["input_schema"],
            json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]})
        );
        assert_eq!(body["tools"][0]["input_schema"]["properties"], json!({}));
        assert_eq!(body["tools"][0]["eager_input_streaming"], true);
        let no_long = model().with_compat(
            json!({"supportsLongCacheRetention": false, "supportsEagerToolInputStreaming": false}),
        );
        let (body, headers, _) = encode(
            &no_long,
            &ctx,
            &key().with_cache_retention(CacheRetention::Long),
        );
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(body["tools"][0].get("eager_input_streaming").is_none());
        assert_eq!(
            header(&headers, "anthropic-beta"),
            Some("fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14")
        );
    }

    #[test]
    fn thinking_temperature_and_tool_choice() {
        let ctx = Context::new().with_message(UserMessage::text("hi"));
        let opts = key()
            .with_temperature(0.5)
            .with_extra("thinkingEnabled", json!(true))
            .with_extra("thinkingBudgetTokens", json!(4000))
            .with_extra("toolChoice", json!("any"));
        let (body, _, _) = encode(&model(), &ctx, &opts);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 4000, "display": "summarized"})
        );
        assert!(
            body.get("temperature").is_none(),
            "no temperature with thinking"
        );
        assert_eq!(body["tool_choice"], json!({"type": "any"}));

        let adaptive = Model::new("claude-opus-4-6", api::ANTHROPIC_MESSAGES, "anthropic", "")
            .with_reasoning(true);
        let opts = key()
            .with_extra("thinkingEnabled", json!(true))
            .with_extra("effort", json!("max"))
            .with_extra("thinkingDisplay", json!("omitted"));
        let (body, headers, url) = encode(&adaptive, &ctx, &opts);
        assert_eq!(url, "https://api.anthropic.com/v1/messages");
        assert_eq!(
            body["thinking"],
            json!({"type": "adaptive", "display": "omitted"})
        );
        assert_eq!(body["output_config"], json!({"effort": "max"}));
        assert_eq!(header(&headers, "anthropic-beta"), None);

        let opts = key()
            .with_temperature(0.5)
            .with_extra("thinkingEnabled", json!(false))
            .with_extra("toolChoice", json!({"type": "tool", "name": "read"}));
        let (body, _, _) = encode(&model(), &ctx, &opts);
        assert_eq!(body["thinking"], json!({"type": "disabled"}));
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "read"}));
        let (body, _, _) = encode(&model().with_reasoning(false), &ctx, &opts);
        assert!(
            body.get("thinking").is_none(),
            "only reasoning models get thinking"
        );

        let bad = key().with_extra("thinkingEnabled", json!("yes"));
        let err = build_request(&model(), &ctx, &bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
    }

    #[test]
    fn messages_images_thinking_and_merged_tool_results() {
        let assistant =
            AssistantMessage::new(api::ANTHROPIC_MESSAGES, "anthropic", "claude-sonnet-4-5")
                .with_content(vec![
                    AssistantContent::Thinking(ThinkingContent::new("plan").with_signature("sig")),
                    AssistantContent::Thinking(ThinkingContent::new("unsigned")),
                    AssistantContent::Thinking(
                        ThinkingContent::new("x")
                            .with_signature("opaque")
                            .redacted(),
                    ),
                    AssistantContent::text("  "),
                    AssistantContent::tool_call("call|1", "read", json!({"path": "a"})),
                    AssistantContent::tool_call("t2", "look", json!({})),
                ])
                .with_stop_reason(StopReason::ToolUse);
        let ctx = Context::new()
            .with_message(UserMessage::blocks(vec![
                Content::text("see"),
                Content::text(" "),
                Content::image("AAAA", "image/png"),
            ]))
            .with_message(assistant)
            .with_message(ToolResultMessage::new(
                "call|1",
                "read",
                vec![Content::text("a"), Content::text("b")],
                false,
            ))
            .with_message(ToolResultMessage::new(
                "t2",
                "look",
                vec![Content::image("BBBB", "image/jpeg")],
                true,
            ));
        let (body, _, _) = encode(
            &model(),
            &ctx,
            &key().with_cache_retention(CacheRetention::None),
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [
                    {"type": "text", "text": "see"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
                ]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "plan", "signature": "sig"},
                    {"type": "text", "text": "unsigned"},
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "tool_use", "id": "call|1", "name": "read", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "t2", "name": "look", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call|1", "content": "a\nb", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": [
                        {"type": "text", "text": "(see attached image)"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "BBBB"}}
                    ]}
                ]}
            ])
        );
    }

    #[test]
    fn foreign_tool_call_ids_are_normalized() {
        let foreign = AssistantMessage::new("openai-responses", "openai", "gpt-5")
            .with_content(vec![AssistantContent::tool_call(
                "call_1|fc_x.y",
                "read",
                json!({}),
            )])
            .with_stop_reason(StopReason::ToolUse);
        let ctx = Context::new()
            .with_message(UserMessage::text("hi"))
            .with_message(foreign)
            .with_message(ToolResultMessage::new(
                "call_1|fc_x.y",
                "read",
                vec![Content::text("ok")],
                false,
            ));
        let (body, _, _) = encode(
            &model(),
            &ctx,
            &key().with_cache_retention(CacheRetention::None),
        );
        assert_eq!(body["messages"][1]["content"][0]["id"], "call_1_fc_x_y");
        assert_eq!(
            body["messages"][2]["content"][0]["tool_use_id"],
            "call_1_fc_x_y"
        );
        assert_eq!(
            normalize_tool_call_id(
                &"é".repeat(70),
                &model(),
                &AssistantMessage::new("", "", "")
            )
            .len(),
            64
        );
    }

    #[test]
    fn cloudflare_and_copilot_auth() {
        let ctx = Context::new().with_message(UserMessage::text("hi"));
        let cf = Model::new(
            "claude",
            api::ANTHROPIC_MESSAGES,
            "cloudflare-ai-gateway",
            "https://gateway.example/v1/{PI_TEST_UNSET_ACCOUNT_9}/anthropic",
        );
        let err = build_request(&cf, &ctx, &key()).unwrap_err();
        assert_eq!(
            err.message(),
            "PI_TEST_UNSET_ACCOUNT_9 is required for provider cloudflare-ai-gateway but is not set."
        );
        let copilot = Model::new(
            "claude",
            api::ANTHROPIC_MESSAGES,
            "github-copilot",
            "https://copilot.example",
        );
        let (_, headers, _) = encode(&copilot, &ctx, &key());
        assert_eq!(
            header(&headers, "authorization"),
            Some("Bearer sk-ant-api-key")
        );
        assert_eq!(header(&headers, "X-Initiator"), Some("user"));
        assert_eq!(
            header(&headers, "Openai-Intent"),
            Some("conversation-edits")
        );
    }
}
