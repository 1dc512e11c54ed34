//! `google-generative-ai` and `google-vertex`: their options, and how a reasoning level
//! becomes them.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::api::non_empty;
use super::{ApiOptions, StreamOptions};
use crate::llm::model::{Model, api};
use crate::llm::thinking::{ThinkingBudgets, ThinkingLevel, clamp_thinking_level};

/// pi's `thinking` option of the Google apis: `{enabled, budgetTokens?, level?}`.
///
/// ```
/// use pi_engine::llm::GoogleThinking;
///
/// let high = GoogleThinking::enabled().with_level("HIGH");
/// assert_eq!(serde_json::to_value(&high).unwrap(), serde_json::json!({"enabled": true, "level": "HIGH"}));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GoogleThinking {
    /// Thinking on; `false` turns it off (a zero budget, or the lowest level of a model that
    /// cannot turn it off).
    #[serde(default)]
    pub enabled: bool,
    /// `budgetTokens`: the thinking budget (`-1` lets the model decide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<i64>,
    /// `level`: `MINIMAL`, `LOW`, `MEDIUM` or `HIGH` (Gemini 3, Gemma 4); wins over the
    /// budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
}

impl GoogleThinking {
    /// Thinking on, at the model's default.
    pub fn enabled() -> Self {
        GoogleThinking {
            enabled: true,
            ..Self::default()
        }
    }

    /// Thinking off.
    pub fn disabled() -> Self {
        Self::default()
    }

    /// Sets [`budget_tokens`](Self::budget_tokens).
    #[must_use]
    pub fn with_budget_tokens(mut self, tokens: i64) -> Self {
        self.budget_tokens = Some(tokens);
        self
    }

    /// Sets [`level`](Self::level).
    #[must_use]
    pub fn with_level(mut self, level: impl Into<String>) -> Self {
        self.level = Some(level.into());
        self
    }
}

/// The options of `google-generative-ai` (the Gemini API), by pi's names.
///
/// ```
/// use pi_engine::StreamOptions;
/// use pi_engine::llm::{GoogleOptions, GoogleThinking};
///
/// let options = StreamOptions::new()
///     .with_api_options(&GoogleOptions::new().with_thinking(GoogleThinking::enabled().with_budget_tokens(2048)));
/// assert_eq!(options.extra["thinking"]["budgetTokens"], 2048);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GoogleOptions {
    /// `thinking`: unset sends no thinking configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<GoogleThinking>,
}

impl ApiOptions for GoogleOptions {
    const API: &'static str = api::GOOGLE_GENERATIVE_AI;
    const KEYS: &'static [&'static str] = &["thinking"];
}

impl GoogleOptions {
    /// Nothing set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`thinking`](Self::thinking).
    #[must_use]
    pub fn with_thinking(mut self, thinking: GoogleThinking) -> Self {
        self.thinking = Some(thinking);
        self
    }
}

/// The options of `google-vertex`, by pi's names: the Gemini options plus the Google Cloud
/// project, location and an OAuth access token (each falls back to its environment variable
/// and, for the token, to `gcloud`). `Debug` redacts the token.
///
/// ```
/// use pi_engine::StreamOptions;
/// use pi_engine::llm::GoogleVertexOptions;
///
/// let vertex = GoogleVertexOptions::new().with_project("my-project").with_access_token("ya29.secret");
/// assert!(!format!("{vertex:?}").contains("ya29.secret"));
/// let options = StreamOptions::new().with_api_options(&vertex);
/// assert_eq!(options.extra["project"], "my-project");
/// ```
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GoogleVertexOptions {
    /// `thinking`, as for [`GoogleOptions`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<GoogleThinking>,
    /// `project` (default `GOOGLE_CLOUD_PROJECT`, then `GCLOUD_PROJECT`).
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub project: Option<String>,
    /// `location` (default `GOOGLE_CLOUD_LOCATION`).
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub location: Option<String>,
    /// `accessToken`: an OAuth token for project mode.
    #[serde(
        default,
        deserialize_with = "non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub access_token: Option<String>,
}

impl fmt::Debug for GoogleVertexOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GoogleVertexOptions")
            .field("thinking", &self.thinking)
            .field("project", &self.project)
            .field("location", &self.location)
            .field(
                "access_token",
                &self.access_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl ApiOptions for GoogleVertexOptions {
    const API: &'static str = api::GOOGLE_VERTEX;
    const KEYS: &'static [&'static str] = &["thinking", "project", "location", "accessToken"];
}

impl GoogleVertexOptions {
    /// Nothing set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`thinking`](Self::thinking).
    #[must_use]
    pub fn with_thinking(mut self, thinking: GoogleThinking) -> Self {
        self.thinking = Some(thinking);
        self
    }

    /// Sets [`project`](Self::project).
    #[must_use]
    pub fn with_project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// Sets [`location`](Self::location).
    #[must_use]
    pub fn with_location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }

    /// Sets [`access_token`](Self::access_token).
    #[must_use]
    pub fn with_access_token(mut self, token: impl Into<String>) -> Self {
        self.access_token = Some(token.into());
        self
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavour {
    GenerativeAi,
    Vertex,
}

/// pi's `streamSimple` for the Google apis: `thinking` off, or on with a level (Gemini 3,
/// Gemma 4) or a budget.
pub(super) fn map(
    model: &Model,
    options: &StreamOptions,
    level: Option<ThinkingLevel>,
    flavour: Flavour,
    out: &mut StreamOptions,
) {
    let thinking = thinking(model, options, level, flavour);
    // Only `thinking` (the one key of `GoogleOptions`), for Vertex too: its provider copies
    // the project, location and token itself.
    out.set_api_options(&GoogleOptions::new().with_thinking(thinking));
}

fn thinking(
    model: &Model,
    options: &StreamOptions,
    level: Option<ThinkingLevel>,
    flavour: Flavour,
) -> GoogleThinking {
    let Some(level) = level else {
        return GoogleThinking::disabled();
    };
    let effort = match clamp_thinking_level(model, level) {
        ThinkingLevel::Off => ThinkingLevel::High,
        clamped => clamped,
    };
    let id = model.id.to_lowercase();
    let pro = gemini3(&id, "-pro");
    let flash = gemini3(&id, "-flash");
    let gemma4 =
        flavour == Flavour::GenerativeAi && (id.contains("gemma4") || id.contains("gemma-4"));
    let mut thinking = GoogleThinking::enabled();
    if pro || flash || gemma4 {
        // Absent for `xhigh`, which Google's levels do not have.
        thinking.level = match (pro, gemma4, effort) {
            (true, _, ThinkingLevel::Minimal | ThinkingLevel::Low) => Some("LOW"),
            (true, _, ThinkingLevel::Medium | ThinkingLevel::High) => Some("HIGH"),
            (_, true, ThinkingLevel::Minimal | ThinkingLevel::Low) => Some("MINIMAL"),
            (_, true, ThinkingLevel::Medium | ThinkingLevel::High) => Some("HIGH"),
            (_, _, ThinkingLevel::Minimal) => Some("MINIMAL"),
            (_, _, ThinkingLevel::Low) => Some("LOW"),
            (_, _, ThinkingLevel::Medium) => Some("MEDIUM"),
            (_, _, ThinkingLevel::High) => Some("HIGH"),
            _ => None,
        }
        .map(str::to_owned);
    } else {
        thinking.budget_tokens = budget(model, effort, options.thinking_budgets, flavour);
    }
    thinking
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
fn budget(
    model: &Model,
    effort: ThinkingLevel,
    custom: Option<ThinkingBudgets>,
    flavour: Flavour,
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
    } else if flavour == Flavour::GenerativeAi && model.id.contains("2.5-flash-lite") {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini3_pattern() {
        assert!(gemini3("gemini-3-pro-preview", "-pro"));
        assert!(gemini3("models/gemini-3.1-pro", "-pro"));
        assert!(gemini3("gemini-3.12-flash-lite", "-flash"));
        assert!(!gemini3("gemini-3.-pro", "-pro"));
        assert!(!gemini3("gemini-30-pro", "-pro"));
        assert!(!gemini3("gemini-2.5-pro", "-pro"));
    }
}
