//! Typed options of one api: read from and written to pi's option names in
//! [`StreamOptions::extra`], so a typo is a compile error instead of a key nobody reads.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::StreamOptions;
use crate::llm::error::{Error, ErrorKind};

/// The options one api (or one custom provider) reads, as a typed struct whose serde names
/// are pi's option names (`thinkingEnabled`, `reasoningEffort`, …).
///
/// The options travel in [`StreamOptions::extra`] under those names, as pi's JSON has them:
/// [`StreamOptions::with_api_options`] writes a value there, a provider reads it back with
/// [`StreamOptions::api_options`], and a `StreamOptions` deserialized from pi's JSON carries
/// them unchanged. Keys an api does not read are reported with `tracing` (a `warn` event of
/// target `pi_engine::options`) and otherwise ignored, as pi ignores them;
/// [`StreamOptions::with_extra`] stays the escape hatch for a key no type here knows.
///
/// The crate's own: [`AnthropicOptions`](crate::llm::AnthropicOptions),
/// [`OpenAiCompletionsOptions`](crate::llm::OpenAiCompletionsOptions),
/// [`OpenAiResponsesOptions`](crate::llm::OpenAiResponsesOptions),
/// [`AzureOpenAiResponsesOptions`](crate::llm::AzureOpenAiResponsesOptions),
/// [`OpenAiCodexResponsesOptions`](crate::llm::OpenAiCodexResponsesOptions),
/// [`GoogleOptions`](crate::llm::GoogleOptions),
/// [`GoogleVertexOptions`](crate::llm::GoogleVertexOptions),
/// [`MistralOptions`](crate::llm::MistralOptions). A custom provider gives its own options the same way:
///
/// ```
/// use pi_engine::StreamOptions;
/// use pi_engine::llm::ApiOptions;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
/// #[serde(rename_all = "camelCase")]
/// struct MyOptions {
///     #[serde(default, skip_serializing_if = "Option::is_none")]
///     safety_mode: Option<String>,
/// }
///
/// impl ApiOptions for MyOptions {
///     const API: &'static str = "my-api";
///     const KEYS: &'static [&'static str] = &["safetyMode"];
/// }
///
/// let options = StreamOptions::new().with_api_options(&MyOptions { safety_mode: Some("strict".into()) });
/// assert_eq!(options.extra["safetyMode"], "strict"); // pi's JSON, unchanged
/// // In the provider:
/// let mine: MyOptions = options.api_options().unwrap();
/// assert_eq!(mine.safety_mode.as_deref(), Some("strict"));
/// ```
pub trait ApiOptions: Serialize + DeserializeOwned + Default {
    /// The api these options belong to (`anthropic-messages`), named in errors and warnings.
    const API: &'static str;
    /// pi's names of every option the type reads: exactly the keys its serialization can
    /// write. Other keys of `extra` are reported as unknown.
    const KEYS: &'static [&'static str];
}

/// Options of pi's base stream options that travel in `extra` (no typed field of
/// [`StreamOptions`] holds them) and every api accepts: `transport` and `timeoutMs` (pi's
/// transport settings, kept by `stream_simple`), `maxRetries` (pi's
/// `retry.provider.maxRetries`, read when no [`RetryPolicy`](super::RetryPolicy) is set) and
/// `toolChoice` written as a raw option.
pub const COMMON_EXTRA_KEYS: &[&str] = &["transport", "timeoutMs", "maxRetries", "toolChoice"];

impl StreamOptions {
    /// Writes `options` into [`extra`](Self::extra) under pi's names: every key of
    /// [`T::KEYS`](ApiOptions::KEYS) is replaced by the value `options` serializes (a field it
    /// leaves out is removed).
    ///
    /// ```
    /// use pi_engine::StreamOptions;
    /// use pi_engine::llm::AnthropicOptions;
    ///
    /// let options = StreamOptions::new()
    ///     .with_api_options(&AnthropicOptions::new().with_thinking_enabled(true).with_effort("high"));
    /// assert_eq!(options.extra["thinkingEnabled"], true);
    /// assert_eq!(options.extra["effort"], "high");
    /// ```
    #[must_use]
    pub fn with_api_options<T: ApiOptions>(mut self, options: &T) -> Self {
        self.set_api_options(options);
        self
    }

    /// [`with_api_options`](Self::with_api_options) in place.
    ///
    /// # Panics
    ///
    /// When `T`'s `Serialize` does not produce a JSON object (a bug in `T`: options are a
    /// struct of named fields).
    pub fn set_api_options<T: ApiOptions>(&mut self, options: &T) {
        for key in T::KEYS {
            self.extra.shift_remove(*key);
        }
        match serde_json::to_value(options) {
            Ok(Value::Object(map)) => {
                for (key, value) in map {
                    if !value.is_null() {
                        self.extra.insert(key, value);
                    }
                }
            }
            Ok(other) => panic!("{} options serialize as {other}, not an object", T::API),
            Err(e) => panic!("{} options do not serialize: {e}", T::API),
        }
    }

    /// Reads `T`'s options from [`extra`](Self::extra) (`null` is the same as absent).
    ///
    /// A key of `extra` that neither `T` nor every api reads ([`COMMON_EXTRA_KEYS`]) is
    /// logged as a `tracing` warning (target `pi_engine::options`) naming the key and
    /// [`T::API`](ApiOptions::API): pi ignores such keys, so this is how a misspelt option
    /// shows.
    ///
    /// # Errors
    ///
    /// A [`Config`](ErrorKind::Config) error naming the api and the option when a value has
    /// the wrong type (`{"thinkingEnabled": "yes"}`).
    pub fn api_options<T: ApiOptions>(&self) -> Result<T, Error> {
        let mut picked = Map::new();
        for (key, value) in &self.extra {
            if T::KEYS.contains(&key.as_str()) {
                if !value.is_null() {
                    picked.insert(key.clone(), value.clone());
                }
            } else if !COMMON_EXTRA_KEYS.contains(&key.as_str()) {
                tracing::warn!(
                    target: "pi_engine::options",
                    api = T::API,
                    key = key.as_str(),
                    "option not read by this api, ignored"
                );
            }
        }
        if picked.is_empty() {
            return Ok(T::default());
        }
        serde_json::from_value(Value::Object(picked.clone())).map_err(|e| {
            // serde's message does not say which field: find the first one that fails alone.
            let key = picked.into_iter().find_map(|(key, value)| {
                let alone = Map::from_iter([(key.clone(), value)]);
                serde_json::from_value::<T>(Value::Object(alone))
                    .err()
                    .map(|_| key)
            });
            let key = key.map(|k| format!(" {k}")).unwrap_or_default();
            Error::new(
                ErrorKind::Config,
                format!("Invalid {} option{key}: {e}", T::API),
            )
        })
    }
}

/// A string option as pi tests it (`if (options.x)`): the empty string is the same as unset.
pub(super) fn non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.filter(|s| !s.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::options::{
        AnthropicOptions, AzureOpenAiResponsesOptions, GoogleOptions, GoogleThinking,
        GoogleVertexOptions, MistralOptions, OpenAiCodexResponsesOptions, OpenAiCompletionsOptions,
        OpenAiResponsesOptions,
    };

    /// `KEYS` lists exactly what a fully set value writes: the list used to spot unknown keys
    /// cannot drift from the fields.
    fn keys_match<T: ApiOptions + std::fmt::Debug + PartialEq>(full: T) {
        let written = StreamOptions::new().with_api_options(&full);
        let mut keys: Vec<&str> = written.extra.keys().map(String::as_str).collect();
        let mut expected = T::KEYS.to_vec();
        keys.sort_unstable();
        expected.sort_unstable();
        assert_eq!(keys, expected, "{}", T::API);
        assert_eq!(written.api_options::<T>().unwrap(), full, "{}", T::API);
    }

    #[test]
    fn every_type_lists_its_keys_and_round_trips() {
        keys_match(
            AnthropicOptions::new()
                .with_thinking_enabled(true)
                .with_thinking_budget_tokens(1024)
                .with_effort("high")
                .with_thinking_display("summarized")
                .with_interleaved_thinking(false),
        );
        keys_match(OpenAiCompletionsOptions::new().with_reasoning_effort("low"));
        keys_match(
            OpenAiResponsesOptions::new()
                .with_reasoning_effort("low")
                .with_reasoning_summary("auto")
                .with_service_tier("flex"),
        );
        keys_match(
            AzureOpenAiResponsesOptions::new()
                .with_reasoning_effort("low")
                .with_reasoning_summary("auto")
                .with_deployment_name("d")
                .with_api_version("v1")
                .with_resource_name("r")
                .with_base_url("https://r.openai.azure.com/openai/v1"),
        );
        keys_match(
            OpenAiCodexResponsesOptions::new()
                .with_reasoning_effort("low")
                .with_reasoning_summary("auto")
                .with_text_verbosity("low")
                .with_service_tier("priority"),
        );
        let thinking = GoogleThinking::enabled().with_budget_tokens(-1);
        keys_match(GoogleOptions::new().with_thinking(thinking.clone()));
        keys_match(
            GoogleVertexOptions::new()
                .with_thinking(thinking)
                .with_project("p")
                .with_location("global")
                .with_access_token("ya29.t"),
        );
        keys_match(
            MistralOptions::new()
                .with_prompt_mode("reasoning")
                .with_reasoning_effort("high"),
        );
    }

    #[test]
    fn writing_replaces_the_types_keys_only() {
        let options = StreamOptions::new()
            .with_extra("effort", "low".into())
            .with_extra("custom", 1.into())
            .with_api_options(&AnthropicOptions::new().with_thinking_enabled(false));
        assert!(
            !options.extra.contains_key("effort"),
            "an unset field is removed"
        );
        assert_eq!(options.extra["custom"], 1);
        assert_eq!(options.extra["thinkingEnabled"], false);
    }

    #[test]
    fn wrong_types_are_config_errors_naming_the_option() {
        let options = StreamOptions::new().with_extra("thinkingEnabled", "yes".into());
        let err = options.api_options::<AnthropicOptions>().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
        let text = err.to_string();
        assert!(
            text.contains("anthropic-messages option thinkingEnabled"),
            "{text}"
        );
    }

    #[test]
    fn null_and_empty_strings_are_unset() {
        let options = StreamOptions::new()
            .with_extra("reasoningEffort", "".into())
            .with_extra("serviceTier", Value::Null);
        let read: OpenAiResponsesOptions = options.api_options().unwrap();
        assert_eq!(read, OpenAiResponsesOptions::default());
    }
}
