//! `openai-codex-responses` against pi-ai 0.73.1 itself: for each case of
//! `tests/fixtures/openai-codex-responses/` (written by `gen.py` there, from pi's provider
//! over SSE against the shared mock server), the request we send is the body pi sent, with
//! the same Codex headers, and the events we make of the replayed stream are pi's.
//!
//! Differences: pi's `User-Agent` reads `pi (browser)` in a one-shot process (its `os` module
//! loads asynchronously) and `pi (<platform> <release>; <arch>)` afterwards; ours is always
//! the latter, so only its form is compared. pi's SDK-free `fetch` adds no other header that
//! matters.
#![cfg(feature = "openai")]

mod support;

use futures::StreamExt;
use pi_engine::{ApiRegistry, Context, Model, StreamOptions};
use serde::Deserialize;
use serde_json::Value;
use support::responses::{comparable_lines, comparable_run, responses_sse};
use support::{MockServer, Reply};

const DIR: &str = "tests/fixtures/openai-codex-responses";

/// The cases where ours differs from pi on purpose (deviations.json keys).
const DEVIATIONS: &[(&str, &str)] = &[
    (
        "completed-with-failed-status",
        "openai-codex-responses/failed-status-is-an-error-event",
    ),
    (
        "cut-before-completed",
        "openai-responses/stream-cut-before-completed",
    ),
];

#[derive(Deserialize)]
struct Request {
    model: Model,
    context: Context,
    options: StreamOptions,
}

#[tokio::test]
async fn requests_and_events_match_pi() {
    let mut cases: Vec<String> = std::fs::read_dir(DIR)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".request.json").map(str::to_owned)
        })
        .collect();
    cases.sort();
    assert!(cases.len() >= 8, "{cases:?}");
    for case in &cases {
        let chunks = std::fs::read_to_string(format!("{DIR}/{case}.chunks.txt")).unwrap();
        let events: Vec<&str> = chunks.lines().filter(|l| !l.trim().is_empty()).collect();
        let server = MockServer::start(vec![Reply::sse(&[responses_sse(&events)])]).await;
        let text = std::fs::read_to_string(format!("{DIR}/{case}.request.json"))
            .unwrap()
            .replace("BASE_URL", server.url());
        let request: Request = serde_json::from_str(&text).unwrap();
        let options = request
            .options
            .with_retry(pi_engine::llm::RetryPolicy::none());
        let registry = ApiRegistry::with_builtins();
        let mut stream = if options.reasoning.is_some() {
            registry.stream_simple(&request.model, &request.context, &options)
        } else {
            registry.stream(&request.model, &request.context, &options)
        };
        let mut got = Vec::new();
        while let Some(event) = stream.next().await {
            got.push(event);
        }
        let message = stream.result().await;
        let golden = comparable_lines(&format!("{DIR}/{case}.pi-ai-events.jsonl"));
        let ours = comparable_run(&got, message.clone());
        match DEVIATIONS.iter().find(|(c, _)| c == case) {
            None => assert_eq!(ours, golden, "{case}: events differ from pi's"),
            Some((_, key)) => {
                let deviations: Value = serde_json::from_str(
                    &std::fs::read_to_string("tests/conformance/deviations.json").unwrap(),
                )
                .unwrap();
                assert!(deviations.get(key).is_some(), "{key} is documented");
                assert_ne!(ours, golden, "{case}: now the same as pi; drop {key}");
                // Ours: an `error` event that keeps what arrived.
                assert_eq!(message.stop_reason, pi_engine::StopReason::Error, "{case}");
                assert!(message.error_message.is_some(), "{case}");
                assert_eq!(
                    ours.last().unwrap()["message"]["content"],
                    golden.last().unwrap()["message"]["content"],
                    "{case}: content kept"
                );
            }
        }

        let want: Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{DIR}/{case}.pi-request.json")).unwrap(),
        )
        .unwrap();
        let sent = &server.requests()[0];
        assert_eq!(sent.path, want["path"].as_str().unwrap(), "{case}");
        let body = sent.json();
        assert_eq!(body, want["body"], "{case}: body differs from pi's");
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&body), keys(&want["body"]), "{case}: key order");
        for (name, value) in want["headers"].as_object().unwrap() {
            let name = name.to_ascii_lowercase();
            match name.as_str() {
                "host" | "connection" | "content-length" | "accept-language" | "sec-fetch-mode"
                | "accept-encoding" => {}
                "authorization" => {
                    let token = options.api_key.as_ref().unwrap().expose();
                    assert_eq!(sent.header(&name), Some(format!("Bearer {token}").as_str()));
                }
                "user-agent" => {
                    let ours = sent.header(&name).unwrap();
                    assert!(ours.starts_with("pi (") && ours.ends_with(')'), "{ours}");
                }
                _ => assert_eq!(sent.header(&name), value.as_str(), "{case}: header {name}"),
            }
        }
    }
}
