//! Thinking (reasoning) levels: one scale for every provider.
//!
//! A [`ThinkingLevel`] is what a caller asks for; each provider maps it to its own options
//! (token budgets, effort names, per-model overrides).

use serde::{Deserialize, Serialize};

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
