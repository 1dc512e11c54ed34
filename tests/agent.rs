//! The agent layer against the faux provider: the loop, tools, hooks, queues, aborts at every
//! phase, panics, listeners and concurrency.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use pi_engine::agent::{
    AfterToolCallResult, Agent, AgentBuilder, AgentContext, AgentError, AgentEvent, AgentHooks,
    AgentLoopConfig, AgentMessage, AgentToolResult, CustomMessageType, PromptInput, QueueMode,
    ToolCallDecision, ToolContext, ToolError, ToolExecutionMode, TypedTool, agent_loop,
    agent_loop_continue, run_agent_loop,
};
use pi_engine::providers::faux::{Chunking, FauxProvider, FauxResponse};
use pi_engine::{
    ApiProvider, AssistantContent, AssistantMessage, AssistantMessageEvent, CancellationToken,
    Content, Message, StopReason, ThinkingLevel, UserMessage,
    llm::{ApiKey, AssistantMessageEventStream, ImageContent, PartialMessage, UserContent},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

// ----- helpers ---------------------------------------------------------------------------

fn faux() -> FauxProvider {
    FauxProvider::builder().chunking(Chunking::Whole).build()
}

fn agent_on(faux: &FauxProvider) -> AgentBuilder {
    let f = faux.clone();
    Agent::builder(faux.model())
        .system_prompt("You are a test agent.")
        .stream_fn(move |m, c, o| f.stream(m, c, o))
}

/// Records every event (cloned) in order.
fn record(agent: &Agent) -> Arc<Mutex<Vec<AgentEvent>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    agent.subscribe(move |e, _| sink.lock().unwrap().push(e.clone()));
    events
}

fn kinds(events: &Arc<Mutex<Vec<AgentEvent>>>) -> Vec<&'static str> {
    events
        .lock()
        .unwrap()
        .iter()
        .map(AgentEvent::kind)
        .collect()
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

fn last_assistant(agent: &Agent) -> AssistantMessage {
    agent
        .messages()
        .into_iter()
        .rev()
        .find_map(|m| m.as_assistant().cloned())
        .expect("an assistant message")
}

fn user_text(text: &str) -> AgentMessage {
    UserMessage::blocks(vec![Content::text(text)]).into()
}

#[derive(Deserialize, JsonSchema)]
struct PathArgs {
    path: String,
}

fn read_tool() -> TypedTool<
    PathArgs,
    impl Fn(PathArgs, ToolContext) -> futures::future::Ready<Result<AgentToolResult, ToolError>>
    + Send
    + Sync
    + 'static,
> {
    TypedTool::new("read", "Read a file", |args: PathArgs, _| {
        futures::future::ready(Ok(AgentToolResult::text(format!(
            "contents of {}",
            args.path
        ))))
    })
}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
}

/// A tool that sleeps (tokio time) and honours the cancellation token.
fn sleep_tool(
    name: &'static str,
) -> TypedTool<
    SleepArgs,
    impl Fn(
        SleepArgs,
        ToolContext,
    ) -> futures::future::BoxFuture<'static, Result<AgentToolResult, ToolError>>
    + Send
    + Sync
    + 'static,
> {
    TypedTool::new(name, "Sleeps", move |args: SleepArgs, cx: ToolContext| {
        Box::pin(async move {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(args.ms)) => {
                    Ok(AgentToolResult::text(format!("{name} slept {}", args.ms)))
                }
                () = cx.cancel.cancelled() => Err("Operation aborted".into()),
            }
        }) as futures::future::BoxFuture<'static, _>
    })
}

// ----- the loop ----------------------------------------------------------------------------

#[tokio::test]
async fn plain_reply_event_order_and_state() {
    let faux = faux();
    faux.push(FauxResponse::text("Hello!"));
    let agent = agent_on(&faux).build();
    let events = record(&agent);
    agent.prompt("Hi").await.unwrap().into_result().unwrap();
    assert_eq!(
        kinds(&events),
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_update",
            "message_update",
            "message_update",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    let messages = agent.messages();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].as_assistant().unwrap().text(), "Hello!");
    // prompt(text) makes a user message of blocks, as pi does.
    let AgentMessage::User(u) = &messages[0] else {
        panic!()
    };
    assert!(matches!(u.content, UserContent::Blocks(_)));
    let events = events.lock().unwrap();
    let AgentEvent::AgentEnd { messages: ended } = events.last().unwrap() else {
        panic!()
    };
    assert_eq!(ended, &messages);
    assert!(!agent.is_streaming());
    assert_eq!(agent.error_message(), None);
    // The model saw the system prompt and the user message.
    let req = &faux.requests()[0];
    assert_eq!(
        req.context.system_prompt.as_deref(),
        Some("You are a test agent.")
    );
    assert_eq!(req.context.messages.len(), 1);
    assert!(req.options.reasoning.is_none());
}

#[tokio::test]
async fn tool_loop_with_typed_tool() {
    let faux = faux();
    faux.push(FauxResponse::content(vec![
        AssistantContent::text("Let me read it."),
        AssistantContent::tool_call("call_1", "read", json!({"path": "a.txt"})),
    ]));
    faux.push(FauxResponse::text("It says: contents of a.txt"));
    let agent = agent_on(&faux).tool(read_tool()).build();
    let events = record(&agent);
    agent
        .prompt("What is in a.txt?")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(
        tool_results(&agent),
        [("call_1".into(), false, "contents of a.txt".into())]
    );
    assert_eq!(agent.messages().len(), 4);
    let k = kinds(&events);
    let pos = |kind: &str| k.iter().position(|x| *x == kind).unwrap();
    assert!(pos("tool_execution_start") < pos("tool_execution_end"));
    assert_eq!(k.iter().filter(|x| **x == "turn_end").count(), 2);
    // The second request carries the tool result, and the tools were declared.
    let requests = faux.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].context.messages.len(), 3);
    assert_eq!(requests[0].context.tools.as_ref().unwrap()[0].name, "read");
    assert!(matches!(
        requests[1].context.messages[2],
        Message::ToolResult(_)
    ));
}

#[tokio::test]
async fn an_unknown_stop_reason_ends_the_turn_as_stop_does() {
    // pi's loop only stops early on `error` and `aborted`: any other reason is a normal end.
    let faux = faux();
    faux.push(
        FauxResponse::text("Paused here.").with_stop_reason(StopReason::from_wire("pauseTurn")),
    );
    let agent = agent_on(&faux).build();
    let events = record(&agent);
    agent.prompt("Hi").await.unwrap().into_result().unwrap();
    assert_eq!(agent.error_message(), None);
    let messages = agent.messages();
    assert_eq!(messages.len(), 2);
    let reply = messages[1].as_assistant().unwrap();
    assert_eq!(reply.stop_reason, StopReason::Unknown("pauseTurn".into()));
    assert_eq!(reply.text(), "Paused here.");
    let k = kinds(&events);
    assert_eq!(k.iter().filter(|x| **x == "turn_end").count(), 1);
    assert_eq!(k.last(), Some(&"agent_end"));
    assert_eq!(faux.requests().len(), 1);
}

#[tokio::test]
async fn an_unknown_stop_reason_with_tool_calls_runs_them() {
    let faux = faux();
    faux.push(
        FauxResponse::content(vec![AssistantContent::tool_call(
            "call_1",
            "read",
            json!({"path": "a.txt"}),
        )])
        .with_stop_reason(StopReason::from_wire("pauseTurn")),
    );
    faux.push(FauxResponse::text("It says: contents of a.txt"));
    let agent = agent_on(&faux).tool(read_tool()).build();
    agent
        .prompt("What is in a.txt?")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(
        tool_results(&agent),
        [("call_1".into(), false, "contents of a.txt".into())]
    );
    assert_eq!(agent.messages().len(), 4);
    assert_eq!(faux.requests().len(), 2);
}

#[tokio::test]
async fn unknown_blocks_in_the_history_are_kept_and_the_faux_provider_streams_none() {
    // A history read from a newer pi's session: the assistant message holds an unknown block.
    let raw = json!({"role": "assistant", "content": [
            {"type": "citation", "quote": "q"}, {"type": "text", "text": "Earlier."}],
        "api": "faux", "provider": "faux", "model": "faux-1",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": 1});
    let earlier: AgentMessage = serde_json::from_value(raw.clone()).unwrap();
    let faux = faux();
    // A scripted reply with an unknown block: the faux provider does not stream it.
    faux.push(FauxResponse::content(vec![
        AssistantContent::text("Now."),
        serde_json::from_value(json!({"type": "citation", "quote": "r"})).unwrap(),
    ]));
    let agent = agent_on(&faux).messages(vec![earlier.clone()]).build();
    agent.prompt("Again").await.unwrap().into_result().unwrap();
    let messages = agent.messages();
    assert_eq!(messages[0], earlier);
    assert_eq!(serde_json::to_value(&messages[0]).unwrap(), raw);
    let reply = messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(reply.content, vec![AssistantContent::text("Now.")]);
}

#[tokio::test]
async fn unknown_tool_invalid_arguments_errors_and_panics_become_error_results() {
    #[derive(Deserialize, JsonSchema)]
    struct AddArgs {
        a: i64,
        b: i64,
    }
    let add = TypedTool::new("add", "Add", |args: AddArgs, _| async move {
        Ok(AgentToolResult::text((args.a + args.b).to_string()))
    });
    let fail = TypedTool::new("fail", "Fails", |_: serde_json::Value, _| async {
        Err::<AgentToolResult, ToolError>("disk on fire".into())
    });
    let boom = TypedTool::new("boom", "Panics", |_: serde_json::Value, _| async {
        if true {
            panic!("tool exploded");
        }
        Ok(AgentToolResult::text("never"))
    });
    let faux = faux();
    faux.push(FauxResponse::content(vec![
        AssistantContent::tool_call("c1", "write_file", json!({"path": "x"})),
        AssistantContent::tool_call("c2", "add", json!({"a": "5", "b": 2})),
        AssistantContent::tool_call("c3", "add", json!({"a": 1})),
        AssistantContent::tool_call("c4", "fail", json!({})),
        AssistantContent::tool_call("c5", "boom", json!({})),
    ]));
    faux.push(FauxResponse::text("Noted."));
    let agent = agent_on(&faux).tool(add).tool(fail).tool(boom).build();
    agent.prompt("go").await.unwrap().into_result().unwrap();
    let results = tool_results(&agent);
    assert_eq!(
        results[0],
        ("c1".into(), true, "Tool write_file not found".into())
    );
    assert_eq!(
        results[1],
        ("c2".into(), false, "7".into()),
        "\"5\" is coerced to 5"
    );
    assert!(results[2].1);
    assert!(
        results[2].2.starts_with(
            "Validation failed for tool \"add\":\n  - b: must have required properties b"
        ),
        "{}",
        results[2].2
    );
    assert!(
        results[2]
            .2
            .ends_with("Received arguments:\n{\n  \"a\": 1\n}")
    );
    assert_eq!(results[3], ("c4".into(), true, "disk on fire".into()));
    assert_eq!(results[4].0, "c5");
    assert!(results[4].1);
    assert_eq!(results[4].2, "Tool boom panicked: tool exploded");
    // The run went on: the model saw the results and answered.
    assert_eq!(last_assistant(&agent).text(), "Noted.");
    assert_eq!(faux.call_count(), 2);
}

#[tokio::test(start_paused = true)]
async fn parallel_tools_run_concurrently_results_in_source_order() {
    let faux = faux();
    faux.push(FauxResponse::content(vec![
        AssistantContent::tool_call("slow", "sleep", json!({"ms": 50})),
        AssistantContent::tool_call("fast", "sleep", json!({"ms": 10})),
    ]));
    faux.push(FauxResponse::text("done"));
    let agent = agent_on(&faux).tool(sleep_tool("sleep")).build();
    let events = record(&agent);
    let started = tokio::time::Instant::now();
    agent.prompt("go").await.unwrap().into_result().unwrap();
    // Concurrent: 50 ms in all, not 60.
    assert_eq!(started.elapsed(), Duration::from_millis(50));
    let events = events.lock().unwrap();
    let ends: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ends, ["fast", "slow"], "ends in completion order");
    let results: Vec<_> = tool_results(&agent).into_iter().map(|r| r.0).collect();
    assert_eq!(results, ["slow", "fast"], "results in call order");
}

#[tokio::test(start_paused = true)]
async fn sequential_mode_by_config_and_by_tool() {
    for by_tool in [false, true] {
        let faux = faux();
        faux.push(FauxResponse::content(vec![
            AssistantContent::tool_call("a", "sleep", json!({"ms": 30})),
            AssistantContent::tool_call("b", "sleep_seq", json!({"ms": 10})),
        ]));
        faux.push(FauxResponse::text("done"));
        let mut builder = agent_on(&faux).tool(sleep_tool("sleep")).tool(if by_tool {
            sleep_tool("sleep_seq").sequential()
        } else {
            sleep_tool("sleep_seq")
        });
        if !by_tool {
            builder = builder.tool_execution(ToolExecutionMode::Sequential);
        }
        let agent = builder.build();
        let events = record(&agent);
        let started = tokio::time::Instant::now();
        agent.prompt("go").await.unwrap().into_result().unwrap();
        assert_eq!(started.elapsed(), Duration::from_millis(40));
        let k: Vec<_> = kinds(&events)
            .into_iter()
            .filter(|k| k.starts_with("tool_") || *k == "message_end")
            .collect();
        // start → end → result message, call after call.
        assert_eq!(
            &k[2..8],
            [
                "tool_execution_start",
                "tool_execution_end",
                "message_end",
                "tool_execution_start",
                "tool_execution_end",
                "message_end"
            ]
        );
    }
}

#[tokio::test]
async fn terminate_only_when_every_result_asks() {
    #[derive(Deserialize, JsonSchema)]
    struct Note {
        note: String,
    }
    let finish = || {
        TypedTool::new("finish", "Finish", |a: Note, _| async move {
            Ok(AgentToolResult::text(format!("finished {}", a.note)).terminating())
        })
    };
    // Every call terminates: no further model call.
    let faux1 = faux();
    faux1.push(FauxResponse::content(vec![
        AssistantContent::tool_call("1", "finish", json!({"note": "one"})),
        AssistantContent::tool_call("2", "finish", json!({"note": "two"})),
    ]));
    let agent = agent_on(&faux1).tool(finish()).build();
    agent.prompt("finish").await.unwrap().into_result().unwrap();
    assert_eq!(faux1.call_count(), 1);
    assert_eq!(agent.messages().len(), 4);
    // One does not: the model is called again.
    let faux2 = faux();
    faux2.push(FauxResponse::content(vec![
        AssistantContent::tool_call("1", "finish", json!({"note": "one"})),
        AssistantContent::tool_call("2", "read", json!({"path": "a"})),
    ]));
    faux2.push(FauxResponse::text("more"));
    let agent = agent_on(&faux2).tool(finish()).tool(read_tool()).build();
    agent.prompt("finish").await.unwrap().into_result().unwrap();
    assert_eq!(faux2.call_count(), 2);
}

#[tokio::test]
async fn tool_updates_reach_listeners_before_the_tool_goes_on() {
    let resumed = Arc::new(AtomicBool::new(false));
    let flag = resumed.clone();
    let progress = TypedTool::new(
        "progress",
        "Reports progress",
        move |_: serde_json::Value, cx: ToolContext| {
            let flag = flag.clone();
            async move {
                for p in ["10%", "50%", "90%"] {
                    cx.updates.update(AgentToolResult::text(p)).await;
                }
                flag.store(true, Ordering::SeqCst);
                Ok(AgentToolResult::text("complete"))
            }
        },
    );
    let faux = faux();
    faux.push(FauxResponse::tool_call("c1", "progress", json!({})));
    faux.push(FauxResponse::text("ok"));
    let agent = agent_on(&faux).tool(progress).build();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (seen2, resumed2) = (seen.clone(), resumed.clone());
    agent.subscribe(move |e, _| {
        if let AgentEvent::ToolExecutionUpdate { partial_result, .. } = e {
            // The tool is still waiting for this update to be handled.
            assert!(!resumed2.load(Ordering::SeqCst));
            seen2.lock().unwrap().push(partial_result.text_content());
        }
    });
    let events = record(&agent);
    agent.prompt("go").await.unwrap().into_result().unwrap();
    assert_eq!(*seen.lock().unwrap(), ["10%", "50%", "90%"]);
    let k = kinds(&events);
    let last_update = k
        .iter()
        .rposition(|k| *k == "tool_execution_update")
        .unwrap();
    assert!(last_update < k.iter().position(|k| *k == "tool_execution_end").unwrap());
}

// ----- hooks -------------------------------------------------------------------------------

#[tokio::test]
async fn before_tool_call_blocks_and_after_tool_call_rewrites() {
    let faux = faux();
    faux.push(FauxResponse::content(vec![
        AssistantContent::tool_call("c1", "read", json!({"path": "secret.txt"})),
        AssistantContent::tool_call("c2", "read", json!({"path": "a.txt"})),
        AssistantContent::tool_call("c3", "read", json!({"path": "blocked-silently"})),
    ]));
    faux.push(FauxResponse::text("ok"));
    let hooks = AgentHooks::new()
        .with_before_tool_call(|cx| {
            Box::pin(async move {
                match cx.args["path"].as_str() {
                    Some("secret.txt") => ToolCallDecision::block("secrets are off limits"),
                    Some("blocked-silently") => ToolCallDecision::Block(None),
                    _ => ToolCallDecision::Allow,
                }
            })
        })
        .with_after_tool_call(|cx| {
            Box::pin(async move {
                (!cx.is_error).then(|| {
                    AfterToolCallResult::new()
                        .with_content(vec![Content::text(format!(
                            "[redacted] {}",
                            cx.result.text_content()
                        ))])
                        .with_details(json!({"redacted": true}))
                })
            })
        });
    let f = faux.clone();
    let agent = Agent::builder(faux.model())
        .tool(read_tool())
        .hooks(hooks.with_stream_fn(move |m, c, o| f.stream(m, c, o)))
        .build();
    agent.prompt("go").await.unwrap().into_result().unwrap();
    let results = tool_results(&agent);
    assert_eq!(
        results[0],
        ("c1".into(), true, "secrets are off limits".into())
    );
    assert_eq!(
        results[1],
        ("c2".into(), false, "[redacted] contents of a.txt".into())
    );
    assert_eq!(
        results[2],
        ("c3".into(), true, "Tool execution was blocked".into())
    );
    let details = agent.messages().into_iter().find_map(|m| match m {
        AgentMessage::ToolResult(r) if r.tool_call_id == "c2" => r.details,
        _ => None,
    });
    assert_eq!(details, Some(json!({"redacted": true})));
}

#[tokio::test]
async fn panicking_hooks_do_not_crash_the_run() {
    let faux = faux();
    faux.push(FauxResponse::tool_call("c1", "read", json!({"path": "a"})));
    faux.push(FauxResponse::text("still here"));
    let f = faux.clone();
    let agent = Agent::builder(faux.model())
        .tool(read_tool())
        .hooks(
            AgentHooks::new()
                .with_stream_fn(move |m, c, o| f.stream(m, c, o))
                .with_before_tool_call(|_| Box::pin(async { panic!("hook broke") })),
        )
        .build();
    agent.subscribe(|_, _| panic!("listener broke"));
    agent.prompt("go").await.unwrap().into_result().unwrap();
    assert_eq!(tool_results(&agent)[0].2, "hook broke");
    assert_eq!(last_assistant(&agent).text(), "still here");
}

#[tokio::test]
async fn custom_messages_and_convert_to_llm() {
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Notification {
        text: String,
        timestamp: i64,
    }
    impl CustomMessageType for Notification {
        const ROLE: &'static str = "notification";
    }
    let note = AgentMessage::custom(&Notification {
        text: "build passed".into(),
        timestamp: 1,
    })
    .unwrap();

    // Default conversion: the model does not see custom messages.
    let faux1 = faux();
    faux1.push(FauxResponse::text("ok"));
    let agent = agent_on(&faux1).messages(vec![note.clone()]).build();
    agent.prompt("hi").await.unwrap().into_result().unwrap();
    assert_eq!(faux1.requests()[0].context.messages.len(), 1);
    assert_eq!(
        agent.messages()[0]
            .to_custom::<Notification>()
            .unwrap()
            .unwrap()
            .text,
        "build passed"
    );

    // A per-message converter shows them as user messages.
    let convert = |m: &AgentMessage| match m {
        AgentMessage::Custom(c) => Some(
            UserMessage::text(format!(
                "[notification] {}",
                c.get("text").and_then(|t| t.as_str()).unwrap_or("")
            ))
            .into(),
        ),
        other => other.to_message(),
    };
    for whole_list in [false, true] {
        let faux2 = faux();
        faux2.push(FauxResponse::text("ok"));
        faux2.push(FauxResponse::text("ok again"));
        let f = faux2.clone();
        let hooks = AgentHooks::new().with_stream_fn(move |m, c, o| f.stream(m, c, o));
        let hooks = if whole_list {
            hooks.with_convert_to_llm(move |msgs| msgs.iter().filter_map(convert).collect())
        } else {
            hooks.with_convert_message(convert)
        };
        let agent = Agent::builder(faux2.model())
            .messages(vec![note.clone()])
            .hooks(hooks)
            .build();
        agent.prompt("hi").await.unwrap().into_result().unwrap();
        agent.follow_up(note.clone());
        assert!(agent.prompt("again").await.unwrap().is_failed());
        let requests = faux2.requests();
        let Message::User(first) = &requests[0].context.messages[0] else {
            panic!()
        };
        assert_eq!(first.content.text(), "[notification] build passed");
        // Second run: history (4 incl. the note) + the new prompt; the queued note arrives
        // as a follow-up after the reply.
        assert_eq!(requests[1].context.messages.len(), 4);
        assert_eq!(requests.len(), 3);
        assert_eq!(requests[2].context.messages.len(), 6);
    }
}

#[tokio::test]
async fn transform_context_and_get_api_key_run_before_each_call() {
    let faux = faux();
    faux.push(FauxResponse::tool_call("c1", "read", json!({"path": "a"})));
    faux.push(FauxResponse::text("done"));
    let f = faux.clone();
    let keys = Arc::new(AtomicUsize::new(0));
    let k = keys.clone();
    let hooks = AgentHooks::new()
        .with_stream_fn(move |m, c, o| f.stream(m, c, o))
        // Keep only the last two messages.
        .with_transform_context(|msgs, _cancel| {
            Box::pin(async move {
                if msgs.len() > 2 {
                    Cow::Owned(msgs[msgs.len() - 2..].to_vec())
                } else {
                    Cow::Borrowed(msgs)
                }
            })
        })
        .with_get_api_key(move |provider| {
            let n = k.fetch_add(1, Ordering::SeqCst);
            let key = format!("{provider}-token-{n}");
            Box::pin(async move { Some(ApiKey::new(key)) })
        });
    let agent = Agent::builder(faux.model())
        .tool(read_tool())
        .hooks(hooks)
        .messages(vec![user_text("old 1"), user_text("old 2")])
        .build();
    agent.prompt("new").await.unwrap().into_result().unwrap();
    let requests = faux.requests();
    assert_eq!(requests[0].context.messages.len(), 2);
    assert_eq!(requests[1].context.messages.len(), 2);
    assert!(matches!(
        requests[1].context.messages[1],
        Message::ToolResult(_)
    ));
    assert_eq!(
        requests[1].options.api_key.as_ref().map(ApiKey::expose),
        Some("faux-token-1")
    );
    assert_eq!(keys.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn options_thinking_level_and_session_reach_the_model() {
    let faux = faux();
    faux.push(FauxResponse::text("ok"));
    let agent = agent_on(&faux)
        .thinking_level(ThinkingLevel::High)
        .session_id("s-1")
        .build();
    agent.prompt("hi").await.unwrap().into_result().unwrap();
    let req = &faux.requests()[0];
    assert_eq!(req.options.reasoning, Some(ThinkingLevel::High));
    assert_eq!(req.options.session_id.as_deref(), Some("s-1"));
    assert!(req.options.cancel.is_some());
}

#[tokio::test]
async fn should_stop_after_turn_and_max_turns() {
    for use_limit in [true, false] {
        let faux = faux();
        for i in 0..5 {
            faux.push(FauxResponse::tool_call(
                format!("c{i}"),
                "read",
                json!({"path": "a"}),
            ));
        }
        let f = faux.clone();
        let mut hooks = AgentHooks::new().with_stream_fn(move |m, c, o| f.stream(m, c, o));
        if !use_limit {
            hooks = hooks.with_should_stop_after_turn(|cx| cx.turns == 2);
        }
        let mut builder = Agent::builder(faux.model()).tool(read_tool()).hooks(hooks);
        if use_limit {
            builder = builder.max_turns(2);
        }
        let agent = builder.build();
        let events = record(&agent);
        agent.prompt("loop").await.unwrap().into_result().unwrap();
        assert_eq!(faux.call_count(), 2);
        let k = kinds(&events);
        assert_eq!(k.iter().filter(|k| **k == "turn_end").count(), 2);
        assert_eq!(k.last(), Some(&"agent_end"));
    }
}

// ----- queues --------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn steering_arrives_after_all_tool_results() {
    let faux = faux();
    faux.push(FauxResponse::content(vec![
        AssistantContent::tool_call("c1", "sleep", json!({"ms": 30})),
        AssistantContent::tool_call("c2", "sleep", json!({"ms": 1})),
    ]));
    faux.push(FauxResponse::text("switching"));
    let agent = agent_on(&faux).tool(sleep_tool("sleep")).build();
    agent.subscribe(|e, agent| {
        if matches!(e, AgentEvent::ToolExecutionStart { tool_call_id, .. } if tool_call_id == "c1")
        {
            agent.steer(user_text("Stop, do something else"));
        }
    });
    agent.prompt("go").await.unwrap().into_result().unwrap();
    let roles: Vec<_> = agent
        .messages()
        .iter()
        .map(|m| m.role().to_owned())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "user",
            "assistant"
        ]
    );
    // Both tools ran (0.73.1: steering skips nothing).
    assert!(tool_results(&agent).iter().all(|r| !r.1));
}

#[tokio::test]
async fn queue_modes_and_follow_ups() {
    for (mode, calls) in [(QueueMode::OneAtATime, 5), (QueueMode::All, 3)] {
        let faux = faux();
        for i in 1..=calls {
            faux.push(FauxResponse::text(format!("R{i}")));
        }
        let agent = agent_on(&faux)
            .steering_mode(mode)
            .follow_up_mode(mode)
            .build();
        let once = AtomicBool::new(false);
        agent.subscribe(move |e, agent| {
            if matches!(
                e,
                AgentEvent::MessageEnd {
                    message: AgentMessage::Assistant(_)
                }
            ) && !once.swap(true, Ordering::SeqCst)
            {
                agent.steer(user_text("S1"));
                agent.steer(user_text("S2"));
                agent.follow_up(user_text("F1"));
                agent.follow_up(user_text("F2"));
            }
        });
        agent.prompt("Start").await.unwrap().into_result().unwrap();
        assert_eq!(faux.call_count(), calls);
        let texts: Vec<String> = agent
            .messages()
            .iter()
            .filter_map(|m| match m {
                AgentMessage::User(u) => Some(u.content.text()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["Start", "S1", "S2", "F1", "F2"]);
        assert_eq!(agent.steering_mode(), mode);
        assert!(!agent.has_queued_messages());
    }
}

#[tokio::test]
async fn prompt_while_running_is_rejected_with_pis_text() {
    let faux = faux();
    faux.push(FauxResponse::text("one"));
    let agent = agent_on(&faux).build();
    let rejected = Arc::new(Mutex::new(None));
    let r = rejected.clone();
    agent.subscribe_async(move |e, agent| {
        let r = r.clone();
        Box::pin(async move {
            if e.kind() == "message_start" && r.lock().unwrap().is_none() {
                let err = agent.prompt("again").await.unwrap_err();
                let err2 = agent.continue_run().await.unwrap_err();
                *r.lock().unwrap() = Some((err, err2));
            }
        })
    });
    agent.prompt("first").await.unwrap().into_result().unwrap();
    let (err, err2) = rejected.lock().unwrap().take().unwrap();
    assert_eq!(err, AgentError::AlreadyProcessing);
    assert_eq!(
        err.to_string(),
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    );
    assert_eq!(
        err2.to_string(),
        "Agent is already processing. Wait for completion before continuing."
    );
}

#[tokio::test]
async fn continue_rules() {
    let faux = faux();
    let agent = agent_on(&faux).build();
    assert_eq!(
        agent.continue_run().await.unwrap_err(),
        AgentError::NoMessages
    );

    faux.push(FauxResponse::error("connect ECONNREFUSED 127.0.0.1:443"));
    assert!(agent.prompt("Hello").await.unwrap().is_failed());
    assert_eq!(
        agent.error_message().as_deref(),
        Some("connect ECONNREFUSED 127.0.0.1:443")
    );
    let err = agent.continue_run().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Cannot continue from message role: assistant"
    );

    // Retry: drop the failed message, continue from the user message.
    agent.state().messages.pop();
    faux.push(FauxResponse::text("Hello again"));
    agent.continue_run().await.unwrap().into_result().unwrap();
    assert_eq!(last_assistant(&agent).text(), "Hello again");
    assert_eq!(agent.error_message(), None, "a new run clears the error");

    // From an assistant tail, queued steering runs first (one at a time, skipping the
    // first poll), then the rest at the next poll.
    agent.steer(user_text("first steer"));
    agent.steer(user_text("second steer"));
    faux.push(FauxResponse::text("R1"));
    faux.push(FauxResponse::text("R2"));
    agent.continue_run().await.unwrap().into_result().unwrap();
    assert_eq!(faux.call_count(), 4);
    // Then follow-ups.
    agent.follow_up(user_text("one more"));
    faux.push(FauxResponse::text("R3"));
    agent.continue_run().await.unwrap().into_result().unwrap();
    assert_eq!(last_assistant(&agent).text(), "R3");
    assert_eq!(agent.messages().len(), 8);
}

#[tokio::test]
async fn clear_queues_returns_them_and_reset_clears_everything() {
    let faux = faux();
    faux.push(FauxResponse::text("ok"));
    let agent = agent_on(&faux).build();
    agent.prompt("hi").await.unwrap().into_result().unwrap();
    agent.steer(user_text("s"));
    agent.follow_up(user_text("f"));
    assert!(agent.has_queued_messages());
    assert_eq!(agent.clear_all_queues().len(), 2);
    agent.steer(user_text("s"));
    agent.reset();
    assert!(agent.messages().is_empty());
    assert!(!agent.has_queued_messages());
    assert_eq!(agent.error_message(), None);
}

// ----- aborts -----------------------------------------------------------------------------

#[tokio::test]
async fn abort_during_streaming_keeps_partial_text() {
    let faux = FauxProvider::builder().chunking(Chunking::Chars(4)).build();
    faux.push(FauxResponse::text("abcdefghijkl"));
    faux.push(FauxResponse::text("The end."));
    let agent = agent_on(&faux).build();
    let deltas = AtomicUsize::new(0);
    let partials = Arc::new(Mutex::new(Vec::new()));
    let p = partials.clone();
    agent.subscribe(move |e, agent| {
        if e.text_delta().is_some() {
            // The partial message, borrowed from the agent's state.
            agent.with_streaming_message(|m| p.lock().unwrap().push(m.unwrap().text()));
            if deltas.fetch_add(1, Ordering::SeqCst) == 1 {
                agent.abort();
            }
        }
    });
    assert!(agent.prompt("Tell me a story").await.unwrap().is_aborted());
    let reply = last_assistant(&agent);
    assert_eq!(reply.stop_reason, StopReason::Aborted);
    assert_eq!(
        reply.text(),
        "abcdefgh",
        "exactly the deltas seen before the abort"
    );
    assert_eq!(reply.error_message.as_deref(), Some("Request was aborted"));
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Request was aborted")
    );
    assert_eq!(*partials.lock().unwrap(), ["abcd", "abcdefgh"]);
    // The next prompt works, and the aborted reply stays in the context (pi's behaviour).
    agent
        .prompt("Just finish it")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(last_assistant(&agent).text(), "The end.");
    assert_eq!(faux.requests()[1].context.messages.len(), 3);
}

/// Deviation `agent/abort-during-tool`: after an abort the loop makes no further model call.
#[tokio::test(start_paused = true)]
async fn abort_during_tool_makes_no_further_model_call() {
    let faux = faux();
    faux.push(FauxResponse::content(vec![
        AssistantContent::text("Starting."),
        AssistantContent::tool_call("c1", "sleep", json!({"ms": 10_000})),
    ]));
    faux.push(FauxResponse::text("never requested"));
    let agent = agent_on(&faux).tool(sleep_tool("sleep")).build();
    let events = record(&agent);
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        aborter.abort();
    });
    assert!(
        agent
            .prompt("Run the long task")
            .await
            .unwrap()
            .is_aborted()
    );
    assert_eq!(faux.call_count(), 1, "no model call after the abort");
    assert_eq!(
        tool_results(&agent),
        [("c1".into(), true, "Operation aborted".into())]
    );
    // pi's events: the run still ends with an empty aborted assistant message.
    let reply = last_assistant(&agent);
    assert!(reply.content.is_empty());
    assert_eq!(reply.stop_reason, StopReason::Aborted);
    assert_eq!(reply.error_message.as_deref(), Some("Request was aborted"));
    let k = kinds(&events);
    assert_eq!(
        &k[k.len() - 6..],
        [
            "turn_end",
            "turn_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
}

#[tokio::test]
async fn abort_before_tools_start_runs_none() {
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let counting = TypedTool::new("count", "Counts", move |_: serde_json::Value, _| {
        r.fetch_add(1, Ordering::SeqCst);
        async { Ok(AgentToolResult::text("counted")) }
    });
    let faux = faux();
    faux.push(FauxResponse::content(vec![
        AssistantContent::tool_call("c1", "count", json!({})),
        AssistantContent::tool_call("c2", "count", json!({})),
    ]));
    let agent = agent_on(&faux).tool(counting).build();
    agent.subscribe(|e, agent| {
        if matches!(
            e,
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(_)
            }
        ) {
            agent.abort();
        }
    });
    assert!(agent.prompt("count twice").await.unwrap().is_aborted());
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert!(
        tool_results(&agent)
            .iter()
            .all(|r| r.1 && r.2 == "Operation aborted")
    );
    assert_eq!(faux.call_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn abort_while_a_hook_waits() {
    let faux = faux();
    faux.push(FauxResponse::tool_call("c1", "read", json!({"path": "a"})));
    let f = faux.clone();
    let agent = Agent::builder(faux.model())
        .tool(read_tool())
        .hooks(
            AgentHooks::new()
                .with_stream_fn(move |m, c, o| f.stream(m, c, o))
                // Waits for an approval that never comes; the abort releases it.
                .with_before_tool_call(|cx| {
                    Box::pin(async move {
                        cx.cancel.cancelled().await;
                        ToolCallDecision::block("No approval: the run was aborted")
                    })
                }),
        )
        .build();
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        aborter.abort();
    });
    assert!(agent.prompt("read a").await.unwrap().is_aborted());
    assert_eq!(
        tool_results(&agent),
        [("c1".into(), true, "No approval: the run was aborted".into())]
    );
    assert_eq!(faux.call_count(), 1);
    assert_eq!(last_assistant(&agent).stop_reason, StopReason::Aborted);
}

#[tokio::test(start_paused = true)]
async fn abort_holds_even_when_the_stream_ignores_the_token() {
    let agent = Agent::builder(faux().model())
        .stream_fn(|m, _, _| {
            let base = AssistantMessage::new(&m.api, &m.provider, &m.id);
            let events = futures::stream::iter([
                AssistantMessageEvent::Start,
                AssistantMessageEvent::TextStart { content_index: 0 },
                AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: "partial".into(),
                },
            ])
            .chain(futures::stream::pending());
            AssistantMessageEventStream::from_stream(PartialMessage::new(base), events)
        })
        .build();
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        aborter.abort();
    });
    assert!(agent.prompt("hang").await.unwrap().is_aborted());
    let reply = last_assistant(&agent);
    assert_eq!(reply.stop_reason, StopReason::Aborted);
    assert_eq!(reply.text(), "partial");
}

#[tokio::test]
async fn abort_leaves_queued_messages_for_the_next_run() {
    let faux = FauxProvider::builder().chunking(Chunking::Chars(4)).build();
    faux.push(FauxResponse::text("Working on it"));
    faux.push(FauxResponse::text("Second reply"));
    faux.push(FauxResponse::text("Stale follow-up reply"));
    let agent = agent_on(&faux).build();
    let once = AtomicBool::new(false);
    agent.subscribe(move |e, agent| {
        if e.text_delta().is_some() && !once.swap(true, Ordering::SeqCst) {
            agent.follow_up(user_text("Queued before the abort"));
            agent.abort();
        }
    });
    assert!(agent.prompt("First").await.unwrap().is_aborted());
    assert!(agent.has_queued_messages());
    agent.prompt("Second").await.unwrap().into_result().unwrap();
    let texts: Vec<String> = agent.messages()[2..]
        .iter()
        .map(|m| match m {
            AgentMessage::User(u) => u.content.text(),
            AgentMessage::Assistant(a) => a.text(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "Second",
            "Second reply",
            "Queued before the abort",
            "Stale follow-up reply"
        ]
    );
}

#[tokio::test]
async fn dropping_the_prompt_future_leaves_the_agent_idle() {
    let (faux, mut handle) = FauxProvider::with_handle();
    let agent = agent_on(&faux).build();
    {
        let run = agent.prompt("hi");
        tokio::pin!(run);
        tokio::select! {
            _ = &mut run => panic!("the reply never comes"),
            call = handle.next_call() => drop(call),
        }
        assert!(agent.is_streaming());
    }
    assert!(!agent.is_streaming());
    tokio::time::timeout(Duration::from_secs(1), agent.wait_for_idle())
        .await
        .unwrap();
    // The user message had completed, so it stays.
    assert_eq!(agent.messages().len(), 1);
}

// ----- failures inside the stream function -------------------------------------------------

#[tokio::test]
async fn provider_errors_end_the_run_with_an_error_message() {
    let faux = faux();
    faux.push(FauxResponse::tool_call("c1", "read", json!({"path": "a"})));
    faux.push(FauxResponse::fail_after(
        vec![AssistantContent::text("Partial answer")],
        "529 overloaded_error",
    ));
    let agent = agent_on(&faux).tool(read_tool()).build();
    let events = record(&agent);
    // The failure is the run's outcome, typed, and an `Err` for `?` through into_result.
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(
        outcome.error().map(|e| e.kind()),
        Some(pi_engine::ErrorKind::Overloaded),
        "{outcome:?}"
    );
    let err = outcome.into_result().unwrap_err();
    assert_eq!(err.to_string(), "529 overloaded_error");
    let reply = last_assistant(&agent);
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert_eq!(reply.text(), "Partial answer");
    assert_eq!(
        agent.last_assistant_text().as_deref(),
        Some("Partial answer")
    );
    assert_eq!(
        agent.error_message().as_deref(),
        Some("529 overloaded_error")
    );
    assert_eq!(kinds(&events).last(), Some(&"agent_end"));
}

#[tokio::test]
async fn panicking_stream_functions_become_error_messages() {
    // Panics when called.
    let agent = Agent::builder(faux().model())
        .stream_fn(|_, _, _| panic!("no stream for you"))
        .build();
    let events = record(&agent);
    assert!(agent.prompt("hi").await.unwrap().is_failed());
    let reply = last_assistant(&agent);
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert_eq!(
        reply.error_message.as_deref(),
        Some("The stream function panicked: no stream for you")
    );
    assert_eq!(kinds(&events).last(), Some(&"agent_end"));

    // Panics while streaming: the partial content is kept.
    let agent = Agent::builder(faux().model())
        .stream_fn(|m, _, _| {
            let base = AssistantMessage::new(&m.api, &m.provider, &m.id);
            let events = futures::stream::iter([
                AssistantMessageEvent::Start,
                AssistantMessageEvent::TextStart { content_index: 0 },
                AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: "so far".into(),
                },
            ])
            .chain(futures::stream::poll_fn(|_| panic!("decoder bug")));
            AssistantMessageEventStream::from_stream(PartialMessage::new(base), events)
        })
        .build();
    assert!(agent.prompt("hi").await.unwrap().is_failed());
    let reply = last_assistant(&agent);
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert_eq!(reply.text(), "so far");
    assert!(reply.error_message.unwrap().contains("decoder bug"));
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn a_stream_without_a_final_event_is_an_error() {
    let agent = Agent::builder(faux().model())
        .stream_fn(|m, _, _| {
            let base = AssistantMessage::new(&m.api, &m.provider, &m.id);
            let events = futures::stream::iter([AssistantMessageEvent::Start]);
            AssistantMessageEventStream::from_stream(PartialMessage::new(base), events)
        })
        .build();
    assert!(agent.prompt("hi").await.unwrap().is_failed());
    assert_eq!(last_assistant(&agent).stop_reason, StopReason::Error);
}

// ----- listeners --------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn listeners_run_in_order_and_are_awaited() {
    let faux = faux();
    faux.push(FauxResponse::text("hi"));
    let agent = agent_on(&faux).build();
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let l1 = log.clone();
    agent.subscribe_async(move |e, _| {
        let l1 = l1.clone();
        Box::pin(async move {
            // A slow async listener: the loop waits for it.
            tokio::time::sleep(Duration::from_millis(10)).await;
            l1.lock().unwrap().push(format!("a:{}", e.kind()));
        })
    });
    let l2 = log.clone();
    let second = agent.subscribe(move |e, _| l2.lock().unwrap().push(format!("b:{}", e.kind())));
    let l3 = log.clone();
    agent.subscribe(move |e, _| l3.lock().unwrap().push(format!("c:{}", e.kind())));
    agent.prompt("hi").await.unwrap().into_result().unwrap();
    {
        let log = log.lock().unwrap();
        assert_eq!(
            &log[..3],
            ["a:agent_start", "b:agent_start", "c:agent_start"]
        );
        assert_eq!(log.len(), 3 * 11);
    }
    second.unsubscribe();
    log.lock().unwrap().clear();
    faux.push(FauxResponse::text("again"));
    agent.prompt("again").await.unwrap().into_result().unwrap();
    assert!(log.lock().unwrap().iter().all(|l| !l.starts_with("b:")));
}

#[tokio::test]
async fn wait_for_idle_from_another_task() {
    let (faux, mut handle) = FauxProvider::with_handle();
    let agent = agent_on(&faux).build();
    let runner = agent.clone();
    let run = tokio::spawn(async move { runner.prompt("hi").await });
    let call = handle.next_call().await.unwrap();
    assert!(agent.is_streaming());
    let waiter = agent.clone();
    let idle = tokio::spawn(async move { waiter.wait_for_idle().await });
    call.respond("hello");
    idle.await.unwrap();
    assert!(!agent.is_streaming());
    run.await.unwrap().unwrap().into_result().unwrap();
    assert_eq!(agent.messages().len(), 2);
}

// ----- the lower levels ------------------------------------------------------------------

#[tokio::test]
async fn agent_loop_stream_and_run_agent_loop() {
    let faux = FauxProvider::builder().chunking(Chunking::Chars(3)).build();
    faux.push(FauxResponse::tool_call("c1", "read", json!({"path": "x"})));
    faux.push(FauxResponse::text("Hello there"));
    let f = faux.clone();
    let config = AgentLoopConfig::new(faux.model())
        .with_hooks(AgentHooks::new().with_stream_fn(move |m, c, o| f.stream(m, c, o)));
    let context = AgentContext::new("sys").with_tool(read_tool());
    let mut stream = agent_loop(
        vec![user_text("hi")],
        context.clone(),
        config.clone(),
        CancellationToken::new(),
    );
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let Some(delta) = event.text_delta() {
            text.push_str(delta);
            assert_eq!(stream.streaming_message().unwrap().text(), text);
        }
    }
    assert_eq!(text, "Hello there");
    let messages = stream.result().await;
    assert_eq!(messages.len(), 4);

    // Continue from a context ending in a tool result.
    faux.push(FauxResponse::text("continued"));
    let context = context.with_messages(messages);
    assert_eq!(
        agent_loop_continue(context.clone(), config.clone(), CancellationToken::new()).unwrap_err(),
        AgentError::CannotContinueFrom("assistant".into())
    );
    assert_eq!(
        agent_loop_continue(
            AgentContext::new(""),
            config.clone(),
            CancellationToken::new()
        )
        .unwrap_err()
        .to_string(),
        "Cannot continue: no messages in context"
    );
    let mut messages = context.messages.clone();
    messages.pop();
    let stream = agent_loop_continue(
        context.with_messages(messages),
        config.clone(),
        CancellationToken::new(),
    )
    .unwrap();
    let added = stream.result().await;
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].as_assistant().unwrap().text(), "continued");

    // The awaitable core with a closure sink.
    faux.push(FauxResponse::text("core"));
    let mut kinds = Vec::new();
    let out = run_agent_loop(
        vec![user_text("hi")],
        AgentContext::new("sys"),
        &config,
        &CancellationToken::new(),
        |e: &AgentEvent| {
            kinds.push(e.kind());
            std::future::ready(())
        },
    )
    .await;
    assert_eq!(out.len(), 2);
    assert_eq!(kinds.first(), Some(&"agent_start"));
    assert_eq!(kinds.last(), Some(&"agent_end"));
}

#[tokio::test]
async fn prompt_with_images_and_messages() {
    let faux = faux();
    faux.push(FauxResponse::text("a cat"));
    faux.push(FauxResponse::text("two"));
    let agent = agent_on(&faux).build();
    agent
        .prompt(PromptInput::with_images(
            "What is this?",
            vec![ImageContent::new("AAAA", "image/png")],
        ))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let Message::User(u) = &faux.requests()[0].context.messages[0] else {
        panic!()
    };
    let UserContent::Blocks(blocks) = &u.content else {
        panic!()
    };
    assert!(matches!(blocks[1], Content::Image(_)));
    agent
        .prompt(vec![user_text("one"), user_text("and")])
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(agent.messages().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_agents_run_concurrently() {
    let mut runs = Vec::new();
    let mut agents = Vec::new();
    for i in 0..200 {
        let faux = faux();
        faux.push(FauxResponse::tool_call(
            format!("c{i}"),
            "read",
            json!({"path": format!("{i}.txt")}),
        ));
        faux.push(FauxResponse::text(format!("done {i}")));
        let agent = agent_on(&faux).tool(read_tool()).build();
        agents.push(agent.clone());
        runs.push(tokio::spawn(async move { agent.prompt("go").await }));
    }
    for r in runs {
        r.await.unwrap().unwrap().into_result().unwrap();
    }
    for (i, agent) in agents.iter().enumerate() {
        assert_eq!(last_assistant(agent).text(), format!("done {i}"));
        assert_eq!(tool_results(agent)[0].2, format!("contents of {i}.txt"));
    }
}

#[tokio::test]
async fn clones_share_one_agent() {
    let faux = faux();
    faux.push(FauxResponse::text("hi"));
    let agent = agent_on(&faux).build();
    let clone = agent.clone();
    clone.set_system_prompt("changed");
    agent.prompt("hi").await.unwrap().into_result().unwrap();
    assert_eq!(clone.messages().len(), 2);
    assert_eq!(
        faux.requests()[0].context.system_prompt.as_deref(),
        Some("changed")
    );
    assert!(format!("{agent:?}").contains("changed"));
}

#[tokio::test]
async fn listeners_see_tool_arguments_as_they_stream() {
    let faux = FauxProvider::builder().chunking(Chunking::Chars(6)).build();
    faux.push(FauxResponse::tool_call(
        "c1",
        "read",
        json!({"path": "src/some/long/file.rs"}),
    ));
    faux.push(FauxResponse::text("ok"));
    let agent = agent_on(&faux).tool(read_tool()).build();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    agent.subscribe(move |e, agent| {
        if let AgentEvent::MessageUpdate {
            assistant_message_event: AssistantMessageEvent::ToolcallDelta { .. },
        } = e
        {
            let path = agent.with_streaming_message(|m| {
                m.unwrap()
                    .tool_calls()
                    .next()
                    .unwrap()
                    .arguments
                    .get("path")
                    .cloned()
            });
            s.lock()
                .unwrap()
                .push(path.and_then(|p| p.as_str().map(str::to_owned)));
        }
    });
    agent
        .prompt("read it")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let seen = seen.lock().unwrap();
    assert!(seen.len() > 2, "{seen:?}");
    let known: Vec<_> = seen.iter().flatten().collect();
    assert!(
        known.windows(2).all(|w| w[1].starts_with(w[0].as_str())),
        "{known:?}"
    );
    assert_eq!(known.last().unwrap().as_str(), "src/some/long/file.rs");
}

/// The transcript keeps the final message exactly, also when the streamed content differs
/// from it (other text, tool arguments in another key order).
#[tokio::test]
async fn transcript_holds_the_final_message_not_the_streamed_one() {
    use AssistantMessageEvent as E;
    let model = FauxProvider::new().model();
    let agent = Agent::builder(model)
        .stream_fn(|m, _, _| {
            let base = AssistantMessage::new(&m.api, &m.provider, &m.id);
            let streamed: serde_json::Value = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
            let last: serde_json::Value = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
            let call = |args| pi_engine::ToolCall::new("c1", "missing", args);
            let mut done = base.clone().with_content(vec![
                AssistantContent::text("final text"),
                AssistantContent::ToolCall(call(last)),
            ]);
            done.stop_reason = StopReason::Stop;
            let events = vec![
                E::Start,
                E::TextStart { content_index: 0 },
                E::TextDelta {
                    content_index: 0,
                    delta: "streamed".into(),
                },
                E::ToolcallStart {
                    content_index: 1,
                    id: "c1".into(),
                    tool_name: "missing".into(),
                },
                E::ToolcallDelta {
                    content_index: 1,
                    delta: r#"{"a":1,"b":2}"#.into(),
                },
                E::ToolcallEnd {
                    content_index: 1,
                    tool_call: call(streamed),
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
        })
        .max_turns(1)
        .build();
    let ends = Arc::new(Mutex::new(Vec::new()));
    let seen = ends.clone();
    agent.subscribe(move |e, _| {
        if let AgentEvent::MessageEnd { message } = e {
            seen.lock()
                .unwrap()
                .push(serde_json::to_string(message).unwrap());
        }
    });
    agent.prompt("go").await.unwrap().into_result().unwrap();
    let messages = agent.messages();
    let reply = serde_json::to_string(&messages[1]).unwrap();
    assert!(reply.contains(r#""text":"final text""#), "{reply}");
    assert!(reply.contains(r#""arguments":{"b":2,"a":1}"#), "{reply}");
    assert_eq!(ends.lock().unwrap()[1], reply);
}

/// A reply cut short after a text and half a tool call. `panic` makes the stream panic
/// there; otherwise it ends without a final event.
fn cut_short_stream(m: &pi_engine::Model, panic: bool) -> AssistantMessageEventStream {
    let base = AssistantMessage::new(&m.api, &m.provider, &m.id);
    let events = futures::stream::iter([
        AssistantMessageEvent::Start,
        AssistantMessageEvent::TextStart { content_index: 0 },
        AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: "partial".into(),
        },
        AssistantMessageEvent::ToolcallStart {
            content_index: 1,
            id: "c1".into(),
            tool_name: "read".into(),
        },
        AssistantMessageEvent::ToolcallDelta {
            content_index: 1,
            delta: r#"{"path":"a.txt","li"#.into(),
        },
    ])
    .chain(futures::stream::poll_fn(move |_| {
        if panic {
            panic!("stream exploded");
        }
        std::task::Poll::Ready(None)
    }));
    AssistantMessageEventStream::from_stream(PartialMessage::new(base), events)
}

/// The `Agent` does not fold the model stream twice: once the reply started, its own fold
/// stands in for the stream's. A reply that ends without a final event (cut short, or the
/// stream panics) must still keep everything streamed, exactly as the bare loop (which keeps
/// the stream's fold) reports it.
#[tokio::test]
async fn cut_short_replies_keep_what_streamed_through_the_agent_as_in_the_bare_loop() {
    for panic in [false, true] {
        let agent = Agent::builder(faux().model())
            .stream_fn(move |m, _, _| cut_short_stream(m, panic))
            .build();
        assert!(agent.prompt("go").await.unwrap().is_failed());
        let via_agent = last_assistant(&agent);

        let config = AgentLoopConfig::new(faux().model()).with_hooks(
            AgentHooks::new().with_stream_fn(move |m, _, _| cut_short_stream(m, panic)),
        );
        let messages = run_agent_loop(
            vec![user_text("go")],
            AgentContext::new(""),
            &config,
            &CancellationToken::new(),
            |_: &AgentEvent| std::future::ready(()),
        )
        .await;
        let mut bare = messages
            .iter()
            .rev()
            .find_map(|m| m.as_assistant().cloned())
            .unwrap();

        assert_eq!(via_agent.text(), "partial", "panic: {panic}");
        let call = via_agent
            .tool_calls()
            .next()
            .expect("the partial tool call");
        assert_eq!(call.arguments.get("path"), Some(&json!("a.txt")));
        assert_eq!(via_agent.stop_reason, StopReason::Error);
        let expected = if panic {
            "The model stream panicked: stream exploded"
        } else {
            "The stream ended without a final event"
        };
        assert_eq!(via_agent.error_message.as_deref(), Some(expected));
        bare.timestamp = via_agent.timestamp; // two runs, two clocks
        assert_eq!(via_agent, bare, "panic: {panic}");
    }
}

#[tokio::test]
async fn a_provider_or_a_registry_needs_no_closure() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("from the provider"));
    let agent = Agent::builder(faux.model()).provider(faux.clone()).build();
    agent.prompt("hi").await.unwrap().into_result().unwrap();
    assert_eq!(
        agent.last_assistant_text().as_deref(),
        Some("from the provider")
    );

    let registry = std::sync::Arc::new(pi_engine::ApiRegistry::new());
    registry.register(std::sync::Arc::new(faux.clone()));
    faux.push(FauxResponse::text("through the registry"));
    let agent = Agent::builder(faux.model())
        .registry(registry.clone())
        .build();
    agent.prompt("hi").await.unwrap().into_result().unwrap();
    assert_eq!(
        agent.last_assistant_text().as_deref(),
        Some("through the registry")
    );
    // A model whose api the registry does not hold fails the run, saying so.
    let stranger = pi_engine::Model::new("m", "no-such-api", "nobody", "");
    let agent = Agent::builder(stranger).registry(registry).build();
    let outcome = agent.prompt("hi").await.unwrap();
    assert!(
        outcome
            .error()
            .is_some_and(|e| e.message().contains("no-such-api")),
        "{outcome:?}"
    );
}
