//! `pi_engine::cli::config` on temporary agent directories: settings (merge, corrupt files,
//! writes), `auth.json` (keys, OAuth entries), model patterns and their messages,
//! `--list-models`, the session flags.
//!
//! The differential tests at the end run pi 0.73.1's own functions with node on the same
//! files (`tests/support/pi_config.mjs`); they need node and pi's npm packages
//! (`scripts/install-pi-npm.sh`), so a plain `cargo test` lists them as ignored.
#![cfg(feature = "cli")]

#[path = "support/pi_npm.rs"]
mod pi_npm;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_engine::ThinkingLevel;
use pi_engine::UserMessage;
use pi_engine::agent::QueueMode;
use pi_engine::cli::config::{
    AuthError, Config, ConfigError, ConfigPaths, Credential, ModelArgs, NoCredentials,
    SessionRequest, SessionSelectError, Settings, SettingsError, SettingsManager, fork_session,
    list_models, merge_settings, resolve_cli_model, resolve_model_scope,
};
use pi_engine::models::{CredentialSource, ModelRegistry};
use pi_engine::session::SessionOptions;
use serde_json::{Value, json};

/// A temporary home for one test: `agent/` (the agent dir) and `project/` (the cwd).
struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
    paths: ConfigPaths,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let paths = ConfigPaths::new(root.join("project"), root.join("agent"));
        fs::create_dir_all(&paths.agent_dir).unwrap();
        fs::create_dir_all(paths.cwd.join(".pi")).unwrap();
        Home {
            _dir: dir,
            root,
            paths,
        }
    }

    fn write(&self, path: PathBuf, content: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn global(&self, content: &str) {
        self.write(self.paths.settings(), content);
    }

    fn project(&self, content: &str) {
        self.write(self.paths.project_settings(), content);
    }

    fn auth(&self, content: &str) {
        self.write(self.paths.auth(), content);
    }

    fn models(&self, content: &str) {
        self.write(self.paths.models(), content);
    }

    /// The configuration, without the machine's environment variables.
    fn config(&self) -> Result<Config, ConfigError> {
        Config::load_with_credentials(self.paths.clone(), Arc::new(NoCredentials))
    }
}

// ---------------------------------------------------------------------------------------
// Settings

#[test]
fn global_and_project_settings_merge_as_pi_merges_them() {
    let home = Home::new();
    home.global(
        r#"{
  "defaultProvider": "anthropic",
  "defaultModel": "claude-sonnet-4-5",
  "compaction": {"enabled": false, "reserveTokens": 16384},
  "retry": {"maxRetries": 5, "provider": {"maxRetries": 1, "timeoutMs": 1000}},
  "enabledModels": ["claude-*", "gpt-5*"],
  "theme": "dark",
  "queueMode": "all"
}"#,
    );
    home.project(
        r#"{
  "defaultModel": "claude-opus-4-7",
  "compaction": {"keepRecentTokens": 1234},
  "retry": {"provider": {"maxRetryDelayMs": 0}},
  "enabledModels": ["gemini-*"],
  "sessionDir": "~/pi-sessions"
}"#,
    );
    let config = home.config().unwrap();
    let s = config.settings.settings();
    assert_eq!(s.default_provider.as_deref(), Some("anthropic"));
    assert_eq!(s.default_model.as_deref(), Some("claude-opus-4-7"));
    // Objects merged one level deep, arrays replaced.
    let c = s.compaction_settings();
    assert_eq!(
        (c.enabled, c.reserve_tokens, c.keep_recent_tokens),
        (false, 16384, 1234)
    );
    assert_eq!(
        s.enabled_models.as_deref(),
        Some(&["gemini-*".to_owned()][..])
    );
    // retry.provider is replaced as a whole by the project's (pi merges one level only).
    let p = s.provider_retry();
    assert_eq!(
        (p.max_retries, p.timeout_ms, p.max_retry_delay_ms),
        (None, None, 0)
    );
    assert_eq!(s.retry_settings().max_retries, 5);
    // queueMode migrated; unknown keys kept.
    assert_eq!(s.steering_mode(), QueueMode::All);
    assert_eq!(s.extra["theme"], "dark");
    assert_eq!(
        s.session_dir(),
        Some(std::env::home_dir().unwrap().join("pi-sessions"))
    );
    let session = s.to_agent_session_settings();
    assert!(!session.compaction.enabled);
    assert_eq!(session.steering_mode, QueueMode::All);
    assert_eq!(session.retry.max_retries, 5);
    // The session directory: --session-dir, else the variable, else the setting.
    let options_dir = config.session_dir(Some("/explicit"));
    assert_eq!(options_dir, Some(PathBuf::from("/explicit")));
}

#[test]
fn missing_and_empty_settings_files_are_empty_settings() {
    let home = Home::new();
    let config = home.config().unwrap();
    assert_eq!(config.settings.settings(), Settings::default());
    home.global("");
    assert_eq!(
        home.config().unwrap().settings.settings(),
        Settings::default()
    );
}

#[test]
fn a_corrupt_settings_file_is_an_error_naming_it_and_nothing_is_written() {
    let home = Home::new();
    let corrupt = "{\n  \"defaultModel\": \"x\",\n  \"theme\": dark\n}";
    home.global(corrupt);
    let err = home.config().unwrap_err();
    let ConfigError::Settings(SettingsError::Syntax {
        path, line, column, ..
    }) = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(path, &home.paths.settings());
    assert_eq!((*line, *column), (3, 12));
    let text = err.to_string();
    assert!(
        text.contains(&home.paths.settings().display().to_string()),
        "{text}"
    );
    assert!(text.contains("line 3 column 12"), "{text}");
    assert_eq!(fs::read_to_string(home.paths.settings()).unwrap(), corrupt);

    // The project's file is named when it is the broken one.
    home.global("{}");
    home.project("[1, 2]");
    let err = home.config().unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "invalid settings file {}: expected a JSON object",
            home.paths.project_settings().display()
        )
    );

    // A value of the wrong type names the file and the key.
    home.project(r#"{"retry": {"maxRetries": "three"}}"#);
    match home.config().unwrap_err() {
        ConfigError::Settings(SettingsError::Invalid { path, key, message }) => {
            assert_eq!(path, home.paths.project_settings());
            assert_eq!(key, "retry");
            assert!(
                message.contains("invalid type: string \"three\""),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_file_that_became_corrupt_is_not_overwritten() {
    let home = Home::new();
    home.global(r#"{"theme": "dark"}"#);
    let settings = SettingsManager::load(&home.paths).unwrap();
    home.global("{ broken");
    let err = settings.set_default_model("openai", "gpt-5.4").unwrap_err();
    assert!(matches!(err, SettingsError::Syntax { .. }), "{err:?}");
    assert_eq!(
        fs::read_to_string(home.paths.settings()).unwrap(),
        "{ broken"
    );
    // Memory is unchanged too.
    assert_eq!(settings.settings().default_model, None);
}

#[test]
fn writes_keep_unknown_keys_and_other_values_as_pi_writes_them() {
    let home = Home::new();
    home.global(
        r#"{"theme": "light", "compaction": {"reserveTokens": 8192, "future": [1, 2.5]},
            "defaultModel": "old", "lastChangelogVersion": "0.73.1", "queueMode": "all"}"#,
    );
    home.project(r#"{"defaultThinkingLevel": "low"}"#);
    let settings = SettingsManager::load(&home.paths).unwrap();
    // Another program changes the file meanwhile: its change is kept.
    let mut on_disk: Value =
        serde_json::from_str(&fs::read_to_string(home.paths.settings()).unwrap()).unwrap();
    on_disk["packages"] = json!(["pi-skills"]);
    home.global(&on_disk.to_string());

    settings.set_default_model("openai", "gpt-5.4").unwrap();
    settings
        .set_default_thinking_level(ThinkingLevel::High)
        .unwrap();
    settings.set_compaction_enabled(false).unwrap();
    settings.set_follow_up_mode(QueueMode::All).unwrap();
    let text = fs::read_to_string(home.paths.settings()).unwrap();
    assert_eq!(
        text,
        r#"{
  "theme": "light",
  "compaction": {
    "reserveTokens": 8192,
    "future": [
      1,
      2.5
    ],
    "enabled": false
  },
  "defaultModel": "gpt-5.4",
  "lastChangelogVersion": "0.73.1",
  "packages": [
    "pi-skills"
  ],
  "steeringMode": "all",
  "defaultProvider": "openai",
  "defaultThinkingLevel": "high",
  "followUpMode": "all"
}"#
    );
    // The project's level still wins in the merged settings.
    let s = settings.settings();
    assert_eq!(s.default_thinking_level, Some(ThinkingLevel::Low));
    assert_eq!(s.default_model.as_deref(), Some("gpt-5.4"));
    assert!(!s.compaction_settings().enabled);
    // No temporary file or lock is left behind.
    let names: Vec<String> = fs::read_dir(&home.paths.agent_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["settings.json"]);
}

#[test]
fn a_write_creates_the_file_and_waits_for_pis_lock() {
    let home = Home::new();
    let settings = SettingsManager::load(&home.paths).unwrap();
    let lock = PathBuf::from(format!("{}.lock", home.paths.settings().display()));
    fs::create_dir(&lock).unwrap();
    let err = settings.set_retry_enabled(false).unwrap_err();
    assert!(matches!(err, SettingsError::Locked { .. }), "{err:?}");
    assert!(!home.paths.settings().exists());
    fs::remove_dir(&lock).unwrap();
    settings.set_retry_enabled(false).unwrap();
    assert_eq!(
        fs::read_to_string(home.paths.settings()).unwrap(),
        "{\n  \"retry\": {\n    \"enabled\": false\n  }\n}"
    );
}

#[test]
fn settings_map_onto_stream_options() {
    let s = Settings::from_json_str(
        r#"{"thinkingBudgets": {"low": 4096}, "retry": {"provider": {"maxRetries": 7}}}"#,
    )
    .unwrap();
    let options = s.apply_to_stream_options(pi_engine::StreamOptions::new());
    assert_eq!(options.thinking_budgets.unwrap().low, Some(4096));
    assert_eq!(options.retry.unwrap().max_retries, 7);
    assert_eq!(options.max_retry_delay_ms, Some(60_000));
}

#[test]
fn merge_replaces_nulls_and_arrays() {
    let merged = merge_settings(
        json!({"a": {"x": 1}, "b": [1], "c": 1})
            .as_object()
            .unwrap(),
        json!({"a": null, "b": [], "d": {"y": 2}})
            .as_object()
            .unwrap(),
    );
    assert_eq!(
        Value::Object(merged),
        json!({"a": null, "b": [], "c": 1, "d": {"y": 2}})
    );
}

// ---------------------------------------------------------------------------------------
// Credentials

#[tokio::test]
async fn auth_json_keys_are_the_registrys_credentials() {
    let home = Home::new();
    home.auth(
        r#"{"openai": {"type": "api_key", "key": "sk-openai"},
            "google": {"type": "api_key", "key": "PI_ENGINE_TEST_UNSET_VARIABLE"}}"#,
    );
    let config = home.config().unwrap();
    let providers: Vec<&str> = config.auth.providers().collect();
    assert_eq!(providers, ["google", "openai"]);
    assert!(matches!(
        config.auth.get("openai"),
        Some(Credential::ApiKey { .. })
    ));
    let model = config.registry.find("openai", "gpt-5.4").unwrap().clone();
    let auth = config.registry.request_auth(&model).await.unwrap();
    assert_eq!(auth.api_key.unwrap().expose(), "sk-openai");
    // A value that names no set variable is the key itself (pi's resolveConfigValue).
    let gemini = config
        .registry
        .find("google", "gemini-2.5-flash")
        .unwrap()
        .clone();
    let auth = config.registry.request_auth(&gemini).await.unwrap();
    assert_eq!(
        auth.api_key.unwrap().expose(),
        "PI_ENGINE_TEST_UNSET_VARIABLE"
    );
    // Only providers with credentials are available.
    let available = config.registry.available();
    assert!(
        available
            .iter()
            .all(|m| m.provider == "openai" || m.provider == "google")
    );
    assert!(config.check_model(&model).is_ok());
    // Keys never show in Debug.
    let debug = format!("{config:?}");
    assert!(!debug.contains("sk-openai"), "{debug}");
}

#[tokio::test]
async fn oauth_entries_are_recognized_and_refused_clearly() {
    let home = Home::new();
    home.auth(
        r#"{"anthropic": {"type": "oauth", "refresh": "r", "access": "sk-ant-oat-secret", "expires": 1},
            "openai": {"type": "api_key", "key": "sk-openai"}}"#,
    );
    let config = home.config().unwrap();
    assert_eq!(config.auth.get("anthropic"), Some(&Credential::OAuth));
    // Available, as in pi …
    let opus = config
        .registry
        .find("anthropic", "claude-opus-4-7")
        .unwrap()
        .clone();
    assert!(config.registry.has_auth(&opus));
    // … but the default model (pi's choice: anthropic's) cannot be used.
    let choice = config.select_model(&ModelArgs::new(), false);
    assert_eq!(choice.default_model.as_ref().unwrap().id, "claude-opus-4-7");
    let err = config.check_model(&opus).unwrap_err();
    assert!(matches!(err, AuthError::OAuthNotSupported { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "OAuth login is not supported by pi-engine; use an API key (set ANTHROPIC_API_KEY, \
             pass --api-key, or replace the OAuth entry of \"anthropic\" in {} with \
             {{\"type\": \"api_key\", \"key\": \"…\"}})",
            home.paths.auth().display()
        )
    );
    // The token is never sent as a key.
    let auth = config.registry.request_auth(&opus).await.unwrap();
    assert!(auth.api_key.is_none());
    // --api-key makes the provider usable.
    let choice = config.select_model(
        &ModelArgs::new()
            .with_model("anthropic/claude-opus-4-7")
            .with_api_key("sk-ant-flag"),
        false,
    );
    assert!(!choice.has_errors(), "{:?}", choice.diagnostics);
    assert!(config.check_model(&opus).is_ok());
    let auth = config.registry.request_auth(&opus).await.unwrap();
    assert_eq!(auth.api_key.unwrap().expose(), "sk-ant-flag");
}

#[test]
fn a_corrupt_auth_json_is_an_error() {
    let home = Home::new();
    home.auth("{\"openai\": {\"type\": \"api_key\" \"key\": \"x\"}}");
    match home.config().unwrap_err() {
        ConfigError::Auth(AuthError::Invalid { path, message }) => {
            assert_eq!(path, home.paths.auth());
            assert!(message.contains("line 1 column"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_broken_models_json_leaves_the_built_in_models_and_a_warning() {
    let home = Home::new();
    home.models("{ nope");
    let config = home.config().unwrap();
    assert!(config.models_error.is_some());
    assert_eq!(config.registry.all().len(), 969);
    let warning = config.diagnostics[0].to_string();
    assert!(
        warning.starts_with("Warning: errors loading models.json:\nFailed to parse models.json: "),
        "{warning}"
    );
    assert!(
        warning.ends_with(&format!("\n\nFile: {}", home.paths.models().display())),
        "{warning}"
    );
}

// ---------------------------------------------------------------------------------------
// Models

const LOCAL_MODELS: &str = r#"{"providers": {"local": {
    "baseUrl": "http://127.0.0.1:8080/v1", "api": "openai-completions", "apiKey": "local-key",
    "models": [
        {"id": "qwen3-coder:30b", "reasoning": true, "contextWindow": 262144},
        {"id": "qwen3-8b"},
        {"id": "llama-3.1-8b-20240723", "input": ["text", "image"], "maxTokens": 8192},
        {"id": "llama-3.1-8b-20250101"}
    ]}}}"#;

fn registry() -> ModelRegistry {
    ModelRegistry::from_models_json(LOCAL_MODELS)
        .unwrap()
        .with_credentials(Arc::new(NoCredentials))
}

#[test]
fn cli_model_patterns_and_their_messages() {
    let r = registry();
    let id = |provider: Option<&str>, model: &str| {
        let c = resolve_cli_model(provider, model, &r);
        c.model.map(|m| format!("{}/{}", m.provider, m.id))
    };
    assert_eq!(
        id(None, "local/qwen3-8b").as_deref(),
        Some("local/qwen3-8b")
    );
    // A colon in an id is part of it; a valid level after it is the thinking level.
    let c = resolve_cli_model(None, "local/qwen3-coder:30b:high", &r);
    assert_eq!(c.model.unwrap().id, "qwen3-coder:30b");
    assert_eq!(c.thinking_level, Some(ThinkingLevel::High));
    // Dated ids: the latest when there is no alias.
    assert_eq!(
        id(Some("local"), "llama").as_deref(),
        Some("local/llama-3.1-8b-20250101")
    );
    // --provider with a provider/ prefix in --model.
    assert_eq!(
        id(Some("LOCAL"), "local/qwen3-8b").as_deref(),
        Some("local/qwen3-8b")
    );
    // An invalid level with --model is part of the id: a custom id of the provider.
    let c = resolve_cli_model(Some("local"), "qwen3-8b:turbo", &r);
    assert_eq!(c.model.as_ref().unwrap().id, "qwen3-8b:turbo");
    assert_eq!(
        c.warning.as_deref(),
        Some("Model \"qwen3-8b:turbo\" not found for provider \"local\". Using custom model id.")
    );
    let c = resolve_cli_model(None, "no-such-model-anywhere", &r);
    assert_eq!(
        c.error.as_deref(),
        Some(
            "Model \"no-such-model-anywhere\" not found. Use --list-models to see available models."
        )
    );
    let c = resolve_cli_model(Some("nope"), "x", &r);
    assert_eq!(
        c.error.as_deref(),
        Some("Unknown provider \"nope\". Use --list-models to see available providers/models.")
    );
}

#[test]
fn scope_patterns_and_their_warnings() {
    let r = registry();
    let (scoped, warnings) = resolve_model_scope(
        &[
            "local/qwen*:low".into(),
            "llama:bogus".into(),
            "qwen3-8b".into(),
            "claude-*".into(),
        ],
        &r,
    );
    let got: Vec<(String, Option<ThinkingLevel>)> = scoped
        .iter()
        .map(|s| (s.model.id.clone(), s.thinking_level))
        .collect();
    assert_eq!(
        got,
        [
            ("qwen3-coder:30b".to_owned(), Some(ThinkingLevel::Low)),
            ("qwen3-8b".to_owned(), Some(ThinkingLevel::Low)),
            ("llama-3.1-8b-20250101".to_owned(), None),
        ]
    );
    let warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "Warning: Invalid thinking level \"bogus\" in pattern \"llama:bogus\". Using default instead.",
            // Anthropic has no credentials here.
            "Warning: No models match pattern \"claude-*\"",
        ]
    );
}

#[test]
fn model_selection_follows_pis_main() {
    let home = Home::new();
    home.models(LOCAL_MODELS);
    home.global(
        r#"{"defaultProvider": "local", "defaultModel": "qwen3-8b", "enabledModels": ["local/*"]}"#,
    );
    let config = home.config().unwrap();
    // The saved default is in the scope: it is chosen.
    let c = config.select_model(&ModelArgs::new(), false);
    assert_eq!(c.model.as_ref().unwrap().id, "qwen3-8b");
    assert_eq!(c.scoped_models.len(), 4);
    // A session with messages keeps its own model: nothing is chosen.
    let c = config.select_model(&ModelArgs::new(), true);
    assert!(c.model.is_none());
    assert_eq!(c.default_model.unwrap().id, "qwen3-8b");
    // --thinking wins over a :level.
    let c = config.select_model(
        &ModelArgs::new()
            .with_model("local/qwen3-coder:30b:low")
            .with_thinking(ThinkingLevel::High),
        true,
    );
    assert_eq!(c.thinking_level, Some(ThinkingLevel::High));
    // --models wins over enabledModels; the first scoped model when the default is not in it.
    let c = config.select_model(&ModelArgs::new().with_models(["llama:minimal"]), false);
    assert_eq!(c.model.unwrap().id, "llama-3.1-8b-20250101");
    assert_eq!(c.thinking_level, Some(ThinkingLevel::Minimal));
    // --api-key without a model.
    let c = config.select_model(&ModelArgs::new().with_api_key("k"), true);
    assert_eq!(
        c.diagnostics
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "Error: --api-key requires a model to be specified via --model, --provider/--model, or --models"
        ]
    );
    // A model error is an error diagnostic.
    let c = config.select_model(&ModelArgs::new().with_model("zzz-nothing"), false);
    assert!(c.has_errors());
}

#[test]
fn list_models_prints_pis_table() {
    let r = registry();
    let table = list_models(&r, None);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines,
        [
            "provider  model                  context  max-out  thinking  images",
            "local     llama-3.1-8b-20240723  128K     8.2K     no        yes   ",
            "local     llama-3.1-8b-20250101  128K     16.4K    no        no    ",
            "local     qwen3-8b               128K     16.4K    no        no    ",
            "local     qwen3-coder:30b        262.1K   16.4K    yes       no    ",
        ]
    );
    assert_eq!(
        list_models(&r, Some("qw 30")).lines().count(),
        2,
        "header and qwen3-coder:30b"
    );
    assert_eq!(
        list_models(&r, Some("mistral")),
        "No models matching \"mistral\"\n"
    );
    let none = ModelRegistry::new().with_credentials(Arc::new(NoCredentials));
    assert!(list_models(&none, None).starts_with("No models available."));
}

// ---------------------------------------------------------------------------------------
// Sessions

fn session_with_message(options: &SessionOptions, cwd: &Path, text: &str) -> (String, PathBuf) {
    let mut sm = options.create(cwd.to_string_lossy());
    sm.append_message(UserMessage::text(text)).unwrap();
    (
        sm.session_id().to_owned(),
        sm.session_file().unwrap().to_owned(),
    )
}

#[test]
fn session_flags_pick_sessions_as_pi_does() {
    let home = Home::new();
    let config = home.config().unwrap();
    let cwd = home.paths.cwd.clone();
    fs::create_dir_all(&cwd).unwrap();
    let options = config.session_options(None);

    let (id, file) = session_with_message(&options, &cwd, "first");
    // --continue: the most recent one.
    let sm = config
        .open_session(&SessionRequest::Continue, None)
        .unwrap();
    assert_eq!(sm.session_id(), id);
    drop(sm);
    // --session with an id prefix, and with a path.
    let sm = config
        .open_session(&SessionRequest::Open(id[..6].to_owned()), None)
        .unwrap();
    assert_eq!(sm.session_file(), Some(file.as_path()));
    drop(sm);
    let sm = config
        .open_session(&SessionRequest::Open(file.display().to_string()), None)
        .unwrap();
    assert_eq!(sm.session_id(), id);
    drop(sm);
    // --fork: a copy with a new id whose parent is the source.
    let sm = config
        .open_session(&SessionRequest::Fork(id[..6].to_owned()), None)
        .unwrap();
    assert_ne!(sm.session_id(), id);
    assert_eq!(
        sm.header().parent_session.as_deref(),
        Some(file.to_str().unwrap())
    );
    drop(sm);
    // --no-session: memory only.
    let sm = config
        .open_session(&SessionRequest::NoSession, None)
        .unwrap();
    assert!(!sm.is_persisted());
    // Not found.
    let err = config
        .open_session(&SessionRequest::Fork("ffffffff".into()), None)
        .unwrap_err();
    assert_eq!(err.to_string(), "No session found matching 'ffffffff'");
    let err = config
        .open_session(&SessionRequest::Resume, None)
        .unwrap_err();
    assert!(matches!(err, SessionSelectError::ResumeUnsupported));
    // An empty fork source.
    let empty = home.root.join("empty.jsonl");
    fs::write(&empty, "").unwrap();
    let err = fork_session(&empty, &cwd, &options).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Cannot fork: source session file is empty or invalid: {}",
            empty.display()
        )
    );
}

#[test]
fn a_session_of_another_project_is_reported_and_can_be_forked() {
    let home = Home::new();
    let config = home.config().unwrap();
    let other = home.root.join("other-project");
    fs::create_dir_all(&other).unwrap();
    let options = config.session_options(None);
    let (id, file) = session_with_message(&options, &other, "elsewhere");
    let err = config
        .open_session(&SessionRequest::Open(id[..8].to_owned()), None)
        .unwrap_err();
    let SessionSelectError::OtherProject { path, cwd } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(path, &file);
    assert_eq!(cwd, &other.display().to_string());
    assert_eq!(
        err.to_string(),
        format!("Session found in different project: {}", other.display())
    );
    let forked = fork_session(path, &home.paths.cwd, &options).unwrap();
    assert_eq!(forked.cwd(), home.paths.cwd.display().to_string());
}

#[test]
fn a_session_whose_directory_is_gone_is_refused_with_pis_text() {
    let home = Home::new();
    let config = home.config().unwrap();
    let gone = home.root.join("gone");
    let options = config.session_options(Some(home.root.join("sessions").to_str().unwrap()));
    let (_, file) = session_with_message(&options, &gone, "x");
    let err = config
        .open_session(
            &SessionRequest::Open(file.display().to_string()),
            Some(home.root.join("sessions").to_str().unwrap()),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Stored session working directory does not exist: {}\nSession file: {}\nCurrent working directory: {}",
            gone.display(),
            file.display(),
            home.paths.cwd.display()
        )
    );
}

#[test]
fn fork_conflicts_are_refused_with_pis_text() {
    let e = SessionRequest::from_flags(true, true, true, Some("a"), Some("b")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--fork cannot be combined with --session, --continue, --resume, --no-session"
    );
    assert_eq!(
        SessionRequest::from_flags(true, false, false, Some("a"), None).unwrap(),
        SessionRequest::Open("a".into())
    );
}

#[test]
fn the_session_dir_setting_is_used() {
    let home = Home::new();
    home.global(&format!(
        r#"{{"sessionDir": "{}"}}"#,
        home.root.join("custom").display()
    ));
    let config = home.config().unwrap();
    let mut sm = config.open_session(&SessionRequest::New, None).unwrap();
    sm.append_message(UserMessage::text("x")).unwrap();
    assert!(
        sm.session_file()
            .unwrap()
            .starts_with(home.root.join("custom"))
    );
}

// ---------------------------------------------------------------------------------------
// Differential tests: pi's own functions, run with node on the same files.

/// Runs `tests/support/pi_config.mjs` on `input` with a cleared environment.
fn run_pi(input: &Value, home: &Path) -> Value {
    let modules = pi_npm::require("@mariozechner/pi-coding-agent");
    let file = home.join("pi-input.json");
    fs::write(&file, input.to_string()).unwrap();
    let out = pi_npm::stdout_of(
        pi_npm::node_script("pi_config.mjs", &modules)
            .arg(&file)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("PI_CODING_AGENT_DIR", home.join("agent"))
            .env("PI_NPM_MODULES", &modules)
            .env("NO_COLOR", "1")
            .env("PI_OFFLINE", "1"),
    );
    serde_json::from_slice(&out).unwrap()
}

fn model_ref(m: Option<&pi_engine::Model>) -> Value {
    match m {
        Some(m) => json!({"provider": m.provider, "id": m.id, "name": m.name}),
        None => Value::Null,
    }
}

/// Credentials for every built-in provider (and an OAuth login), so every model is listed.
fn auth_for_all() -> Value {
    let mut auth = serde_json::Map::new();
    for p in pi_engine::llm::get_providers() {
        auth.insert(p, json!({"type": "api_key", "key": "k"}));
    }
    auth.insert(
        "github-copilot".into(),
        json!({"type": "oauth", "refresh": "r", "access": "a", "expires": 0}),
    );
    Value::Object(auth)
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn model_resolution_and_list_models_match_pi() {
    let home = Home::new();
    home.models(LOCAL_MODELS);
    let cli: Vec<(Option<&str>, &str)> = vec![
        (None, "sonnet"),
        (None, "opus"),
        (None, "haiku"),
        (None, "claude-sonnet-4-5"),
        (None, "claude-sonnet-4-5:high"),
        (None, "sonnet:xhigh"),
        (None, "anthropic/claude-opus-4-7"),
        (None, "Anthropic/Claude-Opus-4-7"),
        (None, "openai/gpt-5.4:high"),
        (None, "gpt-5.4:bogus"),
        (None, "gpt-5.4-mini:low"),
        (None, "gpt-4o"),
        (None, "GPT-4O"),
        (None, "4o"),
        (None, "o3"),
        (None, "zai/glm-5"),
        (None, "openai/gpt-4o:extended"),
        (None, "openrouter/openai/gpt-4o"),
        (None, "openai/gpt-4o"),
        (None, "gemini"),
        (None, "flash"),
        (None, "kimi"),
        (None, "deepseek"),
        (None, "qwen"),
        (None, "llama"),
        (None, "mistral"),
        (None, "local/qwen3-coder:30b"),
        (None, "local/qwen3-coder:30b:minimal"),
        (None, "qwen3-coder:30b:bogus"),
        (None, "nonexistent-model"),
        (None, "anthropic/"),
        (None, "/"),
        (None, "  sonnet  "),
        (None, "*"),
        (Some("anthropic"), "sonnet"),
        (Some("ANTHROPIC"), "anthropic/claude-opus-4-7"),
        (Some("openai"), "my-custom-model"),
        (Some("openai"), "gpt-5.4:bogus"),
        (Some("openrouter"), "openai/gpt-4o"),
        (Some("local"), "llama"),
        (Some("local"), "qwen3-8b:high"),
        (Some("bogus"), "x"),
        (Some("google"), "pro"),
        (Some("amazon-bedrock"), "sonnet"),
    ];
    let scope: Vec<Vec<&str>> = vec![
        vec!["claude-*"],
        vec!["*sonnet*"],
        vec!["anthropic/*:high"],
        vec!["sonnet:high", "gpt-5.4:bogus", "nomatch"],
        vec!["openrouter/**"],
        vec!["gpt-4?"],
        vec!["[gq]*"],
        vec!["local/*", "qwen3-8b", "local/qwen3-8b:low"],
        vec!["*/*:minimal"],
        vec!["GPT-5*"],
        vec!["github-copilot/*"],
        vec!["{claude,gpt}-4*"],
    ];
    let list: Vec<Option<&str>> = vec![
        None,
        Some(""),
        Some("opus"),
        Some("gpt 4o"),
        Some("o4"),
        Some("anthropic"),
        Some("zzzznothing"),
        Some("local 30"),
    ];
    let initial = vec![
        json!({}),
        json!({"defaultProvider": "google", "defaultModel": "gemini-2.5-flash"}),
        json!({"defaultProvider": "google", "defaultModel": "no-such"}),
        json!({"defaultProvider": "local"}),
    ];
    let auth = auth_for_all();
    let input = json!({
        "agentDir": home.paths.agent_dir,
        "cwd": home.paths.cwd,
        "auth": auth,
        "cli": cli,
        "scope": scope,
        "list": list,
        "initial": initial,
    });
    let pi = run_pi(&input, &home.root);
    assert_eq!(pi["cli"].as_array().unwrap().len(), cli.len());
    assert_eq!(pi["scope"].as_array().unwrap().len(), scope.len());
    assert_eq!(pi["list"].as_array().unwrap().len(), list.len());
    let found = pi["cli"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["model"].is_null())
        .count();
    assert!(found > 30, "pi found {found} models");

    home.auth(&auth.to_string());
    let config = home.config().unwrap();
    for (i, (provider, model)) in cli.iter().enumerate() {
        let c = resolve_cli_model(*provider, model, &config.registry);
        let ours = json!({
            "model": model_ref(c.model.as_ref()),
            "thinkingLevel": c.thinking_level,
            "warning": c.warning,
            "error": c.error,
        });
        assert_eq!(
            ours, pi["cli"][i],
            "--provider {provider:?} --model {model:?}"
        );
    }
    for (i, patterns) in scope.iter().enumerate() {
        let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
        let (scoped, warnings) = resolve_model_scope(&patterns, &config.registry);
        let ours = json!({
            "models": scoped.iter().map(|s| json!([s.model.provider, s.model.id, s.thinking_level])).collect::<Vec<_>>(),
            "warnings": warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        assert_eq!(ours, pi["scope"][i], "--models {patterns:?}");
    }
    for (i, search) in list.iter().enumerate() {
        let ours = list_models(&config.registry, *search);
        assert_eq!(
            ours,
            pi["list"][i].as_str().unwrap(),
            "--list-models {search:?}"
        );
    }
    assert!(pi["list"][0].as_str().unwrap().lines().count() > 900);
    for (i, settings) in initial.iter().enumerate() {
        let s = Settings::from_json_str(&settings.to_string()).unwrap();
        let ours = pi_engine::cli::config::find_initial_model(&s, &config.registry);
        assert_eq!(model_ref(ours.as_ref()), pi["initial"][i], "{settings}");
    }
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn default_model_choice_matches_pi_per_provider() {
    // One provider with credentials at a time: pi's default model of each (or its first).
    let home = Home::new();
    home.models(LOCAL_MODELS);
    let mut providers = pi_engine::llm::get_providers();
    providers.push("local".into());
    for provider in providers {
        let mut one = serde_json::Map::new();
        one.insert(provider.clone(), json!({"type": "api_key", "key": "k"}));
        let auth = Value::Object(one);
        let input = json!({
            "agentDir": home.paths.agent_dir, "cwd": home.paths.cwd, "auth": auth,
            "initial": [{}],
        });
        let pi = run_pi(&input, &home.root);
        home.auth(&auth.to_string());
        let config = home.config().unwrap();
        let ours =
            pi_engine::cli::config::find_initial_model(&Settings::default(), &config.registry);
        // models.json's local provider has its own key: it is always available.
        assert_eq!(model_ref(ours.as_ref()), pi["initial"][0], "{provider}");
    }
}

/// One settings scenario: pi's getters and writes against ours, on two copies of the files.
fn settings_scenario(global: Option<&str>, project: Option<&str>, writes: Value) {
    let pi_home = Home::new();
    let our_home = Home::new();
    for home in [&pi_home, &our_home] {
        if let Some(g) = global {
            home.global(g);
        }
        if let Some(p) = project {
            home.project(p);
        }
    }
    let input = json!({
        "agentDir": pi_home.paths.agent_dir,
        "cwd": pi_home.paths.cwd,
        "settings": {"writes": writes},
    });
    let pi = run_pi(&input, &pi_home.root)["settings"].clone();
    let loaded = SettingsManager::load(&our_home.paths);
    let pi_errors = pi["errors"].as_array().unwrap();
    let manager = match loaded {
        Err(e) => {
            // pi warns about the same file and goes on without it; neither writes it.
            let scope = if e.path() == our_home.paths.settings() {
                "global"
            } else {
                "project"
            };
            assert!(pi_errors.contains(&json!(scope)), "{e}: pi {pi_errors:?}");
            if scope == "global" {
                assert_eq!(
                    fs::read_to_string(pi_home.paths.settings()).unwrap(),
                    global.unwrap(),
                    "pi wrote a corrupt file"
                );
            }
            return;
        }
        Ok(m) => m,
    };
    assert!(pi_errors.is_empty(), "{pi_errors:?}");
    let merged = Value::Object(merge_settings(&manager.global(), &manager.project()));
    assert_eq!(js(merged), pi["merged"], "merged settings");
    assert_eq!(js(Value::Object(manager.global())), pi["global"]);
    assert_eq!(js(Value::Object(manager.project())), pi["project"]);
    let s = manager.settings();
    let c = s.compaction_settings();
    assert_eq!(
        json!({"enabled": c.enabled, "reserveTokens": c.reserve_tokens, "keepRecentTokens": c.keep_recent_tokens}),
        pi["compaction"]
    );
    let b = s.branch_summary_settings();
    assert_eq!(
        json!({"reserveTokens": b.reserve_tokens, "skipPrompt": b.skip_prompt}),
        pi["branchSummary"]
    );
    let r = s.retry_settings();
    assert_eq!(
        json!({"enabled": r.enabled, "maxRetries": r.max_retries, "baseDelayMs": r.base_delay_ms}),
        pi["retry"]
    );
    let p = s.provider_retry();
    let mut provider = json!({"maxRetryDelayMs": p.max_retry_delay_ms});
    if let Some(t) = p.timeout_ms {
        provider["timeoutMs"] = t.into();
    }
    if let Some(n) = p.max_retries {
        provider["maxRetries"] = n.into();
    }
    assert_eq!(provider, pi["providerRetry"]);
    assert_eq!(
        json!(s.session_dir().map(|d| d.display().to_string())),
        pi["sessionDir"]
    );
    assert_eq!(json!(s.steering_mode()), pi["steeringMode"]);
    assert_eq!(json!(s.follow_up_mode()), pi["followUpMode"]);
    assert_eq!(json!(s.transport()), pi["transport"]);
    assert_eq!(json!(s.enabled_models), pi["enabledModels"]);
    assert_eq!(json!(s.default_thinking_level), pi["defaultThinkingLevel"]);
    assert_eq!(json!(s.enable_skill_commands()), pi["enableSkillCommands"]);
    assert_eq!(json!(s.skills.clone().unwrap_or_default()), pi["skills"]);

    for w in writes.as_array().unwrap() {
        let w = w.as_array().unwrap();
        let result = match w[0].as_str().unwrap() {
            "model" => manager.set_default_model(w[1].as_str().unwrap(), w[2].as_str().unwrap()),
            "thinking" => {
                manager.set_default_thinking_level(w[1].as_str().unwrap().parse().unwrap())
            }
            "compaction" => manager.set_compaction_enabled(w[1].as_bool().unwrap()),
            "retry" => manager.set_retry_enabled(w[1].as_bool().unwrap()),
            "steering" => manager.set_steering_mode(serde_json::from_value(w[1].clone()).unwrap()),
            other => panic!("{other}"),
        };
        result.unwrap();
    }
    let pi_file = fs::read_to_string(pi_home.paths.settings()).ok();
    let our_file = fs::read_to_string(our_home.paths.settings()).ok();
    assert_eq!(our_file, pi_file, "the global file after the writes");
    assert_eq!(
        fs::read_to_string(our_home.paths.project_settings()).ok(),
        fs::read_to_string(pi_home.paths.project_settings()).ok(),
        "the project file is never written"
    );
    let after = Value::Object(merge_settings(&manager.global(), &manager.project()));
    assert_eq!(
        js(after),
        pi["mergedAfter"],
        "merged settings after the writes"
    );
}

/// Whole floats as integers, as JavaScript holds them (`2.0` is `2`).
fn js(value: Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() && n.as_f64().unwrap().fract() == 0.0 => {
            json!(n.as_f64().unwrap() as i64)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(js).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, js(v))).collect()),
        other => other,
    }
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn settings_merge_getters_and_writes_match_pi() {
    let writes = json!([
        ["model", "openai", "gpt-5.4"],
        ["thinking", "high"],
        ["compaction", false],
        ["retry", true],
        ["steering", "all"],
    ]);
    // Nothing at all: pi creates the file with the changed keys.
    settings_scenario(None, None, writes.clone());
    // Both files, sections merged one level, arrays replaced, unknown keys, migrations.
    settings_scenario(
        Some(
            r#"{"theme": "dark", "queueMode": "all", "websockets": true,
                "skills": {"enableSkillCommands": false, "customDirectories": ["~/skills"]},
                "retry": {"maxDelayMs": 30000, "provider": {"maxRetries": 2}},
                "compaction": {"reserveTokens": 1000, "x": {"deep": [1, 2]}},
                "branchSummary": {"skipPrompt": true},
                "terminal": {"showImages": false}, "defaultModel": "old",
                "sessionDir": "/srv/sessions-here", "lastChangelogVersion": "0.70.0",
                "number": 1.5, "whole": 2.0}"#,
        ),
        Some(
            r#"{"compaction": {"keepRecentTokens": 5}, "retry": {"enabled": false},
                "enabledModels": ["claude-*"], "transport": "sse",
                "followUpMode": "all", "defaultThinkingLevel": "minimal", "skills": []}"#,
        ),
        writes.clone(),
    );
    // Sections written into: one missing from the file, one holding a null.
    settings_scenario(
        Some(r#"{"retry": {"provider": null, "maxRetries": 4}}"#),
        Some(r#"{"retry": {"enabled": true}, "compaction": {"enabled": false}}"#),
        json!([["compaction", true], ["retry", false]]),
    );
    // Empty files.
    settings_scenario(Some(""), Some(""), writes.clone());
    // Corrupt files: pi warns and does not write; we refuse to load.
    settings_scenario(Some("{\"theme\": }"), None, writes.clone());
    settings_scenario(None, Some("not json"), json!([]));
}

#[test]
fn credential_source_reports_runtime_keys() {
    let home = Home::new();
    let config = home.config().unwrap();
    assert!(!config.auth.has_auth("mistral"));
    config.auth.set_runtime_api_key("mistral", "k");
    assert!(config.auth.has_auth("mistral"));
    assert!(
        config
            .registry
            .available()
            .iter()
            .any(|m| m.provider == "mistral")
    );
}
