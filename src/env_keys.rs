//! API keys from the environment, with pi's table of variable names per provider.
//!
//! An explicit key in [`StreamOptions`](crate::StreamOptions) always wins; otherwise a provider
//! reads the first set variable of [`env_var_names`]. A missing key is not an error here:
//! [`resolve_api_key`] returns one, which the provider reports as the stream's `error` event.

use crate::error::{Error, ErrorKind};
use crate::model::Model;
use crate::options::{ApiKey, StreamOptions};

/// The environment variables holding a key for `provider`, in the order they are tried.
///
/// ```
/// assert_eq!(pi_engine::env_var_names("anthropic"), &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"]);
/// assert_eq!(pi_engine::env_var_names("google"), &["GEMINI_API_KEY"]);
/// assert!(pi_engine::env_var_names("my-local-server").is_empty());
/// ```
pub fn env_var_names(provider: &str) -> &'static [&'static str] {
    match provider {
        "github-copilot" => &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "azure-openai-responses" => &["AZURE_OPENAI_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        _ => &[],
    }
}

/// The key for `provider` from the environment: the first of [`env_var_names`] that is set
/// and not empty.
pub fn env_api_key(provider: &str) -> Option<ApiKey> {
    env_var_names(provider).iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .map(ApiKey::new)
    })
}

/// The key a call to `model` uses: `options.api_key`, else the provider's environment
/// variable. The error (kind [`ErrorKind::Auth`]) reads `No API key for provider: <provider>`,
/// as pi's does.
pub fn resolve_api_key(model: &Model, options: &StreamOptions) -> Result<ApiKey, Error> {
    if let Some(key) = options.api_key.as_ref().filter(|k| !k.expose().is_empty()) {
        return Ok(key.clone());
    }
    env_api_key(&model.provider).ok_or_else(|| {
        Error::new(
            ErrorKind::Auth,
            format!("No API key for provider: {}", model.provider),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_key_wins_and_missing_key_is_auth_error() {
        let model = Model::new("m", "openai-completions", "no-such-provider-xyz", "");
        let err = resolve_api_key(&model, &StreamOptions::new()).unwrap_err();
        assert!(err.is_auth());
        assert_eq!(
            err.message(),
            "No API key for provider: no-such-provider-xyz"
        );
        let key = resolve_api_key(&model, &StreamOptions::new().with_api_key("k")).unwrap();
        assert_eq!(key.expose(), "k");
    }
}
