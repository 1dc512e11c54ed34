//! OpenAI Codex (`openai-codex-responses`): the Responses wire format of
//! [`openai_responses`](super::openai_responses) at ChatGPT's Codex backend
//! (`POST {baseUrl}/codex/responses`), with a ChatGPT subscription token, as pi-ai 0.73.1
//! calls it over SSE.
//!
//! The key is the ChatGPT OAuth access token (a JWT); its
//! `https://api.openai.com/auth.chatgpt_account_id` claim is sent as `chatgpt-account-id`,
//! with `originator: pi`, pi's `User-Agent` and `OpenAI-Beta: responses=experimental`. The
//! body is pi's: the system prompt as `instructions` (default "You are a helpful
//! assistant."), `store: false`, `text.verbosity`, the encrypted reasoning content always
//! included, `prompt_cache_key` = `sessionId` (also sent as the `session_id` and
//! `x-client-request-id` headers), `tool_choice: "auto"`, `parallel_tool_calls: true`, tools
//! with `strict: null`, and no output-token limit.
//!
//! Provider options are read from [`StreamOptions::extra`] by pi's names:
//!
//! | option | type | effect |
//! |---|---|---|
//! | `reasoningEffort` | `none`, `minimal`…`xhigh` | `reasoning.effort` (through the model's `thinkingLevelMap`; `none` through its `off`) |
//! | `reasoningSummary` | `auto` / `concise` / `detailed` / `off` / `on` | `reasoning.summary` (default `auto`) |
//! | `serviceTier` | `auto` / `default` / `flex` / `priority` | `service_tier`; the cost is scaled by the tier (a requested `flex` or `priority` wins over a reported `default`) |
//! | `textVerbosity` | `low` / `medium` / `high` | `text.verbosity` (default `low`) |
//!
//! The stream is read as pi's Codex reader does: `error` events and failed responses end it
//! with `Codex error: …` / the response's message, and it is over at the first
//! `response.completed`, `response.done` or `response.incomplete`.
//!
//! Differences from pi: the request always goes over SSE (pi's `transport` option, whose
//! default tries a WebSocket first and falls back to SSE, is not read); HTTP errors carry the
//! shared status, provider text and request id instead of pi's "You have hit your ChatGPT
//! usage limit" wording; retries follow the call's [`RetryPolicy`](crate::llm::RetryPolicy).
//!
//! ```no_run
//! use pi_engine::{Context, Model, StreamOptions, UserMessage};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let model = pi_engine::get_model("openai-codex", "gpt-5.1").unwrap();
//! let options = StreamOptions::new()
//!     .with_api_key("<ChatGPT access token>")
//!     .with_extra("reasoningEffort", "low".into());
//! let context = Context::new().with_message(UserMessage::text("Hello"));
//! let reply = pi_engine::complete(&model, &context, &options).await;
//! println!("{}", reply.text());
//! # }
//! ```

use std::sync::OnceLock;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::Context;
use crate::llm::model::{Model, api};
use crate::llm::options::{OpenAiCodexResponsesOptions, StreamOptions, ToolChoice};
use crate::llm::thinking::ThinkingLevel;
use crate::providers::ApiProvider;
use crate::providers::body::{TOOLS, WithTools};
use crate::providers::http::{HttpRequest, stream_http};
use crate::providers::openai_responses_shared::{
    FunctionTool, ResponsesDecoder, TierPricing, convert_messages, convert_tools,
};

const DEFAULT_BASE_URL: &str = "https://chatgpt.com/backend-api";
const JWT_CLAIM_PATH: &str = "https://api.openai.com/auth";
const DEFAULT_INSTRUCTIONS: &str = "You are a helpful assistant.";
/// The providers whose tool-call ids are `call_id|item_id` pairs this api takes as they are.
const TOOL_CALL_PROVIDERS: &[&str] = &["openai", "openai-codex", "opencode"];

/// The OpenAI Codex provider. Registered for `openai-codex-responses` by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAICodexResponsesProvider;

impl OpenAICodexResponsesProvider {
    /// The provider.
    pub fn new() -> Self {
        OpenAICodexResponsesProvider
    }
}

impl ApiProvider for OpenAICodexResponsesProvider {
    fn api(&self) -> &str {
        api::OPENAI_CODEX_RESPONSES
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        // Read once: the tier prices the reply, the rest builds the request.
        let opts = options.api_options::<OpenAiCodexResponsesOptions>();
        let requested = opts.as_ref().ok().and_then(|o| o.service_tier.clone());
        let decoder = ResponsesDecoder::new(model, TierPricing::Codex { requested });
        stream_http(
            model,
            options,
            opts.and_then(|opts| build_request_with(model, context, options, &opts)),
            decoder,
        )
    }
}

/// pi's `resolveCodexUrl`: `{baseUrl}/codex/responses`, unless the base URL already ends in
/// `/codex` or `/codex/responses`.
fn codex_url(base_url: &str) -> String {
    let raw = if base_url.trim().is_empty() {
        DEFAULT_BASE_URL
    } else {
        base_url
    };
    let normalized = raw.trim_end_matches('/');
    if normalized.ends_with("/codex/responses") {
        normalized.to_owned()
    } else if normalized.ends_with("/codex") {
        format!("{normalized}/responses")
    } else {
        format!("{normalized}/codex/responses")
    }
}

/// The ChatGPT account id in the token's claims.
fn account_id(token: &str) -> Result<String, Error> {
    let failed = || Error::new(ErrorKind::Auth, "Failed to extract accountId from token");
    let parts: Vec<&str> = token.split('.').collect();
    let [_, payload, _] = parts.as_slice() else {
        return Err(failed());
    };
    // JWTs are base64url without padding; pi's `atob` reads the standard alphabet.
    let standard: String = payload
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && *c != '=')
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
    );
    let bytes = engine.decode(standard).map_err(|_| failed())?;
    let claims: Value = serde_json::from_slice(&bytes).map_err(|_| failed())?;
    match claims
        .get(JWT_CLAIM_PATH)
        .and_then(|c| c.get("chatgpt_account_id"))
    {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        _ => Err(failed()),
    }
}

/// pi's `User-Agent`: `pi (<platform> <release>; <arch>)` in node's names.
fn user_agent() -> &'static str {
    static AGENT: OnceLock<String> = OnceLock::new();
    AGENT.get_or_init(|| {
        let platform = match std::env::consts::OS {
            "macos" => "darwin",
            "windows" => "win32",
            other => other,
        };
        let arch = match std::env::consts::ARCH {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            "x86" => "ia32",
            "powerpc64" => "ppc64",
            "loongarch64" => "loong64",
            other => other,
        };
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|r| r.trim().to_owned())
            .unwrap_or_default();
        format!("pi ({platform} {release}; {arch})")
    })
}

fn build_body<'a>(
    model: &Model,
    context: &'a Context,
    options: &StreamOptions,
    opts: &OpenAiCodexResponsesOptions,
) -> Result<WithTools<Vec<FunctionTool<'a>>>, Error> {
    let mut body = Map::new();
    body.insert("model".into(), model.id.clone().into());
    body.insert("store".into(), false.into());
    body.insert("stream".into(), true.into());
    let instructions = context
        .system_prompt
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(DEFAULT_INSTRUCTIONS);
    body.insert("instructions".into(), instructions.into());
    body.insert(
        "input".into(),
        Value::Array(convert_messages(
            model,
            context,
            TOOL_CALL_PROVIDERS,
            false,
        )?),
    );
    let verbosity = opts.text_verbosity.as_deref();
    body.insert(
        "text".into(),
        json!({"verbosity": verbosity.unwrap_or("low")}),
    );
    body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    if let Some(id) = &options.session_id {
        body.insert("prompt_cache_key".into(), id.clone().into());
    }
    // The Codex backend is sent `auto` (as pi does); a forced choice is refused, not dropped.
    match options.effective_tool_choice() {
        None | Some(ToolChoice::Auto) => {}
        Some(other) => {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "openai-codex-responses takes toolChoice auto only (got {})",
                    other.openai_responses()
                ),
            ));
        }
    }
    body.insert("tool_choice".into(), "auto".into());
    body.insert("parallel_tool_calls".into(), true.into());
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(tier) = &opts.service_tier {
        body.insert("service_tier".into(), tier.clone().into());
    }
    let mut tools = None;
    if let Some(list) = context.tools.as_ref().filter(|t| !t.is_empty()) {
        tools = Some(convert_tools(list, None));
        body.insert(TOOLS.into(), Value::Null);
    }
    if let Some(effort) = opts.reasoning_effort.clone() {
        let map = model.thinking_level_map.as_ref();
        let level = if effort == "none" {
            Some(ThinkingLevel::Off)
        } else {
            effort.parse::<ThinkingLevel>().ok()
        };
        let mapped = level.and_then(|l| map?.get(&l)?.clone());
        let effort = match mapped {
            Some(m) => m,
            None if effort == "none" => "none".to_owned(),
            None => effort,
        };
        let summary = opts.reasoning_summary.as_deref().unwrap_or("auto");
        body.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": summary}),
        );
    }
    Ok(WithTools { body, tools })
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
    opts: &OpenAiCodexResponsesOptions,
) -> Result<HttpRequest, Error> {
    let token = crate::llm::resolve_api_key(model, options)?;
    let account = account_id(token.expose())?;
    let body = build_body(model, context, options, opts)?;
    let mut request = HttpRequest::post_serialized(codex_url(&model.base_url), &body)?
        .header("authorization", format!("Bearer {}", token.expose()))
        .header("chatgpt-account-id", account)
        .header("originator", "pi")
        .header("user-agent", user_agent())
        .header("OpenAI-Beta", "responses=experimental")
        .header("accept", "text/event-stream");
    if let Some(id) = &options.session_id {
        request = request
            .header("session_id", id.clone())
            .header("x-client-request-id", id.clone());
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::UserMessage;

    /// A token whose claims carry `account` (standard base64, as pi's `atob` reads).
    fn token(account: &str) -> String {
        let claims = json!({JWT_CLAIM_PATH: {"chatgpt_account_id": account}});
        let payload = base64::engine::general_purpose::STANDARD.encode(claims.to_string());
        format!("eyJhbGciOiJub25lIn0.{payload}.sig")
    }

    #[test]
    fn urls() {
        assert_eq!(
            codex_url(""),
            "https://chatgpt.com/backend-api/codex/responses"
        );
        assert_eq!(
            codex_url("  "),
            "https://chatgpt.com/backend-api/codex/responses"
        );
        assert_eq!(codex_url("http://h/x//"), "http://h/x/codex/responses");
        assert_eq!(codex_url("http://h/codex/"), "http://h/codex/responses");
        assert_eq!(
            codex_url("http://h/codex/responses"),
            "http://h/codex/responses"
        );
    }

    #[test]
    fn account_ids() {
        assert_eq!(account_id(&token("acc_1")).unwrap(), "acc_1");
        // base64url and padding are read too.
        let claims = json!({JWT_CLAIM_PATH: {"chatgpt_account_id": "a>b?c"}, "x": "~~~~"});
        let url = base64::engine::general_purpose::URL_SAFE.encode(claims.to_string());
        assert!(url.contains('-') || url.contains('_'), "{url}");
        assert_eq!(account_id(&format!("h.{url}.s")).unwrap(), "a>b?c");
        for bad in ["", "a.b", "a.b.c", &token(""), "a.e30.c"] {
            let err = account_id(bad).unwrap_err();
            assert_eq!(err.message(), "Failed to extract accountId from token");
            assert!(err.is_auth());
        }
    }

    #[test]
    fn body_and_headers() {
        let model = Model::new("gpt-5.1", api::OPENAI_CODEX_RESPONSES, "openai-codex", "")
            .with_reasoning(true);
        let ctx = Context::new().with_message(UserMessage::text("hi"));
        let opts = StreamOptions::new()
            .with_api_key(token("acc_9"))
            .with_session_id("s1")
            .with_extra("reasoningEffort", json!("none"))
            .with_extra("textVerbosity", json!("high"));
        let request = build_request(&model, &ctx, &opts).unwrap();
        let (url, _) = request.parts();
        assert_eq!(url, "https://chatgpt.com/backend-api/codex/responses");
        let header = |name: &str| request.header_value(name);
        assert_eq!(header("chatgpt-account-id"), Some("acc_9"));
        assert_eq!(header("originator"), Some("pi"));
        assert!(header("user-agent").unwrap().starts_with("pi ("));
        assert_eq!(header("session_id"), Some("s1"));
        assert_eq!(
            request.body(),
            json!({
                "model": "gpt-5.1",
                "store": false,
                "stream": true,
                "instructions": "You are a helpful assistant.",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
                "text": {"verbosity": "high"},
                "include": ["reasoning.encrypted_content"],
                "prompt_cache_key": "s1",
                "tool_choice": "auto",
                "parallel_tool_calls": true,
                "reasoning": {"effort": "none", "summary": "auto"}
            })
        );
        let mut mapped = model.clone();
        mapped.thinking_level_map = Some(
            [
                (ThinkingLevel::Off, Some("minimal".to_owned())),
                (ThinkingLevel::Low, Some("medium".to_owned())),
            ]
            .into_iter()
            .collect(),
        );
        let body = build_body(&mapped, &ctx, &opts, &opts.api_options().unwrap())
            .unwrap()
            .to_value();
        assert_eq!(body["reasoning"]["effort"], "minimal");
        let low = opts.clone().with_extra("reasoningEffort", json!("low"));
        assert_eq!(
            build_body(&mapped, &ctx, &low, &low.api_options().unwrap())
                .unwrap()
                .to_value()["reasoning"]["effort"],
            "medium"
        );
        let none = StreamOptions::new().with_api_key(token("a"));
        let body = build_body(&model, &ctx, &none, &none.api_options().unwrap())
            .unwrap()
            .to_value();
        assert!(body.get("reasoning").is_none() && body.get("prompt_cache_key").is_none());
        let bad = StreamOptions::new().with_api_key("not-a-jwt");
        assert!(build_request(&model, &ctx, &bad).unwrap_err().is_auth());
    }
}
