//! OpenAI Chat Completions stream decoding where ours deliberately differs from pi-ai 0.73.1
//! (each case is listed in tests/conformance/deviations.json) or goes beyond what the
//! conformance recordings cover: servers' variants of tool calls, usage and reasoning, and
//! the faults that are specific to this wire format (errors inside the stream, cut streams).
//! Streams are served by the local server of tests/support.
#![cfg(feature = "openai")]

mod support;

use std::time::Duration;

use futures::StreamExt;
use pi_engine::providers::openai_completions::OpenAiCompletionsProvider;
use pi_engine::{
    ApiProvider, AssistantContent, AssistantMessage, AssistantMessageEvent, Context, ErrorKind,
    Model, StopReason, StreamOptions, ToolCall, UserMessage,
    llm::{ModelCost, RetryPolicy},
};
use serde_json::{Value, json};
use support::{MockServer, Reply, Step};
use tokio::time::Instant;

fn model(url: &str) -> Model {
    Model::new(
        "replay-model",
        "openai-completions",
        "replay",
        format!("{url}/v1"),
    )
    .with_cost(ModelCost::new(3.0, 15.0, 0.3, 3.75))
}

fn options() -> StreamOptions {
    StreamOptions::new()
        .with_api_key("sk-test")
        .with_retry(RetryPolicy::none())
}

/// SSE text for `payloads` (one `data:` event each) and, when `done`, `[DONE]`.
fn sse(payloads: &[Value], done: bool) -> String {
    let mut out: String = payloads.iter().map(|p| format!("data: {p}\n\n")).collect();
    if done {
        out.push_str("data: [DONE]\n\n");
    }
    out
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-1", "model": "replay-model",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

async fn run_reply(
    reply: Reply,
    options: StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let server = MockServer::start(vec![reply]).await;
    let context = Context::new().with_message(UserMessage::text("replay"));
    let mut stream =
        OpenAiCompletionsProvider::new().stream(&model(server.url()), &context, &options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    (events, stream.result().await)
}

async fn run(text: &str) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    run_reply(Reply::sse(&[text]), options()).await
}

/// A recorded fixture: raw SSE, or one payload per line (framed, `[DONE]` added, as the
/// conformance server does).
async fn replay(fixture: &str) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let text = std::fs::read_to_string(format!("tests/fixtures/openai/{fixture}")).unwrap();
    if text.starts_with("data:") {
        return run(&text).await;
    }
    let payloads: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    run(&sse(&payloads, true)).await
}

fn kinds(events: &[AssistantMessageEvent]) -> Vec<&'static str> {
    events.iter().map(AssistantMessageEvent::kind).collect()
}

fn tool_calls(message: &AssistantMessage) -> Vec<&ToolCall> {
    message.tool_calls().collect()
}

fn assert_failed(message: &AssistantMessage, kind: ErrorKind) -> pi_engine::Error {
    assert_eq!(message.stop_reason, StopReason::Error, "{message:?}");
    let error = message.error().expect("a failed message has an error");
    assert_eq!(error.kind(), kind, "{error:?}");
    error
}

// ------------------------------------------------------------------------------------------
// Deviations from pi (tests/conformance/deviations.json)

#[tokio::test]
async fn n3_choices_follow_the_first_choice() {
    let (events, message) = replay("gpt4o-n3-multiple-choices.sse").await;
    // What choice 0 said, read from the recording itself.
    let raw =
        std::fs::read_to_string("tests/fixtures/openai/gpt4o-n3-multiple-choices.sse").unwrap();
    let mut want = String::new();
    let mut others = 0;
    for line in raw.lines().filter_map(|l| l.strip_prefix("data: ")) {
        let Ok(chunk) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        for choice in chunk["choices"].as_array().unwrap() {
            let content = choice["delta"]["content"].as_str().unwrap_or("");
            if choice["index"] == 0 {
                want.push_str(content);
            } else {
                others += content.len();
            }
        }
    }
    assert!(others > 0, "the recording has other choices");
    assert_eq!(message.text(), want);
    let parsed: Value =
        serde_json::from_str(&message.text()).expect("choice 0 alone is valid JSON");
    assert_eq!(parsed["city"], "San Francisco");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.content.len(), 1);
    // Usage counts every choice's tokens: they were all billed.
    assert_eq!((message.usage.input, message.usage.output), (79, 42));
    assert_eq!(kinds(&events).last(), Some(&"done"));
}

#[tokio::test]
async fn refusal_is_kept_and_reported_as_refused() {
    let (events, message) = replay("gpt4o-refusal.sse").await;
    assert_eq!(
        message.text(),
        "I'm sorry, I can't assist with that request."
    );
    let error = assert_failed(&message, ErrorKind::Refused);
    assert_eq!(
        error.message(),
        "The model refused to answer: I'm sorry, I can't assist with that request."
    );
    assert!(!error.is_retryable());
    assert_eq!(
        kinds(&events),
        ["start", "text_start"]
            .into_iter()
            .chain(std::iter::repeat_n("text_delta", 10))
            .chain(["text_end", "error"])
            .collect::<Vec<_>>()
    );
    assert_eq!((message.usage.input, message.usage.output), (79, 11));
}

#[tokio::test]
async fn mistral_content_parts_become_thinking_and_text() {
    let (events, message) = replay("mistral-reasoning.chunks.txt").await;
    let json = serde_json::to_value(&message.content).unwrap();
    assert_eq!(
        json,
        json!([
            {"type": "thinking", "thinking": "The user is asking for 2+2. This is basic arithmetic. 2+2=4."},
            {"type": "text", "text": "2 + 2 = 4"}
        ])
    );
    assert_eq!(
        kinds(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "text_start",
            "text_delta",
            "thinking_end",
            "text_end",
            "done"
        ]
    );
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(
        message.response_model.as_deref(),
        Some("magistral-medium-2507")
    );
}

// ------------------------------------------------------------------------------------------
// Variants beyond the recordings

#[tokio::test]
async fn tool_calls_keyed_by_index_or_by_id() {
    let text = sse(
        &[
            // First call: id and index, later fragments by index only.
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "read", "arguments": ""}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":"}}]}),
                None,
            ),
            // Second call: no index at all, fragments by id.
            chunk(
                json!({"tool_calls": [{"id": "call_b", "function": {"name": "bash", "arguments": "{\"command\""}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"id": "call_b", "function": {"arguments": ":\"ls\"}"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"a.txt\"}"}}]}),
                None,
            ),
            // Third: a server that numbers every call 0.
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_c", "function": {"name": "ls", "arguments": "{}"}}]}),
                Some("tool_calls"),
            ),
        ],
        true,
    );
    let (events, message) = run(&text).await;
    let calls: Vec<Value> = tool_calls(&message)
        .iter()
        .map(|c| json!([c.id, c.name, c.arguments]))
        .collect();
    assert_eq!(
        calls,
        [
            json!(["call_a", "read", {"path": "a.txt"}]),
            json!(["call_b", "bash", {"command": "ls"}]),
            json!(["call_c", "ls", {}]),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    // Every block ends at the end of the stream, in order.
    let ends: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::ToolcallEnd { content_index, .. } => Some(*content_index),
            _ => None,
        })
        .collect();
    assert_eq!(ends, [0, 1, 2]);
}

#[tokio::test]
async fn late_id_and_name_reach_the_final_call() {
    let text = sse(
        &[
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\":"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_late", "function": {"name": "late", "arguments": "1}"}}]}),
                Some("tool_calls"),
            ),
        ],
        true,
    );
    let (events, message) = run(&text).await;
    let end = events
        .iter()
        .find_map(|e| match e {
            AssistantMessageEvent::ToolcallEnd { tool_call, .. } => Some(tool_call.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!((end.id.as_str(), end.name.as_str()), ("call_late", "late"));
    assert_eq!(tool_calls(&message)[0].arguments["a"], 1);
    assert_eq!(tool_calls(&message)[0].id, "call_late");
}

#[tokio::test]
async fn reasoning_fields_and_openrouter_signatures() {
    let detail = json!({"type": "reasoning.encrypted", "id": "call_1", "data": "ENC", "format": "x", "index": 0});
    let text = sse(
        &[
            // chutes sends both fields: the first non-empty one wins.
            chunk(
                json!({"reasoning_content": "", "reasoning": "Let me", "reasoning_text": "dup"}),
                None,
            ),
            chunk(json!({"reasoning": " think."}), None),
            chunk(json!({"content": "Reading."}), None),
            chunk(
                json!({"reasoning_details": [detail, {"type": "reasoning.text", "text": "x"}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "read", "arguments": "{}"}}]}),
                Some("tool_calls"),
            ),
        ],
        true,
    );
    let (_, message) = run(&text).await;
    assert_eq!(
        serde_json::to_value(&message.content).unwrap(),
        json!([
            {"type": "thinking", "thinking": "Let me think.", "thinkingSignature": "reasoning"},
            {"type": "text", "text": "Reading."},
            {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {},
             "thoughtSignature": detail.to_string()}
        ])
    );

    // Replayed to the same model, the reasoning goes back in its field and the encrypted
    // detail with the call.
    let server = MockServer::start(vec![Reply::sse(&[sse(
        &[chunk(json!({"content": "ok"}), Some("stop"))],
        true,
    )])])
    .await;
    let mut replayed = message.clone();
    replayed.provider = "replay".into();
    let context = Context::new()
        .with_message(UserMessage::text("replay"))
        .with_message(replayed)
        .with_message(pi_engine::ToolResultMessage::new(
            "call_1",
            "read",
            vec![pi_engine::Content::text("file")],
            false,
        ));
    let reply = OpenAiCompletionsProvider::new()
        .stream(&model(server.url()), &context, &options())
        .result()
        .await;
    assert_eq!(reply.text(), "ok");
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"][1],
        json!({
            "role": "assistant",
            "content": "Reading.",
            "reasoning": "Let me think.",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
            "reasoning_details": [detail],
        })
    );
    assert_eq!(body["tools"], json!([]), "tool history without tools");
}

#[tokio::test]
async fn usage_variants() {
    // OpenRouter: cached tokens include this request's cache writes.
    let text = sse(
        &[
            chunk(json!({"content": "a"}), Some("stop")),
            json!({"id": "x", "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 50,
                   "prompt_tokens_details": {"cached_tokens": 800, "cache_write_tokens": 300}}}),
        ],
        true,
    );
    let (_, m) = run(&text).await;
    assert_eq!(
        (
            m.usage.input,
            m.usage.output,
            m.usage.cache_read,
            m.usage.cache_write
        ),
        (200, 50, 500, 300)
    );
    assert_eq!(m.usage.total_tokens, Some(1050));
    let cost = m.usage.cost;
    assert!(
        (cost.total - (200.0 * 3.0 + 50.0 * 15.0 + 500.0 * 0.3 + 300.0 * 3.75) / 1e6).abs() < 1e-12
    );

    // DeepSeek's prompt_cache_hit_tokens; Moonshot's usage inside the choice.
    let text = sse(
        &[
            json!({"id": "x", "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop",
                 "usage": {"prompt_tokens": 100, "completion_tokens": 7, "prompt_cache_hit_tokens": 60}}]}),
        ],
        true,
    );
    let (_, m) = run(&text).await;
    assert_eq!(
        (m.usage.input, m.usage.output, m.usage.cache_read),
        (40, 7, 60)
    );

    // Usage at the chunk level wins over the choice's; fractions and junk are tolerated.
    let text = sse(
        &[
            json!({"id": "x", "usage": {"prompt_tokens": 10.7, "completion_tokens": "n/a"},
                 "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop",
                              "usage": {"prompt_tokens": 99}}]}),
        ],
        true,
    );
    let (_, m) = run(&text).await;
    assert_eq!((m.usage.input, m.usage.output), (10, 0));
}

#[tokio::test]
async fn finish_reasons() {
    for (reason, stop) in [
        ("stop", StopReason::Stop),
        ("end", StopReason::Stop),
        ("length", StopReason::Length),
        ("tool_calls", StopReason::ToolUse),
        ("function_call", StopReason::ToolUse),
    ] {
        let (_, m) = run(&sse(&[chunk(json!({"content": "a"}), Some(reason))], true)).await;
        assert_eq!(m.stop_reason, stop, "{reason}");
    }
    let (events, m) = run(&sse(
        &[chunk(json!({"content": "partial"}), Some("content_filter"))],
        true,
    ))
    .await;
    let error = assert_failed(&m, ErrorKind::Refused);
    assert_eq!(error.message(), "Provider finish_reason: content_filter");
    assert_eq!(m.text(), "partial");
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "text_end", "error"]
    );
    let (_, m) = run(&sse(
        &[chunk(json!({"content": "a"}), Some("something_new"))],
        true,
    ))
    .await;
    assert_eq!(m.stop_reason, StopReason::Error);
    assert_eq!(
        m.error_message.as_deref(),
        Some("Provider finish_reason: something_new")
    );
}

#[tokio::test]
async fn response_id_and_model() {
    let text = sse(
        &[
            json!({"id": "", "model": "replay-model", "choices": [{"index": 0, "delta": {"content": "a"}}]}),
            json!({"id": "resp_1", "model": "replay-model-2025", "choices": [{"index": 0, "delta": {"content": "b"}}]}),
            json!({"id": "resp_2", "model": "other", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ],
        true,
    );
    let (_, m) = run(&text).await;
    assert_eq!(m.response_id.as_deref(), Some("resp_1"));
    assert_eq!(m.response_model.as_deref(), Some("replay-model-2025"));
    let (_, m) = run(&sse(&[chunk(json!({"content": "a"}), Some("stop"))], true)).await;
    assert_eq!(
        m.response_model, None,
        "the model asked for is not repeated"
    );
}

// ------------------------------------------------------------------------------------------
// Faults specific to this wire format (the generic ones are in tests/http_faults.rs)

#[tokio::test]
async fn error_inside_the_stream_keeps_the_partial_reply() {
    let text = sse(
        &[
            chunk(json!({"content": "Hello"}), None),
            json!({"error": {"message": "Provider returned error", "code": 502,
                             "metadata": {"raw": "upstream overloaded", "provider_name": "X"}}}),
            chunk(json!({"content": " never"}), None),
        ],
        true,
    );
    let (events, m) = run(&text).await;
    assert_eq!(m.stop_reason, StopReason::Error);
    let error = m.error().unwrap();
    assert!(
        error.message().contains("Provider returned error"),
        "{error:?}"
    );
    assert!(error.message().contains("upstream overloaded"), "{error:?}");
    assert_eq!(m.text(), "Hello");
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "error"]
    );
}

#[tokio::test]
async fn http_error_carries_openrouter_raw_text() {
    let body = r#"{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"error\":\"context too long\"}"}}}"#;
    let reply = Reply::status(
        400,
        &[
            ("content-type", "application/json"),
            ("x-request-id", "req_9"),
        ],
        body,
    );
    let (events, m) = run_reply(reply, options()).await;
    assert_eq!(kinds(&events), ["error"]);
    let message = m.error_message.unwrap();
    assert!(message.starts_with("400"), "{message}");
    assert!(
        message.contains("context too long") && message.contains("req_9"),
        "{message}"
    );
}

#[tokio::test]
async fn stream_cut_before_the_end_is_an_error() {
    let text = sse(&[chunk(json!({"content": "Hel"}), None)], false);
    let (events, m) = run(&text).await;
    let error = assert_failed(&m, ErrorKind::InvalidResponse);
    assert!(error.message().contains("ended before"), "{error:?}");
    assert_eq!(m.text(), "Hel");
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "error"]
    );

    // A finish_reason without [DONE] is a complete reply.
    let (_, m) = run(&sse(
        &[chunk(json!({"content": "ok"}), Some("stop"))],
        false,
    ))
    .await;
    assert_eq!(
        (m.stop_reason.clone(), m.text()),
        (StopReason::Stop, "ok".to_owned())
    );

    // [DONE] alone (no finish_reason) too, and nothing after it is read.
    let mut text = sse(&[chunk(json!({"content": "ok"}), None)], true);
    text.push_str("data: {not json\n\n");
    let (_, m) = run(&text).await;
    assert_eq!(
        (m.stop_reason.clone(), m.text()),
        (StopReason::Stop, "ok".to_owned())
    );
}

#[tokio::test]
async fn invalid_json_is_an_error() {
    let text = "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"id\": oops}\n\n";
    let (_, m) = run(text).await;
    let error = assert_failed(&m, ErrorKind::InvalidResponse);
    assert!(error.message().contains("oops"), "{error:?}");
    assert_eq!(m.text(), "a");
    // A raw control character inside a string is repaired, as pi's repairJson would.
    let text = "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\tb\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let (_, m) = run(text).await;
    assert_eq!(m.text(), "a\tb");
}

#[tokio::test(start_paused = true)]
async fn silence_after_the_finish_reason_ends_the_reply() {
    // The server never sends [DONE] nor closes: the idle timeout ends a complete reply.
    let reply = Reply::sse_open(&[sse(&[chunk(json!({"content": "ok"}), Some("stop"))], false)])
        .then(Step::Hang);
    let started = Instant::now();
    let (_, m) = run_reply(reply, options().with_idle_timeout(Duration::from_secs(20))).await;
    assert_eq!(
        (m.stop_reason.clone(), m.text()),
        (StopReason::Stop, "ok".to_owned())
    );
    assert!(started.elapsed() >= Duration::from_secs(20));

    // Without a finish_reason it is a timeout.
    let reply =
        Reply::sse_open(&[sse(&[chunk(json!({"content": "o"}), None)], false)]).then(Step::Hang);
    let (_, m) = run_reply(reply, options().with_idle_timeout(Duration::from_secs(20))).await;
    assert_failed(&m, ErrorKind::Timeout);
    assert_eq!(m.text(), "o");
}

#[tokio::test]
async fn thinking_and_text_blocks_are_not_split() {
    // pi keeps one text and one thinking block per reply: text after thinking after text
    // extends the first text block.
    let text = sse(
        &[
            chunk(json!({"content": "A"}), None),
            chunk(json!({"reasoning_content": "T"}), None),
            chunk(json!({"content": "B"}), Some("stop")),
        ],
        true,
    );
    let (events, m) = run(&text).await;
    assert_eq!(
        serde_json::to_value(&m.content).unwrap(),
        json!([{"type": "text", "text": "AB"}, {"type": "thinking", "thinking": "T", "thinkingSignature": "reasoning_content"}])
    );
    assert_eq!(
        kinds(&events),
        [
            "start",
            "text_start",
            "text_delta",
            "thinking_start",
            "thinking_delta",
            "text_delta",
            "text_end",
            "thinking_end",
            "done"
        ]
    );
    assert!(matches!(&m.content[0], AssistantContent::Text(t) if t.text == "AB"));
}
