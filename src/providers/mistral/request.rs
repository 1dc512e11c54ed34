//! Request encoding: the URL, headers and body pi-ai 0.73.1 sends to `/v1/chat/completions`
//! through the Mistral SDK (`@mistralai/mistralai` 2.7), in the SDK's wire form: snake_case
//! names, the members in the order of the SDK's schema, and the defaults it adds (`prefix`
//! on assistant messages, `index` on their tool calls).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::{Value, json};

use crate::llm::error::{Error, ErrorKind};
use crate::llm::json::js;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, Context, Message, Tool, ToolResultMessage,
    UserContent,
};
use crate::llm::model::Model;
use crate::llm::options::{MistralOptions, StreamOptions, ToolChoice};
use crate::providers::http::HttpRequest;
use crate::providers::transform::{skip_unknown_block, transform_messages};

/// The SDK's server, for a model without a base URL.
pub(super) const DEFAULT_BASE_URL: &str = "https://api.mistral.ai";
/// Mistral takes tool-call ids of exactly nine letters and digits.
const TOOL_CALL_ID_LENGTH: usize = 9;
/// A user message whose images a text-only model cannot see, and nothing else.
const USER_IMAGE_OMITTED: &str = "(image omitted: model does not support images)";

/// The request for one call.
pub(super) fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<HttpRequest, Error> {
    let key = crate::llm::env_keys::request_key(model, options)?;
    let opts: MistralOptions = options.api_options()?;
    let tool_choice = tool_choice(options)?;
    let ids = ToolCallIds::default();
    let normalize = |id: &str, _: &Model, _: &AssistantMessage| ids.normalize(id);
    let transformed = transform_messages(&context.messages, model, Some(&normalize));
    let mut messages = Vec::with_capacity(transformed.len() + 1);
    if let Some(prompt) = context.system_prompt.as_deref().filter(|p| !p.is_empty()) {
        messages.push(WireMessage::Plain {
            role: "system",
            content: prompt,
        });
    }
    convert_messages(&transformed, model, &mut messages);
    let body = Body {
        model: &model.id,
        temperature: options.temperature.map(JsNumber),
        max_tokens: options.max_tokens,
        stream: true,
        messages,
        tools: context
            .tools
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(convert_tools),
        tool_choice,
        reasoning_effort: opts.reasoning_effort.as_deref(),
        prompt_mode: opts.prompt_mode.as_deref(),
    };
    let base_url = match model.base_url.as_str() {
        "" => DEFAULT_BASE_URL,
        url => url,
    };
    let url = format!("{}/v1/chat/completions", base_url.trim_end_matches('/'));
    let mut request =
        HttpRequest::post_serialized(url, &body)?.header("accept", "text/event-stream");
    if let Some(key) = &key {
        request = request.header("authorization", format!("Bearer {}", key.expose()));
    }
    // Mistral routes a conversation to the same KV cache by `x-affinity`; a model's or the
    // caller's own `x-affinity` header replaces this one.
    if let Some(session) = options.session_id.as_deref().filter(|s| !s.is_empty()) {
        request = request.header("x-affinity", session);
    }
    Ok(request)
}

// ------------------------------------------------------------------------------------------
// Tool-call ids

/// pi's `shortHash`: two 32-bit multiplicative hashes over the UTF-16 code units of `text`,
/// each written in base 36 (the second first).
pub(super) fn short_hash(text: &str) -> String {
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

/// `n.toString(36)`.
fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut digits = Vec::with_capacity(7);
    loop {
        digits.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.iter().rev().map(|&d| char::from(d)).collect()
}

/// pi's `deriveMistralToolCallId`: the id's letters and digits when there are exactly nine
/// (first attempt), else the first nine characters of the hash of them (of the raw id when
/// it has none), salted with `:<attempt>` after the first attempt.
pub(super) fn derive_tool_call_id(id: &str, attempt: u32) -> String {
    let normalized: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && normalized.len() == TOOL_CALL_ID_LENGTH {
        return normalized;
    }
    let base = if normalized.is_empty() {
        id
    } else {
        &normalized
    };
    let hash = if attempt == 0 {
        short_hash(base)
    } else {
        short_hash(&format!("{base}:{attempt}"))
    };
    // The hash is base 36 already: every character is kept (it may be shorter than nine).
    hash.chars().take(TOOL_CALL_ID_LENGTH).collect()
}

/// pi's per-request tool-call id normalizer: each id of another provider gets a nine-character
/// id, the same one every time it appears, and no two ids get the same one.
#[derive(Debug, Default)]
pub(super) struct ToolCallIds {
    maps: RefCell<IdMaps>,
}

#[derive(Debug, Default)]
struct IdMaps {
    /// Original id -> Mistral id.
    forward: HashMap<String, String>,
    /// Mistral id -> original id.
    reverse: HashMap<String, String>,
}

impl ToolCallIds {
    pub(super) fn normalize(&self, id: &str) -> String {
        let mut maps = self.maps.borrow_mut();
        if let Some(existing) = maps.forward.get(id).filter(|e| !e.is_empty()) {
            return existing.clone();
        }
        let mut attempt = 0;
        loop {
            let candidate = derive_tool_call_id(id, attempt);
            let free = match maps.reverse.get(&candidate) {
                None => true,
                Some(owner) => owner.is_empty() || owner == id,
            };
            if free {
                maps.forward.insert(id.to_owned(), candidate.clone());
                maps.reverse.insert(candidate.clone(), id.to_owned());
                return candidate;
            }
            attempt += 1;
        }
    }
}

// ------------------------------------------------------------------------------------------
// The body

/// `ChatCompletionStreamRequest` as the SDK writes it: its members in the schema's order.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<JsNumber>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    stream: bool,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<WireTool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_mode: Option<&'a str>,
}

/// A number as JavaScript writes it (`1`, not `1.0`).
struct JsNumber(f64);

impl Serialize for JsNumber {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::llm::json::js_f64(&self.0, s)
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum WireMessage<'a> {
    /// The system prompt, a user message that is a string.
    Plain {
        role: &'static str,
        content: &'a str,
    },
    /// A user message of parts.
    Parts {
        role: &'static str,
        content: Vec<Part<'a>>,
    },
    Assistant(WireAssistant<'a>),
    Tool(WireToolResult<'a>),
}

/// A content chunk: `text`, `image_url` (a data URL string) or `thinking`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: String },
    Thinking { thinking: [ThinkingText<'a>; 1] },
}

#[derive(Serialize)]
struct ThinkingText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct WireAssistant<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    content: Vec<Part<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    /// The SDK's default.
    prefix: bool,
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireCall<'a>,
    /// The SDK's default (every replayed call is index 0).
    index: u32,
}

#[derive(Serialize)]
struct WireCall<'a> {
    name: &'a str,
    arguments: String,
}

#[derive(Serialize)]
struct WireToolResult<'a> {
    role: &'static str,
    content: Vec<Part<'a>>,
    tool_call_id: &'a str,
    name: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

/// The SDK's `FunctionT`: `strict` before `parameters`.
#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    strict: bool,
    parameters: JsJson<'a>,
}

/// A JSON value written the way `JSON.stringify` writes the object pi holds: array-index
/// keys first, integral numbers without a fraction.
struct JsJson<'a>(&'a Value);

impl Serialize for JsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Number(n) if n.is_f64() => match n.as_f64() {
                Some(x) => crate::llm::json::js_f64(&x, s),
                None => n.serialize(s),
            },
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&JsJson(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut out = s.serialize_map(Some(map.len()))?;
                for (key, value) in js::entries(map) {
                    out.serialize_entry(key, &JsJson(value))?;
                }
                out.end()
            }
            other => other.serialize(s),
        }
    }
}

fn convert_tools(tools: &[Tool]) -> Vec<WireTool<'_>> {
    tools
        .iter()
        .map(|tool| WireTool {
            kind: "function",
            function: WireFunction {
                name: &tool.name,
                description: &tool.description,
                strict: false,
                parameters: JsJson(&tool.parameters),
            },
        })
        .collect()
}

/// `String.prototype.trim`'s whitespace (Rust's without U+0085, with U+FEFF).
fn is_js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

fn image_url(data: &str, mime_type: &str) -> Part<'static> {
    Part::ImageUrl {
        image_url: format!("data:{mime_type};base64,{data}"),
    }
}

/// pi's `toChatMessages`.
fn convert_messages<'a>(
    transformed: &'a [Cow<'_, Message>],
    model: &Model,
    out: &mut Vec<WireMessage<'a>>,
) {
    let vision = model.supports_images();
    for message in transformed {
        match message.as_ref() {
            Message::User(user) => match &user.content {
                UserContent::Text(text) => out.push(WireMessage::Plain {
                    role: "user",
                    content: text,
                }),
                UserContent::Blocks(blocks) => {
                    let had_images = blocks.iter().any(|b| matches!(b, Content::Image(_)));
                    let content: Vec<Part<'a>> = blocks
                        .iter()
                        .filter_map(|block| match block {
                            Content::Text(t) => Some(Part::Text {
                                text: Cow::Borrowed(&t.text),
                            }),
                            Content::Image(img) if vision => {
                                Some(image_url(&img.data, &img.mime_type))
                            }
                            Content::Image(_) => None,
                            Content::Unknown(_) => {
                                skip_unknown_block(block.block_type(), &model.api);
                                None
                            }
                        })
                        .collect();
                    if !content.is_empty() {
                        out.push(WireMessage::Parts {
                            role: "user",
                            content,
                        });
                    } else if had_images && !vision {
                        out.push(WireMessage::Plain {
                            role: "user",
                            content: USER_IMAGE_OMITTED,
                        });
                    }
                }
            },
            Message::Assistant(assistant) => {
                if let Some(converted) = convert_assistant(assistant, model) {
                    out.push(WireMessage::Assistant(converted));
                }
            }
            Message::ToolResult(result) => {
                out.push(WireMessage::Tool(convert_tool_result(result, model)));
            }
        }
    }
}

/// One assistant message, or `None` when it has neither content nor tool calls.
fn convert_assistant<'a>(
    assistant: &'a AssistantMessage,
    model: &Model,
) -> Option<WireAssistant<'a>> {
    let mut content = Vec::new();
    let mut tool_calls = Vec::new();
    for block in &assistant.content {
        match block {
            AssistantContent::Text(t) => {
                if !js_trim(&t.text).is_empty() {
                    content.push(Part::Text {
                        text: Cow::Borrowed(&t.text),
                    });
                }
            }
            AssistantContent::Thinking(t) => {
                if !js_trim(&t.thinking).is_empty() {
                    content.push(Part::Thinking {
                        thinking: [ThinkingText {
                            kind: "text",
                            text: &t.thinking,
                        }],
                    });
                }
            }
            AssistantContent::ToolCall(call) => tool_calls.push(WireToolCall {
                id: &call.id,
                kind: "function",
                function: WireCall {
                    name: &call.name,
                    arguments: js::to_string(&Value::Object(call.arguments.clone())),
                },
                index: 0,
            }),
            AssistantContent::Unknown(_) => skip_unknown_block(block.block_type(), &model.api),
        }
    }
    (!content.is_empty() || !tool_calls.is_empty()).then_some(WireAssistant {
        role: "assistant",
        content,
        tool_calls,
        prefix: false,
    })
}

fn convert_tool_result<'a>(result: &'a ToolResultMessage, model: &Model) -> WireToolResult<'a> {
    let vision = model.supports_images();
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Text(t) => Some(t.text.as_str()),
            Content::Unknown(_) => {
                skip_unknown_block(c.block_type(), &model.api);
                None
            }
            Content::Image(_) => None,
        })
        .collect();
    let has_images = result
        .content
        .iter()
        .any(|c| matches!(c, Content::Image(_)));
    let text = tool_result_text(&texts.join("\n"), has_images, vision, result.is_error);
    let mut content = vec![Part::Text {
        text: Cow::Owned(text),
    }];
    if vision {
        content.extend(result.content.iter().filter_map(|c| match c {
            Content::Image(img) => Some(image_url(&img.data, &img.mime_type)),
            _ => None,
        }));
    }
    WireToolResult {
        role: "tool",
        content,
        tool_call_id: &result.tool_call_id,
        name: &result.tool_name,
    }
}

/// pi's `buildToolResultText`.
fn tool_result_text(text: &str, has_images: bool, vision: bool, is_error: bool) -> String {
    let prefix = if is_error { "[tool error] " } else { "" };
    let trimmed = js_trim(text);
    if !trimmed.is_empty() {
        let suffix = if has_images && !vision {
            "\n[tool image omitted: model does not support images]"
        } else {
            ""
        };
        return format!("{prefix}{trimmed}{suffix}");
    }
    let what = match (has_images, vision) {
        (true, true) => "(see attached image)",
        (true, false) => "(image omitted: model does not support images)",
        (false, _) => "(no tool output)",
    };
    format!("{prefix}{what}")
}

/// pi's `mapToolChoice`: `auto`, `none`, `any` and `required` as they are; a tool named by
/// `{"function": {"name": …}}` as `{"type":"function","function":{"name":…}}`. The typed
/// [`ToolChoice::Required`] is sent as Mistral's `any`.
fn tool_choice(options: &StreamOptions) -> Result<Option<Value>, Error> {
    let choice = match &options.tool_choice {
        Some(choice) => choice.clone(),
        None => match options.extra.get("toolChoice") {
            // pi's `if (options.toolChoice)`.
            None | Some(Value::Null | Value::Bool(false)) => return Ok(None),
            Some(Value::String(s)) if s.is_empty() => return Ok(None),
            Some(Value::Number(n)) if n.as_f64() == Some(0.0) => return Ok(None),
            Some(raw) => ToolChoice::Raw(raw.clone()),
        },
    };
    let named = |name: &str| json!({"type": "function", "function": {"name": name}});
    Ok(Some(match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "any".into(),
        ToolChoice::Tool(name) => named(&name),
        ToolChoice::Raw(Value::String(s))
            if matches!(s.as_str(), "auto" | "none" | "any" | "required") =>
        {
            Value::String(s)
        }
        ToolChoice::Raw(raw) => match raw.pointer("/function/name").and_then(Value::as_str) {
            Some(name) => named(name),
            // pi fails on these too (a TypeError, or the SDK's validation).
            None => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "Invalid mistral-conversations option toolChoice: {}",
                        js::to_string(&raw)
                    ),
                ));
            }
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::{StopReason, ThinkingContent, ToolResultMessage, UserMessage};
    use crate::llm::model::{InputModality, api};
    use crate::providers::http::header_in as header;

    fn model() -> Model {
        Model::new(
            "mistral-large-latest",
            api::MISTRAL_CONVERSATIONS,
            "mistral",
            "https://api.mistral.ai",
        )
        .with_input(vec![InputModality::Text, InputModality::Image])
    }

    fn key() -> StreamOptions {
        StreamOptions::new().with_api_key("mk-test")
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

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    fn hi() -> Context {
        Context::new()
            .with_system_prompt("Be brief.")
            .with_message(UserMessage::text("hi"))
    }

    fn foreign(content: Vec<AssistantContent>) -> AssistantMessage {
        AssistantMessage::new("openai-responses", "openai", "gpt-5")
            .with_content(content)
            .with_stop_reason(StopReason::ToolUse)
    }

    #[test]
    fn short_hash_matches_pi() {
        // Computed with pi-ai 0.73.1's dist/utils/hash.js under node.
        for (input, want) in [
            ("", "k4n83c7h0j2b"),
            ("a", "m8735310ae7sx"),
            ("toolcall:0", "1nlso9v7di2pi"),
            ("toolcall:10", "avwqj3bw3uld"),
            ("callabcfc1", "j6ob6a1orxt2"),
            ("call_abc|fc_1", "1a0y4ff6e5uy9"),
            ("é😀", "102l7zrk951la"),
            ("x:1", "18j26151qcs4at"),
            ("toolu_01A09q90qw90lq917835lq9", "16u9r0o1roxgrb"),
        ] {
            assert_eq!(short_hash(input), want, "{input:?}");
        }
    }

    #[test]
    fn derived_ids_match_pi() {
        // [id, attempt 0, attempt 1, attempt 2], from pi's deriveMistralToolCallId.
        for (id, want) in [
            ("call_abc|fc_1", ["j6ob6a1or", "qzy15g1yy", "1tdd17t1d"]),
            ("abc-def-ghi", ["abcdefghi", "mlj703uel", "1ncc79w14"]),
            ("toolcall:0", ["toolcall0", "1t6qern11", "x718qd161"]),
            ("toolcall:10", ["3o69b1b2x", "11ux6o0g5", "1u5zll11m"]),
            ("😀", ["13wj7r7us", "10qquyc6b", "z2om6u1rf"]),
            ("|||", ["1wjog0l1x", "rvgzikcag", "5vscdoz61"]),
            (
                "toolu_01A09q90qw90lq917835lq9",
                ["1q2i7qh1x", "1qk1za11o", "hmiufq16n"],
            ),
        ] {
            for (attempt, want) in want.iter().enumerate() {
                assert_eq!(
                    derive_tool_call_id(id, attempt as u32),
                    *want,
                    "{id} {attempt}"
                );
            }
        }
    }

    #[test]
    fn normalizer_is_stable_and_avoids_collisions() {
        let ids = ToolCallIds::default();
        assert_eq!(ids.normalize("abc-def-ghi"), "abcdefghi");
        // Another id with the same letters gets the next attempt.
        assert_eq!(ids.normalize("abcdefghi"), "mlj703uel");
        assert_eq!(ids.normalize("abc-def-ghi"), "abcdefghi");
        assert_eq!(ids.normalize("abcdefghi"), "mlj703uel");
        assert_eq!(ids.normalize("call_abc|fc_1"), "j6ob6a1or");
    }

    #[test]
    fn url_headers_and_key_order() {
        let options = key()
            .with_session_id("sess-1")
            .with_max_tokens(100)
            .with_temperature(1.0)
            .with_extra("toolChoice", json!("required"))
            .with_extra("promptMode", json!("reasoning"))
            .with_extra("reasoningEffort", json!("high"));
        let ctx = hi().with_tools(vec![Tool::new(
            "read",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "2": {}, "1": {"minimum": 1.0}}}),
        )]);
        let (body, headers, url) = encode(&model(), &ctx, &options);
        assert_eq!(url, "https://api.mistral.ai/v1/chat/completions");
        assert_eq!(header(&headers, "authorization"), Some("Bearer mk-test"));
        assert_eq!(header(&headers, "accept"), Some("text/event-stream"));
        assert_eq!(header(&headers, "x-affinity"), Some("sess-1"));
        assert_eq!(
            keys(&body),
            [
                "model",
                "temperature",
                "max_tokens",
                "stream",
                "messages",
                "tools",
                "tool_choice",
                "reasoning_effort",
                "prompt_mode"
            ]
        );
        assert_eq!(body["temperature"].to_string(), "1");
        assert_eq!(body["tool_choice"], "required");
        assert_eq!(
            body["messages"],
            json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
        );
        let tool = &body["tools"][0];
        assert_eq!(
            keys(&tool["function"]),
            ["name", "description", "strict", "parameters"]
        );
        assert_eq!(tool["function"]["strict"], false);
        // JavaScript's key order (array indices first) and number form.
        assert_eq!(
            keys(&tool["function"]["parameters"]["properties"]),
            ["1", "2", "path"]
        );
        assert_eq!(
            tool["function"]["parameters"]["properties"]["1"]["minimum"].to_string(),
            "1"
        );

        // Nothing optional: no headers but auth, no optional members.
        let (body, headers, _) = encode(&model(), &Context::new(), &key());
        assert_eq!(keys(&body), ["model", "stream", "messages"]);
        assert_eq!(header(&headers, "x-affinity"), None);
        // max_tokens 0 is sent (pi tests `!== undefined`).
        let b = self::body(&model(), &hi(), &key().with_max_tokens(0));
        assert_eq!(b["max_tokens"], 0);
        // A base URL with a trailing slash, or none.
        let slash = Model::new(
            "m",
            api::MISTRAL_CONVERSATIONS,
            "mistral",
            "http://127.0.0.1:9/",
        );
        assert_eq!(
            encode(&slash, &hi(), &key()).2,
            "http://127.0.0.1:9/v1/chat/completions"
        );
        let empty = Model::new("m", api::MISTRAL_CONVERSATIONS, "mistral", "");
        assert_eq!(
            encode(&empty, &hi(), &key()).2,
            "https://api.mistral.ai/v1/chat/completions"
        );
    }

    #[test]
    fn tool_choice_mapping() {
        let ctx = hi();
        let choice =
            |options: StreamOptions| self::body(&model(), &ctx, &options)["tool_choice"].clone();
        for s in ["auto", "none", "any", "required"] {
            assert_eq!(choice(key().with_extra("toolChoice", json!(s))), json!(s));
        }
        assert_eq!(
            choice(key().with_tool_choice(ToolChoice::Required)),
            json!("any")
        );
        assert_eq!(
            choice(key().with_tool_choice(ToolChoice::Auto)),
            json!("auto")
        );
        let named = json!({"type": "function", "function": {"name": "read"}});
        assert_eq!(
            choice(key().with_tool_choice(ToolChoice::tool("read"))),
            named
        );
        assert_eq!(choice(key().with_extra("toolChoice", named.clone())), named);
        assert_eq!(
            choice(key().with_extra("toolChoice", json!({"function": {"name": "read", "x": 1}}))),
            named
        );
        for falsy in [json!(null), json!(false), json!(""), json!(0)] {
            assert_eq!(choice(key().with_extra("toolChoice", falsy)), Value::Null);
        }
        for bad in [json!("sometimes"), json!({"name": "read"}), json!(3)] {
            let err =
                build_request(&model(), &ctx, &key().with_extra("toolChoice", bad)).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Config, "{err:?}");
        }
        let err =
            build_request(&model(), &ctx, &key().with_extra("promptMode", json!(3))).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
    }

    #[test]
    fn messages_of_every_kind() {
        let ctx = Context::new()
            .with_system_prompt("S")
            .with_message(UserMessage::blocks(vec![
                Content::text("look"),
                Content::image("AAAA", "image/png"),
            ]))
            .with_message(foreign(vec![
                AssistantContent::Thinking(ThinkingContent::new("hmm")),
                AssistantContent::text("ok"),
                AssistantContent::text("  "),
                AssistantContent::tool_call(
                    "call_abc|fc_1",
                    "read",
                    json!({"path": "a", "n": 1.0}),
                ),
            ]))
            .with_message(ToolResultMessage::new(
                "call_abc|fc_1",
                "read",
                vec![
                    Content::text(" A "),
                    Content::text("B"),
                    Content::image("BBBB", "image/jpeg"),
                ],
                true,
            ))
            .with_message(UserMessage::text("next"))
            .with_message(
                AssistantMessage::new(
                    api::MISTRAL_CONVERSATIONS,
                    "mistral",
                    "mistral-large-latest",
                )
                .with_content(vec![
                    AssistantContent::Thinking(ThinkingContent::new("think")),
                    AssistantContent::text("said"),
                ]),
            )
            .with_message(UserMessage::blocks(vec![]));
        let b = body(&model(), &ctx, &key());
        assert_eq!(
            b["messages"],
            json!([
                {"role": "system", "content": "S"},
                {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": "data:image/png;base64,AAAA"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "hmm"}, {"type": "text", "text": "ok"}],
                 "tool_calls": [{"id": "j6ob6a1or", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\",\"n\":1}"}, "index": 0}],
                 "prefix": false},
                {"role": "tool", "content": [{"type": "text", "text": "[tool error] A \nB"}, {"type": "image_url", "image_url": "data:image/jpeg;base64,BBBB"}],
                 "tool_call_id": "j6ob6a1or", "name": "read"},
                {"role": "user", "content": "next"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "think"}]}, {"type": "text", "text": "said"}], "prefix": false}
            ])
        );
        assert_eq!(
            keys(&b["messages"][2]),
            ["role", "content", "tool_calls", "prefix"]
        );
        assert_eq!(
            keys(&b["messages"][3]),
            ["role", "content", "tool_call_id", "name"]
        );

        // A text-only model: placeholders instead of images.
        let text_only = model().with_input(vec![InputModality::Text]);
        let b = body(&text_only, &ctx, &key());
        assert_eq!(
            b["messages"][1]["content"],
            json!([{"type": "text", "text": "look"}, {"type": "text", "text": USER_IMAGE_OMITTED}])
        );
        assert_eq!(
            b["messages"][3]["content"],
            json!([{"type": "text", "text": "[tool error] A \nB\n(tool image omitted: model does not support images)"}])
        );
    }

    #[test]
    fn tool_result_texts() {
        assert_eq!(tool_result_text(" x ", false, true, false), "x");
        assert_eq!(
            tool_result_text("x", true, false, false),
            "x\n[tool image omitted: model does not support images]"
        );
        assert_eq!(
            tool_result_text("", true, true, false),
            "(see attached image)"
        );
        assert_eq!(
            tool_result_text("", true, true, true),
            "[tool error] (see attached image)"
        );
        assert_eq!(
            tool_result_text(" ", true, false, false),
            "(image omitted: model does not support images)"
        );
        assert_eq!(
            tool_result_text("", true, false, true),
            "[tool error] (image omitted: model does not support images)"
        );
        assert_eq!(
            tool_result_text("\u{feff}", false, true, false),
            "(no tool output)"
        );
        assert_eq!(
            tool_result_text("", false, true, true),
            "[tool error] (no tool output)"
        );
        // U+0085 is not JavaScript whitespace.
        assert_eq!(tool_result_text("\u{85}", false, true, false), "\u{85}");
    }

    #[test]
    fn empty_assistant_messages_are_dropped() {
        let ctx = Context::new()
            .with_message(UserMessage::text("go"))
            .with_message(
                AssistantMessage::new(
                    api::MISTRAL_CONVERSATIONS,
                    "mistral",
                    "mistral-large-latest",
                )
                .with_content(vec![
                    AssistantContent::text(" "),
                    AssistantContent::Thinking(ThinkingContent::new("\n")),
                ]),
            )
            .with_message(UserMessage::text("again"));
        assert_eq!(
            body(&model(), &ctx, &key())["messages"],
            json!([{"role": "user", "content": "go"}, {"role": "user", "content": "again"}])
        );
    }

    #[test]
    fn blocks_of_unknown_types_are_not_sent() {
        let model = model();
        let (with, without) =
            crate::providers::transform::contexts_with_and_without_unknown_blocks(&model);
        let body = |c: &Context| body(&model, c, &key());
        assert!(!body(&with).to_string().contains("futureBlock"));
        assert_eq!(body(&with), body(&without));
    }

    #[test]
    fn missing_key() {
        let model = Model::new(
            "m",
            api::MISTRAL_CONVERSATIONS,
            "pi-test-no-such-provider",
            "http://127.0.0.1:9",
        );
        let err = build_request(&model, &hi(), &StreamOptions::new()).unwrap_err();
        assert!(err.is_auth());
        assert_eq!(
            err.message(),
            "No API key for provider: pi-test-no-such-provider"
        );
        let (_, headers, _) = encode(&model.with_keyless(true), &hi(), &StreamOptions::new());
        assert_eq!(header(&headers, "authorization"), None);
    }
}
