//! [`ProviderConfig`]: a provider and its models that an extension adds to the session's
//! model registry (pi's `registerProvider`).

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::providers::ApiProvider;

/// A provider an extension registers: a `models.json` provider entry (pi's
/// `ProviderConfig`: `baseUrl`, `apiKey`, `api`, `headers`, `authHeader`, `compat`,
/// `models`) and, for an api the crate does not speak, its implementation (pi's
/// `streamSimple`).
///
/// ```
/// use pi_engine::extensions::{Extension, ProviderConfig};
///
/// let ext = Extension::new("corp-llm", |pi| {
///     pi.register_provider("corp", ProviderConfig::new(serde_json::json!({
///         "baseUrl": "https://llm.corp.example/v1",
///         "apiKey": "CORP_LLM_KEY",
///         "api": "openai-completions",
///         "models": [{"id": "corp-large", "contextWindow": 200000}]
///     })));
/// });
/// # let _ = ext;
/// ```
#[derive(Clone)]
pub struct ProviderConfig {
    pub(crate) entry: Value,
    pub(crate) stream: Option<Arc<dyn ApiProvider>>,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The entry may hold a key: only its field names are shown.
        let fields: Vec<&str> = self
            .entry
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        f.debug_struct("ProviderConfig")
            .field("fields", &fields)
            .field("stream", &self.stream.as_ref().map(|s| s.api().to_owned()))
            .finish()
    }
}

impl ProviderConfig {
    /// A provider from its `models.json` entry (pi's JSON).
    pub fn new(entry: Value) -> Self {
        ProviderConfig {
            entry,
            stream: None,
        }
    }

    /// Streams the provider's api with `provider` (registered in the global
    /// [`ApiRegistry`](crate::providers::ApiRegistry) under its api, and removed again with
    /// the provider).
    #[must_use]
    pub fn with_stream(mut self, provider: Arc<dyn ApiProvider>) -> Self {
        self.stream = Some(provider);
        self
    }
}
