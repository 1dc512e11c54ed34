//! [`AgentSessionSettings`]: pi's settings that shape an agent session, with pi's defaults.

use serde::{Deserialize, Serialize};

use crate::agent::QueueMode;
use crate::llm::thinking::ThinkingLevel;
use crate::session::compaction::CompactionSettings;

/// Settings of an [`AgentSession`](super::AgentSession), with pi's names and defaults, so the
/// corresponding part of pi's `settings.json` deserializes into it.
///
/// ```
/// use pi_engine::agent_session::AgentSessionSettings;
///
/// let settings: AgentSessionSettings = serde_json::from_str(r#"{
///     "compaction": {"keepRecentTokens": 30000},
///     "retry": {"maxRetries": 5},
///     "steeringMode": "all"
/// }"#).unwrap();
/// assert_eq!(settings.compaction.reserve_tokens, 16384);
/// assert_eq!(settings.compaction.keep_recent_tokens, 30000);
/// assert_eq!((settings.retry.max_retries, settings.retry.base_delay_ms), (5, 2000));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct AgentSessionSettings {
    /// Automatic compaction.
    pub compaction: CompactionSettings,
    /// Branch summaries when navigating the tree.
    pub branch_summary: BranchSummarySettings,
    /// Automatic retries of failed model calls.
    pub retry: RetrySettings,
    /// How steering messages are delivered. Default one at a time.
    pub steering_mode: QueueMode,
    /// How follow-up messages are delivered. Default one at a time.
    pub follow_up_mode: QueueMode,
    /// The thinking level of a new session, and the level restored when switching away from
    /// a model without reasoning (pi's `defaultThinkingLevel`). `None`: `medium`. Updated by
    /// [`set_thinking_level`](super::AgentSession::set_thinking_level), as pi updates it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_thinking_level: Option<ThinkingLevel>,
}

/// pi's default thinking level.
pub const DEFAULT_THINKING_LEVEL: ThinkingLevel = ThinkingLevel::Medium;

/// Branch summaries (pi's `branchSummary` settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct BranchSummarySettings {
    /// Tokens of the window left for the summary request's prompt and reply. Default 16384.
    pub reserve_tokens: u64,
    /// For user interfaces: do not ask whether to summarize. Default false.
    pub skip_prompt: bool,
}

impl Default for BranchSummarySettings {
    fn default() -> Self {
        BranchSummarySettings {
            reserve_tokens: 16_384,
            skip_prompt: false,
        }
    }
}

/// Automatic retries of model calls that failed for a passing reason (pi's `retry`
/// settings).
///
/// While enabled, the session owns the whole retry budget of a model call: it turns the
/// provider-level retries ([`StreamOptions::retry`](crate::StreamOptions::retry)) off, so
/// the two never multiply. Disabled, the provider-level policy applies as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct RetrySettings {
    /// Retry automatically. Default true.
    pub enabled: bool,
    /// Retries of one model call. Default 3.
    pub max_retries: u32,
    /// The first delay; each retry doubles it (2, 4, 8 s). Default 2000.
    pub base_delay_ms: u64,
    /// The longest delay, a server's `Retry-After` included. Default 60000.
    pub max_delay_ms: u64,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
            max_delay_ms: 60_000,
        }
    }
}

/// A setting a person changed through the session, which pi saves as the default for later
/// sessions (its `settings.json`); given to
/// [`AgentSessionBuilder::on_settings_change`](super::AgentSessionBuilder::on_settings_change).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingsChange {
    /// `set_model`/`cycle_model`: pi's `defaultProvider` and `defaultModel`.
    DefaultModel {
        /// The provider.
        provider: String,
        /// The model id.
        model_id: String,
    },
    /// `set_thinking_level` (when the model reasons, or the level is not `off`):
    /// `defaultThinkingLevel`.
    DefaultThinkingLevel(ThinkingLevel),
    /// `set_steering_mode`: `steeringMode`.
    SteeringMode(QueueMode),
    /// `set_follow_up_mode`: `followUpMode`.
    FollowUpMode(QueueMode),
    /// `set_auto_compaction_enabled`: `compaction.enabled`.
    AutoCompaction(bool),
    /// `set_auto_retry_enabled`: `retry.enabled`.
    AutoRetry(bool),
}
