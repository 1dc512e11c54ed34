//! pi's model resolution (`model-resolver.ts`): `--provider`/`--model`, the patterns of
//! `--models` and `enabledModels`, and the default model.

use std::fmt;

use crate::agent_session::ScopedModel;
use crate::llm::model::Model;
use crate::llm::thinking::ThinkingLevel;
use crate::models::ModelRegistry;

use super::collate::locale_compare;
use super::settings::Settings;

/// pi's default model of each provider, in pi's order: the first of these with credentials
/// is the default model when the settings name none (pi's `defaultModelPerProvider`).
pub const DEFAULT_MODEL_PER_PROVIDER: &[(&str, &str)] = &[
    ("amazon-bedrock", "us.anthropic.claude-opus-4-6-v1"),
    ("anthropic", "claude-opus-4-7"),
    ("openai", "gpt-5.4"),
    ("azure-openai-responses", "gpt-5.4"),
    ("openai-codex", "gpt-5.5"),
    ("deepseek", "deepseek-v4-pro"),
    ("google", "gemini-3.1-pro-preview"),
    ("google-vertex", "gemini-3.1-pro-preview"),
    ("github-copilot", "gpt-5.4"),
    ("openrouter", "moonshotai/kimi-k2.6"),
    ("vercel-ai-gateway", "zai/glm-5.1"),
    ("xai", "grok-4.20-0309-reasoning"),
    ("groq", "openai/gpt-oss-120b"),
    ("cerebras", "zai-glm-4.7"),
    ("zai", "glm-5.1"),
    ("mistral", "devstral-medium-latest"),
    ("minimax", "MiniMax-M2.7"),
    ("minimax-cn", "MiniMax-M2.7"),
    ("moonshotai", "kimi-k2.6"),
    ("moonshotai-cn", "kimi-k2.6"),
    ("huggingface", "moonshotai/Kimi-K2.6"),
    ("fireworks", "accounts/fireworks/models/kimi-k2p6"),
    ("opencode", "kimi-k2.6"),
    ("opencode-go", "kimi-k2.6"),
    ("kimi-coding", "kimi-for-coding"),
    ("cloudflare-workers-ai", "@cf/moonshotai/kimi-k2.6"),
    (
        "cloudflare-ai-gateway",
        "workers-ai/@cf/moonshotai/kimi-k2.6",
    ),
    ("xiaomi", "mimo-v2.5-pro"),
    ("xiaomi-token-plan-cn", "mimo-v2.5-pro"),
    ("xiaomi-token-plan-ams", "mimo-v2.5-pro"),
    ("xiaomi-token-plan-sgp", "mimo-v2.5-pro"),
];

/// pi's default model id for `provider`.
///
/// ```
/// assert_eq!(pi_engine::cli::config::default_model_id("anthropic"), Some("claude-opus-4-7"));
/// assert_eq!(pi_engine::cli::config::default_model_id("ollama"), None);
/// ```
pub fn default_model_id(provider: &str) -> Option<&'static str> {
    DEFAULT_MODEL_PER_PROVIDER
        .iter()
        .find(|(p, _)| *p == provider)
        .map(|(_, id)| *id)
}

/// How serious a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Severity {
    /// Printed; the command goes on.
    Warning,
    /// Printed; the command exits with code 1 (after printing every diagnostic).
    Error,
}

/// A message for stderr. `Display` gives pi's line: `Warning: …` or `Error: …` (pi colours
/// it yellow or red on a terminal).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Diagnostic {
    /// Warning or error.
    pub severity: Severity,
    /// The text, without the prefix.
    pub message: String,
}

impl Diagnostic {
    /// A warning.
    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            message: message.into(),
        }
    }

    /// An error.
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
        }
    }

    /// True for an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.severity {
            Severity::Warning => write!(f, "Warning: {}", self.message),
            Severity::Error => write!(f, "Error: {}", self.message),
        }
    }
}

/// pi's `isAlias`: an id without a date suffix (`-20250929`), or ending in `-latest`.
fn is_alias(id: &str) -> bool {
    if id.ends_with("-latest") {
        return true;
    }
    let b = id.as_bytes();
    let dated =
        b.len() >= 9 && b[b.len() - 9] == b'-' && b[b.len() - 8..].iter().all(u8::is_ascii_digit);
    !dated
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

/// pi's `findExactModelReferenceMatch`: `provider/id` or a bare id (case-insensitive); a bare
/// id shared by several providers matches none.
fn find_exact<'a>(reference: &str, models: &[&'a Model]) -> Option<&'a Model> {
    let trimmed = reference.trim();
    if trimmed.is_empty() {
        return None;
    }
    let normalized = lower(trimmed);
    let one = |matches: Vec<&'a Model>| -> Result<Option<&'a Model>, ()> {
        match matches.len() {
            0 => Ok(None),
            1 => Ok(Some(matches[0])),
            _ => Err(()),
        }
    };
    let canonical: Vec<&Model> = models
        .iter()
        .copied()
        .filter(|m| lower(&format!("{}/{}", m.provider, m.id)) == normalized)
        .collect();
    match one(canonical) {
        Ok(Some(m)) => return Some(m),
        Err(()) => return None,
        Ok(None) => {}
    }
    if let Some((provider, id)) = trimmed.split_once('/') {
        let (provider, id) = (lower(provider.trim()), lower(id.trim()));
        if !provider.is_empty() && !id.is_empty() {
            let matches: Vec<&Model> = models
                .iter()
                .copied()
                .filter(|m| lower(&m.provider) == provider && lower(&m.id) == id)
                .collect();
            match one(matches) {
                Ok(Some(m)) => return Some(m),
                Err(()) => return None,
                Ok(None) => {}
            }
        }
    }
    let by_id: Vec<&Model> = models
        .iter()
        .copied()
        .filter(|m| lower(&m.id) == normalized)
        .collect();
    one(by_id).ok().flatten()
}

/// pi's `tryMatchModel`: an exact reference, else the models whose id or name contains the
/// pattern, preferring aliases (the highest id), else the latest dated id.
fn try_match<'a>(pattern: &str, models: &[&'a Model]) -> Option<&'a Model> {
    if let Some(m) = find_exact(pattern, models) {
        return Some(m);
    }
    let needle = lower(pattern);
    let matches: Vec<&Model> = models
        .iter()
        .copied()
        .filter(|m| lower(&m.id).contains(&needle) || lower(&m.name).contains(&needle))
        .collect();
    let (aliases, dated): (Vec<&Model>, Vec<&Model>) =
        matches.into_iter().partition(|m| is_alias(&m.id));
    let mut pool = if aliases.is_empty() { dated } else { aliases };
    // The highest id; a stable sort keeps the first of equal ones, as pi's does.
    pool.sort_by(|a, b| locale_compare(&b.id, &a.id));
    pool.first().copied()
}

/// A model pattern resolved: the model, the thinking level of a `:level` suffix, and pi's
/// warning about an invalid suffix.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ParsedPattern {
    /// The model matched.
    pub model: Option<Model>,
    /// The level of a valid `:level` suffix.
    pub thinking_level: Option<ThinkingLevel>,
    /// pi's warning (`Invalid thinking level "…" in pattern "…". Using default instead.`).
    pub warning: Option<String>,
}

/// pi's `parseModelPattern`: the whole pattern as a model first (ids may hold colons,
/// OpenRouter's `:exacto`), then, splitting at the last colon, a thinking-level suffix. An
/// invalid suffix is a warning with `strict` false (the scope patterns), and no match with
/// `strict` true (`--model`).
///
/// ```
/// use pi_engine::cli::config::parse_model_pattern;
/// use pi_engine::models::ModelRegistry;
/// use pi_engine::ThinkingLevel;
///
/// let registry = ModelRegistry::new();
/// let models: Vec<_> = registry.models_of("anthropic").collect();
/// let parsed = parse_model_pattern("sonnet-4-5:high", &models, false);
/// assert_eq!(parsed.model.unwrap().id, "claude-sonnet-4-5");
/// assert_eq!(parsed.thinking_level, Some(ThinkingLevel::High));
/// ```
pub fn parse_model_pattern(pattern: &str, models: &[&Model], strict: bool) -> ParsedPattern {
    let none = ParsedPattern {
        model: None,
        thinking_level: None,
        warning: None,
    };
    if let Some(m) = try_match(pattern, models) {
        return ParsedPattern {
            model: Some(m.clone()),
            ..none
        };
    }
    let Some(colon) = pattern.rfind(':') else {
        return none;
    };
    let (prefix, suffix) = (&pattern[..colon], &pattern[colon + 1..]);
    match suffix.parse::<ThinkingLevel>() {
        Ok(level) => {
            let inner = parse_model_pattern(prefix, models, strict);
            if inner.model.is_some() {
                ParsedPattern {
                    thinking_level: if inner.warning.is_some() {
                        None
                    } else {
                        Some(level)
                    },
                    ..inner
                }
            } else {
                inner
            }
        }
        Err(_) if strict => none,
        Err(_) => {
            let inner = parse_model_pattern(prefix, models, strict);
            if inner.model.is_some() {
                ParsedPattern {
                    model: inner.model,
                    thinking_level: None,
                    warning: Some(format!(
                        "Invalid thinking level \"{suffix}\" in pattern \"{pattern}\". Using default instead."
                    )),
                }
            } else {
                inner
            }
        }
    }
}

/// `--provider`/`--model` resolved (pi's `resolveCliModel`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CliModel {
    /// The model, if one was found (or made up: see [`resolve_cli_model`]).
    pub model: Option<Model>,
    /// The level of a `:level` suffix.
    pub thinking_level: Option<ThinkingLevel>,
    /// pi's warning, if any.
    pub warning: Option<String>,
    /// pi's error, if no model could be chosen.
    pub error: Option<String>,
}

/// pi's `resolveCliModel`, over every model of the registry (credentials or not, so
/// `--api-key` can be used for a first call):
///
/// * `--provider` names a provider (any case; an unknown one is an error);
/// * without it, `--model provider/pattern` whose prefix is a provider means that provider
///   (`zai/glm-5` is zai's `glm-5`, not vercel-ai-gateway's model of that id), and otherwise
///   an exact id or `provider/id` is tried first;
/// * the pattern is matched as [`parse_model_pattern`] does, strictly (an invalid `:suffix`
///   is part of the id);
/// * a pattern whose provider was inferred and failed is tried as a whole id of any
///   provider (OpenRouter's `openai/gpt-4o:extended`);
/// * a pattern that matches nothing in a known provider becomes a custom id of it: the
///   provider's default model with that id (and a warning).
///
/// ```
/// use pi_engine::cli::config::resolve_cli_model;
/// use pi_engine::models::ModelRegistry;
/// use pi_engine::ThinkingLevel;
///
/// let registry = ModelRegistry::new();
/// let r = resolve_cli_model(None, "openai/gpt-5.4:low", &registry);
/// let model = r.model.unwrap();
/// assert_eq!((model.provider.as_str(), model.id.as_str()), ("openai", "gpt-5.4"));
/// assert_eq!(r.thinking_level, Some(ThinkingLevel::Low));
///
/// let r = resolve_cli_model(Some("nobody"), "x", &registry);
/// assert_eq!(
///     r.error.as_deref(),
///     Some("Unknown provider \"nobody\". Use --list-models to see available providers/models.")
/// );
/// ```
pub fn resolve_cli_model(
    cli_provider: Option<&str>,
    cli_model: &str,
    registry: &ModelRegistry,
) -> CliModel {
    let empty = CliModel {
        model: None,
        thinking_level: None,
        warning: None,
        error: None,
    };
    // Names and ids first: a model is read out of the catalog only when it is a candidate.
    if registry.ids().len() == 0 {
        return CliModel {
            error: Some(
                "No models available. Check your installation or add models to models.json.".into(),
            ),
            ..empty
        };
    }
    // Canonical provider names by lowercase name (the last model's spelling wins, as pi's map).
    let canonical = |name: &str| -> Option<String> {
        let name = lower(name);
        registry
            .ids()
            .rev()
            .find(|(provider, _)| lower(provider) == name)
            .map(|(provider, _)| provider.to_owned())
    };
    let mut provider = cli_provider.and_then(canonical);
    if let Some(p) = cli_provider
        && provider.is_none()
    {
        return CliModel {
            error: Some(format!(
                "Unknown provider \"{p}\". Use --list-models to see available providers/models."
            )),
            ..empty
        };
    }
    let exact_anywhere = || {
        let wanted = lower(cli_model);
        registry
            .ids()
            .find(|(provider, id)| {
                lower(id) == wanted || lower(&format!("{provider}/{id}")) == wanted
            })
            .and_then(|(provider, id)| registry.find(provider, id))
            .cloned()
    };
    let mut pattern = cli_model.to_owned();
    let mut inferred = false;
    if provider.is_none()
        && let Some((maybe, rest)) = cli_model.split_once('/')
        && let Some(p) = canonical(maybe)
    {
        provider = Some(p);
        pattern = rest.to_owned();
        inferred = true;
    }
    if provider.is_none()
        && let Some(model) = exact_anywhere()
    {
        return CliModel {
            model: Some(model),
            ..empty
        };
    }
    if cli_provider.is_some()
        && let Some(p) = &provider
    {
        let prefix = format!("{p}/");
        if lower(cli_model).starts_with(&lower(&prefix))
            && let Some(rest) = cli_model.get(prefix.len()..)
        {
            pattern = rest.to_owned();
        }
    }
    let candidates: Vec<&Model> = match &provider {
        Some(p) => registry.models_of(p).collect(),
        None => registry.all().collect(),
    };
    let parsed = parse_model_pattern(&pattern, &candidates, true);
    if parsed.model.is_some() {
        return CliModel {
            model: parsed.model,
            thinking_level: parsed.thinking_level,
            warning: parsed.warning,
            error: None,
        };
    }
    if inferred {
        if let Some(model) = exact_anywhere() {
            return CliModel {
                model: Some(model),
                ..empty
            };
        }
        let all: Vec<&Model> = registry.all().collect();
        let whole = parse_model_pattern(cli_model, &all, true);
        if whole.model.is_some() {
            return CliModel {
                model: whole.model,
                thinking_level: whole.thinking_level,
                warning: whole.warning,
                error: None,
            };
        }
    }
    if let Some(p) = &provider
        && let Some(model) = custom_model(p, &pattern, registry)
    {
        let note =
            format!("Model \"{pattern}\" not found for provider \"{p}\". Using custom model id.");
        let warning = match parsed.warning {
            Some(w) => format!("{w} {note}"),
            None => note,
        };
        return CliModel {
            model: Some(model),
            warning: Some(warning),
            ..empty
        };
    }
    let display = match &provider {
        Some(p) => format!("{p}/{pattern}"),
        None => cli_model.to_owned(),
    };
    CliModel {
        warning: parsed.warning,
        error: Some(format!(
            "Model \"{display}\" not found. Use --list-models to see available models."
        )),
        ..empty
    }
}

/// pi's `buildFallbackModel`: the provider's default model (or first model) with `id` as
/// its id and name.
fn custom_model(provider: &str, id: &str, registry: &ModelRegistry) -> Option<Model> {
    let of_provider: Vec<&Model> = registry.models_of(provider).collect();
    let base = default_model_id(provider)
        .and_then(|d| of_provider.iter().find(|m| m.id == d))
        .or(of_provider.first())?;
    let mut model = (*base).clone();
    model.id = id.to_owned();
    model.name = id.to_owned();
    Some(model)
}

/// `glob` in minimatch's syntax, case-insensitive: `*` and `?` stop at `/`, `**` crosses
/// it, `[…]`, `{a,b}`. `None` for a glob that does not compile (it matches nothing).
fn glob_matcher(glob: &str) -> Option<globset::GlobMatcher> {
    globset::GlobBuilder::new(glob)
        .case_insensitive(true)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// pi's `resolveModelScope` (`--models`, `enabledModels`): each pattern against the models
/// with credentials, in order, without duplicates. A pattern with `*`, `?` or `[` is a glob
/// matched against `provider/id` and against the bare id (with an optional `:level`
/// suffix); any other is matched as [`parse_model_pattern`] does. Returns the models and
/// pi's warnings (`No models match pattern "…"`, invalid thinking levels), which pi prints
/// as they come, before anything else.
///
/// ```
/// use pi_engine::cli::config::resolve_model_scope;
/// use pi_engine::models::ModelRegistry;
///
/// let registry = ModelRegistry::from_models_json(r#"{"providers": {"local": {
///     "baseUrl": "http://127.0.0.1:8080/v1", "api": "openai-completions", "apiKey": "x",
///     "models": [{"id": "qwen3-coder"}, {"id": "qwen3-8b"}, {"id": "llama-3.1"}]}}}"#).unwrap();
/// let (scoped, warnings) = resolve_model_scope(
///     &["local/qwen3-*:high".to_string(), "nothing-like-this".to_string()],
///     &registry,
/// );
/// let ids: Vec<&str> = scoped.iter().map(|s| s.model.id.as_str()).collect();
/// assert_eq!(ids, ["qwen3-coder", "qwen3-8b"]);
/// assert_eq!(warnings[0].to_string(), "Warning: No models match pattern \"nothing-like-this\"");
/// ```
pub fn resolve_model_scope(
    patterns: &[String],
    registry: &ModelRegistry,
) -> (Vec<ScopedModel>, Vec<Diagnostic>) {
    let available = registry.available();
    let mut scoped: Vec<ScopedModel> = Vec::new();
    let mut warnings = Vec::new();
    let push = |scoped: &mut Vec<ScopedModel>, model: &Model, level: Option<ThinkingLevel>| {
        if !scoped
            .iter()
            .any(|s| s.model.id == model.id && s.model.provider == model.provider)
        {
            let mut s = ScopedModel::new(model.clone());
            s.thinking_level = level;
            scoped.push(s);
        }
    };
    for pattern in patterns {
        if pattern.contains(['*', '?', '[']) {
            let mut glob = pattern.as_str();
            let mut level = None;
            if let Some(colon) = pattern.rfind(':')
                && let Ok(l) = pattern[colon + 1..].parse::<ThinkingLevel>()
            {
                level = Some(l);
                glob = &pattern[..colon];
            }
            let matcher = glob_matcher(glob);
            let matching: Vec<&&Model> = available
                .iter()
                .filter(|m| {
                    matcher.as_ref().is_some_and(|g| {
                        g.is_match(format!("{}/{}", m.provider, m.id)) || g.is_match(&m.id)
                    })
                })
                .collect();
            if matching.is_empty() {
                warnings.push(Diagnostic::warning(format!(
                    "No models match pattern \"{pattern}\""
                )));
                continue;
            }
            for m in matching {
                push(&mut scoped, m, level);
            }
            continue;
        }
        let parsed = parse_model_pattern(pattern, &available, false);
        if let Some(w) = parsed.warning {
            warnings.push(Diagnostic::warning(w));
        }
        match &parsed.model {
            Some(m) => push(&mut scoped, m, parsed.thinking_level),
            None => warnings.push(Diagnostic::warning(format!(
                "No models match pattern \"{pattern}\""
            ))),
        }
    }
    (scoped, warnings)
}

/// The model a session starts with when the command line, the scope and the session name
/// none (pi's `findInitialModel` as its SDK calls it): the settings' default model
/// (`defaultProvider` + `defaultModel`, credentials or not), else the first of
/// [`DEFAULT_MODEL_PER_PROVIDER`] whose provider has credentials, else the first model with
/// credentials; `None` when no model has any.
///
/// ```
/// use pi_engine::cli::config::{Settings, find_initial_model};
/// use pi_engine::models::ModelRegistry;
///
/// let settings = Settings::from_json_str(
///     r#"{"defaultProvider": "google", "defaultModel": "gemini-2.5-flash"}"#,
/// ).unwrap();
/// let model = find_initial_model(&settings, &ModelRegistry::new()).unwrap();
/// assert_eq!(model.id, "gemini-2.5-flash");
/// ```
pub fn find_initial_model(settings: &Settings, registry: &ModelRegistry) -> Option<Model> {
    if let (Some(provider), Some(id)) = (&settings.default_provider, &settings.default_model)
        && let Some(m) = registry.find(provider, id)
    {
        return Some(m.clone());
    }
    let available = registry.available();
    DEFAULT_MODEL_PER_PROVIDER
        .iter()
        .find_map(|(provider, id)| {
            available
                .iter()
                .find(|m| m.provider == *provider && m.id == *id)
        })
        .or(available.first())
        .map(|m| (*m).clone())
}

/// What the command line says about the model (`--provider`, `--model`, `--thinking`,
/// `--models`, `--api-key`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelArgs {
    /// `--provider`.
    pub provider: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--thinking`.
    pub thinking: Option<ThinkingLevel>,
    /// `--models`, split at commas (else the `enabledModels` setting applies).
    pub models: Option<Vec<String>>,
    /// `--api-key`.
    pub api_key: Option<String>,
}

impl ModelArgs {
    /// No model arguments.
    pub fn new() -> Self {
        ModelArgs::default()
    }

    /// Sets `--provider`.
    #[must_use]
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// Sets `--model`.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets `--thinking`.
    #[must_use]
    pub fn with_thinking(mut self, level: ThinkingLevel) -> Self {
        self.thinking = Some(level);
        self
    }

    /// Sets `--models`.
    #[must_use]
    pub fn with_models(mut self, patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.models = Some(patterns.into_iter().map(Into::into).collect());
        self
    }

    /// Sets `--api-key`.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }
}

/// The model choice for a new or reopened session, as pi's `main` makes it (see
/// [`Config::select_model`](super::Config::select_model)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelSelection {
    /// The model the command line or the scope chose: the session uses it whatever the
    /// session file says ([`AgentSessionBuilder::model`](crate::agent_session::AgentSessionBuilder::model)).
    pub model: Option<Model>,
    /// The thinking level the command line or the scope chose
    /// ([`AgentSessionBuilder::thinking_level`](crate::agent_session::AgentSessionBuilder::thinking_level));
    /// `None`: the session's, else the settings' default.
    pub thinking_level: Option<ThinkingLevel>,
    /// The models to cycle through (`--models`, `enabledModels`).
    pub scoped_models: Vec<ScopedModel>,
    /// The model when neither [`model`](Self::model) nor the session file gives one
    /// ([`find_initial_model`];
    /// [`AgentSessionBuilder::default_model`](crate::agent_session::AgentSessionBuilder::default_model)).
    pub default_model: Option<Model>,
    /// Warnings and errors, in pi's order; print them all, then exit with code 1 if one is
    /// an error.
    pub diagnostics: Vec<Diagnostic>,
}

impl ModelSelection {
    /// True when a diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}
