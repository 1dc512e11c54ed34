//! SSE decoding: the crate's hand-written decoder against the `eventsource-stream` crate, on
//! about 4 MB of realistic Anthropic text-delta events, fed in the chunk sizes a client sees
//! (16 KiB HTTP chunks, and ~1.4 KiB TCP segments that split events and UTF-8 characters).
//! Both count events and data bytes, the least a provider does with them.
//!
//! `cargo bench --bench sse`

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use pi_engine::providers::sse::SseDecoder;

/// Anthropic's text-delta framing, with short token-like deltas (some multi-byte UTF-8,
/// quotes, escapes), a ping now and then, in about `bytes` bytes.
fn payload(bytes: usize) -> Vec<u8> {
    let words = [
        "the",
        " model",
        " streams",
        " text",
        " in",
        " small",
        " pieces",
        ",",
        " café",
        " naïve",
        " \\\"quoted\\\"",
        "\\n",
        " 🙈",
        " über",
        " résumé",
        ".",
    ];
    let mut out = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    let mut i = 0usize;
    while out.len() < bytes {
        let word = words[i % words.len()];
        out.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"");
        out.push_str(word);
        out.push_str("\"}}\n\n");
        if i.is_multiple_of(500) {
            out.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
        }
        i += 1;
    }
    out.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    out.into_bytes()
}

fn chunks(data: &[u8], size: usize) -> Vec<Bytes> {
    data.chunks(size).map(Bytes::copy_from_slice).collect()
}

fn ours(chunks: &[Bytes]) -> (usize, usize) {
    let mut sse = SseDecoder::new();
    let (mut events, mut bytes) = (0, 0);
    for chunk in chunks {
        sse.feed(chunk);
        while let Some(event) = sse.next_event() {
            events += 1;
            bytes += event.data().len() + event.event().len();
        }
    }
    sse.finish();
    while let Some(event) = sse.next_event() {
        events += 1;
        bytes += event.data().len();
    }
    (events, bytes)
}

fn eventsource(chunks: &[Bytes]) -> (usize, usize) {
    let stream = futures::stream::iter(chunks.iter().cloned().map(Ok::<_, std::io::Error>));
    futures::executor::block_on(stream.eventsource().fold(
        (0, 0),
        |(events, bytes), event| async move {
            match event {
                Ok(e) => (events + 1, bytes + e.data.len() + e.event.len()),
                Err(_) => (events, bytes),
            }
        },
    ))
}

fn bench(c: &mut Criterion) {
    let data = payload(4 << 20);
    for (label, size) in [("16KiB chunks", 16 * 1024), ("1400B segments", 1400)] {
        let chunks = chunks(&data, size);
        assert_eq!(ours(&chunks).0, eventsource(&chunks).0, "same events");
        let mut group = c.benchmark_group(format!("sse/{label}"));
        group.throughput(Throughput::Bytes(data.len() as u64));
        group.sample_size(20);
        group.bench_function("hand-written", |b| b.iter(|| black_box(ours(&chunks))));
        group.bench_function("eventsource-stream", |b| {
            b.iter(|| black_box(eventsource(&chunks)))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
