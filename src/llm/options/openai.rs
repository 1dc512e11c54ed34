//! The OpenAI apis (`openai-completions` and the Responses family): their options, and
//! how a reasoning level becomes them.

use serde::{Deserialize, Serialize};

use super::api::non_empty;
use super::{ApiOptions, StreamOptions};
use crate::llm::model::{Model, api};
use crate::llm::thinking::{ThinkingLevel, clamp_thinking_level};

/// Declares a builder method per `Option<String>` field.
macro_rules! string_setters {
    ($($(#[$doc:meta])* $method:ident => $field:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            #[must_use]
            pub fn $method(mut self, value: impl Into<String>) -> Self {
                self.$field = Some(value.into());
                self
            }
        )*
    };
}

/// The options of `openai-completions` (OpenAI's Chat Completions and compatible servers),
/// by pi's names. The empty string is the same as unset, as in pi.
///
/// Forcing a tool is the typed [`StreamOptions::tool_choice`], not an option here.
///
/// ```
/// use pi_engine::StreamOptions;
/// use pi_engine::llm::OpenAiCompletionsOptions;
///
/// let options = StreamOptions::new()
///     .with_api_options(&OpenAiCompletionsOptions::new().with_reasoning_effort("low"));
/// assert_eq!(options.extra["reasoningEffort"], "low");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct OpenAiCompletionsOptions {
    /// `reasoningEffort`: a level name (`minimal` … `xhigh`), sent as the model's
    /// `compat.thinkingFormat` asks.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_effort: Option<String>,
}

impl ApiOptions for OpenAiCompletionsOptions {
    const API: &'static str = api::OPENAI_COMPLETIONS;
    const KEYS: &'static [&'static str] = &["reasoningEffort"];
}

impl OpenAiCompletionsOptions {
    /// Nothing set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    string_setters! {
        /// Sets [`reasoning_effort`](Self::reasoning_effort).
        with_reasoning_effort => reasoning_effort,
    }
}

/// The options of `openai-responses` (OpenAI's Responses API), by pi's names. The empty
/// string is the same as unset, as in pi.
///
/// ```
/// use pi_engine::StreamOptions;
/// use pi_engine::llm::OpenAiResponsesOptions;
///
/// let options = StreamOptions::new().with_api_options(
///     &OpenAiResponsesOptions::new().with_reasoning_effort("high").with_service_tier("flex"),
/// );
/// assert_eq!(options.extra["serviceTier"], "flex");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct OpenAiResponsesOptions {
    /// `reasoningEffort`: a level name, mapped through the model's `thinkingLevelMap`.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_effort: Option<String>,
    /// `reasoningSummary`: `auto` (default), `detailed` or `concise`.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_summary: Option<String>,
    /// `serviceTier`: `auto`, `default`, `flex` or `priority` (priced by tier).
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub service_tier: Option<String>,
}

impl ApiOptions for OpenAiResponsesOptions {
    const API: &'static str = api::OPENAI_RESPONSES;
    const KEYS: &'static [&'static str] = &["reasoningEffort", "reasoningSummary", "serviceTier"];
}

impl OpenAiResponsesOptions {
    /// Nothing set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    string_setters! {
        /// Sets [`reasoning_effort`](Self::reasoning_effort).
        with_reasoning_effort => reasoning_effort,
        /// Sets [`reasoning_summary`](Self::reasoning_summary).
        with_reasoning_summary => reasoning_summary,
        /// Sets [`service_tier`](Self::service_tier).
        with_service_tier => service_tier,
    }
}

/// The options of `azure-openai-responses`, by pi's names (`azureDeploymentName`, …). Each
/// Azure setting falls back to its environment variable (`AZURE_OPENAI_*`) when unset.
///
/// ```
/// use pi_engine::StreamOptions;
/// use pi_engine::llm::AzureOpenAiResponsesOptions;
///
/// let options = StreamOptions::new().with_api_options(
///     &AzureOpenAiResponsesOptions::new().with_resource_name("my-resource").with_deployment_name("gpt5"),
/// );
/// assert_eq!(options.extra["azureResourceName"], "my-resource");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AzureOpenAiResponsesOptions {
    /// `reasoningEffort`: a level name, mapped through the model's `thinkingLevelMap`.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_effort: Option<String>,
    /// `reasoningSummary`: `auto` (default), `detailed` or `concise`.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_summary: Option<String>,
    /// `azureDeploymentName`: the deployment to call (default: the model id, or
    /// `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`).
    #[serde(
        default,
        rename = "azureDeploymentName",
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub deployment_name: Option<String>,
    /// `azureApiVersion` (default `AZURE_OPENAI_API_VERSION`, else `v1`).
    #[serde(
        default,
        rename = "azureApiVersion",
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_version: Option<String>,
    /// `azureResourceName`: builds `https://<name>.openai.azure.com/openai/v1`.
    #[serde(
        default,
        rename = "azureResourceName",
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_name: Option<String>,
    /// `azureBaseUrl`: the endpoint itself (wins over the resource name).
    #[serde(
        default,
        rename = "azureBaseUrl",
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub base_url: Option<String>,
}

impl ApiOptions for AzureOpenAiResponsesOptions {
    const API: &'static str = api::AZURE_OPENAI_RESPONSES;
    const KEYS: &'static [&'static str] = &[
        "reasoningEffort",
        "reasoningSummary",
        "azureDeploymentName",
        "azureApiVersion",
        "azureResourceName",
        "azureBaseUrl",
    ];
}

impl AzureOpenAiResponsesOptions {
    /// Nothing set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    string_setters! {
        /// Sets [`reasoning_effort`](Self::reasoning_effort).
        with_reasoning_effort => reasoning_effort,
        /// Sets [`reasoning_summary`](Self::reasoning_summary).
        with_reasoning_summary => reasoning_summary,
        /// Sets [`deployment_name`](Self::deployment_name).
        with_deployment_name => deployment_name,
        /// Sets [`api_version`](Self::api_version).
        with_api_version => api_version,
        /// Sets [`resource_name`](Self::resource_name).
        with_resource_name => resource_name,
        /// Sets [`base_url`](Self::base_url).
        with_base_url => base_url,
    }
}

/// The options of `openai-codex-responses` (ChatGPT subscription models), by pi's names.
///
/// ```
/// use pi_engine::StreamOptions;
/// use pi_engine::llm::OpenAiCodexResponsesOptions;
///
/// let options = StreamOptions::new()
///     .with_api_options(&OpenAiCodexResponsesOptions::new().with_text_verbosity("low"));
/// assert_eq!(options.extra["textVerbosity"], "low");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct OpenAiCodexResponsesOptions {
    /// `reasoningEffort`: a level name, mapped through the model's `thinkingLevelMap`.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_effort: Option<String>,
    /// `reasoningSummary`: `auto` (default), `detailed`, `concise` or `off`.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_summary: Option<String>,
    /// `textVerbosity`: `low`, `medium` (default) or `high`.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub text_verbosity: Option<String>,
    /// `serviceTier`: `auto`, `default`, `flex` or `priority`.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub service_tier: Option<String>,
}

impl ApiOptions for OpenAiCodexResponsesOptions {
    const API: &'static str = api::OPENAI_CODEX_RESPONSES;
    const KEYS: &'static [&'static str] = &[
        "reasoningEffort",
        "reasoningSummary",
        "textVerbosity",
        "serviceTier",
    ];
}

impl OpenAiCodexResponsesOptions {
    /// Nothing set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    string_setters! {
        /// Sets [`reasoning_effort`](Self::reasoning_effort).
        with_reasoning_effort => reasoning_effort,
        /// Sets [`reasoning_summary`](Self::reasoning_summary).
        with_reasoning_summary => reasoning_summary,
        /// Sets [`text_verbosity`](Self::text_verbosity).
        with_text_verbosity => text_verbosity,
        /// Sets [`service_tier`](Self::service_tier).
        with_service_tier => service_tier,
    }
}

/// The clamped level's name for the OpenAI apis, unless it clamps to `off`.
fn effort(model: &Model, level: Option<ThinkingLevel>) -> Option<&'static str> {
    level
        .map(|l| clamp_thinking_level(model, l))
        .filter(|l| *l != ThinkingLevel::Off)
        .map(ThinkingLevel::as_str)
}

/// pi's `streamSimple` for `openai-completions`: the effort, and `toolChoice` when it was
/// given as a raw option (pi keeps it for this api only).
pub(super) fn map_completions(
    model: &Model,
    options: &StreamOptions,
    level: Option<ThinkingLevel>,
    out: &mut StreamOptions,
) {
    if let Some(effort) = effort(model, level) {
        out.set_api_options(&OpenAiCompletionsOptions::new().with_reasoning_effort(effort));
    }
    if let Some(choice) = options.extra.get("toolChoice") {
        out.extra.insert("toolChoice".into(), choice.clone());
    }
}

/// pi's `streamSimple` for the Responses family: the effort (the same key for each of them).
pub(super) fn map_responses(model: &Model, level: Option<ThinkingLevel>, out: &mut StreamOptions) {
    let Some(effort) = effort(model, level) else {
        return;
    };
    match model.api.as_str() {
        api::AZURE_OPENAI_RESPONSES => {
            out.set_api_options(&AzureOpenAiResponsesOptions::new().with_reasoning_effort(effort))
        }
        api::OPENAI_CODEX_RESPONSES => {
            out.set_api_options(&OpenAiCodexResponsesOptions::new().with_reasoning_effort(effort))
        }
        _ => out.set_api_options(&OpenAiResponsesOptions::new().with_reasoning_effort(effort)),
    }
}
