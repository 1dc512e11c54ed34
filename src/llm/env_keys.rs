//! API keys from the environment, with pi's table of variable names per provider.
//!
//! An explicit key in [`StreamOptions`](crate::StreamOptions) always wins; otherwise a provider
//! reads the first set variable of [`env_var_names`]. A missing key is not an error here:
//! [`resolve_api_key`] returns one, which the provider reports as the stream's `error` event.
//!
//! A variable's key is only sent to the provider it is named for: a model of any other
//! provider without a key of its own gets `No API key for provider: <name>`, unless it is
//! [keyless](crate::Model::keyless) (a local server), which sends no credentials.

use std::path::{Path, PathBuf};

use crate::llm::error::{Error, ErrorKind};
use crate::llm::model::Model;
use crate::llm::options::{ApiKey, StreamOptions};

/// The environment variables holding a key for `provider`, in the order they are tried.
///
/// ```
/// assert_eq!(pi_engine::llm::env_var_names("anthropic"), &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"]);
/// assert_eq!(pi_engine::llm::env_var_names("google"), &["GEMINI_API_KEY"]);
/// assert!(pi_engine::llm::env_var_names("my-local-server").is_empty());
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

/// The key [`env_api_key`] gives `google-vertex` and `amazon-bedrock` when the environment
/// holds credentials that are not a key (Google Application Default Credentials, an AWS
/// profile or role): the provider authenticates with those and ignores this text, as pi's do.
pub const AMBIENT_CREDENTIALS: &str = "<authenticated>";

/// The key for `provider` from the environment: the first of [`env_var_names`] that is set
/// and not empty. Without one, `google-vertex` and `amazon-bedrock` get
/// [`AMBIENT_CREDENTIALS`] when their SDK credentials are configured, as in pi:
///
/// * `google-vertex`: an ADC file (`GOOGLE_APPLICATION_CREDENTIALS`, or
///   `~/.config/gcloud/application_default_credentials.json`), plus `GOOGLE_CLOUD_PROJECT`
///   (or `GCLOUD_PROJECT`) and `GOOGLE_CLOUD_LOCATION`;
/// * `amazon-bedrock`: `AWS_PROFILE`, `AWS_ACCESS_KEY_ID` with `AWS_SECRET_ACCESS_KEY`,
///   `AWS_BEARER_TOKEN_BEDROCK`, `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`,
///   `AWS_CONTAINER_CREDENTIALS_FULL_URI` or `AWS_WEB_IDENTITY_TOKEN_FILE`.
pub fn env_api_key(provider: &str) -> Option<ApiKey> {
    api_key_from(provider, &|name| std::env::var(name).ok(), &|path| {
        path.exists()
    })
}

/// [`env_api_key`] over any environment: `var` reads a variable, `exists` tests a file.
fn api_key_from(
    provider: &str,
    var: &dyn Fn(&str) -> Option<String>,
    exists: &dyn Fn(&Path) -> bool,
) -> Option<ApiKey> {
    // Set and non-empty, as JavaScript's `!!process.env[name]`.
    let set = |name: &str| var(name).filter(|v| !v.is_empty());
    if let Some(key) = env_var_names(provider).iter().find_map(|name| set(name)) {
        return Some(ApiKey::new(key));
    }
    let ambient = match provider {
        "google-vertex" => {
            let credentials = match set("GOOGLE_APPLICATION_CREDENTIALS") {
                Some(path) => Some(PathBuf::from(path)),
                None => set("HOME").or_else(|| set("USERPROFILE")).map(|home| {
                    Path::new(&home)
                        .join(".config")
                        .join("gcloud")
                        .join("application_default_credentials.json")
                }),
            };
            credentials.is_some_and(|path| exists(&path))
                && (set("GOOGLE_CLOUD_PROJECT").is_some() || set("GCLOUD_PROJECT").is_some())
                && set("GOOGLE_CLOUD_LOCATION").is_some()
        }
        "amazon-bedrock" => {
            set("AWS_PROFILE").is_some()
                || (set("AWS_ACCESS_KEY_ID").is_some() && set("AWS_SECRET_ACCESS_KEY").is_some())
                || [
                    "AWS_BEARER_TOKEN_BEDROCK",
                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    "AWS_WEB_IDENTITY_TOKEN_FILE",
                ]
                .iter()
                .any(|name| set(name).is_some())
        }
        _ => false,
    };
    ambient.then(|| ApiKey::new(AMBIENT_CREDENTIALS))
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

/// The key a call to `model` sends: `options.api_key`, else the environment variable named
/// for the model's provider ([`resolve_api_key`]); `None` for a [keyless](Model::keyless)
/// model without one (no credentials are sent). Any other model without a key is pi's error,
/// `No API key for provider: <provider>`: a key from the environment is only ever sent to the
/// provider it is named for.
#[cfg_attr(
    not(any(
        feature = "anthropic",
        feature = "openai",
        feature = "google",
        feature = "mistral"
    )),
    allow(dead_code)
)]
pub(crate) fn request_key(model: &Model, options: &StreamOptions) -> Result<Option<ApiKey>, Error> {
    match resolve_api_key(model, options) {
        Ok(key) => Ok(Some(key)),
        Err(_) if model.keyless => Ok(None),
        Err(error) => Err(error),
    }
}

/// The `stream_simple` of a built-in provider whose raw `stream` has a wider key fallback
/// (the OpenAI SDK's `OPENAI_API_KEY`): a call without a key of its own (options, the
/// provider's variable, or a keyless model) is refused with pi's `No API key for provider`
/// error event, as pi's `streamSimple` refuses it; otherwise `stream` with
/// [`to_provider_options`](crate::llm::to_provider_options).
#[cfg(feature = "openai")]
pub(crate) fn stream_simple_with_own_key(
    provider: &dyn crate::ApiProvider,
    model: &Model,
    context: &crate::Context,
    options: &StreamOptions,
) -> crate::llm::AssistantMessageEventStream {
    match request_key(model, options) {
        Ok(_) => provider.stream(
            model,
            context,
            &crate::llm::to_provider_options(model, options),
        ),
        Err(error) => crate::llm::AssistantMessageEventStream::failed(
            crate::AssistantMessage::new(&model.api, &model.provider, &model.id),
            error,
        ),
    }
}

/// True when `base_url` is served by `host` (an empty URL is the provider's default, which is
/// `host`): where the raw `stream` may send a vendor SDK's fallback key.
#[cfg(feature = "openai")]
pub(crate) fn is_vendor_endpoint(base_url: &str, host_matches: impl Fn(&str) -> bool) -> bool {
    let base_url = base_url.trim();
    if base_url.is_empty() {
        return true;
    }
    reqwest::Url::parse(base_url)
        .ok()
        .and_then(|url| {
            url.host_str()
                .map(|h| host_matches(&h.to_ascii_lowercase()))
        })
        .unwrap_or(false)
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

    fn fake_env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn only_keyless_models_go_without_a_key() {
        let model = Model::new("m", "openai-completions", "pi-test-keyless-xyz", "");
        let err = request_key(&model, &StreamOptions::new()).unwrap_err();
        assert_eq!(
            err.message(),
            "No API key for provider: pi-test-keyless-xyz"
        );
        let keyless = model.with_keyless(true);
        assert!(
            request_key(&keyless, &StreamOptions::new())
                .unwrap()
                .is_none()
        );
        let given = request_key(&keyless, &StreamOptions::new().with_api_key("k")).unwrap();
        assert_eq!(given.unwrap().expose(), "k");
    }

    #[test]
    fn first_set_non_empty_variable_wins() {
        let env = fake_env(&[("ANTHROPIC_OAUTH_TOKEN", ""), ("ANTHROPIC_API_KEY", "sk-2")]);
        let key = api_key_from("anthropic", &env, &|_| false).unwrap();
        assert_eq!(key.expose(), "sk-2");
        assert!(api_key_from("openai", &env, &|_| false).is_none());
    }

    #[test]
    fn vertex_adc_needs_a_credentials_file_a_project_and_a_location() {
        let adc = "/home/u/.config/gcloud/application_default_credentials.json";
        let exists = |p: &Path| p == Path::new(adc);
        let full = [
            ("HOME", "/home/u"),
            ("GCLOUD_PROJECT", "p"),
            ("GOOGLE_CLOUD_LOCATION", "us-central1"),
        ];
        let key = api_key_from("google-vertex", &fake_env(&full), &exists).unwrap();
        assert_eq!(key.expose(), AMBIENT_CREDENTIALS);
        assert!(api_key_from("google-vertex", &fake_env(&full[..2]), &exists).is_none());
        assert!(api_key_from("google-vertex", &fake_env(&full), &|_| false).is_none());
        let explicit = [
            ("GOOGLE_APPLICATION_CREDENTIALS", "/etc/sa.json"),
            ("GOOGLE_CLOUD_PROJECT", "p"),
            ("GOOGLE_CLOUD_LOCATION", "l"),
        ];
        let sa = |p: &Path| p == Path::new("/etc/sa.json");
        assert!(api_key_from("google-vertex", &fake_env(&explicit), &sa).is_some());
        // An API key wins over ADC.
        let with_key = [("GOOGLE_CLOUD_API_KEY", "AIza"), full[0], full[1], full[2]];
        let key = api_key_from("google-vertex", &fake_env(&with_key), &exists).unwrap();
        assert_eq!(key.expose(), "AIza");
    }

    #[test]
    fn bedrock_accepts_any_aws_credential_source() {
        let none = |_: &Path| false;
        for vars in [
            &[("AWS_PROFILE", "dev")][..],
            &[("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "s")][..],
            &[("AWS_WEB_IDENTITY_TOKEN_FILE", "/t")][..],
        ] {
            let key = api_key_from("amazon-bedrock", &fake_env(vars), &none).unwrap();
            assert_eq!(key.expose(), AMBIENT_CREDENTIALS);
        }
        let half = [("AWS_ACCESS_KEY_ID", "a")];
        assert!(api_key_from("amazon-bedrock", &fake_env(&half), &none).is_none());
    }
}
