//! [`Model`]: what a model is called, which api and endpoint serve it, what it can take
//! in, what it costs, and how large its context window is.
//!
//! Serialized, a model is pi's `Model` JSON (the shape of `models.json` entries and of the
//! conformance request files).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::message::Extra;
use crate::llm::thinking::ThinkingLevel;

/// Well-known api identifiers (the `api` field of a [`Model`]). Any other string names a
/// custom api registered in an [`ApiRegistry`](crate::ApiRegistry).
pub mod api {
    /// Anthropic Messages (`/v1/messages`).
    pub const ANTHROPIC_MESSAGES: &str = "anthropic-messages";
    /// OpenAI Chat Completions (`/chat/completions`) and compatible servers.
    pub const OPENAI_COMPLETIONS: &str = "openai-completions";
    /// OpenAI Responses (`/responses`).
    pub const OPENAI_RESPONSES: &str = "openai-responses";
    /// Azure OpenAI Responses.
    pub const AZURE_OPENAI_RESPONSES: &str = "azure-openai-responses";
    /// OpenAI Codex Responses (ChatGPT subscription).
    pub const OPENAI_CODEX_RESPONSES: &str = "openai-codex-responses";
    /// Google Gemini (`:streamGenerateContent`).
    pub const GOOGLE_GENERATIVE_AI: &str = "google-generative-ai";
    /// Google Vertex AI.
    pub const GOOGLE_VERTEX: &str = "google-vertex";
    /// Mistral Conversations.
    pub const MISTRAL_CONVERSATIONS: &str = "mistral-conversations";
    /// Amazon Bedrock Converse Stream.
    pub const BEDROCK_CONVERSE_STREAM: &str = "bedrock-converse-stream";
    /// The faux provider's default api.
    pub const FAUX: &str = "faux";
}

/// A kind of input a model accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum InputModality {
    /// Text.
    Text,
    /// Images.
    Image,
}

/// Prices in dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelCost {
    /// Input tokens.
    #[serde(default)]
    #[serde(serialize_with = "crate::llm::json::js_f64")]
    pub input: f64,
    /// Output tokens.
    #[serde(default)]
    #[serde(serialize_with = "crate::llm::json::js_f64")]
    pub output: f64,
    /// Cache reads.
    #[serde(default)]
    #[serde(serialize_with = "crate::llm::json::js_f64")]
    pub cache_read: f64,
    /// Cache writes.
    #[serde(default)]
    #[serde(serialize_with = "crate::llm::json::js_f64")]
    pub cache_write: f64,
}

impl ModelCost {
    /// Prices per million tokens for input, output, cache reads and cache writes.
    pub fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Self {
        ModelCost {
            input,
            output,
            cache_read,
            cache_write,
        }
    }
}

/// A model: identity, endpoint, capabilities and prices.
///
/// ```
/// use pi_engine::Model;
///
/// let model: Model = serde_json::from_str(r#"{
///   "id": "llama3", "name": "Llama 3", "api": "openai-completions", "provider": "ollama",
///   "baseUrl": "http://127.0.0.1:11434/v1", "reasoning": false, "input": ["text"],
///   "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
///   "contextWindow": 8192, "maxTokens": 2048
/// }"#).unwrap();
/// assert_eq!(model.provider, "ollama");
/// assert!(!model.supports_images());
/// ```
///
/// `Debug` redacts credential headers (see [`StreamOptions`](crate::StreamOptions)).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Model {
    /// The id sent to the provider.
    pub id: String,
    /// A display name.
    #[serde(default)]
    pub name: String,
    /// The wire api ([`api`] has the known ones).
    pub api: String,
    /// The provider (used to find API keys and pick compat defaults).
    pub provider: String,
    /// The endpoint's base URL.
    #[serde(default)]
    pub base_url: String,
    /// True when the model can reason (thinking levels other than `off` apply).
    #[serde(default)]
    pub reasoning: bool,
    /// Accepted inputs.
    #[serde(default = "default_input")]
    pub input: Vec<InputModality>,
    /// Prices.
    #[serde(default)]
    pub cost: ModelCost,
    /// Context window in tokens.
    #[serde(default)]
    pub context_window: u64,
    /// Maximum output tokens.
    #[serde(default)]
    pub max_tokens: u64,
    /// Headers sent with every request to this model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// True when the endpoint takes no API key (a local server): a call without a key sends
    /// no credentials instead of failing with `No API key for provider: <provider>`. Without
    /// it, a model whose provider has no key of its own always gets that error: a key from
    /// the environment is only sent to the provider it is named for
    /// ([`env_var_names`](crate::llm::env_var_names)). Set with [`with_keyless`](Self::with_keyless);
    /// a `models.json` provider without `apiKey` whose `baseUrl` is on loopback (127.0.0.0/8,
    /// `::1`, `localhost`) gets it. Not one of pi's fields: read from JSON, never written.
    #[serde(default, skip_serializing)]
    pub keyless: bool,
    /// Per-api compatibility settings (pi's `compat` object), read by the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Value>,
    /// Per-level overrides of the value sent to the provider; `null` hides a level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<BTreeMap<ThinkingLevel, Option<String>>>,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Extra,
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("api", &self.api)
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("reasoning", &self.reasoning)
            .field("input", &self.input)
            .field("cost", &self.cost)
            .field("context_window", &self.context_window)
            .field("max_tokens", &self.max_tokens)
            .field(
                "headers",
                &self
                    .headers
                    .as_ref()
                    .map(|h| crate::llm::redact::Headers::new(h, None)),
            )
            .field("keyless", &self.keyless)
            .field("compat", &self.compat)
            .field("thinking_level_map", &self.thinking_level_map)
            .field("extra", &crate::llm::redact::Members(&self.extra))
            .finish()
    }
}

fn default_input() -> Vec<InputModality> {
    vec![InputModality::Text]
}

impl Model {
    /// A builder that names each part ([`ModelBuilder`]): the four strings of
    /// [`new`](Self::new) cannot be swapped by mistake.
    ///
    /// ```
    /// use pi_engine::Model;
    /// use pi_engine::llm::api;
    ///
    /// let model = Model::builder()
    ///     .id("qwen3-8b")
    ///     .api(api::OPENAI_COMPLETIONS)
    ///     .provider("llama-cpp")
    ///     .base_url("http://127.0.0.1:8080/v1")
    ///     .keyless(true)
    ///     .context_window(32_768)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!((model.id.as_str(), model.name.as_str()), ("qwen3-8b", "qwen3-8b"));
    /// assert!(Model::builder().id("x").build().is_err(), "no api, no provider");
    /// ```
    pub fn builder() -> ModelBuilder {
        ModelBuilder {
            model: Model::new("", "", "", ""),
        }
    }

    /// A model with the given identity and endpoint, in this order: `id`, `api`, `provider`,
    /// `base_url` (prefer [`builder`](Self::builder), which names them); text input, no
    /// reasoning, zero prices, a 128k context window and 16k output tokens until set
    /// otherwise.
    pub fn new(
        id: impl Into<String>,
        api: impl Into<String>,
        provider: impl Into<String>,
        base_url: impl Into<String>,
    ) -> Self {
        let id = id.into();
        Model {
            name: id.clone(),
            id,
            api: api.into(),
            provider: provider.into(),
            base_url: base_url.into(),
            reasoning: false,
            input: default_input(),
            cost: ModelCost::default(),
            context_window: 128_000,
            max_tokens: 16_384,
            headers: None,
            keyless: false,
            compat: None,
            thinking_level_map: None,
            extra: Extra::new(),
        }
    }

    /// Sets the display name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Marks the model as able to reason.
    #[must_use]
    pub fn with_reasoning(mut self, reasoning: bool) -> Self {
        self.reasoning = reasoning;
        self
    }

    /// Sets the accepted inputs.
    #[must_use]
    pub fn with_input(mut self, input: Vec<InputModality>) -> Self {
        self.input = input;
        self
    }

    /// Sets the prices (dollars per million tokens).
    #[must_use]
    pub fn with_cost(mut self, cost: ModelCost) -> Self {
        self.cost = cost;
        self
    }

    /// Sets the context window.
    #[must_use]
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = tokens;
        self
    }

    /// Sets the maximum output tokens.
    #[must_use]
    pub fn with_max_tokens(mut self, tokens: u64) -> Self {
        self.max_tokens = tokens;
        self
    }

    /// Adds a header sent with every request.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), value.into());
        self
    }

    /// Marks the endpoint as taking no API key (see [`keyless`](Self::keyless)).
    ///
    /// ```
    /// use pi_engine::Model;
    ///
    /// let local = Model::new("qwen", "openai-completions", "llama-cpp", "http://127.0.0.1:8080/v1")
    ///     .with_keyless(true);
    /// assert!(local.keyless);
    /// ```
    #[must_use]
    pub fn with_keyless(mut self, keyless: bool) -> Self {
        self.keyless = keyless;
        self
    }

    /// Sets the `compat` object: pi's JSON (`json!({"supportsStore": false})`) or, typed, the
    /// api's settings ([`OpenAiCompletionsCompatSettings`], [`OpenAiResponsesCompatSettings`],
    /// [`AnthropicMessagesCompatSettings`]).
    ///
    /// [`OpenAiCompletionsCompatSettings`]: crate::llm::compat::OpenAiCompletionsCompatSettings
    /// [`OpenAiResponsesCompatSettings`]: crate::llm::compat::OpenAiResponsesCompatSettings
    /// [`AnthropicMessagesCompatSettings`]: crate::llm::compat::AnthropicMessagesCompatSettings
    #[must_use]
    pub fn with_compat(mut self, compat: impl Into<Value>) -> Self {
        self.compat = Some(compat.into());
        self
    }

    /// True when the model accepts images.
    pub fn supports_images(&self) -> bool {
        self.input.contains(&InputModality::Image)
    }

    /// The `compat` field `key`, if set.
    pub fn compat_value(&self, key: &str) -> Option<&Value> {
        self.compat.as_ref().and_then(|c| c.get(key))
    }
}

/// Builds a [`Model`] part by part ([`Model::builder`]); [`build`](Self::build) checks that
/// the id, the api and the provider are set. Defaults as [`Model::new`]: the name is the id,
/// text input, no reasoning, zero prices, a 128k context window, 16k output tokens.
#[derive(Debug, Clone)]
#[must_use]
pub struct ModelBuilder {
    model: Model,
}

impl ModelBuilder {
    /// The id sent to the provider (required).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.model.id = id.into();
        self
    }

    /// The display name (the id when not set).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.model.name = name.into();
        self
    }

    /// The wire api (required; [`api`] has the known ones).
    pub fn api(mut self, api: impl Into<String>) -> Self {
        self.model.api = api.into();
        self
    }

    /// The provider (required): the name its API keys and compat defaults are found by.
    pub fn provider(mut self, provider: impl Into<String>) -> Self {
        self.model.provider = provider.into();
        self
    }

    /// The endpoint's base URL.
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.model.base_url = base_url.into();
        self
    }

    /// Whether the model can reason.
    pub fn reasoning(mut self, reasoning: bool) -> Self {
        self.model.reasoning = reasoning;
        self
    }

    /// The accepted inputs.
    pub fn input(mut self, input: Vec<InputModality>) -> Self {
        self.model.input = input;
        self
    }

    /// The prices (dollars per million tokens).
    pub fn cost(mut self, cost: ModelCost) -> Self {
        self.model.cost = cost;
        self
    }

    /// The context window in tokens.
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.model.context_window = tokens;
        self
    }

    /// The most output tokens.
    pub fn max_tokens(mut self, tokens: u64) -> Self {
        self.model.max_tokens = tokens;
        self
    }

    /// A header sent with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.model = self.model.with_header(name, value);
        self
    }

    /// Whether the endpoint takes no API key (see [`Model::keyless`]).
    pub fn keyless(mut self, keyless: bool) -> Self {
        self.model.keyless = keyless;
        self
    }

    /// The `compat` object (pi's per-api compatibility settings), as JSON or typed (see
    /// [`Model::with_compat`]).
    pub fn compat(mut self, compat: impl Into<Value>) -> Self {
        self.model.compat = Some(compat.into());
        self
    }

    /// The model, or an error of kind [`ErrorKind::Config`](crate::ErrorKind::Config) naming
    /// the first required part that is missing (id, api, provider).
    pub fn build(self) -> Result<Model, crate::Error> {
        let mut model = self.model;
        for (part, value) in [
            ("an id", &model.id),
            ("an api", &model.api),
            ("a provider", &model.provider),
        ] {
            if value.is_empty() {
                return Err(crate::Error::new(
                    crate::ErrorKind::Config,
                    format!("A model needs {part}"),
                ));
            }
        }
        if model.name.is_empty() {
            model.name.clone_from(&model.id);
        }
        Ok(model)
    }
}

#[cfg(test)]
mod builder_tests {
    use super::*;

    #[test]
    fn the_builder_names_what_is_missing_and_matches_new() {
        let full = || {
            Model::builder()
                .id("m")
                .api("openai-completions")
                .provider("p")
        };
        for (builder, missing) in [
            (full().id(""), "an id"),
            (full().api(""), "an api"),
            (full().provider(""), "a provider"),
        ] {
            let error = builder.build().unwrap_err();
            assert_eq!(error.kind(), crate::ErrorKind::Config);
            assert_eq!(error.message(), format!("A model needs {missing}"));
        }
        let built = full()
            .base_url("http://127.0.0.1:1/v1")
            .header("x", "y")
            .build()
            .unwrap();
        let new = Model::new("m", "openai-completions", "p", "http://127.0.0.1:1/v1")
            .with_header("x", "y");
        assert_eq!(built, new);
        assert_eq!(full().name("Named").build().unwrap().name, "Named");
    }
}
