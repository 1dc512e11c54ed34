//! What extensions cost: one `tool_call` event handed to a session's extensions (none of
//! which handles it; one that handles it, with its deadline, token and context; ten that
//! do), and an `AgentSession` tool loop with ten extensions that handle none of the loop's
//! events beside one with none. (`scripts/bench-extension-overhead.sh` counts the loop's
//! instructions with callgrind, which is steadier than its time here.)
//!
//! ```text
//! cargo bench --bench extensions
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_engine::agent::{AgentToolResult, TypedTool};
use pi_engine::agent_session::AgentSession;
use pi_engine::extensions::__bench::Dispatch;
use pi_engine::extensions::{Extension, Flag};
use pi_engine::llm::Model;
use pi_engine::session::SessionManager;
use schemars::JsonSchema;
use serde::Deserialize;

#[path = "support/scripted.rs"]
mod scripted;

#[derive(Deserialize, JsonSchema)]
struct NoopArgs {
    #[allow(dead_code)]
    i: Option<f64>,
}

/// An extension that takes part in the session without handling the loop's events: a
/// command, a flag and a `session_start` handler.
fn bystander(i: usize) -> Extension {
    Extension::new(format!("bystander-{i}"), move |pi| {
        pi.register_command(format!("cmd-{i}"), "", |_args, _ctx| async { Ok(()) });
        pi.register_flag(Flag::boolean(format!("flag-{i}")));
        pi.on_session_start(|_e, _ctx| async { Ok(()) });
    })
}

/// An extension whose `tool_call` handler lets every call through.
fn allower(i: usize) -> Extension {
    Extension::new(format!("allower-{i}"), |pi| {
        pi.on_tool_call(|_e, _ctx| async { Ok(None) });
    })
}

fn session(extensions: Vec<Extension>, turns: usize) -> AgentSession {
    let calls = Arc::new(AtomicUsize::new(0));
    let model = Model::new("bench-1", "bench", "bench", "");
    let mut b = AgentSession::builder(SessionManager::in_memory("/bench"))
        .default_model(model)
        .system_prompt("You are a test agent.")
        .tool(TypedTool::new(
            "noop",
            "Does nothing",
            |_: NoopArgs, _| async { Ok(AgentToolResult::text("ok")) },
        ))
        .stream_fn(move |m, _, _| {
            scripted::reply(m, calls.fetch_add(1, Ordering::Relaxed) + 1, turns)
        });
    for e in extensions {
        b = b.extension(e);
    }
    b.build().expect("a session")
}

fn dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("tool_call_dispatch");
    let cases: [(&str, Vec<Extension>); 3] = [
        (
            "10_extensions_not_handling_it",
            (0..10).map(bystander).collect(),
        ),
        ("1_extension_handling_it", vec![allower(0)]),
        ("10_extensions_handling_it", (0..10).map(allower).collect()),
    ];
    for (name, extensions) in cases {
        let _guard = rt.enter();
        let d = Dispatch::new(session(extensions, 0)).expect("extensions");
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        std::hint::black_box(d.tool_call().await);
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

fn tool_loop(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    const TURNS: usize = 100;
    let mut group = c.benchmark_group("session_tool_loop");
    group.throughput(Throughput::Elements(TURNS as u64 + 1));
    for (name, count) in [("no_extensions", 0), ("10_bystander_extensions", 10)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let _guard = rt.enter();
                let s = session((0..count).map(bystander).collect(), TURNS);
                let outcome = rt.block_on(s.prompt("go")).expect("an idle session");
                assert!(outcome.is_completed(), "{outcome:?}");
            })
        });
    }
    group.finish();
}

criterion_group!(benches, dispatch, tool_loop);
criterion_main!(benches);
