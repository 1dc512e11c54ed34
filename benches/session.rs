//! Session files: opening (indexing) a large session, building its context, appending.
//!
//! The sessions are generated at start-up (a coding session with tool calls, thinking and
//! compactions, about 24 MB; and an uncompacted one of about 8 MB). Set
//! `PI_SESSION_BENCH_FILE` to also bench a file of your own, e.g. the 100 MB session the
//! perf harness generates (`/tmp/perf/sessions/session-100mb.jsonl`).
//!
//! `cargo bench --bench session` (the `messages` group: decoding the uncompacted session's
//! messages with the crate's one-pass `Deserialize`, against a plain `serde_json::Value` parse)

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_engine::agent::AgentMessage;
use pi_engine::session::{SessionManager, SessionOptions};
use pi_engine::{
    AssistantContent, AssistantMessage, Content, StopReason, ToolResultMessage, UserMessage,
};
use serde_json::json;

/// Deterministic filler text.
fn text(seed: &mut u64, len: usize) -> String {
    const WORDS: [&str; 12] = [
        "parse",
        "token",
        "stream",
        "buffer",
        "the",
        "session",
        "error",
        "value",
        "\"quoted\"",
        "line\n",
        "é",
        "fn",
    ];
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        s.push_str(WORDS[(*seed % WORDS.len() as u64) as usize]);
        s.push(' ');
    }
    s
}

fn generate(dir: &Path, target_bytes: u64, compact_every: Option<usize>) -> PathBuf {
    let mut sm = SessionOptions::new()
        .with_session_dir(dir)
        .create("/bench/project");
    sm.append_model_change("anthropic", "claude-sonnet-4-5")
        .unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut exchanges = 0;
    loop {
        let path = sm.session_file().unwrap().to_owned();
        if path.exists() && std::fs::metadata(&path).unwrap().len() >= target_bytes {
            break path;
        }
        exchanges += 1;
        let user = sm
            .append_message(UserMessage::text(text(&mut seed, 400)))
            .unwrap();
        for turn in 0..4 {
            let call_id = format!("toolu_{exchanges}_{turn}");
            let reply =
                AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
                    .with_content(vec![
                        AssistantContent::thinking(text(&mut seed, 800)),
                        AssistantContent::tool_call(
                            &call_id,
                            "read",
                            json!({"path": "src/lib.rs"}),
                        ),
                    ])
                    .with_stop_reason(StopReason::ToolUse);
            sm.append_message(reply).unwrap();
            let result = ToolResultMessage::new(
                &call_id,
                "read",
                vec![Content::text(text(&mut seed, 4000))],
                false,
            );
            sm.append_message(result).unwrap();
        }
        if compact_every.is_some_and(|n| exchanges % n == 0) {
            sm.append_compaction(text(&mut seed, 2000), user, 150_000, None, None)
                .unwrap();
        }
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let compacted = generate(dir.path(), 24 << 20, Some(40));
    let uncompacted = generate(dir.path(), 8 << 20, None);
    let mut files = vec![
        ("compacted-24mb", compacted),
        ("uncompacted-8mb", uncompacted),
    ];
    if let Ok(extra) = std::env::var("PI_SESSION_BENCH_FILE") {
        files.push(("PI_SESSION_BENCH_FILE", PathBuf::from(extra)));
    }

    let mut group = c.benchmark_group("session");
    group.sample_size(10);
    for (name, path) in &files {
        group.throughput(Throughput::Bytes(std::fs::metadata(path).unwrap().len()));
        group.bench_function(format!("open/{name}"), |b| {
            b.iter(|| {
                black_box(
                    SessionOptions::new()
                        .read_only()
                        .open(path)
                        .unwrap()
                        .entry_count(),
                )
            })
        });
        group.bench_function(format!("open+context/{name}"), |b| {
            b.iter(|| {
                let sm = SessionOptions::new().read_only().open(path).unwrap();
                black_box(sm.build_session_context().unwrap().messages.len())
            })
        });
        group.bench_function(format!("open_with_context/{name}"), |b| {
            b.iter(|| {
                let (_, context) = SessionOptions::new()
                    .read_only()
                    .open_with_context(path)
                    .unwrap();
                black_box(context.messages.len())
            })
        });
        let sm = SessionOptions::new().read_only().open(path).unwrap();
        group.bench_function(format!("context/{name}"), |b| {
            b.iter(|| black_box(sm.build_session_context().unwrap().messages.len()))
        });
        // Every entry parsed as a whole (the checked path, through a JSON value).
        group.bench_function(format!("entries/{name}"), |b| {
            b.iter(|| black_box(sm.entries().unwrap().len()))
        });
    }
    group.finish();

    // Decoding messages: the typed one-pass `Deserialize` against a plain `serde_json::Value`
    // parse of the same bytes (which the derive-based decoding did first, before two more
    // passes through serde's buffered content).
    let messages: Vec<String> = std::fs::read_to_string(&files[1].1)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("message").map(|m| m.to_string()))
        .collect();
    let bytes: usize = messages.iter().map(String::len).sum();
    let mut group = c.benchmark_group("messages");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("decode/AgentMessage", |b| {
        b.iter(|| {
            for m in &messages {
                black_box(serde_json::from_str::<AgentMessage>(m).unwrap());
            }
        })
    });
    group.bench_function("decode/serde_json::Value", |b| {
        b.iter(|| {
            for m in &messages {
                black_box(serde_json::from_str::<serde_json::Value>(m).unwrap());
            }
        })
    });
    group.finish();

    let mut sm = SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/bench/append");
    let message = UserMessage::text(text(&mut 7, 2000));
    c.bench_function("session/append-2kb", |b| {
        b.iter(|| black_box(sm.append_message(message.clone()).unwrap()))
    });
    let mut mem = SessionManager::in_memory("/bench/append");
    c.bench_function("session/append-2kb-in-memory", |b| {
        b.iter(|| black_box(mem.append_message(message.clone()).unwrap()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
