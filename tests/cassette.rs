//! Cassettes (feature `cassette`): recording through a real local HTTP server and replaying
//! with no server; the provider cassettes of `tests/fixtures/cassettes/` replayed through
//! each provider's real code and compared with pi-ai's events for the same streams; the
//! safety check over that directory.
#![cfg(all(
    feature = "cassette",
    feature = "anthropic",
    feature = "openai",
    feature = "google"
))]

mod support;

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use pi_engine::cassette::{CassetteTransport, Chunk, Mode, Player, Recorder, SCRUBBED, safety};
use pi_engine::providers::http::{
    HttpTransport, ReqwestTransport, SharedTransport, TransportRequest, TransportResponse,
};
use pi_engine::{
    ApiRegistry, AssistantMessage, AssistantMessageEvent, Context, Error, ErrorKind, Model,
    StreamOptions, UserMessage,
};
use serde_json::{Value, json};
use support::responses::{comparable, comparable_lines, comparable_run};
use support::{MockServer, Reply, anthropic_sse};

const CASSETTES: &str = "tests/fixtures/cassettes";

async fn run(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let mut stream = ApiRegistry::with_builtins().stream(model, context, options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    (events, stream.result().await)
}

fn comparable_events(events: &[AssistantMessageEvent]) -> Vec<Value> {
    events
        .iter()
        .map(|e| comparable(serde_json::to_value(e).unwrap()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// A user's test: record against a real server, replay without it.

/// An Anthropic reply with a thinking block whose signature looks like a key.
fn anthropic_reply() -> String {
    anthropic_sse(&[
        r#"{"type":"message_start","message":{"id":"msg_local","usage":{"input_tokens":10,"output_tokens":0}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm é."}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIMsk-ant-looks-like-a-key-but-is-a-signature0123"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello from "}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"the recording."}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#,
        r#"{"type":"message_stop"}"#,
    ])
}

#[tokio::test]
async fn records_through_a_local_server_and_replays_without_it() {
    const KEY: &str = "sk-ant-api03-integration-fake-key-0123456789";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("local.json");
    // Three chunks, written one by one; the second ends inside "é", as a network may cut.
    let sse = anthropic_reply();
    let cut = sse.find("é").unwrap() + 1;
    let chunks = vec![
        sse.as_bytes()[..200].to_vec(),
        sse.as_bytes()[200..cut].to_vec(),
        sse.as_bytes()[cut..].to_vec(),
    ];
    let server = MockServer::start(vec![Reply::sse_bytes(&chunks)]).await;
    let model = Model::new(
        "claude-local",
        "anthropic-messages",
        "anthropic",
        server.url(),
    );
    let context = Context::new()
        .with_system_prompt("Be brief.")
        .with_message(UserMessage::text("Say hello."));

    let recording =
        CassetteTransport::new(Mode::Record, &path, Arc::new(ReqwestTransport::default()))
            .unwrap()
            .with_timing(true);
    let options = StreamOptions::new()
        .with_api_key(KEY)
        .with_transport(recording.clone());
    let (recorded_events, recorded) = run(&model, &context, &options).await;
    assert_eq!(recorded.text(), "Hello from the recording.", "{recorded:?}");
    recording.finish().unwrap();
    assert_eq!(server.requests().len(), 1);
    drop(server);

    let file = std::fs::read_to_string(&path).unwrap();
    assert!(
        !file.contains(KEY) && !file.contains("integration-fake"),
        "{file}"
    );
    let cassette: Value = serde_json::from_str(&file).unwrap();
    assert_eq!(cassette["version"], 1);
    let interaction = &cassette["interactions"][0];
    assert_eq!(interaction["request"]["headers"]["x-api-key"], SCRUBBED);
    assert_eq!(
        interaction["request"]["body"]["json"]["system"][0]["text"],
        "Be brief."
    );
    assert!(
        cassette["scrubbed"]["headers"].as_u64().unwrap() >= 1,
        "{}",
        cassette["scrubbed"]
    );
    let recorded_chunks = interaction["response"]["chunks"].as_array().unwrap();
    assert!(recorded_chunks.iter().all(|c| c["offset_ms"].is_u64()));
    // The body is kept byte for byte (the chunks after the cut inside "é" are base64), the
    // signature that looks like a key included.
    assert!(sse.contains("sk-ant-looks-like-a-key-but-is-a-signature0123"));
    assert_eq!(
        recorded_chunks
            .iter()
            .map(|c| serde_json::from_value::<Chunk>(c.clone()).unwrap().bytes())
            .collect::<Vec<Bytes>>()
            .concat(),
        sse.as_bytes()
    );
    safety::check_cassette(&path).unwrap();
    safety::check_cassette_with(&path, &[KEY]).unwrap();

    // Replay: no server, no real key; the same events (timestamps aside).
    let replaying =
        CassetteTransport::new(Mode::Replay, &path, Arc::new(ReqwestTransport::default())).unwrap();
    let options = StreamOptions::new()
        .with_api_key("replay")
        .with_transport(replaying.clone());
    let (replayed_events, replayed) = run(&model, &context, &options).await;
    assert_eq!(
        comparable_events(&replayed_events),
        comparable_events(&recorded_events)
    );
    assert_eq!(replayed.content, recorded.content);
    replaying.finish().unwrap();

    // A changed prompt is an error event with the diff and the way to re-record.
    let player = Player::open(&path).unwrap();
    let changed = Context::new()
        .with_system_prompt("Be brief.")
        .with_message(UserMessage::text("Say goodbye."));
    let options = StreamOptions::new()
        .with_api_key("replay")
        .with_transport(player.clone());
    let (_, failed) = run(&model, &changed, &options).await;
    let error = failed.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Config);
    let message = error.message();
    assert!(
        message.contains("does not match recorded interaction 0"),
        "{message}"
    );
    assert!(
        message.contains(r#""path": "/body/messages/0/content/0/text""#),
        "{message}"
    );
    assert!(message.contains(r#""expected": "Say hello.""#), "{message}");
    assert!(message.contains(r#""got": "Say goodbye.""#), "{message}");
    assert!(message.contains("PI_CASSETTE=record"), "{message}");
    assert_eq!(player.unused(), [0]);
}

// ---------------------------------------------------------------------------------------
// Our provider tests: the recorded real streams of the shared conformance suite, as
// cassettes of the requests our providers make.

/// A provider cassette: its file name, the api, the stream of the shared suite it was made
/// from (`fixtures/<path>`; pi-ai's events for it are `golden/<path with __>.pi-ai-events.jsonl`).
const CASES: &[(&str, &str, &str)] = &[
    (
        "anthropic-text",
        "anthropic-messages",
        "anthropic/anthropic-sdk-python/basic_response.txt",
    ),
    (
        "anthropic-thinking",
        "anthropic-messages",
        "anthropic/vercel-ai/anthropic-clear-thinking.1.chunks.txt",
    ),
    (
        "openai-completions-text",
        "openai-completions",
        "openai-chat/openai-python/gpt4o-text.sse",
    ),
    (
        "openai-completions-tool-call",
        "openai-completions",
        "openai-chat/openai-python/gpt4o-tool-call.sse",
    ),
    (
        "openai-responses-reasoning",
        "openai-responses",
        "openai-responses/vercel-ai/openai-reasoning-encrypted-content.1.chunks.txt",
    ),
    (
        "google-text",
        "google-generative-ai",
        "gemini/vercel-ai/google-text.chunks.txt",
    ),
    (
        "google-reasoning-gemini3",
        "google-generative-ai",
        "gemini/vercel-ai/google-reasoning-gemini3.chunks.txt",
    ),
];

/// The fake key each cassette was recorded with (the safety test checks none is left).
fn fake_key(api: &str) -> &'static str {
    match api {
        "anthropic-messages" => "sk-ant-api03-cassette-fake-key-000000000000",
        "google-generative-ai" => "AIzaSyCassetteFakeKey000000000000000",
        _ => "sk-proj-cassette-fake-key-000000000000",
    }
}

/// The request of the conformance runner (`run.py`'s `request_for`) against the real
/// endpoint of `api`: its model, context and options.
fn request_for(api: &str) -> (Model, Context, StreamOptions) {
    let base = match api {
        "anthropic-messages" => "https://api.anthropic.com",
        "google-generative-ai" => "https://generativelanguage.googleapis.com/v1beta",
        _ => "https://api.openai.com/v1",
    };
    let model: Model = serde_json::from_value(json!({
        "id": "replay-model", "name": "replay", "api": api, "provider": "replay",
        "baseUrl": base, "reasoning": true, "input": ["text"],
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        "contextWindow": 200000, "maxTokens": 8192,
    }))
    .unwrap();
    let context: Context = serde_json::from_value(json!({
        "systemPrompt": "You are a helpful assistant.",
        "messages": [{"role": "user", "content": "replay", "timestamp": 0}],
        "tools": [{
            "name": "weather", "description": "weather",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
        }],
    }))
    .unwrap();
    let options: StreamOptions = serde_json::from_value(json!({"apiKey": fake_key(api)})).unwrap();
    (
        model,
        context,
        options.with_retry(pi_engine::llm::RetryPolicy::none()),
    )
}

#[tokio::test]
async fn provider_cassettes_replay_to_pis_events() {
    for (name, api, source) in CASES {
        let path = format!("{CASSETTES}/{name}.json");
        let player = Player::open(&path).unwrap();
        let (model, context, options) = request_for(api);
        // Replaying needs no key: any will do.
        let options = options.with_api_key("none").with_transport(player.clone());
        let (events, message) = run(&model, &context, &options).await;
        assert!(message.error().is_none(), "{name}: {:?}", message.error());
        let golden = comparable_lines(&format!("{CASSETTES}/{name}.events.jsonl"));
        assert_eq!(
            comparable_run(&events, message),
            golden,
            "{name} (from {source}): events differ from pi-ai's"
        );
        player.assert_all_used();
        // The stream's boundaries are the recorded ones: more than one chunk each.
        let chunks = &player.cassette().interactions[0]
            .response
            .as_ref()
            .unwrap()
            .chunks;
        assert!(chunks.len() > 1, "{name}");
    }
}

#[test]
fn committed_cassettes_hold_no_key() {
    let keys: Vec<&str> = CASES.iter().map(|(_, api, _)| fake_key(api)).collect();
    if let Err(findings) = safety::check_dir_with(CASSETTES, &keys) {
        panic!(
            "{} secret(s) in {CASSETTES}:\n{}",
            findings.len(),
            findings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    let count = std::fs::read_dir(CASSETTES)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count();
    assert_eq!(count, CASES.len());
}

#[test]
fn the_safety_check_fails_on_a_leaked_key() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{CASSETTES}/anthropic-text.json"))
        .unwrap()
        .replacen(
            &format!("\"x-api-key\": \"{SCRUBBED}\""),
            "\"x-api-key\": \"sk-ant-api03-leaked-0123456789abcdef\"",
            1,
        );
    std::fs::write(dir.path().join("leaked.json"), text).unwrap();
    let findings = safety::check_dir(dir.path()).unwrap_err();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(
        findings[0].location,
        "/interactions/0/request/headers/x-api-key"
    );
    assert!(!findings[0].to_string().contains("leaked-0123456789"));
}

/// Serves one recorded stream, in the chunks given, as a provider would.
#[derive(Debug)]
struct Stream(Vec<Vec<u8>>);

#[async_trait::async_trait]
impl HttpTransport for Stream {
    async fn send(&self, _request: TransportRequest) -> Result<TransportResponse, Error> {
        use pi_engine::providers::http::reqwest::header::{HeaderMap, HeaderValue};
        let mut headers = HeaderMap::new();
        headers.insert(
            "content-type",
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert("x-request-id", HeaderValue::from_static("req_cassette"));
        let chunks: Vec<Result<Bytes, Error>> =
            self.0.iter().map(|c| Ok(Bytes::from(c.clone()))).collect();
        Ok(TransportResponse::new(
            pi_engine::providers::http::reqwest::StatusCode::OK,
            headers,
            futures::stream::iter(chunks),
        ))
    }
}

/// The chunks of a stream of the shared suite, framed as its mock server frames them: raw
/// SSE cut every 200 bytes (inside events and characters, as a network cuts), one payload per
/// line as one SSE event per chunk.
fn framed_chunks(api: &str, text: &str) -> Vec<Vec<u8>> {
    if text.starts_with("event:") || text.starts_with("data:") {
        return text.as_bytes().chunks(200).map(<[u8]>::to_vec).collect();
    }
    let mut chunks: Vec<Vec<u8>> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let kind = serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|v| v["type"].as_str().map(str::to_owned));
            match (api, kind) {
                ("anthropic-messages" | "openai-responses", Some(kind)) => {
                    format!("event: {kind}\ndata: {line}\n\n")
                }
                ("google-generative-ai", _) => format!("data: {line}\r\n\r\n"),
                _ => format!("data: {line}\n\n"),
            }
            .into_bytes()
        })
        .collect();
    if api == "openai-completions" {
        chunks.push(b"data: [DONE]\n\n".to_vec());
    }
    chunks
}

/// The cassettes of [`CASES`] (and pi-ai's events beside them) are what the shared
/// conformance suite makes: `PI_CONFORMANCE_DIR`, else `$PI_SHARED/conformance`, else
/// `../shared/conformance`. Each is recorded through the provider's real code with a fake
/// key, by a `Recorder` around a transport that serves the recorded stream, into a temporary
/// directory and compared with the committed file. After a change to what a provider sends,
/// write them again with:
///
/// ```text
/// PI_CASSETTE_WRITE=1 cargo test --features cassette --test cassette -- --ignored provider_cassettes_are_current
/// ```
#[tokio::test]
#[ignore = "needs the shared conformance suite (PI_SHARED)"]
async fn provider_cassettes_are_current() {
    let shared = std::env::var("PI_CONFORMANCE_DIR").unwrap_or_else(|_| {
        std::env::var("PI_SHARED").map_or_else(
            |_| "../shared/conformance".to_owned(),
            |s| format!("{s}/conformance"),
        )
    });
    let write = std::env::var("PI_CASSETTE_WRITE").is_ok_and(|v| v == "1");
    let scratch = tempfile::tempdir().unwrap();
    let out = if write {
        std::path::PathBuf::from(CASSETTES)
    } else {
        scratch.path().to_owned()
    };
    for (name, api, source) in CASES {
        let text = std::fs::read_to_string(format!("{shared}/fixtures/{source}"))
            .unwrap_or_else(|e| panic!("{shared}/fixtures/{source}: {e} (set PI_SHARED)"));
        let inner: SharedTransport = Arc::new(Stream(framed_chunks(api, &text)));
        let recorder = Recorder::new(out.join(format!("{name}.json")), inner);
        let (model, context, options) = request_for(api);
        let options = options.with_transport(recorder.clone());
        let (_, message) = run(&model, &context, &options).await;
        assert!(message.error().is_none(), "{name}: {:?}", message.error());
        let cassette = recorder.finish().unwrap();
        assert!(cassette.scrubbed.headers >= 1, "{name}: the key header");
        let golden = format!(
            "{shared}/golden/{}.pi-ai-events.jsonl",
            source.replace('/', "__")
        );
        let events = std::fs::read(golden).unwrap();
        std::fs::write(out.join(format!("{name}.events.jsonl")), events).unwrap();
        if !write {
            for file in [format!("{name}.json"), format!("{name}.events.jsonl")] {
                let made = std::fs::read(out.join(&file)).unwrap();
                let committed = std::fs::read(format!("{CASSETTES}/{file}")).unwrap();
                assert!(
                    made == committed,
                    "{CASSETTES}/{file} is not what the shared suite makes: write it again with PI_CASSETTE_WRITE=1 (see this test's docs)"
                );
            }
        }
    }
}
