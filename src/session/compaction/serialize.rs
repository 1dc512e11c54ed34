//! A conversation as plain text for a summarizer (pi's `serializeConversation`): sent inside
//! `<conversation>` tags so the model reads it instead of continuing it.

use super::estimate::js_len;
use crate::llm::json::js;
use crate::llm::message::{AssistantContent, Content, Message, UserContent};

/// Longest tool result kept in a serialized conversation, in characters.
pub const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// The first `max` UTF-16 units of `text` plus a note of how many were left out (pi's
/// `truncateForSummary`). A character that would be split is left out whole.
fn truncate_for_summary(text: &str, max: usize) -> String {
    let len = js_len(text) as usize;
    if len <= max {
        return text.to_owned();
    }
    let mut units = 0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > max {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    format!(
        "{}\n\n[... {} more characters truncated]",
        &text[..end],
        len - max
    )
}

fn texts(content: &[Content]) -> String {
    content.iter().filter_map(Content::as_text).collect()
}

/// Serializes LLM messages as pi does: `[User]: …`, `[Assistant thinking]: …`,
/// `[Assistant]: …`, `[Assistant tool calls]: name(key=<json>, …); …` and `[Tool result]: …`
/// (cut to [`TOOL_RESULT_MAX_CHARS`]), separated by blank lines. Empty parts are left out.
/// Convert session roles first with [`convert_to_llm`](crate::session::convert_to_llm).
///
/// ```
/// use pi_engine::session::compaction::serialize_conversation;
/// use pi_engine::{AssistantContent, AssistantMessage, Message, UserMessage};
/// use serde_json::json;
///
/// let text = serialize_conversation(&[
///     Message::User(UserMessage::text("Fix the bug")),
///     Message::Assistant(AssistantMessage::new("a", "p", "m").with_content(vec![
///         AssistantContent::text("Looking."),
///         AssistantContent::tool_call("1", "read", json!({"path": "a.rs"})),
///     ])),
/// ]);
/// assert_eq!(
///     text,
///     "[User]: Fix the bug\n\n[Assistant]: Looking.\n\n[Assistant tool calls]: read(path=\"a.rs\")"
/// );
/// ```
pub fn serialize_conversation(messages: &[Message]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for message in messages {
        match message {
            Message::User(u) => {
                let content = match &u.content {
                    UserContent::Text(s) => s.clone(),
                    UserContent::Blocks(blocks) => texts(blocks),
                };
                if !content.is_empty() {
                    parts.push(format!("[User]: {content}"));
                }
            }
            Message::Assistant(a) => {
                let (mut text, mut thinking, mut calls) = (Vec::new(), Vec::new(), Vec::new());
                for block in &a.content {
                    match block {
                        AssistantContent::Text(t) => text.push(t.text.as_str()),
                        AssistantContent::Thinking(t) => thinking.push(t.thinking.as_str()),
                        AssistantContent::ToolCall(call) => {
                            let args: Vec<String> = js::entries(&call.arguments)
                                .into_iter()
                                .map(|(k, v)| format!("{k}={}", js::to_string(v)))
                                .collect();
                            calls.push(format!("{}({})", call.name, args.join(", ")));
                        }
                        // pi's summary text leaves out blocks it does not know.
                        AssistantContent::Unknown(_) => {}
                    }
                }
                if !thinking.is_empty() {
                    parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                }
                if !text.is_empty() {
                    parts.push(format!("[Assistant]: {}", text.join("\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            Message::ToolResult(r) => {
                let content = texts(&r.content);
                if !content.is_empty() {
                    parts.push(format!(
                        "[Tool result]: {}",
                        truncate_for_summary(&content, TOOL_RESULT_MAX_CHARS)
                    ));
                }
            }
        }
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_utf16_and_keeps_whole_characters() {
        let text = "a".repeat(2100);
        let cut = truncate_for_summary(&text, 2000);
        assert!(cut.starts_with(&"a".repeat(2000)));
        assert!(cut.ends_with("\n\n[... 100 more characters truncated]"));
        let emoji = format!("{}😀b", "a".repeat(1999));
        let cut = truncate_for_summary(&emoji, 2000);
        assert_eq!(
            cut,
            format!("{}\n\n[... 2 more characters truncated]", "a".repeat(1999))
        );
        assert_eq!(truncate_for_summary("short", 2000), "short");
    }
}
