//! Decoding OpenAI Responses streams (`openai-responses`): two recorded replies (xAI's,
//! reasoning and text; LM Studio's, text), each grown to about 2 MiB by repeating its deltas,
//! and the long replies with every event padded so that the hand-written delta path
//! (`openai_responses_shared/decode.rs`, `fast_delta`) refuses it and serde reads every event.
//!
//! `cargo bench --bench decode_openai_responses`

#[path = "support/decode.rs"]
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use pi_engine::__fuzz::Api;
use support::{Stream, bench, lines, long, model, padded, sse};

fn responses(c: &mut Criterion) {
    let recorded = lines(include_str!(
        "fixtures/xai-text-with-reasoning-streaming.1.chunks.txt"
    ));
    let lmstudio = lines(include_str!("fixtures/lmstudio-basic.1.chunks.txt"));
    let is_delta = |l: &str| l.contains(r#".delta","#);
    let long_xai = long(&recorded, is_delta);
    let long_lmstudio = long(&lmstudio, is_delta);
    let streams = [
        Stream {
            name: "recorded-xai",
            body: sse(&recorded, false),
        },
        Stream {
            name: "recorded-lmstudio",
            body: sse(&lmstudio, false),
        },
        Stream {
            name: "long-xai",
            body: sse(&long_xai, false),
        },
        Stream {
            name: "long-xai-serde-only",
            body: sse(&padded(&long_xai), false),
        },
        Stream {
            name: "long-lmstudio",
            body: sse(&long_lmstudio, false),
        },
        Stream {
            name: "long-lmstudio-serde-only",
            body: sse(&padded(&long_lmstudio), false),
        },
    ];
    let model = model("openai-responses", "openai");
    bench(
        c,
        "decode/openai-responses",
        Api::OpenAiResponses,
        &model,
        &streams,
    );
}

criterion_group!(benches, responses);
criterion_main!(benches);
