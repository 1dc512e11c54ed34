//! The one table that turns a unified reasoning level into each api's own options: what
//! each pi provider's `streamSimple` does before it calls its raw `stream`.

use serde_json::{Map, Value, json};

use super::{ThinkingBudgets, ThinkingLevel, adjust_max_tokens_for_thinking, clamp_thinking_level};
use crate::llm::model::{Model, api};
use crate::llm::options::StreamOptions;

/// The options every pi `streamSimple` starts from (pi's `buildBaseOptions`): the general
/// options of `options`, with `maxTokens` defaulting to the model's limit capped at 32 000
/// (none when the model's is 0). The reasoning level, the budgets and provider-specific
/// options are left out, except `transport`, `timeoutMs` and `maxRetries`, which pi keeps.
///
/// ```
/// use pi_engine::llm::{StreamOptions, ThinkingLevel, build_base_options, get_model};
///
/// let model = get_model("anthropic", "claude-opus-4-7").unwrap(); // maxTokens 128000
/// let base = build_base_options(&model, &StreamOptions::new().with_reasoning(ThinkingLevel::High));
/// assert_eq!(base.max_tokens, Some(32_000));
/// assert_eq!(base.reasoning, None);
/// ```
pub fn build_base_options(model: &Model, options: &StreamOptions) -> StreamOptions {
    let mut extra = Map::new();
    for key in ["transport", "timeoutMs", "maxRetries"] {
        if let Some(value) = options.extra.get(key) {
            extra.insert(key.to_owned(), value.clone());
        }
    }
    StreamOptions {
        api_key: options.api_key.clone(),
        temperature: options.temperature,
        max_tokens: options
            .max_tokens
            .or((model.max_tokens > 0).then(|| model.max_tokens.min(32_000))),
        reasoning: None,
        thinking_budgets: None,
        session_id: options.session_id.clone(),
        cache_retention: options.cache_retention,
        // pi's streamSimple drops `toolChoice`; forcing a tool is kept (a listed deviation).
        tool_choice: options.tool_choice.clone(),
        headers: options.headers.clone(),
        metadata: options.metadata.clone(),
        max_retry_delay_ms: options.max_retry_delay_ms,
        cancel: options.cancel.clone(),
        retry: options.retry,
        idle_timeout: options.idle_timeout,
        error_body_timeout: options.error_body_timeout,
        on_payload: options.on_payload.clone(),
        #[cfg(feature = "http")]
        transport: options.transport.clone(),
        extra,
    }
}

/// The options a provider's raw `stream` receives for a `stream_simple` call: exactly what
/// pi's `streamSimple` of `model.api` passes on. [`ApiProvider::stream_simple`] calls it.
///
/// Starting from [`build_base_options`], `options.reasoning` (with `thinking_budgets` and
/// the model's `thinkingLevelMap`) becomes, by pi's option names:
///
/// | api | options set |
/// |---|---|
/// | `anthropic-messages` | `thinkingEnabled`; adaptive models (Opus 4.6/4.7, Sonnet 4.6): `effort`; others: `thinkingBudgetTokens` and a larger `maxTokens` |
/// | `bedrock-converse-stream` | `reasoning` and `thinkingBudgets` (Claude budget models: the adjusted budget and `maxTokens`) |
/// | `openai-completions` | `reasoningEffort` (the clamped level); `toolChoice` is kept |
/// | `openai-responses`, `azure-openai-responses`, `openai-codex-responses` | `reasoningEffort` (the clamped level) |
/// | `google-generative-ai`, `google-vertex` | `thinking: {enabled, level}` (Gemini 3, Gemma 4) or `thinking: {enabled, budgetTokens}` |
/// | `mistral-conversations` | `promptMode: "reasoning"` or `reasoningEffort` |
///
/// Other provider-specific options of `options.extra` are dropped, as pi drops them. For an
/// api pi does not know (a custom provider), `options` is returned unchanged so the provider
/// sees the level itself. A level of `off` is the same as none (pi's callers never pass it).
///
/// ```
/// use pi_engine::llm::{StreamOptions, ThinkingLevel, get_model, to_provider_options};
///
/// let sonnet = get_model("anthropic", "claude-sonnet-4-5").unwrap(); // budget-based
/// let options = StreamOptions::new().with_reasoning(ThinkingLevel::Medium);
/// let raw = to_provider_options(&sonnet, &options);
/// assert_eq!(raw.extra["thinkingEnabled"], true);
/// assert_eq!(raw.extra["thinkingBudgetTokens"], 8192);
/// assert_eq!(raw.max_tokens, Some(32_000 + 8192).map(|n| n.min(sonnet.max_tokens)));
///
/// let gpt = get_model("openai", "gpt-5.4").unwrap();
/// assert_eq!(to_provider_options(&gpt, &options).extra["reasoningEffort"], "medium");
/// ```
///
/// [`ApiProvider::stream_simple`]: crate::ApiProvider::stream_simple
pub fn to_provider_options(model: &Model, options: &StreamOptions) -> StreamOptions {
    let level = options.reasoning.filter(|l| *l != ThinkingLevel::Off);
    let mut out = build_base_options(model, options);
    match model.api.as_str() {
        api::ANTHROPIC_MESSAGES => anthropic(model, options, level, &mut out),
        api::BEDROCK_CONVERSE_STREAM => bedrock(model, options, level, &mut out),
        api::OPENAI_COMPLETIONS => {
            set_reasoning_effort(model, level, &mut out);
            if let Some(choice) = options.extra.get("toolChoice") {
                out.extra.insert("toolChoice".into(), choice.clone());
            }
        }
        api::OPENAI_RESPONSES | api::AZURE_OPENAI_RESPONSES | api::OPENAI_CODEX_RESPONSES => {
            set_reasoning_effort(model, level, &mut out);
        }
        api::GOOGLE_GENERATIVE_AI => google(model, options, level, Google::GenerativeAi, &mut out),
        api::GOOGLE_VERTEX => google(model, options, level, Google::Vertex, &mut out),
        api::MISTRAL_CONVERSATIONS => mistral(model, level, &mut out),
        _ => return options.clone(),
    }
    out
}

/// OpenAI-style apis: the clamped level's name, unless it clamps to `off`.
fn set_reasoning_effort(model: &Model, level: Option<ThinkingLevel>, out: &mut StreamOptions) {
    let effort = level
        .map(|l| clamp_thinking_level(model, l))
        .filter(|l| *l != ThinkingLevel::Off);
    if let Some(effort) = effort {
        out.extra
            .insert("reasoningEffort".into(), effort.as_str().into());
    }
}

/// The string the model's `thinkingLevelMap` gives `level`, if any.
fn mapped(model: &Model, level: ThinkingLevel) -> Option<&str> {
    model.thinking_level_map.as_ref()?.get(&level)?.as_deref()
}

fn anthropic(
    model: &Model,
    options: &StreamOptions,
    level: Option<ThinkingLevel>,
    out: &mut StreamOptions,
) {
    let Some(level) = level else {
        out.extra.insert("thinkingEnabled".into(), false.into());
        return;
    };
    out.extra.insert("thinkingEnabled".into(), true.into());
    if anthropic_adaptive(&model.id) {
        let effort = mapped(model, level).unwrap_or(match level {
            ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            _ => "high",
        });
        out.extra.insert("effort".into(), effort.into());
        return;
    }
    let adjusted = adjust_max_tokens_for_thinking(
        out.max_tokens.unwrap_or(0),
        model.max_tokens,
        level,
        options.thinking_budgets.as_ref(),
    );
    out.max_tokens = Some(adjusted.max_tokens);
    out.extra.insert(
        "thinkingBudgetTokens".into(),
        adjusted.thinking_budget.into(),
    );
}

/// Claude models that think adaptively, with an effort instead of a budget: the one list the
/// Anthropic provider, `stream_simple`'s mapping and Bedrock's check share (pi keeps three).
/// Each is matched as written and with its version dotted (`opus-4.6`).
pub(crate) const ADAPTIVE_THINKING_MODELS: &[&str] = &["opus-4-6", "opus-4-7", "sonnet-4-6"];

/// True when `id` names an adaptive-thinking model (Anthropic's check: the id as it is).
pub(crate) fn anthropic_adaptive(id: &str) -> bool {
    ADAPTIVE_THINKING_MODELS
        .iter()
        .any(|m| id.contains(m) || id.contains(&dotted(m)))
}

/// `opus-4-6` as `opus-4.6`: the last `-` of the version becomes a `.`.
fn dotted(model: &str) -> String {
    match model.rfind('-') {
        Some(i) => format!("{}.{}", &model[..i], &model[i + 1..]),
        None => model.to_owned(),
    }
}

fn bedrock(
    model: &Model,
    options: &StreamOptions,
    level: Option<ThinkingLevel>,
    out: &mut StreamOptions,
) {
    let Some(level) = level else {
        return;
    };
    out.reasoning = Some(level);
    out.thinking_budgets = options.thinking_budgets;
    if !bedrock_claude(model) || bedrock_adaptive(model) {
        return;
    }
    let adjusted = adjust_max_tokens_for_thinking(
        out.max_tokens.unwrap_or(0),
        model.max_tokens,
        level,
        options.thinking_budgets.as_ref(),
    );
    out.max_tokens = Some(adjusted.max_tokens);
    out.thinking_budgets = Some(
        options
            .thinking_budgets
            .unwrap_or_default()
            .with(level, adjusted.thinking_budget),
    );
}

fn bedrock_claude(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    let name = model.name.to_lowercase();
    id.contains("anthropic.claude")
        || id.contains("anthropic/claude")
        || name.contains("anthropic.claude")
        || name.contains("anthropic/claude")
        || name.contains("claude")
}

/// Bedrock's adaptive check reads the id and the name, lowercased, as they are and with
/// runs of whitespace, `_`, `.` and `:` turned into `-`.
fn bedrock_adaptive(model: &Model) -> bool {
    let mut candidates = vec![model.id.as_str()];
    if !model.name.is_empty() {
        candidates.push(model.name.as_str());
    }
    candidates.into_iter().any(|value| {
        let lower = value.to_lowercase();
        let dashed = dash_separators(&lower);
        [lower, dashed]
            .iter()
            .any(|s| ADAPTIVE_THINKING_MODELS.iter().any(|p| s.contains(p)))
    })
}

/// Replaces each run of whitespace, `_`, `.` and `:` with one `-`.
fn dash_separators(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_run = false;
    for ch in s.chars() {
        if ch.is_whitespace() || matches!(ch, '_' | '.' | ':') {
            if !in_run {
                out.push('-');
            }
            in_run = true;
        } else {
            out.push(ch);
            in_run = false;
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Google {
    GenerativeAi,
    Vertex,
}

fn google(
    model: &Model,
    options: &StreamOptions,
    level: Option<ThinkingLevel>,
    flavour: Google,
    out: &mut StreamOptions,
) {
    let Some(level) = level else {
        out.extra
            .insert("thinking".into(), json!({ "enabled": false }));
        return;
    };
    let effort = match clamp_thinking_level(model, level) {
        ThinkingLevel::Off => ThinkingLevel::High,
        clamped => clamped,
    };
    let id = model.id.to_lowercase();
    let pro = gemini3(&id, "-pro");
    let flash = gemini3(&id, "-flash");
    let gemma4 =
        flavour == Google::GenerativeAi && (id.contains("gemma4") || id.contains("gemma-4"));
    let mut thinking = Map::new();
    thinking.insert("enabled".into(), true.into());
    if pro || flash || gemma4 {
        // Absent for `xhigh`, which Google's levels do not have.
        let name = match (pro, gemma4, effort) {
            (true, _, ThinkingLevel::Minimal | ThinkingLevel::Low) => Some("LOW"),
            (true, _, ThinkingLevel::Medium | ThinkingLevel::High) => Some("HIGH"),
            (_, true, ThinkingLevel::Minimal | ThinkingLevel::Low) => Some("MINIMAL"),
            (_, true, ThinkingLevel::Medium | ThinkingLevel::High) => Some("HIGH"),
            (_, _, ThinkingLevel::Minimal) => Some("MINIMAL"),
            (_, _, ThinkingLevel::Low) => Some("LOW"),
            (_, _, ThinkingLevel::Medium) => Some("MEDIUM"),
            (_, _, ThinkingLevel::High) => Some("HIGH"),
            _ => None,
        };
        if let Some(name) = name {
            thinking.insert("level".into(), name.into());
        }
    } else if let Some(budget) = google_budget(model, effort, options.thinking_budgets, flavour) {
        thinking.insert("budgetTokens".into(), budget.into());
    }
    out.extra.insert("thinking".into(), Value::Object(thinking));
}

/// `gemini-3(\.\d+)?<suffix>` somewhere in `id` (already lowercased).
fn gemini3(id: &str, suffix: &str) -> bool {
    id.match_indices("gemini-3").any(|(at, m)| {
        let rest = &id[at + m.len()..];
        let after_version = rest
            .strip_prefix('.')
            .map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit()))
            .filter(|r| r.len() < rest.len() - 1);
        rest.starts_with(suffix) || after_version.is_some_and(|r| r.starts_with(suffix))
    })
}

/// Gemini 2.5 budgets per level; -1 (dynamic) for other models. `None` where pi's table has
/// no entry (`xhigh` on a 2.5 model).
fn google_budget(
    model: &Model,
    effort: ThinkingLevel,
    custom: Option<ThinkingBudgets>,
    flavour: Google,
) -> Option<i64> {
    // Only the exact level counts here: `xhigh` does not fall back to `high`.
    let set = custom.and_then(|b| match effort {
        ThinkingLevel::Minimal => b.minimal,
        ThinkingLevel::Low => b.low,
        ThinkingLevel::Medium => b.medium,
        ThinkingLevel::High => b.high,
        _ => None,
    });
    if let Some(tokens) = set {
        return Some(i64::try_from(tokens).unwrap_or(i64::MAX));
    }
    let table: [i64; 4] = if model.id.contains("2.5-pro") {
        [128, 2048, 8192, 32768]
    } else if flavour == Google::GenerativeAi && model.id.contains("2.5-flash-lite") {
        [512, 2048, 8192, 24576]
    } else if model.id.contains("2.5-flash") {
        [128, 2048, 8192, 24576]
    } else {
        return Some(-1);
    };
    match effort {
        ThinkingLevel::Minimal => Some(table[0]),
        ThinkingLevel::Low => Some(table[1]),
        ThinkingLevel::Medium => Some(table[2]),
        ThinkingLevel::High => Some(table[3]),
        _ => None,
    }
}

fn mistral(model: &Model, level: Option<ThinkingLevel>, out: &mut StreamOptions) {
    let level = level
        .map(|l| clamp_thinking_level(model, l))
        .filter(|l| *l != ThinkingLevel::Off);
    let Some(level) = level.filter(|_| model.reasoning) else {
        return;
    };
    let uses_effort = matches!(
        model.id.as_str(),
        "mistral-small-2603" | "mistral-small-latest" | "mistral-medium-3.5"
    );
    if uses_effort {
        let effort = mapped(model, level).unwrap_or("high");
        out.extra.insert("reasoningEffort".into(), effort.into());
    } else {
        out.extra.insert("promptMode".into(), "reasoning".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::models::get_model;
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Golden {
        levels: Vec<ThinkingLevel>,
        reasoning: Vec<Option<ThinkingLevel>>,
        variants: Vec<Value>,
        outputs: Vec<Value>,
        rows: Vec<Row>,
        models: std::collections::BTreeMap<String, usize>,
        synthetic: Vec<Synthetic>,
    }

    #[derive(Deserialize)]
    struct Row {
        supported: Vec<ThinkingLevel>,
        clamp: Vec<ThinkingLevel>,
        options: Vec<Vec<usize>>,
    }

    #[derive(Deserialize)]
    struct Synthetic {
        model: Model,
        row: usize,
    }

    /// The options as the JSON pi's raw stream would see (functions and unset fields out).
    fn as_json(o: &StreamOptions) -> Value {
        let mut map = o.extra.clone();
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(v) = value {
                map.insert(key.to_owned(), v);
            }
        };
        put("apiKey", o.api_key.as_ref().map(|k| k.expose().into()));
        put("temperature", o.temperature.map(Value::from));
        put("maxTokens", o.max_tokens.map(Value::from));
        put("reasoning", o.reasoning.map(|l| l.as_str().into()));
        put(
            "thinkingBudgets",
            o.thinking_budgets.map(|b| serde_json::to_value(b).unwrap()),
        );
        put("sessionId", o.session_id.clone().map(Value::from));
        put(
            "cacheRetention",
            o.cache_retention.map(|c| serde_json::to_value(c).unwrap()),
        );
        put(
            "headers",
            o.headers.as_ref().map(|h| serde_json::to_value(h).unwrap()),
        );
        put("metadata", o.metadata.clone());
        put("maxRetryDelayMs", o.max_retry_delay_ms.map(Value::from));
        put(
            "toolChoice",
            o.tool_choice.as_ref().map(|c| c.openai_completions()),
        );
        Value::Object(map)
    }

    fn golden() -> Golden {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/pi/thinking-golden.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn check(model: &Model, row: &Row, golden: &Golden, failures: &mut Vec<String>) {
        let name = format!("{}/{}", model.provider, model.id);
        if super::super::supported_thinking_levels(model) != row.supported {
            failures.push(format!("{name}: supported levels"));
        }
        for (level, expected) in golden.levels.iter().zip(&row.clamp) {
            let ours = clamp_thinking_level(model, *level);
            if ours != *expected {
                failures.push(format!("{name}: clamp({level}) = {ours}, pi {expected}"));
            }
        }
        for (variant, per_reasoning) in golden.variants.iter().zip(&row.options) {
            for (reasoning, expected) in golden.reasoning.iter().zip(per_reasoning) {
                let mut options: StreamOptions = serde_json::from_value(variant.clone()).unwrap();
                options.reasoning = *reasoning;
                let mut ours = as_json(&to_provider_options(model, &options));
                // The typed tool choice is kept for every api on purpose (deviations.json
                // options/stream-simple-keeps-tool-choice); pi keeps it for
                // openai-completions only.
                if model.api != api::OPENAI_COMPLETIONS
                    && let Some(map) = ours.as_object_mut()
                {
                    map.remove("toolChoice");
                }
                let pi = &golden.outputs[*expected];
                if ours != *pi {
                    failures.push(format!(
                        "{name} {variant} reasoning {reasoning:?}:\n  ours {ours}\n  pi   {pi}"
                    ));
                }
            }
        }
    }

    #[test]
    fn matches_pi_for_every_catalog_model_level_and_option_set() {
        let golden = golden();
        assert_eq!(golden.models.len(), 969);
        let mut failures = Vec::new();
        for (key, row) in &golden.models {
            let (provider, id) = key.split_once('/').unwrap();
            let model = get_model(provider, id).unwrap_or_else(|| panic!("{key} not in catalog"));
            check(&model, &golden.rows[*row], &golden, &mut failures);
        }
        for s in &golden.synthetic {
            check(&s.model, &golden.rows[s.row], &golden, &mut failures);
        }
        assert!(
            failures.is_empty(),
            "{} differences from pi, first ones:\n{}",
            failures.len(),
            failures
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    #[test]
    fn unknown_apis_pass_options_through() {
        let model = Model::new("m", "my-api", "local", "");
        let options = StreamOptions::new()
            .with_reasoning(ThinkingLevel::High)
            .with_extra("custom", json!(1));
        let out = to_provider_options(&model, &options);
        assert_eq!(out.reasoning, Some(ThinkingLevel::High));
        assert_eq!(out.extra["custom"], 1);
        assert_eq!(out.max_tokens, None);
    }

    #[test]
    fn off_is_no_reasoning() {
        let model = get_model("anthropic", "claude-sonnet-4-5").unwrap();
        let off = to_provider_options(
            &model,
            &StreamOptions::new().with_reasoning(ThinkingLevel::Off),
        );
        let none = to_provider_options(&model, &StreamOptions::new());
        assert_eq!(as_json(&off), as_json(&none));
        assert_eq!(off.extra["thinkingEnabled"], false);
    }

    #[test]
    fn key_is_left_to_the_provider() {
        let model = get_model("openai", "gpt-5.4").unwrap();
        let options = StreamOptions::new().with_reasoning(ThinkingLevel::Low);
        assert!(to_provider_options(&model, &options).api_key.is_none());
        let keyed = to_provider_options(&model, &options.with_api_key("k"));
        assert_eq!(keyed.api_key.unwrap().expose(), "k");
    }

    #[test]
    fn gemini3_pattern() {
        assert!(gemini3("gemini-3-pro-preview", "-pro"));
        assert!(gemini3("models/gemini-3.1-pro", "-pro"));
        assert!(gemini3("gemini-3.12-flash-lite", "-flash"));
        assert!(!gemini3("gemini-3.-pro", "-pro"));
        assert!(!gemini3("gemini-30-pro", "-pro"));
        assert!(!gemini3("gemini-2.5-pro", "-pro"));
    }

    #[test]
    fn dashes_runs_of_separators() {
        assert_eq!(dash_separators("claude opus 4.6"), "claude-opus-4-6");
        assert_eq!(dash_separators("a :_. b"), "a-b");
    }
}
