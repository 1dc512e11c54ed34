//! Decoding Gemini streams (`google-generative-ai`): a recorded Vertex reply whose function
//! call arguments stream in (`partialArgs`), a recorded text reply grown to about 2 MiB by
//! repeating its text chunks, and that long reply with every chunk padded so that the
//! hand-written chunk path (`google/fast_chunk.rs`) refuses it and serde reads every chunk.
//!
//! `cargo bench --bench decode_google`

#[path = "support/decode.rs"]
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use pi_engine::__fuzz::Api;
use support::{Stream, bench, lines, long, model, padded, sse};

fn google(c: &mut Criterion) {
    let calls = lines(include_str!(
        "fixtures/google-vertex-stream-tool-call-arguments-nested.1.chunks.txt"
    ));
    let text = lines(include_str!("fixtures/google-text.chunks.txt"));
    let long = long(&text, |l| {
        !l.contains("finishReason") && !l.contains("thoughtSignature")
    });
    let streams = [
        Stream {
            name: "recorded-calls",
            body: sse(&calls, false),
        },
        Stream {
            name: "recorded-text",
            body: sse(&text, false),
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
    let model = model("google-generative-ai", "google");
    bench(
        c,
        "decode/google-generative-ai",
        Api::Google,
        &model,
        &streams,
    );
}

criterion_group!(benches, google);
criterion_main!(benches);
