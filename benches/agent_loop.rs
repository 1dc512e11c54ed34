//! Per-turn overhead of the agent loop: a scripted model calls a no-op tool on every turn
//! (the shape of the `agent-loop` conformance command and of `shared/perf/node/agent-loop.mjs`).
//!
//! ```text
//! cargo bench --bench agent_loop
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_engine::agent::{Agent, AgentToolResult, TypedTool};
use pi_engine::llm::Model;
use schemars::JsonSchema;
use serde::Deserialize;

#[path = "support/scripted.rs"]
mod scripted;
use scripted::reply;

#[derive(Deserialize, JsonSchema)]
struct NoopArgs {
    #[allow(dead_code)]
    i: Option<f64>,
}

fn agent(turns: usize) -> Agent {
    let calls = Arc::new(AtomicUsize::new(0));
    let model = Model::new("bench-1", "bench", "bench", "");
    Agent::builder(model)
        .system_prompt("You are a test agent.")
        .tool(TypedTool::new(
            "noop",
            "Does nothing",
            |_: NoopArgs, _| async { Ok(AgentToolResult::text("ok")) },
        ))
        .stream_fn(move |m, _, _| reply(m, calls.fetch_add(1, Ordering::Relaxed) + 1, turns))
        .build()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    const TURNS: usize = 100;
    let mut group = c.benchmark_group("agent_loop");
    group.throughput(Throughput::Elements(TURNS as u64 + 1));
    group.bench_function("tool_turns", |b| {
        b.iter(|| {
            let agent = agent(TURNS);
            agent.subscribe(|event, _| {
                std::hint::black_box(event.kind());
            });
            let outcome = rt.block_on(agent.prompt("go")).expect("idle agent");
            assert!(outcome.is_completed(), "{outcome:?}");
            assert_eq!(agent.state().messages.len(), 2 * TURNS + 2);
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
