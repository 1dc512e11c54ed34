//! The Mistral provider (`mistral-conversations`) end to end against a local server on
//! 127.0.0.1 (tests/support): the request it sends (path, headers, the body byte for byte,
//! key order included), the events it makes of a stream, `stream_simple`'s options and key
//! check, HTTP errors and cut streams. (The driver's faults are in tests/faults.rs; the
//! comparison with pi itself on recorded streams is tests/pi_wire_diff.rs.)
#![cfg(feature = "mistral")]

mod support;

use futures::StreamExt;
use pi_engine::providers::mistral::MistralProvider;
use pi_engine::{
    ApiProvider, AssistantContent, AssistantMessage, AssistantMessageEvent, CancellationToken,
    Context, ErrorKind, Model, StopReason, StreamOptions, ThinkingLevel, Tool, UserMessage,
    llm::{ModelCost, RetryPolicy, get_model},
};
use serde_json::{Value, json};
use support::{MockServer, Recorded, Reply, Step};

fn model(url: &str) -> Model {
    Model::new(
        "mistral-large-latest",
        "mistral-conversations",
        "mistral",
        url,
    )
    .with_cost(ModelCost::new(2.0, 6.0, 0.0, 0.0))
}

fn options() -> StreamOptions {
    StreamOptions::new()
        .with_api_key("mk-test")
        .with_retry(RetryPolicy::none())
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "cmpl-7", "object": "chat.completion.chunk", "created": 1724786681,
           "model": "mistral-large-latest",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn sse(chunks: &[Value], done: bool) -> String {
    let mut out: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    if done {
        out.push_str("data: [DONE]\n\n");
    }
    out
}

fn kinds(events: &[AssistantMessageEvent]) -> Vec<&'static str> {
    events.iter().map(AssistantMessageEvent::kind).collect()
}

/// Runs one call of `call` against a server answering `replies`.
async fn run(
    replies: Vec<Reply>,
    call: impl FnOnce(&str) -> pi_engine::llm::AssistantMessageEventStream,
) -> (Vec<AssistantMessageEvent>, AssistantMessage, Vec<Recorded>) {
    let server = MockServer::start(replies).await;
    let mut stream = call(server.url());
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let message = stream.result().await;
    (events, message, server.requests())
}

#[tokio::test]
async fn a_reply_with_thinking_text_and_tool_calls_and_pis_request() {
    let mut last = chunk(json!({"content": ""}), Some("tool_calls"));
    last["usage"] = json!({"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150});
    let text = sse(
        &[
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(
                json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Read it."}]}]}),
                None,
            ),
            chunk(json!({"content": "Reading"}), None),
            chunk(json!({"content": " a.txt"}), None),
            chunk(
                json!({"tool_calls": [{"id": "D681PevKs", "function": {"name": "read", "arguments": "{\"path\": \"a.txt\"}"}, "index": 0}]}),
                None,
            ),
            last,
        ],
        true,
    );
    // Split into small pieces, as a network splits them.
    let pieces: Vec<String> = text
        .as_bytes()
        .chunks(7)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let context = Context::new()
        .with_system_prompt("You are terse.")
        .with_message(UserMessage::text("What is in a.txt?"))
        .with_tools(vec![Tool::new(
            "read",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        )]);
    let options = options()
        .with_session_id("sess-42")
        .with_temperature(0.3)
        .with_max_tokens(2048)
        .with_extra("promptMode", json!("reasoning"))
        .with_extra("toolChoice", json!("auto"));
    let (events, message, requests) = run(vec![Reply::sse(&pieces)], |url| {
        MistralProvider::new().stream(&model(url), &context, &options)
    })
    .await;

    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer mk-test"));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-affinity"), Some("sess-42"));
    // The body as pi's SDK writes it, byte for byte.
    assert_eq!(
        String::from_utf8(request.body.clone()).unwrap(),
        concat!(
            r#"{"model":"mistral-large-latest","temperature":0.3,"max_tokens":2048,"stream":true,"#,
            r#""messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"What is in a.txt?"}],"#,
            r#""tools":[{"type":"function","function":{"name":"read","description":"Read a file","strict":false,"#,
            r#""parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}],"#,
            r#""tool_choice":"auto","prompt_mode":"reasoning"}"#
        )
    );

    assert_eq!(
        kinds(&events),
        [
            "start",
            "text_start",
            "text_delta",
            "text_end",
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "text_start",
            "text_delta",
            "text_end",
            "toolcall_end",
            "done"
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.response_id.as_deref(), Some("cmpl-7"));
    assert_eq!(
        serde_json::to_value(&message.content).unwrap(),
        json!([
            {"type": "text", "text": ""},
            {"type": "thinking", "thinking": "Read it."},
            {"type": "text", "text": "Reading a.txt"},
            {"type": "toolCall", "id": "D681PevKs", "name": "read", "arguments": {"path": "a.txt"}},
            {"type": "text", "text": ""}
        ])
    );
    let usage = &message.usage;
    assert_eq!((usage.input, usage.output, usage.total()), (120, 30, 150));
    assert_eq!((usage.cache_read, usage.cache_write), (0, 0));
    assert!((usage.cost.total - (120.0 * 2.0 + 30.0 * 6.0) / 1e6).abs() < 1e-12);
    // The final message is the one the events built.
    let Some(AssistantMessageEvent::Done { message: done, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(**done, message);
}

#[tokio::test]
async fn a_replayed_conversation_normalises_foreign_tool_call_ids() {
    let foreign = AssistantMessage::new("openai-responses", "openai", "gpt-5")
        .with_content(vec![AssistantContent::tool_call(
            "call_abc|fc_1",
            "read",
            json!({"path": "a"}),
        )])
        .with_stop_reason(StopReason::ToolUse);
    let context = Context::new()
        .with_message(UserMessage::text("go"))
        .with_message(foreign)
        .with_message(pi_engine::ToolResultMessage::new(
            "call_abc|fc_1",
            "read",
            vec![pi_engine::Content::text("A")],
            false,
        ));
    let reply = Reply::sse(&[sse(&[chunk(json!({"content": "ok"}), Some("stop"))], true)]);
    let (_, message, requests) = run(vec![reply], |url| {
        MistralProvider::new().stream(&model(url), &context, &options())
    })
    .await;
    assert_eq!(message.text(), "ok");
    let body = requests[0].json();
    // pi's id for "call_abc|fc_1": the hash of its letters and digits, nine characters.
    assert_eq!(
        body["messages"][1]["tool_calls"],
        json!([{"id": "j6ob6a1or", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}, "index": 0}])
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "tool", "content": [{"type": "text", "text": "A"}], "tool_call_id": "j6ob6a1or", "name": "read"})
    );
    assert!(requests[0].header("x-affinity").is_none());
}

#[tokio::test]
async fn stream_simple_maps_the_reasoning_level() {
    let done = || Reply::sse(&[sse(&[chunk(json!({"content": "4"}), Some("stop"))], true)]);
    let context = Context::new().with_message(UserMessage::text("2+2?"));
    let simple = options().with_reasoning(ThinkingLevel::Low);

    // Magistral: `prompt_mode: "reasoning"`, maxTokens from the model (capped at 32000).
    let magistral = get_model("mistral", "magistral-medium-latest").unwrap();
    let (_, message, requests) = run(vec![done()], |url| {
        let mut m = magistral.clone();
        m.base_url = url.to_owned();
        MistralProvider::new().stream_simple(&m, &context, &simple)
    })
    .await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let body = requests[0].json();
    assert_eq!(body["prompt_mode"], "reasoning");
    assert_eq!(body["max_tokens"], magistral.max_tokens.min(32_000));
    assert!(body.get("reasoning_effort").is_none());

    // Mistral Small: `reasoning_effort` ("high" without a thinkingLevelMap entry).
    let small = get_model("mistral", "mistral-small-latest").unwrap();
    let (_, _, requests) = run(vec![done()], |url| {
        let mut m = small.clone();
        m.base_url = url.to_owned();
        MistralProvider::new().stream_simple(&m, &context, &simple)
    })
    .await;
    let body = requests[0].json();
    assert_eq!(body["reasoning_effort"], "high");
    assert!(body.get("prompt_mode").is_none());

    // No level: neither.
    let (_, _, requests) = run(vec![done()], |url| {
        let mut m = small.clone();
        m.base_url = url.to_owned();
        MistralProvider::new().stream_simple(&m, &context, &options())
    })
    .await;
    let body = requests[0].json();
    assert!(body.get("reasoning_effort").is_none() && body.get("prompt_mode").is_none());
}

#[tokio::test]
async fn stream_simple_refuses_a_call_without_a_key() {
    let (events, message, requests) = run(vec![], |url| {
        let model = Model::new(
            "m",
            "mistral-conversations",
            "pi-test-no-such-provider",
            url,
        );
        MistralProvider::new().stream_simple(
            &model,
            &Context::new().with_message(UserMessage::text("hi")),
            &StreamOptions::new(),
        )
    })
    .await;
    assert_eq!(kinds(&events), ["error"]);
    assert!(requests.is_empty(), "nothing is sent");
    let error = message.error().unwrap();
    assert!(error.is_auth());
    assert_eq!(
        error.message(),
        "No API key for provider: pi-test-no-such-provider"
    );
}

#[tokio::test]
async fn the_global_registry_serves_mistral() {
    let reply = Reply::sse(&[sse(&[chunk(json!({"content": "hi"}), Some("stop"))], true)]);
    let (_, message, requests) = run(vec![reply], |url| {
        pi_engine::stream(
            &model(url),
            &Context::new().with_message(UserMessage::text("hi")),
            &options(),
        )
    })
    .await;
    assert_eq!(message.text(), "hi");
    assert_eq!(requests.len(), 1);
}

#[tokio::test]
async fn headers_of_the_model_and_the_caller() {
    let reply = || Reply::sse(&[sse(&[chunk(json!({"content": "x"}), Some("stop"))], true)]);
    let context = Context::new().with_message(UserMessage::text("hi"));
    // The caller's own x-affinity wins over the session id.
    let (_, _, requests) = run(vec![reply()], |url| {
        let options = options()
            .with_session_id("sess-1")
            .with_header("x-affinity", "mine")
            .with_header("x-extra", "1");
        let model = model(url).with_header("x-model", "m");
        MistralProvider::new().stream(&model, &context, &options)
    })
    .await;
    let request = &requests[0];
    assert_eq!(request.header("x-affinity"), Some("mine"));
    assert_eq!(request.header("x-extra"), Some("1"));
    assert_eq!(request.header("x-model"), Some("m"));
    // `on_payload` sees the wire body and may change it.
    let (_, _, requests) = run(vec![reply()], |url| {
        let options = options().with_on_payload(|body| {
            assert_eq!(body["stream"], true);
            body["random_seed"] = json!(7);
        });
        MistralProvider::new().stream(&model(url), &context, &options)
    })
    .await;
    assert_eq!(requests[0].json()["random_seed"], 7);
}

#[tokio::test]
async fn http_errors_are_typed_errors_with_mistrals_text() {
    let body = r#"{"object":"error","message":"Invalid model: mistral-nope","type":"invalid_model","param":null,"code":"1500"}"#;
    let reply = Reply::status(
        400,
        &[
            ("content-type", "application/json"),
            ("x-request-id", "req-9"),
        ],
        body,
    );
    let (events, message, _) = run(vec![reply], |url| {
        MistralProvider::new().stream(
            &model(url),
            &Context::new().with_message(UserMessage::text("hi")),
            &options(),
        )
    })
    .await;
    assert_eq!(kinds(&events), ["error"]);
    let error = message.error().unwrap();
    assert_eq!(error.status(), Some(400));
    assert_eq!(error.request_id(), Some("req-9"));
    assert!(
        error.message().contains("Invalid model: mistral-nope"),
        "{error:?}"
    );

    let unauthorized = Reply::status(
        401,
        &[("content-type", "application/json")],
        r#"{"message":"Unauthorized","request_id":"abc"}"#,
    );
    let (_, message, _) = run(vec![unauthorized], |url| {
        MistralProvider::new().stream(
            &model(url),
            &Context::new().with_message(UserMessage::text("hi")),
            &options(),
        )
    })
    .await;
    let error = message.error().unwrap();
    assert!(error.is_auth(), "{error:?}");
    assert!(error.message().contains("Unauthorized"));
}

#[tokio::test]
async fn a_cut_stream_keeps_the_partial_text_and_fails() {
    let text = sse(
        &[
            chunk(json!({"role": "assistant", "content": "Hel"}), None),
            chunk(json!({"content": "lo"}), None),
        ],
        false,
    );
    let (events, message, _) = run(vec![Reply::sse(&[text])], |url| {
        MistralProvider::new().stream(
            &model(url),
            &Context::new().with_message(UserMessage::text("hi")),
            &options(),
        )
    })
    .await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "text_delta", "error"]
    );
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "Hello");
    assert_eq!(message.error().unwrap().kind(), ErrorKind::InvalidResponse);
}

#[tokio::test]
async fn a_chunk_the_sdk_refuses_ends_the_reply() {
    let mut bad = chunk(json!({"content": "x"}), None);
    bad.as_object_mut().unwrap().remove("model");
    let text = sse(&[chunk(json!({"content": "ok"}), None), bad], true);
    let (events, message, _) = run(vec![Reply::sse(&[text])], |url| {
        MistralProvider::new().stream(
            &model(url),
            &Context::new().with_message(UserMessage::text("hi")),
            &options(),
        )
    })
    .await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "error"]
    );
    assert_eq!(message.text(), "ok");
    assert!(message.error_message.unwrap().contains("model"));
}

#[tokio::test]
async fn finish_reason_error_fails_the_reply_after_ending_its_blocks() {
    let text = sse(&[chunk(json!({"content": "partial"}), Some("error"))], true);
    let (events, message, _) = run(vec![Reply::sse(&[text])], |url| {
        MistralProvider::new().stream(
            &model(url),
            &Context::new().with_message(UserMessage::text("hi")),
            &options(),
        )
    })
    .await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "text_end", "error"]
    );
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("An unknown error occurred")
    );
}

#[tokio::test]
async fn an_abort_mid_stream_is_aborted_with_the_partial_text() {
    let head = sse(&[chunk(json!({"content": "Hel"}), None)], false);
    let reply = Reply::sse_open(&[head]).then(Step::Hang);
    let cancel = CancellationToken::new();
    let server = MockServer::start(vec![reply]).await;
    let options = options().with_cancel(cancel.clone());
    let mut stream = MistralProvider::new().stream(
        &model(server.url()),
        &Context::new().with_message(UserMessage::text("hi")),
        &options,
    );
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if event.kind() == "text_delta" {
            cancel.cancel();
        }
        events.push(event);
    }
    let message = stream.result().await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "text_end", "error"]
    );
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(message.text(), "Hel");
}
