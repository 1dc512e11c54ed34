//! GitHub Copilot's per-request headers (pi's `buildCopilotDynamicHeaders`), sent by every
//! provider when `model.provider` is `github-copilot`.

use crate::llm::message::{Content, Message, UserContent};

/// `X-Initiator` (`agent` when the last message is not the user's), `Openai-Intent`, and
/// `Copilot-Vision-Request` when a user message or tool result holds an image.
pub(crate) fn copilot_headers(messages: &[Message]) -> Vec<(&'static str, &'static str)> {
    let initiator = match messages.last() {
        Some(m) if m.role() != "user" => "agent",
        _ => "user",
    };
    let mut headers = vec![
        ("X-Initiator", initiator),
        ("Openai-Intent", "conversation-edits"),
    ];
    if has_vision_input(messages) {
        headers.push(("Copilot-Vision-Request", "true"));
    }
    headers
}

fn has_vision_input(messages: &[Message]) -> bool {
    messages.iter().any(|m| match m {
        Message::User(u) => {
            matches!(&u.content, UserContent::Blocks(b) if b.iter().any(|c| matches!(c, Content::Image(_))))
        }
        Message::ToolResult(r) => r.content.iter().any(|c| matches!(c, Content::Image(_))),
        Message::Assistant(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::{AssistantMessage, ToolResultMessage, UserMessage};

    #[test]
    fn initiator_and_vision() {
        assert_eq!(
            copilot_headers(&[]),
            [
                ("X-Initiator", "user"),
                ("Openai-Intent", "conversation-edits")
            ]
        );
        let messages: Vec<Message> = vec![
            UserMessage::text("hi").into(),
            AssistantMessage::new("a", "b", "c").into(),
            ToolResultMessage::new("t", "read", vec![Content::image("AA", "image/png")], false)
                .into(),
        ];
        assert_eq!(
            copilot_headers(&messages),
            [
                ("X-Initiator", "agent"),
                ("Openai-Intent", "conversation-edits"),
                ("Copilot-Vision-Request", "true")
            ]
        );
    }
}
