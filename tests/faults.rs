//! The fault suite: every wire format (anthropic-messages, openai-completions,
//! openai-responses, google-generative-ai, and mistral-conversations with feature `mistral`) against a local server on 127.0.0.1 that
//! misbehaves on purpose (tests/support): every error status class, HTML pages, a document
//! instead of a stream, cut streams, cut UTF-8, stalls, keep-alive comments only, resets, an
//! error body dripped a byte a second, a 50 MB line, a compressed body of garbage, a
//! redirect, junk after the final event, duplicate block starts, a huge `Retry-After`, an
//! abort mid-block.
//!
//! Each case checks the terminal event (exactly one `done` or `error`, and nothing after
//! it), the error kind, that the partial output is kept, and a liveness bound: Tokio time is
//! paused where the case waits (the server's sleeps run on the test's runtime, so a stall
//! of an hour takes no real time), and every run has a wall-clock limit too. (tests/http_faults.rs
//! holds the Anthropic-only cases of retries, backoff and connection reuse.)
#![cfg(all(feature = "anthropic", feature = "openai", feature = "google"))]

mod support;

use std::time::Duration;

use futures::StreamExt;
use pi_engine::llm::{
    AssistantMessage, AssistantMessageEvent, CancellationToken, Context, ErrorKind, Model,
    ModelCost, RetryPolicy, StopReason, StreamOptions, UserMessage,
};
use support::{MockServer, Reply, Step, chunk};
use tokio::time::Instant;

/// The longest any case may take, in Tokio time (virtual where paused).
const LIVENESS: Duration = Duration::from_secs(600);
/// The longest any case may take in real time (each takes well under a second, the 50 MB
/// lines a few seconds).
const WALL: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    Anthropic,
    Completions,
    Responses,
    Google,
    #[cfg(feature = "mistral")]
    Mistral,
}

const WIRES: [Wire; 4 + cfg!(feature = "mistral") as usize] = [
    Wire::Anthropic,
    Wire::Completions,
    Wire::Responses,
    Wire::Google,
    #[cfg(feature = "mistral")]
    Wire::Mistral,
];

fn js(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

impl Wire {
    fn model(self, url: &str) -> Model {
        let model = match self {
            Wire::Anthropic => Model::new("claude-test", "anthropic-messages", "anthropic", url),
            Wire::Completions => Model::new(
                "gpt-test",
                "openai-completions",
                "openai",
                format!("{url}/v1"),
            ),
            Wire::Responses => Model::new(
                "gpt-test",
                "openai-responses",
                "openai",
                format!("{url}/v1"),
            ),
            Wire::Google => Model::new(
                "gemini-2.5-flash",
                "google-generative-ai",
                "google",
                format!("{url}/v1beta"),
            ),
            #[cfg(feature = "mistral")]
            Wire::Mistral => Model::new("mistral-test", "mistral-conversations", "mistral", url),
        };
        model.with_cost(ModelCost::new(3.0, 15.0, 0.3, 3.75))
    }

    fn is_mistral(self) -> bool {
        #[cfg(feature = "mistral")]
        {
            self == Wire::Mistral
        }
        #[cfg(not(feature = "mistral"))]
        {
            false
        }
    }

    /// The start of a reply: an open text block holding `first`.
    fn head(self, first: &str) -> String {
        match self {
            Wire::Anthropic => format!(
                "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg_1\",\"usage\":{{\"input_tokens\":10,\"output_tokens\":1}}}}}}\n\n\
                 event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n{}",
                self.delta(first)
            ),
            Wire::Completions => format!(
                "data: {{\"id\":\"chatcmpl-1\",\"model\":\"gpt-test\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
                js(first)
            ),
            Wire::Responses => format!(
                "event: response.created\ndata: {{\"type\":\"response.created\",\"response\":{{\"id\":\"resp_1\",\"status\":\"in_progress\"}}}}\n\n\
                 event: response.output_item.added\ndata: {{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}}}\n\n\
                 event: response.content_part.added\ndata: {{\"type\":\"response.content_part.added\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"part\":{{\"type\":\"output_text\",\"text\":\"\"}}}}\n\n{}",
                self.delta(first)
            ),
            Wire::Google => self.delta(first),
            #[cfg(feature = "mistral")]
            Wire::Mistral => format!(
                "data: {{\"id\":\"cmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"mistral-test\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
                js(first)
            ),
        }
    }

    /// One more piece of text for the open block.
    fn delta(self, text: &str) -> String {
        match self {
            Wire::Anthropic => format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":{}}}}}\n\n",
                js(text)
            ),
            Wire::Completions => format!(
                "data: {{\"id\":\"chatcmpl-1\",\"model\":\"gpt-test\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
                js(text)
            ),
            Wire::Responses => format!(
                "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":{}}}\n\n",
                js(text)
            ),
            Wire::Google => format!(
                "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":{}}}],\"role\":\"model\"}},\"index\":0}}]}}\r\n\r\n",
                js(text)
            ),
            #[cfg(feature = "mistral")]
            Wire::Mistral => format!(
                "data: {{\"id\":\"cmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"mistral-test\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
                js(text)
            ),
        }
    }

    /// The end of a reply whose whole text is `text`, up to the provider's final event.
    fn tail(self, text: &str) -> String {
        match self {
            Wire::Anthropic => "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
                 event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\n\n\
                 event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
                .to_owned(),
            Wire::Completions => "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-test\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
                 data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-test\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n\n"
                .to_owned(),
            Wire::Responses => format!(
                "event: response.output_item.done\ndata: {{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{{\"type\":\"output_text\",\"text\":{}}}]}}}}\n\n\
                 event: response.completed\ndata: {{\"type\":\"response.completed\",\"response\":{{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{{\"input_tokens\":10,\"output_tokens\":5,\"total_tokens\":15}}}}}}\n\n",
                js(text)
            ),
            Wire::Google => "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":10,\"candidatesTokenCount\":5,\"totalTokenCount\":15}}\r\n\r\n"
                .to_owned(),
            #[cfg(feature = "mistral")]
            Wire::Mistral => "data: {\"id\":\"cmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"mistral-test\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"total_tokens\":15,\"completion_tokens\":5}}\n\n"
                .to_owned(),
        }
    }

    /// What follows the final event on the wire (`[DONE]` for chat completions).
    fn trailer(self) -> &'static str {
        match self {
            Wire::Completions => "data: [DONE]\n\n",
            #[cfg(feature = "mistral")]
            Wire::Mistral => "data: [DONE]\n\n",
            _ => "",
        }
    }

    /// A complete reply streaming `parts`.
    fn reply_text(self, parts: &[&str]) -> String {
        let mut out = self.head(parts[0]);
        for p in &parts[1..] {
            out.push_str(&self.delta(p));
        }
        out.push_str(&self.tail(&parts.concat()));
        out.push_str(self.trailer());
        out
    }

    /// "Hello world", complete.
    fn full(self) -> String {
        self.reply_text(&["Hello", " world"])
    }

    /// The provider's JSON error body.
    fn error_body(self, status: u16, kind: &str, message: &str) -> String {
        match self {
            Wire::Anthropic => format!(
                r#"{{"type":"error","error":{{"type":"{kind}","message":{}}}}}"#,
                js(message)
            ),
            Wire::Completions | Wire::Responses => format!(
                r#"{{"error":{{"message":{},"type":"{kind}","param":null,"code":null}}}}"#,
                js(message)
            ),
            Wire::Google => format!(
                r#"{{"error":{{"code":{status},"message":{},"status":"{kind}"}}}}"#,
                js(message)
            ),
            // Mistral's own shape (`object: "error"`, the text at the top level).
            #[cfg(feature = "mistral")]
            Wire::Mistral => format!(
                r#"{{"object":"error","message":{},"type":"{kind}","param":null,"code":"{status}"}}"#,
                js(message)
            ),
        }
    }
}

fn options() -> StreamOptions {
    StreamOptions::new()
        .with_api_key("test-key-123")
        .with_retry(RetryPolicy::none())
}

fn context() -> Context {
    Context::new().with_message(UserMessage::text("hi"))
}

/// One call, run to its end.
struct Run {
    events: Vec<AssistantMessageEvent>,
    message: AssistantMessage,
    /// Tokio time the call took (virtual when paused).
    took: Duration,
    server: MockServer,
}

impl Run {
    fn kinds(&self) -> Vec<&'static str> {
        self.events
            .iter()
            .map(AssistantMessageEvent::kind)
            .collect()
    }

    /// Asserts a failed call of `kind`; returns the error.
    fn failed(&self, kind: ErrorKind) -> pi_engine::Error {
        let m = &self.message;
        assert!(
            matches!(m.stop_reason, StopReason::Error | StopReason::Aborted),
            "{m:?}"
        );
        let error = m.error().expect("a failed message has an error");
        assert_eq!(error.kind(), kind, "{error:?}");
        assert_eq!(m.error_message.as_deref(), Some(error.message()));
        assert_eq!(self.events.last().unwrap().kind(), "error");
        error.clone()
    }

    fn done(&self) {
        assert_eq!(
            self.events.last().unwrap().kind(),
            "done",
            "{:?}",
            self.message
        );
        assert_eq!(
            self.message.stop_reason,
            StopReason::Stop,
            "{:?}",
            self.message
        );
    }
}

/// Exactly one terminal event, the last one.
fn assert_terminal(events: &[AssistantMessageEvent]) {
    let terminal: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind(), "done" | "error"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(terminal, [events.len() - 1], "{events:?}");
}

/// Every block that started ended, once, after its start.
fn assert_blocks_balanced(events: &[AssistantMessageEvent]) {
    let mut open: Vec<usize> = Vec::new();
    for e in events {
        let index = e.content_index();
        match e.kind() {
            "text_start" | "thinking_start" | "toolcall_start" => {
                assert!(!open.contains(&index.unwrap()), "{events:?}");
                open.push(index.unwrap());
            }
            "text_end" | "thinking_end" | "toolcall_end" => {
                let i = index.unwrap();
                assert!(open.contains(&i), "end without start: {events:?}");
                open.retain(|x| *x != i);
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "blocks left open {open:?}: {events:?}");
}

/// Runs one call of `wire` against a server answering `replies`.
async fn run_on(
    wire: Wire,
    replies: Vec<Reply>,
    options: StreamOptions,
    cancel_at_first_delta: Option<CancellationToken>,
) -> Run {
    let server = MockServer::start(replies).await;
    let wall = std::time::Instant::now();
    let started = Instant::now();
    let mut stream = pi_engine::stream(&wire.model(server.url()), &context(), &options);
    let mut events = Vec::new();
    let collect = async {
        while let Some(event) = stream.next().await {
            if let (Some(token), "text_delta" | "toolcall_delta") =
                (&cancel_at_first_delta, event.kind())
            {
                token.cancel();
            }
            events.push(event);
        }
        // Nothing after the end.
        assert!(stream.next().await.is_none());
    };
    tokio::time::timeout(LIVENESS, collect)
        .await
        .unwrap_or_else(|_| panic!("{wire:?}: no terminal event within {LIVENESS:?}"));
    let took = started.elapsed();
    let message = stream.result().await;
    assert!(
        wall.elapsed() < WALL,
        "{wire:?}: {:?} of real time",
        wall.elapsed()
    );
    assert_terminal(&events);
    Run {
        events,
        message,
        took,
        server,
    }
}

async fn run(wire: Wire, replies: Vec<Reply>, options: StreamOptions) -> Run {
    run_on(wire, replies, options, None).await
}

// ---------------------------------------------------------------------------------------
// HTTP error statuses

#[tokio::test(start_paused = true)]
async fn every_error_status_class_is_a_typed_error_with_the_providers_text() {
    let cases: &[(u16, &str, &str, ErrorKind)] = &[
        (
            400,
            "invalid_request_error",
            "INVALID_ARGUMENT",
            ErrorKind::Status,
        ),
        (
            401,
            "authentication_error",
            "UNAUTHENTICATED",
            ErrorKind::Auth,
        ),
        (
            403,
            "permission_error",
            "PERMISSION_DENIED",
            ErrorKind::Auth,
        ),
        (404, "not_found_error", "NOT_FOUND", ErrorKind::Status),
        (
            408,
            "timeout_error",
            "DEADLINE_EXCEEDED",
            ErrorKind::Timeout,
        ),
        (
            413,
            "request_too_large",
            "INVALID_ARGUMENT",
            ErrorKind::ContextOverflow,
        ),
        (
            429,
            "rate_limit_error",
            "RESOURCE_EXHAUSTED",
            ErrorKind::RateLimited,
        ),
        (500, "api_error", "INTERNAL", ErrorKind::Overloaded),
        (502, "api_error", "INTERNAL", ErrorKind::Overloaded),
        (503, "api_error", "UNAVAILABLE", ErrorKind::Overloaded),
        (
            529,
            "overloaded_error",
            "UNAVAILABLE",
            ErrorKind::Overloaded,
        ),
    ];
    for wire in WIRES {
        for &(status, kind, google_kind, expected) in cases {
            let provider_kind = if wire == Wire::Google {
                google_kind
            } else {
                kind
            };
            let text = format!("the server says {status} ({wire:?})");
            let body = wire.error_body(status, provider_kind, &text);
            let reply = Reply::status(
                status,
                &[
                    ("content-type", "application/json"),
                    ("x-request-id", "req_7"),
                ],
                &body,
            );
            let r = run(wire, vec![reply], options()).await;
            assert_eq!(r.kinds(), ["error"], "{wire:?} {status}");
            let error = r.failed(expected);
            assert_eq!(error.status(), Some(status), "{wire:?}");
            assert!(
                error.message().contains(&text),
                "{wire:?}: {}",
                error.message()
            );
            assert!(error.message().starts_with(&status.to_string()));
            assert_eq!(error.request_id(), Some("req_7"));
            assert_eq!(
                r.server.requests().len(),
                1,
                "no retry with RetryPolicy::none"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_providers_whole_error_text_is_kept() {
    // A validation error listing seven problems keeps all seven (it was cut at 600 chars).
    let problems: Vec<String> = (1..=7)
        .map(|i| {
            format!(
                "problem {i}: messages.{i}.content.0.text: field required ({})",
                "-".repeat(100)
            )
        })
        .collect();
    let text = problems.join("; ");
    for wire in WIRES {
        let body = wire.error_body(400, "invalid_request_error", &text);
        let r = run(wire, vec![Reply::status(400, &[], &body)], options()).await;
        let error = r.failed(ErrorKind::Status);
        for p in &problems {
            assert!(error.message().contains(p.as_str()), "{wire:?} lost {p}");
        }
        assert_eq!(r.message.error_message.as_deref(), Some(error.message()));
    }
}

#[tokio::test(start_paused = true)]
async fn retryable_statuses_are_retried_then_succeed() {
    for wire in WIRES {
        for status in [408, 429, 500, 502, 503, 529] {
            let error = Reply::status(status, &[], &wire.error_body(status, "api_error", "busy"));
            let r = run(
                wire,
                vec![error, Reply::sse(&[wire.full()])],
                options().with_retry(RetryPolicy::default()),
            )
            .await;
            r.done();
            assert_eq!(r.message.text(), "Hello world", "{wire:?} {status}");
            assert_eq!(r.server.requests().len(), 2);
            assert!(
                r.took < Duration::from_secs(2),
                "one backoff of 1 s: {:?}",
                r.took
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn html_error_pages_are_summarized() {
    let page = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>";
    let no_title = "<html><body><script>var x = '<b>';</script><h1>Service   Unavailable</h1><p>Try again &amp; again.</p></body></html>";
    for wire in WIRES {
        let r = run(
            wire,
            vec![Reply::status(502, &[("content-type", "text/html")], page)],
            options(),
        )
        .await;
        let error = r.failed(ErrorKind::Overloaded);
        assert_eq!(error.message(), "502 Bad Gateway");
        let r = run(
            wire,
            vec![Reply::status(
                503,
                &[("content-type", "text/html")],
                no_title,
            )],
            options(),
        )
        .await;
        let error = r.failed(ErrorKind::Overloaded);
        assert_eq!(
            error.message(),
            "503 Service Unavailable Try again & again."
        );
        assert!(!error.message().contains('<'));
    }
}

#[tokio::test(start_paused = true)]
async fn a_huge_retry_after_is_not_waited_for_and_does_not_panic() {
    for wire in WIRES {
        for (name, value) in [
            ("retry-after", "99999999999999999999"),
            ("retry-after-ms", "1e30"),
            ("retry-after", "1e400"),
        ] {
            let limited = || {
                Reply::status(
                    429,
                    &[(name, value)],
                    &wire.error_body(429, "rate_limit_error", "slow down"),
                )
            };
            let opts = options().with_retry(RetryPolicy::default());
            let r = run(
                wire,
                vec![limited(), Reply::sse(&[wire.full()])],
                opts.clone(),
            )
            .await;
            let error = r.failed(ErrorKind::RateLimited);
            assert_eq!(error.retry_after(), Some(Duration::MAX), "{wire:?} {name}");
            assert_eq!(r.server.requests().len(), 1, "given up at once");
            assert!(r.took < Duration::from_secs(1), "{:?}", r.took);
            // stream_simple and complete_simple go the same way.
            let server = MockServer::start(vec![limited(), limited()]).await;
            let model = wire.model(server.url());
            let mut simple = pi_engine::stream_simple(&model, &context(), &opts);
            let mut kinds = Vec::new();
            while let Some(e) = simple.next().await {
                kinds.push(e.kind());
            }
            assert_eq!(kinds, ["error"]);
            let done = pi_engine::complete_simple(&model, &context(), &opts).await;
            assert_eq!(done.error().unwrap().kind(), ErrorKind::RateLimited);
            assert_eq!(server.requests().len(), 2);
        }
    }
}

// ---------------------------------------------------------------------------------------
// A success that is not an event stream

#[tokio::test(start_paused = true)]
async fn a_200_with_an_html_page_says_so() {
    let portal = "<html><head><title>Portal login</title></head><body>Please sign in</body></html>";
    for wire in WIRES {
        let r = run(
            wire,
            vec![Reply::status(
                200,
                &[("content-type", "text/html; charset=utf-8")],
                portal,
            )],
            options(),
        )
        .await;
        assert_eq!(r.kinds(), ["error"]);
        let error = r.failed(ErrorKind::InvalidResponse);
        assert_eq!(
            error.message(),
            "Expected an event stream, got text/html: Portal login"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_200_with_a_json_error_is_that_error() {
    for wire in WIRES {
        let body = wire.error_body(529, "overloaded_error", "Overloaded right now");
        let r = run(
            wire,
            vec![Reply::status(
                200,
                &[("content-type", "application/json")],
                &body,
            )],
            options(),
        )
        .await;
        assert_eq!(r.kinds(), ["error"]);
        let error = r.message.error().unwrap();
        assert!(
            error.message().contains("Overloaded right now"),
            "{wire:?}: {error:?}"
        );
        if wire == Wire::Anthropic {
            assert_eq!(error.kind(), ErrorKind::Overloaded);
        } else if wire.is_mistral() {
            // The driver does not take Mistral's `"object": "error"` document for an error:
            // its text is kept, as a body that is not a stream.
            assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error:?}");
        } else {
            assert_ne!(error.kind(), ErrorKind::InvalidResponse, "{error:?}");
        }
        // A JSON document that is not an error.
        let r = run(
            wire,
            vec![Reply::status(
                200,
                &[("content-type", "application/json")],
                r#"{"id":"x","object":"chat.completion","choices":[]}"#,
            )],
            options(),
        )
        .await;
        let error = r.failed(ErrorKind::InvalidResponse);
        assert!(
            error
                .message()
                .starts_with("Expected an event stream, got application/json: "),
            "{}",
            error.message()
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_with_a_wrong_content_type_still_streams() {
    for wire in WIRES {
        for content_type in ["application/json", "text/plain"] {
            let reply = Reply::head(
                200,
                &[
                    ("content-type", content_type),
                    ("transfer-encoding", "chunked"),
                ],
            )
            .then(Step::Write(chunk(wire.full().as_bytes())))
            .then(Step::Write(b"0\r\n\r\n".to_vec()));
            let r = run(wire, vec![reply], options()).await;
            r.done();
            assert_eq!(r.message.text(), "Hello world");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_compressed_body_of_garbage_is_an_error() {
    let garbage: Vec<u8> = (0u8..=255).cycle().take(4096).collect();
    for wire in WIRES {
        let reply = Reply::head(
            200,
            &[
                ("content-type", "text/event-stream"),
                ("content-encoding", "gzip"),
                ("transfer-encoding", "chunked"),
            ],
        )
        .then(Step::Write(chunk(&garbage)))
        .then(Step::Write(b"0\r\n\r\n".to_vec()));
        let r = run(wire, vec![reply], options()).await;
        assert_eq!(r.kinds(), ["error"]);
        let error = r.failed(ErrorKind::InvalidResponse);
        assert!(
            error.message().contains("content-encoding gzip"),
            "{}",
            error.message()
        );
        // An error status with a garbage body is still that status.
        let reply = Reply::head(
            500,
            &[
                ("content-encoding", "gzip"),
                ("content-length", &garbage.len().to_string()),
            ],
        )
        .then(Step::Write(garbage.clone()));
        let r = run(wire, vec![reply], options()).await;
        assert_eq!(r.failed(ErrorKind::Overloaded).status(), Some(500));
    }
}

// ---------------------------------------------------------------------------------------
// Cut streams, resets, cut UTF-8

#[tokio::test(start_paused = true)]
async fn a_stream_cut_between_events_keeps_the_partial_text() {
    for wire in WIRES {
        let r = run(wire, vec![Reply::sse(&[wire.head("Hello")])], options()).await;
        // (Google's decoder ends the open block at the end of the body.)
        assert_eq!(
            r.kinds()[..3],
            ["start", "text_start", "text_delta"],
            "{wire:?}"
        );
        let error = r.failed(ErrorKind::InvalidResponse);
        assert!(error.message().contains("ended"), "{}", error.message());
        assert_eq!(r.message.text(), "Hello");
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_cut_mid_event_keeps_the_partial_text() {
    for wire in WIRES {
        let next = wire.delta(" world");
        let half = &next[..next.len() / 2];
        let r = run(
            wire,
            vec![Reply::sse(&[wire.head("Hello"), half.to_owned()])],
            options(),
        )
        .await;
        r.failed(ErrorKind::InvalidResponse);
        assert_eq!(r.message.text(), "Hello", "{wire:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_reset_mid_stream_keeps_the_partial_text() {
    for wire in WIRES {
        let reply = Reply::sse_open(&[wire.head("Hello")]).then(Step::Close);
        let r = run(
            wire,
            vec![reply],
            options().with_retry(RetryPolicy::default()),
        )
        .await;
        let error = r.failed(ErrorKind::Connection);
        assert!(
            error
                .message()
                .starts_with("Connection lost while streaming"),
            "{}",
            error.message()
        );
        assert_eq!(r.message.text(), "Hello");
        assert_eq!(
            r.server.requests().len(),
            1,
            "no retry after the first byte"
        );
        // A reset before any byte of the body is retried.
        let r = run(
            wire,
            vec![
                Reply::sse_open::<&str>(&[]).then(Step::Close),
                Reply::sse(&[wire.full()]),
            ],
            options().with_retry(RetryPolicy::default()),
        )
        .await;
        assert!(matches!(r.kinds().last(), Some(&"done" | &"error")));
    }
}

#[tokio::test(start_paused = true)]
async fn utf8_split_across_chunks_decodes() {
    let parts = ["héllo ", "🙈 wö", "rld ✓"];
    for wire in WIRES {
        let bytes = wire.reply_text(&parts).into_bytes();
        for size in [1, 2, 3, 5, 7] {
            let chunks: Vec<Vec<u8>> = bytes.chunks(size).map(<[u8]>::to_vec).collect();
            let r = run(wire, vec![Reply::sse_bytes(&chunks)], options()).await;
            r.done();
            assert_eq!(r.message.text(), "héllo 🙈 wörld ✓", "{wire:?} {size}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_cut_inside_a_utf8_character_is_an_error_not_a_panic() {
    for wire in WIRES {
        let next = wire.delta(" 🙈 more");
        let cut = next.find('🙈').unwrap() + 2;
        let cut_bytes = next.as_bytes()[..cut].to_vec();
        let clean = Reply::sse_bytes(&[wire.head("Hello").into_bytes(), cut_bytes.clone()]);
        let r = run(wire, vec![clean], options()).await;
        r.failed(ErrorKind::InvalidResponse);
        assert_eq!(r.message.text(), "Hello", "{wire:?}");
        let reset = Reply::sse_open(&[wire.head("Hello")])
            .then(Step::Write(chunk(&cut_bytes)))
            .then(Step::Close);
        let r = run(wire, vec![reset], options()).await;
        r.failed(ErrorKind::Connection);
        assert_eq!(r.message.text(), "Hello", "{wire:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Stalls, keep-alive comments, slow drips

#[tokio::test(start_paused = true)]
async fn a_stall_mid_stream_times_out_with_the_partial_text() {
    for wire in WIRES {
        let reply = Reply::sse_open(&[wire.head("Hello")])
            .then(Step::Sleep(Duration::from_secs(3600)))
            .then(Step::Write(chunk(wire.delta(" late").as_bytes())))
            .then(Step::Hang);
        let r = run(
            wire,
            vec![reply],
            options().with_idle_timeout(Duration::from_secs(10)),
        )
        .await;
        let error = r.failed(ErrorKind::Timeout);
        assert!(error.is_retryable());
        assert_eq!(r.message.text(), "Hello");
        assert!(
            r.took >= Duration::from_secs(10) && r.took < Duration::from_secs(11),
            "{:?}",
            r.took
        );
    }
}

#[tokio::test(start_paused = true)]
async fn keep_alive_comments_alone_time_out() {
    for wire in WIRES {
        let pings = |mut reply: Reply| {
            for _ in 0..200 {
                reply = reply
                    .then(Step::Sleep(Duration::from_secs(1)))
                    .then(Step::Write(chunk(b": ping\n\n")));
            }
            reply.then(Step::Hang)
        };
        // A body of nothing but comments.
        let r = run(
            wire,
            vec![pings(Reply::sse_open(&[": ping\n\n"]))],
            options().with_idle_timeout(Duration::from_secs(10)),
        )
        .await;
        assert_eq!(r.kinds(), ["start", "error"]);
        r.failed(ErrorKind::Timeout);
        assert!(r.took < Duration::from_secs(11), "{:?}", r.took);
        // Comments after some text: the timeout counts from the last event.
        let r = run(
            wire,
            vec![pings(Reply::sse_open(&[wire.head("Hello")]))],
            options().with_idle_timeout(Duration::from_secs(10)),
        )
        .await;
        r.failed(ErrorKind::Timeout);
        assert_eq!(r.message.text(), "Hello");
        assert!(r.took < Duration::from_secs(11), "{:?}", r.took);
    }
}

#[tokio::test(start_paused = true)]
async fn an_event_that_never_completes_times_out() {
    for wire in WIRES {
        // A line dripped a byte a second, never ended.
        let mut reply = Reply::sse_open(&[wire.head("Hello")]).then(Step::Write(chunk(b"data: {")));
        for _ in 0..200 {
            reply = reply
                .then(Step::Sleep(Duration::from_secs(1)))
                .then(Step::Write(chunk(b" ")));
        }
        let r = run(
            wire,
            vec![reply.then(Step::Hang)],
            options().with_idle_timeout(Duration::from_secs(10)),
        )
        .await;
        r.failed(ErrorKind::Timeout);
        assert_eq!(r.message.text(), "Hello");
        assert!(r.took < Duration::from_secs(11), "{:?}", r.took);
    }
}

#[tokio::test(start_paused = true)]
async fn slow_but_steady_events_are_not_a_stall() {
    for wire in WIRES {
        let mut reply = Reply::sse_open(&[wire.head("Hello")]);
        for _ in 0..6 {
            reply = reply
                .then(Step::Sleep(Duration::from_secs(7)))
                .then(Step::Write(chunk(wire.delta(".").as_bytes())));
        }
        let reply = reply
            .then(Step::Write(chunk(
                format!("{}{}", wire.tail("Hello......"), wire.trailer()).as_bytes(),
            )))
            .then(Step::Write(b"0\r\n\r\n".to_vec()));
        let r = run(
            wire,
            vec![reply],
            options().with_idle_timeout(Duration::from_secs(10)),
        )
        .await;
        r.done();
        assert_eq!(r.message.text(), "Hello......");
    }
}

/// An error response whose body of `len` bytes arrives a byte a second.
fn dripping_error(len: usize) -> Reply {
    let mut reply = Reply::head(
        500,
        &[
            ("content-type", "text/plain"),
            ("content-length", &len.to_string()),
        ],
    );
    for _ in 0..len {
        reply = reply
            .then(Step::Write(b"x".to_vec()))
            .then(Step::Sleep(Duration::from_secs(1)));
    }
    reply
}

#[tokio::test(start_paused = true)]
async fn an_error_body_dripped_a_byte_a_second_has_a_deadline() {
    for wire in WIRES {
        // Three attempts, each cut at the 30 s deadline, 1 s and 2 s of backoff between.
        let r = run(
            wire,
            vec![
                dripping_error(600),
                dripping_error(600),
                dripping_error(600),
            ],
            options()
                .with_retry(RetryPolicy::default())
                .with_idle_timeout(Duration::from_secs(10)),
        )
        .await;
        let error = r.failed(ErrorKind::Overloaded);
        assert_eq!(error.status(), Some(500));
        assert!(
            error.message().starts_with("500 xxx"),
            "{}",
            error.message()
        );
        assert_eq!(r.server.requests().len(), 3);
        assert!(
            r.took >= Duration::from_secs(90) && r.took < Duration::from_secs(100),
            "{:?}",
            r.took
        );
        // The deadline is the caller's.
        let r = run(
            wire,
            vec![dripping_error(600)],
            options().with_error_body_timeout(Duration::from_secs(2)),
        )
        .await;
        r.failed(ErrorKind::Overloaded);
        assert!(
            r.took >= Duration::from_secs(2) && r.took < Duration::from_secs(3),
            "{:?}",
            r.took
        );
    }
}

// ---------------------------------------------------------------------------------------
// A 50 MB line

// Real time: 50 MB over a socket, with the default idle timeout.
#[tokio::test]
async fn a_50_mb_line_is_refused_with_bounded_memory() {
    let mib = vec![b'x'; 1 << 20];
    for wire in WIRES {
        let mut reply = Reply::sse_open(&[wire.head("Hello")]).then(Step::Write(chunk(b"data: ")));
        for _ in 0..50 {
            reply = reply.then(Step::Write(chunk(&mib)));
        }
        let reply = reply
            .then(Step::Write(chunk(b"\n\n")))
            .then(Step::Write(b"0\r\n\r\n".to_vec()));
        let r = run(wire, vec![reply], options()).await;
        let error = r.failed(ErrorKind::InvalidResponse);
        assert!(
            error.message().contains("larger than 33554432 bytes"),
            "{}",
            error.message()
        );
        assert_eq!(r.message.text(), "Hello", "{wire:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Redirects

#[tokio::test(start_paused = true)]
async fn a_same_origin_redirect_is_followed() {
    for wire in WIRES {
        let moved = Reply::status(307, &[("location", "/moved/here")], "");
        let r = run(wire, vec![moved, Reply::sse(&[wire.full()])], options()).await;
        r.done();
        assert_eq!(r.message.text(), "Hello world");
        let requests = r.server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].path, "/moved/here");
        assert_eq!(requests[1].method, "POST");
        assert_eq!(requests[1].body, requests[0].body, "307 keeps the body");
    }
}

// ---------------------------------------------------------------------------------------
// After the final event

#[tokio::test(start_paused = true)]
async fn junk_after_the_final_event_does_not_spoil_the_reply() {
    let junk = "data: {not json at all\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"late\"}}\n\ndata: \u{1}\u{2}garbage\n\n";
    for wire in WIRES {
        let body = format!(
            "{}{}{}{junk}{}",
            wire.head("Hello"),
            wire.delta(" world"),
            wire.tail("Hello world"),
            wire.trailer()
        );
        let r = run(wire, vec![Reply::sse(&[body])], options()).await;
        r.done();
        assert_eq!(r.message.text(), "Hello world", "{wire:?}");
        assert_eq!(r.message.usage.output, 5);
        // A reset after the final event: everything arrived.
        let reply = Reply::sse_open(&[format!(
            "{}{}{}",
            wire.head("Hello"),
            wire.delta(" world"),
            wire.tail("Hello world")
        )])
        .then(Step::Close);
        let r = run(wire, vec![reply], options()).await;
        r.done();
        assert_eq!(r.message.text(), "Hello world", "{wire:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Stream bookkeeping

#[tokio::test(start_paused = true)]
async fn anthropic_duplicate_block_start_ends_the_first_block() {
    let wire = Wire::Anthropic;
    let restart = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    let body = format!(
        "{}{restart}{}{}",
        wire.head("Hello"),
        wire.delta(" world"),
        wire.tail("")
    );
    let r = run(wire, vec![Reply::sse(&[body])], options()).await;
    r.done();
    assert_blocks_balanced(&r.events);
    assert_eq!(
        r.kinds(),
        [
            "start",
            "text_start",
            "text_delta",
            "text_end",
            "text_start",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(r.message.text(), "Hello world");
    assert_eq!(r.message.content.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn responses_duplicate_item_added_ends_the_first_item() {
    let wire = Wire::Responses;
    let second = "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n\
        event: response.content_part.added\ndata: {\"type\":\"response.content_part.added\",\"item_id\":\"msg_2\",\"output_index\":1,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":\"\"}}\n\n";
    let done2 = "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\" world\"}]}}\n\n";
    let completed = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":10,\"output_tokens\":5,\"total_tokens\":15}}}\n\n";
    let body = format!(
        "{}{second}{}{done2}{completed}",
        wire.head("Hello"),
        wire.delta(" world")
    );
    let r = run(wire, vec![Reply::sse(&[body])], options()).await;
    r.done();
    assert_blocks_balanced(&r.events);
    assert_eq!(r.message.content.len(), 2);
    assert_eq!(r.message.text(), "Hello world");
    // A second reasoning item too.
    let reasoning = |id: &str| {
        format!(
            "event: response.output_item.added\ndata: {{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{{\"id\":\"{id}\",\"type\":\"reasoning\",\"summary\":[]}}}}\n\n"
        )
    };
    let body = format!("{}{}{}", reasoning("rs_1"), reasoning("rs_2"), wire.full());
    let r = run(wire, vec![Reply::sse(&[body])], options()).await;
    assert_blocks_balanced(&r.events);
    assert_eq!(
        r.events
            .iter()
            .filter(|e| e.kind() == "thinking_end")
            .count(),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn responses_done_of_an_unknown_item_keeps_the_current_one_open() {
    let wire = Wire::Responses;
    let unknown_message = "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":5,\"item\":{\"id\":\"msg_other\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"stray\"}]}}\n\n";
    let unknown_call = "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":6,\"item\":{\"id\":\"fc_9\",\"type\":\"function_call\",\"arguments\":\"{\\\"q\\\":1}\",\"call_id\":\"call_9\",\"name\":\"find\"}}\n\n";
    let body = format!(
        "{}{unknown_message}{}{unknown_call}{}{}",
        wire.head("Hello"),
        wire.delta(" wor"),
        wire.delta("ld"),
        wire.tail("Hello world")
    );
    let r = run(wire, vec![Reply::sse(&[body])], options()).await;
    assert_terminal(&r.events);
    assert_blocks_balanced(&r.events);
    assert_eq!(r.message.text(), "Hello world", "no delta is dropped");
    assert_eq!(r.message.tool_calls().count(), 1);
    assert_eq!(r.message.stop_reason, StopReason::ToolUse);
}

// ---------------------------------------------------------------------------------------
// Abort

#[tokio::test(start_paused = true)]
async fn abort_mid_block_ends_the_block_before_the_aborted_error() {
    for wire in WIRES {
        let reply = Reply::sse_open(&[wire.head("Hello")]).then(Step::Hang);
        let token = CancellationToken::new();
        let r = run_on(
            wire,
            vec![reply],
            options().with_cancel(token.clone()),
            Some(token),
        )
        .await;
        assert_eq!(
            r.kinds(),
            ["start", "text_start", "text_delta", "text_end", "error"],
            "{wire:?}"
        );
        assert_blocks_balanced(&r.events);
        let AssistantMessageEvent::TextEnd { content, .. } = &r.events[3] else {
            unreachable!()
        };
        assert_eq!(content, "Hello");
        assert_eq!(r.message.stop_reason, StopReason::Aborted);
        assert_eq!(
            r.message.error_message.as_deref(),
            Some("Request was aborted")
        );
        assert_eq!(r.message.text(), "Hello");
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(r.server.client_closed(), 1, "the connection is dropped");
    }
}

#[tokio::test(start_paused = true)]
async fn abort_mid_tool_call_ends_the_call() {
    let wire = Wire::Anthropic;
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n\
        event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read\",\"input\":{}}}\n\n\
        event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a.t\"}}\n\n";
    let token = CancellationToken::new();
    let r = run_on(
        wire,
        vec![Reply::sse_open(&[body]).then(Step::Hang)],
        options().with_cancel(token.clone()),
        Some(token),
    )
    .await;
    assert_eq!(
        r.kinds(),
        [
            "start",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "error"
        ]
    );
    let AssistantMessageEvent::ToolcallEnd { tool_call, .. } = &r.events[3] else {
        unreachable!()
    };
    assert_eq!(tool_call.id, "toolu_1");
    assert_eq!(tool_call.arguments["path"], "a.t");
    assert_eq!(r.message.stop_reason, StopReason::Aborted);
}
