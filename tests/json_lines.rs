//! pi's JSON mode, line for line: an `AgentSession` with the built-in tools runs the
//! conversation pi 0.73.1 had in `pi --mode json "Create notes.txt, fix it, and show it"`
//! (tests/fixtures/pi/pi-mode-json-<api>.jsonl), against a local server replaying the shared
//! conformance mock's scripted replies (`mock_llm_server.py`, ported below), and its
//! [`JsonLinesWriter`] output is compared with pi's stdout for the four apis.
//!
//! The conversation: five turns of thinking + text + one tool call (bash, write, edit, read,
//! read of a missing file), then a final text, in a directory holding `README.md`.
//!
//! Compared: the sequence of lines (each line's `type`, its message's `role`, its
//! `assistantMessageEvent.type`), and then every line as JSON — each field present in one is
//! present in the other, with the same value — after normalizing what legitimately differs:
//!
//! * the header's `id`, `timestamp` and `cwd`, every message `timestamp`, the working
//!   directory inside strings (the missing file's error names it), and Google's
//!   synthesized tool-call ids (`<name>_<ms>_<n>`);
//! * how many progress updates `bash` sends (it depends on how its output arrives: pi's own
//!   runs send 2 or 3), see [`collapse_progress`];
//! * in the reply as it streams (`message_start`'s message, `message_update`'s `message`
//!   and `partial`): values pi shows late or racily, pi-ai's scratch fields, and the
//!   metadata pi-ai writes into its partial reply as the provider reports it, see
//!   [`streaming_reply_shapes`]. Our own updates are checked exactly against the events
//!   instead ([`check_our_updates`]). `message_end`, `turn_end` and `agent_end` carry the
//!   whole replies and are compared in full.
//!
//! `pi --mode rpc` writes the same event lines, after the response to its `prompt` command:
//! [`rpc_mode_lines_are_pis`] checks them and their order with a response line.
#![cfg(all(
    feature = "tools",
    feature = "anthropic",
    feature = "openai",
    feature = "google"
))]

mod support;

use pi_engine::ThinkingLevel;
use pi_engine::agent_session::{AgentSession, JsonLinesWriter};
use pi_engine::llm::ModelRegistry;
use pi_engine::session::SessionOptions;
use pi_engine::tools::BuiltinTools;
use serde_json::{Value, json};
use support::{MockServer, Reply};

const PROMPT: &str = "Create notes.txt, fix it, and show it";

/// The mock's script: each step's tool and its arguments as the mock sends them (Python's
/// `json.dumps`, split in two halves for the streamed deltas).
const SCRIPT: [(&str, &str); 5] = [
    ("bash", r#"{"command": "echo hello-from-mock-tool && ls"}"#),
    (
        "write",
        r#"{"path": "notes.txt", "content": "line one\nline two\n"}"#,
    ),
    (
        "edit",
        r#"{"path": "notes.txt", "edits": [{"oldText": "line two", "newText": "line 2"}]}"#,
    ),
    ("read", r#"{"path": "notes.txt"}"#),
    ("read", r#"{"path": "does-not-exist.txt"}"#),
];

const THINK: [&str; 2] = ["The user wants something. ", "I should call a tool first."];
const TEXT1: [&str; 2] = ["Let me check ", "that for you."];
const FINAL: [&str; 3] = [
    "Done. The tool ",
    "returned its output ",
    "and everything looks fine.",
];

// ----- the mock's scripted replies (mock_llm_server.py) -----------------------------------

/// One step of the script: `Some((tool, args))` for a tool call, `None` for the final answer.
type Step = Option<(&'static str, &'static str)>;

fn halves(args: &str) -> [&str; 2] {
    let mid = args.len() / 2; // ASCII: Python's character count
    [&args[..mid], &args[mid..]]
}

/// `event: <type>\ndata: <json>\n\n` frames, one per chunk.
fn typed_frames(events: Vec<Value>) -> Vec<String> {
    events
        .into_iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

fn anthropic(model: &str, step: Step) -> Vec<String> {
    let mut ev = vec![
        json!({"type": "message_start", "message": {"id": "msg_mock_1",
        "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 42,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 8, "output_tokens": 1}}}),
    ];
    let mut idx = 0;
    if step.is_some() {
        ev.push(json!({"type": "content_block_start", "index": idx,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}));
        for t in THINK {
            ev.push(json!({"type": "content_block_delta", "index": idx,
                "delta": {"type": "thinking_delta", "thinking": t}}));
        }
        ev.push(json!({"type": "content_block_delta", "index": idx,
            "delta": {"type": "signature_delta", "signature": "EqMockSignature=="}}));
        ev.push(json!({"type": "content_block_stop", "index": idx}));
        idx += 1;
    }
    ev.push(json!({"type": "content_block_start", "index": idx,
        "content_block": {"type": "text", "text": ""}}));
    ev.push(json!({"type": "ping"}));
    let texts: &[&str] = if step.is_some() { &TEXT1 } else { &FINAL };
    for t in texts {
        ev.push(json!({"type": "content_block_delta", "index": idx,
            "delta": {"type": "text_delta", "text": t}}));
    }
    ev.push(json!({"type": "content_block_stop", "index": idx}));
    idx += 1;
    let mut stop = "end_turn";
    if let Some((tool, args)) = step {
        ev.push(
            json!({"type": "content_block_start", "index": idx, "content_block":
            {"type": "tool_use", "id": "toolu_mock_1", "name": tool, "input": {}}}),
        );
        let [a, b] = halves(args);
        for piece in ["", a, b] {
            ev.push(json!({"type": "content_block_delta", "index": idx,
                "delta": {"type": "input_json_delta", "partial_json": piece}}));
        }
        ev.push(json!({"type": "content_block_stop", "index": idx}));
        stop = "tool_use";
    }
    ev.push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop,
        "stop_sequence": null}, "usage": {"output_tokens": 17}}),
    );
    ev.push(json!({"type": "message_stop"}));
    typed_frames(ev)
}

fn openai_chat(model: &str, step: Step) -> Vec<String> {
    let chunk = |choices: Value| {
        json!({"id": "chatcmpl-mock123", "object": "chat.completion.chunk",
            "created": 1_795_977_000, "model": model, "choices": choices})
    };
    let mut out = vec![chunk(json!([{"index": 0,
        "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]))];
    match step {
        None => {
            for t in FINAL {
                out.push(chunk(
                    json!([{"index": 0, "delta": {"content": t}, "finish_reason": null}]),
                ));
            }
            out.push(chunk(
                json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            ));
        }
        Some((tool, args)) => {
            for t in THINK {
                out.push(chunk(
                    json!([{"index": 0, "delta": {"reasoning_content": t},
                    "finish_reason": null}]),
                ));
            }
            for t in TEXT1 {
                out.push(chunk(
                    json!([{"index": 0, "delta": {"content": t}, "finish_reason": null}]),
                ));
            }
            out.push(chunk(
                json!([{"index": 0, "delta": {"tool_calls": [{"index": 0,
                "id": "call_mock_1", "type": "function",
                "function": {"name": tool, "arguments": ""}}]}, "finish_reason": null}]),
            ));
            for piece in halves(args) {
                out.push(chunk(
                    json!([{"index": 0, "delta": {"tool_calls": [{"index": 0,
                    "function": {"arguments": piece}}]}, "finish_reason": null}]),
                ));
            }
            out.push(chunk(
                json!([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
            ));
        }
    }
    let mut usage = chunk(json!([]));
    usage["usage"] = json!({"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59,
        "prompt_tokens_details": {"cached_tokens": 8}});
    out.push(usage);
    let mut frames: Vec<String> = out.iter().map(|e| format!("data: {e}\n\n")).collect();
    frames.push("data: [DONE]\n\n".into());
    frames
}

fn responses(model: &str, step: Step) -> Vec<String> {
    let resp = json!({"id": "resp_mock_1", "object": "response", "created_at": 1_795_977_000,
        "status": "in_progress", "model": model, "output": []});
    let mut ev = vec![
        json!({"type": "response.created", "response": resp}),
        json!({"type": "response.in_progress", "response": resp}),
    ];
    let mut items = Vec::new();
    let mut oi = 0;
    if step.is_some() {
        let r = json!({"id": "rs_mock_1", "type": "reasoning", "summary": []});
        ev.push(json!({"type": "response.output_item.added", "output_index": oi, "item": r}));
        ev.push(
            json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_mock_1",
            "output_index": oi, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        );
        for t in THINK {
            ev.push(json!({"type": "response.reasoning_summary_text.delta",
                "item_id": "rs_mock_1", "output_index": oi, "summary_index": 0, "delta": t}));
        }
        let full = THINK.concat();
        ev.push(
            json!({"type": "response.reasoning_summary_text.done", "item_id": "rs_mock_1",
            "output_index": oi, "summary_index": 0, "text": full}),
        );
        ev.push(
            json!({"type": "response.reasoning_summary_part.done", "item_id": "rs_mock_1",
            "output_index": oi, "summary_index": 0,
            "part": {"type": "summary_text", "text": full}}),
        );
        let r = json!({"id": "rs_mock_1", "type": "reasoning",
            "summary": [{"type": "summary_text", "text": full}]});
        ev.push(json!({"type": "response.output_item.done", "output_index": oi, "item": r}));
        items.push(r);
        oi += 1;
    }
    let texts: &[&str] = if step.is_some() { &TEXT1 } else { &FINAL };
    let m = json!({"id": "msg_mock_1", "type": "message", "status": "in_progress",
        "role": "assistant", "content": []});
    ev.push(json!({"type": "response.output_item.added", "output_index": oi, "item": m}));
    ev.push(
        json!({"type": "response.content_part.added", "item_id": "msg_mock_1",
        "output_index": oi, "content_index": 0,
        "part": {"type": "output_text", "text": "", "annotations": []}}),
    );
    for t in texts {
        ev.push(
            json!({"type": "response.output_text.delta", "item_id": "msg_mock_1",
            "output_index": oi, "content_index": 0, "delta": t}),
        );
    }
    let full = texts.concat();
    ev.push(
        json!({"type": "response.output_text.done", "item_id": "msg_mock_1",
        "output_index": oi, "content_index": 0, "text": full}),
    );
    let part = json!({"type": "output_text", "text": full, "annotations": []});
    ev.push(
        json!({"type": "response.content_part.done", "item_id": "msg_mock_1",
        "output_index": oi, "content_index": 0, "part": part}),
    );
    let m = json!({"id": "msg_mock_1", "type": "message", "status": "completed",
        "role": "assistant", "content": [part]});
    ev.push(json!({"type": "response.output_item.done", "output_index": oi, "item": m}));
    items.push(m);
    oi += 1;
    if let Some((tool, args)) = step {
        let fc = json!({"id": "fc_mock_1", "type": "function_call", "status": "in_progress",
            "call_id": "call_mock_1", "name": tool, "arguments": ""});
        ev.push(json!({"type": "response.output_item.added", "output_index": oi, "item": fc}));
        for piece in halves(args) {
            ev.push(json!({"type": "response.function_call_arguments.delta",
                "item_id": "fc_mock_1", "output_index": oi, "delta": piece}));
        }
        ev.push(
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_mock_1",
            "output_index": oi, "arguments": args}),
        );
        let fc = json!({"id": "fc_mock_1", "type": "function_call", "status": "completed",
            "call_id": "call_mock_1", "name": tool, "arguments": args});
        ev.push(json!({"type": "response.output_item.done", "output_index": oi, "item": fc}));
        items.push(fc);
    }
    let mut done = resp.clone();
    done["status"] = json!("completed");
    done["output"] = json!(items);
    done["usage"] = json!({"input_tokens": 42, "input_tokens_details": {"cached_tokens": 8},
        "output_tokens": 17, "output_tokens_details": {"reasoning_tokens": 5}, "total_tokens": 59});
    ev.push(json!({"type": "response.completed", "response": done}));
    for (i, e) in ev.iter_mut().enumerate() {
        e["sequence_number"] = json!(i);
    }
    typed_frames(ev)
}

fn gemini(model: &str, step: Step) -> Vec<String> {
    let usage = json!({"promptTokenCount": 42, "candidatesTokenCount": 17,
        "thoughtsTokenCount": 5, "totalTokenCount": 64});
    let chunk = |parts: Value, finish: Option<&str>| {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(f) = finish {
            candidate["finishReason"] = json!(f);
        }
        json!({"candidates": [candidate], "usageMetadata": usage, "modelVersion": model,
            "responseId": "mockresp1"})
    };
    let mut out = Vec::new();
    match step {
        None => {
            for t in FINAL {
                out.push(chunk(json!([{"text": t}]), None));
            }
            out.push(chunk(json!([{"text": ""}]), Some("STOP")));
        }
        Some((tool, args)) => {
            for t in THINK {
                out.push(chunk(json!([{"text": t, "thought": true}]), None));
            }
            for t in TEXT1 {
                out.push(chunk(json!([{"text": t}]), None));
            }
            let args: Value = serde_json::from_str(args).unwrap();
            out.push(chunk(
                json!([{"functionCall": {"name": tool, "args": args},
                    "thoughtSignature": "bW9jay1zaWduYXR1cmU="}]),
                Some("STOP"),
            ));
        }
    }
    out.iter().map(|e| format!("data: {e}\r\n\r\n")).collect()
}

/// The mock's replies to the six requests of the conversation, with its per-step ids
/// (`_mock_1` becomes `_mock_<step>`).
fn replies(api: &str, model: &str) -> Vec<Reply> {
    let steps = SCRIPT.iter().copied().map(Some).chain([None]);
    steps
        .enumerate()
        .map(|(n, step)| {
            let frames = match api {
                "anthropic-messages" => anthropic(model, step),
                "openai-completions" => openai_chat(model, step),
                "openai-responses" => responses(model, step),
                "google-generative-ai" => gemini(model, step),
                other => panic!("no mock for {other}"),
            };
            let k = format!("_mock_{}", n + 1);
            let frames: Vec<String> = frames.iter().map(|f| f.replace("_mock_1", &k)).collect();
            Reply::sse(&frames)
        })
        .collect()
}

// ----- running the session ------------------------------------------------------------------

/// The provider and model pi ran for `api` (tests/fixtures/pi/models.json).
fn provider_model(api: &str) -> (&'static str, &'static str) {
    match api {
        "anthropic-messages" => ("mock-anthropic", "mock-claude"),
        "openai-completions" => ("mock-openai", "mock-chat"),
        "openai-responses" => ("mock-responses", "mock-resp"),
        "google-generative-ai" => ("mock-google", "mock-gemini"),
        other => panic!("no model for {other}"),
    }
}

/// What the writer writes first.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// `pi --mode json`: the session header.
    Json,
    /// `pi --mode rpc`: the response to the `prompt` command (written by pi when the prompt
    /// passed its checks, before the run's events).
    Rpc,
}

/// The response pi's RPC mode writes to `{"id":"req-1","type":"prompt",…}`.
fn prompt_response() -> Value {
    json!({"id": "req-1", "type": "response", "command": "prompt", "success": true})
}

/// Runs the prompt as `pi --mode json` (or `--mode rpc`) does and returns the lines written,
/// the working directory and the server.
async fn run(api: &str, mode: Mode) -> (Vec<Value>, String, MockServer) {
    let (provider, model_id) = provider_model(api);
    let server = MockServer::start(replies(api, model_id)).await;
    let models_json = std::fs::read_to_string("tests/fixtures/pi/models.json")
        .unwrap()
        .replace("http://127.0.0.1:18080", server.url());
    let registry = ModelRegistry::from_models_json(&models_json).unwrap();
    let model = registry.find(provider, model_id).unwrap().clone();

    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("README.md"), "# pi-work\n").unwrap();
    let sessions = tempfile::tempdir().unwrap();
    // As the tools name it (a temporary directory may be behind a symbolic link).
    let cwd = work.path().canonicalize().unwrap();
    let cwd = cwd.to_str().unwrap().to_owned();
    let session = AgentSession::builder(
        SessionOptions::new()
            .with_session_dir(sessions.path())
            .create(&cwd),
    )
    .registry(registry)
    .default_model(model)
    .thinking_level(ThinkingLevel::High)
    .system_prompt("You are a coding agent.")
    .tools(BuiltinTools::new(&cwd).coding())
    .build()
    .unwrap();

    let (sink, mut out) = tokio::io::duplex(64 * 1024);
    let reader = tokio::spawn(async move {
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out, &mut text)
            .await
            .unwrap();
        text
    });
    let writer = JsonLinesWriter::new(sink);
    match mode {
        Mode::Json => writer.write_header(&session).unwrap(),
        Mode::Rpc => writer.write_value(&prompt_response()).unwrap(),
    }
    writer.attach(&session);
    let outcome = session.prompt(PROMPT).await.unwrap();
    assert!(outcome.is_completed(), "{outcome:?}");
    writer.finish().await.unwrap();
    let text = reader.await.unwrap();

    assert!(text.ends_with('\n'));
    let lines = text
        .split_terminator('\n')
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // The tool results depend on the directory's content: what the tools did is checked too.
    assert_eq!(
        std::fs::read_to_string(work.path().join("notes.txt")).unwrap(),
        "line one\nline 2\n"
    );
    drop(session);
    (lines, cwd, server)
}

// ----- normalizing --------------------------------------------------------------------------

/// What legitimately differs between two runs (see the module docs).
fn normalize(lines: &mut Vec<Value>, cwd: &str) {
    if lines[0]["type"] == "session" {
        let header = lines[0].as_object_mut().unwrap();
        for key in ["id", "timestamp", "cwd"] {
            assert!(header[key].is_string(), "header {key}");
            header.insert(key.into(), json!(format!("<{key}>")));
        }
    }
    let google_id = regex::Regex::new(r"^([a-z]+)_\d+_\d+$").unwrap();
    for line in lines.iter_mut() {
        walk(line, &mut |key, v| {
            if key == Some("timestamp") && v.is_number() {
                *v = json!(0);
            }
            if let Value::String(s) = v {
                if s.contains(cwd) {
                    *s = s.replace(cwd, "<cwd>");
                }
                if matches!(key, Some("id" | "toolCallId")) {
                    *s = google_id.replace(s, "${1}_<ms>_<n>").into_owned();
                }
            }
        });
        streaming_reply_shapes(line);
    }
    collapse_progress(lines);
}

/// Calls `f` on every value (with the key it is under, for object members), depth first.
fn walk(v: &mut Value, f: &mut impl FnMut(Option<&str>, &mut Value)) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                f(Some(k), child);
                walk(child, f);
            }
        }
        Value::Array(items) => {
            for child in items {
                f(None, child);
                walk(child, f);
            }
        }
        _ => {}
    }
}

/// Fields pi-ai keeps on a block only while the reply streams (deleted when it ends).
const SCRATCH: [&str; 4] = ["index", "partialJson", "partialArgs", "streamIndex"];
/// Block metadata pi-ai writes into the partial reply as the provider reports it.
const SIGNATURES: [&str; 3] = ["thinkingSignature", "textSignature", "thoughtSignature"];

/// The reply of a `message_start` and of a `message_update` (`message`, `partial`) as it
/// streams, reduced to what two runs share:
///
/// * pi serializes an event some time after it happened, while pi-ai goes on writing into
///   the same partial reply: pi's line may show text, arguments and even blocks of later
///   events, and the first `message_start` shows the usage of the first SSE event (input
///   42), the later ones zeros. So the block being streamed (at `contentIndex`) is compared by
///   its type and fields, blocks after it not at all, and usage by its fields.
/// * The metadata (`responseId`, the stop reason, block signatures) pi-ai writes into the
///   partial reply as the provider reports it, and its scratch fields: the crate's events
///   carry content only, so the writer's reply keeps the `message_start`'s metadata until
///   `message_end` (compared in full).
fn streaming_reply_shapes(line: &mut Value) {
    match line["type"].as_str() {
        Some("message_start") if line["message"]["role"] == "assistant" => {
            zero_numbers(&mut line["message"]["usage"]);
        }
        Some("message_update") => {
            let index = line["assistantMessageEvent"]["contentIndex"]
                .as_u64()
                .unwrap() as usize;
            let message = reply_shape(&line["message"], index);
            line["message"] = message;
            let partial = reply_shape(&line["assistantMessageEvent"]["partial"], index);
            line["assistantMessageEvent"]["partial"] = partial;
        }
        _ => {}
    }
}

fn zero_numbers(v: &mut Value) {
    walk(v, &mut |_, n| {
        if n.is_number() {
            *n = json!(0);
        }
    });
}

fn sorted_keys(v: &Value, except: &[&str]) -> Vec<String> {
    let mut keys: Vec<String> = v
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !except.contains(&k.as_str()))
        .cloned()
        .collect();
    keys.sort();
    keys
}

fn reply_shape(reply: &Value, index: usize) -> Value {
    let blocks = reply["content"].as_array().unwrap();
    assert!(blocks.len() > index, "the block of the event is there");
    let ignored: Vec<&str> = SCRATCH.iter().chain(&SIGNATURES).copied().collect();
    let content: Vec<Value> = blocks[..=index]
        .iter()
        .enumerate()
        .map(|(i, block)| {
            let mut block = block.clone();
            for k in &ignored {
                block.as_object_mut().unwrap().shift_remove(*k);
            }
            if i < index {
                block
            } else {
                json!({"type": block["type"], "fields": sorted_keys(&block, &[])})
            }
        })
        .collect();
    let mut usage = reply["usage"].clone();
    zero_numbers(&mut usage);
    json!({
        "fields": sorted_keys(reply, &["responseId"]),
        "role": reply["role"], "api": reply["api"], "provider": reply["provider"],
        "model": reply["model"], "usage": usage, "content": content,
    })
}

/// How often `bash` reports progress depends on how its output arrives (pi's own runs
/// differ: 2 updates in one, 3 in another). A run of updates of one call keeps its first and
/// its last, each update's output being a prefix of the next one's.
fn collapse_progress(lines: &mut Vec<Value>) {
    let text = |l: &Value| l["partialResult"]["content"].to_string();
    let mut out: Vec<Value> = Vec::with_capacity(lines.len());
    for line in lines.drain(..) {
        let n = out.len();
        let extends = line["type"] == "tool_execution_update"
            && n >= 2
            && out[n - 1]["type"] == "tool_execution_update"
            && out[n - 2]["type"] == "tool_execution_update"
            && out[n - 1]["toolCallId"] == line["toolCallId"];
        if extends {
            let (before, now) = (
                out[n - 1]["partialResult"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                line["partialResult"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or(""),
            );
            assert!(
                now.starts_with(&before),
                "{} then {}",
                text(&out[n - 1]),
                text(&line)
            );
            out[n - 1] = line;
        } else {
            out.push(line);
        }
    }
    *lines = out;
}

/// A line's place in the sequence: its type, its message's role, its update's type.
fn signature(line: &Value) -> String {
    let mut s = line["type"].as_str().unwrap().to_owned();
    if let Some(command) = line["command"].as_str() {
        s = format!("{s}:{command}");
    }
    if let Some(role) = line["message"]["role"].as_str() {
        s = format!("{s}:{role}");
    }
    if let Some(t) = line["assistantMessageEvent"]["type"].as_str() {
        s = format!("{s}:{t}");
    }
    s
}

fn pis_lines(api: &str) -> Vec<Value> {
    support::pi::jsonl(&format!("tests/fixtures/pi/pi-mode-json-{api}.jsonl"))
}

async fn compare_with_pi(api: &str) {
    let (mut ours, cwd, server) = run(api, Mode::Json).await;
    assert_eq!(server.requests().len(), 6, "one request per turn");
    check_our_updates(&ours);
    let mut pis = pis_lines(api);
    // pi ran in /tmp/pi-work.
    let pi_cwd = pis[0]["cwd"].as_str().unwrap().to_owned();
    normalize(&mut ours, &cwd);
    normalize(&mut pis, &pi_cwd);
    assert_same_lines(api, &ours, &pis);
}

fn assert_same_lines(what: &str, ours: &[Value], pis: &[Value]) {
    let sequence = |lines: &[Value]| lines.iter().map(signature).collect::<Vec<_>>();
    assert_eq!(
        sequence(ours),
        sequence(pis),
        "{what}: the sequence of lines"
    );
    for (i, (a, b)) in ours.iter().zip(pis).enumerate() {
        assert_eq!(
            a,
            b,
            "{what}: line {} ({}) differs\nours: {a}\npi's: {b}",
            i + 1,
            signature(b)
        );
    }
}

/// Our `message_update`s exactly: `partial` and `message` are the same reply, which is the
/// fold of the events so far, and the last one of a reply is its `message_end` content.
fn check_our_updates(lines: &[Value]) {
    let mut text = std::collections::HashMap::<u64, String>::new();
    for line in lines {
        match line["type"].as_str().unwrap() {
            "message_start" => text.clear(),
            "message_update" => {
                let event = &line["assistantMessageEvent"];
                assert_eq!(event["partial"], line["message"]);
                let index = event["contentIndex"].as_u64().unwrap();
                let block = &line["message"]["content"][index as usize];
                match event["type"].as_str().unwrap() {
                    "text_delta" | "thinking_delta" => {
                        let so_far = text.entry(index).or_default();
                        so_far.push_str(event["delta"].as_str().unwrap());
                        let field = if event["type"] == "text_delta" {
                            "text"
                        } else {
                            "thinking"
                        };
                        assert_eq!(block[field].as_str().unwrap(), so_far);
                    }
                    "text_end" => assert_eq!(block["text"], event["content"]),
                    "thinking_end" => assert_eq!(block["thinking"], event["content"]),
                    "toolcall_end" => {
                        assert_eq!(block["arguments"], event["toolCall"]["arguments"]);
                        assert_eq!(block["id"], event["toolCall"]["id"]);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn anthropic_messages_lines_are_pis() {
    compare_with_pi("anthropic-messages").await;
}

#[tokio::test]
async fn openai_completions_lines_are_pis() {
    compare_with_pi("openai-completions").await;
}

#[tokio::test]
async fn openai_responses_lines_are_pis() {
    compare_with_pi("openai-responses").await;
}

#[tokio::test]
async fn google_generative_ai_lines_are_pis() {
    compare_with_pi("google-generative-ai").await;
}

/// `pi --mode rpc`'s stdout for the same prompt: the response to `prompt`, the same event
/// lines as JSON mode, then (not reproduced here) the response to `get_state`.
#[tokio::test]
async fn rpc_mode_lines_are_pis() {
    let api = "anthropic-messages";
    let (mut ours, cwd, _server) = run(api, Mode::Rpc).await;
    let mut pis =
        support::pi::jsonl("tests/fixtures/pi/pi-mode-rpc-anthropic-messages.stdout.jsonl");
    let get_state = pis.pop().unwrap();
    assert_eq!(get_state["command"], "get_state");
    assert_eq!(pis[0], prompt_response());
    check_our_updates(&ours);
    normalize(&mut ours, &cwd);
    normalize(&mut pis, "/tmp/pi-work");
    assert_same_lines("rpc", &ours, &pis);
}

/// The script above is the one pi's run had: the deltas of each tool call are its halves.
#[test]
fn the_script_is_the_recorded_one() {
    let pis = pis_lines("anthropic-messages");
    let calls: Vec<(String, String)> = pis
        .iter()
        .filter(|l| l["type"] == "tool_execution_start")
        .map(|l| {
            (
                l["toolName"].as_str().unwrap().to_owned(),
                l["args"].to_string(),
            )
        })
        .collect();
    let script: Vec<(String, String)> = SCRIPT
        .iter()
        .map(|(t, a)| {
            let v: Value = serde_json::from_str(a).unwrap();
            ((*t).to_owned(), v.to_string())
        })
        .collect();
    assert_eq!(calls, script);
    let deltas: Vec<String> = pis
        .iter()
        .filter(|l| l["assistantMessageEvent"]["type"] == "toolcall_delta")
        .map(|l| {
            l["assistantMessageEvent"]["delta"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let ours: Vec<String> = SCRIPT
        .iter()
        .flat_map(|(_, a)| {
            let [x, y] = halves(a);
            [String::new(), x.to_owned(), y.to_owned()]
        })
        .collect();
    assert_eq!(deltas, ours);
}
