//! Thinking (reasoning) levels: one scale for every provider.
//!
//! A [`ThinkingLevel`] is what a caller asks for; each provider maps it to its own options
//! (token budgets, effort names, per-model overrides).

use serde::{Deserialize, Serialize};

use crate::llm::model::Model;

/// How much a model should reason before answering.
///
/// ```
/// use pi_engine::ThinkingLevel;
///
/// let level: ThinkingLevel = serde_json::from_str("\"xhigh\"").unwrap();
/// assert_eq!(level, ThinkingLevel::Xhigh);
/// assert_eq!(ThinkingLevel::Off.as_str(), "off");
/// ```
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning.
    #[default]
    Off,
    /// The least reasoning a model offers.
    Minimal,
    /// Little reasoning.
    Low,
    /// Moderate reasoning.
    Medium,
    /// A lot of reasoning.
    High,
    /// The most reasoning, where a model offers more than `high`.
    Xhigh,
}

impl ThinkingLevel {
    /// Every level, from `off` to `xhigh`.
    pub const ALL: [ThinkingLevel; 6] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
    ];

    /// The wire name (`"off"`, `"minimal"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
        }
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ThinkingLevel {
    type Err = UnknownThinkingLevel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ThinkingLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| UnknownThinkingLevel(s.to_owned()))
    }
}

/// A string that is not a thinking level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown thinking level: {0:?} (expected off, minimal, low, medium, high or xhigh)")]
pub struct UnknownThinkingLevel(pub String);

/// Token budgets per level for providers that reason within a budget (pi's
/// `thinkingBudgets`). Unset levels use the defaults: minimal 1024, low 2048, medium 8192,
/// high 16384 (xhigh uses high's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ThinkingBudgets {
    /// Budget for `minimal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimal: Option<u64>,
    /// Budget for `low`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<u64>,
    /// Budget for `medium`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium: Option<u64>,
    /// Budget for `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<u64>,
}

impl ThinkingBudgets {
    /// pi's default budgets: minimal 1024, low 2048, medium 8192, high 16384 tokens.
    pub const DEFAULT: ThinkingBudgets = ThinkingBudgets {
        minimal: Some(1024),
        low: Some(2048),
        medium: Some(8192),
        high: Some(16384),
    };

    /// Budgets with every level set.
    pub fn new(minimal: u64, low: u64, medium: u64, high: u64) -> Self {
        ThinkingBudgets {
            minimal: Some(minimal),
            low: Some(low),
            medium: Some(medium),
            high: Some(high),
        }
    }

    /// The budget set for `level` (`xhigh` reads `high`; `off` has none).
    ///
    /// ```
    /// use pi_engine::llm::{ThinkingBudgets, ThinkingLevel};
    ///
    /// assert_eq!(ThinkingBudgets::DEFAULT.get(ThinkingLevel::Xhigh), Some(16384));
    /// assert_eq!(ThinkingBudgets::default().get(ThinkingLevel::Low), None);
    /// ```
    pub fn get(&self, level: ThinkingLevel) -> Option<u64> {
        match level {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => self.minimal,
            ThinkingLevel::Low => self.low,
            ThinkingLevel::Medium => self.medium,
            ThinkingLevel::High | ThinkingLevel::Xhigh => self.high,
        }
    }

    /// The budget for `level`: the one set here, else pi's default (0 for `off`).
    pub fn budget_or_default(&self, level: ThinkingLevel) -> u64 {
        self.get(level)
            .or_else(|| ThinkingBudgets::DEFAULT.get(level))
            .unwrap_or(0)
    }

    /// These budgets with `level`'s (`high`'s for `xhigh`) set to `tokens`.
    #[must_use]
    pub fn with(mut self, level: ThinkingLevel, tokens: u64) -> Self {
        match level {
            ThinkingLevel::Off => {}
            ThinkingLevel::Minimal => self.minimal = Some(tokens),
            ThinkingLevel::Low => self.low = Some(tokens),
            ThinkingLevel::Medium => self.medium = Some(tokens),
            ThinkingLevel::High | ThinkingLevel::Xhigh => self.high = Some(tokens),
        }
        self
    }
}

/// The levels `model` offers, from `off` up, as pi's `getSupportedThinkingLevels`: only
/// `off` for a model that cannot reason; otherwise `off` to `high` except those its
/// `thinkingLevelMap` sets to `null`, and `xhigh` only when the map names it.
///
/// ```
/// use pi_engine::llm::{ThinkingLevel::*, get_model, supported_thinking_levels};
///
/// let opus = get_model("anthropic", "claude-opus-4-6").unwrap(); // map: {"xhigh": "max"}
/// assert_eq!(supported_thinking_levels(&opus), [Off, Minimal, Low, Medium, High, Xhigh]);
/// let gemini = get_model("google", "gemini-3-pro-preview").unwrap();
/// assert_eq!(supported_thinking_levels(&gemini), [Low, High]);
/// let plain = get_model("openai", "gpt-4o").unwrap();
/// assert_eq!(supported_thinking_levels(&plain), [Off]);
/// ```
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    ThinkingLevel::ALL
        .into_iter()
        .filter(|level| {
            let mapped = model.thinking_level_map.as_ref().and_then(|m| m.get(level));
            match (level, mapped) {
                (_, Some(None)) => false,
                (ThinkingLevel::Xhigh, mapped) => mapped.is_some(),
                _ => true,
            }
        })
        .collect()
}

/// The level of `model` nearest to `level`, as pi's `clampThinkingLevel`: `level` itself
/// when offered, else the next one up, else the next one down.
///
/// ```
/// use pi_engine::llm::{ThinkingLevel, clamp_thinking_level, get_model};
///
/// let gemini = get_model("google", "gemini-3-pro-preview").unwrap(); // low and high only
/// assert_eq!(clamp_thinking_level(&gemini, ThinkingLevel::Medium), ThinkingLevel::High);
/// assert_eq!(clamp_thinking_level(&gemini, ThinkingLevel::Xhigh), ThinkingLevel::High);
/// assert_eq!(clamp_thinking_level(&gemini, ThinkingLevel::Off), ThinkingLevel::Low);
/// ```
pub fn clamp_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let available = supported_thinking_levels(model);
    let requested = ThinkingLevel::ALL
        .iter()
        .position(|l| *l == level)
        .unwrap_or(0);
    let up = ThinkingLevel::ALL[requested..].iter();
    let down = ThinkingLevel::ALL[..requested].iter().rev();
    up.chain(down)
        .find(|l| available.contains(l))
        .or(available.first())
        .copied()
        .unwrap_or(ThinkingLevel::Off)
}

/// Output tokens and thinking budget for a budget-based reasoning request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThinkingAdjustment {
    /// The output token limit to send (thinking included).
    pub max_tokens: u64,
    /// The thinking budget to send.
    pub thinking_budget: u64,
}

/// Makes room for thinking, as pi's `adjustMaxTokensForThinking`: the budget for `level`
/// (from `budgets`, else the defaults; `xhigh` uses `high`'s) is added to `base_max_tokens`,
/// capped at `model_max_tokens`; if that leaves no more than the budget, the budget shrinks
/// to leave 1024 output tokens (or to 0). `off` has a budget of 0.
///
/// ```
/// use pi_engine::llm::{ThinkingLevel, adjust_max_tokens_for_thinking};
///
/// let a = adjust_max_tokens_for_thinking(32_000, 64_000, ThinkingLevel::High, None);
/// assert_eq!((a.max_tokens, a.thinking_budget), (48_384, 16_384));
/// let a = adjust_max_tokens_for_thinking(8_192, 8_192, ThinkingLevel::Medium, None);
/// assert_eq!((a.max_tokens, a.thinking_budget), (8_192, 7_168));
/// ```
pub fn adjust_max_tokens_for_thinking(
    base_max_tokens: u64,
    model_max_tokens: u64,
    level: ThinkingLevel,
    budgets: Option<&ThinkingBudgets>,
) -> ThinkingAdjustment {
    const MIN_OUTPUT_TOKENS: u64 = 1024;
    let budget = budgets
        .copied()
        .unwrap_or_default()
        .budget_or_default(level);
    let max_tokens = base_max_tokens.saturating_add(budget).min(model_max_tokens);
    let thinking_budget = if max_tokens <= budget {
        max_tokens.saturating_sub(MIN_OUTPUT_TOKENS)
    } else {
        budget
    };
    ThinkingAdjustment {
        max_tokens,
        thinking_budget,
    }
}
