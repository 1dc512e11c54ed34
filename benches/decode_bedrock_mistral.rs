//! Bedrock's and Mistral's decoders beside Anthropic's, on the same content: a 20 MB text
//! reply (200,000 deltas of 100 bytes) and a 256 KB tool argument streamed in 64-byte pieces,
//! each framed as its provider sends it (Anthropic's SSE events, Bedrock's binary
//! event-stream frames with their random `p` padding, Mistral's chat-completion chunks). The
//! goal: each within 2x of Anthropic's time for the same content.
//!
//! The decoding is the HTTP driver's own (`pi_engine::__fuzz::replay`: bytes → framing →
//! the api's decoder → events folded into the partial message → `done`), without the network.
//!
//! `cargo bench --features bedrock --bench decode_bedrock_mistral`

// Only `decode` and `model` of the shared decoder-bench helpers are used here.
#[path = "support/decode.rs"]
#[allow(dead_code)]
mod support;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pi_engine::__fuzz::Api;
use pi_engine::providers::bedrock::eventstream::encode_event;
use serde_json::json;
use support::{decode, model};

const TEXT_DELTAS: usize = 200_000;
const TEXT_DELTA: usize = 100;
const ARG_BYTES: usize = 256 * 1024;
const ARG_DELTA: usize = 64;

/// A 100-byte delta of text: words, some multi-byte characters, a quote and a newline.
fn text_delta(i: usize) -> String {
    let mut s = format!("{i:06} the model streams café \"text\" über résumé 🙈\n ");
    while s.len() < TEXT_DELTA {
        s.push_str("word ");
    }
    s.truncate(TEXT_DELTA);
    s
}

/// The tool argument's pieces: a JSON object holding a long string, cut every 64 bytes
/// (on character boundaries).
fn arg_pieces() -> Vec<String> {
    let mut content = String::new();
    while content.len() < ARG_BYTES {
        content.push_str("fn main() { println!(\"hello\"); }\\n");
    }
    let whole = format!(r#"{{"path":"src/main.rs","content":"{content}"}}"#);
    let mut pieces = Vec::new();
    let mut rest = whole.as_str();
    while !rest.is_empty() {
        let mut at = ARG_DELTA.min(rest.len());
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        pieces.push(rest[..at].to_owned());
        rest = &rest[at..];
    }
    pieces
}

enum Content {
    Text(Vec<String>),
    Tool(Vec<String>),
}

fn anthropic(content: &Content) -> Vec<u8> {
    let mut out = String::new();
    let mut event = |name: &str, data: serde_json::Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    match content {
        Content::Text(deltas) => {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            );
            for d in deltas {
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}}),
                );
            }
        }
        Content::Tool(pieces) => {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}}}),
            );
            for p in pieces {
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}),
                );
            }
        }
    }
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 100}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out.into_bytes()
}

fn bedrock(content: &Content) -> Vec<u8> {
    let mut out = Vec::new();
    // Bedrock pads every payload with a random-length `p`.
    let pad = |i: usize| "abcdefghijklmnopqrstuvwxyz"[..(i * 7) % 26].to_owned();
    let mut frame = |name: &str, data: serde_json::Value| {
        out.extend(encode_event(name, data.to_string().as_bytes()).unwrap());
    };
    frame("messageStart", json!({"role": "assistant", "p": pad(1)}));
    match content {
        Content::Text(deltas) => {
            for (i, d) in deltas.iter().enumerate() {
                frame(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": 0, "delta": {"text": d}, "p": pad(i)}),
                );
            }
        }
        Content::Tool(pieces) => {
            frame(
                "contentBlockStart",
                json!({"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "write"}}, "p": pad(2)}),
            );
            for (i, p) in pieces.iter().enumerate() {
                frame(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": p}}, "p": pad(i)}),
                );
            }
        }
    }
    frame(
        "contentBlockStop",
        json!({"contentBlockIndex": 0, "p": pad(3)}),
    );
    frame(
        "messageStop",
        json!({"stopReason": "end_turn", "p": pad(4)}),
    );
    frame(
        "metadata",
        json!({"usage": {"inputTokens": 10, "outputTokens": 100, "totalTokens": 110}, "metrics": {"latencyMs": 100}, "p": pad(5)}),
    );
    out
}

fn mistral(content: &Content) -> Vec<u8> {
    let mut out = String::new();
    let mut chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let data = json!({"id": "cmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "mistral-small-latest",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        out.push_str(&format!("data: {data}\n\n"));
    };
    chunk(json!({"role": "assistant", "content": ""}), None);
    match content {
        Content::Text(deltas) => {
            for d in deltas {
                chunk(json!({"content": d}), None);
            }
        }
        Content::Tool(pieces) => {
            for (i, p) in pieces.iter().enumerate() {
                let name = if i == 0 { "write" } else { "" };
                chunk(
                    json!({"tool_calls": [{"id": "D681PevKs", "index": 0, "function": {"name": name, "arguments": p}}]}),
                    None,
                );
            }
        }
    }
    let data = json!({"id": "cmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "mistral-small-latest",
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 100, "total_tokens": 110}});
    out.push_str(&format!("data: {data}\n\ndata: [DONE]\n\n"));
    out.into_bytes()
}

fn decoders(c: &mut Criterion) {
    let contents = [
        (
            "text-20MB",
            Content::Text((0..TEXT_DELTAS).map(text_delta).collect()),
        ),
        ("tool-arg-256KB", Content::Tool(arg_pieces())),
    ];
    for (name, content) in &contents {
        let mut g = c.benchmark_group(format!("decode-same-content/{name}"));
        g.sample_size(10);
        let formats = [
            (
                "anthropic-messages",
                "anthropic",
                Api::Anthropic,
                anthropic(content),
            ),
            (
                "bedrock-converse-stream",
                "amazon-bedrock",
                Api::Bedrock,
                bedrock(content),
            ),
            (
                "mistral-conversations",
                "mistral",
                Api::Mistral,
                mistral(content),
            ),
        ];
        for (api_name, provider, api, body) in &formats {
            let model = model(api_name, provider);
            let events = decode(*api, &model, body);
            // Throughput in content bytes: the same for each format.
            let content_bytes = match content {
                Content::Text(d) => d.iter().map(String::len).sum::<usize>(),
                Content::Tool(p) => p.iter().map(String::len).sum::<usize>(),
            };
            g.throughput(Throughput::Bytes(content_bytes as u64));
            g.bench_with_input(
                BenchmarkId::new(
                    *api_name,
                    format!("{} KiB on the wire, {events} events", body.len() >> 10),
                ),
                body,
                |b, body| b.iter(|| std::hint::black_box(decode(*api, &model, body))),
            );
        }
        g.finish();
    }
}

criterion_group!(benches, decoders);
criterion_main!(benches);
