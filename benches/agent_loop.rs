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
use pi_engine::llm::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream, Model,
    PartialMessage, StopReason, ToolCall, Usage,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct NoopArgs {
    #[allow(dead_code)]
    i: Option<f64>,
}

/// Reply number `n`: text and a `noop` call, or (after `turns` calls) a final text.
fn reply(model: &Model, n: usize, turns: usize) -> AssistantMessageEventStream {
    use AssistantMessageEvent as E;
    let base = AssistantMessage::new(&model.api, &model.provider, &model.id);
    let mut message = base.clone();
    message.usage = Usage::new(100, 20, 0, 0);
    let deltas: &[&str] = if n <= turns {
        &["Calling", " the", " tool."]
    } else {
        &["All", " done."]
    };
    let text = deltas.concat();
    let mut events = vec![E::Start, E::TextStart { content_index: 0 }];
    events.extend(deltas.iter().map(|d| E::TextDelta {
        content_index: 0,
        delta: (*d).to_owned(),
    }));
    events.push(E::TextEnd {
        content_index: 0,
        content: text.clone(),
    });
    message.content.push(AssistantContent::text(text));
    if n <= turns {
        let call = ToolCall::new(format!("call_{n}"), "noop", json!({ "i": n }));
        events.push(E::ToolcallStart {
            content_index: 1,
            id: call.id.clone(),
            tool_name: call.name.clone(),
        });
        events.push(E::ToolcallDelta {
            content_index: 1,
            delta: format!(r#"{{"i":{n}}}"#),
        });
        events.push(E::ToolcallEnd {
            content_index: 1,
            tool_call: call.clone(),
        });
        message.content.push(AssistantContent::ToolCall(call));
        message.stop_reason = StopReason::ToolUse;
    }
    events.push(E::Done {
        reason: message.stop_reason.clone(),
        message: Box::new(message),
    });
    AssistantMessageEventStream::from_stream(
        PartialMessage::new(base),
        futures::stream::iter(events),
    )
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
