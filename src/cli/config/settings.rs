//! pi's `settings.json`: the global file and the project's, merged as pi merges them, read
//! into [`Settings`], and written back as pi writes them ([`SettingsManager`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::file::{self, FileError};
use super::paths::{ConfigPaths, expand_tilde};
use crate::agent::QueueMode;
use crate::agent_session::{AgentSessionSettings, BranchSummarySettings, RetrySettings};
use crate::llm::options::{RetryPolicy, StreamOptions};
use crate::llm::thinking::{ThinkingBudgets, ThinkingLevel};
use crate::session::compaction::CompactionSettings;

/// A settings file that cannot be used. Nothing is written while a file is in this state.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The file exists but could not be read.
    #[error("cannot read settings file {}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        message: String,
    },
    /// The file is not JSON.
    #[error("invalid settings file {}: {message} at line {line} column {column}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The line of the problem (from 1).
        line: usize,
        /// The column of the problem (from 1).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The file is JSON, but not an object.
    #[error("invalid settings file {}: expected a JSON object", path.display())]
    NotAnObject {
        /// The file.
        path: PathBuf,
    },
    /// A setting has a value of the wrong type or an unknown value.
    #[error("invalid settings file {}: \"{key}\": {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The top-level key whose value is wrong.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// Another process held the file's lock (`<file>.lock`, pi's) for too long.
    #[error("cannot write settings file {}: it is locked by another process ({}.lock)", path.display(), path.display())]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The new content could not be written.
    #[error("cannot write settings file {}: {message}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        message: String,
    },
}

impl SettingsError {
    /// The file concerned.
    pub fn path(&self) -> &Path {
        match self {
            SettingsError::Read { path, .. }
            | SettingsError::Syntax { path, .. }
            | SettingsError::NotAnObject { path }
            | SettingsError::Invalid { path, .. }
            | SettingsError::Locked { path }
            | SettingsError::Write { path, .. } => path,
        }
    }
}

impl From<FileError> for SettingsError {
    fn from(e: FileError) -> Self {
        match e {
            FileError::Read { path, message } => SettingsError::Read { path, message },
            FileError::Syntax {
                path,
                line,
                column,
                message,
            } => SettingsError::Syntax {
                path,
                line,
                column,
                message,
            },
            FileError::NotAnObject { path } => SettingsError::NotAnObject { path },
            FileError::Locked { path } => SettingsError::Locked { path },
            FileError::Write { path, message } => SettingsError::Write { path, message },
        }
    }
}

/// pi's `transport` setting: how providers that offer both talk to their server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Transport {
    /// Server-sent events.
    Sse,
    /// A WebSocket.
    Websocket,
    /// The provider's choice (pi's default).
    #[default]
    Auto,
}

/// `compaction` (pi's defaults: enabled, 16384 reserved, 20000 kept).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompactionSection {
    /// `compaction.enabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `compaction.reserveTokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve_tokens: Option<u64>,
    /// `compaction.keepRecentTokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_recent_tokens: Option<u64>,
    /// Keys this crate does not know, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `branchSummary` (pi's defaults: 16384 reserved, prompt not skipped).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BranchSummarySection {
    /// `branchSummary.reserveTokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve_tokens: Option<u64>,
    /// `branchSummary.skipPrompt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_prompt: Option<bool>,
    /// Keys this crate does not know, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `retry.provider`: the retries of one HTTP request, before its stream starts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ProviderRetrySection {
    /// `retry.provider.timeoutMs`: the SDK's request timeout in pi (not used by pi-engine,
    /// whose requests have an idle timeout instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// `retry.provider.maxRetries`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// `retry.provider.maxRetryDelayMs`: the longest server-requested delay to wait for
    /// (default 60000; `0`: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry_delay_ms: Option<u64>,
    /// Keys this crate does not know, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `retry` (pi's defaults: enabled, 3 retries, 2000 ms first delay). pi's older
/// `retry.maxDelayMs` is read as `retry.provider.maxRetryDelayMs`, as pi migrates it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RetrySection {
    /// `retry.enabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `retry.maxRetries`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// `retry.baseDelayMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_delay_ms: Option<u64>,
    /// `retry.provider`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderRetrySection>,
    /// Keys this crate does not know, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `images` (pi's defaults: resize, do not block).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ImagesSection {
    /// `images.autoResize`: shrink images to pi's limits before sending them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_resize: Option<bool>,
    /// `images.blockImages`: never send images to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_images: Option<bool>,
    /// Keys this crate does not know, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// pi's settings as a headless front end reads them: the merge of the global and the
/// project's `settings.json` (see [`merge_settings`]), after pi's migrations of old keys.
///
/// Each field is `None` when not set; the methods give pi's defaults. Every other key (the
/// interactive mode's `theme`, `terminal`, …, and keys of later versions) is kept in
/// [`extra`](Self::extra), so serializing a `Settings` gives back what was read.
///
/// ```
/// use pi_engine::cli::config::Settings;
/// use pi_engine::agent::QueueMode;
///
/// let settings = Settings::from_json_str(r#"{
///     "defaultProvider": "anthropic",
///     "defaultModel": "claude-sonnet-4-5",
///     "compaction": {"reserveTokens": 8192},
///     "steeringMode": "all",
///     "theme": "light"
/// }"#).unwrap();
/// assert_eq!(settings.default_model.as_deref(), Some("claude-sonnet-4-5"));
/// assert_eq!(settings.steering_mode(), QueueMode::All);
/// let session = settings.to_agent_session_settings();
/// assert_eq!(session.compaction.reserve_tokens, 8192);
/// assert_eq!(session.compaction.keep_recent_tokens, 20000); // pi's default
/// assert_eq!(settings.extra["theme"], "light");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Settings {
    /// `defaultProvider`: the provider of the default model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_provider: Option<String>,
    /// `defaultModel`: the id of the default model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// `defaultThinkingLevel` (pi's default: `medium`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_thinking_level: Option<ThinkingLevel>,
    /// `thinkingBudgets`: token budgets per level for budget-based models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budgets: Option<ThinkingBudgets>,
    /// `enabledModels`: model patterns to cycle through (as `--models`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_models: Option<Vec<String>>,
    /// `steeringMode` (pi's older `queueMode` is read as it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering_mode: Option<QueueMode>,
    /// `followUpMode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up_mode: Option<QueueMode>,
    /// `transport` (pi's older `websockets` boolean is read as it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    /// `compaction`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionSection>,
    /// `branchSummary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_summary: Option<BranchSummarySection>,
    /// `retry`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetrySection>,
    /// `shellPath`: the shell of the `bash` tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_path: Option<String>,
    /// `shellCommandPrefix`: a line run before every `bash` command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_command_prefix: Option<String>,
    /// `sessionDir`: where sessions are kept (see [`session_dir`](Self::session_dir)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_dir: Option<String>,
    /// `packages`: npm and git packages to load resources from (strings or objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packages: Option<Vec<Value>>,
    /// `extensions`: extension paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// `skills`: skill paths (pi's older `{customDirectories}` object is read as them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    /// `prompts`: prompt template paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Vec<String>>,
    /// `themes`: theme paths (for pi's interactive mode; kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub themes: Option<Vec<String>>,
    /// `enableSkillCommands` (pi's default: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_skill_commands: Option<bool>,
    /// `quietStartup` (pi's default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_startup: Option<bool>,
    /// `images`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImagesSection>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// pi's default `retry.provider.maxRetryDelayMs`.
const DEFAULT_MAX_RETRY_DELAY_MS: u64 = 60_000;

/// What `maxRetryDelayMs: 0` ("no limit") becomes: a day, long enough for any quota reset
/// a server announces, and far from overflowing a deadline.
const UNLIMITED_RETRY_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

/// `retry.provider`, with pi's defaults (pi's `getProviderRetrySettings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderRetry {
    /// `timeoutMs`, if set.
    pub timeout_ms: Option<u64>,
    /// `maxRetries`, if set (else the provider's default).
    pub max_retries: Option<u32>,
    /// `maxRetryDelayMs` (default 60000; `0`: no limit).
    pub max_retry_delay_ms: u64,
}

impl Settings {
    /// Settings from the text of one `settings.json` (pi's migrations applied). For the two
    /// files merged, use [`SettingsManager`].
    ///
    /// # Errors
    ///
    /// As [`SettingsManager::load`], with `<settings>` as the file's name.
    pub fn from_json_str(text: &str) -> Result<Settings, SettingsError> {
        let path = Path::new("<settings>");
        let map = parse_settings(text, path)?;
        Settings::from_map(&map, path)
    }

    /// Settings from a (migrated, merged) JSON object. `path` names it in errors.
    fn from_map(map: &Map<String, Value>, path: &Path) -> Result<Settings, SettingsError> {
        match Settings::deserialize(Value::Object(map.clone())) {
            Ok(settings) => Ok(settings),
            Err(e) => Err(invalid_key(map, path, e)),
        }
    }

    /// `steeringMode`, default one at a time.
    pub fn steering_mode(&self) -> QueueMode {
        self.steering_mode.unwrap_or_default()
    }

    /// `followUpMode`, default one at a time.
    pub fn follow_up_mode(&self) -> QueueMode {
        self.follow_up_mode.unwrap_or_default()
    }

    /// `transport`, default `auto`.
    pub fn transport(&self) -> Transport {
        self.transport.unwrap_or_default()
    }

    /// `enableSkillCommands`, default true.
    pub fn enable_skill_commands(&self) -> bool {
        self.enable_skill_commands.unwrap_or(true)
    }

    /// `quietStartup`, default false.
    pub fn quiet_startup(&self) -> bool {
        self.quiet_startup.unwrap_or(false)
    }

    /// `images.autoResize`, default true.
    pub fn image_auto_resize(&self) -> bool {
        self.images
            .as_ref()
            .and_then(|i| i.auto_resize)
            .unwrap_or(true)
    }

    /// `images.blockImages`, default false.
    pub fn block_images(&self) -> bool {
        self.images
            .as_ref()
            .and_then(|i| i.block_images)
            .unwrap_or(false)
    }

    /// `sessionDir` with `~` expanded (pi's `getSessionDir`); `None` when unset or empty.
    /// A relative path is relative to the working directory.
    pub fn session_dir(&self) -> Option<PathBuf> {
        self.session_dir
            .as_deref()
            .filter(|d| !d.is_empty())
            .map(expand_tilde)
    }

    /// `compaction`, with pi's defaults.
    pub fn compaction_settings(&self) -> CompactionSettings {
        let section = self.compaction.clone().unwrap_or_default();
        let mut out = CompactionSettings::default();
        out.enabled = section.enabled.unwrap_or(out.enabled);
        out.reserve_tokens = section.reserve_tokens.unwrap_or(out.reserve_tokens);
        out.keep_recent_tokens = section.keep_recent_tokens.unwrap_or(out.keep_recent_tokens);
        out
    }

    /// `branchSummary`, with pi's defaults.
    pub fn branch_summary_settings(&self) -> BranchSummarySettings {
        let section = self.branch_summary.clone().unwrap_or_default();
        let mut out = BranchSummarySettings::default();
        out.reserve_tokens = section.reserve_tokens.unwrap_or(out.reserve_tokens);
        out.skip_prompt = section.skip_prompt.unwrap_or(out.skip_prompt);
        out
    }

    /// `retry.provider`, with pi's defaults.
    pub fn provider_retry(&self) -> ProviderRetry {
        let provider = self
            .retry
            .as_ref()
            .and_then(|r| r.provider.clone())
            .unwrap_or_default();
        ProviderRetry {
            timeout_ms: provider.timeout_ms,
            max_retries: provider.max_retries,
            max_retry_delay_ms: provider
                .max_retry_delay_ms
                .unwrap_or(DEFAULT_MAX_RETRY_DELAY_MS),
        }
    }

    /// `retry`, with pi's defaults, as an agent session's retries. Its longest delay is
    /// `retry.provider.maxRetryDelayMs` (pi has one setting for the longest
    /// server-requested wait).
    pub fn retry_settings(&self) -> RetrySettings {
        let section = self.retry.clone().unwrap_or_default();
        let mut out = RetrySettings::default();
        out.enabled = section.enabled.unwrap_or(out.enabled);
        out.max_retries = section.max_retries.unwrap_or(out.max_retries);
        out.base_delay_ms = section.base_delay_ms.unwrap_or(out.base_delay_ms);
        out.max_delay_ms = match self.provider_retry().max_retry_delay_ms {
            0 => UNLIMITED_RETRY_DELAY.as_millis() as u64,
            ms => ms,
        };
        out
    }

    /// The settings of an [`AgentSession`](crate::agent_session::AgentSession): compaction,
    /// branch summaries, retries, the queue modes and the default thinking level.
    pub fn to_agent_session_settings(&self) -> AgentSessionSettings {
        AgentSessionSettings {
            compaction: self.compaction_settings(),
            branch_summary: self.branch_summary_settings(),
            retry: self.retry_settings(),
            steering_mode: self.steering_mode(),
            follow_up_mode: self.follow_up_mode(),
            default_thinking_level: self.default_thinking_level,
        }
    }

    /// `options` with what the settings say about each model call, as pi's session passes
    /// them: `thinkingBudgets`, `retry.provider.maxRetryDelayMs` (pi always passes it, 60 s
    /// by default; `0` lifts the limit) and `retry.provider.maxRetries`.
    ///
    /// ```
    /// use pi_engine::StreamOptions;
    /// use pi_engine::cli::config::Settings;
    ///
    /// let settings = Settings::from_json_str(
    ///     r#"{"retry": {"provider": {"maxRetries": 0, "maxRetryDelayMs": 5000}}}"#,
    /// ).unwrap();
    /// let options = settings.apply_to_stream_options(StreamOptions::new());
    /// assert_eq!(options.max_retry_delay_ms, Some(5000));
    /// assert_eq!(options.retry.unwrap().max_retries, 0);
    /// ```
    #[must_use]
    pub fn apply_to_stream_options(&self, mut options: StreamOptions) -> StreamOptions {
        if let Some(budgets) = self.thinking_budgets {
            options.thinking_budgets = Some(budgets);
        }
        let provider = self.provider_retry();
        let unlimited = provider.max_retry_delay_ms == 0;
        options.max_retry_delay_ms = Some(if unlimited {
            UNLIMITED_RETRY_DELAY.as_millis() as u64
        } else {
            provider.max_retry_delay_ms
        });
        if provider.max_retries.is_some() || unlimited {
            let mut policy = options.retry.unwrap_or_default();
            if let Some(n) = provider.max_retries {
                policy = policy.with_max_retries(n);
            }
            if unlimited {
                policy = policy.with_max_delay(UNLIMITED_RETRY_DELAY);
            }
            options.retry = Some(policy);
        }
        options
    }

    /// The provider-level retry policy the settings ask for, if they ask for one
    /// (`retry.provider.maxRetries`).
    pub fn provider_retry_policy(&self) -> Option<RetryPolicy> {
        self.provider_retry()
            .max_retries
            .map(|n| RetryPolicy::default().with_max_retries(n))
    }
}

/// The top-level key whose value made `e`, found by reading the keys one by one.
fn invalid_key(map: &Map<String, Value>, path: &Path, e: serde_json::Error) -> SettingsError {
    for (key, value) in map {
        let mut one = Map::new();
        one.insert(key.clone(), value.clone());
        if let Err(e) = Settings::deserialize(Value::Object(one)) {
            return SettingsError::Invalid {
                path: path.to_owned(),
                key: key.clone(),
                message: e.to_string(),
            };
        }
    }
    SettingsError::Invalid {
        path: path.to_owned(),
        key: String::new(),
        message: e.to_string(),
    }
}

/// One settings file's text as a migrated JSON object (an empty text is `{}`, as in pi).
fn parse_settings(text: &str, path: &Path) -> Result<Map<String, Value>, SettingsError> {
    let mut map = file::parse_object(text, path)?;
    migrate_settings(&mut map);
    Ok(map)
}

/// pi's `migrateSettings`: older keys in their current form.
///
/// * `queueMode` becomes `steeringMode` (unless that is set);
/// * a `websockets` boolean becomes `transport` (`websocket` or `sse`), unless that is set;
/// * a `skills` object becomes its `customDirectories` array (or goes away), its
///   `enableSkillCommands` moving to the top level;
/// * `retry.maxDelayMs` becomes `retry.provider.maxRetryDelayMs` (unless that is set) and
///   goes away.
///
/// ```
/// use pi_engine::cli::config::migrate_settings;
/// use serde_json::json;
///
/// let mut settings = json!({"queueMode": "all", "retry": {"maxDelayMs": 1000}});
/// migrate_settings(settings.as_object_mut().unwrap());
/// assert_eq!(settings, json!({"retry": {"provider": {"maxRetryDelayMs": 1000}}, "steeringMode": "all"}));
/// ```
pub fn migrate_settings(settings: &mut Map<String, Value>) {
    if settings.contains_key("queueMode")
        && !settings.contains_key("steeringMode")
        && let Some(mode) = settings.shift_remove("queueMode")
    {
        settings.insert("steeringMode".into(), mode);
    }
    if !settings.contains_key("transport")
        && let Some(Value::Bool(ws)) = settings.get("websockets")
    {
        let transport = if *ws { "websocket" } else { "sse" };
        settings.insert("transport".into(), transport.into());
        settings.shift_remove("websockets");
    }
    if let Some(Value::Object(skills)) = settings.get("skills") {
        let enable = skills.get("enableSkillCommands").cloned();
        let dirs = match skills.get("customDirectories") {
            Some(Value::Array(dirs)) if !dirs.is_empty() => Some(dirs.clone()),
            _ => None,
        };
        if let Some(enable) = enable
            && !settings.contains_key("enableSkillCommands")
        {
            settings.insert("enableSkillCommands".into(), enable);
        }
        match dirs {
            Some(dirs) => {
                settings.insert("skills".into(), Value::Array(dirs));
            }
            None => {
                settings.shift_remove("skills");
            }
        }
    }
    if let Some(Value::Object(retry)) = settings.get_mut("retry") {
        let provider_set = match retry.get("provider") {
            Some(Value::Object(p)) => p.get("maxRetryDelayMs").is_some_and(|v| !v.is_null()),
            _ => false,
        };
        if let Some(delay @ Value::Number(_)) = retry.get("maxDelayMs").cloned()
            && !provider_set
        {
            let mut provider = match retry.get("provider") {
                Some(Value::Object(p)) => p.clone(),
                _ => Map::new(),
            };
            provider.insert("maxRetryDelayMs".into(), delay);
            retry.insert("provider".into(), Value::Object(provider));
        }
        retry.shift_remove("maxDelayMs");
    }
}

/// pi's `deepMergeSettings`: the keys of `over` win; where both sides hold an object (not
/// an array), the two objects are merged one level deep (`over`'s keys win). Arrays,
/// `null` and other values of `over` replace `base`'s.
///
/// ```
/// use pi_engine::cli::config::merge_settings;
/// use serde_json::json;
///
/// let global = json!({"theme": "dark", "compaction": {"enabled": true, "reserveTokens": 16384},
///                     "enabledModels": ["a", "b"]});
/// let project = json!({"compaction": {"reserveTokens": 8192}, "enabledModels": ["c"]});
/// let merged = merge_settings(global.as_object().unwrap(), project.as_object().unwrap());
/// assert_eq!(serde_json::Value::Object(merged), json!({
///     "theme": "dark",
///     "compaction": {"enabled": true, "reserveTokens": 8192},
///     "enabledModels": ["c"],
/// }));
/// ```
pub fn merge_settings(base: &Map<String, Value>, over: &Map<String, Value>) -> Map<String, Value> {
    let mut out = base.clone();
    for (key, value) in over {
        match (base.get(key), value) {
            (Some(Value::Object(b)), Value::Object(o)) => {
                let mut merged = b.clone();
                merged.extend(o.iter().map(|(k, v)| (k.clone(), v.clone())));
                out.insert(key.clone(), Value::Object(merged));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

/// The two settings files, merged, and the writer of the global one (pi's
/// `SettingsManager`). A cheap `Clone` handle: clones share the state.
///
/// pi writes the global file when a session's model, thinking level, queue modes,
/// auto-compaction or auto-retry change (`/model`, RPC `set_model`, `cycle_model`,
/// `set_thinking_level`, …; not for `--model` or `--thinking`): the `set_*` methods do it
/// as pi does — the file is read again under pi's lock (`settings.json.lock`), only the
/// changed key (or the changed key of a section) is replaced, every other key and value
/// stays, and the result is written as pi formats it (`JSON.stringify(…, null, 2)`). The
/// write is atomic (a temporary file renamed over the real one, through a symlink), so a
/// crash never leaves half a file; a file that has become invalid is not written.
///
/// The methods do blocking file I/O on small files; async code can call them in
/// `tokio::task::spawn_blocking`.
///
/// ```
/// use pi_engine::cli::config::{ConfigPaths, SettingsManager};
/// use pi_engine::ThinkingLevel;
///
/// let dir = std::env::temp_dir().join(format!("pi-settings-doc-{}", std::process::id()));
/// let paths = ConfigPaths::new(dir.join("project"), dir.join("agent"));
/// std::fs::create_dir_all(&paths.agent_dir).unwrap();
/// std::fs::write(paths.settings(), r#"{"theme": "dark", "defaultModel": "old"}"#).unwrap();
///
/// let settings = SettingsManager::load(&paths).unwrap();
/// settings.set_default_model("anthropic", "claude-sonnet-4-5").unwrap();
/// settings.set_default_thinking_level(ThinkingLevel::High).unwrap();
/// assert_eq!(
///     std::fs::read_to_string(paths.settings()).unwrap(),
///     "{\n  \"theme\": \"dark\",\n  \"defaultModel\": \"claude-sonnet-4-5\",\n  \
///      \"defaultProvider\": \"anthropic\",\n  \"defaultThinkingLevel\": \"high\"\n}",
/// );
/// assert_eq!(settings.settings().default_provider.as_deref(), Some("anthropic"));
/// # std::fs::remove_dir_all(&dir).ok();
/// ```
#[derive(Clone)]
pub struct SettingsManager {
    inner: Arc<Mutex<State>>,
}

impl std::fmt::Debug for SettingsManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("SettingsManager")
            .field("global_path", &state.global_path)
            .field("project_path", &state.project_path)
            .field("settings", &state.merged)
            .finish()
    }
}

struct State {
    /// `None`: in memory only.
    global_path: Option<PathBuf>,
    project_path: Option<PathBuf>,
    global: Map<String, Value>,
    project: Map<String, Value>,
    merged: Settings,
}

/// A change of the global settings: a top-level key, or one key of a section.
enum Change<'a> {
    Key(&'a str, Value),
    Nested(&'a str, &'a str, Value),
}

impl SettingsManager {
    /// Reads `<agent dir>/settings.json` and `<cwd>/.pi/settings.json` (missing files are
    /// empty settings, as in pi).
    ///
    /// # Errors
    ///
    /// A file that cannot be read, is not JSON ([`SettingsError::Syntax`], with line and
    /// column), is not an object, or has a value of the wrong type for a setting this crate
    /// reads ([`SettingsError::Invalid`]). (pi warns and goes on without the file's settings,
    /// and stops writing it.)
    pub fn load(paths: &ConfigPaths) -> Result<SettingsManager, SettingsError> {
        SettingsManager::load_files(paths.settings(), Some(paths.project_settings()))
    }

    /// Reads a global settings file and, when given, a project's.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn load_files(
        global: impl Into<PathBuf>,
        project: Option<PathBuf>,
    ) -> Result<SettingsManager, SettingsError> {
        let global_path = global.into();
        let global = read_settings_file(&global_path)?;
        let project_map = match &project {
            Some(p) => read_settings_file(p)?,
            None => Map::new(),
        };
        // Each file's types are checked on their own, so an error names the right file.
        Settings::from_map(&global, &global_path)?;
        if let Some(p) = &project {
            Settings::from_map(&project_map, p)?;
        }
        SettingsManager::build(Some(global_path), project, global, project_map)
    }

    /// Settings that live in memory only (for tests and embedders): `set_*` change them
    /// without writing anything.
    ///
    /// # Errors
    ///
    /// When `global` or `project` is not a JSON object or has a value of the wrong type.
    pub fn in_memory(global: Value, project: Value) -> Result<SettingsManager, SettingsError> {
        let to_map = |v: Value, name: &str| -> Result<Map<String, Value>, SettingsError> {
            let path = Path::new(name);
            let mut map = match v {
                Value::Object(m) => m,
                Value::Null => Map::new(),
                _ => {
                    return Err(SettingsError::NotAnObject {
                        path: path.to_owned(),
                    });
                }
            };
            migrate_settings(&mut map);
            Settings::from_map(&map, path)?;
            Ok(map)
        };
        let global = to_map(global, "<global settings>")?;
        let project = to_map(project, "<project settings>")?;
        SettingsManager::build(None, None, global, project)
    }

    fn build(
        global_path: Option<PathBuf>,
        project_path: Option<PathBuf>,
        global: Map<String, Value>,
        project: Map<String, Value>,
    ) -> Result<SettingsManager, SettingsError> {
        let merged_map = merge_settings(&global, &project);
        let name = project_path
            .clone()
            .unwrap_or_else(|| PathBuf::from("<merged settings>"));
        let merged = Settings::from_map(&merged_map, &name)?;
        Ok(SettingsManager {
            inner: Arc::new(Mutex::new(State {
                global_path,
                project_path,
                global,
                project,
                merged,
            })),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-updated: every change
        // is computed before it is stored.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The merged settings.
    pub fn settings(&self) -> Settings {
        self.state().merged.clone()
    }

    /// The global file's settings (migrated), as read and as changed since.
    pub fn global(&self) -> Map<String, Value> {
        self.state().global.clone()
    }

    /// The project's settings (migrated).
    pub fn project(&self) -> Map<String, Value> {
        self.state().project.clone()
    }

    /// The global settings file, `None` for settings in memory.
    pub fn global_path(&self) -> Option<PathBuf> {
        self.state().global_path.clone()
    }

    /// Saves the default model (`defaultProvider` and `defaultModel`), as pi does after a
    /// model change.
    ///
    /// # Errors
    ///
    /// When the file has become invalid, is locked, or cannot be written; nothing is
    /// written then, and the settings in memory are unchanged.
    pub fn set_default_model(&self, provider: &str, model_id: &str) -> Result<(), SettingsError> {
        self.apply(vec![
            Change::Key("defaultProvider", provider.into()),
            Change::Key("defaultModel", model_id.into()),
        ])
    }

    /// Saves `defaultThinkingLevel`, as pi does when a session's level changes (unless the
    /// model does not reason and the level is `off`).
    ///
    /// # Errors
    ///
    /// As [`set_default_model`](Self::set_default_model).
    pub fn set_default_thinking_level(&self, level: ThinkingLevel) -> Result<(), SettingsError> {
        self.apply(vec![Change::Key(
            "defaultThinkingLevel",
            level.as_str().into(),
        )])
    }

    /// Saves `steeringMode`.
    ///
    /// # Errors
    ///
    /// As [`set_default_model`](Self::set_default_model).
    pub fn set_steering_mode(&self, mode: QueueMode) -> Result<(), SettingsError> {
        self.apply(vec![Change::Key("steeringMode", queue_mode_json(mode))])
    }

    /// Saves `followUpMode`.
    ///
    /// # Errors
    ///
    /// As [`set_default_model`](Self::set_default_model).
    pub fn set_follow_up_mode(&self, mode: QueueMode) -> Result<(), SettingsError> {
        self.apply(vec![Change::Key("followUpMode", queue_mode_json(mode))])
    }

    /// Saves `compaction.enabled` (the section's other keys stay).
    ///
    /// # Errors
    ///
    /// As [`set_default_model`](Self::set_default_model).
    pub fn set_compaction_enabled(&self, enabled: bool) -> Result<(), SettingsError> {
        self.apply(vec![Change::Nested(
            "compaction",
            "enabled",
            enabled.into(),
        )])
    }

    /// Saves `retry.enabled` (the section's other keys stay).
    ///
    /// # Errors
    ///
    /// As [`set_default_model`](Self::set_default_model).
    pub fn set_retry_enabled(&self, enabled: bool) -> Result<(), SettingsError> {
        self.apply(vec![Change::Nested("retry", "enabled", enabled.into())])
    }

    /// Saves any top-level key of the global settings, as pi's setters do.
    ///
    /// # Errors
    ///
    /// As [`set_default_model`](Self::set_default_model), and [`SettingsError::Invalid`]
    /// when `value` has the wrong type for `key`.
    pub fn set_global(&self, key: &str, value: Value) -> Result<(), SettingsError> {
        self.apply(vec![Change::Key(key, value)])
    }

    /// Saves one key of a section of the global settings (`compaction.enabled`, …): the
    /// section's other keys, in the file and in memory, stay.
    ///
    /// # Errors
    ///
    /// As [`set_global`](Self::set_global).
    pub fn set_global_nested(
        &self,
        section: &str,
        key: &str,
        value: Value,
    ) -> Result<(), SettingsError> {
        self.apply(vec![Change::Nested(section, key, value)])
    }

    /// Applies `changes` to the in-memory global settings and to the file (pi's
    /// `persistScopedSettings`): all or nothing.
    fn apply(&self, changes: Vec<Change<'_>>) -> Result<(), SettingsError> {
        let mut state = self.state();
        let mut global = state.global.clone();
        apply_changes(&mut global, &changes);
        let merged_map = merge_settings(&global, &state.project);
        let name = state
            .global_path
            .clone()
            .unwrap_or_else(|| PathBuf::from("<global settings>"));
        Settings::from_map(&global, &name)?;
        let merged = Settings::from_map(&merged_map, &name)?;
        if let Some(path) = state.global_path.clone() {
            file::update_locked(&path, |current| {
                let mut on_disk = match current {
                    Some(text) => parse_settings(text, &path)?,
                    None => Map::new(),
                };
                apply_changes(&mut on_disk, &changes);
                Ok::<_, SettingsError>(pretty_json(&Value::Object(on_disk)))
            })?;
        }
        state.global = global;
        state.merged = merged;
        Ok(())
    }
}

fn queue_mode_json(mode: QueueMode) -> Value {
    serde_json::to_value(mode).unwrap_or(Value::Null)
}

/// Sets each change in `settings`: a key replaced, or a section's key replaced in a copy of
/// the section (a section that is not an object starts empty, as pi's spread of it does).
fn apply_changes(settings: &mut Map<String, Value>, changes: &[Change<'_>]) {
    for change in changes {
        match change {
            Change::Key(key, value) => {
                settings.insert((*key).to_owned(), value.clone());
            }
            Change::Nested(section, key, value) => {
                let mut object = match settings.get(*section) {
                    Some(Value::Object(o)) => o.clone(),
                    _ => Map::new(),
                };
                object.insert((*key).to_owned(), value.clone());
                settings.insert((*section).to_owned(), Value::Object(object));
            }
        }
    }
}

/// JSON as JavaScript's `JSON.stringify(value, null, 2)` writes it: two-space indents, no
/// newline at the end, whole numbers without a fraction.
pub(crate) fn pretty_json(value: &Value) -> String {
    let value = js_numbers(value.clone());
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

/// Whole floats as integers (`1.0` → `1`), as JavaScript prints them.
fn js_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(js_numbers).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, js_numbers(v))).collect())
        }
        other => other,
    }
}

/// One settings file, migrated; a missing file is empty.
fn read_settings_file(path: &Path) -> Result<Map<String, Value>, SettingsError> {
    match file::read_optional(path)? {
        Some(text) => parse_settings(&text, path),
        None => Ok(Map::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn merge_is_one_level_deep_and_arrays_replace() {
        let base = obj(json!({
            "retry": {"enabled": true, "provider": {"maxRetries": 1, "timeoutMs": 5}},
            "skills": ["a"], "x": {"y": 1}, "keep": 1
        }));
        let over = obj(json!({
            "retry": {"provider": {"maxRetries": 2}}, "skills": ["b"], "x": null, "new": [1]
        }));
        let merged = Value::Object(merge_settings(&base, &over));
        assert_eq!(
            merged,
            json!({
                // A second-level object is replaced, not merged (pi's spread).
                "retry": {"enabled": true, "provider": {"maxRetries": 2}},
                "skills": ["b"], "x": null, "keep": 1, "new": [1]
            })
        );
    }

    #[test]
    fn migrations_match_pi() {
        let mut s = obj(json!({"queueMode": "all", "steeringMode": "one-at-a-time",
            "websockets": true, "skills": {"enableSkillCommands": false, "customDirectories": []},
            "retry": {"maxDelayMs": "x", "provider": {"maxRetryDelayMs": 5}}}));
        migrate_settings(&mut s);
        assert_eq!(
            Value::Object(s),
            json!({"queueMode": "all", "steeringMode": "one-at-a-time", "transport": "websocket",
                   "enableSkillCommands": false, "retry": {"provider": {"maxRetryDelayMs": 5}}})
        );
        let mut s = obj(
            json!({"skills": {"customDirectories": ["d"]}, "transport": "sse",
            "websockets": false, "retry": {"maxDelayMs": 7, "provider": {"maxRetryDelayMs": null}}}),
        );
        migrate_settings(&mut s);
        assert_eq!(
            Value::Object(s),
            json!({"skills": ["d"], "transport": "sse", "websockets": false,
                   "retry": {"provider": {"maxRetryDelayMs": 7}}})
        );
    }

    #[test]
    fn defaults_are_pis() {
        let s = Settings::default();
        let a = s.to_agent_session_settings();
        assert_eq!(a, AgentSessionSettings::default());
        assert_eq!(s.provider_retry().max_retry_delay_ms, 60_000);
        assert_eq!(s.transport(), Transport::Auto);
        assert!(s.enable_skill_commands() && s.image_auto_resize() && !s.block_images());
        let o = s.apply_to_stream_options(StreamOptions::new());
        assert_eq!(o.max_retry_delay_ms, Some(60_000));
        assert!(o.retry.is_none() && o.thinking_budgets.is_none());
    }

    #[test]
    fn zero_max_retry_delay_lifts_the_limit() {
        let s =
            Settings::from_json_str(r#"{"retry": {"provider": {"maxRetryDelayMs": 0}}}"#).unwrap();
        let o = s.apply_to_stream_options(StreamOptions::new());
        assert_eq!(o.max_retry_delay_ms, Some(86_400_000));
        assert_eq!(o.retry.unwrap().max_delay, UNLIMITED_RETRY_DELAY);
        assert_eq!(s.retry_settings().max_delay_ms, 86_400_000);
    }

    #[test]
    fn unknown_keys_round_trip() {
        let text = json!({
            "theme": "dark", "compaction": {"enabled": false, "future": [1, {"a": 2}]},
            "retry": {"provider": {"x": 1}, "y": 2}, "images": {"z": true},
            "branchSummary": {"skipPrompt": true, "w": "v"}, "defaultThinkingLevel": "xhigh"
        });
        let s = Settings::from_json_str(&text.to_string()).unwrap();
        assert_eq!(serde_json::to_value(&s).unwrap(), text);
    }

    #[test]
    fn errors_name_the_key() {
        let e = Settings::from_json_str(r#"{"theme": 1, "compaction": {"enabled": "yes"}}"#)
            .unwrap_err();
        match &e {
            SettingsError::Invalid { key, message, .. } => {
                assert_eq!(key, "compaction");
                assert!(message.contains("expected a boolean"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let e = Settings::from_json_str("{\n  \"a\": 1,\n}").unwrap_err();
        match e {
            SettingsError::Syntax { line, column, .. } => assert_eq!((line, column), (3, 1)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Settings::from_json_str("[]").unwrap_err(),
            SettingsError::NotAnObject { .. }
        ));
        assert_eq!(Settings::from_json_str("").unwrap(), Settings::default());
    }

    #[test]
    fn js_number_formatting() {
        let v = json!({"a": 1.0, "b": [2.5, 3e3], "c": {"d": -0.0}});
        assert_eq!(
            pretty_json(&v),
            "{\n  \"a\": 1,\n  \"b\": [\n    2.5,\n    3000\n  ],\n  \"c\": {\n    \"d\": 0\n  }\n}"
        );
        assert_eq!(pretty_json(&json!({})), "{}");
    }

    #[test]
    fn in_memory_set_changes_nothing_on_disk() {
        let m = SettingsManager::in_memory(json!({"compaction": {"reserveTokens": 1}}), json!({}))
            .unwrap();
        m.set_compaction_enabled(false).unwrap();
        assert_eq!(
            Value::Object(m.global()),
            json!({"compaction": {"reserveTokens": 1, "enabled": false}})
        );
        assert!(!m.settings().compaction_settings().enabled);
        // A wrong type is refused and changes nothing.
        assert!(m.set_global("steeringMode", json!(3)).is_err());
        assert_eq!(m.settings().steering_mode, None);
    }

    #[test]
    fn project_values_win_over_a_saved_global_value() {
        let m = SettingsManager::in_memory(json!({}), json!({"defaultModel": "p"})).unwrap();
        m.set_default_model("openai", "g").unwrap();
        let s = m.settings();
        assert_eq!(s.default_model.as_deref(), Some("p"));
        assert_eq!(s.default_provider.as_deref(), Some("openai"));
    }
}
