//! Decoding OpenAI Chat Completions streams (`openai-completions`): a recorded reply (text,
//! usage on every chunk), that reply grown to about 2 MiB by repeating its content chunks,
//! and the long reply with every chunk padded so that the hand-written chunk path
//! (`openai_completions/decode.rs`, `fast_chunk`) refuses it and serde reads every chunk.
//!
//! `cargo bench --bench decode_openai_completions`

#[path = "support/decode.rs"]
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use pi_engine::__fuzz::Api;
use support::{Stream, bench, lines, long, model, padded, sse};

fn completions(c: &mut Criterion) {
    let mut recorded = lines(include_str!("fixtures/openai-text.chunks.txt"));
    recorded.push("[DONE]".to_owned());
    let is_delta =
        |l: &str| l.contains(r#""delta":{"content":"#) && l.contains(r#""finish_reason":null"#);
    let long = long(&recorded, is_delta);
    let streams = [
        Stream {
            name: "recorded",
            body: sse(&recorded, false),
        },
        Stream {
            name: "long",
            body: sse(&long, false),
        },
        Stream {
            name: "long-serde-only",
            body: sse(&padded(&long), false),
        },
    ];
    let model = model("openai-completions", "openai");
    bench(
        c,
        "decode/openai-completions",
        Api::OpenAiCompletions,
        &model,
        &streams,
    );
}

criterion_group!(benches, completions);
criterion_main!(benches);
