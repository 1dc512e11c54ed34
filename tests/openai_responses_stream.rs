//! OpenAI Responses stream decoding beyond the shared conformance cases:
//!
//! * the small streams of `tests/fixtures/openai-responses/pi-extra/` (tool-call argument
//!   endings, reasoning text, refusals, `[DONE]`, the wire format's errors), compared event by
//!   event with what pi-ai 0.73.1 made of the same bytes (`gen.py` there);
//! * where ours deliberately differs from pi (each case listed in
//!   tests/conformance/deviations.json, with its own test here);
//! * error classification, service-tier pricing, and the Azure variant end to end.
#![cfg(feature = "openai")]

mod support;

use futures::StreamExt;
use pi_engine::providers::azure_openai_responses::AzureOpenAIResponsesProvider;
use pi_engine::providers::openai_responses::OpenAIResponsesProvider;
use pi_engine::{
    ApiProvider, AssistantMessage, AssistantMessageEvent, Context, ErrorKind, Model, StopReason,
    StreamOptions, UserMessage,
    llm::{ModelCost, RetryPolicy},
};
use serde_json::{Value, json};
use support::responses::{comparable_lines, comparable_run, responses_sse, responses_text_reply};
use support::{MockServer, Reply};

const PI_EXTRA: &str = "tests/fixtures/openai-responses/pi-extra";

/// The pi-extra cases where ours differs from pi on purpose (deviations.json keys).
const DEVIATIONS: &[(&str, &str)] = &[
    (
        "response-incomplete",
        "openai-responses/response-incomplete",
    ),
    (
        "cut-before-completed",
        "openai-responses/stream-cut-before-completed",
    ),
    (
        "function-call-done-without-added",
        "openai-responses/function-call-done-without-added",
    ),
    (
        "text-then-function-call-done-without-added",
        "openai-responses/function-call-done-without-added",
    ),
];

fn model(url: &str, id: &str) -> Model {
    Model::new(id, "openai-responses", "openai", format!("{url}/v1"))
        .with_cost(ModelCost::new(1.25, 10.0, 0.125, 0.0))
}

fn options() -> StreamOptions {
    StreamOptions::new()
        .with_api_key("sk-test")
        .with_retry(RetryPolicy::none())
}

/// Streams one call through `provider`; the events and the final message.
async fn run_with(
    provider: &dyn ApiProvider,
    model: &Model,
    options: &StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let context = Context::new().with_message(UserMessage::text("hi"));
    let mut stream = provider.stream(model, &context, options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    (events, stream.result().await)
}

/// Streams `sse` from a local server, as the conformance runner's model (`replay-model`,
/// $3/$15/$0.3/$3.75 per million tokens) would receive it.
async fn run_sse(sse: String) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let server = MockServer::start(vec![Reply::sse(&[sse])]).await;
    let model = Model::new(
        "replay-model",
        "openai-responses",
        "replay",
        format!("{}/v1", server.url()),
    )
    .with_reasoning(true)
    .with_cost(ModelCost::new(3.0, 15.0, 0.3, 3.75));
    run_with(&OpenAIResponsesProvider::new(), &model, &options()).await
}

async fn run(events: &[&str]) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    run_sse(responses_sse(events)).await
}

/// Replays a pi-extra fixture.
async fn replay(case: &str) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let text = std::fs::read_to_string(format!("{PI_EXTRA}/{case}.chunks.txt")).unwrap();
    let events: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    run(&events).await
}

fn kinds(events: &[AssistantMessageEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn pi_extra_streams_match_pi() {
    let mut cases: Vec<String> = std::fs::read_dir(PI_EXTRA)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".chunks.txt").map(str::to_owned)
        })
        .collect();
    cases.sort();
    assert!(cases.len() >= 15, "{cases:?}");
    let deviations: Value = serde_json::from_str(
        &std::fs::read_to_string("tests/conformance/deviations.json").unwrap(),
    )
    .unwrap();
    for case in &cases {
        let golden = comparable_lines(&format!("{PI_EXTRA}/{case}.pi-ai-events.jsonl"));
        let (events, message) = replay(case).await;
        let ours = comparable_run(&events, message);
        match DEVIATIONS.iter().find(|(c, _)| c == case) {
            None => assert_eq!(ours, golden, "{case}: ours differs from pi"),
            Some((_, key)) => {
                assert!(deviations.get(key).is_some(), "{key} is documented");
                assert_ne!(ours, golden, "{case}: now the same as pi; drop {key}");
            }
        }
    }
}

#[tokio::test]
async fn text_usage_cached_tokens_and_signature() {
    let sse = responses_text_reply(&["Hel", "lo"], 100, 20, 7);
    let server = MockServer::start(vec![Reply::sse(&[sse])]).await;
    let (events, message) = run_with(
        &OpenAIResponsesProvider::new(),
        &model(server.url(), "gpt-5"),
        &options(),
    )
    .await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.response_id.as_deref(), Some("resp_1"));
    assert_eq!(
        serde_json::to_value(&message.content).unwrap(),
        json!([{"type": "text", "text": "Hello", "textSignature": "{\"v\":1,\"id\":\"msg_1\"}"}])
    );
    let u = &message.usage;
    assert_eq!(
        (u.input, u.cache_read, u.output, u.total()),
        (100, 20, 7, 127)
    );
    assert_eq!(u.cost.input, 1.25 / 1e6 * 100.0);
    assert_eq!(u.cost.cache_read, 0.125 / 1e6 * 20.0);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.json()["store"], false);
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
}

/// pi reads only `response.completed`: a reply cut by `max_output_tokens`, which OpenAI ends
/// with `response.incomplete`, is a `stop` with no usage there. Ours: `length`, with usage.
#[tokio::test]
async fn response_incomplete_is_length_with_usage() {
    let (events, message) = replay("response-incomplete").await;
    assert_eq!(kinds(&events).last().unwrap(), "done");
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!((message.usage.input, message.usage.output), (10, 16));
    assert!(message.usage.cost.total > 0.0);
    assert_eq!(message.text(), "cut");
}

/// pi ends a stream that stops before `response.completed` as a success (`stop`, no usage).
/// Ours reports it, keeping what arrived.
#[tokio::test]
async fn stream_cut_before_completed_is_an_error_with_the_partial_text() {
    let (events, message) = replay("cut-before-completed").await;
    assert_eq!(kinds(&events).last().unwrap(), "error");
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "partial");
    assert_eq!(message.response_id.as_deref(), Some("resp_1"));
    let error = message.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::InvalidResponse);
    assert!(
        error.message().contains("before response.completed"),
        "{error:?}"
    );
}

/// pi ends a `function_call` item that was never added with a `toolcall_end` for a call that
/// is not in the message (at the index of the previous block, or -1). Ours adds the call.
#[tokio::test]
async fn function_call_done_without_added_is_kept() {
    let (events, message) = replay("function-call-done-without-added").await;
    assert_eq!(
        kinds(&events),
        ["start", "toolcall_start", "toolcall_end", "done"]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        serde_json::to_value(&message.content).unwrap(),
        json!([{"type": "toolCall", "id": "call_9|fc_9", "name": "find", "arguments": {"q": 1}}])
    );
    let (_, message) = replay("text-then-function-call-done-without-added").await;
    assert_eq!(message.text(), "hi");
    assert_eq!(message.tool_calls().count(), 1);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn tool_call_start_carries_id_and_name() {
    let (events, _) = replay("args-extend").await;
    let AssistantMessageEvent::ToolcallStart { id, tool_name, .. } = &events[1] else {
        panic!("{:?}", events[1]);
    };
    assert_eq!((id.as_str(), tool_name.as_str()), ("call_1|fc_1", "read"));
}

#[tokio::test]
async fn errors_are_classified() {
    // A quota error in the stream is never worth retrying.
    let (_, message) = replay("error-member").await;
    assert_eq!(message.error().unwrap().kind(), ErrorKind::QuotaExceeded);
    assert!(
        message
            .error_message
            .unwrap()
            .contains("You exceeded your current quota")
    );
    let (_, message) = replay("error-code-message").await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("Error Code server_error: boom")
    );
    // A context overflow reported by response.failed is recognised.
    let (_, message) = run(&[
        r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}}"#,
    ])
    .await;
    assert!(message.error().unwrap().is_context_overflow());
    // Invalid JSON keeps what arrived.
    let (_, message) = run(&[
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}"#,
        r#"{"type":"response.content_part.added","item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}}"#,
        r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"kept"}"#,
        r#"{"type":"response.output_text.delta","delta":"#,
    ])
    .await;
    assert_eq!(message.text(), "kept");
    assert_eq!(message.error().unwrap().kind(), ErrorKind::InvalidResponse);
}

fn completed_with_tier(tier: &str) -> String {
    format!(
        r#"{{"type":"response.completed","response":{{"id":"r","status":"completed","service_tier":{tier},"usage":{{"input_tokens":1000,"output_tokens":100,"total_tokens":1100}}}}}}"#
    )
}

#[tokio::test]
async fn service_tier_scales_the_cost() {
    let base_cost = {
        let mut usage = pi_engine::Usage::new(1000, 100, 0, 0);
        pi_engine::llm::calculate_cost(&model("", "gpt-5"), &mut usage)
    };
    for (model_id, requested, reported, factor) in [
        ("gpt-5", Some("flex"), "null", 0.5),
        ("gpt-5", Some("flex"), "\"default\"", 1.0),
        ("gpt-5", None, "\"priority\"", 2.0),
        ("gpt-5.5", None, "\"priority\"", 2.5),
    ] {
        let sse = responses_sse(&[&completed_with_tier(reported)]);
        let server = MockServer::start(vec![Reply::sse(&[sse])]).await;
        let mut opts = options();
        if let Some(tier) = requested {
            opts = opts.with_extra("serviceTier", json!(tier));
        }
        let (_, message) = run_with(
            &OpenAIResponsesProvider::new(),
            &model(server.url(), model_id),
            &opts,
        )
        .await;
        let cost = message.usage.cost;
        assert_eq!(
            cost.input,
            base_cost.input * factor,
            "{model_id} {reported}"
        );
        assert_eq!(
            cost.output,
            base_cost.output * factor,
            "{model_id} {reported}"
        );
        assert_eq!(cost.total, cost.input + cost.output);
        if let Some(tier) = requested {
            assert_eq!(server.requests()[0].json()["service_tier"], tier);
        }
    }
}

#[tokio::test]
async fn azure_url_auth_deployment_and_no_tier_pricing() {
    let sse = responses_sse(&[&completed_with_tier("\"priority\"")]);
    let server = MockServer::start(vec![Reply::sse(&[sse])]).await;
    let model = Model::new(
        "gpt-5",
        "azure-openai-responses",
        "azure-openai-responses",
        "http://unused.example",
    )
    .with_cost(ModelCost::new(1.25, 10.0, 0.125, 0.0));
    let opts = options()
        .with_api_key("azure-secret")
        .with_extra(
            "azureBaseUrl",
            json!(format!("{}/openai/v1/", server.url())),
        )
        .with_extra("azureApiVersion", json!("2025-04-01-preview"))
        .with_extra("azureDeploymentName", json!("my-gpt5"))
        .with_session_id("s1");
    let (_, message) = run_with(&AzureOpenAIResponsesProvider::new(), &model, &opts).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.api, "azure-openai-responses");
    let sent = &server.requests()[0];
    assert_eq!(
        sent.path,
        "/openai/v1/responses?api-version=2025-04-01-preview"
    );
    assert_eq!(sent.header("api-key"), Some("azure-secret"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("session_id"), None);
    let body = sent.json();
    assert_eq!(body["model"], "my-gpt5");
    assert_eq!(body["prompt_cache_key"], "s1");
    assert!(body.get("store").is_none());
    let mut usage = pi_engine::Usage::new(1000, 100, 0, 0);
    let unscaled = pi_engine::llm::calculate_cost(&model, &mut usage);
    assert_eq!(message.usage.cost, unscaled);
    assert!(!format!("{message:?}").contains("azure-secret"));
}
