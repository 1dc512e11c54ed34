//! [`AgentSessionEvent`]: what an [`AgentSession`](super::AgentSession) reports — every
//! [`AgentEvent`] of its runs, plus pi's session events (compaction, retries, queues,
//! names, thinking levels), in pi 0.73.1's JSON shapes.

use serde::{Deserialize, Serialize};

use crate::agent::AgentEvent;
use crate::llm::thinking::ThinkingLevel;
use crate::session::compaction::CompactionResult;

/// One event of an agent session: an agent event, or one of the session's own.
///
/// Serialized, each is pi's JSON (`{"type": "compaction_start", "reason": "threshold"}`).
///
/// ```
/// use pi_engine::agent_session::{AgentSessionEvent, CompactionReason, SessionEvent};
///
/// let event = AgentSessionEvent::Session(SessionEvent::CompactionStart { reason: CompactionReason::Overflow });
/// assert_eq!(serde_json::to_string(&event).unwrap(), r#"{"type":"compaction_start","reason":"overflow"}"#);
/// let back: AgentSessionEvent = serde_json::from_str(r#"{"type":"agent_start"}"#).unwrap();
/// assert_eq!(back.kind(), "agent_start");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum AgentSessionEvent {
    /// An event of the agent's run.
    Agent(AgentEvent),
    /// An event of the session.
    Session(SessionEvent),
}

impl AgentSessionEvent {
    /// The wire name of the event type.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentSessionEvent::Agent(e) => e.kind(),
            AgentSessionEvent::Session(e) => e.kind(),
        }
    }

    /// The agent event, if it is one.
    pub fn as_agent(&self) -> Option<&AgentEvent> {
        match self {
            AgentSessionEvent::Agent(e) => Some(e),
            AgentSessionEvent::Session(_) => None,
        }
    }

    /// The session event, if it is one.
    pub fn as_session(&self) -> Option<&SessionEvent> {
        match self {
            AgentSessionEvent::Session(e) => Some(e),
            AgentSessionEvent::Agent(_) => None,
        }
    }
}

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CompactionReason {
    /// [`compact`](super::AgentSession::compact) was called.
    Manual,
    /// The context neared the window.
    Threshold,
    /// The model rejected the context as too long.
    Overflow,
}

/// The session's own events (pi's `AgentSessionEvent` members beyond `AgentEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum SessionEvent {
    /// The queued steering or follow-up messages changed.
    QueueUpdate {
        /// The texts of the queued steering messages.
        steering: Vec<String>,
        /// The texts of the queued follow-up messages.
        follow_up: Vec<String>,
    },
    /// A compaction started.
    CompactionStart {
        /// Why.
        reason: CompactionReason,
    },
    /// A compaction ended.
    CompactionEnd {
        /// Why it ran.
        reason: CompactionReason,
        /// What it wrote, when it succeeded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<CompactionResult>,
        /// True when it was aborted.
        aborted: bool,
        /// True when the failed model call is retried now (after an overflow).
        will_retry: bool,
        /// Why it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    /// A failed model call will be retried after a delay.
    AutoRetryStart {
        /// The retry's number, from 1.
        attempt: u32,
        /// The most retries of one call.
        max_attempts: u32,
        /// The wait before the retry.
        delay_ms: u64,
        /// The error being retried.
        error_message: String,
    },
    /// Retrying ended: the call succeeded, or the retries were used up or cancelled.
    AutoRetryEnd {
        /// True when a retry succeeded.
        success: bool,
        /// The last retry's number.
        attempt: u32,
        /// The error the call ended with, when it did not succeed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
    /// The session's name changed.
    SessionInfoChanged {
        /// The new name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// The thinking level changed.
    ThinkingLevelChanged {
        /// The new level.
        level: ThinkingLevel,
    },
    /// An extension's handler failed: returned an error, panicked or passed its deadline
    /// (pi's `extension_error`). The session went on as if it had returned nothing (a
    /// failed `tool_call` handler blocked its call).
    ExtensionError {
        /// The extension's name.
        extension_path: String,
        /// The event it was handling (`tool_call`, `context`, … or `command`).
        event: String,
        /// What went wrong.
        error: String,
    },
    /// An extension changed the course of things: blocked a tool call, rewrote its
    /// arguments, a result, a message, the context or a request, handled an input,
    /// cancelled a session operation (this crate's event; pi reports none of it). Also a
    /// `tracing` event, target `pi_engine::extensions`.
    ExtensionAction {
        /// The extension's name.
        extension_path: String,
        /// The event it handled (`tool_call`, `context`, …).
        event: String,
        /// What it did (`blocked`, `rewrote the arguments`, …).
        action: String,
    },
}

impl SessionEvent {
    /// The wire name of the event type.
    pub fn kind(&self) -> &'static str {
        match self {
            SessionEvent::QueueUpdate { .. } => "queue_update",
            SessionEvent::CompactionStart { .. } => "compaction_start",
            SessionEvent::CompactionEnd { .. } => "compaction_end",
            SessionEvent::AutoRetryStart { .. } => "auto_retry_start",
            SessionEvent::AutoRetryEnd { .. } => "auto_retry_end",
            SessionEvent::SessionInfoChanged { .. } => "session_info_changed",
            SessionEvent::ThinkingLevelChanged { .. } => "thinking_level_changed",
            SessionEvent::ExtensionError { .. } => "extension_error",
            SessionEvent::ExtensionAction { .. } => "extension_action",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire(e: SessionEvent) -> serde_json::Value {
        let v = serde_json::to_value(AgentSessionEvent::Session(e.clone())).unwrap();
        let back: AgentSessionEvent = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back, AgentSessionEvent::Session(e));
        v
    }

    #[test]
    fn pis_json_shapes() {
        assert_eq!(
            wire(SessionEvent::QueueUpdate {
                steering: vec!["a".into()],
                follow_up: vec![]
            }),
            json!({"type": "queue_update", "steering": ["a"], "followUp": []})
        );
        assert_eq!(
            wire(SessionEvent::CompactionEnd {
                reason: CompactionReason::Threshold,
                result: Some(CompactionResult {
                    summary: "S".into(),
                    first_kept_entry_id: "abcd1234".into(),
                    tokens_before: 10,
                    details: Some(json!({"readFiles": [], "modifiedFiles": []})),
                }),
                aborted: false,
                will_retry: false,
                error_message: None,
            }),
            json!({"type": "compaction_end", "reason": "threshold", "result": {"summary": "S",
                "firstKeptEntryId": "abcd1234", "tokensBefore": 10,
                "details": {"readFiles": [], "modifiedFiles": []}}, "aborted": false, "willRetry": false})
        );
        assert_eq!(
            wire(SessionEvent::CompactionEnd {
                reason: CompactionReason::Overflow,
                result: None,
                aborted: false,
                will_retry: false,
                error_message: Some("x".into()),
            }),
            json!({"type": "compaction_end", "reason": "overflow", "aborted": false, "willRetry": false, "errorMessage": "x"})
        );
        assert_eq!(
            wire(SessionEvent::AutoRetryStart {
                attempt: 1,
                max_attempts: 3,
                delay_ms: 2000,
                error_message: "overloaded".into()
            }),
            json!({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "overloaded"})
        );
        assert_eq!(
            wire(SessionEvent::AutoRetryEnd {
                success: false,
                attempt: 2,
                final_error: Some("Retry cancelled".into())
            }),
            json!({"type": "auto_retry_end", "success": false, "attempt": 2, "finalError": "Retry cancelled"})
        );
        assert_eq!(
            wire(SessionEvent::SessionInfoChanged {
                name: Some("n".into())
            }),
            json!({"type": "session_info_changed", "name": "n"})
        );
        assert_eq!(
            wire(SessionEvent::ThinkingLevelChanged {
                level: ThinkingLevel::High
            }),
            json!({"type": "thinking_level_changed", "level": "high"})
        );
        assert_eq!(
            wire(SessionEvent::ExtensionError {
                extension_path: "gate".into(),
                event: "tool_call".into(),
                error: "boom".into()
            }),
            json!({"type": "extension_error", "extensionPath": "gate", "event": "tool_call", "error": "boom"})
        );
        assert_eq!(
            wire(SessionEvent::CompactionStart {
                reason: CompactionReason::Manual
            }),
            json!({"type": "compaction_start", "reason": "manual"})
        );
    }

    #[test]
    fn agent_events_pass_through() {
        let e: AgentSessionEvent = serde_json::from_value(json!({"type": "turn_start"})).unwrap();
        assert!(matches!(e, AgentSessionEvent::Agent(AgentEvent::TurnStart)));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "turn_start"})
        );
    }
}
