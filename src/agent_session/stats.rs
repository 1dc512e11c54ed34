//! [`SessionStats`] and [`ContextUsage`]: what a session has used, in pi's shapes.

use std::path::PathBuf;

use serde::Serialize;

use crate::agent::AgentMessage;
use crate::llm::message::AssistantContent;
use crate::session::compaction::{calculate_context_tokens, estimate_context_tokens, valid_usage};

/// Token totals of a session's replies (pi's `SessionStats.tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TokenStats {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Tokens read from the cache.
    pub cache_read: u64,
    /// Tokens written to the cache.
    pub cache_write: u64,
    /// The sum of the four.
    pub total: u64,
}

/// How full the model's context window is (pi's `ContextUsage`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ContextUsage {
    /// The estimated context size; `None` right after a compaction, until a reply reports
    /// the new size.
    pub tokens: Option<u64>,
    /// The model's window.
    pub context_window: u64,
    /// `tokens` as a percentage of the window.
    pub percent: Option<f64>,
}

/// What the messages of the current context used (pi's `SessionStats`): counts, tokens and
/// cost of the conversation the agent holds (after a compaction, of what it kept).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionStats {
    /// The session file, when the session is persisted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<PathBuf>,
    /// The session id.
    pub session_id: String,
    /// User messages.
    pub user_messages: usize,
    /// Assistant messages.
    pub assistant_messages: usize,
    /// Tool calls in assistant messages.
    pub tool_calls: usize,
    /// Tool results.
    pub tool_results: usize,
    /// All messages, of every role.
    pub total_messages: usize,
    /// Tokens of the assistant messages.
    pub tokens: TokenStats,
    /// Their cost, in dollars.
    pub cost: f64,
    /// How full the context window is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<ContextUsage>,
}

/// The counts, tokens and cost of `messages`.
pub(crate) fn stats(
    messages: &[AgentMessage],
    session_file: Option<PathBuf>,
    session_id: String,
    context_usage: Option<ContextUsage>,
) -> SessionStats {
    let mut s = SessionStats {
        session_file,
        session_id,
        user_messages: 0,
        assistant_messages: 0,
        tool_calls: 0,
        tool_results: 0,
        total_messages: messages.len(),
        tokens: TokenStats::default(),
        cost: 0.0,
        context_usage,
    };
    for m in messages {
        match m {
            AgentMessage::User(_) => s.user_messages += 1,
            AgentMessage::ToolResult(_) => s.tool_results += 1,
            AgentMessage::Assistant(a) => {
                s.assistant_messages += 1;
                s.tool_calls += a
                    .content
                    .iter()
                    .filter(|c| matches!(c, AssistantContent::ToolCall(_)))
                    .count();
                // Counts saturate: a provider reporting absurd usage must not panic or wrap.
                let t = &mut s.tokens;
                t.input = t.input.saturating_add(a.usage.input);
                t.output = t.output.saturating_add(a.usage.output);
                t.cache_read = t.cache_read.saturating_add(a.usage.cache_read);
                t.cache_write = t.cache_write.saturating_add(a.usage.cache_write);
                s.cost += a.usage.cost.total;
            }
            AgentMessage::Custom(_) => {}
        }
    }
    let t = &mut s.tokens;
    t.total = t
        .input
        .saturating_add(t.output)
        .saturating_add(t.cache_read)
        .saturating_add(t.cache_write);
    s
}

/// The context usage of `messages` in a window of `context_window` tokens (pi's
/// `getContextUsage`). `compaction_ms` is the time of the latest compaction on the branch:
/// until a reply after it reports a size, the size is unknown.
pub(crate) fn context_usage(
    messages: &[AgentMessage],
    context_window: u64,
    compaction_ms: Option<i64>,
) -> Option<ContextUsage> {
    if context_window == 0 {
        return None;
    }
    if let Some(at) = compaction_ms {
        let measured = messages.iter().rev().find_map(|m| match m {
            AgentMessage::Assistant(a) if a.timestamp > at => {
                valid_usage(a).map(|u| calculate_context_tokens(u) > 0)
            }
            _ => None,
        });
        if measured != Some(true) {
            return Some(ContextUsage {
                tokens: None,
                context_window,
                percent: None,
            });
        }
    }
    let tokens = estimate_context_tokens(messages).tokens;
    Some(ContextUsage {
        tokens: Some(tokens),
        context_window,
        percent: Some(tokens as f64 / context_window as f64 * 100.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::{AssistantMessage, Usage};

    #[test]
    fn token_totals_saturate() {
        let usage = Usage {
            input: u64::MAX - 1,
            output: u64::MAX,
            cache_read: 7,
            cache_write: u64::MAX,
            ..Usage::default()
        };
        let reply: AgentMessage = AssistantMessage::new("a", "p", "m")
            .with_usage(usage)
            .into();
        let s = stats(&[reply.clone(), reply], None, "s".into(), None);
        assert_eq!(s.assistant_messages, 2);
        assert_eq!(s.tokens.input, u64::MAX);
        assert_eq!(s.tokens.output, u64::MAX);
        assert_eq!(s.tokens.cache_read, 14);
        assert_eq!(s.tokens.total, u64::MAX);
        assert!(context_usage(&s_messages(), 1000, None).is_some());
    }

    fn s_messages() -> Vec<AgentMessage> {
        let usage = Usage {
            input: u64::MAX,
            output: u64::MAX,
            ..Usage::default()
        };
        vec![
            AssistantMessage::new("a", "p", "m")
                .with_usage(usage)
                .into(),
        ]
    }
}
