//! pi's configuration in pi's places: the agent directory (`$PI_CODING_AGENT_DIR` or
//! `~/.pi/agent`) with `settings.json`, `models.json` and `auth.json`, the project's
//! `.pi/settings.json`, the session directory; and pi's rules for the model
//! (`--provider`, `--model`, `--models`, the default) and the session (`--session`,
//! `--continue`, `--fork`, `--no-session`).
//!
//! * [`ConfigPaths`]: where each file is; [`resolve_session_dir`]: `--session-dir`,
//!   `$PI_CODING_AGENT_SESSION_DIR`, `sessionDir`.
//! * [`SettingsManager`] and [`Settings`]: the two `settings.json` merged as pi merges them,
//!   typed, unknown keys kept; written back as pi writes them (only the changed key, under
//!   pi's lock), atomically. [`Settings::to_agent_session_settings`] and
//!   [`Settings::apply_to_stream_options`] map them onto a session and its model calls.
//! * [`AuthStorage`]: `auth.json`'s API keys, `--api-key` and the environment, as the
//!   [`CredentialSource`] of the [`ModelRegistry`]; an OAuth entry gives
//!   [`AuthError::OAuthNotSupported`] instead of failing silently.
//! * [`resolve_cli_model`], [`resolve_model_scope`], [`find_initial_model`],
//!   [`list_models`]: pi's model resolution, its messages and its `--list-models` table.
//! * [`open_session`]: the session the command uses.
//!
//! [`Config`] loads it all for one working directory:
//!
//! ```
//! use pi_engine::cli::config::{Config, ConfigPaths, ModelArgs, NoCredentials, SessionRequest};
//! use std::sync::Arc;
//!
//! let dir = std::env::temp_dir().join(format!("pi-config-doc-{}", std::process::id()));
//! let paths = ConfigPaths::new(std::env::current_dir().unwrap(), dir.join("agent"));
//! std::fs::create_dir_all(&paths.agent_dir).unwrap();
//! std::fs::write(paths.settings(), r#"{"defaultProvider": "openai", "defaultModel": "gpt-5.4"}"#).unwrap();
//! std::fs::write(paths.auth(), r#"{"openai": {"type": "api_key", "key": "sk-stored"}}"#).unwrap();
//!
//! // (NoCredentials: this example must not read the machine's environment variables.)
//! let config = Config::load_with_credentials(paths, Arc::new(NoCredentials)).unwrap();
//! let session = config.open_session(&SessionRequest::New, None).unwrap();
//! let has_messages = !session.build_session_context().unwrap().messages.is_empty();
//! let choice = config.select_model(&ModelArgs::new().with_model("openai/gpt-5.4-mini:low"), has_messages);
//! assert!(!choice.has_errors());
//! assert_eq!(choice.model.unwrap().id, "gpt-5.4-mini");
//! assert_eq!(choice.default_model.unwrap().id, "gpt-5.4"); // the settings' default
//! # std::fs::remove_dir_all(&dir).ok();
//! ```

mod auth;
mod collate;
mod file;
mod list;
mod paths;
mod resolve;
mod sessions;
mod settings;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use auth::{AuthError, AuthStorage, Credential, NoCredentials};
pub use list::{NO_MODELS_AVAILABLE, list_models};
pub use paths::{
    CONFIG_DIR_NAME, ConfigPaths, ENV_AGENT_DIR, ENV_SESSION_DIR, default_agent_dir, expand_tilde,
    resolve_session_dir,
};
pub use resolve::{
    CliModel, DEFAULT_MODEL_PER_PROVIDER, Diagnostic, ModelArgs, ModelSelection, ParsedPattern,
    Severity, default_model_id, find_initial_model, parse_model_pattern, resolve_cli_model,
    resolve_model_scope,
};
pub use sessions::{
    SessionMatch, SessionRequest, SessionSelectError, check_session_cwd, fork_session,
    open_session, resolve_session_arg,
};
pub use settings::{
    BranchSummarySection, CompactionSection, ImagesSection, ProviderRetry, ProviderRetrySection,
    RetrySection, Settings, SettingsError, SettingsManager, Transport, merge_settings,
    migrate_settings,
};

use crate::llm::model::Model;
use crate::models::{CredentialSource, EnvCredentials, ModelRegistry, ModelsJsonError};
use crate::session::{SessionManager, SessionOptions};

/// A configuration that cannot be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A `settings.json`.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// `auth.json`.
    #[error(transparent)]
    Auth(#[from] AuthError),
}

/// pi's configuration for one working directory: the paths, the merged settings, the
/// credentials and the model registry, with pi's rules for the model and the session.
///
/// A `models.json` that fails to load leaves the built-in models, as in pi, and a warning in
/// [`diagnostics`](Self::diagnostics) (pi shows it only in `--list-models` and its
/// interactive mode).
#[derive(Debug)]
#[non_exhaustive]
pub struct Config {
    /// Where the files are.
    pub paths: ConfigPaths,
    /// The settings (global and project), and their writer.
    pub settings: SettingsManager,
    /// `auth.json`, runtime keys, the environment. Shared with [`registry`](Self::registry).
    pub auth: Arc<AuthStorage>,
    /// The built-in models and `models.json`'s, with [`auth`](Self::auth) as credentials.
    pub registry: ModelRegistry,
    /// Warnings met while loading (a `models.json` that failed to load).
    pub diagnostics: Vec<Diagnostic>,
    /// The error of `models.json`, if it failed to load.
    pub models_error: Option<ModelsJsonError>,
    fallback: Arc<dyn CredentialSource>,
}

impl Config {
    /// Loads the configuration of `paths`, with keys from the environment after
    /// `auth.json`'s.
    ///
    /// # Errors
    ///
    /// A settings file or `auth.json` that cannot be read or is not valid JSON (the error
    /// names the file, the line and the column); nothing is written then.
    pub fn load(paths: ConfigPaths) -> Result<Config, ConfigError> {
        Config::load_with_credentials(paths, Arc::new(EnvCredentials))
    }

    /// [`load`](Self::load) with `fallback` consulted after `auth.json` instead of the
    /// environment.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn load_with_credentials(
        paths: ConfigPaths,
        fallback: Arc<dyn CredentialSource>,
    ) -> Result<Config, ConfigError> {
        let settings = SettingsManager::load(&paths)?;
        let auth = Arc::new(AuthStorage::load(paths.auth())?.with_fallback(fallback.clone()));
        let mut diagnostics = Vec::new();
        let (registry, models_error) = match ModelRegistry::load(paths.models()) {
            Ok(r) => (r, None),
            Err(e) => {
                let mut message = e.to_string();
                if !message.contains("\n\nFile: ") {
                    message.push_str(&format!("\n\nFile: {}", paths.models().display()));
                }
                diagnostics.push(Diagnostic::warning(format!(
                    "errors loading models.json:\n{message}"
                )));
                (ModelRegistry::new(), Some(e))
            }
        };
        let registry = registry.with_credentials(auth.clone());
        Ok(Config {
            paths,
            settings,
            auth,
            registry,
            diagnostics,
            models_error,
            fallback,
        })
    }

    /// The configuration of another working directory (the same agent directory and
    /// credential fallback): pi reads the project settings of the session's directory once
    /// the session is chosen (`--session` may pick one of another project). Runtime keys are
    /// not carried over.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn for_cwd(&self, cwd: impl Into<PathBuf>) -> Result<Config, ConfigError> {
        let paths = ConfigPaths::new(cwd, self.paths.agent_dir.clone());
        Config::load_with_credentials(paths, self.fallback.clone())
    }

    /// The session directory: `cli` (`--session-dir`), else `$PI_CODING_AGENT_SESSION_DIR`,
    /// else the `sessionDir` setting; `None` for pi's per-cwd layout.
    pub fn session_dir(&self, cli: Option<&str>) -> Option<PathBuf> {
        let env = std::env::var(ENV_SESSION_DIR).ok();
        let setting = self.settings.settings().session_dir;
        resolve_session_dir(cli, env.as_deref(), setting.as_deref(), &self.paths.cwd)
    }

    /// Session options for the agent directory and [`session_dir`](Self::session_dir).
    pub fn session_options(&self, cli_session_dir: Option<&str>) -> SessionOptions {
        self.paths
            .session_options(self.session_dir(cli_session_dir))
    }

    /// [`open_session`] in the working directory, with
    /// [`session_options`](Self::session_options).
    ///
    /// # Errors
    ///
    /// See [`SessionSelectError`].
    pub fn open_session(
        &self,
        request: &SessionRequest,
        cli_session_dir: Option<&str>,
    ) -> Result<SessionManager, SessionSelectError> {
        open_session(
            request,
            &self.paths.cwd,
            &self.session_options(cli_session_dir),
        )
    }

    /// pi's model choice for a session (its `main`): with `--model`, [`resolve_cli_model`]
    /// (a `:level` suffix is the thinking level unless `--thinking` is given); else, for a
    /// session without messages, the scope (`--models`, else `enabledModels`) gives the
    /// settings' default model if it is in the scope, else the scope's first model (with
    /// its `:level`); `--thinking` wins over any level. `--api-key` becomes the chosen
    /// model's provider's runtime key (an error without a chosen model). The
    /// [`default_model`](ModelSelection::default_model) is [`find_initial_model`]'s.
    ///
    /// The session's thinking level, when none is chosen here, is the session's own or the
    /// settings' `defaultThinkingLevel` (pass [`Settings::to_agent_session_settings`] to the
    /// session). Call [`check_model`](Self::check_model) on the session's model once it is
    /// built.
    pub fn select_model(&self, args: &ModelArgs, has_existing_session: bool) -> ModelSelection {
        let settings = self.settings.settings();
        let mut diagnostics = Vec::new();
        let patterns = args
            .models
            .clone()
            .or_else(|| settings.enabled_models.clone())
            .unwrap_or_default();
        let scoped_models = if patterns.is_empty() {
            Vec::new()
        } else {
            let (scoped, warnings) = resolve_model_scope(&patterns, &self.registry);
            diagnostics.extend(warnings);
            scoped
        };
        let mut model = None;
        let mut thinking_level = None;
        if let Some(pattern) = &args.model {
            let r = resolve_cli_model(args.provider.as_deref(), pattern, &self.registry);
            if let Some(w) = r.warning {
                diagnostics.push(Diagnostic::warning(w));
            }
            if let Some(e) = r.error {
                diagnostics.push(Diagnostic::error(e));
            }
            if r.model.is_some() {
                model = r.model;
                if args.thinking.is_none() && r.thinking_level.is_some() {
                    thinking_level = r.thinking_level;
                }
            }
        }
        if model.is_none() && !scoped_models.is_empty() && !has_existing_session {
            let saved = match (&settings.default_provider, &settings.default_model) {
                (Some(p), Some(id)) => self.registry.find(p, id),
                _ => None,
            };
            let chosen = saved
                .and_then(|s| {
                    scoped_models
                        .iter()
                        .find(|sm| sm.model.provider == s.provider && sm.model.id == s.id)
                })
                .or(scoped_models.first());
            if let Some(chosen) = chosen {
                model = Some(chosen.model.clone());
                if args.thinking.is_none() && chosen.thinking_level.is_some() {
                    thinking_level = chosen.thinking_level;
                }
            }
        }
        if args.thinking.is_some() {
            thinking_level = args.thinking;
        }
        if let Some(key) = &args.api_key {
            match &model {
                Some(m) => self.auth.set_runtime_api_key(m.provider.clone(), key.as_str()),
                None => diagnostics.push(Diagnostic::error(
                    "--api-key requires a model to be specified via --model, --provider/--model, or --models",
                )),
            }
        }
        let default_model = find_initial_model(&settings, &self.registry);
        ModelSelection {
            model,
            thinking_level,
            scoped_models,
            default_model,
            diagnostics,
        }
    }

    /// Checks that `model` can be called with the configured credentials: fails when its
    /// provider's only credential is an OAuth login.
    ///
    /// # Errors
    ///
    /// [`AuthError::OAuthNotSupported`].
    pub fn check_model(&self, model: &Model) -> Result<(), AuthError> {
        self.auth.require(&model.provider)
    }

    /// The models of the current settings' and credentials' `--list-models [search]`
    /// ([`list_models`]).
    pub fn list_models(&self, search: Option<&str>) -> String {
        list_models(&self.registry, search)
    }

    /// The global settings file.
    pub fn settings_path(&self) -> PathBuf {
        self.paths.settings()
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.paths.cwd
    }
}
