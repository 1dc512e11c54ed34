//! pi's `models.json`: custom providers and models, and overrides of built-in ones.
//!
//! ```json
//! { "providers": { "<name>": {
//!     "baseUrl"?, "apiKey"?, "api"?, "headers"?, "compat"?, "authHeader"?,
//!     "models"?: [ { "id", "name"?, "api"?, "baseUrl"?, "reasoning"?, "thinkingLevelMap"?,
//!                    "input"?, "cost"?, "contextWindow"?, "maxTokens"?, "headers"?, "compat"? } ],
//!     "modelOverrides"?: { "<model id>": { …partial model fields… } } } } }
//! ```
//!
//! The file may hold `//` comments and trailing commas. Parsing and validation follow
//! pi-coding-agent's `model-registry.ts`; the registry applies the result
//! ([`super::registry`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::llm::model::InputModality;
use crate::llm::thinking::ThinkingLevel;

/// Why a `models.json` could not be used. The registry it was loaded into keeps only the
/// built-in models, as pi does.
///
/// ```
/// use pi_engine::models::{ModelRegistry, ModelsJsonError};
///
/// let err = ModelRegistry::from_models_json(r#"{"providers": {"ollama": {"models": [{"id": "llama3"}]}}}"#)
///     .unwrap_err();
/// let ModelsJsonError::Invalid(problem) = &err else { panic!() };
/// assert_eq!(problem, r#"Provider ollama: "baseUrl" is required when defining custom models."#);
/// assert_eq!(err.to_string(), format!("Failed to load models.json: {problem}"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelsJsonError {
    /// The file exists but could not be read.
    #[error("Failed to load models.json: {message}\n\nFile: {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        message: String,
    },
    /// The text is not JSON (after removing `//` comments and trailing commas).
    #[error("Failed to parse models.json: {0}")]
    Syntax(String),
    /// A field has the wrong type or is missing.
    #[error("Invalid models.json schema:\n  - {path}: {message}")]
    Schema {
        /// Where, as `providers.<name>.models.<index>`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The content is well-formed but unusable; the text is pi's (e.g.
    /// `Provider x: "baseUrl" is required when defining custom models.`).
    #[error("Failed to load models.json: {0}")]
    Invalid(String),
}

/// A `models.json`, parsed and validated. Providers keep the file's order.
#[derive(Debug, Default)]
pub(super) struct ModelsConfig {
    pub(super) providers: Vec<(String, ProviderConfig)>,
}

/// One provider's entry. Its `apiKey` and header values may be secrets or name them, so
/// they are redacted from `Debug`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProviderConfig {
    pub(super) base_url: Option<String>,
    pub(super) api_key: Option<String>,
    pub(super) api: Option<String>,
    pub(super) headers: Option<BTreeMap<String, String>>,
    pub(super) compat: Option<Map<String, Value>>,
    pub(super) auth_header: Option<bool>,
    #[serde(default)]
    pub(super) models: Vec<ModelDefinition>,
    #[serde(default)]
    pub(super) model_overrides: BTreeMap<String, ModelOverride>,
    // `name` (a display name) is accepted and not needed here.
    #[serde(default)]
    name: Option<String>,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api", &self.api)
            .field("headers", &self.headers.as_ref().map(BTreeMap::keys))
            .field("compat", &self.compat)
            .field("auth_header", &self.auth_header)
            .field("models", &self.models)
            .field("model_overrides", &self.model_overrides)
            .finish()
    }
}

/// Token prices, all four required in a model definition.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FullCost {
    pub(super) input: f64,
    pub(super) output: f64,
    pub(super) cache_read: f64,
    pub(super) cache_write: f64,
}

/// Token prices, each optional in an override.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PartialCost {
    pub(super) input: Option<f64>,
    pub(super) output: Option<f64>,
    pub(super) cache_read: Option<f64>,
    pub(super) cache_write: Option<f64>,
}

/// A custom model. Missing fields get defaults for local servers when applied.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ModelDefinition {
    pub(super) id: String,
    pub(super) name: Option<String>,
    pub(super) api: Option<String>,
    pub(super) base_url: Option<String>,
    pub(super) reasoning: Option<bool>,
    #[serde(default, deserialize_with = "level_map")]
    pub(super) thinking_level_map: Option<LevelMap>,
    pub(super) input: Option<Vec<InputModality>>,
    pub(super) cost: Option<FullCost>,
    pub(super) context_window: Option<f64>,
    pub(super) max_tokens: Option<f64>,
    pub(super) headers: Option<BTreeMap<String, String>>,
    pub(super) compat: Option<Map<String, Value>>,
}

impl fmt::Debug for ModelDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelDefinition")
            .field("id", &self.id)
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("headers", &self.headers.as_ref().map(BTreeMap::keys))
            .finish_non_exhaustive()
    }
}

/// Changes to a built-in model; every field optional.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ModelOverride {
    pub(super) name: Option<String>,
    pub(super) reasoning: Option<bool>,
    #[serde(default, deserialize_with = "level_map")]
    pub(super) thinking_level_map: Option<LevelMap>,
    pub(super) input: Option<Vec<InputModality>>,
    pub(super) cost: Option<PartialCost>,
    pub(super) context_window: Option<f64>,
    pub(super) max_tokens: Option<f64>,
    pub(super) headers: Option<BTreeMap<String, String>>,
    pub(super) compat: Option<Map<String, Value>>,
}

impl fmt::Debug for ModelOverride {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelOverride")
            .field("name", &self.name)
            .field("headers", &self.headers.as_ref().map(BTreeMap::keys))
            .finish_non_exhaustive()
    }
}

pub(super) type LevelMap = BTreeMap<ThinkingLevel, Option<String>>;

/// A thinking-level map: each known level maps to a string or `null`; other keys are
/// ignored (pi's schema allows them and nothing reads them).
fn level_map<'de, D: Deserializer<'de>>(d: D) -> Result<Option<LevelMap>, D::Error> {
    let Some(raw) = Option::<Map<String, Value>>::deserialize(d)? else {
        return Ok(None);
    };
    let mut map = LevelMap::new();
    for (key, value) in raw {
        let Ok(level) = key.parse::<ThinkingLevel>() else {
            continue;
        };
        let value = match value {
            Value::Null => None,
            Value::String(s) => Some(s),
            other => {
                return Err(de::Error::custom(format!(
                    "thinkingLevelMap.{key}: expected a string or null, found {other}"
                )));
            }
        };
        map.insert(level, value);
    }
    Ok(Some(map))
}

/// pi's `stripJsonComments`: removes `//` line comments and trailing commas before `}` or
/// `]`, leaving string literals untouched.
pub(super) fn strip_json_comments(input: &str) -> String {
    let without_comments = transform_outside_strings(input, |rest| {
        // Up to (not including) the end of the line.
        rest.starts_with("//")
            .then(|| rest.find('\n').unwrap_or(rest.len()))
    });
    transform_outside_strings(&without_comments, |rest| {
        let after = rest.strip_prefix(',')?;
        let trimmed = after.trim_start();
        (trimmed.starts_with('}') || trimmed.starts_with(']')).then_some(1)
    })
}

/// Copies `input`, letting `skip` drop the first bytes of what remains wherever it returns
/// how many. Complete string literals are copied whole; a `"` with no closing quote is an
/// ordinary character (as in pi's regular expressions).
fn transform_outside_strings(input: &str, skip: impl Fn(&str) -> Option<usize>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        let rest = &input[i..];
        if rest.starts_with('"')
            && let Some(len) = string_literal_len(rest)
        {
            out.push_str(&rest[..len]);
            i += len;
            continue;
        }
        if let Some(n) = skip(rest) {
            i += n;
            continue;
        }
        let ch = rest.chars().next().map_or(1, char::len_utf8);
        out.push_str(&rest[..ch]);
        i += ch;
    }
    out
}

/// The length of the string literal `s` starts with (quotes included), if it is closed.
fn string_literal_len(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if i + 1 < bytes.len() => {
                // An escape covers the next character, which may be multi-byte.
                let next = s[i + 1..].chars().next().map_or(1, char::len_utf8);
                i += 1 + next;
            }
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// An object whose keys keep their order (later duplicates replace earlier values in
/// place, as `JSON.parse` does).
struct Ordered(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut entries: Vec<(String, Value)> = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    match entries.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => slot.1 = value,
                        None => entries.push((key, value)),
                    }
                }
                Ok(Ordered(entries))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Deserialize)]
struct Root {
    providers: Option<Ordered>,
}

/// Parses and validates a `models.json` text. `is_builtin` tells which providers the
/// built-in catalog has (their custom models may omit `baseUrl`, `apiKey` and `api`).
pub(super) fn parse(
    text: &str,
    is_builtin: impl Fn(&str) -> bool,
) -> Result<ModelsConfig, ModelsJsonError> {
    let stripped = strip_json_comments(text);
    let schema = |path: &str, message: String| ModelsJsonError::Schema {
        path: path.to_owned(),
        message,
    };
    // Straight from the text: a `Value` would sort the providers.
    let root: Root = serde_json::from_str(&stripped).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => schema("root", e.to_string()),
        _ => ModelsJsonError::Syntax(e.to_string()),
    })?;
    let Some(Ordered(providers)) = root.providers else {
        return Err(schema("providers", "Expected required property".into()));
    };
    let mut config = ModelsConfig::default();
    for (name, value) in providers {
        let path = format!("providers.{name}");
        let provider = parse_provider(&path, value)?;
        config.providers.push((name, provider));
    }
    validate(&config, is_builtin)?;
    Ok(config)
}

fn parse_provider(path: &str, mut value: Value) -> Result<ProviderConfig, ModelsJsonError> {
    let schema = |path: String, message: String| ModelsJsonError::Schema { path, message };
    // Models one by one, so an error names the model.
    let models = match value.as_object_mut().and_then(|o| o.shift_remove("models")) {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                ModelDefinition::deserialize(item)
                    .map_err(|e| schema(format!("{path}.models.{i}"), e.to_string()))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(schema(
                format!("{path}.models"),
                format!("expected an array, found {other}"),
            ));
        }
    };
    let mut provider =
        ProviderConfig::deserialize(value).map_err(|e| schema(path.to_owned(), e.to_string()))?;
    provider.models = models;
    // pi's schema: these strings, when present, are not empty.
    let non_empty = [
        ("name", provider.name.as_deref()),
        ("baseUrl", provider.base_url.as_deref()),
        ("apiKey", provider.api_key.as_deref()),
        ("api", provider.api.as_deref()),
    ];
    for (field, text) in non_empty {
        if text == Some("") {
            return Err(schema(
                format!("{path}.{field}"),
                "Expected string length greater or equal to 1".into(),
            ));
        }
    }
    for (i, model) in provider.models.iter().enumerate() {
        let fields = [
            ("id", Some(model.id.as_str())),
            ("name", model.name.as_deref()),
            ("api", model.api.as_deref()),
            ("baseUrl", model.base_url.as_deref()),
        ];
        for (field, text) in fields {
            if text == Some("") {
                return Err(schema(
                    format!("{path}.models.{i}.{field}"),
                    "Expected string length greater or equal to 1".into(),
                ));
            }
        }
    }
    Ok(provider)
}

/// True when `url`'s host is on loopback: `localhost` (or a name under it), 127.0.0.0/8 or
/// `::1`.
pub(crate) fn is_loopback_url(url: &str) -> bool {
    let rest = url.trim().split_once("://").map_or(url.trim(), |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// pi's `validateConfig`, with its messages.
fn validate(
    config: &ModelsConfig,
    is_builtin: impl Fn(&str) -> bool,
) -> Result<(), ModelsJsonError> {
    let invalid = |message: String| Err(ModelsJsonError::Invalid(message));
    for (name, provider) in &config.providers {
        let builtin = is_builtin(name);
        if provider.models.is_empty() {
            if provider.base_url.is_none()
                && provider.headers.is_none()
                && provider.compat.is_none()
                && provider.model_overrides.is_empty()
            {
                return invalid(format!(
                    r#"Provider {name}: must specify "baseUrl", "headers", "compat", "modelOverrides", or "models"."#
                ));
            }
        } else if !builtin {
            if provider.base_url.is_none() {
                return invalid(format!(
                    r#"Provider {name}: "baseUrl" is required when defining custom models."#
                ));
            }
            // A local server needs no key (pi requires one; its models become keyless).
            let local = provider.base_url.as_deref().is_some_and(is_loopback_url);
            if provider.api_key.is_none() && !local {
                return invalid(format!(
                    r#"Provider {name}: "apiKey" is required when defining custom models."#
                ));
            }
        }
        for model in &provider.models {
            let id = &model.id;
            if provider.api.is_none() && model.api.is_none() && !builtin {
                return invalid(format!(
                    r#"Provider {name}, model {id}: no "api" specified. Set at provider or model level."#
                ));
            }
            if model.context_window.is_some_and(|n| n <= 0.0) {
                return invalid(format!(
                    "Provider {name}, model {id}: invalid contextWindow"
                ));
            }
            if model.max_tokens.is_some_and(|n| n <= 0.0) {
                return invalid(format!("Provider {name}, model {id}: invalid maxTokens"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_comments_and_trailing_commas_outside_strings() {
        let text = "{\n  // a comment\n  \"url\": \"http://x//y\", // another\n  \"list\": [1, 2,],\n  \"s\": \"a,}\",\n}";
        let stripped = strip_json_comments(text);
        let v: Value = serde_json::from_str(&stripped).unwrap();
        assert_eq!(v["url"], "http://x//y");
        assert_eq!(v["list"], serde_json::json!([1, 2]));
        assert_eq!(v["s"], "a,}");
        // Escaped quotes do not end a string.
        assert_eq!(
            strip_json_comments(r#"{"a": "x\"//y", "b": 1,}"#),
            r#"{"a": "x\"//y", "b": 1}"#
        );
        // An unterminated quote is an ordinary character.
        assert_eq!(strip_json_comments("\"abc // c"), "\"abc ");
    }

    #[test]
    fn keeps_provider_order_and_validates() {
        let text = r#"{"providers": {
            "zeta": {"baseUrl": "http://z", "apiKey": "K", "api": "openai-completions", "models": [{"id": "a"}]},
            "alpha": {"baseUrl": "http://a"}
        }}"#;
        let config = parse(text, |_| false).unwrap();
        let names: Vec<_> = config.providers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha"]);
    }

    fn invalid(result: Result<ModelsConfig, ModelsJsonError>) -> String {
        match result {
            Err(ModelsJsonError::Invalid(message)) => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_name_the_place() {
        let err = parse(
            r#"{"providers": {"p": {"models": [{"id": "a", "contextWindow": "big"}]}}}"#,
            |_| true,
        )
        .unwrap_err();
        match err {
            ModelsJsonError::Schema { path, .. } => assert_eq!(path, "providers.p.models.0"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse("{", |_| true),
            Err(ModelsJsonError::Syntax(_))
        ));
        assert!(matches!(
            parse("{}", |_| true),
            Err(ModelsJsonError::Schema { path, .. }) if path == "providers"
        ));
        assert_eq!(
            invalid(parse(r#"{"providers": {"p": {}}}"#, |_| true)),
            r#"Provider p: must specify "baseUrl", "headers", "compat", "modelOverrides", or "models"."#
        );
        assert_eq!(
            invalid(parse(
                r#"{"providers": {"p": {"baseUrl": "u", "apiKey": "k", "models": [{"id": "m"}]}}}"#,
                |_| false
            )),
            r#"Provider p, model m: no "api" specified. Set at provider or model level."#
        );
        assert_eq!(
            invalid(parse(
                r#"{"providers": {"openai": {"models": [{"id": "m", "maxTokens": 0}]}}}"#,
                |_| true
            )),
            "Provider openai, model m: invalid maxTokens"
        );
        assert!(matches!(
            parse(r#"{"providers": {"p": {"baseUrl": ""}}}"#, |_| true),
            Err(ModelsJsonError::Schema { path, .. }) if path == "providers.p.baseUrl"
        ));
        assert!(matches!(
            parse(r#"{"providers": {"p": {"baseUrl": "u", "models": {}}}}"#, |_| true),
            Err(ModelsJsonError::Schema { path, .. }) if path == "providers.p.models"
        ));
    }

    #[test]
    fn debug_hides_keys_and_header_values() {
        let config = parse(
            r#"{"providers": {"p": {"baseUrl": "u", "apiKey": "sk-secret", "api": "x",
                "headers": {"X-Key": "hv-secret"},
                "models": [{"id": "m", "headers": {"Y": "mv-secret"}}]}}}"#,
            |_| false,
        )
        .unwrap();
        let debug = format!("{config:?}");
        assert!(!debug.contains("secret"), "{debug}");
        assert!(debug.contains("X-Key"));
    }
}
