//! Decoding Anthropic Messages streams (`anthropic-messages`): a recorded reply (thinking and
//! text), that reply grown to about 2 MiB by repeating its deltas, and the long reply with
//! every event padded so that the hand-written delta path (`anthropic/decode.rs`,
//! `fast_delta`) refuses it and serde reads every event: the gap between the last two is
//! what the fast path buys.
//!
//! `cargo bench --bench decode_anthropic`

#[path = "support/decode.rs"]
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use pi_engine::__fuzz::Api;
use support::{Stream, bench, lines, long, model, padded, sse};

fn anthropic(c: &mut Criterion) {
    let recorded = lines(include_str!(
        "fixtures/anthropic-combined-context-editing.1.chunks.txt"
    ));
    let long = long(&recorded, |l| l.contains(r#""type":"content_block_delta""#));
    let streams = [
        Stream {
            name: "recorded",
            body: sse(&recorded, true),
        },
        Stream {
            name: "long",
            body: sse(&long, true),
        },
        Stream {
            name: "long-serde-only",
            body: sse(&padded(&long), true),
        },
    ];
    let model = model("anthropic-messages", "anthropic");
    bench(
        c,
        "decode/anthropic-messages",
        Api::Anthropic,
        &model,
        &streams,
    );
}

criterion_group!(benches, anthropic);
criterion_main!(benches);
