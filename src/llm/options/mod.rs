//! [`StreamOptions`]: how to make one model call (key, sampling, reasoning, caching,
//! cancellation, retries), and [`ApiKey`], a secret that never shows in logs.
//!
//! Each api's own options are a typed struct ([`ApiOptions`]) in a part of its own
//! (`anthropic`, `openai`, `google`, `mistral`; `bedrock` has only typed fields), beside the
//! mapping that turns a reasoning level into them ([`to_provider_options`]).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::llm::model::Model;
use crate::llm::thinking::{ThinkingBudgets, ThinkingLevel};

mod anthropic;
mod api;
mod bedrock;
#[cfg_attr(not(feature = "bedrock"), allow(unused_imports))]
pub(crate) use bedrock::{
    adaptive as bedrock_adaptive, candidates as bedrock_candidates, claude as bedrock_claude,
};
mod google;
mod mistral;
mod openai;
mod simple;

pub use anthropic::AnthropicOptions;
#[cfg_attr(not(feature = "anthropic"), allow(unused_imports))]
pub(crate) use anthropic::anthropic_adaptive;
pub use api::{ApiOptions, COMMON_EXTRA_KEYS};
pub use google::{GoogleOptions, GoogleThinking, GoogleVertexOptions};
pub use mistral::MistralOptions;
pub use openai::{
    AzureOpenAiResponsesOptions, OpenAiCodexResponsesOptions, OpenAiCompletionsOptions,
    OpenAiResponsesOptions,
};
pub use simple::{build_base_options, to_provider_options};

/// The string the model's `thinkingLevelMap` gives `level`, if any.
fn level_map(model: &Model, level: ThinkingLevel) -> Option<&str> {
    model.thinking_level_map.as_ref()?.get(&level)?.as_deref()
}

/// A budget-based model's thinking budget for `level`: raises `out.max_tokens` to hold it
/// (pi's `adjustMaxTokensForThinking`) and returns the budget.
fn raise_max_tokens_for_thinking(
    model: &Model,
    options: &StreamOptions,
    level: ThinkingLevel,
    out: &mut StreamOptions,
) -> u64 {
    let adjusted = crate::llm::thinking::adjust_max_tokens_for_thinking(
        out.max_tokens.unwrap_or(0),
        model.max_tokens,
        level,
        options.thinking_budgets.as_ref(),
    );
    out.max_tokens = Some(adjusted.max_tokens);
    adjusted.thinking_budget
}

/// An API key or token. Its `Debug` and `Display` print `<redacted>`; read it with
/// [`expose`](Self::expose) only where it is sent.
///
/// ```
/// use pi_engine::llm::ApiKey;
///
/// let key = ApiKey::new("sk-secret");
/// assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
/// assert_eq!(key.expose(), "sk-secret");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(Arc::from(key.into()))
    }

    /// The key itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl<'de> Deserialize<'de> for ApiKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(ApiKey::new)
    }
}

impl From<String> for ApiKey {
    fn from(s: String) -> Self {
        ApiKey::new(s)
    }
}

impl From<&str> for ApiKey {
    fn from(s: &str) -> Self {
        ApiKey::new(s)
    }
}

/// How long a provider should keep the prompt cache (pi's `cacheRetention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CacheRetention {
    /// No cache markers.
    None,
    /// The provider's default (about five minutes).
    #[default]
    Short,
    /// An hour or a day, where the provider supports it.
    Long,
}

/// Which tool the model must call, if any (pi's `toolChoice`), mapped onto each api's own
/// shape by its provider.
///
/// | | Anthropic | OpenAI Chat Completions | OpenAI Responses | Google |
/// |---|---|---|---|---|
/// | `Auto` | `{"type":"auto"}` | `"auto"` | `"auto"` | `AUTO` |
/// | `None` | `{"type":"none"}` | `"none"` | `"none"` | `NONE` |
/// | `Required` | `{"type":"any"}` | `"required"` | `"required"` | `ANY` |
/// | `Tool(name)` | `{"type":"tool","name":…}` | `{"type":"function","function":{"name":…}}` | `{"type":"function","name":…}` | `ANY` + `allowedFunctionNames` |
///
/// Read from pi's JSON, every api's spelling is understood (`"any"` and `"required"`, the
/// Anthropic and OpenAI objects naming a tool); any other value is kept as
/// [`Raw`](Self::Raw) and sent as it is, as pi sends it. The Codex backend takes `Auto`
/// only, and refuses the others with a configuration error.
///
/// ```
/// use pi_engine::StreamOptions;
/// use pi_engine::llm::ToolChoice;
///
/// let options = StreamOptions::new().with_tool_choice(ToolChoice::tool("read"));
/// assert_eq!(options.tool_choice, Some(ToolChoice::Tool("read".into())));
/// let from_pi: StreamOptions = serde_json::from_str(r#"{"toolChoice": "any"}"#).unwrap();
/// assert_eq!(from_pi.tool_choice, Some(ToolChoice::Required));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the default of every api).
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call, of any tool.
    Required,
    /// A call of this tool.
    Tool(String),
    /// A value in an api's own shape, sent unchanged.
    Raw(Value),
}

// Each api's shape, for its provider (unused when that provider's feature is off).
impl ToolChoice {
    /// The shape OpenAI's Responses API takes (`"auto"`, `"none"`, `"required"`,
    /// `{"type":"function","name":…}`); also the Chat Completions strings.
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    pub(crate) fn openai_responses(&self) -> Value {
        match self {
            ToolChoice::Auto => "auto".into(),
            ToolChoice::None => "none".into(),
            ToolChoice::Required => "required".into(),
            ToolChoice::Tool(name) => serde_json::json!({"type": "function", "name": name}),
            ToolChoice::Raw(value) => value.clone(),
        }
    }

    /// The shape OpenAI's Chat Completions API takes.
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    pub(crate) fn openai_completions(&self) -> Value {
        match self {
            ToolChoice::Tool(name) => {
                serde_json::json!({"type": "function", "function": {"name": name}})
            }
            other => other.openai_responses(),
        }
    }

    /// The shape Anthropic's Messages API takes (a string given raw becomes `{"type": …}`, as
    /// pi sends it).
    #[cfg_attr(not(feature = "anthropic"), allow(dead_code))]
    pub(crate) fn anthropic(&self) -> Value {
        let kind = |k: &str| serde_json::json!({ "type": k });
        match self {
            ToolChoice::Auto => kind("auto"),
            ToolChoice::None => kind("none"),
            ToolChoice::Required => kind("any"),
            ToolChoice::Tool(name) => serde_json::json!({"type": "tool", "name": name}),
            ToolChoice::Raw(Value::String(k)) => kind(k),
            ToolChoice::Raw(value) => value.clone(),
        }
    }

    /// Google's `functionCallingConfig` (pi maps an unknown string to `AUTO`).
    #[cfg_attr(not(feature = "google"), allow(dead_code))]
    pub(crate) fn google(&self) -> Value {
        let mode = |m: &str| serde_json::json!({ "mode": m });
        match self {
            ToolChoice::None => mode("NONE"),
            ToolChoice::Required => mode("ANY"),
            ToolChoice::Tool(name) => {
                serde_json::json!({"mode": "ANY", "allowedFunctionNames": [name]})
            }
            ToolChoice::Raw(Value::String(s)) if s == "any" => mode("ANY"),
            ToolChoice::Raw(Value::String(s)) if s == "none" => mode("NONE"),
            _ => mode("AUTO"),
        }
    }
}

impl ToolChoice {
    /// A call of the tool `name`.
    pub fn tool(name: impl Into<String>) -> Self {
        ToolChoice::Tool(name.into())
    }

    /// The choice pi's JSON `value` names; `None` for what pi's `if (options.toolChoice)`
    /// skips (`null`, `false`, `""`, `0`).
    pub fn from_pi_json(value: &Value) -> Option<ToolChoice> {
        Some(match value {
            Value::Null | Value::Bool(false) => return None,
            Value::String(s) if s.is_empty() => return None,
            Value::Number(n) if n.as_f64() == Some(0.0) => return None,
            Value::String(s) => match s.as_str() {
                "auto" => ToolChoice::Auto,
                "none" => ToolChoice::None,
                "any" | "required" => ToolChoice::Required,
                _ => ToolChoice::Raw(value.clone()),
            },
            Value::Object(o) => {
                // The tool an object names: Anthropic's `{"type":"tool","name"}`, Responses'
                // `{"type":"function","name"}`, Chat Completions' `{"type":"function",
                // "function":{"name"}}`.
                let named = match (str_of(o, "type"), o.len()) {
                    (Some("auto"), 1) => return Some(ToolChoice::Auto),
                    (Some("none"), 1) => return Some(ToolChoice::None),
                    (Some("any"), 1) => return Some(ToolChoice::Required),
                    (Some("tool"), 2) => str_of(o, "name"),
                    (Some("function"), 2) => str_of(o, "name").or(match o.get("function") {
                        Some(Value::Object(f)) if f.len() == 1 => str_of(f, "name"),
                        _ => None,
                    }),
                    _ => None,
                };
                match named {
                    Some(name) => ToolChoice::Tool(name.to_owned()),
                    None => ToolChoice::Raw(value.clone()),
                }
            }
            _ => ToolChoice::Raw(value.clone()),
        })
    }
}

/// The string member `key` of `object`.
fn str_of<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

fn tool_choice_from_pi<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<ToolChoice>, D::Error> {
    Ok(ToolChoice::from_pi_json(&Value::deserialize(d)?))
}

/// Retries of a failed request *before the first byte of its stream* (429, 5xx, overloaded,
/// connection failures). Once a stream has started, a failure ends it with an `error` event.
///
/// The delay before attempt *n* is `base_delay × 2^(n−1)`, capped by `max_delay`; a
/// `Retry-After` the provider sends wins when it is shorter than `max_delay` (a longer one
/// ends the retries, as pi's `maxRetryDelayMs` says: the call fails with the rate-limit
/// error at once). What is retried is decided by [`Error::is_retryable`](crate::Error::is_retryable),
/// the crate's one classifier; an exhausted quota is never retried.
///
/// This is the first of pi's two retry layers (`retry.provider` in pi's settings). The
/// second, an [`AgentSession`](crate::agent_session::AgentSession)'s retries of a whole
/// failed turn (`retry.maxRetries`, `retry.baseDelayMs`), uses the same classifier plus pi's
/// text pattern for the errors whose kind does not decide, and caps a long `Retry-After` at
/// its own maximum delay instead of giving up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt. Default 2.
    pub max_retries: u32,
    /// Delay before the first retry. Default 1 s.
    pub base_delay: Duration,
    /// Longest delay to wait, including a `Retry-After`. Default 60 s.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// Sets the number of retries.
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the first delay.
    #[must_use]
    pub fn with_base_delay(mut self, delay: Duration) -> Self {
        self.base_delay = delay;
        self
    }

    /// Sets the longest delay.
    #[must_use]
    pub fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// The delay before retry number `attempt` (1-based), before `Retry-After` is considered.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }
}

/// A hook that sees (and may change) the JSON body of every provider request before it is
/// sent: pi's `onPayload`. A synchronous hook ([`new`](Self::new)) runs when the request is
/// built; an asynchronous one ([`new_async`](Self::new_async), which an extension's
/// `before_provider_request` handler is) runs once when the call starts sending, before its
/// retries.
#[derive(Clone)]
pub struct PayloadHook(HookFn);

#[derive(Clone)]
enum HookFn {
    Sync(Arc<dyn Fn(&mut Value) + Send + Sync>),
    Async(Arc<dyn Fn(Value) -> BoxFuture<'static, Value> + Send + Sync>),
}

impl PayloadHook {
    /// Wraps a function that changes the body in place.
    pub fn new(f: impl Fn(&mut Value) + Send + Sync + 'static) -> Self {
        PayloadHook(HookFn::Sync(Arc::new(f)))
    }

    /// Wraps an async function that returns the body to send.
    ///
    /// ```
    /// use pi_engine::llm::PayloadHook;
    ///
    /// let hook = PayloadHook::new_async(|mut body: serde_json::Value| async move {
    ///     body["metadata"] = serde_json::json!({"team": "search"});
    ///     body
    /// });
    /// # let _ = hook;
    /// ```
    pub fn new_async<F, Fut>(f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Value> + Send + 'static,
    {
        PayloadHook(HookFn::Async(Arc::new(move |body| Box::pin(f(body)))))
    }

    /// True for a hook made with [`new_async`](Self::new_async).
    pub fn is_async(&self) -> bool {
        matches!(self.0, HookFn::Async(_))
    }

    /// Runs the hook on `body` and returns the body to send.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the hook's future; the body is then lost with it.
    pub async fn apply(&self, mut body: Value) -> Value {
        match &self.0 {
            HookFn::Sync(f) => {
                f(&mut body);
                body
            }
            HookFn::Async(f) => f(body).await,
        }
    }

    /// Runs a synchronous hook in place; `false` (and the body unchanged) for an async one.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn call_sync(&self, body: &mut Value) -> bool {
        match &self.0 {
            HookFn::Sync(f) => {
                f(body);
                true
            }
            HookFn::Async(_) => false,
        }
    }
}

/// What a provider answered, as a [`ResponseHook`] sees it: the status and headers of the
/// response whose body is about to be streamed (pi's `onResponse`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResponseInfo {
    /// The HTTP status.
    pub status: u16,
    /// The response headers, names in lower case (a repeated header's values joined with
    /// `, `).
    pub headers: BTreeMap<String, String>,
}

impl ResponseInfo {
    /// A response with `status` and `headers`.
    pub fn new(status: u16, headers: BTreeMap<String, String>) -> Self {
        ResponseInfo { status, headers }
    }
}

/// A hook told of the response to every model call before its body is read (pi's
/// `onResponse`; an extension's `after_provider_response` handler is one). The call waits
/// for it.
#[derive(Clone)]
pub struct ResponseHook(Arc<dyn Fn(ResponseInfo) -> BoxFuture<'static, ()> + Send + Sync>);

impl ResponseHook {
    /// Wraps an async function.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(ResponseInfo) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        ResponseHook(Arc::new(move |info| Box::pin(f(info))))
    }

    /// Runs the hook.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the hook's future.
    pub async fn call(&self, info: ResponseInfo) {
        (self.0)(info).await;
    }
}

impl fmt::Debug for ResponseHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResponseHook")
    }
}

impl fmt::Debug for PayloadHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PayloadHook")
    }
}

/// Options of one model call. Every field is optional; `StreamOptions::default()` uses the
/// key from the environment, the model's defaults, no reasoning, the default
/// [`RetryPolicy`] and a 5-minute idle timeout.
///
/// Deserializes from pi's stream-options JSON (`apiKey`, `temperature`, `maxTokens`,
/// `reasoning`, `sessionId`, `cacheRetention`, …); the options of one api alone are kept in
/// `extra` under pi's names and read by its provider as a typed struct
/// ([`with_api_options`](Self::with_api_options), [`api_options`](Self::api_options), e.g.
/// [`AnthropicOptions`]'s `thinkingEnabled`).
///
/// ```
/// use pi_engine::{StreamOptions, ThinkingLevel};
///
/// let opts = StreamOptions::new()
///     .with_api_key("sk-test")
///     .with_max_tokens(1024)
///     .with_reasoning(ThinkingLevel::High);
/// assert!(!format!("{opts:?}").contains("sk-test"));
/// ```
///
/// `Debug` redacts the key, credential headers (`authorization`, `x-api-key`, cookies, any
/// name with `key`, `token`, `secret` or `auth`, any value holding the key) and such members
/// of `extra`.
#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StreamOptions {
    /// The key; when absent the provider's environment variables are read.
    #[serde(default)]
    pub api_key: Option<ApiKey>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Output token limit.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Reasoning level, used by [`stream_simple`](crate::stream_simple).
    #[serde(default)]
    pub reasoning: Option<ThinkingLevel>,
    /// Token budgets per reasoning level.
    #[serde(default)]
    pub thinking_budgets: Option<ThinkingBudgets>,
    /// A stable id for the conversation, used for prompt-cache keys.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Prompt-cache retention.
    #[serde(default)]
    pub cache_retention: Option<CacheRetention>,
    /// Which tool the model must call (pi's `toolChoice`); `None` leaves it to the api's
    /// default. Kept by [`stream_simple`](crate::stream_simple) too (pi's `streamSimple` drops
    /// it).
    #[serde(default, deserialize_with = "tool_choice_from_pi")]
    pub tool_choice: Option<ToolChoice>,
    /// Extra request headers (after the model's own).
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Metadata some providers accept (Anthropic `metadata.user_id`).
    #[serde(default)]
    pub metadata: Option<Value>,
    /// Longest wait for a server-requested retry delay, in milliseconds.
    #[serde(default)]
    pub max_retry_delay_ms: Option<u64>,
    /// Cancels the call: the stream ends with stop reason `aborted` and the partial content.
    #[serde(skip)]
    pub cancel: Option<CancellationToken>,
    /// Retries before the first byte; `None` uses [`RetryPolicy::default`].
    #[serde(skip)]
    pub retry: Option<RetryPolicy>,
    /// Longest wait for the next event while streaming (and for the response head); `None`
    /// uses 5 minutes. Only complete events reset it, not keep-alive comments (`: ping`) or
    /// the bytes of an event that never ends.
    #[serde(skip)]
    pub idle_timeout: Option<Duration>,
    /// Longest time spent reading the body of an HTTP error response (or of a success that
    /// is not an event stream), per attempt; `None` uses 30 s. What arrived by then is used.
    #[serde(skip)]
    pub error_body_timeout: Option<Duration>,
    /// Sees the request body before it is sent.
    #[serde(skip)]
    pub on_payload: Option<PayloadHook>,
    /// Told of the response's status and headers before its body is read.
    #[serde(skip)]
    pub on_response: Option<ResponseHook>,
    /// Sends the HTTP requests of the call; `None` uses the process-wide
    /// [`ReqwestTransport`](crate::providers::http::ReqwestTransport).
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    #[serde(skip)]
    pub transport: Option<crate::providers::http::SharedTransport>,
    /// The options of one api, by pi's names: written by
    /// [`with_api_options`](Self::with_api_options) (or, for a key no options type knows,
    /// [`with_extra`](Self::with_extra)) and read by the provider with
    /// [`api_options`](Self::api_options).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl fmt::Debug for StreamOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.api_key.as_ref().map(ApiKey::expose);
        let mut f = f.debug_struct("StreamOptions");
        f.field("api_key", &self.api_key)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("reasoning", &self.reasoning)
            .field("thinking_budgets", &self.thinking_budgets)
            .field("session_id", &self.session_id)
            .field("cache_retention", &self.cache_retention)
            .field("tool_choice", &self.tool_choice)
            .field(
                "headers",
                &self
                    .headers
                    .as_ref()
                    .map(|h| crate::llm::redact::Headers::new(h, key)),
            )
            .field("metadata", &self.metadata)
            .field("max_retry_delay_ms", &self.max_retry_delay_ms)
            .field("cancel", &self.cancel)
            .field("retry", &self.retry)
            .field("idle_timeout", &self.idle_timeout)
            .field("on_payload", &self.on_payload)
            .field("on_response", &self.on_response);
        #[cfg(feature = "http")]
        f.field("transport", &self.transport);
        f.field("extra", &crate::llm::redact::Members(&self.extra))
            .finish()
    }
}

/// The idle timeout used when none is set.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The deadline for reading an error body used when none is set.
pub const DEFAULT_ERROR_BODY_TIMEOUT: Duration = Duration::from_secs(30);

impl StreamOptions {
    /// Defaults for everything.
    pub fn new() -> Self {
        StreamOptions::default()
    }

    /// Sets the API key.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sends the call's HTTP requests through `transport` (a configured
    /// [`ReqwestTransport`](crate::providers::http::ReqwestTransport), a recording or replaying
    /// one, a test double) instead of the process-wide default.
    ///
    /// ```
    /// use pi_engine::StreamOptions;
    /// use pi_engine::providers::http::ReqwestTransport;
    ///
    /// let client = reqwest::Client::builder().pool_max_idle_per_host(2);
    /// let options = StreamOptions::new().with_transport(ReqwestTransport::from_builder(client).unwrap());
    /// assert!(options.transport.is_some());
    /// ```
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    #[must_use]
    pub fn with_transport(mut self, transport: impl crate::providers::http::HttpTransport) -> Self {
        self.transport = Some(std::sync::Arc::new(transport));
        self
    }

    /// Sets the temperature.
    #[must_use]
    pub fn with_temperature(mut self, t: f64) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Sets the output token limit.
    #[must_use]
    pub fn with_max_tokens(mut self, n: u64) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Sets the reasoning level.
    #[must_use]
    pub fn with_reasoning(mut self, level: ThinkingLevel) -> Self {
        self.reasoning = Some(level);
        self
    }

    /// Sets the session id.
    #[must_use]
    pub fn with_session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// Sets the cache retention.
    #[must_use]
    pub fn with_cache_retention(mut self, retention: CacheRetention) -> Self {
        self.cache_retention = Some(retention);
        self
    }

    /// Adds a request header.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), value.into());
        self
    }

    /// Sets the cancellation token.
    #[must_use]
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Sets the retry policy.
    #[must_use]
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Sets the idle timeout.
    #[must_use]
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// Sets the deadline for reading the body of an HTTP error response, per attempt
    /// (default [`DEFAULT_ERROR_BODY_TIMEOUT`], 30 s). A server that drips an error page a
    /// byte at a time is cut off after it, and the error is made from what arrived; the
    /// idle timeout alone would be reset by every byte.
    ///
    /// ```
    /// use std::time::Duration;
    /// use pi_engine::StreamOptions;
    ///
    /// let opts = StreamOptions::new().with_error_body_timeout(Duration::from_secs(5));
    /// assert_eq!(opts.error_body_timeout_or_default(), Duration::from_secs(5));
    /// ```
    #[must_use]
    pub fn with_error_body_timeout(mut self, timeout: Duration) -> Self {
        self.error_body_timeout = Some(timeout);
        self
    }

    /// Sets the payload hook.
    #[must_use]
    pub fn with_on_payload(mut self, f: impl Fn(&mut Value) + Send + Sync + 'static) -> Self {
        self.on_payload = Some(PayloadHook::new(f));
        self
    }

    /// Sets the response hook: `f` is told of the status and headers of each call's response
    /// before its body is read, and the call waits for it.
    ///
    /// ```
    /// use pi_engine::StreamOptions;
    ///
    /// let opts = StreamOptions::new().with_on_response(|info| async move {
    ///     tracing::debug!(status = info.status, "model answered");
    /// });
    /// assert!(opts.on_response.is_some());
    /// ```
    #[must_use]
    pub fn with_on_response<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ResponseInfo) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.on_response = Some(ResponseHook::new(f));
        self
    }

    /// The call's tool choice: [`tool_choice`](Self::tool_choice), or else a `toolChoice` set
    /// among the provider options by pi's name (`with_extra("toolChoice", …)`), read as pi's
    /// JSON ([`ToolChoice::from_pi_json`]).
    pub fn effective_tool_choice(&self) -> Option<ToolChoice> {
        self.tool_choice.clone().or_else(|| {
            self.extra
                .get("toolChoice")
                .and_then(ToolChoice::from_pi_json)
        })
    }

    /// Sets which tool the model must call ([`ToolChoice`]).
    #[must_use]
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Sets an option of `extra` by pi's name, as it is: the escape hatch for a key no
    /// [`ApiOptions`] type knows. Prefer [`with_api_options`](Self::with_api_options), which
    /// cannot misspell a key.
    #[must_use]
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    /// True when the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// The retry policy in effect.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry.unwrap_or_default()
    }

    /// The idle timeout in effect.
    pub fn idle_timeout_or_default(&self) -> Duration {
        self.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT)
    }

    /// The deadline for reading an error body in effect.
    pub fn error_body_timeout_or_default(&self) -> Duration {
        self.error_body_timeout
            .unwrap_or(DEFAULT_ERROR_BODY_TIMEOUT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With `authHeader` the key travels in a header: `Debug` of the options, of the model
    /// and of what the faux provider records (what a stream function receives) hides it.
    #[tokio::test]
    async fn debug_redacts_credential_headers() {
        use crate::ApiProvider;
        use crate::llm::models::ModelRegistry;
        use crate::providers::faux::FauxProvider;
        let key = "gw-0f3a9c5e7d1b";
        let registry = ModelRegistry::from_models_json(&format!(
            r#"{{"providers": {{"gw": {{"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
                "apiKey": "{key}", "authHeader": true, "headers": {{"x-echo": "{key}"}},
                "models": [{{"id": "m"}}]}}}}}}"#
        ))
        .unwrap();
        let model = registry.find("gw", "m").unwrap().clone();
        let options = registry
            .request_auth(&model)
            .await
            .unwrap()
            .apply(StreamOptions::new())
            .with_header("Cookie", "session=abc")
            .with_header("x-visible", "shown")
            .with_extra("accessToken", "ya29.token-value-1".into());
        let shown = format!("{options:?}");
        assert!(!shown.contains(key), "{shown}");
        assert!(!shown.contains("session=abc"), "{shown}");
        assert!(!shown.contains("token-value"), "{shown}");
        assert!(shown.contains(r#""x-visible": "shown""#), "{shown}");
        assert!(shown.contains(r#""Authorization": <redacted>"#), "{shown}");

        let model = model
            .with_header("x-api-key", "sk-model-header-0123")
            .with_header("anthropic-version", "2023-06-01");
        let shown = format!("{model:?}");
        assert!(!shown.contains("model-header"), "{shown}");
        assert!(shown.contains("2023-06-01"), "{shown}");

        let faux = FauxProvider::new();
        faux.push(crate::providers::faux::FauxResponse::text("ok"));
        let _ = faux
            .stream(&model, &crate::Context::new(), &options)
            .result()
            .await;
        let shown = format!("{:?}", faux.requests());
        assert!(
            !shown.contains(key) && !shown.contains("model-header"),
            "{shown}"
        );
    }

    #[test]
    fn deserializes_pi_options() {
        let o: StreamOptions = serde_json::from_value(serde_json::json!({
            "apiKey": "k", "reasoning": "high", "sessionId": "s", "cacheRetention": "long",
            "thinkingEnabled": true
        }))
        .unwrap();
        assert_eq!(o.api_key.as_ref().map(ApiKey::expose), Some("k"));
        assert_eq!(o.reasoning, Some(ThinkingLevel::High));
        assert_eq!(o.cache_retention, Some(CacheRetention::Long));
        assert_eq!(o.extra["thinkingEnabled"], true);
        assert!(!format!("{o:?}").contains("\"k\""));
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy::default().with_max_delay(Duration::from_secs(3));
        assert_eq!(p.backoff(1), Duration::from_secs(1));
        assert_eq!(p.backoff(2), Duration::from_secs(2));
        assert_eq!(p.backoff(3), Duration::from_secs(3));
    }
}
