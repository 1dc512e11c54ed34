//! Anthropic stream decoding where ours deliberately differs from pi-ai 0.73.1 (each case is
//! listed in tests/conformance/deviations.json) or goes beyond it. The recorded streams are
//! replayed by the local server of tests/support.
#![cfg(feature = "anthropic")]

mod support;

use futures::StreamExt;
use pi_engine::providers::anthropic::AnthropicProvider;
use pi_engine::{
    ApiProvider, AssistantContent, AssistantMessage, AssistantMessageEvent, Context, ErrorKind,
    Message, Model, StopReason, StreamOptions, UserMessage,
};
use serde_json::json;
use support::{MockServer, Reply, anthropic_sse};

/// Replays a fixture (raw SSE, or one payload per line) and returns the events and the
/// final message.
async fn replay(fixture: &str) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let text = std::fs::read_to_string(format!("tests/fixtures/anthropic/{fixture}")).unwrap();
    let sse = if text.starts_with("event:") {
        text
    } else {
        let payloads: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        anthropic_sse(&payloads)
    };
    let server = MockServer::start(vec![Reply::sse(&[sse])]).await;
    let model = Model::new("replay", "anthropic-messages", "replay", server.url());
    let context = Context::new().with_message(UserMessage::text("replay"));
    let mut stream = AnthropicProvider::new().stream(
        &model,
        &context,
        &StreamOptions::new().with_api_key("dummy"),
    );
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    (events, stream.result().await)
}

fn tool_json(message: &AssistantMessage, index: usize) -> serde_json::Value {
    let block = &message.content[index];
    assert!(matches!(block, AssistantContent::ToolCall(_)), "{block:?}");
    serde_json::to_value(block).unwrap()
}

#[tokio::test]
async fn spliced_message_start_routes_deltas_to_the_newest_block() {
    let (events, message) = replay("spliced-message-start.chunks.txt").await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.response_id.as_deref(), Some("msg_second"));
    // The cut-off first call keeps what arrived for it, and nothing else.
    assert_eq!(
        tool_json(&message, 1),
        json!({"type": "toolCall", "id": "toolu_first", "name": "test-tool", "arguments": {"value": "Spark"}})
    );
    // The completed second call has its own arguments and no scratch fields.
    assert_eq!(
        tool_json(&message, 3),
        json!({"type": "toolCall", "id": "toolu_second", "name": "test-tool", "arguments": {"value": "Sparkle Day"}})
    );
    let ends: Vec<(usize, String)> = events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::ToolcallEnd {
                content_index,
                tool_call,
            } => Some((*content_index, tool_call.id.clone())),
            _ => None,
        })
        .collect();
    // The first call, cut off, is ended when the second message starts a block at its
    // index (with what arrived for it), so every started block has its end.
    assert_eq!(
        ends,
        [
            (1, "toolu_first".to_owned()),
            (3, "toolu_second".to_owned())
        ]
    );
    // The thinking signatures of both messages are kept on their blocks.
    let signatures: Vec<Option<&str>> = message
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantContent::Thinking(t) => Some(t.thinking_signature.as_deref()),
            _ => None,
        })
        .collect();
    assert_eq!(signatures, [Some("sig-first"), Some("sig-second")]);
}

#[tokio::test]
async fn unfinished_tool_call_has_no_scratch_fields() {
    let (events, message) = replay("incomplete_partial_json_response.txt").await;
    assert_eq!(message.stop_reason, StopReason::Length);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AssistantMessageEvent::ToolcallEnd { .. })),
        "the block never stopped"
    );
    let call = tool_json(&message, 1);
    assert_eq!(
        call["arguments"],
        json!({"filename": "taxes.txt", "lines_of_text": [
            "# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s", "", "## INTRODUCTION", "", "Filing taxes"
        ]})
    );
    let mut keys: Vec<&str> = call
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["arguments", "id", "name", "type"]);
    // What a session file would store reads back equal.
    let stored = serde_json::to_string(&Message::from(message.clone())).unwrap();
    assert!(!stored.contains("partialJson") && !stored.contains("\"index\""));
}

#[tokio::test]
async fn refusal_is_a_refused_error_with_the_providers_explanation() {
    let (events, message) = replay("refusal_response.txt").await;
    assert_eq!(
        events.last().map(AssistantMessageEvent::kind),
        Some("error")
    );
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Refused);
    // pi-ai says "An unknown error occurred".
    assert_eq!(
        error.message(),
        "The model refused to answer (stop reason: refusal, category: cyber): This request was refused due to policy."
    );
    assert_eq!(message.usage.input, 20);

    let (_, message) = replay("anthropic-refusal.chunks.txt").await;
    assert_eq!(message.error().unwrap().kind(), ErrorKind::Refused);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("The model refused to answer (stop reason: refusal, category: cyber): "),
        "{:?}",
        message.error_message
    );
}
