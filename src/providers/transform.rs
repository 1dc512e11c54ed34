//! Cross-provider replay: making a conversation that other models (or failed calls) took
//! part in acceptable to the model about to be called. pi's `transformMessages`, which every
//! built-in provider runs before encoding its request.
//!
//! [`transform_messages`] applies, in order:
//!
//! 1. **Images** for a model without image input become text placeholders (consecutive
//!    images collapse into one placeholder).
//! 2. **Assistant messages of another model** (different provider, api or model id) lose what
//!    only their own model can read: redacted thinking is dropped, thinking becomes plain
//!    text (empty thinking is dropped), text signatures and tool-call thought signatures are
//!    stripped, and tool-call ids are rewritten by the provider's rule, with the same rewrite
//!    applied to the tool results that answer them. Messages of the same model are kept as
//!    they are (thinking with a signature is kept even when its text is empty).
//! 3. **Failed turns** (stop reason `error` or `aborted`) are skipped.
//! 4. **Orphaned tool calls**, with no result before the next user or assistant message (or
//!    the end), get a synthetic error result `"No result provided"`.
//!
//! ```
//! use pi_engine::providers::transform::transform_messages;
//! use pi_engine::{AssistantContent, AssistantMessage, Message, Model, StopReason, UserMessage};
//!
//! let model = Model::new("claude-x", "anthropic-messages", "anthropic", "");
//! let other = AssistantMessage::new("openai-responses", "openai", "gpt-x")
//!     .with_content(vec![
//!         AssistantContent::thinking("let me think"),
//!         AssistantContent::tool_call("call_1|fc_1", "read", serde_json::json!({"path": "a"})),
//!     ])
//!     .with_stop_reason(StopReason::ToolUse);
//! let messages = vec![Message::from(UserMessage::text("hi")), Message::from(other)];
//! let anthropic_ids = |id: &str, _: &Model, _: &AssistantMessage| id.replace('|', "_");
//! let out = transform_messages(&messages, &model, Some(&anthropic_ids));
//! let Message::Assistant(replayed) = out[1].as_ref() else { unreachable!() };
//! assert!(matches!(&replayed.content[0], AssistantContent::Text(t) if t.text == "let me think"));
//! assert_eq!(replayed.tool_calls().next().unwrap().id, "call_1_fc_1");
//! // The call had no result: a synthetic one follows it.
//! let Message::ToolResult(result) = out[2].as_ref() else { unreachable!() };
//! assert_eq!((result.tool_call_id.as_str(), result.is_error), ("call_1_fc_1", true));
//! ```

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

#[cfg(test)]
use crate::llm::message::Extra;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, Message, TextContent, ToolResultMessage,
    UserContent,
};
use crate::llm::model::Model;

/// Placeholder for a user image sent to a model without image input.
pub const USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
/// Placeholder for a tool-result image sent to a model without image input.
pub const TOOL_IMAGE_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";
/// The text of the synthetic result of a tool call that never got one.
pub const NO_RESULT: &str = "No result provided";

/// Logs that a content block of a type this crate does not know (read from a session written by
/// a newer pi) is not sent to the model. Every request builder skips such blocks and calls this.
pub(crate) fn skip_unknown_block(block_type: &str, api: &str) {
    tracing::warn!(
        block_type,
        api,
        "a content block of an unknown type is not sent to the model"
    );
}

/// [`skip_unknown_block`] for each block of an unknown type in `content` (for builders that
/// read a tool result's text and images without matching every block).
pub(crate) fn skip_unknown_blocks(content: &[Content], api: &str) {
    for block in content {
        if let Content::Unknown(_) = block {
            skip_unknown_block(block.block_type(), api);
        }
    }
}

/// A provider's rule for tool-call ids of other models: `(id, target model, the message the
/// call is in) -> id the provider accepts`.
pub type NormalizeToolCallId<'f> = &'f dyn Fn(&str, &Model, &AssistantMessage) -> String;

/// Prepares `messages` for `model` (see the [module documentation](self)). Messages that
/// need no change are borrowed, not copied.
pub fn transform_messages<'a>(
    messages: &'a [Message],
    model: &Model,
    normalize_tool_call_id: Option<NormalizeToolCallId<'_>>,
) -> Vec<Cow<'a, Message>> {
    let vision = model.supports_images();
    let mut id_map: HashMap<String, String> = HashMap::new();

    // First pass: images, foreign assistant content, tool-call ids.
    let transformed = messages.iter().map(|message| match message {
        Message::User(user) => match &user.content {
            UserContent::Blocks(blocks) if !vision && has_image(blocks) => {
                let mut user = user.clone();
                user.content = UserContent::Blocks(replace_images(blocks, USER_IMAGE_PLACEHOLDER));
                Cow::Owned(Message::User(user))
            }
            _ => Cow::Borrowed(message),
        },
        Message::ToolResult(result) => {
            let new_id = id_map
                .get(&result.tool_call_id)
                .filter(|id| **id != result.tool_call_id);
            let needs_images = !vision && has_image(&result.content);
            if new_id.is_none() && !needs_images {
                return Cow::Borrowed(message);
            }
            let mut result = result.clone();
            if let Some(id) = new_id {
                result.tool_call_id.clone_from(id);
            }
            if needs_images {
                result.content = replace_images(&result.content, TOOL_IMAGE_PLACEHOLDER);
            }
            Cow::Owned(Message::ToolResult(result))
        }
        Message::Assistant(assistant) => {
            let same_model = assistant.provider == model.provider
                && assistant.api == model.api
                && assistant.model == model.id;
            if same_model {
                return same_model_assistant(message, assistant);
            }
            let content = assistant
                .content
                .iter()
                .filter_map(|block| match block {
                    AssistantContent::Thinking(t) => {
                        if t.is_redacted() || t.thinking.trim().is_empty() {
                            None
                        } else {
                            Some(AssistantContent::Text(TextContent::new(t.thinking.clone())))
                        }
                    }
                    AssistantContent::Text(t) => {
                        Some(AssistantContent::Text(TextContent::new(t.text.clone())))
                    }
                    AssistantContent::ToolCall(call) => {
                        let mut call = call.clone();
                        call.thought_signature = None;
                        if let Some(normalize) = normalize_tool_call_id {
                            let id = normalize(&call.id, model, assistant);
                            if id != call.id {
                                id_map.insert(call.id.clone(), id.clone());
                                call.id = id;
                            }
                        }
                        Some(AssistantContent::ToolCall(call))
                    }
                    // Kept: the request builder skips it (with a warning).
                    AssistantContent::Unknown(_) => Some(block.clone()),
                })
                .collect();
            let mut assistant = assistant.clone();
            assistant.content = content;
            Cow::Owned(Message::Assistant(assistant))
        }
    });
    // `transformed` borrows `id_map` mutably while it runs; collect before the second pass.
    let transformed: Vec<Cow<'a, Message>> = transformed.collect();

    // Second pass: skip failed turns, answer orphaned tool calls.
    let mut out: Vec<Cow<'a, Message>> = Vec::with_capacity(transformed.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let flush = |out: &mut Vec<Cow<'a, Message>>,
                 pending: &mut Vec<(String, String)>,
                 answered: &mut HashSet<String>| {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                let result = ToolResultMessage::new(id, name, vec![Content::text(NO_RESULT)], true);
                out.push(Cow::Owned(Message::ToolResult(result)));
            }
        }
        answered.clear();
    };
    for message in transformed {
        match message.as_ref() {
            Message::Assistant(assistant) => {
                flush(&mut out, &mut pending, &mut answered);
                if assistant.stop_reason.is_failure() {
                    continue;
                }
                let calls: Vec<(String, String)> = assistant
                    .tool_calls()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect();
                if !calls.is_empty() {
                    pending = calls;
                    answered.clear();
                }
                out.push(message);
            }
            Message::ToolResult(result) => {
                answered.insert(result.tool_call_id.clone());
                out.push(message);
            }
            Message::User(_) => {
                flush(&mut out, &mut pending, &mut answered);
                out.push(message);
            }
        }
    }
    flush(&mut out, &mut pending, &mut answered);
    out
}

/// Same model: thinking without a signature and with no text is dropped, the rest is kept.
fn same_model_assistant<'a>(
    message: &'a Message,
    assistant: &AssistantMessage,
) -> Cow<'a, Message> {
    let droppable = |block: &AssistantContent| match block {
        AssistantContent::Thinking(t) => {
            !t.is_redacted()
                && t.thinking_signature.as_deref().is_none_or(str::is_empty)
                && t.thinking.trim().is_empty()
        }
        _ => false,
    };
    if !assistant.content.iter().any(droppable) {
        return Cow::Borrowed(message);
    }
    let mut assistant = assistant.clone();
    assistant.content.retain(|b| !droppable(b));
    Cow::Owned(Message::Assistant(assistant))
}

fn has_image(blocks: &[Content]) -> bool {
    blocks.iter().any(|b| matches!(b, Content::Image(_)))
}

/// Images become `placeholder`; an image right after a placeholder adds nothing.
fn replace_images(blocks: &[Content], placeholder: &str) -> Vec<Content> {
    let mut out = Vec::with_capacity(blocks.len());
    let mut previous_was_placeholder = false;
    for block in blocks {
        match block {
            Content::Image(_) => {
                if !previous_was_placeholder {
                    out.push(Content::text(placeholder));
                }
                previous_was_placeholder = true;
            }
            other => {
                previous_was_placeholder = other.as_text() == Some(placeholder);
                out.push(other.clone());
            }
        }
    }
    out
}

/// For the request builders' tests: a context holding blocks of unknown types in every place
/// one can be (user, assistant of `model` and of another model, tool result, messages of only
/// unknown blocks), and the same context without them. A provider's request for the first
/// must equal its request for the second.
#[cfg(test)]
#[allow(dead_code)]
pub(crate) fn contexts_with_and_without_unknown_blocks(
    model: &Model,
) -> (crate::llm::message::Context, crate::llm::message::Context) {
    use crate::llm::message::{Context, StopReason, ToolCall, UserMessage};
    let unknown = |n: u32| -> Extra {
        serde_json::json!({"type": "futureBlock", "n": n, "payload": {"x": [1, 2]}})
            .as_object()
            .cloned()
            .unwrap_or_default()
    };
    let call = |id: &str| {
        AssistantContent::ToolCall(ToolCall::new(id, "read", serde_json::json!({"path": "a"})))
    };
    let reply = |api: &str, provider: &str, id: &str, content: Vec<AssistantContent>| {
        AssistantMessage::new(api, provider, id)
            .with_content(content)
            .with_stop_reason(StopReason::ToolUse)
            .with_timestamp(2)
    };
    fn keep<T>(b: bool, block: T) -> Option<T> {
        b.then_some(block)
    }
    let full = |with: bool| {
        let user = UserMessage::blocks(
            [
                Some(Content::text("hi")),
                keep(with, Content::Unknown(unknown(1))),
            ]
            .into_iter()
            .flatten()
            .collect(),
        )
        .with_timestamp(1);
        let own = reply(
            &model.api,
            &model.provider,
            &model.id,
            [
                keep(with, AssistantContent::Unknown(unknown(2))),
                Some(AssistantContent::text("reading")),
                Some(call("call_1")),
                keep(with, AssistantContent::Unknown(unknown(3))),
            ]
            .into_iter()
            .flatten()
            .collect(),
        );
        let result = |id: &str, extra: bool| {
            ToolResultMessage::new(
                id,
                "read",
                [
                    Some(Content::text("ok")),
                    keep(extra, Content::Unknown(unknown(4))),
                ]
                .into_iter()
                .flatten()
                .collect(),
                false,
            )
            .with_timestamp(3)
        };
        let other = reply(
            "other-api",
            "other",
            "other-model",
            [
                Some(AssistantContent::text("more")),
                keep(with, AssistantContent::Unknown(unknown(5))),
                Some(call("call_2")),
            ]
            .into_iter()
            .flatten()
            .collect(),
        );
        let mut context = Context::new()
            .with_system_prompt("sys")
            .with_message(user)
            .with_message(own)
            .with_message(result("call_1", with))
            .with_message(other)
            .with_message(result("call_2", with));
        if with {
            // Messages with nothing but unknown blocks.
            context = context
                .with_message(
                    UserMessage::blocks(vec![Content::Unknown(unknown(6))]).with_timestamp(4),
                )
                .with_message(reply(
                    &model.api,
                    &model.provider,
                    &model.id,
                    vec![AssistantContent::Unknown(unknown(7))],
                ));
        }
        context.with_message(UserMessage::text("last").with_timestamp(5))
    };
    (full(true), full(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::{StopReason, ThinkingContent, ToolCall, UserMessage};
    use crate::llm::model::InputModality;
    use serde_json::json;

    fn target() -> Model {
        Model::new("claude", "anthropic-messages", "anthropic", "")
    }

    fn assistant(model: &str, content: Vec<AssistantContent>) -> AssistantMessage {
        AssistantMessage::new("anthropic-messages", "anthropic", model)
            .with_content(content)
            .with_stop_reason(StopReason::ToolUse)
    }

    fn result(id: &str) -> Message {
        ToolResultMessage::new(id, "read", vec![Content::text("ok")], false).into()
    }

    fn ids(out: &[Cow<'_, Message>]) -> Vec<String> {
        out.iter()
            .map(|m| match m.as_ref() {
                Message::User(_) => "user".to_owned(),
                Message::Assistant(a) => format!("assistant:{}", a.content.len()),
                Message::ToolResult(r) => format!("result:{}:{}", r.tool_call_id, r.is_error),
            })
            .collect()
    }

    #[test]
    fn images_become_placeholders_for_text_models() {
        let messages: Vec<Message> = vec![
            UserMessage::blocks(vec![
                Content::text("look"),
                Content::image("AAAA", "image/png"),
                Content::image("BBBB", "image/png"),
            ])
            .into(),
            ToolResultMessage::new("t", "read", vec![Content::image("A", "image/png")], false)
                .into(),
        ];
        let out = transform_messages(&messages, &target(), None);
        let Message::User(u) = out[0].as_ref() else {
            panic!()
        };
        assert_eq!(
            u.content,
            UserContent::Blocks(vec![
                Content::text("look"),
                Content::text(USER_IMAGE_PLACEHOLDER)
            ])
        );
        let Message::ToolResult(r) = out[1].as_ref() else {
            panic!()
        };
        assert_eq!(r.content, vec![Content::text(TOOL_IMAGE_PLACEHOLDER)]);
        let vision = target().with_input(vec![InputModality::Text, InputModality::Image]);
        let out = transform_messages(&messages, &vision, None);
        assert!(matches!(out[0], Cow::Borrowed(_)));
    }

    #[test]
    fn foreign_thinking_and_signatures() {
        let mut call = ToolCall::new("a|b", "read", json!({}));
        call.thought_signature = Some("sig".into());
        let foreign = AssistantMessage::new("google-generative-ai", "google", "gemini")
            .with_content(vec![
                AssistantContent::Thinking(ThinkingContent::new("secret").redacted()),
                AssistantContent::Thinking(ThinkingContent::new("  ")),
                AssistantContent::Thinking(ThinkingContent::new("idea").with_signature("s")),
                AssistantContent::Text(TextContent::new("hi").with_signature("ts")),
                AssistantContent::ToolCall(call),
            ])
            .with_stop_reason(StopReason::ToolUse);
        let messages = vec![foreign.into(), result("a|b")];
        let normalize = |id: &str, _: &Model, _: &AssistantMessage| id.replace('|', "_");
        let out = transform_messages(&messages, &target(), Some(&normalize));
        let Message::Assistant(a) = out[0].as_ref() else {
            panic!()
        };
        assert_eq!(
            serde_json::to_value(&a.content).unwrap(),
            json!([
                {"type": "text", "text": "idea"},
                {"type": "text", "text": "hi"},
                {"type": "toolCall", "id": "a_b", "name": "read", "arguments": {}}
            ])
        );
        assert_eq!(ids(&out)[1], "result:a_b:false");
    }

    #[test]
    fn same_model_keeps_signatures_and_drops_empty_unsigned_thinking() {
        let own = assistant(
            "claude",
            vec![
                AssistantContent::Thinking(ThinkingContent::new("").with_signature("enc")),
                AssistantContent::Thinking(ThinkingContent::new("")),
                AssistantContent::Thinking(ThinkingContent::new("x").redacted()),
                AssistantContent::tool_call("a|b", "read", json!({})),
            ],
        );
        let messages = vec![own.into(), result("a|b")];
        let normalize = |id: &str, _: &Model, _: &AssistantMessage| id.replace('|', "_");
        let out = transform_messages(&messages, &target(), Some(&normalize));
        assert_eq!(ids(&out), vec!["assistant:3", "result:a|b:false"]);
    }

    #[test]
    fn failed_turns_skipped_and_orphans_answered() {
        let ok = assistant(
            "claude",
            vec![
                AssistantContent::tool_call("t1", "read", json!({})),
                AssistantContent::tool_call("t2", "read", json!({})),
            ],
        );
        let failed = assistant(
            "claude",
            vec![AssistantContent::tool_call("t3", "read", json!({}))],
        )
        .with_stop_reason(StopReason::Error);
        let aborted = assistant("claude", vec![AssistantContent::text("par")])
            .with_stop_reason(StopReason::Aborted);
        let last = assistant(
            "claude",
            vec![AssistantContent::tool_call("t4", "read", json!({}))],
        );
        let messages = vec![
            UserMessage::text("go").into(),
            ok.into(),
            result("t1"),
            failed.into(),
            aborted.into(),
            UserMessage::text("again").into(),
            last.into(),
        ];
        let out = transform_messages(&messages, &target(), None);
        assert_eq!(
            ids(&out),
            vec![
                "user",
                "assistant:2",
                "result:t1:false",
                "result:t2:true",
                "user",
                "assistant:1",
                "result:t4:true",
            ]
        );
        let Message::ToolResult(r) = out[3].as_ref() else {
            panic!()
        };
        assert_eq!(r.text(), NO_RESULT);
        assert_eq!(r.tool_name, "read");
    }
}
