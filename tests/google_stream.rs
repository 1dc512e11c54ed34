//! Gemini / Vertex stream decoding against the local server of tests/support: where ours
//! deliberately differs from pi-ai 0.73.1 (Vertex's streamed arguments, listed in
//! tests/conformance/deviations.json; blocked prompts and replies) and what pi's goldens do
//! not cover (signatures, finish reasons, usage, ids, errors inside the stream, Vertex
//! endpoints end to end).
#![cfg(feature = "google")]

#[path = "support/gemini.rs"]
mod gemini;
mod support;

use futures::StreamExt;
use gemini::{fixture_chunks, gemini_sse};
use pi_engine::providers::google::GoogleProvider;
use pi_engine::providers::google_vertex::VertexProvider;
use pi_engine::{
    ApiProvider, AssistantContent, AssistantMessage, AssistantMessageEvent as E, Context,
    ErrorKind, Model, StopReason, StreamOptions, UserMessage,
    llm::{ModelCost, RetryPolicy},
};
use serde_json::{Value, json};
use support::{MockServer, Reply};

fn model(base: &str) -> Model {
    Model::new(
        "gemini-3-pro-preview",
        "google-generative-ai",
        "google",
        format!("{base}/v1beta"),
    )
    .with_reasoning(true)
    .with_cost(ModelCost::new(3.0, 15.0, 0.3, 3.75))
}

fn options() -> StreamOptions {
    StreamOptions::new()
        .with_api_key("g-key")
        .with_retry(RetryPolicy::none())
}

/// Streams `chunks` (JSON chunks, framed as SSE) through the Gemini provider.
async fn replay<S: AsRef<str>>(chunks: &[S]) -> (Vec<E>, AssistantMessage) {
    replay_sse(&gemini_sse(chunks)).await
}

async fn replay_sse(sse: &str) -> (Vec<E>, AssistantMessage) {
    let server = MockServer::start(vec![Reply::sse(&[sse])]).await;
    let context = Context::new().with_message(UserMessage::text("hi"));
    let mut stream = GoogleProvider::new().stream(&model(server.url()), &context, &options());
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    (events, stream.result().await)
}

fn kinds(events: &[E]) -> Vec<&'static str> {
    events.iter().map(E::kind).collect()
}

/// The concatenated `toolcall_delta` text of each tool call, by content index.
fn streamed_arguments(events: &[E]) -> Vec<(usize, Value)> {
    let mut texts: Vec<(usize, String)> = Vec::new();
    for e in events {
        if let E::ToolcallDelta {
            content_index,
            delta,
        } = e
        {
            match texts.iter_mut().find(|(i, _)| i == content_index) {
                Some((_, t)) => t.push_str(delta),
                None => texts.push((*content_index, delta.clone())),
            }
        }
    }
    texts
        .into_iter()
        .map(|(i, t)| (i, serde_json::from_str(&t).unwrap()))
        .collect()
}

fn calls(message: &AssistantMessage) -> Vec<(String, Value)> {
    message
        .tool_calls()
        .map(|c| (c.name.clone(), Value::Object(c.arguments.clone())))
        .collect()
}

/// A synthesized id: `<name>_<ms>_<n>`, as pi makes them.
fn is_synthetic(id: &str, name: &str) -> bool {
    let Some(rest) = id.strip_prefix(&format!("{name}_")) else {
        return false;
    };
    let mut parts = rest.split('_');
    let ms = parts.next().unwrap_or("");
    let n = parts.next().unwrap_or("");
    ms.len() >= 10
        && ms.bytes().all(|b| b.is_ascii_digit())
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
        && parts.next().is_none()
}

/// Each streamed call's deltas add up to its final arguments, and its `toolcall_end`
/// carries them.
fn assert_streams_match_calls(events: &[E], message: &AssistantMessage) {
    for (index, streamed) in streamed_arguments(events) {
        let AssistantContent::ToolCall(call) = &message.content[index] else {
            panic!("block {index} is not a tool call");
        };
        assert_eq!(
            streamed,
            Value::Object(call.arguments.clone()),
            "block {index}"
        );
        let end = events.iter().find_map(|e| match e {
            E::ToolcallEnd {
                content_index,
                tool_call,
            } if *content_index == index => Some(tool_call),
            _ => None,
        });
        assert_eq!(end, Some(call));
    }
}

// ------------------------------------------------------------------------------------------
// Deviations: Vertex streamed function-call arguments (pi makes one call per fragment).

#[tokio::test]
async fn deviation_streamed_arguments_make_one_call_each() {
    let (events, message) = replay(&fixture_chunks(
        "google-stream-tool-call-arguments.chunks.txt",
    ))
    .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        calls(&message),
        [
            ("getWeather".to_owned(), json!({"location": "Boston"})),
            (
                "getWeather".to_owned(),
                json!({"location": "San Francisco"})
            ),
        ]
    );
    assert_streams_match_calls(&events, &message);
    let ids: Vec<&str> = message.tool_calls().map(|c| c.id.as_str()).collect();
    assert!(
        ids.iter().all(|id| is_synthetic(id, "getWeather")),
        "{ids:?}"
    );
    assert_ne!(ids[0], ids[1]);
    // The signature rode on the first call's first part only (parallel calls).
    let signatures: Vec<bool> = message
        .tool_calls()
        .map(|c| c.thought_signature.is_some())
        .collect();
    assert_eq!(signatures, [true, false]);
    // Arguments arrive as they stream, not in one piece at the end.
    let deltas = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                E::ToolcallDelta {
                    content_index: 0,
                    ..
                }
            )
        })
        .count();
    assert!(deltas >= 2, "{:?}", kinds(&events));
    assert_eq!(message.usage.input, 26);
    assert_eq!(message.usage.output, 23 + 132);
}

#[tokio::test]
async fn deviation_no_args_and_streamed_calls_after_thinking() {
    let (events, message) = replay(&fixture_chunks(
        "google-stream-no-args-tool-call.chunks.txt",
    ))
    .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        calls(&message),
        [
            ("read_theme".to_owned(), json!({})),
            ("read_screen".to_owned(), json!({"id": "A"})),
            ("read_screen".to_owned(), json!({"id": "B"})),
            ("read_screen".to_owned(), json!({"id": "C"})),
        ]
    );
    assert_streams_match_calls(&events, &message);
    // Thinking first, and the trailing empty text part still makes a block, as in pi.
    assert!(matches!(message.content[0], AssistantContent::Thinking(_)));
    assert!(matches!(&message.content[5], AssistantContent::Text(t) if t.text.is_empty()));
    assert_eq!(message.content.len(), 6);
}

#[tokio::test]
async fn deviation_array_arguments_without_a_terminal_part() {
    let (events, message) = replay(&fixture_chunks(
        "google-stream-tool-call-array-arguments-missing-terminal-function-call.chunks.txt",
    ))
    .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        calls(&message),
        [(
            "writeItems".to_owned(),
            json!({"operations": [
                {"action": "add", "description": "Fresh red apple", "itemid": "apple_001", "price": 0.5},
                {"action": "add", "description": "Ripe yellow banana", "itemid": "banana_001", "price": 0.3}
            ]})
        )]
    );
    assert_streams_match_calls(&events, &message);
}

#[tokio::test]
async fn deviation_nested_vertex_arguments() {
    let (events, message) = replay(&fixture_chunks(
        "google-vertex-stream-tool-call-arguments-nested.1.chunks.txt",
    ))
    .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let calls = calls(&message);
    assert_eq!(calls.len(), 1);
    let (name, args) = &calls[0];
    assert_eq!(name, "cookRecipe");
    assert_eq!(args["recipe"]["name"], "Lasagna");
    assert_eq!(args["recipe"]["ingredients"].as_array().unwrap().len(), 10);
    assert_eq!(
        args["recipe"]["ingredients"][9],
        json!({"amount": "1/2 tsp", "name": "Pepper"})
    );
    assert_eq!(
        args["recipe"]["steps"][1],
        "Cook lasagna noodles according to package directions, drain and set aside."
    );
    assert_eq!(args["recipe"]["steps"].as_array().unwrap().len(), 10);
    assert_streams_match_calls(&events, &message);
    assert_eq!(message.usage.total_tokens, Some(1741));
}

// ------------------------------------------------------------------------------------------
// Blocks, signatures, ids, usage

#[tokio::test]
async fn thinking_then_text_with_signatures_and_usage() {
    let (events, message) = replay(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"Let me ","thought":true,"thoughtSignature":"c2lnMQ=="}],"role":"model"}}],"responseId":"r1"}"#,
        r#"{"candidates":[{"content":{"parts":[{"text":"think.","thought":true}],"role":"model"}}],"responseId":"r2"}"#,
        // Text, then a functionCall in the same chunk: the text block ends with all of it.
        r#"{"candidates":[{"content":{"parts":[{"text":"Answer","thoughtSignature":""},{"text":" here","thoughtSignature":"dHM="},{"functionCall":{"name":"read","args":{"path":"a","n":5.0}},"thoughtSignature":"Y2FsbA=="}],"role":"model"}}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"text":"more"}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":40,"candidatesTokenCount":7,"thoughtsTokenCount":3,"totalTokenCount":110}}"#,
    ])
    .await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "text_start",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert!(matches!(&events[8], E::TextEnd { content, .. } if content == "Answer here"));
    // pi writes the arguments with JSON.stringify: 5.0 is 5.
    assert!(
        matches!(&events[10], E::ToolcallDelta { delta, .. } if delta == r#"{"path":"a","n":5}"#)
    );
    let AssistantContent::Thinking(thinking) = &message.content[0] else {
        panic!()
    };
    assert_eq!(thinking.thinking, "Let me think.");
    assert_eq!(thinking.thinking_signature.as_deref(), Some("c2lnMQ=="));
    let AssistantContent::Text(text) = &message.content[1] else {
        panic!()
    };
    assert_eq!(text.text_signature.as_deref(), Some("dHM="));
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.thought_signature.as_deref(), Some("Y2FsbA=="));
    assert!(is_synthetic(&call.id, "read"), "{}", call.id);
    let AssistantContent::Text(last) = &message.content[3] else {
        panic!()
    };
    assert_eq!(last.text_signature, None);
    // A tool call anywhere makes the reply toolUse.
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.response_id.as_deref(), Some("r1"));
    let u = &message.usage;
    assert_eq!(
        (u.input, u.output, u.cache_read, u.cache_write),
        (60, 10, 40, 0)
    );
    assert_eq!(u.total_tokens, Some(110));
    assert_eq!(u.cost.input, 3.0 / 1e6 * 60.0);
    assert_eq!(u.cost.cache_read, 0.3 / 1e6 * 40.0);
    assert_eq!(
        u.cost.total,
        u.cost.input + u.cost.output + u.cost.cache_read
    );
}

#[tokio::test]
async fn provided_ids_are_kept_and_duplicates_replaced() {
    let (_, message) = replay(&[
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"id":"c1","name":"a","args":{}}},{"functionCall":{"id":"c1","name":"b","args":{}}},{"functionCall":{"args":{"x":1}}}],"role":"model"},"finishReason":"STOP"}]}"#,
    ])
    .await;
    let ids: Vec<&str> = message.tool_calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids[0], "c1");
    assert!(is_synthetic(ids[1], "b"), "{ids:?}");
    // No name: pi's "undefined" prefix and an empty name.
    assert!(is_synthetic(ids[2], "undefined"), "{ids:?}");
    assert_eq!(message.tool_calls().nth(2).unwrap().name, "");
}

#[tokio::test]
async fn recorded_text_and_reasoning_streams() {
    for fixture in ["google-text.chunks.txt", "google-reasoning.chunks.txt"] {
        let (events, message) = replay(&fixture_chunks(fixture)).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{fixture}");
        assert!(message.text().contains("strawberry"), "{fixture}");
        assert!(
            matches!(&message.content[0], AssistantContent::Text(t) if t.text_signature.is_some())
        );
        assert_eq!(events.last().map(E::kind), Some("done"));
    }
}

// ------------------------------------------------------------------------------------------
// Finish reasons and failures

#[tokio::test]
async fn max_tokens_is_length() {
    let (_, message) = replay(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"cut"}],"role":"model"},"finishReason":"MAX_TOKENS"}]}"#,
    ])
    .await;
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(message.text(), "cut");
}

#[tokio::test]
async fn blocked_reply_is_a_refusal_that_keeps_the_text() {
    let (events, message) = replay(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"Once upon"}],"role":"model"}}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"RECITATION","finishMessage":"Quoted a book."}]}"#,
    ])
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "Once upon");
    let error = message.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Refused);
    assert_eq!(
        error.message(),
        "The response was blocked (finish reason: RECITATION): Quoted a book."
    );
    // The text block is closed before the error, as pi does.
    assert_eq!(kinds(&events)[events.len() - 2..], ["text_end", "error"]);

    // With a tool call, pi's rule makes it toolUse whatever the reason.
    let (_, message) = replay(&[
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}],"role":"model"},"finishReason":"MALFORMED_FUNCTION_CALL"}]}"#,
    ])
    .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert!(message.error_message.is_none());
}

#[tokio::test]
async fn unknown_finish_reason_ends_the_stream_as_pi_does() {
    let (events, message) = replay(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"finishReason":"SOMETHING_NEW"}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"text":" never read"}],"role":"model"}}]}"#,
    ])
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Unhandled stop reason: SOMETHING_NEW")
    );
    assert_eq!(message.text(), "hi");
    assert_eq!(events.last().map(E::kind), Some("error"));
}

#[tokio::test]
async fn blocked_prompt_is_a_refusal() {
    let (events, message) = replay(&[
        r#"{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"responseId":"b1"}"#,
    ])
    .await;
    assert_eq!(kinds(&events), ["start", "error"]);
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Refused);
    assert_eq!(error.message(), "The prompt was blocked (reason: SAFETY)");
    assert_eq!(message.usage.input, 8);
    assert_eq!(message.response_id.as_deref(), Some("b1"));
}

#[tokio::test]
async fn error_inside_the_stream() {
    let (_, message) = replay(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"partial"}],"role":"model"}}]}"#,
        r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#,
    ])
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "partial");
    assert_eq!(
        message.error_message.as_deref(),
        Some("UNAVAILABLE: The model is overloaded. Please try again later.")
    );
}

#[tokio::test]
async fn stream_cut_before_the_finish_reason_is_an_error() {
    let (events, message) = replay(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"half"}],"role":"model"}}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"w","willContinue":true}}],"role":"model"}}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.path","stringValue":"a.t","willContinue":true}],"willContinue":true}}],"role":"model"}}]}"#,
    ])
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error().unwrap().kind(),
        ErrorKind::InvalidResponse,
        "{:?}",
        message.error_message
    );
    // What arrived is kept, the open call closed with what it has.
    assert_eq!(message.text(), "half");
    assert_eq!(calls(&message), [("w".to_owned(), json!({"path": "a.t"}))]);
    assert!(events.iter().any(|e| matches!(e, E::ToolcallEnd { .. })));
}

#[tokio::test]
async fn unreadable_chunk_is_an_error() {
    let (_, message) = replay_sse("data: {\"candidates\": [\r\n\r\n").await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error().unwrap().kind(), ErrorKind::InvalidResponse);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Could not parse Gemini stream chunk")
    );
    // Keep-alive comments and blank events are not chunks.
    let (_, message) = replay_sse(
        ": keep-alive\r\n\r\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n",
    )
    .await;
    assert_eq!(message.text(), "ok");
    assert!(message.error_message.is_none());
}

#[tokio::test]
async fn http_error_status_keeps_googles_message() {
    let body = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}"#;
    let server = MockServer::start(vec![Reply::status(
        400,
        &[("content-type", "application/json")],
        body,
    )])
    .await;
    let context = Context::new().with_message(UserMessage::text("hi"));
    let message = GoogleProvider::new()
        .stream(&model(server.url()), &context, &options())
        .result()
        .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("400 INVALID_ARGUMENT: API key not valid. Please pass a valid API key.")
    );
}

// ------------------------------------------------------------------------------------------
// Vertex end to end

#[tokio::test]
async fn vertex_with_api_key_and_with_bearer_token() {
    let ok = gemini_sse(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP"}]}"#,
    ]);
    let server = MockServer::start(vec![Reply::sse(&[&ok]), Reply::sse(&[&ok])]).await;
    let vertex = Model::new(
        "gemini-2.5-flash",
        "google-vertex",
        "google-vertex",
        server.url(),
    );
    let context = Context::new().with_message(UserMessage::text("hi"));

    let reply = VertexProvider::new()
        .stream(&vertex, &context, &options().with_api_key("v-key"))
        .result()
        .await;
    assert_eq!(reply.text(), "ok", "{:?}", reply.error_message);
    assert_eq!(reply.api, "google-vertex");

    // stream_simple keeps the Vertex options (pi's drops them).
    let token = options()
        .with_api_key(pi_engine::llm::AMBIENT_CREDENTIALS)
        .with_reasoning(pi_engine::ThinkingLevel::Low)
        .with_extra("accessToken", "ya29.token".into())
        .with_extra("project", "p".into())
        .with_extra("location", "us-central1".into());
    let reply = VertexProvider::new()
        .stream_simple(&vertex, &context, &token)
        .result()
        .await;
    assert_eq!(reply.text(), "ok", "{:?}", reply.error_message);

    let requests = server.requests();
    let path = "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    assert_eq!(requests[0].path, path);
    assert_eq!(requests[0].header("x-goog-api-key"), Some("v-key"));
    assert_eq!(requests[1].path, path);
    assert_eq!(
        requests[1].header("authorization"),
        Some("Bearer ya29.token")
    );
    assert_eq!(requests[1].header("x-goog-api-key"), None);

    // No credentials at all: an auth error event, no request.
    let none = VertexProvider::new()
        .stream(
            &vertex,
            &context,
            &options()
                .with_api_key("gcp-vertex-credentials")
                .with_extra("project", "p".into())
                .with_extra("location", "l".into()),
        )
        .result()
        .await;
    assert!(none.error().unwrap().is_auth(), "{:?}", none.error_message);
    assert_eq!(server.requests().len(), 2);
}
