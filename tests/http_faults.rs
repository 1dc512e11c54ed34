//! Faults of the shared HTTP machinery, against a local server that misbehaves on purpose
//! (tests/support). The Anthropic provider is the vehicle; every built-in provider shares
//! the code under test (`providers/http`). Time is paused: retries, backoff and idle
//! timeouts take no real time.
#![cfg(feature = "anthropic")]

mod support;

use std::time::Duration;

use futures::StreamExt;
use pi_engine::providers::anthropic::AnthropicProvider;
use pi_engine::{
    ApiProvider, AssistantMessage, AssistantMessageEvent, CancellationToken, Context, ErrorKind,
    Model, StopReason, StreamOptions, UserMessage,
    llm::{ModelCost, RetryPolicy},
};
use support::{MockServer, Reply, Step, anthropic_sse};
use tokio::time::Instant;

const START: &str = r#"{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":10,"output_tokens":1}}}"#;
const TEXT_START: &str =
    r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
const HELLO: &str =
    r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#;
const WORLD: &str =
    r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}"#;
const TEXT_STOP: &str = r#"{"type":"content_block_stop","index":0}"#;
const DELTA_END: &str =
    r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}"#;
const STOP: &str = r#"{"type":"message_stop"}"#;

fn model(url: &str) -> Model {
    Model::new("claude-test", "anthropic-messages", "anthropic", url)
        .with_cost(ModelCost::new(3.0, 15.0, 0.3, 3.75))
}

fn options() -> StreamOptions {
    StreamOptions::new().with_api_key("sk-ant-test")
}

fn context() -> Context {
    Context::new().with_message(UserMessage::text("hi"))
}

fn full_reply() -> Reply {
    Reply::sse(&[anthropic_sse(&[
        START, TEXT_START, HELLO, WORLD, TEXT_STOP, DELTA_END, STOP,
    ])])
}

/// Runs a call to the end; returns the event kinds and the final message.
async fn run(server: &MockServer, options: StreamOptions) -> (Vec<&'static str>, AssistantMessage) {
    let mut stream = AnthropicProvider::new().stream(&model(server.url()), &context(), &options);
    let mut kinds = Vec::new();
    while let Some(event) = stream.next().await {
        kinds.push(event.kind());
    }
    (kinds, stream.result().await)
}

fn assert_failed(message: &AssistantMessage, kind: ErrorKind) -> pi_engine::Error {
    assert_eq!(message.stop_reason, StopReason::Error, "{message:?}");
    let error = message.error().expect("a failed message has an error");
    assert_eq!(error.kind(), kind, "{error:?}");
    assert_eq!(message.error_message.as_deref(), Some(error.message()));
    error
}

// Real time: connection reuse is what is tested, and a pooled connection can race paused
// time's auto-advance.
#[tokio::test]
async fn success_streams_and_reuses_the_connection() {
    let server =
        MockServer::start(vec![full_reply().keep_alive(), full_reply().keep_alive()]).await;
    let (kinds, message) = run(&server, options()).await;
    assert_eq!(
        kinds,
        [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(message.text(), "Hello world");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.response_id.as_deref(), Some("msg_1"));
    let (_, again) = run(&server, options()).await;
    assert_eq!(again.text(), "Hello world");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        server.connections(),
        1,
        "the second call reuses the connection"
    );
}

#[tokio::test(start_paused = true)]
async fn http_error_carries_status_provider_text_and_request_id() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be positive"},"request_id":"req_body"}"#;
    let server = MockServer::start(vec![Reply::status(
        400,
        &[
            ("content-type", "application/json"),
            ("request-id", "req_011"),
        ],
        body,
    )])
    .await;
    let (kinds, message) = run(&server, options()).await;
    assert_eq!(
        kinds,
        ["error"],
        "no start before the response is a success"
    );
    let error = assert_failed(&message, ErrorKind::Status);
    assert_eq!(
        error.message(),
        "400 invalid_request_error: max_tokens: must be positive (request id: req_011)"
    );
    assert_eq!(error.status(), Some(400));
    assert_eq!(error.request_id(), Some("req_011"));
    assert!(!error.is_retryable());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn status_errors_are_classified() {
    let cases: &[(u16, &str, ErrorKind)] = &[
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}"#,
            ErrorKind::ContextOverflow,
        ),
        (
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            ErrorKind::Auth,
        ),
        (
            429,
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#,
            ErrorKind::QuotaExceeded,
        ),
        (
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
            ErrorKind::RateLimited,
        ),
        (
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ErrorKind::Overloaded,
        ),
    ];
    for (status, body, kind) in cases {
        let server = MockServer::start(vec![Reply::status(*status, &[], body)]).await;
        let (_, message) = run(&server, options().with_retry(RetryPolicy::none())).await;
        let error = assert_failed(&message, *kind);
        assert_eq!(error.status(), Some(*status));
        // Read back from a session file, the text alone classifies the same way.
        let reread = pi_engine::Error::from_message(error.message());
        assert_eq!(reread.kind(), *kind, "{}", error.message());
    }
}

#[tokio::test(start_paused = true)]
async fn html_error_page_does_not_leak() {
    let page = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>";
    let server = MockServer::start(vec![Reply::status(
        502,
        &[("content-type", "text/html"), ("x-request-id", "gw-1")],
        page,
    )])
    .await;
    let (_, message) = run(&server, options().with_retry(RetryPolicy::none())).await;
    let error = assert_failed(&message, ErrorKind::Overloaded);
    assert_eq!(error.message(), "502 Bad Gateway (request id: gw-1)");
    assert!(!error.message().contains('<'));
}

#[tokio::test(start_paused = true)]
async fn stream_ending_before_message_stop_keeps_partial_content() {
    let server = MockServer::start(vec![Reply::sse(&[anthropic_sse(&[
        START, TEXT_START, HELLO,
    ])])])
    .await;
    let (kinds, message) = run(&server, options()).await;
    assert_eq!(kinds, ["start", "text_start", "text_delta", "error"]);
    let error = assert_failed(&message, ErrorKind::InvalidResponse);
    assert_eq!(
        error.message(),
        "Anthropic stream ended before message_stop"
    );
    assert_eq!(message.text(), "Hello");
    assert_eq!(message.usage.input, 10, "usage from message_start is kept");
}

#[tokio::test(start_paused = true)]
async fn invalid_json_in_an_event_keeps_partial_content() {
    let bad = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\n\n";
    let server = MockServer::start(vec![Reply::sse(&[
        anthropic_sse(&[START, TEXT_START, HELLO]),
        bad.to_owned(),
        anthropic_sse(&[WORLD, TEXT_STOP, DELTA_END, STOP]),
    ])])
    .await;
    let (kinds, message) = run(&server, options()).await;
    assert_eq!(kinds.last(), Some(&"error"));
    let error = assert_failed(&message, ErrorKind::InvalidResponse);
    assert!(
        error
            .message()
            .starts_with("Could not parse Anthropic SSE event content_block_delta"),
        "{}",
        error.message()
    );
    assert_eq!(message.text(), "Hello");
}

#[tokio::test(start_paused = true)]
async fn connection_reset_mid_stream_keeps_partial_content() {
    let reply = Reply::sse_open(&[anthropic_sse(&[START, TEXT_START, HELLO])]).then(Step::Close);
    let server = MockServer::start(vec![reply]).await;
    let (kinds, message) = run(&server, options()).await;
    assert_eq!(kinds, ["start", "text_start", "text_delta", "error"]);
    let error = assert_failed(&message, ErrorKind::Connection);
    assert!(
        error
            .message()
            .starts_with("Connection lost while streaming"),
        "{}",
        error.message()
    );
    assert_eq!(message.text(), "Hello");
    assert_eq!(server.requests().len(), 1, "no retry after the first byte");
}

#[tokio::test(start_paused = true)]
async fn error_event_mid_stream() {
    let err = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let server = MockServer::start(vec![Reply::sse(&[
        anthropic_sse(&[START, TEXT_START, HELLO]),
        err.to_owned(),
    ])])
    .await;
    let (_, message) = run(&server, options()).await;
    let error = assert_failed(&message, ErrorKind::Overloaded);
    assert_eq!(error.message(), "overloaded_error: Overloaded");
    assert_eq!(message.text(), "Hello");
}

#[tokio::test(start_paused = true)]
async fn idle_timeout_between_chunks() {
    let reply = Reply::sse_open(&[anthropic_sse(&[START, TEXT_START, HELLO])])
        .then(Step::Sleep(Duration::from_secs(3600)))
        .then(Step::Write(support::chunk(
            anthropic_sse(&[WORLD]).as_bytes(),
        )));
    let server = MockServer::start(vec![reply]).await;
    let started = Instant::now();
    let (_, message) = run(
        &server,
        options().with_idle_timeout(Duration::from_secs(30)),
    )
    .await;
    let error = assert_failed(&message, ErrorKind::Timeout);
    assert!(error.is_timeout() && error.is_retryable());
    assert_eq!(message.text(), "Hello");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(30) && waited < Duration::from_secs(31),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn idle_timeout_waiting_for_the_response_head() {
    let server = MockServer::start(vec![Reply::hang()]).await;
    let (kinds, message) = run(
        &server,
        options()
            .with_idle_timeout(Duration::from_secs(10))
            .with_retry(RetryPolicy::none()),
    )
    .await;
    assert_eq!(kinds, ["error"]);
    assert_failed(&message, ErrorKind::Timeout);
}

#[tokio::test(start_paused = true)]
async fn abort_before_connect() {
    let server = MockServer::start(vec![full_reply()]).await;
    let token = CancellationToken::new();
    token.cancel();
    let (kinds, message) = run(&server, options().with_cancel(token)).await;
    assert_eq!(kinds, ["error"]);
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Request was aborted")
    );
    assert!(message.error().unwrap().is_aborted());
}

#[tokio::test(start_paused = true)]
async fn abort_while_waiting_for_headers() {
    let server = MockServer::start(vec![Reply::hang()]).await;
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let (kinds, message) = run(&server, options().with_cancel(token)).await;
    assert_eq!(kinds, ["error"]);
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert!(started.elapsed() < Duration::from_secs(3));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(server.client_closed(), 1, "the connection is dropped");
}

#[tokio::test(start_paused = true)]
async fn abort_mid_stream_keeps_partial_content_and_drops_the_connection() {
    let reply = Reply::sse_open(&[anthropic_sse(&[START, TEXT_START, HELLO])]).then(Step::Hang);
    let server = MockServer::start(vec![reply]).await;
    let token = CancellationToken::new();
    let mut stream = AnthropicProvider::new().stream(
        &model(server.url()),
        &context(),
        &options().with_cancel(token.clone()),
    );
    let mut kinds = Vec::new();
    while let Some(event) = stream.next().await {
        if let AssistantMessageEvent::TextDelta { .. } = event {
            token.cancel();
        }
        kinds.push(event.kind());
    }
    // The open block is ended before the error (pi sends only the error: a listed
    // deviation, http/abort-ends-open-blocks).
    assert_eq!(
        kinds,
        ["start", "text_start", "text_delta", "text_end", "error"]
    );
    let message = stream.result().await;
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Request was aborted")
    );
    assert_eq!(message.text(), "Hello");
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(server.client_closed(), 1, "the connection is dropped");
}

#[tokio::test(start_paused = true)]
async fn abort_while_the_stream_is_stalled() {
    let reply = Reply::sse_open(&[anthropic_sse(&[START, TEXT_START, HELLO])]).then(Step::Hang);
    let server = MockServer::start(vec![reply]).await;
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        cancel.cancel();
    });
    let (_, message) = run(&server, options().with_cancel(token)).await;
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(message.text(), "Hello");
}

#[tokio::test(start_paused = true)]
async fn retries_429_honouring_retry_after() {
    let limited = Reply::status(
        429,
        &[("retry-after", "7")],
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
    );
    let server = MockServer::start(vec![limited, full_reply()]).await;
    let started = Instant::now();
    let (kinds, message) = run(&server, options()).await;
    assert_eq!(kinds.first(), Some(&"start"));
    assert_eq!(message.text(), "Hello world");
    assert_eq!(server.requests().len(), 2);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(7) && waited < Duration::from_secs(8),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn retries_overloaded_with_exponential_backoff() {
    let overloaded = || {
        Reply::status(
            529,
            &[],
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
    };
    let server = MockServer::start(vec![overloaded(), overloaded(), full_reply()]).await;
    let started = Instant::now();
    let (_, message) = run(&server, options()).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(server.requests().len(), 3);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(3) && waited < Duration::from_secs(4),
        "1 s then 2 s: {waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_budget_exhausted_reports_the_last_error() {
    let unavailable = || Reply::status(503, &[("retry-after-ms", "1500")], "upstream unavailable");
    let server = MockServer::start(vec![unavailable(), unavailable(), unavailable()]).await;
    let started = Instant::now();
    let (_, message) = run(
        &server,
        options().with_retry(RetryPolicy::default().with_max_retries(2)),
    )
    .await;
    let error = assert_failed(&message, ErrorKind::Overloaded);
    assert_eq!(error.message(), "503 upstream unavailable");
    assert_eq!(error.retry_after(), Some(Duration::from_millis(1500)));
    assert_eq!(server.requests().len(), 3);
    assert!(started.elapsed() >= Duration::from_millis(3000));
}

#[tokio::test(start_paused = true)]
async fn quota_errors_are_never_retried() {
    let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    let server = MockServer::start(vec![
        Reply::status(429, &[("retry-after", "1")], body),
        full_reply(),
    ])
    .await;
    let (_, message) = run(&server, options()).await;
    let error = assert_failed(&message, ErrorKind::QuotaExceeded);
    assert!(!error.is_retryable());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn retry_after_beyond_the_cap_is_not_waited_for() {
    let date = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(3600));
    let server = MockServer::start(vec![
        Reply::status(429, &[("retry-after", &date)], "busy"),
        full_reply(),
    ])
    .await;
    let mut opts = options();
    opts.max_retry_delay_ms = Some(60_000);
    let started = Instant::now();
    let (_, message) = run(&server, opts).await;
    let error = assert_failed(&message, ErrorKind::RateLimited);
    let after = error.retry_after().expect("the HTTP date is parsed");
    assert!(after > Duration::from_secs(3500), "{after:?}");
    assert_eq!(server.requests().len(), 1);
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn cancel_during_a_retry_wait() {
    let server = MockServer::start(vec![
        Reply::status(429, &[("retry-after", "30")], "busy"),
        full_reply(),
    ])
    .await;
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let (_, message) = run(&server, options().with_cancel(token)).await;
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert!(started.elapsed() < Duration::from_secs(6));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn connection_refused_is_retried_then_reported() {
    // A port that was free a moment ago: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let model = model(&format!("http://127.0.0.1:{port}"));
    let message = AnthropicProvider::new()
        .stream(
            &model,
            &context(),
            &options().with_retry(RetryPolicy::default().with_max_retries(1)),
        )
        .result()
        .await;
    let error = assert_failed(&message, ErrorKind::Connection);
    assert!(
        error.message().starts_with("Connection error"),
        "{}",
        error.message()
    );
}

#[tokio::test]
async fn missing_api_key_is_an_error_event() {
    let model = Model::new(
        "m",
        "anthropic-messages",
        "no-such-provider",
        "http://127.0.0.1:9",
    );
    let mut stream = AnthropicProvider::new().stream(&model, &context(), &StreamOptions::new());
    let first = stream.next().await.unwrap();
    assert_eq!(first.kind(), "error");
    let message = stream.result().await;
    let error = assert_failed(&message, ErrorKind::Auth);
    assert_eq!(error.message(), "No API key for provider: no-such-provider");
}

#[tokio::test]
async fn requests_carry_a_user_agent() {
    let server = MockServer::start(vec![full_reply()]).await;
    let (_, message) = run(&server, options()).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let ua = server.requests()[0].header("user-agent").map(str::to_owned);
    assert_eq!(
        ua.as_deref(),
        Some(concat!("pi-engine/", env!("CARGO_PKG_VERSION")))
    );
    let custom = MockServer::start(vec![full_reply()]).await;
    run(&custom, options().with_header("User-Agent", "my-bot/1")).await;
    assert_eq!(custom.requests()[0].header("user-agent"), Some("my-bot/1"));
}
