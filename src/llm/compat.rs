//! Typed `compat` settings: what a model's `compat` object (pi's `models.json`) may set for
//! its api, by pi's names.
//!
//! [`Model::compat`] stays the JSON pi wrote, so a `models.json` or a session reads and writes
//! unchanged; these types are how Rust code writes it
//! ([`Model::with_compat`](crate::Model::with_compat) takes them) and how a provider reads it
//! ([`OpenAiCompletionsCompatSettings::of`] and the others). Reading is lenient, as pi's is: a
//! value of the wrong type is ignored (the detected default stays) and a key the api does not
//! read is kept in `other`; both are reported as `tracing` warnings (target
//! `pi_engine::compat`), so a typo shows instead of silently doing nothing.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::llm::model::{Model, api};

/// The request field that carries the output token limit (`compat.maxTokensField`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MaxTokensField {
    /// `max_completion_tokens` (OpenAI's current name).
    MaxCompletionTokens,
    /// `max_tokens` (older servers: chutes, Moonshot, Cloudflare AI Gateway, llama.cpp's
    /// server before it learnt the new name).
    MaxTokens,
}

impl MaxTokensField {
    /// The JSON field name.
    pub fn as_str(self) -> &'static str {
        match self {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        }
    }

    fn from_json(value: &Value) -> Option<Self> {
        match value.as_str()? {
            "max_completion_tokens" => Some(MaxTokensField::MaxCompletionTokens),
            "max_tokens" => Some(MaxTokensField::MaxTokens),
            _ => None,
        }
    }
}

/// How a reasoning level is asked for (`compat.thinkingFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThinkingFormat {
    /// `reasoning_effort: "<level>"` (when `supportsReasoningEffort`).
    OpenAi,
    /// `reasoning: {effort}`, `{effort: "none"}` when off (OpenRouter).
    OpenRouter,
    /// `thinking: {type: "enabled" | "disabled"}` plus `reasoning_effort` (DeepSeek).
    DeepSeek,
    /// `enable_thinking: bool` (z.ai).
    Zai,
    /// `enable_thinking: bool` (Qwen).
    Qwen,
    /// `chat_template_kwargs: {enable_thinking, preserve_thinking: true}` (Qwen through
    /// vLLM/SGLang chat templates).
    QwenChatTemplate,
}

impl ThinkingFormat {
    /// pi's name (`openai`, `openrouter`, `deepseek`, `zai`, `qwen`, `qwen-chat-template`).
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingFormat::OpenAi => "openai",
            ThinkingFormat::OpenRouter => "openrouter",
            ThinkingFormat::DeepSeek => "deepseek",
            ThinkingFormat::Zai => "zai",
            ThinkingFormat::Qwen => "qwen",
            ThinkingFormat::QwenChatTemplate => "qwen-chat-template",
        }
    }

    /// pi's name back, or `None` for a name pi does not know.
    pub fn from_name(name: &str) -> Option<ThinkingFormat> {
        Some(match name {
            "openai" => ThinkingFormat::OpenAi,
            "openrouter" => ThinkingFormat::OpenRouter,
            "deepseek" => ThinkingFormat::DeepSeek,
            "zai" => ThinkingFormat::Zai,
            "qwen" => ThinkingFormat::Qwen,
            "qwen-chat-template" => ThinkingFormat::QwenChatTemplate,
            _ => return None,
        })
    }

    /// A string pi does not know reads as [`OpenAi`](Self::OpenAi), which is what pi does
    /// with it (its other formats are each tested by name).
    fn from_json(value: &Value) -> Option<Self> {
        let name = value.as_str()?;
        Some(ThinkingFormat::from_name(name).unwrap_or_else(|| {
            tracing::warn!(
                target: "pi_engine::compat",
                key = "thinkingFormat",
                value = name,
                "unknown thinking format, read as \"openai\" (as pi does)"
            );
            ThinkingFormat::OpenAi
        }))
    }
}

/// Where prompt-cache markers go, besides OpenAI's automatic caching
/// (`compat.cacheControlFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheControlFormat {
    /// Anthropic-style `cache_control: {type: "ephemeral"}` on the system prompt, the last
    /// tool and the last user or assistant text (Claude through OpenRouter).
    Anthropic,
    /// No markers: any other string set in `compat`, which pi reads so (it tests for
    /// `anthropic` only). Written back as `"none"`.
    None,
}

impl CacheControlFormat {
    /// pi's name (`anthropic`), or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheControlFormat::Anthropic => "anthropic",
            CacheControlFormat::None => "none",
        }
    }

    fn from_json(value: &Value) -> Option<Self> {
        Some(match value.as_str()? {
            "anthropic" => CacheControlFormat::Anthropic,
            _ => CacheControlFormat::None,
        })
    }
}

macro_rules! as_str_serialize {
    ($($ty:ty),*) => {$(
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    )*};
}
as_str_serialize!(MaxTokensField, ThinkingFormat, CacheControlFormat);

/// Reads one kind of compat value from JSON, `None` when it has another type.
trait FromCompat: Sized {
    fn from_compat(value: &Value) -> Option<Self>;
}

impl FromCompat for bool {
    fn from_compat(value: &Value) -> Option<Self> {
        value.as_bool()
    }
}

impl FromCompat for Value {
    fn from_compat(value: &Value) -> Option<Self> {
        Some(value.clone())
    }
}

impl FromCompat for MaxTokensField {
    fn from_compat(value: &Value) -> Option<Self> {
        MaxTokensField::from_json(value)
    }
}

impl FromCompat for ThinkingFormat {
    fn from_compat(value: &Value) -> Option<Self> {
        ThinkingFormat::from_json(value)
    }
}

impl FromCompat for CacheControlFormat {
    fn from_compat(value: &Value) -> Option<Self> {
        CacheControlFormat::from_json(value)
    }
}

/// One api's compat settings: a struct of optional fields by pi's names, `other` for the
/// keys it does not read, lenient reading, builder methods, and `Into<Value>`.
macro_rules! compat_settings {
    (
        $(#[$meta:meta])*
        $name:ident for $api:expr;
        $( $(#[$fdoc:meta])* $key:literal => $field:ident: $ty:ty, $setter:ident; )*
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize)]
        #[non_exhaustive]
        pub struct $name {
            $(
                $(#[$fdoc])*
                #[serde(rename = $key, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
            /// Keys the api does not read, kept as they were (and written back).
            #[serde(flatten)]
            pub other: Map<String, Value>,
        }

        impl $name {
            /// The api these settings belong to.
            pub const API: &'static str = $api;
            /// pi's names of the keys the api reads.
            pub const KEYS: &'static [&'static str] = &[$($key),*];

            /// Nothing set: every value is detected.
            pub fn new() -> Self {
                Self::default()
            }

            /// Reads a `compat` object: `null` is the same as unset; a value of the wrong
            /// type is ignored and a key the api does not read goes to `other`, each with a
            /// `tracing` warning. Anything but an object reads as nothing set.
            pub fn from_json(value: &Value) -> Self {
                let mut out = Self::default();
                let Some(map) = value.as_object() else {
                    if !value.is_null() {
                        tracing::warn!(target: "pi_engine::compat", api = $api, "compat is not an object, ignored");
                    }
                    return out;
                };
                for (key, value) in map {
                    if value.is_null() {
                        continue;
                    }
                    match key.as_str() {
                        $(
                            $key => match <$ty as FromCompat>::from_compat(value) {
                                Some(v) => out.$field = Some(v),
                                None => wrong_type($api, key, value),
                            },
                        )*
                        _ => {
                            tracing::warn!(
                                target: "pi_engine::compat",
                                api = $api,
                                key = key.as_str(),
                                "compat key not read by this api, ignored"
                            );
                            out.other.insert(key.clone(), value.clone());
                        }
                    }
                }
                out
            }

            /// The settings of `model.compat` (nothing set when it has none).
            pub fn of(model: &Model) -> Self {
                model.compat.as_ref().map(Self::from_json).unwrap_or_default()
            }

            $(
                #[doc = concat!("Sets `", $key, "`.")]
                #[must_use]
                pub fn $setter(mut self, value: $ty) -> Self {
                    self.$field = Some(value);
                    self
                }
            )*
        }

        impl From<$name> for Value {
            fn from(settings: $name) -> Value {
                // Every field serializes to JSON (strings, booleans, JSON values).
                serde_json::to_value(settings).unwrap_or_default()
            }
        }
    };
}

fn wrong_type(api: &str, key: &str, value: &Value) {
    tracing::warn!(
        target: "pi_engine::compat",
        api,
        key,
        value = %value,
        "compat value of the wrong type, ignored (the detected default stays)"
    );
}

compat_settings! {
    /// The `compat` settings of `openai-completions` (pi's `OpenAICompletionsCompat`): each
    /// one set replaces what is detected from the provider and base URL
    /// ([`OpenAiCompletionsCompat`](crate::providers::openai_completions::OpenAiCompletionsCompat)
    /// resolves both).
    ///
    /// ```
    /// use pi_engine::Model;
    /// use pi_engine::llm::compat::{MaxTokensField, OpenAiCompletionsCompatSettings};
    ///
    /// // llama.cpp's server: the older token field, no `store`, no `developer` role.
    /// let local = Model::new("qwen3", "openai-completions", "llama.cpp", "http://127.0.0.1:8080/v1")
    ///     .with_keyless(true)
    ///     .with_compat(
    ///         OpenAiCompletionsCompatSettings::new()
    ///             .with_max_tokens_field(MaxTokensField::MaxTokens)
    ///             .with_supports_store(false)
    ///             .with_supports_developer_role(false),
    ///     );
    /// assert_eq!(local.compat.as_ref().unwrap()["maxTokensField"], "max_tokens"); // pi's JSON
    /// let read = OpenAiCompletionsCompatSettings::of(&local);
    /// assert_eq!(read.supports_store, Some(false));
    /// ```
    OpenAiCompletionsCompatSettings for api::OPENAI_COMPLETIONS;
    /// Send `store: false`.
    "supportsStore" => supports_store: bool, with_supports_store;
    /// A reasoning model's system prompt goes as role `developer` (else `system`).
    "supportsDeveloperRole" => supports_developer_role: bool, with_supports_developer_role;
    /// `reasoning_effort` may be sent.
    "supportsReasoningEffort" => supports_reasoning_effort: bool, with_supports_reasoning_effort;
    /// Ask for usage in the stream (`stream_options.include_usage`).
    "supportsUsageInStreaming" => supports_usage_in_streaming: bool, with_supports_usage_in_streaming;
    /// The field of the output token limit.
    "maxTokensField" => max_tokens_field: MaxTokensField, with_max_tokens_field;
    /// Tool results carry the tool's `name`.
    "requiresToolResultName" => requires_tool_result_name: bool, with_requires_tool_result_name;
    /// A user message right after tool results needs an assistant message between them.
    "requiresAssistantAfterToolResult" => requires_assistant_after_tool_result: bool, with_requires_assistant_after_tool_result;
    /// Replayed thinking is sent as a text part.
    "requiresThinkingAsText" => requires_thinking_as_text: bool, with_requires_thinking_as_text;
    /// Every replayed assistant message of a reasoning model carries `reasoning_content`.
    "requiresReasoningContentOnAssistantMessages" => requires_reasoning_content_on_assistant_messages: bool, with_requires_reasoning_content_on_assistant_messages;
    /// How reasoning is asked for.
    "thinkingFormat" => thinking_format: ThinkingFormat, with_thinking_format;
    /// OpenRouter's provider routing preferences (sent as `provider`, only to openrouter.ai).
    "openRouterRouting" => open_router_routing: Value, with_open_router_routing;
    /// Vercel AI Gateway routing (`{only, order}`, only to ai-gateway.vercel.sh).
    "vercelGatewayRouting" => vercel_gateway_routing: Value, with_vercel_gateway_routing;
    /// z.ai: stream tool-call arguments (`tool_stream: true`).
    "zaiToolStream" => zai_tool_stream: bool, with_zai_tool_stream;
    /// Function tools may carry `strict: false`.
    "supportsStrictMode" => supports_strict_mode: bool, with_supports_strict_mode;
    /// Explicit prompt-cache markers.
    "cacheControlFormat" => cache_control_format: CacheControlFormat, with_cache_control_format;
    /// Send the session id in affinity headers.
    "sendSessionAffinityHeaders" => send_session_affinity_headers: bool, with_send_session_affinity_headers;
    /// Long cache retention (`24h` / `1h`) is supported.
    "supportsLongCacheRetention" => supports_long_cache_retention: bool, with_supports_long_cache_retention;
}

compat_settings! {
    /// The `compat` settings of `openai-responses` (pi's `OpenAIResponsesCompat`). Unset
    /// means `true` for both.
    ///
    /// ```
    /// use pi_engine::llm::compat::OpenAiResponsesCompatSettings;
    ///
    /// let compat = OpenAiResponsesCompatSettings::from_json(&serde_json::json!({"sendSessionIdHeader": false}));
    /// assert_eq!(compat.send_session_id_header, Some(false));
    /// ```
    OpenAiResponsesCompatSettings for api::OPENAI_RESPONSES;
    /// Send the `session_id` cache-affinity header when caching.
    "sendSessionIdHeader" => send_session_id_header: bool, with_send_session_id_header;
    /// `prompt_cache_retention: "24h"` is supported.
    "supportsLongCacheRetention" => supports_long_cache_retention: bool, with_supports_long_cache_retention;
}

compat_settings! {
    /// The `compat` settings of `anthropic-messages` (pi's `AnthropicMessagesCompat`). Unset
    /// means `true` for both.
    ///
    /// ```
    /// use pi_engine::llm::compat::AnthropicMessagesCompatSettings;
    ///
    /// let gateway = AnthropicMessagesCompatSettings::new().with_supports_eager_tool_input_streaming(false);
    /// assert_eq!(serde_json::Value::from(gateway), serde_json::json!({"supportsEagerToolInputStreaming": false}));
    /// ```
    AnthropicMessagesCompatSettings for api::ANTHROPIC_MESSAGES;
    /// Tools may carry `eager_input_streaming` (else the older fine-grained streaming beta).
    "supportsEagerToolInputStreaming" => supports_eager_tool_input_streaming: bool, with_supports_eager_tool_input_streaming;
    /// `cache_control.ttl: "1h"` is supported.
    "supportsLongCacheRetention" => supports_long_cache_retention: bool, with_supports_long_cache_retention;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_round_trip_pis_json() {
        let json = json!({
            "supportsStore": false,
            "maxTokensField": "max_tokens",
            "thinkingFormat": "qwen-chat-template",
            "cacheControlFormat": "anthropic",
            "openRouterRouting": {"order": ["a"]},
            "somethingNew": 1
        });
        let read = OpenAiCompletionsCompatSettings::from_json(&json);
        assert_eq!(read.supports_store, Some(false));
        assert_eq!(read.max_tokens_field, Some(MaxTokensField::MaxTokens));
        assert_eq!(read.thinking_format, Some(ThinkingFormat::QwenChatTemplate));
        assert_eq!(read.other["somethingNew"], 1);
        assert_eq!(Value::from(read), json, "written back unchanged");
    }

    #[test]
    fn wrong_types_are_ignored_and_unknown_names_read_as_pi_reads_them() {
        let read = OpenAiCompletionsCompatSettings::from_json(&json!({
            "supportsStore": "no",
            "maxTokensField": 3,
            "thinkingFormat": "something-new",
            "cacheControlFormat": "off",
            "zaiToolStream": null
        }));
        assert_eq!(read.supports_store, None);
        assert_eq!(read.max_tokens_field, None);
        assert_eq!(read.thinking_format, Some(ThinkingFormat::OpenAi));
        assert_eq!(read.cache_control_format, Some(CacheControlFormat::None));
        assert_eq!(read.zai_tool_stream, None);
        assert!(read.other.is_empty());
    }

    #[test]
    fn every_key_has_its_field() {
        let all = OpenAiCompletionsCompatSettings::KEYS;
        assert_eq!(all.len(), 17, "pi's 17 openai-completions flags");
        let full: Map<String, Value> = all
            .iter()
            .map(|k| {
                let v = match *k {
                    "maxTokensField" => json!("max_tokens"),
                    "thinkingFormat" => json!("zai"),
                    "cacheControlFormat" => json!("anthropic"),
                    "openRouterRouting" | "vercelGatewayRouting" => json!({}),
                    _ => json!(true),
                };
                ((*k).to_owned(), v)
            })
            .collect();
        let read = OpenAiCompletionsCompatSettings::from_json(&Value::Object(full.clone()));
        assert!(read.other.is_empty());
        assert_eq!(Value::from(read), Value::Object(full));
        assert_eq!(AnthropicMessagesCompatSettings::KEYS.len(), 2);
        assert_eq!(OpenAiResponsesCompatSettings::KEYS.len(), 2);
    }

    #[test]
    fn not_an_object_is_nothing_set() {
        assert_eq!(
            AnthropicMessagesCompatSettings::from_json(&json!([1])),
            AnthropicMessagesCompatSettings::new()
        );
    }
}
