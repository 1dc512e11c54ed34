//! Differential tests of the providers whose requests pi builds inside a vendor SDK
//! (Bedrock's Converse stream, Mistral): pi-ai 0.73.1 itself runs on node against a local
//! server answering with recorded bytes (`tests/support/pi_wire.mjs`), and what it sent (the
//! wire body, key order included, the path, the auth headers) and the events it made are
//! the goldens `tests/fixtures/{bedrock,mistral}/golden.json`. Ours runs against the same
//! bytes, split the same way, and must match them.
//!
//! * `*_matches_pi_goldens` run offline in a plain `cargo test`.
//! * `goldens_are_pis_own_output` (needs node and pi's npm packages, run by `.ci/run`) runs
//!   pi again and requires the committed goldens to be exactly its output; with
//!   `PI_WIRE_BLESS=1` it writes them instead.
//!
//! The recorded responses and their sources are in `tests/fixtures/*/SOURCES.md`.
#![cfg(all(feature = "bedrock", feature = "mistral"))]

#[path = "support/pi_npm.rs"]
mod pi_npm;
#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use futures::StreamExt;
use pi_engine::providers::bedrock::eventstream::{encode_event, encode_exception};
use pi_engine::{ApiRegistry, Context, Model, StreamOptions, llm::RetryPolicy};
use serde_json::{Map, Value, json};
use support::{MockServer, Reply, Step};

/// One case: a model call and the response it gets.
struct Case {
    name: String,
    model: Value,
    context: Value,
    options: Value,
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    /// Bytes per write (frames and events split across reads).
    chunk: usize,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn tools() -> Value {
    json!([
        {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "Path"}}, "required": ["path"]}},
        {"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}}, "required": ["command"]}}
    ])
}

fn simple_context() -> Value {
    json!({"systemPrompt": "You are a helpful assistant.", "messages": [
        {"role": "user", "content": "What is in a.txt?", "timestamp": 1}
    ], "tools": tools()})
}

/// A conversation with everything a request carries: thinking with and without a
/// signature, tool calls with ids to normalise, consecutive tool results (an error, an
/// image), images, a reply of another provider.
fn rich_context(api: &str, provider: &str, model: &str) -> Value {
    let usage = json!({"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    json!({"systemPrompt": "You are a helpful assistant.", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Look at this"}, {"type": "image", "data": PNG, "mimeType": "image/png"}], "timestamp": 1},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The user wants the file.", "thinkingSignature": "c2lnbmF0dXJl"},
            {"type": "thinking", "thinking": "Unsigned thought."},
            {"type": "text", "text": "Reading it."},
            {"type": "text", "text": "   "},
            {"type": "toolCall", "id": "call|01.abc/xyz", "name": "read", "arguments": {"path": "a.txt"}},
            {"type": "toolCall", "id": "toolu_02", "name": "bash", "arguments": {"command": "ls", "timeout": 5}}
        ], "api": api, "provider": provider, "model": model, "usage": usage, "stopReason": "toolUse", "timestamp": 2},
        {"role": "toolResult", "toolCallId": "call|01.abc/xyz", "toolName": "read", "content": [{"type": "text", "text": "hello"}], "isError": false, "timestamp": 3},
        {"role": "toolResult", "toolCallId": "toolu_02", "toolName": "bash", "content": [{"type": "text", "text": "boom"}, {"type": "image", "data": PNG, "mimeType": "image/png"}], "isError": true, "timestamp": 4},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Another model's thought.", "thinkingSignature": "xyz"},
            {"type": "text", "text": "From elsewhere."}
        ], "api": "openai-responses", "provider": "openai", "model": "gpt-5", "usage": usage, "stopReason": "stop", "timestamp": 5},
        {"role": "user", "content": "Continue", "timestamp": 6}
    ], "tools": tools()})
}

fn bedrock_model(id: &str, name: &str, reasoning: bool, images: bool) -> Value {
    json!({"id": id, "name": name, "api": "bedrock-converse-stream", "provider": "amazon-bedrock", "baseUrl": "",
        "reasoning": reasoning, "input": if images { json!(["text", "image"]) } else { json!(["text"]) },
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}, "contextWindow": 200000, "maxTokens": 64000})
}

fn mistral_model(id: &str, reasoning: bool, images: bool) -> Value {
    json!({"id": id, "name": id, "api": "mistral-conversations", "provider": "mistral", "baseUrl": "",
        "reasoning": reasoning, "input": if images { json!(["text", "image"]) } else { json!(["text"]) },
        "cost": {"input": 0.4, "output": 2, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 128000, "maxTokens": 32000})
}

const EVENTSTREAM: &str = "application/vnd.amazon.eventstream";

fn bedrock_case(name: &str, model: Value, context: Value, options: Value, body: Vec<u8>) -> Case {
    Case {
        name: format!("bedrock/{name}"),
        model,
        context,
        options,
        status: 200,
        headers: vec![
            ("content-type", EVENTSTREAM.into()),
            ("x-amzn-requestid", "req-1".into()),
        ],
        body,
        chunk: 7,
    }
}

/// Frames made from decoded events (`{"event"|"exception", "payload"}`).
fn frames_of(events_json: &Path) -> Vec<u8> {
    let events: Vec<Value> = serde_json::from_slice(&std::fs::read(events_json).unwrap()).unwrap();
    let mut body = Vec::new();
    for e in events {
        let payload = serde_json::to_vec(&e["payload"]).unwrap();
        match (e["event"].as_str(), e["exception"].as_str()) {
            (Some(kind), _) => body.extend(encode_event(kind, &payload).unwrap()),
            (_, Some(kind)) => body.extend(encode_exception(kind, &payload).unwrap()),
            _ => panic!("bad event {e}"),
        }
    }
    body
}

fn small_text_bedrock() -> Vec<u8> {
    std::fs::read(root().join("bedrock/text_nova_micro.eventstream")).unwrap()
}

fn bedrock_cases() -> Vec<Case> {
    let dir = root().join("bedrock");
    let claude = || {
        bedrock_model(
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "Claude Sonnet 4.5",
            true,
            true,
        )
    };
    let nova = || bedrock_model("amazon.nova-micro-v1:0", "Nova Micro", false, false);
    let mut cases = Vec::new();
    // Every recorded stream, with a model of its family.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".eventstream").map(str::to_owned)
        })
        .collect();
    names.sort();
    for name in names {
        let model = if name.contains("claude") {
            claude()
        } else {
            nova()
        };
        let mut body = std::fs::read(dir.join(format!("{name}.eventstream"))).unwrap();
        if name.starts_with("synthetic_") {
            // Hand-made without the `messageStart` every real stream opens with: ours emits
            // `start` when the response opens, pi on that frame (SOURCES.md).
            let mut framed = encode_event("messageStart", br#"{"role":"assistant"}"#).unwrap();
            framed.append(&mut body);
            body = framed;
        }
        cases.push(bedrock_case(
            &name,
            model,
            simple_context(),
            json!({"apiKey": "test-token"}),
            body,
        ));
    }
    // Recorded as decoded events only: frames synthesized from them.
    let kimi = bedrock_model(
        "moonshotai.kimi-k2-thinking",
        "Kimi K2 Thinking",
        true,
        false,
    );
    cases.push(bedrock_case(
        "reasoning_tool_use_kimi_k2",
        kimi,
        simple_context(),
        json!({"apiKey": "test-token", "reasoning": "medium"}),
        frames_of(&dir.join("reasoning_tool_use_kimi_k2.events.json")),
    ));
    // An HTTP error before the stream.
    cases.push(Case {
        name: "bedrock/http400_invalid_model".into(),
        model: nova(),
        context: simple_context(),
        options: json!({"apiKey": "test-token"}),
        status: 400,
        headers: vec![
            ("content-type", "application/json".into()),
            (
                "x-amzn-errortype",
                "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/".into(),
            ),
        ],
        body: std::fs::read(dir.join("http400_invalid_model.response.json")).unwrap(),
        chunk: 0,
    });
    // Requests: one context, the options and model families that change the body.
    let text = small_text_bedrock;
    let request_cases = [
        (
            "claude_rich_default",
            claude(),
            json!({"apiKey": "test-token"}),
        ),
        (
            "claude_rich_budget_medium",
            claude(),
            json!({"apiKey": "test-token", "reasoning": "medium", "maxTokens": 4000, "temperature": 0.5}),
        ),
        (
            "claude_rich_xhigh_long_cache",
            claude(),
            json!({"apiKey": "test-token", "reasoning": "xhigh", "cacheRetention": "long"}),
        ),
        (
            "claude_rich_no_cache_tool_any",
            claude(),
            json!({"apiKey": "test-token", "cacheRetention": "none", "toolChoice": "any"}),
        ),
        (
            "claude_rich_tool_named",
            claude(),
            json!({"apiKey": "test-token", "toolChoice": {"type": "tool", "name": "bash"}}),
        ),
        (
            "claude_rich_tool_none",
            claude(),
            json!({"apiKey": "test-token", "toolChoice": "none"}),
        ),
        (
            "opus46_adaptive_low",
            bedrock_model(
                "global.anthropic.claude-opus-4-6-v1",
                "Claude Opus 4.6",
                true,
                true,
            ),
            json!({"apiKey": "test-token", "reasoning": "low"}),
        ),
        (
            "opus47_adaptive_xhigh",
            bedrock_model(
                "us.anthropic.claude-opus-4-7",
                "Claude Opus 4.7",
                true,
                true,
            ),
            json!({"apiKey": "test-token", "reasoning": "xhigh"}),
        ),
        (
            "profile_arn_named_claude",
            bedrock_model(
                "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc",
                "claude sonnet 4.6",
                true,
                true,
            ),
            json!({"apiKey": "test-token", "reasoning": "high"}),
        ),
        (
            "nova_rich_reasoning_ignored",
            nova(),
            json!({"apiKey": "test-token", "reasoning": "high", "maxTokens": 100}),
        ),
        (
            "claude_3_haiku_no_cache",
            bedrock_model(
                "anthropic.claude-3-haiku-20240307-v1:0",
                "Claude 3 Haiku",
                false,
                true,
            ),
            json!({"apiKey": "test-token", "requestMetadata": {"team": "a"}}),
        ),
    ];
    for (name, model, options) in request_cases {
        let api = "bedrock-converse-stream";
        let id = model["id"].as_str().unwrap().to_owned();
        let context = rich_context(api, "amazon-bedrock", &id);
        cases.push(bedrock_case(name, model, context, options, text()));
    }
    cases
}

fn mistral_case(name: &str, model: Value, context: Value, options: Value, body: Vec<u8>) -> Case {
    Case {
        name: format!("mistral/{name}"),
        model,
        context,
        options,
        status: 200,
        headers: vec![("content-type", "text/event-stream".into())],
        body,
        chunk: 13,
    }
}

fn mistral_cases() -> Vec<Case> {
    let dir = root().join("mistral");
    let small = || mistral_model("mistral-small-latest", true, true);
    let mut cases = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".sse").map(str::to_owned)
        })
        .collect();
    names.sort();
    for name in names {
        let model = if name.contains("magistral") {
            mistral_model("magistral-medium-latest", true, false)
        } else {
            small()
        };
        let body = std::fs::read(dir.join(format!("{name}.sse"))).unwrap();
        cases.push(mistral_case(
            &name,
            model,
            simple_context(),
            json!({"apiKey": "test-key"}),
            body,
        ));
    }
    cases.push(Case {
        name: "mistral/http429".into(),
        model: small(),
        context: simple_context(),
        options: json!({"apiKey": "test-key"}),
        status: 429,
        headers: vec![("content-type", "application/json".into())],
        body: br#"{"object":"error","message":"Requests rate limit exceeded","type":"rate_limited","param":null,"code":"1300"}"#.to_vec(),
        chunk: 0,
    });
    let text = || std::fs::read(dir.join("text_mistral_small.sse")).unwrap();
    let request_cases = [
        ("small_rich_default", small(), json!({"apiKey": "test-key"})),
        (
            "small_rich_effort",
            small(),
            json!({"apiKey": "test-key", "reasoning": "low", "maxTokens": 500, "temperature": 0.3, "sessionId": "sess-1"}),
        ),
        (
            "magistral_rich_prompt_mode",
            mistral_model("magistral-medium-latest", true, false),
            json!({"apiKey": "test-key", "reasoning": "high"}),
        ),
        (
            "small_rich_tool_choice",
            small(),
            json!({"apiKey": "test-key", "toolChoice": {"type": "function", "function": {"name": "read"}}}),
        ),
        (
            "small_rich_tool_any",
            small(),
            json!({"apiKey": "test-key", "toolChoice": "any"}),
        ),
        (
            "text_only_model_images_dropped",
            mistral_model("codestral-latest", false, false),
            json!({"apiKey": "test-key"}),
        ),
    ];
    for (name, model, options) in request_cases {
        let id = model["id"].as_str().unwrap().to_owned();
        let context = rich_context("mistral-conversations", "mistral", &id);
        cases.push(mistral_case(name, model, context, options, text()));
    }
    cases
}

/// Removes what differs between runs: timestamps, and the error text (each SDK words it its
/// own way; its presence is compared). Numbers compare by value, as JavaScript's do
/// (`7006652.0` is `7006652`), and `toolcall_start`'s `id` and `toolName` (the crate's
/// addition to pi's event) are left out.
fn normalize(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                && n.is_f64()
            {
                *value = json!(f as i64);
            }
        }
        Value::Object(map) => {
            map.remove("timestamp");
            if map.get("type") == Some(&json!("toolcall_start")) {
                map.remove("id");
                map.remove("toolName");
            }
            if let Some(m) = map.get_mut("errorMessage") {
                *m = json!("<error>");
            }
            map.values_mut().for_each(normalize);
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

/// The request as compared: path, the auth and affinity headers, the body.
fn request_view(path: &str, header: impl Fn(&str) -> Option<String>, body: Value) -> Value {
    let mut headers = Map::new();
    for name in ["authorization", "x-affinity"] {
        if let Some(v) = header(name) {
            headers.insert(name.into(), v.into());
        }
    }
    json!({"path": path, "headers": headers, "body": body})
}

/// Ours: the case run against a local server answering with its bytes.
async fn ours(case: &Case) -> Value {
    let mut head: Vec<(&str, &str)> = case.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    head.push(("transfer-encoding", "chunked"));
    let mut reply = Reply::head(case.status, &head);
    let step = if case.chunk == 0 {
        case.body.len().max(1)
    } else {
        case.chunk
    };
    for part in case.body.chunks(step) {
        reply = reply.then(Step::Write(support::chunk(part)));
    }
    reply = reply.then(Step::Write(b"0\r\n\r\n".to_vec()));
    // A retried error gets the same answer.
    let server = MockServer::start(vec![reply.clone(), reply.clone(), reply.clone(), reply]).await;
    let mut model: Model = serde_json::from_value(case.model.clone()).unwrap();
    model.base_url = server.url().to_owned();
    let context: Context = serde_json::from_value(case.context.clone()).unwrap();
    let options: StreamOptions = serde_json::from_value(case.options.clone()).unwrap();
    let options = options.with_retry(RetryPolicy::none());
    let registry = ApiRegistry::global();
    let mut stream = if options.reasoning.is_some() {
        registry.stream_simple(&model, &context, &options)
    } else {
        registry.stream(&model, &context, &options)
    };
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(serde_json::to_value(&event).unwrap());
    }
    let message = stream.result().await;
    events.push(json!({"type": "__final_message__", "message": pi_engine::Message::from(message)}));
    let requests: Vec<Value> = server
        .requests()
        .iter()
        .take(1)
        .map(|r| {
            let body = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
            request_view(&r.path, |n| r.header(n).map(str::to_owned), body)
        })
        .collect();
    let mut out = json!({"requests": requests, "events": events});
    normalize(&mut out);
    out
}

/// pi's output for `cases`, normalized as ours is.
fn pis(cases: &[Case]) -> Vec<Value> {
    let modules = pi_npm::require("@mariozechner/pi-ai");
    let input: Vec<Value> = cases
        .iter()
        .map(|c| {
            let headers: Map<String, Value> =
                c.headers.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect();
            let bedrock = c.name.starts_with("bedrock/");
            let env = if bedrock {
                json!({"AWS_BEARER_TOKEN_BEDROCK": "test-token", "AWS_BEDROCK_FORCE_HTTP1": "1",
                       "AWS_REGION": null, "AWS_DEFAULT_REGION": null, "AWS_PROFILE": null, "PI_CACHE_RETENTION": null,
                       "AWS_MAX_ATTEMPTS": "1"})
            } else {
                json!({"PI_CACHE_RETENTION": null})
            };
            json!({"model": c.model, "context": c.context, "options": c.options, "env": env,
                   "response": {"status": c.status, "headers": headers, "chunk": c.chunk,
                                "body": base64::engine::general_purpose::STANDARD.encode(&c.body)}})
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cases.json");
    std::fs::write(&file, serde_json::to_vec(&input).unwrap()).unwrap();
    let out = pi_npm::stdout_of(pi_npm::node_script("pi_wire.mjs", &modules).arg(&file));
    let results: Vec<Value> = serde_json::from_slice(&out).unwrap();
    results
        .into_iter()
        .map(|r| {
            let requests: Vec<Value> = r["requests"]
                .as_array()
                .unwrap()
                .iter()
                .take(1)
                .map(|q| {
                    let header = |n: &str| q["headers"][n].as_str().map(str::to_owned);
                    request_view(q["path"].as_str().unwrap(), header, q["body"].clone())
                })
                .collect();
            let mut out = json!({"requests": requests, "events": r["events"]});
            normalize(&mut out);
            out
        })
        .collect()
}

fn golden_path(provider: &str) -> PathBuf {
    root().join(provider).join("golden.json")
}

fn load_goldens(provider: &str) -> Map<String, Value> {
    let text = std::fs::read_to_string(golden_path(provider)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Compares ours with the goldens, case by case; one message listing every difference.
async fn check(provider: &str, cases: Vec<Case>) {
    let goldens = load_goldens(provider);
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.name.split_once('/').unwrap().1;
        let Some(golden) = goldens.get(name) else {
            failures.push(format!(
                "{}: no golden (run with PI_WIRE_BLESS=1)",
                case.name
            ));
            continue;
        };
        let got = ours(case).await;
        for part in ["requests", "events"] {
            let want = serde_json::to_string_pretty(&golden[part]).unwrap();
            let have = serde_json::to_string_pretty(&got[part]).unwrap();
            // A request body is compared as text (key order counts: it is what the server
            // reads); events as values (pi's message keys follow its assignment order).
            let same = if part == "requests" {
                want == have
            } else {
                golden[part] == got[part]
            };
            if !same {
                failures.push(format!(
                    "{} {part}:\n--- pi\n{want}\n--- ours\n{have}",
                    case.name
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[tokio::test]
async fn bedrock_matches_pi_goldens() {
    check("bedrock", bedrock_cases()).await;
}

#[tokio::test]
async fn mistral_matches_pi_goldens() {
    check("mistral", mistral_cases()).await;
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn goldens_are_pis_own_output() {
    let bless = std::env::var_os("PI_WIRE_BLESS").is_some_and(|v| v == "1");
    for (provider, cases) in [("bedrock", bedrock_cases()), ("mistral", mistral_cases())] {
        let outputs = pis(&cases);
        let fresh: Map<String, Value> = cases
            .iter()
            .zip(outputs)
            .map(|(c, o)| (c.name.split_once('/').unwrap().1.to_owned(), o))
            .collect();
        if bless {
            let text = serde_json::to_string_pretty(&fresh).unwrap() + "\n";
            std::fs::write(golden_path(provider), text).unwrap();
            continue;
        }
        let committed = load_goldens(provider);
        for (name, value) in &fresh {
            assert_eq!(
                committed.get(name),
                Some(value),
                "{provider}/{name}: the committed golden is not pi's output (PI_WIRE_BLESS=1 rewrites it)"
            );
        }
        assert_eq!(committed.len(), fresh.len(), "{provider}: stale goldens");
    }
}
