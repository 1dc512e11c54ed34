//! Tools that misbehave: ignore their cancellation, panic, return 10 MB, or come by the
//! thousand. Every run still ends, with one `tool_execution_end` per call and one `agent_end`,
//! in bounded (paused) time.

#[path = "support/capture.rs"]
mod capture;
use capture::Capture;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_engine::agent::{
    Agent, AgentBuilder, AgentContext, AgentEvent, AgentHooks, AgentLoopConfig, AgentMessage,
    AgentToolResult, DEFAULT_TOOL_ABORT_GRACE, RunOutcome, ToolCallDecision, ToolContext,
    ToolError, ToolExecutionMode, TypedTool, run_agent_loop,
};
use pi_engine::providers::faux::{Chunking, FauxProvider, FauxResponse};
use pi_engine::{ApiProvider, AssistantContent, Content, StopReason, UserMessage};
use serde_json::json;

// ----- helpers ---------------------------------------------------------------------------

fn faux() -> FauxProvider {
    FauxProvider::builder().chunking(Chunking::Whole).build()
}

fn agent_on(faux: &FauxProvider) -> AgentBuilder {
    let f = faux.clone();
    Agent::builder(faux.model()).stream_fn(move |m, c, o| f.stream(m, c, o))
}

fn record(agent: &Agent) -> Arc<Mutex<Vec<AgentEvent>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    agent.subscribe(move |e, _| sink.lock().unwrap().push(e.clone()));
    events
}

fn count(events: &Arc<Mutex<Vec<AgentEvent>>>, kind: &str) -> usize {
    events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.kind() == kind)
        .count()
}

fn tool_results(agent: &Agent) -> Vec<(String, bool, String)> {
    agent
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => Some((r.tool_call_id.clone(), r.is_error, r.text())),
            _ => None,
        })
        .collect()
}

/// `tool_execution_end` events as (id, is_error, text).
fn ends(events: &Arc<Mutex<Vec<AgentEvent>>>) -> Vec<(String, bool, String)> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => Some((tool_call_id.clone(), *is_error, result.text_content())),
            _ => None,
        })
        .collect()
}

type ToolFut = futures::future::BoxFuture<'static, Result<AgentToolResult, ToolError>>;
type ToolFn = Box<dyn Fn(serde_json::Value, ToolContext) -> ToolFut + Send + Sync>;

fn tool<F, Fut>(name: &'static str, f: F) -> TypedTool<serde_json::Value, ToolFn>
where
    F: Fn(serde_json::Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
{
    TypedTool::new(
        name,
        "A test tool",
        Box::new(move |a, c| Box::pin(f(a, c)) as ToolFut) as ToolFn,
    )
}

/// A tool that never looks at its token and never returns (a blocking read, a hung socket).
fn deaf_tool(
    name: &'static str,
    dropped: Arc<AtomicUsize>,
) -> TypedTool<serde_json::Value, ToolFn> {
    tool(name, move |_, _| {
        let guard = DropCounter(dropped.clone());
        Box::pin(async move {
            let _guard = guard;
            futures::future::pending::<()>().await;
            Ok(AgentToolResult::text("never"))
        })
    })
}

/// Counts the drops of the future that holds it.
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A tool that honours its token (returns "Operation aborted" at once).
fn polite_tool(name: &'static str) -> TypedTool<serde_json::Value, ToolFn> {
    tool(name, |_, cx| {
        Box::pin(async move {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(3600)) => Ok(AgentToolResult::text("slept")),
                () = cx.cancel.cancelled() => Err("Operation aborted".into()),
            }
        })
    })
}

fn abort_after(agent: &Agent, after: Duration) {
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        aborter.abort();
    });
}

/// Runs `agent.prompt` and returns how the run ended, failing the test when it has not
/// returned within `limit` (paused time: a hang fails at once instead of blocking the test).
async fn prompt_within(agent: &Agent, text: &str, limit: Duration) -> RunOutcome {
    tokio::time::timeout(limit, agent.prompt(text.to_owned()))
        .await
        .expect("the run ended in bounded time")
        .unwrap()
}

// ----- a tool that ignores its cancellation ----------------------------------------------

async fn deaf_tool_is_cut_after_the_grace(mode: ToolExecutionMode) {
    let faux = faux();
    faux.push(FauxResponse::content(vec![
        AssistantContent::tool_call("c1", "deaf", json!({})),
        AssistantContent::tool_call("c2", "polite", json!({})),
    ]));
    faux.push(FauxResponse::text("never requested"));
    faux.push(FauxResponse::text("Next prompt answered."));
    let dropped = Arc::new(AtomicUsize::new(0));
    let agent = agent_on(&faux)
        .tool(deaf_tool("deaf", dropped.clone()))
        .tool(polite_tool("polite"))
        .tool_execution(mode)
        .build();
    let events = record(&agent);
    abort_after(&agent, Duration::from_millis(100));
    let started = tokio::time::Instant::now();
    assert!(
        prompt_within(&agent, "go", Duration::from_secs(600))
            .await
            .is_aborted()
    );
    let took = started.elapsed();
    // The abort at 0.1 s, then the 5 s grace: not a moment longer.
    assert_eq!(DEFAULT_TOOL_ABORT_GRACE, Duration::from_secs(5));
    assert!(
        took >= Duration::from_millis(5100) && took < Duration::from_millis(5200),
        "{took:?}"
    );
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the deaf tool's future was dropped"
    );
    let aborted = (true, "Operation aborted".to_owned());
    let results = tool_results(&agent);
    assert_eq!(results.len(), 2);
    for r in &results {
        assert_eq!((r.1, r.2.clone()), aborted, "{r:?}");
    }
    let e = ends(&events);
    assert_eq!(e.len(), 2, "one tool_execution_end per call");
    assert!(
        e.iter()
            .all(|(_, err, text)| *err && text == "Operation aborted")
    );
    assert_eq!(count(&events, "agent_end"), 1);
    assert_eq!(events.lock().unwrap().last().unwrap().kind(), "agent_end");
    assert_eq!(faux.call_count(), 1, "no model call after the abort");
    assert!(!agent.is_streaming());
    assert!(agent.state().pending_tool_calls().is_empty());
    // The agent takes the next prompt.
    faux.set_responses([FauxResponse::text("Next prompt answered.")]);
    prompt_within(&agent, "again", Duration::from_secs(60))
        .await
        .into_result()
        .unwrap();
    let last = agent
        .messages()
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(last.text(), "Next prompt answered.");
}

#[tokio::test(start_paused = true)]
async fn parallel_tool_that_ignores_the_abort_is_dropped_after_the_grace() {
    deaf_tool_is_cut_after_the_grace(ToolExecutionMode::Parallel).await;
}

#[tokio::test(start_paused = true)]
async fn sequential_tool_that_ignores_the_abort_is_dropped_after_the_grace() {
    deaf_tool_is_cut_after_the_grace(ToolExecutionMode::Sequential).await;
}

#[tokio::test(start_paused = true)]
async fn the_grace_is_configurable_on_the_builder_and_the_loop_config() {
    for mode in [ToolExecutionMode::Parallel, ToolExecutionMode::Sequential] {
        let faux = faux();
        faux.push(FauxResponse::tool_call("c1", "deaf", json!({})));
        let dropped = Arc::new(AtomicUsize::new(0));
        let agent = agent_on(&faux)
            .tool(deaf_tool("deaf", dropped.clone()))
            .tool_execution(mode)
            .tool_abort_grace(Duration::from_secs(1))
            .build();
        abort_after(&agent, Duration::from_millis(100));
        let started = tokio::time::Instant::now();
        assert!(
            prompt_within(&agent, "go", Duration::from_secs(600))
                .await
                .is_aborted()
        );
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(1100) && took < Duration::from_millis(1200),
            "{mode:?}: {took:?}"
        );
        assert_eq!(dropped.load(Ordering::SeqCst), 1);

        // A grace of zero drops the tool as soon as the abort is seen; set on a live agent.
        agent.set_tool_abort_grace(Duration::ZERO);
        faux.push(FauxResponse::tool_call("c2", "deaf", json!({})));
        abort_after(&agent, Duration::from_millis(100));
        let started = tokio::time::Instant::now();
        assert!(
            prompt_within(&agent, "go", Duration::from_secs(600))
                .await
                .is_aborted()
        );
        assert!(started.elapsed() < Duration::from_millis(150));
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
    }

    // The loop function reads AgentLoopConfig::tool_abort_grace.
    let faux = faux();
    faux.push(FauxResponse::tool_call("c1", "deaf", json!({})));
    let dropped = Arc::new(AtomicUsize::new(0));
    let f = faux.clone();
    let config = AgentLoopConfig::new(faux.model())
        .with_hooks(AgentHooks::new().with_stream_fn(move |m, c, o| f.stream(m, c, o)))
        .with_tool_abort_grace(Duration::from_secs(2));
    let context = AgentContext::new("").with_tool(deaf_tool("deaf", dropped.clone()));
    let cancel = pi_engine::CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.cancel();
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let started = tokio::time::Instant::now();
    let prompt = UserMessage::blocks(vec![Content::text("go")]).into();
    let messages = tokio::time::timeout(
        Duration::from_secs(600),
        run_agent_loop(
            vec![prompt],
            context,
            &config,
            &cancel,
            move |e: &AgentEvent| {
                s.lock().unwrap().push(e.kind());
                std::future::ready(())
            },
        ),
    )
    .await
    .expect("the loop ended");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(2100) && took < Duration::from_millis(2200),
        "{took:?}"
    );
    let kinds = seen.lock().unwrap().clone();
    assert_eq!(
        kinds.iter().filter(|k| **k == "tool_execution_end").count(),
        1
    );
    assert_eq!(kinds.last(), Some(&"agent_end"));
    assert!(
        messages
            .iter()
            .any(|m| matches!(m, AgentMessage::ToolResult(r) if r.is_error))
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_returns_within_the_grace_keeps_its_result() {
    // Ignores the token but finishes 2 s later: inside the grace, so its result stands.
    let slow = || {
        tool("slow", |_, _| async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            Ok(AgentToolResult::text("finished anyway"))
        })
    };
    for mode in [ToolExecutionMode::Parallel, ToolExecutionMode::Sequential] {
        let faux = faux();
        faux.push(FauxResponse::tool_call("c1", "slow", json!({})));
        let agent = agent_on(&faux).tool(slow()).tool_execution(mode).build();
        abort_after(&agent, Duration::from_millis(100));
        let started = tokio::time::Instant::now();
        assert!(
            prompt_within(&agent, "go", Duration::from_secs(600))
                .await
                .is_aborted()
        );
        assert!(started.elapsed() < Duration::from_millis(2100));
        assert_eq!(
            tool_results(&agent),
            [("c1".into(), false, "finished anyway".into())]
        );
        let reply = agent
            .messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .clone();
        assert_eq!(reply.stop_reason, StopReason::Aborted);
    }
}

#[tokio::test(start_paused = true)]
async fn updates_after_the_cut_are_discarded_with_a_warning() {
    let (subscriber, logged) = Capture::new();
    let _log = tracing::subscriber::set_default(subscriber);
    // Reports progress from a task of its own, which outlives the dropped future.
    let chatty = tool("chatty", |_, cx| {
        let updates = cx.updates.clone();
        tokio::spawn(async move {
            updates.update(AgentToolResult::text("early")).await;
            tokio::time::sleep(Duration::from_secs(10)).await;
            updates.update(AgentToolResult::text("late")).await;
        });
        Box::pin(async move {
            futures::future::pending::<()>().await;
            Ok(AgentToolResult::text("never"))
        })
    });
    let faux = faux();
    faux.push(FauxResponse::content(vec![
        AssistantContent::tool_call("c1", "chatty", json!({})),
        AssistantContent::tool_call("c2", "polite", json!({})),
    ]));
    // Sequential: the batch is still running (c2) when the late update comes.
    let agent = agent_on(&faux)
        .tool(chatty)
        .tool(tool("polite", |_, _| {
            Box::pin(async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(AgentToolResult::text("polite done"))
            })
        }))
        .tool_execution(ToolExecutionMode::Sequential)
        .tool_abort_grace(Duration::from_secs(1))
        .build();
    let events = record(&agent);
    abort_after(&agent, Duration::from_millis(100));
    assert!(
        prompt_within(&agent, "go", Duration::from_secs(600))
            .await
            .is_aborted()
    );
    // Let the spawned task send its late update.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let updates: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate { partial_result, .. } => {
                Some(partial_result.text_content())
            }
            _ => None,
        })
        .collect();
    assert_eq!(updates, ["early"]);
    let logged = logged.lock().unwrap().join("\n");
    assert!(
        logged.contains("the tool did not return within the abort grace"),
        "{logged}"
    );
    assert!(logged.contains("discarded"), "{logged}");
    assert_eq!(count(&events, "agent_end"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_before_tool_call_hook_that_ignores_the_abort_is_cut_after_the_grace() {
    let faux = faux();
    faux.push(FauxResponse::tool_call("c1", "polite", json!({})));
    let f = faux.clone();
    let agent = Agent::builder(faux.model())
        .tool(polite_tool("polite"))
        .hooks(
            AgentHooks::new()
                .with_stream_fn(move |m, c, o| f.stream(m, c, o))
                .with_before_tool_call(|_| {
                    Box::pin(async {
                        futures::future::pending::<()>().await;
                        ToolCallDecision::Allow
                    })
                }),
        )
        .build();
    let events = record(&agent);
    abort_after(&agent, Duration::from_millis(100));
    let started = tokio::time::Instant::now();
    assert!(
        prompt_within(&agent, "go", Duration::from_secs(600))
            .await
            .is_aborted()
    );
    assert!(started.elapsed() < Duration::from_millis(5200));
    assert_eq!(
        tool_results(&agent),
        [("c1".into(), true, "Operation aborted".into())]
    );
    assert_eq!(count(&events, "tool_execution_end"), 1);
    assert_eq!(count(&events, "agent_end"), 1);
}

// ----- panics ----------------------------------------------------------------------------

#[tokio::test]
async fn panicking_tools_become_error_results_in_both_modes() {
    for mode in [ToolExecutionMode::Parallel, ToolExecutionMode::Sequential] {
        let faux = faux();
        faux.push(FauxResponse::content(vec![
            AssistantContent::tool_call("c1", "panics_at_once", json!({})),
            AssistantContent::tool_call("c2", "panics_later", json!({})),
            AssistantContent::tool_call("c3", "fine", json!({})),
        ]));
        faux.push(FauxResponse::text("Survived."));
        let agent = agent_on(&faux)
            .tool(tool(
                "panics_at_once",
                |_, _| -> std::future::Ready<Result<AgentToolResult, ToolError>> {
                    panic!("before any future")
                },
            ))
            .tool(tool("panics_later", |_, _| {
                Box::pin(async {
                    tokio::task::yield_now().await;
                    panic!("inside the future")
                })
            }))
            .tool(tool("fine", |_, _| {
                Box::pin(async { Ok(AgentToolResult::text("ok")) })
            }))
            .tool_execution(mode)
            .build();
        let events = record(&agent);
        prompt_within(&agent, "go", Duration::from_secs(60))
            .await
            .into_result()
            .unwrap();
        assert_eq!(
            tool_results(&agent),
            [
                (
                    "c1".into(),
                    true,
                    "Tool panics_at_once panicked: before any future".into()
                ),
                (
                    "c2".into(),
                    true,
                    "Tool panics_later panicked: inside the future".into()
                ),
                ("c3".into(), false, "ok".into()),
            ],
            "{mode:?}"
        );
        assert_eq!(count(&events, "tool_execution_end"), 3);
        assert_eq!(count(&events, "agent_end"), 1);
        let reply = agent
            .messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .clone();
        assert_eq!(reply.text(), "Survived.", "the run went on");
    }
}

// ----- size and number -------------------------------------------------------------------

#[tokio::test]
async fn a_tool_returning_10_mb_works() {
    const SIZE: usize = 10 * 1024 * 1024;
    let faux = faux();
    faux.push(FauxResponse::tool_call("c1", "big", json!({})));
    faux.push(FauxResponse::text("That was big."));
    let agent = agent_on(&faux)
        .tool(tool("big", |_, _| {
            Box::pin(async {
                let mut text = "0123456789abcdef".repeat(SIZE / 16);
                text.push('!');
                Ok(AgentToolResult::text(text))
            })
        }))
        .build();
    let events = record(&agent);
    prompt_within(&agent, "go", Duration::from_secs(600))
        .await
        .into_result()
        .unwrap();
    let results = tool_results(&agent);
    assert_eq!(results.len(), 1);
    assert!(!results[0].1);
    assert_eq!(results[0].2.len(), SIZE + 1);
    assert!(results[0].2.ends_with("cdef!"));
    // The model got the whole result back.
    let second = &faux.requests()[1];
    let sent = second
        .context
        .messages
        .iter()
        .find_map(|m| match m {
            pi_engine::Message::ToolResult(r) => Some(r.text()),
            _ => None,
        })
        .unwrap();
    assert_eq!(sent.len(), SIZE + 1);
    assert_eq!(count(&events, "agent_end"), 1);
    let reply = agent
        .messages()
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(reply.text(), "That was big.");
}

async fn ten_thousand_calls(mode: ToolExecutionMode, with_abort: bool) {
    const N: usize = 10_000;
    let faux = faux();
    let calls = (0..N)
        .map(|i| AssistantContent::tool_call(format!("c{i}"), "work", json!({"i": i})))
        .collect();
    faux.push(FauxResponse::content(calls));
    faux.push(FauxResponse::text("All done."));
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let work = tool("work", move |args, cx| {
        r.fetch_add(1, Ordering::SeqCst);
        let i = args["i"].as_u64().unwrap();
        Box::pin(async move {
            // Every call waits a different time; the odd ones ignore an abort.
            let wait = tokio::time::sleep(Duration::from_millis(1 + i % 997));
            if i % 2 == 1 {
                wait.await;
            } else {
                tokio::select! {
                    () = wait => {}
                    () = cx.cancel.cancelled() => return Err("Operation aborted".into()),
                }
            }
            if with_abort {
                futures::future::pending::<()>().await;
            }
            Ok(AgentToolResult::text(format!("r{i}")))
        })
    });
    let agent = agent_on(&faux).tool(work).tool_execution(mode).build();
    let events = record(&agent);
    if with_abort {
        abort_after(&agent, Duration::from_millis(500));
    }
    assert_eq!(
        prompt_within(&agent, "go", Duration::from_secs(36_000))
            .await
            .is_aborted(),
        with_abort
    );
    let results = tool_results(&agent);
    assert_eq!(results.len(), N);
    for (i, (id, is_error, text)) in results.iter().enumerate() {
        assert_eq!(id, &format!("c{i}"), "results in call order");
        if with_abort {
            assert!(*is_error);
            assert_eq!(text, "Operation aborted");
        } else {
            assert!(!is_error);
            assert_eq!(text, &format!("r{i}"));
        }
    }
    assert_eq!(count(&events, "tool_execution_start"), N);
    assert_eq!(count(&events, "tool_execution_end"), N);
    assert_eq!(count(&events, "agent_end"), 1);
    assert!(agent.state().pending_tool_calls().is_empty());
    if !with_abort {
        assert_eq!(ran.load(Ordering::SeqCst), N);
        let reply = agent
            .messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .clone();
        assert_eq!(reply.text(), "All done.");
    }
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_parallel_calls_in_one_turn() {
    let started = std::time::Instant::now();
    ten_thousand_calls(ToolExecutionMode::Parallel, false).await;
    // Real time: polling only the woken calls keeps this far from O(calls²).
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_parallel_calls_aborted_end_after_the_grace() {
    ten_thousand_calls(ToolExecutionMode::Parallel, true).await;
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_sequential_calls_aborted_end_after_the_grace() {
    // The abort lands during one call; that one is cut after the grace, none after it starts.
    ten_thousand_calls(ToolExecutionMode::Sequential, true).await;
}
