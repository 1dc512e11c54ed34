//! The streaming path end to end, without a network: a faux reply of 2.5, 5 and 10 MB cut
//! into 5-byte deltas (`Chunking::Chars(5)`, two million events for 10 MB), consumed as a
//! stream (every event polled, the partial message folded, then the result). Streaming is
//! linear when the time per byte (criterion's throughput) stays flat across the sizes.
//!
//! A second group streams the same sizes as one tool call's JSON arguments, which also goes
//! through the incremental partial-JSON parser on every delta.
//!
//! `cargo bench --bench faux_stream`

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use pi_engine::providers::faux::{Chunking, FauxProvider, FauxResponse};
use pi_engine::{ApiProvider, AssistantMessageEvent, Context, StreamOptions, UserMessage};
use serde_json::json;

const SIZES: [(usize, &str); 3] = [(5 << 19, "2.5MB"), (5 << 20, "5MB"), (10 << 20, "10MB")];

/// Prose of `size` bytes, with some non-ASCII text.
fn reply_text(size: usize) -> String {
    let line = "The quick brown fox jumps over the lazy dog — naïve café, 1234567890.\n";
    let mut text = line.repeat(size / line.len() + 1);
    text.truncate(text.floor_char_boundary(size));
    text
}

/// Consumes the reply as a stream; returns the number of events.
async fn consume(faux: &FauxProvider, context: &Context) -> usize {
    let mut stream = faux.stream(&faux.model(), context, &StreamOptions::new());
    let mut events = 0;
    while let Some(event) = stream.next().await {
        events += 1;
        black_box(&event);
        if let AssistantMessageEvent::TextDelta { delta, .. } = &event {
            black_box(delta.len());
        }
        black_box(stream.partial().content.len());
    }
    black_box(stream.result().await);
    events
}

fn bench(c: &mut Criterion, group_name: &str, make: fn(&str) -> FauxResponse) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let context = Context::new().with_message(UserMessage::text("Write a lot."));
    let mut group = c.benchmark_group(group_name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for (size, label) in SIZES {
        let text = reply_text(size);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(label), &text, |b, text| {
            b.iter_batched(
                || {
                    let faux = FauxProvider::builder().chunking(Chunking::Chars(5)).build();
                    faux.push(make(text));
                    faux
                },
                |faux| rt.block_on(consume(&faux, &context)),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

fn text_reply(c: &mut Criterion) {
    bench(c, "faux_stream/text", |text| FauxResponse::text(text));
}

fn tool_call_reply(c: &mut Criterion) {
    bench(c, "faux_stream/toolcall", |text| {
        FauxResponse::tool_call(
            "call_1",
            "write",
            json!({"path": "out.txt", "content": text}),
        )
    });
}

criterion_group!(benches, text_reply, tool_call_reply);
criterion_main!(benches);
