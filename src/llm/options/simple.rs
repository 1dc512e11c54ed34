//! The one table that turns a unified reasoning level into each api's own options: what
//! each pi provider's `streamSimple` does before it calls its raw `stream`. Each api's part
//! lives beside its options type (`anthropic.rs`, `openai.rs`, `google.rs`, …), outside the
//! feature-gated providers, so the mapping works and is tested with every provider off.

use serde_json::Map;

use super::StreamOptions;
use super::google::Flavour;
use crate::llm::model::{Model, api};
use crate::llm::thinking::ThinkingLevel;

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
        on_response: options.on_response.clone(),
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
        api::ANTHROPIC_MESSAGES => super::anthropic::map(model, options, level, &mut out),
        api::BEDROCK_CONVERSE_STREAM => super::bedrock::map(model, options, level, &mut out),
        api::OPENAI_COMPLETIONS => super::openai::map_completions(model, options, level, &mut out),
        api::OPENAI_RESPONSES | api::AZURE_OPENAI_RESPONSES | api::OPENAI_CODEX_RESPONSES => {
            super::openai::map_responses(model, level, &mut out);
        }
        api::GOOGLE_GENERATIVE_AI => {
            super::google::map(model, options, level, Flavour::GenerativeAi, &mut out);
        }
        api::GOOGLE_VERTEX => super::google::map(model, options, level, Flavour::Vertex, &mut out),
        api::MISTRAL_CONVERSATIONS => super::mistral::map(model, level, &mut out),
        _ => return options.clone(),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::models::get_model;
    use crate::llm::thinking::{clamp_thinking_level, supported_thinking_levels};
    use serde::Deserialize;
    use serde_json::{Value, json};

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
        if supported_thinking_levels(model) != row.supported {
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
}
