//! What the decoder benches share: a recorded stream framed as SSE, the same stream grown to
//! a long reply (its text deltas repeated in place), that long reply with every event padded
//! with a member no decoder knows (so the hand-written fast paths refuse each event and serde
//! reads them all), and the bench that decodes each through the provider's decoder.
//!
//! The decoding is the HTTP driver's own (`pi_engine::__fuzz::replay`: bytes → SSE → the
//! api's decoder → events folded into the partial message → `done`), without the network.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput};
use pi_engine::__fuzz::{Api, replay};
use pi_engine::llm::ModelCost;
use pi_engine::{AssistantMessageEvent, Model};

/// About this many bytes of body for the long replies.
const LONG_BYTES: usize = 2 << 20;

/// One stream to decode: its SSE body.
pub(crate) struct Stream {
    pub(crate) name: &'static str,
    pub(crate) body: Vec<u8>,
}

/// The payload lines of a `*.chunks.txt` recording.
pub(crate) fn lines(recording: &str) -> Vec<String> {
    recording
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Frames payloads as SSE; with `named`, each event gets its payload's `type` as its name (as
/// Anthropic sends them).
pub(crate) fn sse(lines: &[String], named: bool) -> Vec<u8> {
    let mut out = String::new();
    for line in lines {
        if named {
            let value: serde_json::Value = serde_json::from_str(line).expect("a JSON payload");
            if let Some(kind) = value["type"].as_str() {
                out.push_str("event: ");
                out.push_str(kind);
                out.push('\n');
            }
        }
        out.push_str("data: ");
        out.push_str(line);
        out.push_str("\n\n");
    }
    out.into_bytes()
}

/// The recording with each payload that `is_delta` picks repeated in place, to about
/// [`LONG_BYTES`].
pub(crate) fn long(lines: &[String], is_delta: impl Fn(&str) -> bool) -> Vec<String> {
    let delta_bytes: usize = lines.iter().filter(|l| is_delta(l)).map(String::len).sum();
    assert!(delta_bytes > 0, "the recording has no delta to repeat");
    let times = LONG_BYTES.div_ceil(delta_bytes);
    let mut out = Vec::new();
    for line in lines {
        let n = if is_delta(line) { times } else { 1 };
        out.extend(std::iter::repeat_n(line.clone(), n));
    }
    out
}

/// Every payload with a first member no decoder reads: each decoder's fast path refuses the
/// event (it expects its own first member) and serde, which skips unknown members, reads it.
pub(crate) fn padded(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.replacen('{', r#"{"x_pad":0,"#, 1))
        .collect()
}

/// A priced model of `api` (the cost arithmetic runs too).
pub(crate) fn model(api: &str, provider: &str) -> Model {
    Model::new("bench-model", api, provider, "http://127.0.0.1:1")
        .with_cost(ModelCost::new(3.0, 15.0, 0.3, 3.75))
}

/// Decodes `body` once and checks that the stream ended well.
pub(crate) fn decode(api: Api, model: &Model, body: &[u8]) -> usize {
    let events = replay(api, model, body);
    match events.last() {
        Some(AssistantMessageEvent::Done { .. }) => {}
        other => panic!("the stream did not end in done: {other:?}"),
    }
    events.len()
}

/// Benches the decoding of each stream (throughput in body bytes).
pub(crate) fn bench(c: &mut Criterion, group: &str, api: Api, model: &Model, streams: &[Stream]) {
    let mut g = c.benchmark_group(group);
    for stream in streams {
        // The same events whichever path read them.
        let events = decode(api, model, &stream.body);
        g.throughput(Throughput::Bytes(stream.body.len() as u64));
        g.bench_with_input(
            BenchmarkId::new(
                stream.name,
                format!("{} KiB, {events} events", stream.body.len() >> 10),
            ),
            &stream.body,
            |b, body| b.iter(|| black_box(decode(api, model, black_box(body)))),
        );
    }
    g.finish();
}
