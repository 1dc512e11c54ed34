//! Streamed tool-call arguments: one argument of 64 KB, 256 KB and 1 MB arriving in 8-byte
//! fragments, through `PartialJsonParser` alone and through `PartialMessage::apply` (what a
//! stream does with each `toolcall_delta`). Linear parsing shows as a flat time per byte
//! (criterion's throughput) across the sizes.
//!
//! `cargo bench --bench partial_json`
//!
//! pi's side of the comparison: `node benches/pi/partial_json.mjs` (same inputs, same
//! fragments, pi's `parseStreamingJson` per fragment).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pi_engine::json::PartialJsonParser;
use pi_engine::llm::{AssistantMessage, AssistantMessageEvent, PartialMessage};
use serde_json::{Map, json};

const SIZES: [(usize, &str); 3] = [(64 << 10, "64KB"), (256 << 10, "256KB"), (1 << 20, "1MB")];
const FRAGMENT: usize = 8;

/// A `write` call's arguments of about `size` bytes: source code in a JSON string, with
/// escaped quotes and newlines and some non-ASCII text. `benches/pi/partial_json.mjs` builds
/// the same text.
fn file_argument(size: usize) -> String {
    let mut content = String::new();
    let mut i = 0;
    while content.len() + 64 < size {
        content.push_str(&format!(
            "fn f{i}() {{ println!(\"line {i}: héllo \\\"wörld\\\"\"); }}\n"
        ));
        i += 1;
    }
    json!({"path": "src/generated.rs", "content": content}).to_string()
}

/// Arguments of about `size` bytes with structure: an array of small objects.
fn edits_argument(size: usize) -> String {
    let mut edits = Vec::new();
    let mut len = 0;
    let mut i = 0;
    while len + 64 < size {
        let edit = json!({"line": i, "old": format!("let x{i} = {i};"), "new": format!("let y{i} = {};", i * 2), "ok": true});
        len += edit.to_string().len() + 1;
        edits.push(edit);
        i += 1;
    }
    json!({"path": "src/lib.rs", "edits": edits}).to_string()
}

/// `text` in fragments of `FRAGMENT` bytes (a character is never split).
fn fragments(text: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / FRAGMENT + 1);
    let mut from = 0;
    while from < text.len() {
        let mut to = (from + FRAGMENT).min(text.len());
        while !text.is_char_boundary(to) {
            to += 1;
        }
        out.push(&text[from..to]);
        from = to;
    }
    out
}

fn bench_parser(c: &mut Criterion) {
    let mut group = c.benchmark_group("partial_json/parser");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (kind, make) in [
        ("file", file_argument as fn(usize) -> String),
        ("edits", edits_argument),
    ] {
        for (size, label) in SIZES {
            let text = make(size);
            let frags = fragments(&text);
            group.throughput(Throughput::Bytes(text.len() as u64));
            group.bench_with_input(BenchmarkId::new(kind, label), &frags, |b, frags| {
                b.iter(|| {
                    let mut parser = PartialJsonParser::new();
                    let mut args = Map::new();
                    for f in frags {
                        parser.push(f, &mut args);
                    }
                    black_box(args)
                })
            });
        }
    }
    group.finish();
}

fn bench_partial_message(c: &mut Criterion) {
    let mut group = c.benchmark_group("partial_json/partial_message");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (size, label) in SIZES {
        let text = file_argument(size);
        let mut events = vec![
            AssistantMessageEvent::Start,
            AssistantMessageEvent::ToolcallStart {
                content_index: 0,
                id: "call_1".into(),
                tool_name: "write".into(),
            },
        ];
        events.extend(
            fragments(&text)
                .into_iter()
                .map(|f| AssistantMessageEvent::ToolcallDelta {
                    content_index: 0,
                    delta: f.to_owned(),
                }),
        );
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("toolcall_delta", label),
            &events,
            |b, events| {
                b.iter(|| {
                    let mut partial =
                        PartialMessage::new(AssistantMessage::new("faux", "faux", "faux-1"));
                    for e in events {
                        partial.apply(e);
                    }
                    black_box(partial.into_message())
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench_parser, bench_partial_message);
criterion_main!(benches);
