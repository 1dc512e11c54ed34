//! `anthropic-messages`: its options, and how a reasoning level becomes them.

use serde::{Deserialize, Serialize};

use super::{ApiOptions, StreamOptions};
use crate::llm::model::{Model, api};
use crate::llm::thinking::ThinkingLevel;

/// The options of the `anthropic-messages` api (pi's `AnthropicOptions`), by pi's names.
///
/// [`stream_simple`](crate::stream_simple) fills them from the reasoning level; a raw
/// [`stream`](crate::stream) call sets them itself:
///
/// ```
/// use pi_engine::StreamOptions;
/// use pi_engine::llm::AnthropicOptions;
///
/// let options = StreamOptions::new().with_api_options(
///     &AnthropicOptions::new().with_thinking_enabled(true).with_thinking_budget_tokens(4096),
/// );
/// assert_eq!(options.extra["thinkingBudgetTokens"], 4096);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AnthropicOptions {
    /// `thinkingEnabled`: extended thinking on (`true`) or explicitly off (`false`); unset
    /// sends nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_enabled: Option<bool>,
    /// `thinkingBudgetTokens`: the budget of a budget-based model (default 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget_tokens: Option<u64>,
    /// `effort`: `low`, `medium`, `high` or `max`, for adaptive-thinking models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// `thinkingDisplay`: `summarized` (default) or `omitted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_display: Option<String>,
    /// `interleavedThinking`: the interleaved-thinking beta header (default on, where the
    /// model is not adaptive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved_thinking: Option<bool>,
}

impl ApiOptions for AnthropicOptions {
    const API: &'static str = api::ANTHROPIC_MESSAGES;
    const KEYS: &'static [&'static str] = &[
        "thinkingEnabled",
        "thinkingBudgetTokens",
        "effort",
        "thinkingDisplay",
        "interleavedThinking",
    ];
}

impl AnthropicOptions {
    /// Nothing set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`thinking_enabled`](Self::thinking_enabled).
    #[must_use]
    pub fn with_thinking_enabled(mut self, enabled: bool) -> Self {
        self.thinking_enabled = Some(enabled);
        self
    }

    /// Sets [`thinking_budget_tokens`](Self::thinking_budget_tokens).
    #[must_use]
    pub fn with_thinking_budget_tokens(mut self, tokens: u64) -> Self {
        self.thinking_budget_tokens = Some(tokens);
        self
    }

    /// Sets [`effort`](Self::effort).
    #[must_use]
    pub fn with_effort(mut self, effort: impl Into<String>) -> Self {
        self.effort = Some(effort.into());
        self
    }

    /// Sets [`thinking_display`](Self::thinking_display).
    #[must_use]
    pub fn with_thinking_display(mut self, display: impl Into<String>) -> Self {
        self.thinking_display = Some(display.into());
        self
    }

    /// Sets [`interleaved_thinking`](Self::interleaved_thinking).
    #[must_use]
    pub fn with_interleaved_thinking(mut self, on: bool) -> Self {
        self.interleaved_thinking = Some(on);
        self
    }
}

/// pi's `streamSimple` for Anthropic: thinking on or off; adaptive models get an effort,
/// others a budget and a `maxTokens` raised to hold it.
pub(super) fn map(
    model: &Model,
    options: &StreamOptions,
    level: Option<ThinkingLevel>,
    out: &mut StreamOptions,
) {
    let Some(level) = level else {
        out.set_api_options(&AnthropicOptions::new().with_thinking_enabled(false));
        return;
    };
    let mapped = AnthropicOptions::new().with_thinking_enabled(true);
    if anthropic_adaptive(&model.id) {
        let effort = super::level_map(model, level).unwrap_or(match level {
            ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            _ => "high",
        });
        out.set_api_options(&mapped.with_effort(effort));
        return;
    }
    let budget = super::raise_max_tokens_for_thinking(model, options, level, out);
    out.set_api_options(&mapped.with_thinking_budget_tokens(budget));
}

/// Claude models that think adaptively, with an effort instead of a budget: the one list the
/// Anthropic provider, `stream_simple`'s mapping and Bedrock's check share (pi keeps three).
/// Each is matched as written and with its version dotted (`opus-4.6`).
pub(crate) const ADAPTIVE_THINKING_MODELS: &[&str] = &["opus-4-6", "opus-4-7", "sonnet-4-6"];

/// True when `id` names an adaptive-thinking model (Anthropic's check: the id as it is).
pub(crate) fn anthropic_adaptive(id: &str) -> bool {
    ADAPTIVE_THINKING_MODELS
        .iter()
        .any(|m| contains_model(id, m))
}

/// Whether `id` contains `model` as written or with its version dotted (`opus-4.6` for
/// `opus-4-6`: the last `-` may be a `.`). One byte comparison per window, no searcher set
/// up: this runs on every Anthropic request.
fn contains_model(id: &str, model: &str) -> bool {
    let dash = model.rfind('-');
    let (id, model) = (id.as_bytes(), model.as_bytes());
    id.windows(model.len()).any(|window| {
        window
            .iter()
            .zip(model)
            .enumerate()
            .all(|(i, (&a, &b))| a == b || (Some(i) == dash && a == b'.'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_models_match_as_written_and_dotted() {
        for id in [
            "claude-opus-4-6",
            "claude-opus-4-6-20260101",
            "anthropic/claude-opus-4.6",
            "us.anthropic.claude-sonnet-4-6-v1:0",
            "claude-sonnet-4.6",
            "opus-4.7-preview",
        ] {
            assert!(anthropic_adaptive(id), "{id}");
        }
        for id in [
            "claude-opus-4-5",
            "claude-opus-4.5",
            "claude-sonnet-4-5",
            "opus-4",
            "opus-4.",
            "opus-4-",
            "claude-opus-4-16",
            "",
        ] {
            let adaptive = anthropic_adaptive(id);
            // `opus-4-16` contains neither `opus-4-6` nor `opus-4.6`.
            assert!(!adaptive, "{id}");
        }
        // A head that occurs more than once: the dotted form is found at the later one.
        assert!(contains_model("opus-opus.6", "opus-6"));
        assert!(contains_model("opus-6x", "opus-6"));
        assert!(!contains_model("opus-6x", "opus-7"));
        // Only the version's dash may be a dot.
        assert!(!contains_model("opus.4-6", "opus-4-6"));
        assert!(!contains_model("", "opus-4-6"));
    }
}
