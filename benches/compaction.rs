//! Compaction on the pi author's 2.4 MB session (`tests/fixtures/pi/before-compaction*`):
//! what a compaction costs before the summary request — reading the branch, choosing the cut
//! point and collecting what to summarize — and the pieces of it.
//!
//! `cargo bench --bench compaction`. pi's own time for the same work is printed by
//! `node scripts/bench-compaction-pi.mjs`.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_engine::session::compaction::{
    CompactionSettings, estimate_context_tokens, find_cut_point, path_context, prepare_compaction,
    serialize_conversation,
};
use pi_engine::session::{SessionOptions, convert_to_llm};

fn bench(c: &mut Criterion) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pi/before-compaction.migrated-v3-by-pi-0.73.1.jsonl");
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let sm = SessionOptions::new().read_only().open(&file).unwrap();
    let settings = CompactionSettings::default();
    let mut g = c.benchmark_group("compaction");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("read branch + prepare (2.4 MB session)", |b| {
        b.iter(|| {
            let path = sm.branch_path(None).unwrap();
            black_box(prepare_compaction(&path, &settings))
        })
    });
    let path = sm.branch_path(None).unwrap();
    g.bench_function("prepare (parsed branch)", |b| {
        b.iter(|| black_box(prepare_compaction(&path, &settings)))
    });
    g.bench_function("find_cut_point", |b| {
        b.iter(|| black_box(find_cut_point(&path, 0, path.len(), 20_000)))
    });
    let context = path_context(&path);
    g.bench_function("estimate_context_tokens", |b| {
        b.iter(|| black_box(estimate_context_tokens(&context)))
    });
    let prep = prepare_compaction(&path, &settings).unwrap();
    let llm = convert_to_llm(&prep.messages_to_summarize);
    g.bench_function("serialize_conversation (383 messages)", |b| {
        b.iter(|| black_box(serialize_conversation(&llm)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
