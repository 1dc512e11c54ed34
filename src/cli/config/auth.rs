//! pi's `auth.json`: stored API keys per provider, as a [`CredentialSource`] for the
//! [`ModelRegistry`](crate::models::ModelRegistry), with `--api-key` and the environment.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::file::{self, FileError};
use crate::llm::env_var_names;
use crate::llm::options::ApiKey;
/// Re-exported here: the usual fallback of an [`AuthStorage`] in tests and sandboxes.
pub use crate::models::NoCredentials;
use crate::models::{CredentialSource, EnvCredentials, resolve_config_value};

/// An `auth.json` that cannot be used, or a credential pi-engine cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The file exists but could not be read.
    #[error("cannot read {}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        message: String,
    },
    /// The file is not JSON, or not a JSON object.
    #[error("invalid credentials file {}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line and column.
        message: String,
    },
    /// The provider's only credential is an OAuth login (pi's `/login`), which pi-engine
    /// cannot use.
    #[error(
        "OAuth login is not supported by pi-engine; use an API key ({}pass --api-key, or replace the OAuth entry of \"{provider}\" in {} with {{\"type\": \"api_key\", \"key\": \"…\"}})",
        env_hint(provider), path.display()
    )]
    OAuthNotSupported {
        /// The provider.
        provider: String,
        /// The `auth.json` holding the OAuth entry.
        path: PathBuf,
    },
}

/// "set ANTHROPIC_API_KEY, " for a provider with a variable of its own.
fn env_hint(provider: &str) -> String {
    let names = env_var_names(provider);
    let name = names
        .iter()
        .find(|n| n.contains("API_KEY"))
        .or(names.first());
    match name {
        Some(n) => format!("set {n}, "),
        None => String::new(),
    }
}

/// One provider's entry of `auth.json`. Keys never appear in `Debug`.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// `{"type": "api_key", "key": "…"}`: the key, the name of a variable holding it, or a
    /// `!command` printing it (resolved as pi resolves it, a command once per process).
    ApiKey {
        /// The configured value.
        key: String,
    },
    /// `{"type": "oauth", …}`: a login of pi's `/login` (Claude Pro/Max, ChatGPT, GitHub
    /// Copilot). pi-engine does not refresh or use OAuth tokens.
    OAuth,
    /// Any other entry, kept for what it says about the provider being configured.
    Other {
        /// The entry's `type`, if it has one.
        kind: Option<String>,
    },
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::ApiKey { .. } => f.write_str("ApiKey(<redacted>)"),
            Credential::OAuth => f.write_str("OAuth"),
            Credential::Other { kind } => f.debug_struct("Other").field("kind", kind).finish(),
        }
    }
}

impl Credential {
    fn from_json(value: &Value) -> Credential {
        let kind = value.get("type").and_then(Value::as_str);
        match (kind, value.get("key").and_then(Value::as_str)) {
            (Some("api_key"), Some(key)) => Credential::ApiKey {
                key: key.to_owned(),
            },
            (Some("oauth"), _) => Credential::OAuth,
            _ => Credential::Other {
                kind: kind.map(str::to_owned),
            },
        }
    }
}

/// pi's credential storage, read-only: `auth.json`'s entries, keys given at run time
/// (`--api-key`), then a fallback source (the environment: [`EnvCredentials`]), in pi's
/// order. A [`CredentialSource`] for [`ModelRegistry::with_credentials`](crate::models::ModelRegistry::with_credentials).
///
/// An OAuth entry counts as configured, as in pi (its provider's models are available), but
/// gives no key: the environment's key is used if there is one, and otherwise
/// [`require`](Self::require) fails with [`AuthError::OAuthNotSupported`] — call it for the
/// model a session is to use.
///
/// ```
/// use std::sync::Arc;
/// use pi_engine::cli::config::{AuthError, AuthStorage};
/// use pi_engine::models::{CredentialSource, ModelRegistry};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let auth = AuthStorage::from_json_str(r#"{
///     "openai": {"type": "api_key", "key": "sk-stored"},
///     "anthropic": {"type": "oauth", "access": "…", "refresh": "…", "expires": 0}
/// }"#, "/home/me/.pi/agent/auth.json").unwrap()
///     .with_fallback(Arc::new(pi_engine::cli::config::NoCredentials));
/// let auth = Arc::new(auth);
/// assert_eq!(auth.api_key("openai").await.unwrap().expose(), "sk-stored");
/// assert!(auth.has_auth("anthropic")); // listed as available, as in pi …
/// assert!(matches!(auth.require("anthropic"), Err(AuthError::OAuthNotSupported { .. }))); // … but not usable
///
/// auth.set_runtime_api_key("anthropic", "sk-ant-from-flag"); // --api-key
/// assert!(auth.require("anthropic").is_ok());
/// let registry = ModelRegistry::new().with_credentials(auth.clone());
/// assert!(!registry.available().is_empty());
/// # }
/// ```
pub struct AuthStorage {
    path: PathBuf,
    entries: BTreeMap<String, Credential>,
    runtime: RwLock<HashMap<String, ApiKey>>,
    fallback: Arc<dyn CredentialSource>,
}

impl fmt::Debug for AuthStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthStorage")
            .field("path", &self.path)
            .field("entries", &self.entries)
            .field("runtime_keys", &self.runtime_keys())
            .field("fallback", &self.fallback)
            .finish()
    }
}

impl AuthStorage {
    /// Reads `path` (pi's `<agent dir>/auth.json`); a missing file has no entries.
    ///
    /// # Errors
    ///
    /// When the file cannot be read, is not JSON (the error gives the line and column) or
    /// is not a JSON object. (pi goes on without its entries.)
    pub fn load(path: impl Into<PathBuf>) -> Result<AuthStorage, AuthError> {
        let path = path.into();
        match file::read_optional(&path).map_err(|e| auth_error(e, &path))? {
            Some(text) => AuthStorage::from_json_str(&text, path),
            None => Ok(AuthStorage::empty(path)),
        }
    }

    /// The entries of an `auth.json` text; `path` is where it would be (named in errors).
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn from_json_str(text: &str, path: impl Into<PathBuf>) -> Result<AuthStorage, AuthError> {
        let path = path.into();
        let map = file::parse_object(text, &path).map_err(|e| auth_error(e, &path))?;
        let mut storage = AuthStorage::empty(path);
        // pi tests an entry for truthiness: `null`, `false`, `0` and `""` are no entry.
        storage.entries = map
            .iter()
            .filter(|(_, entry)| truthy(entry))
            .map(|(provider, entry)| (provider.clone(), Credential::from_json(entry)))
            .collect();
        Ok(storage)
    }

    /// No entries; `path` is named in errors.
    pub fn empty(path: impl Into<PathBuf>) -> AuthStorage {
        AuthStorage {
            path: path.into(),
            entries: BTreeMap::new(),
            runtime: RwLock::new(HashMap::new()),
            fallback: Arc::new(EnvCredentials),
        }
    }

    /// Uses `source` after `auth.json` instead of the environment ([`EnvCredentials`]).
    #[must_use]
    pub fn with_fallback(mut self, source: Arc<dyn CredentialSource>) -> Self {
        self.fallback = source;
        self
    }

    /// The file the entries came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entry of `provider`.
    pub fn get(&self, provider: &str) -> Option<&Credential> {
        self.entries.get(provider)
    }

    /// The providers with an entry, in name order.
    pub fn providers(&self) -> impl Iterator<Item = &str> + '_ {
        self.entries.keys().map(String::as_str)
    }

    /// Sets a key for `provider` that wins over every other (pi's `--api-key`); not written.
    pub fn set_runtime_api_key(&self, provider: impl Into<String>, key: impl Into<ApiKey>) {
        self.runtime_write().insert(provider.into(), key.into());
    }

    /// Removes a key set with [`set_runtime_api_key`](Self::set_runtime_api_key).
    pub fn remove_runtime_api_key(&self, provider: &str) {
        self.runtime_write().remove(provider);
    }

    fn runtime_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.runtime_read().keys().cloned().collect();
        keys.sort();
        keys
    }

    fn runtime_read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, ApiKey>> {
        // A map of keys cannot be left half-updated by a panic.
        self.runtime.read().unwrap_or_else(|e| e.into_inner())
    }

    fn runtime_write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, ApiKey>> {
        self.runtime.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks that `provider` can be called: fails when its only credential is an OAuth
    /// entry (no runtime key, no key in the fallback source). A provider without any
    /// credential passes: its calls fail with the provider's own "no API key" error, unless
    /// a `models.json` key or a keyless local server serves it.
    ///
    /// # Errors
    ///
    /// [`AuthError::OAuthNotSupported`].
    pub fn require(&self, provider: &str) -> Result<(), AuthError> {
        if self.runtime_read().contains_key(provider) {
            return Ok(());
        }
        match self.entries.get(provider) {
            Some(Credential::OAuth) if !self.fallback.has_auth(provider) => {
                Err(AuthError::OAuthNotSupported {
                    provider: provider.to_owned(),
                    path: self.path.clone(),
                })
            }
            _ => Ok(()),
        }
    }
}

/// JavaScript's truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn auth_error(e: FileError, path: &Path) -> AuthError {
    match e {
        FileError::Read { message, .. } => AuthError::Read {
            path: path.to_owned(),
            message,
        },
        FileError::Syntax {
            line,
            column,
            message,
            ..
        } => AuthError::Invalid {
            path: path.to_owned(),
            message: format!("{message} at line {line} column {column}"),
        },
        FileError::NotAnObject { .. } => AuthError::Invalid {
            path: path.to_owned(),
            message: "expected a JSON object".into(),
        },
        FileError::Locked { .. } | FileError::Write { .. } => AuthError::Read {
            path: path.to_owned(),
            message: "unexpected write error".into(),
        },
    }
}

#[async_trait::async_trait]
impl CredentialSource for AuthStorage {
    /// pi's `hasAuth`: a runtime key, any `auth.json` entry (OAuth ones included), or a key
    /// in the fallback source.
    fn has_auth(&self, provider: &str) -> bool {
        self.runtime_read().contains_key(provider)
            || self.entries.contains_key(provider)
            || self.fallback.has_auth(provider)
    }

    /// pi's `getApiKey`: the runtime key, else the `auth.json` key (resolved; a failed
    /// `!command` gives none, as in pi), else the fallback source's key. An OAuth entry is
    /// skipped (pi would use its token).
    async fn api_key(&self, provider: &str) -> Option<ApiKey> {
        let runtime = self.runtime_read().get(provider).cloned();
        if runtime.is_some() {
            return runtime;
        }
        if let Some(Credential::ApiKey { key }) = self.entries.get(provider) {
            return resolve_config_value(key).await.map(ApiKey::new);
        }
        self.fallback.api_key(provider).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage(text: &str) -> AuthStorage {
        AuthStorage::from_json_str(text, "/a/auth.json")
            .unwrap()
            .with_fallback(Arc::new(NoCredentials))
    }

    #[tokio::test]
    async fn keys_resolve_as_pi_resolves_them() {
        let s = storage(
            r#"{"a": {"type": "api_key", "key": "literal"},
                "b": {"type": "api_key", "key": "!printf from-command"},
                "c": {"type": "api_key", "key": "!exit 1"},
                "d": {"type": "something"}, "e": "junk", "f": null, "g": ""}"#,
        );
        assert_eq!(s.api_key("a").await.unwrap().expose(), "literal");
        #[cfg(unix)]
        assert_eq!(s.api_key("b").await.unwrap().expose(), "from-command");
        assert!(s.api_key("c").await.is_none());
        assert!(s.has_auth("d") && s.has_auth("e") && !s.has_auth("z"));
        assert!(!s.has_auth("f") && !s.has_auth("g"));
        assert!(s.api_key("d").await.is_none());
        assert_eq!(
            s.get("d"),
            Some(&Credential::Other {
                kind: Some("something".into())
            })
        );
        s.set_runtime_api_key("a", "runtime");
        assert_eq!(s.api_key("a").await.unwrap().expose(), "runtime");
        s.remove_runtime_api_key("a");
        assert_eq!(s.api_key("a").await.unwrap().expose(), "literal");
    }

    #[test]
    fn oauth_entries_give_a_clear_error() {
        let s = storage(r#"{"anthropic": {"type": "oauth", "access": "secret-token"}}"#);
        let e = s.require("anthropic").unwrap_err();
        assert_eq!(
            e.to_string(),
            "OAuth login is not supported by pi-engine; use an API key (set ANTHROPIC_API_KEY, \
             pass --api-key, or replace the OAuth entry of \"anthropic\" in /a/auth.json with \
             {\"type\": \"api_key\", \"key\": \"…\"})"
        );
        let s = storage(r#"{"openai-codex": {"type": "oauth"}}"#);
        assert!(
            s.require("openai-codex")
                .unwrap_err()
                .to_string()
                .contains("API key (pass --api-key, or")
        );
        assert!(s.require("openai").is_ok());
        let debug = format!(
            "{:?}",
            storage(r#"{"x": {"type": "api_key", "key": "sk-1"}}"#)
        );
        assert!(!debug.contains("sk-1"), "{debug}");
    }

    #[test]
    fn an_oauth_entry_with_an_environment_key_is_usable() {
        #[derive(Debug)]
        struct Env;
        #[async_trait::async_trait]
        impl CredentialSource for Env {
            fn has_auth(&self, p: &str) -> bool {
                p == "anthropic"
            }
            async fn api_key(&self, _: &str) -> Option<ApiKey> {
                Some(ApiKey::new("env"))
            }
        }
        let s = AuthStorage::from_json_str(r#"{"anthropic": {"type": "oauth"}}"#, "/a")
            .unwrap()
            .with_fallback(Arc::new(Env));
        assert!(s.require("anthropic").is_ok());
    }
}
