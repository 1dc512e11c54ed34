//! Memory of idle agents: builds 10,000 `Agent`s (system prompt, model, a tool, a stream
//! function, a listener), then gives each a short exchange, and prints the resident memory
//! (Linux `/proc/self/status`) at each step.
//!
//! ```text
//! cargo run --release --example agent_memory [count]
//! ```

use std::sync::Arc;

use pi_engine::agent::{Agent, AgentTool, AgentToolResult, TypedTool};
use pi_engine::llm::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream,
    Context, Model, PartialMessage, StopReason, StreamOptions,
};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// Path to read.
    #[allow(dead_code)]
    path: String,
}

/// Resident set size in KiB, from `/proc/self/status`.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// A one-line reply (the faux provider would also keep a copy of every request).
fn hello(model: &Model, _: &Context, _: &StreamOptions) -> AssistantMessageEventStream {
    use AssistantMessageEvent as E;
    let base = AssistantMessage::new(&model.api, &model.provider, &model.id);
    let text = "Hello! How can I help?";
    let done = base
        .clone()
        .with_content(vec![AssistantContent::text(text)])
        .with_stop_reason(StopReason::Stop);
    let events = vec![
        E::Start,
        E::TextStart { content_index: 0 },
        E::TextDelta {
            content_index: 0,
            delta: text.into(),
        },
        E::TextEnd {
            content_index: 0,
            content: text.into(),
        },
        E::Done {
            reason: StopReason::Stop,
            message: Box::new(done),
        },
    ];
    AssistantMessageEventStream::from_stream(
        PartialMessage::new(base),
        futures::stream::iter(events),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let model = Model::new("model-1", "custom", "custom", "http://127.0.0.1:1");
    let tool: Arc<dyn AgentTool> = Arc::new(TypedTool::new(
        "read",
        "Read a file",
        |_: ReadArgs, _| async { Ok(AgentToolResult::text("ok")) },
    ));
    let before = rss_kib();
    let agents: Vec<Agent> = (0..count)
        .map(|i| {
            let agent = Agent::builder(model.clone())
                .system_prompt(format!(
                    "You are agent number {i}. You help with one small part of a large job; \
                     answer briefly and use your tools when they help."
                ))
                .tools(vec![tool.clone()])
                .stream_fn(hello)
                .build();
            agent.subscribe(|_, _| {});
            agent
        })
        .collect();
    let built = rss_kib();
    for agent in &agents {
        let _ = agent.prompt("Say hello.").await;
    }
    let talked = rss_kib();
    let per_agent = |kib: u64| (kib.saturating_sub(before) as f64 * 1024.0) / count as f64;
    println!(
        "{{\"agents\":{count},\"rss_before_kib\":{before},\"rss_idle_kib\":{built},\
         \"idle_bytes_per_agent\":{:.0},\"rss_after_one_exchange_kib\":{talked},\
         \"bytes_per_agent_after_one_exchange\":{:.0}}}",
        per_agent(built),
        per_agent(talked)
    );
    assert_eq!(agents[count - 1].messages().len(), 2);
}
