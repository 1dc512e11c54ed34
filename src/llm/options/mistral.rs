//! `mistral-conversations`: its options, and how a reasoning level becomes them.

use serde::{Deserialize, Serialize};

use super::api::non_empty;
use super::{ApiOptions, StreamOptions};
use crate::llm::model::{Model, api};
use crate::llm::thinking::{ThinkingLevel, clamp_thinking_level};

/// The options of `mistral-conversations` (pi's Mistral options), by pi's names.
///
/// ```
/// use pi_engine::StreamOptions;
/// use pi_engine::llm::MistralOptions;
///
/// let options = StreamOptions::new().with_api_options(&MistralOptions::new().with_prompt_mode("reasoning"));
/// assert_eq!(options.extra["promptMode"], "reasoning");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MistralOptions {
    /// `promptMode`: `reasoning` asks a Magistral model to think.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_mode: Option<String>,
    /// `reasoningEffort`: for the models that take an effort (Mistral Small 2603, Medium 3.5).
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_effort: Option<String>,
}

impl ApiOptions for MistralOptions {
    const API: &'static str = api::MISTRAL_CONVERSATIONS;
    const KEYS: &'static [&'static str] = &["promptMode", "reasoningEffort"];
}

impl MistralOptions {
    /// Nothing set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`prompt_mode`](Self::prompt_mode).
    #[must_use]
    pub fn with_prompt_mode(mut self, mode: impl Into<String>) -> Self {
        self.prompt_mode = Some(mode.into());
        self
    }

    /// Sets [`reasoning_effort`](Self::reasoning_effort).
    #[must_use]
    pub fn with_reasoning_effort(mut self, effort: impl Into<String>) -> Self {
        self.reasoning_effort = Some(effort.into());
        self
    }
}

/// pi's `streamSimple` for Mistral: an effort for the models that take one, else
/// `promptMode: "reasoning"`; nothing for a model that does not reason.
pub(super) fn map(model: &Model, level: Option<ThinkingLevel>, out: &mut StreamOptions) {
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
    let mapped = if uses_effort {
        MistralOptions::new()
            .with_reasoning_effort(super::level_map(model, level).unwrap_or("high"))
    } else {
        MistralOptions::new().with_prompt_mode("reasoning")
    };
    out.set_api_options(&mapped);
}
