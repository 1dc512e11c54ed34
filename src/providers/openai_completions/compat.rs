//! What an OpenAI-compatible server accepts: pi's 17 `compat` flags, detected from the
//! model's provider and base URL and overridden field by field by `model.compat` (read as
//! [`OpenAiCompletionsCompatSettings`]).

use serde_json::{Map, Value};

use crate::llm::model::Model;

use crate::llm::compat::OpenAiCompletionsCompatSettings;
pub use crate::llm::compat::{CacheControlFormat, MaxTokensField, ThinkingFormat};

/// What an OpenAI-compatible server accepts, resolved as pi resolves it: detected from the
/// model's provider and base URL ([`detect`](Self::detect)), then each field set in
/// `model.compat` (pi's camelCase names, e.g. `{"supportsDeveloperRole": false}`) replaces
/// the detected one ([`for_model`](Self::for_model)). A value of the wrong type is ignored.
///
/// | field (`model.compat` name) | effect | detected |
/// |---|---|---|
/// | `supportsStore` | `store: false` | false for Cerebras, xAI, chutes, DeepSeek, z.ai, Moonshot, opencode, Cloudflare |
/// | `supportsDeveloperRole` | the system prompt of a reasoning model has role `developer` | same as `supportsStore` |
/// | `supportsReasoningEffort` | `reasoning_effort` may be sent | false for xAI, z.ai, Moonshot, Cloudflare AI Gateway |
/// | `supportsUsageInStreaming` | `stream_options: {include_usage: true}` | true |
/// | `maxTokensField` | `max_completion_tokens` or `max_tokens` | `max_tokens` for chutes, Moonshot, Cloudflare AI Gateway |
/// | `requiresToolResultName` | tool messages carry the tool's `name` | false |
/// | `requiresAssistantAfterToolResult` | an assistant message between tool results and a user message | false |
/// | `requiresThinkingAsText` | replayed thinking is a text part | false |
/// | `requiresReasoningContentOnAssistantMessages` | `reasoning_content: ""` on replayed assistant messages | DeepSeek |
/// | `thinkingFormat` | how reasoning is asked for ([`ThinkingFormat`]) | DeepSeek, z.ai, OpenRouter by provider or URL; else `openai` |
/// | `openRouterRouting` | sent as `provider` to openrouter.ai | none |
/// | `vercelGatewayRouting` | `{only, order}` sent as `providerOptions.gateway` to Vercel's AI Gateway | none |
/// | `zaiToolStream` | `tool_stream: true` | false |
/// | `supportsStrictMode` | `strict: false` on function tools | false for Moonshot, Cloudflare AI Gateway |
/// | `cacheControlFormat` | [`CacheControlFormat`] | `anthropic` for OpenRouter's `anthropic/*` models |
/// | `sendSessionAffinityHeaders` | `session_id`, `x-client-request-id`, `x-session-affinity` headers | false |
/// | `supportsLongCacheRetention` | `prompt_cache_retention: "24h"` / `ttl: "1h"` for long retention | false for Cloudflare |
///
/// ```
/// use pi_engine::Model;
/// use pi_engine::providers::openai_completions::{MaxTokensField, OpenAiCompletionsCompat};
///
/// let kimi = Model::new("kimi-k2", "openai-completions", "moonshotai", "https://api.moonshot.ai/v1");
/// let compat = OpenAiCompletionsCompat::for_model(&kimi);
/// assert_eq!(compat.max_tokens_field, MaxTokensField::MaxTokens);
/// assert!(!compat.supports_store && !compat.supports_strict_mode);
///
/// // model.compat wins, field by field.
/// let local = Model::new("qwen3", "openai-completions", "vllm", "http://localhost:8000/v1")
///     .with_compat(serde_json::json!({"supportsDeveloperRole": false, "thinkingFormat": "qwen-chat-template"}));
/// let compat = OpenAiCompletionsCompat::for_model(&local);
/// assert!(!compat.supports_developer_role && compat.supports_store);
/// assert_eq!(compat.thinking_format.as_str(), "qwen-chat-template");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OpenAiCompletionsCompat {
    /// Send `store: false`.
    pub supports_store: bool,
    /// A reasoning model's system prompt goes as role `developer` (else `system`).
    pub supports_developer_role: bool,
    /// `reasoning_effort` may be sent (for [`ThinkingFormat::OpenAi`]).
    pub supports_reasoning_effort: bool,
    /// Ask for usage in the stream (`stream_options.include_usage`).
    pub supports_usage_in_streaming: bool,
    /// The field of the output token limit.
    pub max_tokens_field: MaxTokensField,
    /// Tool results carry the tool's `name`.
    pub requires_tool_result_name: bool,
    /// A user message right after tool results needs an assistant message between them.
    pub requires_assistant_after_tool_result: bool,
    /// Replayed thinking is sent as a text part instead of a reasoning field.
    pub requires_thinking_as_text: bool,
    /// Every replayed assistant message of a reasoning model carries `reasoning_content`.
    pub requires_reasoning_content_on_assistant_messages: bool,
    /// How reasoning is asked for.
    pub thinking_format: ThinkingFormat,
    /// OpenRouter's provider routing preferences, sent as `provider` (only to openrouter.ai).
    pub open_router_routing: Option<Value>,
    /// Vercel AI Gateway routing (`{only, order}`), sent as `providerOptions.gateway` (only
    /// to ai-gateway.vercel.sh).
    pub vercel_gateway_routing: Option<Value>,
    /// z.ai: stream tool-call arguments (`tool_stream: true`).
    pub zai_tool_stream: bool,
    /// Function tools may carry `strict: false`.
    pub supports_strict_mode: bool,
    /// Explicit prompt-cache markers, when the server needs them.
    pub cache_control_format: Option<CacheControlFormat>,
    /// Send the session id in affinity headers so a load balancer keeps the cache warm.
    pub send_session_affinity_headers: bool,
    /// Long cache retention (`24h` / `1h`) is supported.
    pub supports_long_cache_retention: bool,
}

impl OpenAiCompletionsCompat {
    /// What pi detects from the model's provider id and base URL alone.
    pub fn detect(model: &Model) -> Self {
        let provider = model.provider.as_str();
        let url = model.base_url.as_str();
        let is_zai = provider == "zai" || url.contains("api.z.ai");
        let is_moonshot = provider == "moonshotai"
            || provider == "moonshotai-cn"
            || url.contains("api.moonshot.");
        let is_workers_ai =
            provider == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
        let is_ai_gateway =
            provider == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
        let is_grok = provider == "xai" || url.contains("api.x.ai");
        let is_deepseek = provider == "deepseek" || url.contains("deepseek.com");
        let non_standard = provider == "cerebras"
            || url.contains("cerebras.ai")
            || is_grok
            || url.contains("chutes.ai")
            || url.contains("deepseek.com")
            || is_zai
            || is_moonshot
            || provider == "opencode"
            || url.contains("opencode.ai")
            || is_workers_ai
            || is_ai_gateway;
        let max_tokens = url.contains("chutes.ai") || is_moonshot || is_ai_gateway;
        let thinking_format = if is_deepseek {
            ThinkingFormat::DeepSeek
        } else if is_zai {
            ThinkingFormat::Zai
        } else if provider == "openrouter" || url.contains("openrouter.ai") {
            ThinkingFormat::OpenRouter
        } else {
            ThinkingFormat::OpenAi
        };
        OpenAiCompletionsCompat {
            supports_store: !non_standard,
            supports_developer_role: !non_standard,
            supports_reasoning_effort: !is_grok && !is_zai && !is_moonshot && !is_ai_gateway,
            supports_usage_in_streaming: true,
            max_tokens_field: if max_tokens {
                MaxTokensField::MaxTokens
            } else {
                MaxTokensField::MaxCompletionTokens
            },
            requires_tool_result_name: false,
            requires_assistant_after_tool_result: false,
            requires_thinking_as_text: false,
            requires_reasoning_content_on_assistant_messages: is_deepseek,
            thinking_format,
            open_router_routing: None,
            vercel_gateway_routing: None,
            zai_tool_stream: false,
            supports_strict_mode: !is_moonshot && !is_ai_gateway,
            cache_control_format: (provider == "openrouter" && model.id.starts_with("anthropic/"))
                .then_some(CacheControlFormat::Anthropic),
            send_session_affinity_headers: false,
            supports_long_cache_retention: !(is_workers_ai || is_ai_gateway),
        }
    }

    /// [`detect`](Self::detect), then every field `model.compat` sets (pi's `getCompat`),
    /// read as [`OpenAiCompletionsCompatSettings`] (a value of the wrong type is ignored, a
    /// key this api does not read is logged).
    pub fn for_model(model: &Model) -> Self {
        let mut compat = Self::detect(model);
        let set = OpenAiCompletionsCompatSettings::of(model);
        let flag = |value: Option<bool>, field: &mut bool| {
            if let Some(b) = value {
                *field = b;
            }
        };
        flag(set.supports_store, &mut compat.supports_store);
        flag(
            set.supports_developer_role,
            &mut compat.supports_developer_role,
        );
        flag(
            set.supports_reasoning_effort,
            &mut compat.supports_reasoning_effort,
        );
        flag(
            set.supports_usage_in_streaming,
            &mut compat.supports_usage_in_streaming,
        );
        flag(
            set.requires_tool_result_name,
            &mut compat.requires_tool_result_name,
        );
        flag(
            set.requires_assistant_after_tool_result,
            &mut compat.requires_assistant_after_tool_result,
        );
        flag(
            set.requires_thinking_as_text,
            &mut compat.requires_thinking_as_text,
        );
        flag(
            set.requires_reasoning_content_on_assistant_messages,
            &mut compat.requires_reasoning_content_on_assistant_messages,
        );
        flag(set.zai_tool_stream, &mut compat.zai_tool_stream);
        flag(set.supports_strict_mode, &mut compat.supports_strict_mode);
        flag(
            set.send_session_affinity_headers,
            &mut compat.send_session_affinity_headers,
        );
        flag(
            set.supports_long_cache_retention,
            &mut compat.supports_long_cache_retention,
        );
        if let Some(field) = set.max_tokens_field {
            compat.max_tokens_field = field;
        }
        if let Some(format) = set.thinking_format {
            compat.thinking_format = format;
        }
        if let Some(format) = set.cache_control_format {
            compat.cache_control_format =
                (format == CacheControlFormat::Anthropic).then_some(format);
        }
        compat.open_router_routing = set.open_router_routing;
        compat.vercel_gateway_routing = set.vercel_gateway_routing;
        compat
    }
}

/// JavaScript truthiness of a JSON value (pi tests option values with `if (x)`).
pub(super) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `providerOptions.gateway` for Vercel's AI Gateway: `only` and `order` when set.
pub(super) fn vercel_gateway_options(routing: &Value) -> Option<Value> {
    let mut gateway = Map::new();
    for key in ["only", "order"] {
        if let Some(v) = routing.get(key).filter(|v| truthy(v)) {
            gateway.insert(key.to_owned(), v.clone());
        }
    }
    (!gateway.is_empty()).then_some(Value::Object(gateway))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn detect(provider: &str, url: &str) -> OpenAiCompletionsCompat {
        OpenAiCompletionsCompat::detect(&Model::new("m", "openai-completions", provider, url))
    }

    /// The fields that differ between families: store, developer role, reasoning effort,
    /// token field, reasoning_content on replay, thinking format, strict mode, long cache.
    type Shape = (
        bool,
        bool,
        bool,
        &'static str,
        bool,
        &'static str,
        bool,
        bool,
    );

    fn shape(c: &OpenAiCompletionsCompat) -> Shape {
        (
            c.supports_store,
            c.supports_developer_role,
            c.supports_reasoning_effort,
            c.max_tokens_field.as_str(),
            c.requires_reasoning_content_on_assistant_messages,
            c.thinking_format.as_str(),
            c.supports_strict_mode,
            c.supports_long_cache_retention,
        )
    }

    #[test]
    fn every_family_pi_detects() {
        let standard = (
            true,
            true,
            true,
            "max_completion_tokens",
            false,
            "openai",
            true,
            true,
        );
        let non_standard = (
            false,
            false,
            true,
            "max_completion_tokens",
            false,
            "openai",
            true,
            true,
        );
        let cases: &[(&str, &str, Shape)] = &[
            ("openai", "https://api.openai.com/v1", standard),
            ("groq", "https://api.groq.com/openai/v1", standard),
            ("mistral", "https://api.mistral.ai/v1", standard),
            ("ollama", "http://localhost:11434/v1", standard),
            ("lmstudio", "http://localhost:1234/v1", standard),
            ("vllm", "http://localhost:8000/v1", standard),
            ("llama.cpp", "http://127.0.0.1:8080/v1", standard),
            ("cerebras", "https://example.test/v1", non_standard),
            ("custom", "https://api.cerebras.ai/v1", non_standard),
            ("opencode", "https://example.test/v1", non_standard),
            ("custom", "https://opencode.ai/zen/v1", non_standard),
            (
                "xai",
                "https://example.test/v1",
                (
                    false,
                    false,
                    false,
                    "max_completion_tokens",
                    false,
                    "openai",
                    true,
                    true,
                ),
            ),
            (
                "custom",
                "https://api.x.ai/v1",
                (
                    false,
                    false,
                    false,
                    "max_completion_tokens",
                    false,
                    "openai",
                    true,
                    true,
                ),
            ),
            (
                "custom",
                "https://llm.chutes.ai/v1",
                (
                    false,
                    false,
                    true,
                    "max_tokens",
                    false,
                    "openai",
                    true,
                    true,
                ),
            ),
            (
                "deepseek",
                "https://example.test/v1",
                (
                    true,
                    true,
                    true,
                    "max_completion_tokens",
                    true,
                    "deepseek",
                    true,
                    true,
                ),
            ),
            (
                "custom",
                "https://api.deepseek.com/v1",
                (
                    false,
                    false,
                    true,
                    "max_completion_tokens",
                    true,
                    "deepseek",
                    true,
                    true,
                ),
            ),
            (
                "zai",
                "https://example.test/v1",
                (
                    false,
                    false,
                    false,
                    "max_completion_tokens",
                    false,
                    "zai",
                    true,
                    true,
                ),
            ),
            (
                "custom",
                "https://api.z.ai/api/paas/v4",
                (
                    false,
                    false,
                    false,
                    "max_completion_tokens",
                    false,
                    "zai",
                    true,
                    true,
                ),
            ),
            (
                "moonshotai",
                "https://example.test/v1",
                (
                    false,
                    false,
                    false,
                    "max_tokens",
                    false,
                    "openai",
                    false,
                    true,
                ),
            ),
            (
                "moonshotai-cn",
                "https://example.test/v1",
                (
                    false,
                    false,
                    false,
                    "max_tokens",
                    false,
                    "openai",
                    false,
                    true,
                ),
            ),
            (
                "custom",
                "https://api.moonshot.cn/v1",
                (
                    false,
                    false,
                    false,
                    "max_tokens",
                    false,
                    "openai",
                    false,
                    true,
                ),
            ),
            (
                "openrouter",
                "https://example.test/v1",
                (
                    true,
                    true,
                    true,
                    "max_completion_tokens",
                    false,
                    "openrouter",
                    true,
                    true,
                ),
            ),
            (
                "custom",
                "https://openrouter.ai/api/v1",
                (
                    true,
                    true,
                    true,
                    "max_completion_tokens",
                    false,
                    "openrouter",
                    true,
                    true,
                ),
            ),
            (
                "cloudflare-workers-ai",
                "https://example.test/v1",
                (
                    false,
                    false,
                    true,
                    "max_completion_tokens",
                    false,
                    "openai",
                    true,
                    false,
                ),
            ),
            (
                "custom",
                "https://api.cloudflare.com/client/v4/accounts/x/ai/v1",
                (
                    false,
                    false,
                    true,
                    "max_completion_tokens",
                    false,
                    "openai",
                    true,
                    false,
                ),
            ),
            (
                "cloudflare-ai-gateway",
                "https://example.test/v1",
                (
                    false,
                    false,
                    false,
                    "max_tokens",
                    false,
                    "openai",
                    false,
                    false,
                ),
            ),
            (
                "custom",
                "https://gateway.ai.cloudflare.com/v1/a/g/compat",
                (
                    false,
                    false,
                    false,
                    "max_tokens",
                    false,
                    "openai",
                    false,
                    false,
                ),
            ),
        ];
        for (provider, url, want) in cases {
            let got = detect(provider, url);
            assert_eq!(shape(&got), *want, "{provider} {url}");
            // Never detected, only configured.
            assert!(got.supports_usage_in_streaming);
            assert!(!got.requires_tool_result_name && !got.requires_assistant_after_tool_result);
            assert!(!got.requires_thinking_as_text && !got.zai_tool_stream);
            assert!(!got.send_session_affinity_headers);
            assert_eq!(got.open_router_routing, None);
            assert_eq!(got.vercel_gateway_routing, None);
        }
    }

    #[test]
    fn openrouter_anthropic_models_get_cache_markers() {
        let claude = Model::new(
            "anthropic/claude-sonnet-4.5",
            "openai-completions",
            "openrouter",
            "https://openrouter.ai/api/v1",
        );
        assert_eq!(
            OpenAiCompletionsCompat::detect(&claude).cache_control_format,
            Some(CacheControlFormat::Anthropic)
        );
        // By provider id only, as pi does.
        let by_url = Model::new(
            "anthropic/claude-sonnet-4.5",
            "openai-completions",
            "custom",
            "https://openrouter.ai/api/v1",
        );
        assert_eq!(
            OpenAiCompletionsCompat::detect(&by_url).cache_control_format,
            None
        );
        let gpt = Model::new(
            "openai/gpt-5",
            "openai-completions",
            "openrouter",
            "https://openrouter.ai/api/v1",
        );
        assert_eq!(
            OpenAiCompletionsCompat::detect(&gpt).cache_control_format,
            None
        );
    }

    #[test]
    fn model_compat_overrides_field_by_field() {
        let model = Model::new("m", "openai-completions", "deepseek", "https://x.test/v1")
            .with_compat(json!({
                "supportsStore": false,
                "supportsDeveloperRole": "no",
                "maxTokensField": "max_tokens",
                "thinkingFormat": "qwen",
                "requiresToolResultName": true,
                "requiresAssistantAfterToolResult": true,
                "requiresThinkingAsText": true,
                "requiresReasoningContentOnAssistantMessages": false,
                "supportsUsageInStreaming": false,
                "zaiToolStream": true,
                "supportsStrictMode": false,
                "sendSessionAffinityHeaders": true,
                "supportsLongCacheRetention": false,
                "supportsReasoningEffort": false,
                "cacheControlFormat": "anthropic",
                "openRouterRouting": {"order": ["a"]},
                "vercelGatewayRouting": {"only": ["b"]},
            }));
        let c = OpenAiCompletionsCompat::for_model(&model);
        assert!(!c.supports_store);
        assert!(c.supports_developer_role, "a non-boolean is ignored");
        assert_eq!(c.max_tokens_field, MaxTokensField::MaxTokens);
        assert_eq!(c.thinking_format, ThinkingFormat::Qwen);
        assert!(c.requires_tool_result_name && c.requires_assistant_after_tool_result);
        assert!(c.requires_thinking_as_text);
        assert!(!c.requires_reasoning_content_on_assistant_messages);
        assert!(!c.supports_usage_in_streaming && c.zai_tool_stream);
        assert!(!c.supports_strict_mode && c.send_session_affinity_headers);
        assert!(!c.supports_long_cache_retention && !c.supports_reasoning_effort);
        assert_eq!(c.cache_control_format, Some(CacheControlFormat::Anthropic));
        assert_eq!(c.open_router_routing, Some(json!({"order": ["a"]})));
        assert_eq!(c.vercel_gateway_routing, Some(json!({"only": ["b"]})));

        // Unset fields keep the detected value; unknown formats read as openai.
        let partial = Model::new("m", "openai-completions", "deepseek", "")
            .with_compat(json!({"thinkingFormat": "something-new", "maxTokensField": 3}));
        let c = OpenAiCompletionsCompat::for_model(&partial);
        assert_eq!(c.thinking_format, ThinkingFormat::OpenAi);
        assert_eq!(c.max_tokens_field, MaxTokensField::MaxCompletionTokens);
        assert!(c.requires_reasoning_content_on_assistant_messages);
        assert_eq!(
            OpenAiCompletionsCompat::for_model(&Model::new("m", "x", "deepseek", "")),
            OpenAiCompletionsCompat::detect(&Model::new("m", "x", "deepseek", ""))
        );
    }

    #[test]
    fn truthiness_and_gateway_options() {
        for v in [
            json!(null),
            json!(false),
            json!(0),
            json!(""),
            json!(f64::NAN),
        ] {
            assert!(!truthy(&v), "{v}");
        }
        for v in [json!(true), json!(1), json!("x"), json!([]), json!({})] {
            assert!(truthy(&v), "{v}");
        }
        assert_eq!(vercel_gateway_options(&json!({})), None);
        assert_eq!(vercel_gateway_options(&json!({"only": null})), None);
        assert_eq!(
            vercel_gateway_options(&json!({"order": ["x", "y"], "only": ["x"], "other": 1})),
            Some(json!({"only": ["x"], "order": ["x", "y"]}))
        );
    }
}
