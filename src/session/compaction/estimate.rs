//! Token accounting, as pi estimates it: the usage the provider reported for the last
//! successful reply, plus four characters a token for everything after it.
//!
//! Lengths are counted in UTF-16 code units, as JavaScript's `String.length` counts them, so
//! the estimates (and the cut points that follow from them) are pi's to the token.

use std::borrow::Borrow;

use serde_json::Value;

use crate::agent::AgentMessage;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, StopReason, Usage, UserContent,
};

/// What an image counts for, in characters (about 1200 tokens).
pub const IMAGE_CHARS: u64 = 4800;

/// `s.length` in JavaScript.
pub(crate) fn js_len(s: &str) -> u64 {
    if s.is_ascii() {
        return s.len() as u64;
    }
    // One unit per character (every byte that does not continue one), two for characters
    // outside the BMP (those with a four-byte lead).
    s.bytes()
        .map(|b| u64::from(b & 0xC0 != 0x80) + u64::from(b >= 0xF0))
        .sum()
}

/// The context size a reply's usage reports (pi's `calculateContextTokens`): `totalTokens`
/// when it is set and not zero, else the sum of the four counts.
///
/// ```
/// use pi_engine::session::compaction::calculate_context_tokens;
/// use pi_engine::Usage;
///
/// assert_eq!(calculate_context_tokens(&Usage::new(100, 20, 5000, 10)), 5130);
/// ```
pub fn calculate_context_tokens(usage: &Usage) -> u64 {
    match usage.total_tokens {
        Some(total) if total > 0 => total,
        // Saturating: absurd counts from a provider must not panic or wrap.
        _ => usage
            .input
            .saturating_add(usage.output)
            .saturating_add(usage.cache_read)
            .saturating_add(usage.cache_write),
    }
}

/// The usage of a reply that counts: not aborted, not failed.
pub(crate) fn valid_usage(message: &AssistantMessage) -> Option<&Usage> {
    match message.stop_reason {
        StopReason::Aborted | StopReason::Error => None,
        _ => Some(&message.usage),
    }
}

fn ceil4(chars: u64) -> u64 {
    chars.div_ceil(4)
}

fn content_chars(content: &[Content], images: bool) -> u64 {
    content
        .iter()
        .map(|c| match c {
            Content::Text(t) => js_len(&t.text),
            Content::Image(_) if images => IMAGE_CHARS,
            Content::Image(_) => 0,
            // pi counts only the blocks it knows.
            Content::Unknown(_) => 0,
        })
        .sum()
}

/// Characters of a JSON `content` value: a string, or blocks of text (and images).
fn value_content_chars(content: Option<&Value>) -> u64 {
    match content {
        Some(Value::String(s)) => js_len(s),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map_or(0, js_len),
                Some("image") => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

fn str_field(fields: &serde_json::Map<String, Value>, key: &str) -> u64 {
    fields.get(key).and_then(Value::as_str).map_or(0, js_len)
}

/// Estimated tokens of one message (pi's `estimateTokens`): a quarter of its characters,
/// rounded up — text and thinking, a tool call's name and JSON arguments, an image as
/// [`IMAGE_CHARS`] in tool results and custom messages (not in user messages, as pi counts),
/// a bash execution's command and output, a summary's text. Roles it does not know count 0.
///
/// ```
/// use pi_engine::session::compaction::estimate_tokens;
/// use pi_engine::UserMessage;
///
/// assert_eq!(estimate_tokens(&UserMessage::text("Hello, world!").into()), 4); // 13 chars
/// ```
pub fn estimate_tokens(message: &AgentMessage) -> u64 {
    match message {
        AgentMessage::User(u) => ceil4(match &u.content {
            UserContent::Text(s) => js_len(s),
            UserContent::Blocks(blocks) => content_chars(blocks, false),
        }),
        AgentMessage::Assistant(a) => ceil4(
            a.content
                .iter()
                .map(|c| match c {
                    AssistantContent::Text(t) => js_len(&t.text),
                    AssistantContent::Thinking(t) => js_len(&t.thinking),
                    AssistantContent::ToolCall(call) => {
                        js_len(&call.name)
                            + crate::llm::json::js::stringified_map_len(&call.arguments)
                    }
                    AssistantContent::Unknown(_) => 0,
                })
                .sum(),
        ),
        AgentMessage::ToolResult(r) => ceil4(content_chars(&r.content, true)),
        AgentMessage::Custom(c) => {
            let fields = c.fields();
            ceil4(match c.role() {
                "custom" => value_content_chars(fields.get("content")),
                "bashExecution" => str_field(fields, "command") + str_field(fields, "output"),
                "branchSummary" | "compactionSummary" => str_field(fields, "summary"),
                _ => 0,
            })
        }
    }
}

/// The context size of a conversation (pi's `estimateContextTokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ContextEstimate {
    /// The estimate: `usage_tokens + trailing_tokens`.
    pub tokens: u64,
    /// The context size the last successful reply reported (0 without one).
    pub usage_tokens: u64,
    /// Estimated tokens of the messages after that reply (of all of them without one).
    pub trailing_tokens: u64,
    /// The index of that reply.
    pub last_usage_index: Option<usize>,
}

/// Estimates the context size of `messages`: the usage of the last reply that was neither
/// aborted nor failed, plus [`estimate_tokens`] of every message after it; without such a
/// reply, the estimate of every message.
///
/// ```
/// use pi_engine::session::compaction::estimate_context_tokens;
/// use pi_engine::{AssistantMessage, Usage, UserMessage};
///
/// let reply = AssistantMessage::new("faux", "faux", "m").with_usage(Usage::new(900, 100, 0, 0));
/// let messages = vec![UserMessage::text("hi").into(), reply.into(), UserMessage::text("12345678").into()];
/// let estimate = estimate_context_tokens(&messages);
/// assert_eq!((estimate.usage_tokens, estimate.trailing_tokens, estimate.tokens), (1000, 2, 1002));
/// ```
pub fn estimate_context_tokens(messages: &[AgentMessage]) -> ContextEstimate {
    estimate_context_tokens_where(messages, |_| true)
}

/// [`estimate_context_tokens`], trusting only the usage of replies `trust` accepts (a reply
/// sent before a compaction reports the old, larger context).
pub(crate) fn estimate_context_tokens_where<M: Borrow<AgentMessage>>(
    messages: &[M],
    trust: impl Fn(&AssistantMessage) -> bool,
) -> ContextEstimate {
    let last = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| match m.borrow() {
            AgentMessage::Assistant(a) => valid_usage(a).map(|u| (i, a, u)),
            _ => None,
        });
    match last {
        Some((index, reply, usage)) if trust(reply) => {
            let usage_tokens = calculate_context_tokens(usage);
            let trailing_tokens = messages[index + 1..]
                .iter()
                .map(|m| estimate_tokens(m.borrow()))
                .fold(0u64, u64::saturating_add);
            ContextEstimate {
                tokens: usage_tokens.saturating_add(trailing_tokens),
                usage_tokens,
                trailing_tokens,
                last_usage_index: Some(index),
            }
        }
        _ => {
            let estimated = messages.iter().map(|m| estimate_tokens(m.borrow())).sum();
            ContextEstimate {
                tokens: estimated,
                usage_tokens: 0,
                trailing_tokens: estimated,
                last_usage_index: None,
            }
        }
    }
}

/// True when a context of `context_tokens` leaves less than `reserve_tokens` of
/// `context_window` (pi's `shouldCompact`). A window of 0 (unknown) never compacts.
pub fn should_compact(context_tokens: u64, context_window: u64, reserve_tokens: u64) -> bool {
    context_window > 0 && context_tokens > context_window.saturating_sub(reserve_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_near_the_maximum_saturate() {
        let usage = Usage {
            input: u64::MAX,
            output: 5,
            total_tokens: None,
            ..Usage::default()
        };
        assert_eq!(calculate_context_tokens(&usage), u64::MAX);
        let reply: AgentMessage = crate::llm::message::AssistantMessage::new("a", "p", "m")
            .with_usage(usage)
            .into();
        let trailing: AgentMessage = crate::llm::message::UserMessage::text("x".repeat(400)).into();
        let e = estimate_context_tokens(&[reply, trailing]);
        assert_eq!(e.tokens, u64::MAX);
        assert!(should_compact(e.tokens, 1000, 100));
    }
    use crate::llm::message::{ImageContent, ToolResultMessage, UserMessage};
    use crate::session::{BashExecutionMessage, CompactionSummaryMessage, ExtensionMessage};
    use serde_json::json;

    #[test]
    fn lengths_are_utf16() {
        assert_eq!(js_len("héllo"), 5);
        assert_eq!(js_len("😀"), 2);
        for s in [
            "",
            "abc",
            "é€😀x",
            "日本語テキスト",
            "\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}",
        ] {
            assert_eq!(js_len(s), s.encode_utf16().count() as u64, "{s}");
        }
        assert_eq!(estimate_tokens(&UserMessage::text("😀😀😀").into()), 2);
    }

    #[test]
    fn every_role_as_pi_counts_it() {
        let image = Content::Image(ImageContent::new("AAAA", "image/png"));
        let user = UserMessage::blocks(vec![Content::text("abcd"), image.clone()]);
        assert_eq!(
            estimate_tokens(&user.into()),
            1,
            "images in user messages are free"
        );
        let result = ToolResultMessage::new("c", "read", vec![Content::text("abcd"), image], false);
        assert_eq!(estimate_tokens(&result.into()), (4 + 4800) / 4);
        let call = AssistantMessage::new("a", "p", "m").with_content(vec![
            AssistantContent::tool_call("c", "read", json!({"path": "a.rs", "n": 1.0})),
            AssistantContent::text("ok"),
        ]);
        // "read" + {"path":"a.rs","n":1} + "ok" = 4 + 22 + 2
        assert_eq!(estimate_tokens(&call.into()), 7);
        let bash = BashExecutionMessage::new("ls", "a\nb", Some(0));
        assert_eq!(estimate_tokens(&AgentMessage::custom(&bash).unwrap()), 2);
        let summary = CompactionSummaryMessage::new("x".repeat(9), 0, 0);
        assert_eq!(estimate_tokens(&AgentMessage::custom(&summary).unwrap()), 3);
        let ext = ExtensionMessage::new("e", "12345", true);
        assert_eq!(estimate_tokens(&AgentMessage::custom(&ext).unwrap()), 2);
        let unknown: AgentMessage =
            serde_json::from_value(json!({"role": "note", "text": "abcdefgh"})).unwrap();
        assert_eq!(estimate_tokens(&unknown), 0);
    }

    #[test]
    fn context_estimate_skips_failed_replies() {
        let ok = AssistantMessage::new("a", "p", "m").with_usage(Usage::new(10, 0, 0, 0));
        let failed = AssistantMessage::new("a", "p", "m")
            .with_usage(Usage::new(999, 0, 0, 0))
            .with_error(crate::Error::from_message("overloaded"));
        let msgs: Vec<AgentMessage> =
            vec![ok.into(), failed.into(), UserMessage::text("1234").into()];
        let e = estimate_context_tokens(&msgs);
        assert_eq!(e.last_usage_index, Some(0));
        assert_eq!(e.tokens, 11, "10 reported + 1 estimated after it");
        let untrusted = estimate_context_tokens_where(&msgs, |_| false);
        assert_eq!(untrusted.last_usage_index, None);
    }

    #[test]
    fn threshold() {
        assert!(!should_compact(100_000, 128_000, 16_384));
        assert!(should_compact(111_617, 128_000, 16_384));
        assert!(!should_compact(111_616, 128_000, 16_384));
        assert!(should_compact(1, 10_000, 16_384));
        assert!(!should_compact(1_000_000, 0, 16_384));
    }
}
