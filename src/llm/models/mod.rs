//! Models: pi's built-in catalog, custom models from a `models.json`, and cost accounting.
//!
//! * The **catalog** is every model pi-ai 0.73.1 knows (969 models of 31 providers), with
//!   the same ids, endpoints, prices, limits, headers, `compat` settings and thinking-level
//!   maps: [`get_model`], [`get_models`], [`get_providers`]. It is compiled into the crate as
//!   static tables, so the first lookup is as cheap as any other.
//! * A [`ModelRegistry`] adds what a user configures in pi's `models.json` (local servers,
//!   overrides of built-in models) and resolves each request's API key and headers, as
//!   pi-coding-agent's model registry does.
//! * [`calculate_cost`] fills a reply's [`Cost`] from the model's prices.
//!
//! ```
//! use pi_engine::llm::{get_model, get_models, get_providers};
//!
//! let model = get_model("anthropic", "claude-opus-4-7").unwrap();
//! assert_eq!(model.api, "anthropic-messages");
//! assert_eq!(model.base_url, "https://api.anthropic.com");
//! assert!(model.reasoning);
//! assert!(get_providers().iter().any(|p| p == "openrouter"));
//! assert_eq!(get_models("google-vertex").len(), 13);
//! ```
//!
//! ## Regenerating the catalog
//!
//! The catalog (`src/llm/models/catalog_data.rs`) is generated from pi-ai's npm package by
//! `node scripts/gen-models.mjs` (with the package installed in `.pi-npm/`, or in the
//! directory named by `PI_NPM`); `--check` tells whether the checked-in file is current.
//! A unit test compares a checksum of pi's catalog, recorded by the script, with the models
//! this crate builds, so a hand edit or a conversion bug fails `cargo test`.

mod catalog;
mod config_value;
mod models_json;
mod registry;
mod slot;

pub use config_value::{resolve_config_value, resolve_config_value_uncached};
pub use models_json::ModelsJsonError;
pub use registry::{CredentialSource, EnvCredentials, ModelRegistry, NoCredentials, RequestAuth};

use crate::llm::message::{Cost, Usage};
use crate::llm::model::Model;

/// The pi-ai version the built-in catalog comes from.
pub const CATALOG_PI_VERSION: &str = catalog::PI_AI_VERSION;

/// The built-in model `id` of `provider`, as pi's `getModel`.
///
/// ```
/// let model = pi_engine::get_model("openai", "gpt-5.4").unwrap();
/// assert_eq!(model.api, "openai-responses");
/// assert!(pi_engine::get_model("openai", "no-such-model").is_none());
/// ```
pub fn get_model(provider: &str, id: &str) -> Option<Model> {
    catalog::model(provider, id)
}

/// The built-in models of `provider`, in pi's order (empty for an unknown provider).
///
/// ```
/// let models = pi_engine::llm::get_models("anthropic");
/// assert!(models.iter().all(|m| m.provider == "anthropic"));
/// assert!(pi_engine::llm::get_models("nobody").is_empty());
/// ```
pub fn get_models(provider: &str) -> Vec<Model> {
    catalog::models(provider)
}

/// The providers of the built-in catalog, in pi's order.
///
/// ```
/// let providers = pi_engine::llm::get_providers();
/// assert_eq!(providers.len(), 31);
/// assert_eq!(providers[0], "amazon-bedrock");
/// ```
pub fn get_providers() -> Vec<String> {
    catalog::providers().map(str::to_owned).collect()
}

/// Every built-in model, providers and models in pi's order.
///
/// ```
/// assert_eq!(pi_engine::models::builtin_models().len(), 969);
/// ```
pub fn builtin_models() -> Vec<Model> {
    catalog::all_models()
}

/// Sets `usage.cost` from the model's prices and returns it, as pi's `calculateCost`: each
/// part is `price / 1e6 × tokens` and `total` their sum.
///
/// ```
/// use pi_engine::llm::{Model, ModelCost, Usage, calculate_cost};
///
/// let model = Model::new("m", "openai-completions", "local", "")
///     .with_cost(ModelCost::new(3.0, 15.0, 0.3, 3.75));
/// let mut usage = Usage::new(1_000, 2_000, 10_000, 0);
/// let cost = calculate_cost(&model, &mut usage);
/// assert_eq!(cost.input, 0.003);
/// assert_eq!(cost.output, 0.030000000000000002); // the same f64 as JavaScript's
/// assert_eq!(usage.cost, cost);
/// assert_eq!(cost.total, cost.input + cost.output + cost.cache_read + cost.cache_write);
/// ```
pub fn calculate_cost(model: &Model, usage: &mut Usage) -> Cost {
    // The same operations in the same order as pi, so the f64 results are bit-identical.
    let per_token = |price: f64, tokens: u64| price / 1_000_000.0 * tokens as f64;
    let cost = &mut usage.cost;
    cost.input = per_token(model.cost.input, usage.input);
    cost.output = per_token(model.cost.output, usage.output);
    cost.cache_read = per_token(model.cost.cache_read, usage.cache_read);
    cost.cache_write = per_token(model.cost.cache_write, usage.cache_write);
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write;
    *cost
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::InputModality;
    use crate::llm::thinking::ThinkingLevel;

    #[test]
    fn spot_checks_against_pi() {
        // Values read from pi-ai 0.73.1's models.generated.js.
        let m = get_model("amazon-bedrock", "amazon.nova-lite-v1:0").unwrap();
        assert_eq!(m.name, "Nova Lite");
        assert_eq!(
            m.base_url,
            "https://bedrock-runtime.us-east-1.amazonaws.com"
        );
        assert_eq!(
            (m.cost.input, m.cost.output, m.cost.cache_read),
            (0.06, 0.24, 0.015)
        );
        assert_eq!((m.context_window, m.max_tokens), (300_000, 8192));
        assert_eq!(m.input, vec![InputModality::Text, InputModality::Image]);

        let copilot = get_models("github-copilot");
        assert_eq!(copilot.len(), 26);
        assert!(
            copilot.iter().all(|m| {
                m.headers.as_ref().unwrap()["Copilot-Integration-Id"] == "vscode-chat"
            })
        );

        let deepseek = get_models("deepseek");
        assert!(
            deepseek
                .iter()
                .all(|m| m.compat_value("thinkingFormat") == Some(&serde_json::json!("deepseek")))
        );

        let map = get_model("anthropic", "claude-opus-4-6")
            .unwrap()
            .thinking_level_map
            .unwrap();
        assert_eq!(map[&ThinkingLevel::Xhigh].as_deref(), Some("max"));
    }

    #[test]
    fn counts_match_pi() {
        let all = builtin_models();
        assert_eq!(all.len(), 969);
        let count = |api: &str| all.iter().filter(|m| m.api == api).count();
        assert_eq!(count("openai-completions"), 405);
        assert_eq!(count("anthropic-messages"), 263);
        assert_eq!(count("bedrock-converse-stream"), 93);
        assert_eq!(count("openai-responses"), 86);
        assert_eq!(count("azure-openai-responses"), 42);
        assert_eq!(count("google-generative-ai"), 29);
        assert_eq!(count("mistral-conversations"), 28);
        assert_eq!(count("google-vertex"), 13);
        assert_eq!(count("openai-codex-responses"), 10);
        assert_eq!(get_models("openrouter").len(), 275);
        assert_eq!(
            all.iter()
                .filter(|m| m.thinking_level_map.is_some())
                .count(),
            157
        );
        assert_eq!(all.iter().filter(|m| m.compat.is_some()).count(), 71);
        let providers = get_providers();
        let total: usize = providers.iter().map(|p| get_models(p).len()).sum();
        assert_eq!(total, 969);
        for m in &all {
            assert_eq!(get_model(&m.provider, &m.id).as_ref(), Some(m));
        }
    }

    #[test]
    fn cost_is_computed_as_pi_computes_it() {
        let model = get_model("anthropic", "claude-opus-4-7").unwrap();
        let mut usage = Usage::new(1234, 567, 8910, 1112);
        let cost = calculate_cost(&model, &mut usage);
        // pi: (model.cost.x / 1000000) * usage.x
        assert_eq!(cost.input, model.cost.input / 1e6 * 1234.0);
        assert_eq!(cost.cache_write, model.cost.cache_write / 1e6 * 1112.0);
        assert_eq!(
            cost.total,
            cost.input + cost.output + cost.cache_read + cost.cache_write
        );
        assert_eq!(usage.cost, cost);
    }
}
