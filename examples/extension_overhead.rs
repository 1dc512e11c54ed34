//! One `AgentSession` tool loop on a scripted model (no HTTP), with or without extensions
//! that take part in the session but handle none of the loop's events: what
//! `scripts/bench-extension-overhead.sh` counts with callgrind.
//!
//! ```text
//! cargo run --release --example extension_overhead -- <turns> <extensions> [handling]
//! ```
//!
//! With `handling`, each extension also has `tool_call`, `tool_result` and `context`
//! handlers that change nothing (the cost of extensions that do look at every turn).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_engine::agent::{AgentToolResult, TypedTool};
use pi_engine::agent_session::AgentSession;
use pi_engine::extensions::{Extension, Flag};
use pi_engine::llm::Model;
use pi_engine::session::SessionManager;

#[path = "../benches/support/scripted.rs"]
mod scripted;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoopArgs {
    #[allow(dead_code)]
    i: Option<f64>,
}

fn extension(i: usize, handling: bool) -> Extension {
    Extension::new(format!("ext-{i}"), move |pi| {
        pi.register_command(format!("cmd-{i}"), "", |_args, _ctx| async { Ok(()) });
        pi.register_flag(Flag::boolean(format!("flag-{i}")));
        pi.on_session_start(|_e, _ctx| async { Ok(()) });
        if handling {
            pi.on_tool_call(|_e, _ctx| async { Ok(None) });
            pi.on_tool_result(|_e, _ctx| async { Ok(None) });
            pi.on_context(|_e, _ctx| async { Ok(None) });
        }
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let turns: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let count: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let handling = args.get(2).is_some_and(|a| a == "handling");
    let calls = Arc::new(AtomicUsize::new(0));
    let model = Model::new("bench-1", "bench", "bench", "");
    let mut builder = AgentSession::builder(SessionManager::in_memory("/bench"))
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
    for i in 0..count {
        builder = builder.extension(extension(i, handling));
    }
    let session = builder.build().expect("a session");
    let outcome = session.prompt("go").await.expect("an idle session");
    assert!(outcome.is_completed(), "{outcome:?}");
    assert_eq!(session.messages().len(), 2 * turns + 2);
    println!(
        "{turns} turns, {count} extensions{}",
        if handling { " handling every turn" } else { "" }
    );
}
