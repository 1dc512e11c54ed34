//! OpenAI Responses (`openai-responses`, `POST {baseUrl}/responses`), as pi-ai 0.73.1 speaks
//! it: the same request bodies and headers, the same events from the same bytes.
//!
//! # Replay
//!
//! * The system prompt is a `developer` message for reasoning models, else `system`.
//! * User text is `input_text`, images `input_image` with `detail: "auto"` (a data URL).
//! * An assistant message becomes items: each thinking block is the reasoning item its
//!   `thinkingSignature` holds, sent back verbatim; each text block a `message` item whose
//!   id comes from its `textSignature` (`{"v":1,"id":…,"phase"?}` or a bare id; `msg_<n>`
//!   without one, `msg_<hash>` when longer than 64 characters); each tool call a
//!   `function_call` whose id is `"<call_id>|<item id>"`. A call made by another model of
//!   the same provider goes without its `fc_` item id (OpenAI pairs those with reasoning
//!   items it no longer has). Thinking of another model is replayed as text.
//! * A tool result is a `function_call_output`; with images (for vision models) its output
//!   is a list of `input_text` and `input_image` parts.
//! * Tool calls of another provider get ids this api accepts: the call id sanitized to
//!   `[A-Za-z0-9_-]` (64 at most), the item id replaced by `fc_<hash>`.
//!
//! # Stream
//!
//! Reasoning items become thinking blocks (from `reasoning_summary_text` or `reasoning_text`
//! deltas; the final text is the summary, its parts joined by a blank line) whose
//! `thinkingSignature` is the whole item as JSON; message items become text blocks
//! (`output_text` and `refusal` deltas) whose `textSignature` is `{"v":1,"id":…,"phase"?}`;
//! `function_call` items become tool calls. Server-side tools (web search, file search, code
//! interpreter, custom tools, local shell, apply_patch, …) are not part of pi's message model
//! and are skipped, as are event types this decoder does not know. Usage (cached tokens
//! apart), the stop reason (`incomplete` is `length`) and the response id come from
//! `response.completed` (or `response.incomplete`); `response.failed` and `error` events end
//! the stream with an error, and so does a stream that ends before its final event.
//!
//! Provider options are read from [`StreamOptions::extra`] by pi's names:
//!
//! | option | type | effect |
//! |---|---|---|
//! | `reasoningEffort` | `minimal`…`xhigh` (or any effort the model takes) | `reasoning.effort` (through the model's `thinkingLevelMap`), with `include: ["reasoning.encrypted_content"]` |
//! | `reasoningSummary` | `auto` / `detailed` / `concise` | `reasoning.summary` (default `auto`) |
//! | `serviceTier` | `auto` / `default` / `flex` / `priority` | `service_tier`; the cost is scaled by the tier the response reports (`flex` ×0.5, `priority` ×2, ×2.5 for gpt-5.5) |
//!
//! A reasoning model called without an effort gets `reasoning: {effort: "none"}` (or the
//! model's `thinkingLevelMap.off`), except on GitHub Copilot or when the map sets `off` to
//! `null`. [`stream_simple`](crate::stream_simple) maps a reasoning level to
//! `reasoningEffort`.
//!
//! Requests carry `store: false`. Prompt caching follows `cacheRetention` (default `short`,
//! or `long` when the environment sets `PI_CACHE_RETENTION=long`): unless it is `none`, the
//! `sessionId` is the `prompt_cache_key` and is sent as the `session_id` (unless the model's
//! `compat.sendSessionIdHeader` is false) and `x-client-request-id` headers; `long` adds
//! `prompt_cache_retention: "24h"` unless `compat.supportsLongCacheRetention` is false.
//! GitHub Copilot gets its routing headers; Cloudflare AI Gateway its own authorization
//! header and the `{VAR}` placeholders of its base URL from the environment.
//!
//! ```no_run
//! use pi_engine::{Context, Model, StreamOptions, UserMessage};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let model = Model::new("gpt-5", "openai-responses", "openai", "https://api.openai.com/v1")
//!     .with_reasoning(true);
//! let context = Context::new().with_message(UserMessage::text("Why is the sky blue?"));
//! let options = StreamOptions::new()
//!     .with_extra("reasoningEffort", "low".into())
//!     .with_extra("serviceTier", "flex".into());
//! let reply = pi_engine::complete(&model, &context, &options).await; // key from OPENAI_API_KEY
//! println!("{}", reply.text());
//! # }
//! ```

use serde_json::{Map, Value};

use crate::llm::compat::OpenAiResponsesCompatSettings;
use crate::llm::error::Error;
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::Context;
use crate::llm::model::{Model, api};
use crate::llm::options::{ApiKey, CacheRetention, OpenAiResponsesOptions, StreamOptions};
use crate::providers::ApiProvider;
use crate::providers::body::{TOOLS, WithTools};
use crate::providers::http::copilot::copilot_headers;
use crate::providers::http::{HttpRequest, cloudflare, stream_http};
use crate::providers::openai_responses_shared::{
    ReasoningOptions, ResponsesDecoder, TierPricing, convert_messages, convert_tools,
    insert_reasoning,
};

const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The providers whose tool-call ids are `call_id|item_id` pairs this api takes as they are.
const TOOL_CALL_PROVIDERS: &[&str] = &["openai", "openai-codex", "opencode"];

/// The OpenAI Responses provider. Registered for `openai-responses` by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAIResponsesProvider;

impl OpenAIResponsesProvider {
    /// The provider.
    pub fn new() -> Self {
        OpenAIResponsesProvider
    }
}

impl ApiProvider for OpenAIResponsesProvider {
    fn api(&self) -> &str {
        api::OPENAI_RESPONSES
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        // Read once: the tier prices the reply, the rest builds the request.
        let opts = options.api_options::<OpenAiResponsesOptions>();
        let requested_tier = opts.as_ref().ok().and_then(|o| o.service_tier.clone());
        let decoder = ResponsesDecoder::new(
            model,
            TierPricing::OpenAi {
                requested: requested_tier,
            },
        );
        stream_http(
            model,
            options,
            opts.and_then(|opts| build_request_with(model, context, options, &opts)),
            decoder,
        )
    }

    /// Refuses a call without a key of its own with pi's `No API key for provider: <name>`
    /// (the raw [`stream`](Self::stream) may fall back to the SDK's variable for the
    /// vendor's own endpoint), then streams with the reasoning level mapped.
    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        crate::llm::env_keys::stream_simple_with_own_key(self, model, context, options)
    }
}

/// pi's `resolveCacheRetention`: the option, else `long` when `PI_CACHE_RETENTION=long`.
pub(crate) fn cache_retention(options: &StreamOptions) -> CacheRetention {
    options.cache_retention.unwrap_or_else(|| {
        if std::env::var("PI_CACHE_RETENTION").as_deref() == Ok("long") {
            CacheRetention::Long
        } else {
            CacheRetention::Short
        }
    })
}

/// The key: the options', the provider's environment variable, none for a keyless model,
/// else `OPENAI_API_KEY` but only for OpenAI's own endpoint (pi's `stream` sends it to any
/// server: a listed deviation). [`stream_simple`](crate::stream_simple) never falls back.
fn api_key(model: &Model, options: &StreamOptions) -> Result<Option<ApiKey>, Error> {
    crate::llm::env_keys::request_key(model, options).or_else(|error| {
        let openai = !cloudflare::is_cloudflare_provider(&model.provider)
            && crate::llm::env_keys::is_vendor_endpoint(&model.base_url, |h| h == "api.openai.com");
        std::env::var("OPENAI_API_KEY")
            .ok()
            .filter(|k| !k.is_empty() && openai)
            .map(|k| Some(ApiKey::new(k)))
            .ok_or(error)
    })
}

#[cfg(test)]
fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<HttpRequest, Error> {
    build_request_with(model, context, options, &options.api_options()?)
}

fn build_request_with(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    opts: &OpenAiResponsesOptions,
) -> Result<HttpRequest, Error> {
    let key = api_key(model, options)?;
    let compat = OpenAiResponsesCompatSettings::of(model);
    let reasoning = ReasoningOptions::of(
        opts.reasoning_effort.as_ref(),
        opts.reasoning_summary.as_ref(),
    );
    let service_tier = opts.service_tier.clone();
    let retention = cache_retention(options);
    let session_id = options
        .session_id
        .as_deref()
        .filter(|_| retention != CacheRetention::None);

    let mut body = Map::new();
    body.insert("model".into(), model.id.clone().into());
    body.insert(
        "input".into(),
        Value::Array(convert_messages(model, context, TOOL_CALL_PROVIDERS, true)?),
    );
    body.insert("stream".into(), true.into());
    if let Some(id) = session_id {
        body.insert("prompt_cache_key".into(), id.into());
    }
    if retention == CacheRetention::Long && compat.supports_long_cache_retention.unwrap_or(true) {
        body.insert("prompt_cache_retention".into(), "24h".into());
    }
    body.insert("store".into(), false.into());
    if let Some(max) = options.max_tokens.filter(|&n| n > 0) {
        body.insert("max_output_tokens".into(), max.into());
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(tier) = service_tier {
        body.insert("service_tier".into(), tier.into());
    }
    let mut tools = None;
    if let Some(list) = context.tools.as_ref().filter(|t| !t.is_empty()) {
        tools = Some(convert_tools(list, Some(false)));
        body.insert(TOOLS.into(), Value::Null);
    }
    // pi's Responses providers drop `toolChoice`; forcing a tool is sent (a listed deviation).
    if let Some(choice) = options.effective_tool_choice() {
        body.insert("tool_choice".into(), choice.openai_responses());
    }
    let copilot = model.provider == "github-copilot";
    insert_reasoning(&mut body, model, &reasoning, !copilot);

    let base_url = if cloudflare::is_cloudflare_provider(&model.provider) {
        cloudflare::resolve_base_url(model)?
    } else if model.base_url.is_empty() {
        DEFAULT_BASE_URL.to_owned()
    } else {
        model.base_url.clone()
    };
    let url = format!("{}/responses", base_url.trim_end_matches('/'));
    let mut request = HttpRequest::post_serialized(url, &WithTools { body, tools })?
        .header("accept", "application/json");
    match &key {
        // A keyless model: no credentials.
        None => {}
        Some(key) if model.provider == "cloudflare-ai-gateway" => {
            request = request.header("cf-aig-authorization", format!("Bearer {}", key.expose()));
        }
        Some(key) => request = request.header("authorization", format!("Bearer {}", key.expose())),
    }
    if copilot {
        for (name, value) in copilot_headers(&context.messages) {
            request = request.header(name, value);
        }
    }
    if let Some(id) = session_id {
        if compat.send_session_id_header.unwrap_or(true) {
            request = request.header("session_id", id);
        }
        request = request.header("x-client-request-id", id);
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::UserMessage;
    use crate::llm::model::InputModality;
    use serde_json::json;

    fn model() -> Model {
        Model::new(
            "gpt-5",
            api::OPENAI_RESPONSES,
            "openai",
            "https://api.openai.com/v1/",
        )
        .with_reasoning(true)
        .with_input(vec![InputModality::Text, InputModality::Image])
    }

    fn encode(
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> (Value, Vec<(String, String)>, String) {
        let request = build_request(model, context, options).unwrap();
        let (url, headers) = request.parts();
        (request.body(), headers.to_vec(), url.to_owned())
    }

    use crate::providers::http::header_in as header;

    fn key() -> StreamOptions {
        StreamOptions::new().with_api_key("sk-test")
    }

    #[test]
    fn defaults() {
        let ctx = Context::new()
            .with_system_prompt("Be brief.")
            .with_message(UserMessage::text("hi"));
        let (body, headers, url) = encode(&model(), &ctx, &key());
        assert_eq!(url, "https://api.openai.com/v1/responses");
        assert_eq!(header(&headers, "authorization"), Some("Bearer sk-test"));
        assert_eq!(header(&headers, "session_id"), None);
        assert_eq!(
            body,
            json!({
                "model": "gpt-5",
                "input": [
                    {"role": "developer", "content": "Be brief."},
                    {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
                ],
                "stream": true,
                "store": false,
                "reasoning": {"effort": "none"}
            })
        );
        let empty = Model::new("gpt-4o", api::OPENAI_RESPONSES, "openai", "");
        let (body, _, url) = encode(&empty, &ctx, &key());
        assert_eq!(url, "https://api.openai.com/v1/responses");
        assert_eq!(body["input"][0]["role"], "system");
        assert!(body.get("reasoning").is_none());
    }

    #[test]
    fn caching_session_and_options() {
        let ctx = Context::new().with_message(UserMessage::text("hi"));
        let opts = key()
            .with_session_id("sess-1")
            .with_cache_retention(CacheRetention::Long)
            .with_max_tokens(100)
            .with_temperature(0.5)
            .with_extra("serviceTier", json!("flex"))
            .with_extra("reasoningEffort", json!("low"))
            .with_extra("reasoningSummary", json!("concise"));
        let (body, headers, _) = encode(&model(), &ctx, &opts);
        assert_eq!(body["prompt_cache_key"], "sess-1");
        assert_eq!(body["prompt_cache_retention"], "24h");
        assert_eq!(body["max_output_tokens"], 100);
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["service_tier"], "flex");
        assert_eq!(
            body["reasoning"],
            json!({"effort": "low", "summary": "concise"})
        );
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(header(&headers, "session_id"), Some("sess-1"));
        assert_eq!(header(&headers, "x-client-request-id"), Some("sess-1"));

        let compat = model().with_compat(
            json!({"sendSessionIdHeader": false, "supportsLongCacheRetention": false}),
        );
        let (body, headers, _) = encode(&compat, &ctx, &opts);
        assert!(body.get("prompt_cache_retention").is_none());
        assert_eq!(header(&headers, "session_id"), None);
        assert_eq!(header(&headers, "x-client-request-id"), Some("sess-1"));

        let none = key()
            .with_session_id("sess-1")
            .with_cache_retention(CacheRetention::None);
        let (body, headers, _) = encode(&model(), &ctx, &none);
        assert!(body.get("prompt_cache_key").is_none());
        assert_eq!(header(&headers, "x-client-request-id"), None);

        let bad = key().with_extra("serviceTier", json!(3));
        assert!(build_request(&model(), &ctx, &bad).is_err());
    }

    #[test]
    fn copilot_and_cloudflare() {
        let ctx = Context::new().with_message(UserMessage::text("hi"));
        let copilot = Model::new(
            "gpt-5",
            api::OPENAI_RESPONSES,
            "github-copilot",
            "https://api.githubcopilot.com",
        )
        .with_reasoning(true);
        let (body, headers, url) = encode(&copilot, &ctx, &key());
        assert_eq!(url, "https://api.githubcopilot.com/responses");
        assert!(body.get("reasoning").is_none(), "no effort none on Copilot");
        assert_eq!(header(&headers, "X-Initiator"), Some("user"));
        assert_eq!(
            header(&headers, "Openai-Intent"),
            Some("conversation-edits")
        );

        let gateway = Model::new(
            "gpt-5",
            api::OPENAI_RESPONSES,
            "cloudflare-ai-gateway",
            "https://gateway.ai.cloudflare.com/v1/{PI_TEST_UNSET_CF_ACCOUNT_7}/g/openai",
        );
        let err = build_request(&gateway, &ctx, &key()).unwrap_err();
        assert_eq!(
            err.message(),
            "PI_TEST_UNSET_CF_ACCOUNT_7 is required for provider cloudflare-ai-gateway but is not set."
        );
        let gateway = Model::new(
            "gpt-5",
            api::OPENAI_RESPONSES,
            "cloudflare-ai-gateway",
            "https://gateway.ai.cloudflare.com/v1/a/g/openai",
        );
        let (_, headers, _) = encode(&gateway, &ctx, &key());
        assert_eq!(
            header(&headers, "cf-aig-authorization"),
            Some("Bearer sk-test")
        );
        assert_eq!(header(&headers, "authorization"), None);
    }
}
