//! The Bedrock provider against a local server on 127.0.0.1: its faults (HTTP errors,
//! exception and error frames, bad CRCs, cut frames, stalls, aborts), Signature V4 signing
//! from the environment, and where it differs from pi on purpose (deviations.json).
//! The events of recorded streams are compared with pi's in `tests/pi_wire_diff.rs`.
#![cfg(feature = "bedrock")]

mod support;

use std::time::Duration;

use futures::StreamExt;
use pi_engine::llm::{
    AssistantMessageEvent, CancellationToken, Context, ErrorKind, Model, RetryPolicy, StopReason,
    StreamOptions, UserMessage,
};
use pi_engine::providers::bedrock::eventstream::{encode_event, encode_exception, encode_frame};
use support::{MockServer, Reply, Step, chunk};

fn model(url: &str) -> Model {
    Model::new(
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "bedrock-converse-stream",
        "amazon-bedrock",
        url,
    )
}

fn options() -> StreamOptions {
    StreamOptions::new()
        .with_api_key("test-token")
        .with_retry(RetryPolicy::none())
}

fn context() -> Context {
    Context::new().with_message(UserMessage::text("Hi"))
}

fn start() -> Vec<u8> {
    encode_event("messageStart", br#"{"role":"assistant"}"#).unwrap()
}

fn text(s: &str) -> Vec<u8> {
    let payload = serde_json::json!({"contentBlockIndex": 0, "delta": {"text": s}});
    encode_event("contentBlockDelta", payload.to_string().as_bytes()).unwrap()
}

fn tail() -> Vec<u8> {
    let mut out = encode_event("contentBlockStop", br#"{"contentBlockIndex":0}"#).unwrap();
    out.extend(encode_event("messageStop", br#"{"stopReason":"end_turn"}"#).unwrap());
    out.extend(encode_event(
        "metadata",
        br#"{"usage":{"inputTokens":5,"outputTokens":2,"totalTokens":7},"metrics":{"latencyMs":10}}"#,
    ).unwrap());
    out
}

/// A 200 event-stream response whose body is `parts`, each written on its own.
fn stream(parts: Vec<Vec<u8>>) -> Reply {
    let mut reply = Reply::head(
        200,
        &[
            ("content-type", "application/vnd.amazon.eventstream"),
            ("transfer-encoding", "chunked"),
            ("x-amzn-requestid", "req-bedrock"),
        ],
    );
    for part in parts {
        reply = reply.then(Step::Write(chunk(&part)));
    }
    reply
}

fn ended(parts: Vec<Vec<u8>>) -> Reply {
    stream(parts).then(Step::Write(b"0\r\n\r\n".to_vec()))
}

async fn run(
    replies: Vec<Reply>,
    options: StreamOptions,
) -> (Vec<AssistantMessageEvent>, MockServer) {
    let server = MockServer::start(replies).await;
    let model = model(server.url());
    let mut s = pi_engine::stream(&model, &context(), &options);
    let mut events = Vec::new();
    let run = async {
        while let Some(e) = s.next().await {
            events.push(e);
        }
    };
    tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("the stream ends");
    (events, server)
}

fn error_of(events: &[AssistantMessageEvent]) -> pi_engine::Error {
    match events.last() {
        Some(AssistantMessageEvent::Error { error, .. }) => error.error().expect("a typed error"),
        other => panic!("expected an error event, got {other:?}"),
    }
}

fn partial_text(events: &[AssistantMessageEvent]) -> String {
    match events.last() {
        Some(AssistantMessageEvent::Error { error, .. }) => error.text(),
        Some(AssistantMessageEvent::Done { message, .. }) => message.text(),
        _ => String::new(),
    }
}

#[tokio::test]
async fn a_whole_stream_split_anywhere() {
    let mut body = start();
    body.extend(text("Hello"));
    body.extend(text(", world"));
    body.extend(tail());
    // One byte per write: every frame split at every place.
    let parts = body.iter().map(|b| vec![*b]).collect();
    let (events, server) = run(vec![ended(parts)], options()).await;
    match events.last() {
        Some(AssistantMessageEvent::Done { message, reason }) => {
            assert_eq!(*reason, StopReason::Stop);
            assert_eq!(message.text(), "Hello, world");
            assert_eq!(message.usage.total_tokens, Some(7));
        }
        other => panic!("{other:?}"),
    }
    let request = &server.requests()[0];
    assert_eq!(
        request.path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    assert_eq!(request.header("authorization"), Some("Bearer test-token"));
}

#[tokio::test]
async fn exception_frames_are_typed_errors_that_keep_the_partial_reply() {
    let cases = [
        (
            "throttlingException",
            "Too many tokens, please wait",
            ErrorKind::RateLimited,
            true,
        ),
        (
            "serviceUnavailableException",
            "Service is unavailable",
            ErrorKind::Overloaded,
            true,
        ),
        (
            "internalServerException",
            "Internal failure",
            ErrorKind::Overloaded,
            true,
        ),
        (
            "validationException",
            "Input is too long for requested model.",
            ErrorKind::ContextOverflow,
            false,
        ),
        (
            "validationException",
            "Malformed input request",
            ErrorKind::Provider,
            false,
        ),
        (
            "modelStreamErrorException",
            "Model Stream Error",
            ErrorKind::Provider,
            false,
        ),
    ];
    for (name, message, kind, retryable) in cases {
        let payload = serde_json::json!({"message": message}).to_string();
        let parts = vec![
            start(),
            text("partial"),
            encode_exception(name, payload.as_bytes()).unwrap(),
        ];
        let (events, _) = run(vec![ended(parts)], options()).await;
        let error = error_of(&events);
        assert_eq!(error.kind(), kind, "{name}: {error}");
        assert_eq!(error.is_retryable(), retryable, "{name}");
        assert!(error.to_string().contains(message), "{error}");
        assert_eq!(partial_text(&events), "partial", "{name}");
    }
    // An `error` frame (the framing's own error message type).
    let frame = encode_frame(
        &[
            (":message-type", "error"),
            (":error-code", "InternalFailure"),
            (":error-message", "boom"),
        ],
        b"",
    )
    .unwrap();
    let (events, _) = run(vec![ended(vec![start(), frame])], options()).await;
    assert!(
        error_of(&events)
            .to_string()
            .contains("InternalFailure: boom")
    );
}

#[tokio::test]
async fn corrupt_and_cut_frames_end_in_an_error() {
    // A flipped bit in a payload: the frame CRC.
    let mut bad = text("corrupt");
    let n = bad.len();
    bad[n - 10] ^= 0x20;
    let (events, _) = run(vec![ended(vec![start(), text("ok"), bad])], options()).await;
    let error = error_of(&events);
    assert_eq!(error.kind(), ErrorKind::InvalidResponse);
    assert!(error.to_string().contains("checksum"), "{error}");
    assert_eq!(partial_text(&events), "ok");
    // A frame cut by the end of the body.
    let cut = text("never whole");
    let (events, _) = run(
        vec![ended(vec![
            start(),
            text("ok"),
            cut[..cut.len() - 5].to_vec(),
        ])],
        options(),
    )
    .await;
    let error = error_of(&events);
    assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
    // A prelude claiming 4 GiB is refused at once, not waited for.
    let mut huge = Vec::new();
    huge.extend_from_slice(&u32::MAX.to_be_bytes());
    huge.extend_from_slice(&0u32.to_be_bytes());
    huge.extend_from_slice(&crc(&huge).to_be_bytes());
    let (events, _) = run(
        vec![stream(vec![start(), huge]).then(Step::Hang)],
        options(),
    )
    .await;
    assert_eq!(error_of(&events).kind(), ErrorKind::InvalidResponse);
}

fn crc(bytes: &[u8]) -> u32 {
    // CRC-32 (IEEE), bitwise: the test's own, apart from the crate's.
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// deviations.json `bedrock/stream-cut-before-message-stop`.
#[tokio::test]
async fn a_stream_cut_before_message_stop_is_an_error_not_a_success() {
    let (events, _) = run(vec![ended(vec![start(), text("half")])], options()).await;
    let error = error_of(&events);
    assert_eq!(error.kind(), ErrorKind::InvalidResponse);
    assert!(error.to_string().contains("messageStop"), "{error}");
    assert_eq!(partial_text(&events), "half");
}

#[tokio::test(start_paused = true)]
async fn a_stall_is_the_idle_timeout_and_an_abort_is_aborted() {
    let options = options().with_idle_timeout(Duration::from_secs(30));
    let (events, _) = run(
        vec![stream(vec![start(), text("slow")]).then(Step::Hang)],
        options,
    )
    .await;
    assert_eq!(error_of(&events).kind(), ErrorKind::Timeout);
    assert_eq!(partial_text(&events), "slow");

    let cancel = CancellationToken::new();
    let server = MockServer::start(vec![stream(vec![start(), text("abc")]).then(Step::Hang)]).await;
    let model = model(server.url());
    let mut s = pi_engine::stream(&model, &context(), &options_with(cancel.clone()));
    let mut seen = Vec::new();
    while let Some(e) = s.next().await {
        if matches!(e, AssistantMessageEvent::TextDelta { .. }) {
            cancel.cancel();
        }
        seen.push(e);
    }
    match seen.last() {
        Some(AssistantMessageEvent::Error { reason, error }) => {
            assert_eq!(*reason, StopReason::Aborted);
            assert_eq!(error.text(), "abc");
        }
        other => panic!("{other:?}"),
    }
}

fn options_with(cancel: CancellationToken) -> StreamOptions {
    options().with_cancel(cancel)
}

#[tokio::test]
async fn http_errors_name_the_aws_error_type() {
    let cases = [
        (
            400,
            "ValidationException",
            r#"{"message":"The provided model identifier is invalid."}"#,
            ErrorKind::Status,
        ),
        (
            403,
            "AccessDeniedException",
            r#"{"message":"You don't have access to the model with the specified model ID."}"#,
            ErrorKind::Auth,
        ),
        (
            429,
            "ThrottlingException",
            r#"{"message":"Too many requests, please wait before trying again."}"#,
            ErrorKind::RateLimited,
        ),
        (
            503,
            "ServiceUnavailableException",
            r#"{"message":"Bedrock is unable to process your request."}"#,
            ErrorKind::Overloaded,
        ),
    ];
    for (status, kind_name, body, kind) in cases {
        let error_type =
            format!("{kind_name}:http://internal.amazon.com/coral/com.amazon.bedrock/");
        let reply = Reply::status(
            status,
            &[
                ("content-type", "application/json"),
                ("x-amzn-errortype", &error_type),
                ("x-amzn-requestid", "req-9"),
            ],
            body,
        );
        let (events, _) = run(vec![reply], options()).await;
        let error = error_of(&events);
        assert_eq!(error.kind(), kind, "{status}: {error}");
        let text = error.to_string();
        assert!(
            text.contains(kind_name) && text.contains(&status.to_string()),
            "{text}"
        );
        assert!(!text.contains("internal.amazon.com"), "{text}");
        assert_eq!(error.request_id(), Some("req-9"));
    }
}

/// Signature V4 from the environment's keys (a child process: the keys are in its
/// environment only).
#[test]
fn sigv4_from_the_environment() {
    support::run_ignored_in_child(
        "signs_with_environment_keys",
        [
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            (
                "AWS_SECRET_ACCESS_KEY",
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            ),
            ("AWS_SESSION_TOKEN", "session-token-xyz"),
            ("AWS_REGION", "eu-west-3"),
            ("AWS_BEARER_TOKEN_BEDROCK", ""),
            ("AWS_PROFILE", ""),
            (CHILD, "1"),
        ],
    );
}

/// Set in the child's environment only.
const CHILD: &str = "PI_ENGINE_BEDROCK_SIGV4_CHILD";

#[tokio::test]
#[ignore = "run by sigv4_from_the_environment in a child process with AWS keys set"]
async fn signs_with_environment_keys() {
    // The child half of its parent test; run on its own (`--include-ignored`), it has no
    // keys in its environment and nothing to do.
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let mut body = start();
    body.extend(text("signed"));
    body.extend(tail());
    let server = MockServer::start(vec![ended(vec![body])]).await;
    let model = model(server.url());
    let options = StreamOptions::new().with_retry(RetryPolicy::none());
    let reply = pi_engine::complete(&model, &context(), &options).await;
    assert_eq!(reply.text(), "signed", "{:?}", reply.error_message);
    let request = &server.requests()[0];
    let auth = request.header("authorization").unwrap();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
            && auth.contains("/eu-west-3/bedrock/aws4_request")
            && auth.contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"),
        "{auth}"
    );
    assert_eq!(
        request.header("x-amz-security-token"),
        Some("session-token-xyz")
    );
    assert!(request.header("x-amz-date").is_some());
    // The secret key is never sent.
    let sent = format!("{:?}", request.headers);
    assert!(!sent.contains("wJalrXUtnFEMI"));
}
