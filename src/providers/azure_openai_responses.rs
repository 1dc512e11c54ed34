//! Azure OpenAI Responses (`azure-openai-responses`): the OpenAI Responses wire format of
//! [`openai_responses`](super::openai_responses) at an Azure resource, as pi-ai 0.73.1 calls
//! it: `POST {baseUrl}/responses?api-version={version}` with an `api-key` header, the
//! deployment name as the body's `model`.
//!
//! Where the request goes, first found wins:
//!
//! | setting | options (`extra`) | environment | default |
//! |---|---|---|---|
//! | base URL | `azureBaseUrl` | `AZURE_OPENAI_BASE_URL` | `https://{resource}.openai.azure.com/openai/v1` from `azureResourceName` / `AZURE_OPENAI_RESOURCE_NAME`, else the model's `baseUrl` |
//! | API version | `azureApiVersion` | `AZURE_OPENAI_API_VERSION` | `v1` |
//! | deployment | `azureDeploymentName` | `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` (`model-id=deployment,…`) | the model id |
//!
//! A base URL on an Azure host (`*.openai.azure.com`, `*.cognitiveservices.azure.com`) whose
//! path is empty or `/openai` becomes `…/openai/v1`. The key comes from the options, the
//! provider's environment variable, or `AZURE_OPENAI_API_KEY`.
//!
//! The body differs from OpenAI's as pi's does: no `store`, no `service_tier` and no
//! `prompt_cache_retention`; `prompt_cache_key` is the `sessionId` whatever the cache
//! retention; no session headers. `reasoningEffort` and `reasoningSummary` work as for
//! OpenAI, and costs are not scaled by service tier.
//!
//! ```no_run
//! use pi_engine::{Context, Model, StreamOptions, UserMessage};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let model = Model::new("gpt-5", "azure-openai-responses", "azure-openai-responses", "")
//!     .with_reasoning(true);
//! let options = StreamOptions::new()
//!     .with_api_key("<azure key>")
//!     .with_extra("azureResourceName", "my-resource".into())
//!     .with_extra("azureDeploymentName", "gpt-5-prod".into());
//! let context = Context::new().with_message(UserMessage::text("Hello"));
//! let reply = pi_engine::complete(&model, &context, &options).await;
//! println!("{}", reply.text());
//! # }
//! ```

use serde_json::{Map, Value};

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::Context;
use crate::llm::model::{Model, api};
use crate::llm::options::{ApiKey, AzureOpenAiResponsesOptions, StreamOptions};
use crate::providers::ApiProvider;
use crate::providers::body::{TOOLS, WithTools};
use crate::providers::http::{HttpRequest, stream_http};
use crate::providers::openai_responses_shared::{
    ReasoningOptions, ResponsesDecoder, TierPricing, convert_messages, convert_tools,
    insert_reasoning,
};

const DEFAULT_API_VERSION: &str = "v1";
/// The providers whose tool-call ids are `call_id|item_id` pairs this api takes as they are.
const TOOL_CALL_PROVIDERS: &[&str] = &[
    "openai",
    "openai-codex",
    "opencode",
    "azure-openai-responses",
];

/// The Azure OpenAI Responses provider. Registered for `azure-openai-responses` by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct AzureOpenAIResponsesProvider;

impl AzureOpenAIResponsesProvider {
    /// The provider.
    pub fn new() -> Self {
        AzureOpenAIResponsesProvider
    }
}

impl ApiProvider for AzureOpenAIResponsesProvider {
    fn api(&self) -> &str {
        api::AZURE_OPENAI_RESPONSES
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let env = |name: &str| std::env::var(name).ok();
        let decoder = ResponsesDecoder::new(model, TierPricing::None);
        stream_http(
            model,
            options,
            build_request(model, context, options, &env),
            decoder,
        )
    }

    /// Refuses a call without a key of its own with pi's `No API key for provider: <name>`
    /// (the raw [`stream`](Self::stream) may fall back to the SDK's variable for the
    /// vendor's own endpoint), then streams with the reasoning level mapped.
    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        crate::llm::env_keys::stream_simple_with_own_key(self, model, context, options)
    }
}

/// Where a call goes: the normalized base URL and the API version.
#[derive(Debug, PartialEq, Eq)]
struct AzureConfig {
    base_url: String,
    api_version: String,
}

/// `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`: `model-id=deployment` pairs separated by commas (a
/// later pair for the same model wins, as in pi's `Map`).
fn deployment_from_map(map: &str, model_id: &str) -> Option<String> {
    let mut found = None;
    for entry in map.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let mut parts = entry.split('=');
        let (Some(model), Some(deployment)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !model.is_empty() && !deployment.is_empty() && model.trim() == model_id {
            found = Some(deployment.trim().to_owned());
        }
    }
    found
}

fn deployment_name(
    model: &Model,
    opts: &AzureOpenAiResponsesOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    if let Some(name) = &opts.deployment_name {
        return name.clone();
    }
    env("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")
        .and_then(|map| deployment_from_map(&map, &model.id))
        .unwrap_or_else(|| model.id.clone())
}

fn resolve_config(
    model: &Model,
    opts: &AzureOpenAiResponsesOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<AzureConfig, Error> {
    let set = |value: Option<String>| value.filter(|v| !v.is_empty());
    let api_version = opts
        .api_version
        .clone()
        .or_else(|| set(env("AZURE_OPENAI_API_VERSION")))
        .unwrap_or_else(|| DEFAULT_API_VERSION.to_owned());
    let trimmed =
        |value: Option<String>| value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    let resource = opts
        .resource_name
        .clone()
        .or_else(|| set(env("AZURE_OPENAI_RESOURCE_NAME")));
    let base_url = trimmed(opts.base_url.clone())
        .or_else(|| trimmed(env("AZURE_OPENAI_BASE_URL")))
        .or_else(|| resource.map(|r| format!("https://{r}.openai.azure.com/openai/v1")))
        .or_else(|| set(Some(model.base_url.clone())))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME, or pass azureBaseUrl, azureResourceName, or model.baseUrl.",
            )
        })?;
    Ok(AzureConfig {
        base_url: normalize_base_url(&base_url)?,
        api_version,
    })
}

/// pi's `normalizeAzureBaseUrl`: an Azure host without the `/openai/v1` path gets it.
fn normalize_base_url(base_url: &str) -> Result<String, Error> {
    let trimmed = base_url.trim().trim_end_matches('/');
    let mut url = reqwest::Url::parse(trimmed).map_err(|_| {
        Error::new(
            ErrorKind::Config,
            format!("Invalid Azure OpenAI base URL: {base_url}"),
        )
    })?;
    let host = url.host_str().unwrap_or("");
    let azure_host =
        host.ends_with(".openai.azure.com") || host.ends_with(".cognitiveservices.azure.com");
    let path = url.path().trim_end_matches('/').to_owned();
    if azure_host && (path.is_empty() || path == "/openai") {
        url.set_path("/openai/v1");
        url.set_query(None);
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// The key: the options', the provider's environment variable, none for a keyless model,
/// else `AZURE_OPENAI_API_KEY` but only for an Azure endpoint `base_url` (pi's `stream`
/// sends it to any server: a listed deviation). [`stream_simple`](crate::stream_simple)
/// never falls back.
fn api_key(
    model: &Model,
    options: &StreamOptions,
    base_url: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ApiKey>, Error> {
    crate::llm::env_keys::request_key(model, options).or_else(|error| {
        let azure = crate::llm::env_keys::is_vendor_endpoint(base_url, |host| {
            host.ends_with(".openai.azure.com") || host.ends_with(".cognitiveservices.azure.com")
        }) && !base_url.trim().is_empty();
        env("AZURE_OPENAI_API_KEY")
            .filter(|k| !k.is_empty() && azure)
            .map(|k| Some(ApiKey::new(k)))
            .ok_or(error)
    })
}

fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<HttpRequest, Error> {
    let opts: AzureOpenAiResponsesOptions = options.api_options()?;
    let config = resolve_config(model, &opts, env)?;
    let key = api_key(model, options, &config.base_url, env)?;
    let reasoning = ReasoningOptions::of(
        opts.reasoning_effort.as_ref(),
        opts.reasoning_summary.as_ref(),
    );

    let mut body = Map::new();
    body.insert("model".into(), deployment_name(model, &opts, env).into());
    body.insert(
        "input".into(),
        Value::Array(convert_messages(model, context, TOOL_CALL_PROVIDERS, true)?),
    );
    body.insert("stream".into(), true.into());
    if let Some(id) = &options.session_id {
        body.insert("prompt_cache_key".into(), id.clone().into());
    }
    if let Some(max) = options.max_tokens.filter(|&n| n > 0) {
        body.insert("max_output_tokens".into(), max.into());
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), t.into());
    }
    let mut tools = None;
    if let Some(list) = context.tools.as_ref().filter(|t| !t.is_empty()) {
        tools = Some(convert_tools(list, Some(false)));
        body.insert(TOOLS.into(), Value::Null);
    }
    // pi's Responses providers drop `toolChoice`; forcing a tool is sent (a listed deviation).
    if let Some(choice) = options.effective_tool_choice() {
        body.insert("tool_choice".into(), choice.openai_responses());
    }
    insert_reasoning(&mut body, model, &reasoning, true);

    // The SDK appends the path and replaces any query with the API version.
    let mut url = reqwest::Url::parse(&format!("{}/responses", config.base_url)).map_err(|_| {
        Error::new(
            ErrorKind::Config,
            format!("Invalid Azure OpenAI base URL: {}", config.base_url),
        )
    })?;
    url.set_query(None);
    url.query_pairs_mut()
        .append_pair("api-version", &config.api_version);
    let request = HttpRequest::post_serialized(url.as_str(), &WithTools { body, tools })?
        .header("accept", "application/json");
    Ok(match key {
        Some(key) => request.header("api-key", key.expose()),
        // A keyless model: no credentials.
        None => request,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::UserMessage;
    use serde_json::json;

    fn model(base_url: &str) -> Model {
        Model::new(
            "gpt-5",
            api::AZURE_OPENAI_RESPONSES,
            "azure-openai-responses",
            base_url,
        )
        .with_reasoning(true)
    }

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn config(
        model: &Model,
        options: &StreamOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> (String, String) {
        let c = resolve_config(model, &options.api_options().unwrap(), env).unwrap();
        (c.base_url, c.api_version)
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_owned(), b.to_owned())
    }

    #[test]
    fn base_url_resolution_order() {
        let none = env_of(&[]);
        let opts = StreamOptions::new();
        // The model's base URL, normalized for an Azure host.
        assert_eq!(
            config(&model("https://res.openai.azure.com/"), &opts, &none),
            pair("https://res.openai.azure.com/openai/v1", "v1")
        );
        assert_eq!(
            config(
                &model("https://res.cognitiveservices.azure.com/openai?x=1"),
                &opts,
                &none
            )
            .0,
            "https://res.cognitiveservices.azure.com/openai/v1"
        );
        // Other paths and hosts are kept.
        assert_eq!(
            config(
                &model("https://res.openai.azure.com/custom/path/"),
                &opts,
                &none
            )
            .0,
            "https://res.openai.azure.com/custom/path"
        );
        assert_eq!(
            config(&model("http://127.0.0.1:9/v1"), &opts, &none).0,
            "http://127.0.0.1:9/v1"
        );
        // The resource name beats the model's URL, the base URL beats both, and options
        // beat the environment.
        let env = env_of(&[
            ("AZURE_OPENAI_RESOURCE_NAME", "envres"),
            ("AZURE_OPENAI_API_VERSION", "2025-04-01-preview"),
        ]);
        assert_eq!(
            config(&model("https://x.example"), &opts, &env),
            pair(
                "https://envres.openai.azure.com/openai/v1",
                "2025-04-01-preview"
            )
        );
        let env = env_of(&[
            ("AZURE_OPENAI_RESOURCE_NAME", "envres"),
            ("AZURE_OPENAI_BASE_URL", " https://proxy.example/azure/ "),
        ]);
        assert_eq!(
            config(&model(""), &opts, &env).0,
            "https://proxy.example/azure"
        );
        let opts = StreamOptions::new()
            .with_extra("azureResourceName", json!("optres"))
            .with_extra("azureApiVersion", json!("preview"));
        assert_eq!(
            config(
                &model(""),
                &opts,
                &env_of(&[("AZURE_OPENAI_RESOURCE_NAME", "envres")])
            ),
            pair("https://optres.openai.azure.com/openai/v1", "preview")
        );
        let err = resolve_config(&model(""), &Default::default(), &none).unwrap_err();
        assert!(
            err.message()
                .starts_with("Azure OpenAI base URL is required.")
        );
        let err = resolve_config(&model("not a url"), &Default::default(), &none).unwrap_err();
        assert_eq!(err.message(), "Invalid Azure OpenAI base URL: not a url");
    }

    #[test]
    fn deployment_names() {
        let m = model("https://res.openai.azure.com");
        let map = env_of(&[(
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
            " gpt-4o=dep-4o , bad, =x, gpt-5 = dep-5 ,gpt-5=dep-5b=ignored",
        )]);
        assert_eq!(deployment_name(&m, &Default::default(), &map), "dep-5b");
        assert_eq!(
            deployment_name(&m, &Default::default(), &env_of(&[])),
            "gpt-5"
        );
        let opts = StreamOptions::new().with_extra("azureDeploymentName", json!("mine"));
        assert_eq!(
            deployment_name(&m, &opts.api_options().unwrap(), &map),
            "mine"
        );
    }

    #[test]
    fn request_url_auth_and_body() {
        let env = env_of(&[("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "gpt-5=prod-5")]);
        let ctx = Context::new()
            .with_system_prompt("sys")
            .with_message(UserMessage::text("hi"));
        let opts = StreamOptions::new()
            .with_api_key("azure-key")
            .with_session_id("s1")
            .with_cache_retention(crate::llm::options::CacheRetention::None)
            .with_extra("serviceTier", json!("flex"));
        let request =
            build_request(&model("https://res.openai.azure.com"), &ctx, &opts, &env).unwrap();
        let (url, headers) = request.parts();
        assert_eq!(
            url,
            "https://res.openai.azure.com/openai/v1/responses?api-version=v1"
        );
        assert!(headers.contains(&pair("api-key", "azure-key")));
        assert!(
            !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        );
        assert_eq!(
            request.body(),
            json!({
                "model": "prod-5",
                "input": [
                    {"role": "developer", "content": "sys"},
                    {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
                ],
                "stream": true,
                "prompt_cache_key": "s1",
                "reasoning": {"effort": "none"}
            })
        );
        // Without a key in the options: AZURE_OPENAI_API_KEY, whatever the provider's name.
        let custom = Model::new(
            "gpt-5",
            api::AZURE_OPENAI_RESPONSES,
            "pi-test-azure",
            "https://r.openai.azure.com",
        );
        let request = build_request(
            &custom,
            &ctx,
            &StreamOptions::new(),
            &env_of(&[("AZURE_OPENAI_API_KEY", "from-env")]),
        )
        .unwrap();
        assert!(request.parts().1.contains(&pair("api-key", "from-env")));
        let err = build_request(&custom, &ctx, &StreamOptions::new(), &env_of(&[])).unwrap_err();
        assert!(err.is_auth());
    }
}
