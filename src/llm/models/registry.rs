//! [`ModelRegistry`]: the built-in catalog plus what a `models.json` adds, and the API key
//! and headers of each request (pi-coding-agent's `ModelRegistry`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::catalog;
use super::config_value::resolve_config_value_uncached;
use super::models_json::{self, ModelOverride, ModelsConfig, ModelsJsonError};
use super::slot::Slot;
use crate::llm::env_keys::env_api_key;
use crate::llm::error::{Error, ErrorKind};
use crate::llm::message::Extra;
use crate::llm::model::{InputModality, Model, ModelCost};
use crate::llm::options::{ApiKey, StreamOptions};

/// Where a [`ModelRegistry`] finds stored credentials (pi's `AuthStorage`: `auth.json`,
/// OAuth tokens, environment variables). A `models.json` `apiKey` is the fallback when the
/// source has none.
///
/// ```
/// use pi_engine::llm::ApiKey;
/// use pi_engine::models::CredentialSource;
///
/// /// One key for one provider.
/// #[derive(Debug)]
/// struct Fixed;
///
/// #[async_trait::async_trait]
/// impl CredentialSource for Fixed {
///     fn has_auth(&self, provider: &str) -> bool {
///         provider == "openai"
///     }
///     async fn api_key(&self, provider: &str) -> Option<ApiKey> {
///         (provider == "openai").then(|| ApiKey::new("sk-stored"))
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait CredentialSource: Send + Sync + fmt::Debug {
    /// True when a credential for `provider` is configured. Must be fast: no refresh, no I/O
    /// beyond reading what is already known.
    fn has_auth(&self, provider: &str) -> bool;

    /// The key for `provider` (refreshing it first if the source needs to), or `None`.
    ///
    /// # Cancel safety
    ///
    /// Implementations should be cancel safe: the registry's callers may drop the future.
    async fn api_key(&self, provider: &str) -> Option<ApiKey>;
}

/// Credentials from environment variables only: pi's table
/// ([`env_var_names`](crate::llm::env_var_names)), plus Google Vertex ADC and AWS credentials.
/// The default [`CredentialSource`].
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvCredentials;

#[async_trait::async_trait]
impl CredentialSource for EnvCredentials {
    fn has_auth(&self, provider: &str) -> bool {
        env_api_key(provider).is_some()
    }

    async fn api_key(&self, provider: &str) -> Option<ApiKey> {
        env_api_key(provider)
    }
}

/// A [`CredentialSource`] with nothing in it: for a registry (or the `pi-engine` command's
/// `auth.json` store) that must not read the environment — tests, sandboxes.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCredentials;

#[async_trait::async_trait]
impl CredentialSource for NoCredentials {
    fn has_auth(&self, _provider: &str) -> bool {
        false
    }

    async fn api_key(&self, _provider: &str) -> Option<ApiKey> {
        None
    }
}

/// What `models.json` says about authenticating a provider's requests.
#[derive(Clone, Default)]
struct ProviderRequest {
    /// A config value: `!command`, an environment variable name, or the key.
    api_key: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    /// Send `Authorization: Bearer <key>`.
    auth_header: bool,
}

/// The API key and headers of one request, from [`ModelRegistry::request_auth`]. Header
/// values are redacted from `Debug` (they often hold credentials).
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestAuth {
    /// The key; `None` leaves the provider to read its environment variable.
    pub api_key: Option<ApiKey>,
    /// Headers to add to the request (the model's, the provider's and the model entry's of
    /// `models.json`, later ones winning).
    pub headers: Option<BTreeMap<String, String>>,
}

impl fmt::Debug for RequestAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestAuth")
            .field("api_key", &self.api_key)
            .field("headers", &self.headers.as_ref().map(BTreeMap::keys))
            .finish()
    }
}

impl RequestAuth {
    /// Options for the request: the key (when there is one) replaces `options.api_key`, and
    /// the headers go under `options.headers` (which win on conflicts), as pi's SDK does.
    ///
    /// ```
    /// use pi_engine::StreamOptions;
    /// use pi_engine::models::RequestAuth;
    ///
    /// let options = RequestAuth::default().apply(StreamOptions::new().with_header("x", "1"));
    /// assert_eq!(options.headers.unwrap()["x"], "1");
    /// ```
    #[must_use]
    pub fn apply(self, mut options: StreamOptions) -> StreamOptions {
        if let Some(key) = self.api_key {
            options.api_key = Some(key);
        }
        if let Some(mut headers) = self.headers {
            headers.extend(options.headers.take().unwrap_or_default());
            options.headers = Some(headers);
        }
        options
    }
}

/// The models a program can use: pi's built-in catalog, changed and extended by a
/// `models.json`, and the credentials to call them.
///
/// ```
/// use pi_engine::models::ModelRegistry;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let registry = ModelRegistry::from_models_json(r#"{
///   "providers": {
///     "ollama": {
///       "baseUrl": "http://127.0.0.1:11434/v1",
///       "api": "openai-completions",
///       "apiKey": "ollama",
///       "models": [{ "id": "llama3.1:8b" }]
///     },
///     // Built-in providers can be redirected and their models changed.
///     "anthropic": { "modelOverrides": { "claude-opus-4-7": { "maxTokens": 4096 } } }
///   }
/// }"#).unwrap();
///
/// let local = registry.find("ollama", "llama3.1:8b").unwrap();
/// assert_eq!(local.context_window, 128_000); // defaults for local servers
/// assert_eq!(registry.find("anthropic", "claude-opus-4-7").unwrap().max_tokens, 4096);
///
/// // Per request: the key ("ollama" is not a variable name, so it is the key itself).
/// let auth = registry.request_auth(local).await.unwrap();
/// assert_eq!(auth.api_key.unwrap().expose(), "ollama");
/// # }
/// ```
///
/// A registry whose `models.json` failed to load is best replaced by
/// [`ModelRegistry::new`] (built-in models only), as pi does.
#[derive(Clone)]
pub struct ModelRegistry {
    /// Built-in models stay in the static catalog until read or changed ([`Slot`]).
    models: Vec<Slot>,
    requests: HashMap<String, ProviderRequest>,
    /// `models.json` headers of single models (custom definitions and overrides).
    model_headers: HashMap<(String, String), BTreeMap<String, String>>,
    runtime_keys: HashMap<String, ApiKey>,
    credentials: Arc<dyn CredentialSource>,
    /// Providers registered at run time ([`ModelRegistry::register_provider`]), in order,
    /// and the registry as it was before the first: unregistering one rebuilds from it.
    dynamic: Vec<(String, Value)>,
    before_dynamic: Option<Arc<Snapshot>>,
}

/// The registry's models and request settings, before run-time registrations.
#[derive(Clone)]
struct Snapshot {
    models: Vec<Slot>,
    requests: HashMap<String, ProviderRequest>,
    model_headers: HashMap<(String, String), BTreeMap<String, String>>,
}

impl fmt::Debug for ModelRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelRegistry")
            .field("models", &self.models.len())
            .field("configured_providers", &self.requests.keys())
            .field("runtime_keys", &self.runtime_keys.keys())
            .field("credentials", &self.credentials)
            .finish()
    }
}

impl Default for ModelRegistry {
    fn default() -> Self {
        ModelRegistry::new()
    }
}

impl ModelRegistry {
    /// The built-in models, with keys from the environment ([`EnvCredentials`]).
    pub fn new() -> Self {
        ModelRegistry {
            models: {
                let mut models = Vec::with_capacity(catalog::model_count());
                models.extend(catalog::entries().map(|(p, e)| Slot::builtin(p, e)));
                models
            },
            requests: HashMap::new(),
            model_headers: HashMap::new(),
            runtime_keys: HashMap::new(),
            credentials: Arc::new(EnvCredentials),
            dynamic: Vec::new(),
            before_dynamic: None,
        }
    }

    /// Adds or changes a provider at run time (pi's `registerProvider`, what an extension's
    /// [`register_provider`](crate::extensions::ExtensionApi::register_provider) does).
    /// `config` is a provider entry of `models.json` (`baseUrl`, `apiKey`, `api`,
    /// `headers`, `authHeader`, `compat`, `models`): with `models`, they replace every model
    /// the provider had; without, its `baseUrl` and headers apply to its models. Registering
    /// a provider again merges the new entry's fields into the old.
    ///
    /// ```
    /// use pi_engine::models::ModelRegistry;
    ///
    /// let mut registry = ModelRegistry::new();
    /// registry.register_provider("corp", serde_json::json!({
    ///     "baseUrl": "https://llm.corp.example/v1", "apiKey": "CORP_KEY",
    ///     "api": "openai-completions", "models": [{"id": "corp-large"}]
    /// })).unwrap();
    /// assert!(registry.find("corp", "corp-large").is_some());
    /// registry.unregister_provider("corp");
    /// assert!(registry.find("corp", "corp-large").is_none());
    /// ```
    ///
    /// # Errors
    ///
    /// As for `models.json`: a field of the wrong type, models without `baseUrl`, `apiKey`
    /// or `api` (nothing is changed then).
    pub fn register_provider(
        &mut self,
        name: impl Into<String>,
        config: Value,
    ) -> Result<(), ModelsJsonError> {
        let name = name.into();
        let merged = match self.dynamic.iter().find(|(n, _)| *n == name) {
            Some((_, Value::Object(old))) => {
                let mut merged = old.clone();
                if let Value::Object(new) = &config {
                    for (k, v) in new {
                        if !v.is_null() {
                            merged.insert(k.clone(), v.clone());
                        }
                    }
                }
                Value::Object(merged)
            }
            _ => config,
        };
        let parsed = Self::parse_provider_entry(&name, &merged)?;
        if self.before_dynamic.is_none() {
            self.before_dynamic = Some(Arc::new(self.snapshot()));
        }
        self.apply_dynamic(&name, parsed);
        match self.dynamic.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = merged,
            None => self.dynamic.push((name, merged)),
        }
        Ok(())
    }

    /// Removes a provider registered with [`register_provider`](Self::register_provider):
    /// the registry is as if it had never been registered (built-in models it replaced come
    /// back). Does nothing for a provider that was not registered so.
    pub fn unregister_provider(&mut self, name: &str) {
        if !self.dynamic.iter().any(|(n, _)| n == name) {
            return;
        }
        self.dynamic.retain(|(n, _)| n != name);
        let Some(base) = self.before_dynamic.clone() else {
            return;
        };
        self.models = base.models.clone();
        self.requests = base.requests.clone();
        self.model_headers = base.model_headers.clone();
        for (n, config) in self.dynamic.clone() {
            // Each was valid when it was registered.
            if let Ok(parsed) = Self::parse_provider_entry(&n, &config) {
                self.apply_dynamic(&n, parsed);
            }
        }
    }

    /// The providers registered at run time, in order.
    pub fn registered_providers(&self) -> Vec<&str> {
        self.dynamic.iter().map(|(n, _)| n.as_str()).collect()
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            models: self.models.clone(),
            requests: self.requests.clone(),
            model_headers: self.model_headers.clone(),
        }
    }

    fn parse_provider_entry(name: &str, config: &Value) -> Result<ModelsConfig, ModelsJsonError> {
        let mut providers = Map::new();
        providers.insert(name.to_owned(), config.clone());
        let text = serde_json::json!({ "providers": providers }).to_string();
        models_json::parse(&text, catalog::is_builtin_provider)
    }

    /// pi's `applyProviderConfig`: models replace the provider's; without models, the
    /// `baseUrl` applies to its models.
    fn apply_dynamic(&mut self, name: &str, config: ModelsConfig) {
        let replaces = config.providers.iter().any(|(_, p)| !p.models.is_empty());
        if replaces {
            self.models.retain(|m| m.provider() != name);
        }
        self.apply(config);
    }

    /// The built-in models changed and extended by a `models.json` text.
    ///
    /// Missing fields of a custom model get defaults for local servers: `name` = id, no
    /// reasoning, text input, zero prices, a 128 000-token context window, 16 384 output
    /// tokens. A custom model of a built-in provider inherits the `api` and `baseUrl` of the
    /// provider's first built-in model. A provider's `baseUrl` and `compat` apply to its
    /// built-in models too; `modelOverrides` change single built-in models (prices and
    /// `compat` merged field by field). A custom model with a built-in's provider and id
    /// replaces it.
    ///
    /// Keys and headers configured here are not copied into the models (their values may
    /// name variables or commands): get them for each request with
    /// [`request_auth`](Self::request_auth).
    pub fn from_models_json(text: &str) -> Result<Self, ModelsJsonError> {
        let config = models_json::parse(text, catalog::is_builtin_provider)?;
        let mut registry = ModelRegistry::new();
        registry.apply(config);
        Ok(registry)
    }

    /// [`from_models_json`](Self::from_models_json) with the content of `path`; a missing
    /// file gives the built-in models (pi's `~/.pi/agent/models.json` is optional).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ModelsJsonError> {
        let path = path.as_ref();
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_models_json(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ModelRegistry::new()),
            Err(e) => Err(ModelsJsonError::Read {
                path: path.to_owned(),
                message: e.to_string(),
            }),
        }
    }

    /// Uses `source` for stored credentials instead of [`EnvCredentials`].
    #[must_use]
    pub fn with_credentials(mut self, source: Arc<dyn CredentialSource>) -> Self {
        self.credentials = source;
        self
    }

    /// Sets a key for `provider` that wins over every other source (pi's `--api-key`).
    pub fn set_api_key(&mut self, provider: impl Into<String>, key: impl Into<ApiKey>) {
        self.runtime_keys.insert(provider.into(), key.into());
    }

    /// Every model: built-in ones (in pi's order) then custom ones (in file order).
    ///
    /// Built-in models are kept as static data until read, and this reads each one; to
    /// look models up, [`find`](Self::find), [`ids`](Self::ids) and
    /// [`models_of`](Self::models_of) read only what they return.
    ///
    /// ```
    /// use pi_engine::models::ModelRegistry;
    ///
    /// let registry = ModelRegistry::new();
    /// let priced = registry.all().filter(|m| m.cost.input > 0.0).count();
    /// assert!(priced > 0 && priced < registry.all().len());
    /// ```
    pub fn all(&self) -> impl ExactSizeIterator<Item = &Model> + DoubleEndedIterator + '_ {
        self.models.iter().map(Slot::get)
    }

    /// The `(provider, id)` of every model, in [`all`](Self::all)'s order, without reading
    /// the models.
    ///
    /// ```
    /// use pi_engine::models::ModelRegistry;
    ///
    /// let registry = ModelRegistry::new();
    /// assert!(registry.ids().any(|(provider, id)| (provider, id) == ("openai", "gpt-4o")));
    /// ```
    pub fn ids(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + DoubleEndedIterator + '_ {
        self.models.iter().map(|m| (m.provider(), m.id()))
    }

    /// The models of `provider`, in [`all`](Self::all)'s order.
    ///
    /// ```
    /// use pi_engine::models::ModelRegistry;
    ///
    /// let registry = ModelRegistry::new();
    /// assert!(registry.models_of("anthropic").all(|m| m.api == "anthropic-messages"));
    /// ```
    pub fn models_of<'a>(&'a self, provider: &'a str) -> impl Iterator<Item = &'a Model> + 'a {
        self.models
            .iter()
            .filter(move |m| m.provider() == provider)
            .map(Slot::get)
    }

    /// The model `id` of `provider`.
    pub fn find(&self, provider: &str, id: &str) -> Option<&Model> {
        self.models
            .iter()
            .find(|m| m.provider() == provider && m.id() == id)
            .map(Slot::get)
    }

    /// The models whose provider has credentials configured ([`has_auth`](Self::has_auth)).
    pub fn available(&self) -> Vec<&Model> {
        // One check per provider, not per model (a check may read files and variables).
        let mut by_provider: HashMap<&str, bool> = HashMap::new();
        self.models
            .iter()
            .filter(|m| {
                *by_provider
                    .entry(m.provider())
                    .or_insert_with(|| self.has_auth_for(m.provider(), m.keyless()))
            })
            .map(Slot::get)
            .collect()
    }

    /// True when requests to `model` have a key: set with
    /// [`set_api_key`](Self::set_api_key), in the credential source, or an `apiKey` in
    /// `models.json` (not run or looked up here); or need none ([`Model::keyless`]).
    pub fn has_auth(&self, model: &Model) -> bool {
        self.has_auth_for(&model.provider, model.keyless)
    }

    fn has_auth_for(&self, provider: &str, keyless: bool) -> bool {
        keyless
            || self.runtime_keys.contains_key(provider)
            || self.credentials.has_auth(provider)
            || self
                .requests
                .get(provider)
                .is_some_and(|r| r.api_key.is_some())
    }

    /// The API key and headers for one request to `model` (pi's `getApiKeyAndHeaders`):
    ///
    /// * the key: [`set_api_key`](Self::set_api_key), else the credential source, else the
    ///   provider's `apiKey` in `models.json` (a `!command` is run again for each request);
    /// * the headers: the model's own, then the provider's `headers`, then the model entry's
    ///   `headers` from `models.json`, each value resolved like a key; with `authHeader`,
    ///   `Authorization: Bearer <key>`.
    ///
    /// Fails (kind [`ErrorKind::Auth`]) when a `!command` gives nothing, or when
    /// `authHeader` is set and there is no key.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills a running `!command`; nothing else happens.
    pub async fn request_auth(&self, model: &Model) -> Result<RequestAuth, Error> {
        let provider = model.provider.as_str();
        let request = self.requests.get(provider);
        let mut api_key = match self.runtime_keys.get(provider) {
            Some(key) => Some(key.clone()),
            None => self.credentials.api_key(provider).await,
        };
        if api_key.is_none()
            && let Some(config) = request.and_then(|r| r.api_key.as_deref())
        {
            let what = format!("API key for provider \"{provider}\"");
            api_key = Some(ApiKey::new(resolve_or_fail(config, &what).await?));
        }
        let provider_headers = match request.and_then(|r| r.headers.as_ref()) {
            Some(h) => resolve_headers(h, &format!("provider \"{provider}\"")).await?,
            None => BTreeMap::new(),
        };
        let key = (model.provider.clone(), model.id.clone());
        let model_headers = match self.model_headers.get(&key) {
            Some(h) => resolve_headers(h, &format!("model \"{provider}/{}\"", model.id)).await?,
            None => BTreeMap::new(),
        };
        let mut headers = model.headers.clone().unwrap_or_default();
        headers.extend(provider_headers);
        headers.extend(model_headers);
        if request.is_some_and(|r| r.auth_header) {
            let Some(key) = &api_key else {
                return Err(Error::new(
                    ErrorKind::Auth,
                    format!("No API key found for \"{provider}\""),
                ));
            };
            headers.insert("Authorization".into(), format!("Bearer {}", key.expose()));
        }
        Ok(RequestAuth {
            api_key,
            headers: (!headers.is_empty()).then_some(headers),
        })
    }

    /// Applies a parsed `models.json` (pi's `loadModels`).
    fn apply(&mut self, config: ModelsConfig) {
        // Request settings and per-model headers first: a custom model's headers replace
        // (or, when it has none, remove) those of an override with the same id, as in pi.
        for (name, provider) in &config.providers {
            if provider.api_key.is_some()
                || provider.headers.is_some()
                || provider.auth_header == Some(true)
            {
                self.requests.insert(
                    name.clone(),
                    ProviderRequest {
                        api_key: provider.api_key.clone(),
                        headers: provider.headers.clone(),
                        auth_header: provider.auth_header.unwrap_or(false),
                    },
                );
            }
            for (id, over) in &provider.model_overrides {
                self.store_model_headers(name, id, over.headers.as_ref());
            }
        }
        // Provider-level baseUrl/compat and model overrides of built-in models.
        for (name, provider) in &config.providers {
            let overrides_provider = provider.base_url.is_some() || provider.compat.is_some();
            for slot in self.models.iter_mut().filter(|m| m.provider() == *name) {
                let over = provider.model_overrides.get(slot.id());
                if !overrides_provider && over.is_none() {
                    continue;
                }
                let model = slot.get_mut();
                if overrides_provider {
                    if let Some(url) = &provider.base_url {
                        model.base_url = url.clone();
                    }
                    model.compat = merge_compat(model.compat.take(), provider.compat.as_ref());
                }
                if let Some(over) = over {
                    apply_override(model, over);
                }
            }
        }
        // Custom models: replace a built-in with the same provider and id, else append.
        // Reserved exactly: one push past the catalog's capacity would double the table.
        self.models
            .reserve_exact(config.providers.iter().map(|(_, p)| p.models.len()).sum());
        for (name, provider) in &config.providers {
            let defaults = catalog::provider_defaults(name);
            for def in &provider.models {
                let Some(api) = def
                    .api
                    .clone()
                    .or_else(|| provider.api.clone())
                    .or_else(|| defaults.map(|d| d.0.to_owned()))
                else {
                    continue;
                };
                let Some(base_url) = def
                    .base_url
                    .clone()
                    .or_else(|| provider.base_url.clone())
                    .or_else(|| defaults.map(|d| d.1.to_owned()))
                else {
                    continue;
                };
                let compat = merge_compat(
                    provider.compat.clone().map(Value::Object),
                    def.compat.as_ref(),
                );
                self.store_model_headers(name, &def.id, def.headers.as_ref());
                // A custom provider's local server that takes no key (pi requires an
                // `apiKey`; a built-in provider's key comes from its credentials).
                let keyless = provider.api_key.is_none()
                    && !catalog::is_builtin_provider(name)
                    && models_json::is_loopback_url(&base_url);
                let model = Model {
                    id: def.id.clone(),
                    name: def.name.clone().unwrap_or_else(|| def.id.clone()),
                    api,
                    provider: name.clone(),
                    base_url,
                    reasoning: def.reasoning.unwrap_or(false),
                    input: def
                        .input
                        .clone()
                        .unwrap_or_else(|| vec![InputModality::Text]),
                    cost: def
                        .cost
                        .map(|c| ModelCost::new(c.input, c.output, c.cache_read, c.cache_write))
                        .unwrap_or_default(),
                    context_window: def.context_window.map_or(128_000, to_u64),
                    max_tokens: def.max_tokens.map_or(16_384, to_u64),
                    // Resolved per request (values may name variables or commands).
                    headers: None,
                    keyless,
                    compat,
                    thinking_level_map: def.thinking_level_map.clone(),
                    extra: Extra::new(),
                };
                match self
                    .models
                    .iter_mut()
                    .find(|m| m.provider() == model.provider && m.id() == model.id)
                {
                    Some(slot) => *slot = Slot::owned(model),
                    None => self.models.push(Slot::owned(model)),
                }
            }
        }
    }

    fn store_model_headers(
        &mut self,
        provider: &str,
        id: &str,
        headers: Option<&BTreeMap<String, String>>,
    ) {
        let key = (provider.to_owned(), id.to_owned());
        match headers.filter(|h| !h.is_empty()) {
            Some(h) => {
                self.model_headers.insert(key, h.clone());
            }
            None => {
                self.model_headers.remove(&key);
            }
        }
    }
}

/// pi's `applyModelOverride`: simple fields replaced, prices and the level map merged.
fn apply_override(model: &mut Model, over: &ModelOverride) {
    if let Some(name) = &over.name {
        model.name = name.clone();
    }
    if let Some(reasoning) = over.reasoning {
        model.reasoning = reasoning;
    }
    if let Some(map) = &over.thinking_level_map {
        let merged = model.thinking_level_map.get_or_insert_with(BTreeMap::new);
        merged.extend(map.iter().map(|(k, v)| (*k, v.clone())));
    }
    if let Some(input) = &over.input {
        model.input = input.clone();
    }
    if let Some(n) = over.context_window {
        model.context_window = to_u64(n);
    }
    if let Some(n) = over.max_tokens {
        model.max_tokens = to_u64(n);
    }
    if let Some(cost) = over.cost {
        let c = &mut model.cost;
        c.input = cost.input.unwrap_or(c.input);
        c.output = cost.output.unwrap_or(c.output);
        c.cache_read = cost.cache_read.unwrap_or(c.cache_read);
        c.cache_write = cost.cache_write.unwrap_or(c.cache_write);
    }
    model.compat = merge_compat(model.compat.take(), over.compat.as_ref());
}

/// pi's `mergeCompat`: the override's fields win; the routing objects
/// (`openRouterRouting`, `vercelGatewayRouting`) are merged one level deeper.
fn merge_compat(base: Option<Value>, over: Option<&Map<String, Value>>) -> Option<Value> {
    let Some(over) = over else {
        return base;
    };
    let base = match base {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let mut merged = base.clone();
    merged.extend(over.iter().map(|(k, v)| (k.clone(), v.clone())));
    for key in ["openRouterRouting", "vercelGatewayRouting"] {
        if base.get(key).is_some_and(truthy) || over.get(key).is_some_and(truthy) {
            let mut routing = Map::new();
            for side in [base.get(key), over.get(key)] {
                if let Some(Value::Object(fields)) = side {
                    routing.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
            }
            merged.insert(key.to_owned(), Value::Object(routing));
        }
    }
    Some(Value::Object(merged))
}

/// JavaScript truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// A JSON number as a token count (pi keeps the number; counts are whole and positive).
fn to_u64(n: f64) -> u64 {
    // `as` saturates: negative and NaN become 0.
    n as u64
}

async fn resolve_or_fail(config: &str, what: &str) -> Result<String, Error> {
    resolve_config_value_uncached(config).await.ok_or_else(|| {
        let message = match config.strip_prefix('!') {
            Some(command) => format!("Failed to resolve {what} from shell command: {command}"),
            None => format!("Failed to resolve {what}"),
        };
        Error::new(ErrorKind::Auth, message)
    })
}

async fn resolve_headers(
    headers: &BTreeMap<String, String>,
    what: &str,
) -> Result<BTreeMap<String, String>, Error> {
    let mut resolved = BTreeMap::new();
    for (name, config) in headers {
        let value = resolve_or_fail(config, &format!("{what} header \"{name}\"")).await?;
        resolved.insert(name.clone(), value);
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::thinking::ThinkingLevel;
    use serde_json::json;

    #[test]
    fn custom_models_get_local_defaults() {
        let r = ModelRegistry::from_models_json(
            r#"{"providers": {"lm": {"baseUrl": "http://127.0.0.1:1234/v1", "apiKey": "x",
                "api": "openai-completions", "compat": {"supportsDeveloperRole": false},
                "models": [{"id": "qwen", "compat": {"thinkingFormat": "qwen"}},
                           {"id": "big", "name": "Big", "api": "openai-responses", "baseUrl": "http://b",
                            "reasoning": true, "input": ["text", "image"], "contextWindow": 1000,
                            "maxTokens": 10, "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
                            "thinkingLevelMap": {"off": null, "xhigh": "max", "bogus": 1}}]}}}"#,
        )
        .unwrap();
        let m = r.find("lm", "qwen").unwrap();
        assert_eq!(m.name, "qwen");
        assert_eq!(m.api, "openai-completions");
        assert_eq!(m.base_url, "http://127.0.0.1:1234/v1");
        assert!(!m.reasoning);
        assert_eq!(m.input, vec![InputModality::Text]);
        assert_eq!((m.context_window, m.max_tokens), (128_000, 16_384));
        assert_eq!(m.cost, ModelCost::default());
        assert_eq!(
            m.compat,
            Some(json!({"supportsDeveloperRole": false, "thinkingFormat": "qwen"}))
        );
        let big = r.find("lm", "big").unwrap();
        assert_eq!(
            (big.api.as_str(), big.base_url.as_str()),
            ("openai-responses", "http://b")
        );
        assert_eq!((big.context_window, big.max_tokens), (1000, 10));
        assert_eq!(big.cost.output, 2.0);
        let map = big.thinking_level_map.as_ref().unwrap();
        assert_eq!(map.len(), 2);
        assert_eq!(map[&ThinkingLevel::Off], None);
        assert_eq!(r.all().len(), 969 + 2);
        assert_eq!(r.all().nth(969).unwrap().id, "qwen");
    }

    #[test]
    fn built_in_providers_inherit_and_override() {
        let r = ModelRegistry::from_models_json(
            r#"{"providers": {
                "openrouter": {"baseUrl": "http://proxy/v1",
                               "compat": {"openRouterRouting": {"only": ["a"]}},
                               "modelOverrides": {"anthropic/claude-opus-4.6": {
                                   "name": "Renamed", "cost": {"input": 99},
                                   "thinkingLevelMap": {"low": null},
                                   "compat": {"openRouterRouting": {"order": ["b"]}}}},
                               "models": [{"id": "my/model"}]},
                "anthropic": {"models": [{"id": "claude-opus-4-7", "name": "Mine"}]}
            }}"#,
        )
        .unwrap();
        let builtin = catalog::model("openrouter", "anthropic/claude-opus-4.6").unwrap();
        let over = r.find("openrouter", "anthropic/claude-opus-4.6").unwrap();
        assert_eq!(over.name, "Renamed");
        assert_eq!(over.base_url, "http://proxy/v1");
        assert_eq!(over.cost.input, 99.0);
        assert_eq!(over.cost.output, builtin.cost.output);
        assert_eq!(
            over.compat,
            Some(json!({"openRouterRouting": {"only": ["a"], "order": ["b"]}}))
        );
        let map = over.thinking_level_map.as_ref().unwrap();
        assert_eq!(map[&ThinkingLevel::Low], None);
        // Every built-in model of the provider gets the provider's baseUrl.
        assert!(
            r.models_of("openrouter")
                .all(|m| m.base_url == "http://proxy/v1")
        );
        // A custom model of a built-in provider inherits its first model's api.
        let custom = r.find("openrouter", "my/model").unwrap();
        assert_eq!(custom.api, "openai-completions");
        assert_eq!(custom.base_url, "http://proxy/v1");
        // A custom model with a built-in's id replaces it in place.
        let replaced = r.find("anthropic", "claude-opus-4-7").unwrap();
        assert_eq!(replaced.name, "Mine");
        assert_eq!(replaced.base_url, "https://api.anthropic.com");
        assert_eq!(replaced.context_window, 128_000);
        assert_eq!(r.all().len(), 969 + 1);
    }

    #[tokio::test]
    async fn request_auth_resolves_keys_and_headers() {
        let r = ModelRegistry::from_models_json(
            r#"{"providers": {"corp": {"baseUrl": "http://c", "api": "openai-completions",
                "apiKey": "!echo cmd-key", "authHeader": true,
                "headers": {"X-Team": "PI_ENGINE_TEST_UNSET_NAME", "X-Both": "provider"},
                "models": [{"id": "m", "headers": {"X-Both": "model", "X-Cmd": "!printf hv"}}]}}}"#,
        )
        .unwrap();
        let model = r.find("corp", "m").unwrap().clone();
        assert!(r.has_auth(&model));
        assert!(r.available().iter().any(|m| m.id == "m"));
        let auth = r.request_auth(&model).await.unwrap();
        assert_eq!(auth.api_key.as_ref().unwrap().expose(), "cmd-key");
        let headers = auth.headers.clone().unwrap();
        assert_eq!(headers["X-Team"], "PI_ENGINE_TEST_UNSET_NAME");
        assert_eq!(headers["X-Both"], "model");
        assert_eq!(headers["X-Cmd"], "hv");
        assert_eq!(headers["Authorization"], "Bearer cmd-key");
        let debug = format!("{auth:?}");
        assert!(!debug.contains("cmd-key"), "{debug}");

        // A runtime key wins.
        let mut r2 = r.clone();
        r2.set_api_key("corp", "runtime");
        let auth = r2.request_auth(&model).await.unwrap();
        assert_eq!(auth.api_key.unwrap().expose(), "runtime");

        // Applying keeps the caller's headers on top.
        let options = r
            .request_auth(&model)
            .await
            .unwrap()
            .apply(StreamOptions::new().with_header("X-Both", "caller"));
        assert_eq!(options.headers.as_ref().unwrap()["X-Both"], "caller");
        assert_eq!(options.api_key.unwrap().expose(), "cmd-key");
    }

    #[tokio::test]
    async fn failing_commands_and_missing_keys_are_auth_errors() {
        let r = ModelRegistry::from_models_json(
            r#"{"providers": {"corp": {"baseUrl": "http://c", "api": "openai-completions",
                "apiKey": "!exit 1", "models": [{"id": "m"}]},
                "bare": {"baseUrl": "http://b", "api": "openai-completions", "apiKey": "k",
                "headers": {"H": "!exit 2"}, "models": [{"id": "n"}]}}}"#,
        )
        .unwrap();
        let err = r
            .request_auth(r.find("corp", "m").unwrap())
            .await
            .unwrap_err();
        assert!(err.is_auth());
        assert_eq!(
            err.message(),
            "Failed to resolve API key for provider \"corp\" from shell command: exit 1"
        );
        let err = r
            .request_auth(r.find("bare", "n").unwrap())
            .await
            .unwrap_err();
        assert_eq!(
            err.message(),
            "Failed to resolve provider \"bare\" header \"H\" from shell command: exit 2"
        );

        let r = ModelRegistry::from_models_json(
            r#"{"providers": {"openai": {"authHeader": true, "headers": {"a": "b"}}}}"#,
        )
        .unwrap()
        .with_credentials(Arc::new(NoCredentials));
        let model = r.find("openai", "gpt-5.4").unwrap();
        assert!(!r.has_auth(model));
        let err = r.request_auth(model).await.unwrap_err();
        assert_eq!(err.message(), "No API key found for \"openai\"");
    }

    /// Built-in models read out of the static catalog so far.
    fn copied(r: &ModelRegistry) -> usize {
        r.models
            .iter()
            .filter(|s| matches!(s, Slot::Builtin { copy, .. } if copy.get().is_some()))
            .count()
    }

    #[test]
    fn lookups_read_only_the_models_they_return() {
        let mut r = ModelRegistry::from_models_json(
            r#"{"providers": {
                "local": {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions",
                          "models": [{"id": "a"}]},
                "anthropic": {"modelOverrides": {"claude-opus-4-7": {"maxTokens": 9}}}}}"#,
        )
        .unwrap();
        // A startup's lookups: the custom model, a provider's names and ids, its models.
        assert!(r.find("local", "a").is_some());
        assert_eq!(r.ids().len(), 970);
        assert!(r.ids().rev().any(|(p, _)| p == "anthropic"));
        assert_eq!(r.models_of("local").count(), 1);
        assert_eq!(copied(&r), 0);
        // The override changed one built-in model, which keeps its change.
        let changed = r.find("anthropic", "claude-opus-4-7").unwrap();
        assert_eq!(changed.max_tokens, 9);
        assert!(r.find("openai", "gpt-4o").is_some());
        assert_eq!(copied(&r), 1);
        // Only providers with keys are read; an environment with none reads none.
        r = r.with_credentials(Arc::new(NoCredentials));
        assert_eq!(r.available().len(), 1);
        assert_eq!(copied(&r), 1);
        assert_eq!(r.all().len(), 970);
        assert_eq!(r.all().count(), 970);
        assert_eq!(copied(&r), 969 - 1);
    }

    #[test]
    fn fractional_token_counts_are_truncated() {
        let r = ModelRegistry::from_models_json(
            r#"{"providers": {"x": {"baseUrl": "u", "apiKey": "k", "api": "a",
                "models": [{"id": "m", "contextWindow": 1000.9, "maxTokens": 10.5}]}}}"#,
        )
        .unwrap();
        let m = r.find("x", "m").unwrap();
        assert_eq!((m.context_window, m.max_tokens), (1000, 10));
    }

    #[test]
    fn model_headers_of_overrides_are_replaced_by_custom_definitions() {
        let r = ModelRegistry::from_models_json(
            r#"{"providers": {"openai": {
                "modelOverrides": {"gpt-5.4": {"headers": {"A": "1"}}, "gpt-5.5": {"headers": {"B": "2"}}},
                "models": [{"id": "gpt-5.4"}]}}}"#,
        )
        .unwrap();
        let key = |id: &str| ("openai".to_owned(), id.to_owned());
        assert!(!r.model_headers.contains_key(&key("gpt-5.4")));
        assert!(r.model_headers.contains_key(&key("gpt-5.5")));
    }

    #[test]
    fn load_reads_files_and_tolerates_a_missing_one() {
        let dir = std::env::temp_dir().join(format!("pi-engine-models-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = ModelRegistry::load(dir.join("none.json")).unwrap();
        assert_eq!(missing.all().len(), 969);
        let path = dir.join("models.json");
        std::fs::write(
            &path,
            "{ // local\n \"providers\": {\"x\": {\"baseUrl\": \"u\", \"apiKey\": \"k\", \"api\": \"a\", \"models\": [{\"id\": \"m\"},],},},}",
        )
        .unwrap();
        assert!(ModelRegistry::load(&path).unwrap().find("x", "m").is_some());
        let err = ModelRegistry::load(&dir).unwrap_err();
        assert!(matches!(err, ModelsJsonError::Read { .. }), "{err:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// No stored credentials and no environment: the state pi's golden was written in.
    #[derive(Debug)]
    struct Nothing;

    #[async_trait::async_trait]
    impl CredentialSource for Nothing {
        fn has_auth(&self, _: &str) -> bool {
            false
        }
        async fn api_key(&self, _: &str) -> Option<ApiKey> {
            None
        }
    }

    /// pi's `getApiKeyAndHeaders` result shape.
    fn pi_auth(result: Result<RequestAuth, Error>) -> Value {
        match result {
            Ok(auth) => {
                let mut v = json!({"ok": true});
                if let Some(key) = auth.api_key {
                    v["apiKey"] = key.expose().into();
                }
                if let Some(headers) = auth.headers {
                    v["headers"] = serde_json::to_value(headers).unwrap();
                }
                v
            }
            Err(e) => json!({"ok": false, "error": e.message()}),
        }
    }

    #[tokio::test]
    async fn matches_pis_model_registry_on_each_models_json() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/pi/models-json-golden.json"
        );
        let golden: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let cases = golden["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 13);
        for case in cases {
            let name = case["name"].as_str().unwrap();
            let text = case["text"].as_str().unwrap();
            let result = ModelRegistry::from_models_json(text);
            if let Some(pi_error) = case["error"].as_str() {
                let err = result.expect_err(name);
                match &err {
                    ModelsJsonError::Invalid(_) => {
                        assert_eq!(format!("{err}\n\nFile: <path>"), pi_error, "{name}")
                    }
                    ModelsJsonError::Syntax(_) => {
                        assert!(
                            pi_error.starts_with("Failed to parse models.json: "),
                            "{name}"
                        )
                    }
                    ModelsJsonError::Schema { .. } => assert!(
                        pi_error.starts_with("Invalid models.json schema:\n  - "),
                        "{name}: {err}"
                    ),
                    other => panic!("{name}: {other:?}"),
                }
                continue;
            }
            let registry = result.unwrap().with_credentials(Arc::new(Nothing));
            assert_eq!(registry.all().len() as u64, case["total"], "{name}");
            let changed: Vec<&Model> = registry
                .all()
                .filter(|m| catalog::model(&m.provider, &m.id).as_ref() != Some(*m))
                .collect();
            let pi_changed = case["changed"].as_array().unwrap();
            assert_eq!(changed.len(), pi_changed.len(), "{name}");
            for (ours, pi) in changed.iter().zip(pi_changed) {
                assert_eq!(serde_json::to_value(ours).unwrap(), pi["model"], "{name}");
                assert_eq!(
                    Value::Bool(registry.has_auth(ours)),
                    pi["available"],
                    "{name}"
                );
                let auth = pi_auth(registry.request_auth(ours).await);
                assert_eq!(auth, pi["auth"], "{name} {}", ours.id);
            }
            for probe in case["probes"].as_array().unwrap() {
                let provider = probe["provider"].as_str().unwrap();
                let first = registry.models_of(provider).next().unwrap();
                assert_eq!(first.id, probe["id"].as_str().unwrap());
                let auth = pi_auth(registry.request_auth(first).await);
                assert_eq!(auth, probe["auth"], "{name} probe {provider}");
            }
        }
    }
}
