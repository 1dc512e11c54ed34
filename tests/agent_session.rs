//! `AgentSession` against the faux provider: persistence and reopening, compaction in the
//! middle of a tool loop, overflow recovery, retries with aborts at each phase (paused
//! time), model switching (a smaller window compacts first), tree navigation with a branch
//! summary, statistics — and a session it writes opened by pi 0.73.1 itself.

#[path = "support/pi_npm.rs"]
mod pi_npm;
mod support;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_engine::agent::{
    AgentEvent, AgentMessage, AgentToolResult, ToolContext, ToolError, TypedTool,
};
use pi_engine::agent_session::{
    AgentSession, AgentSessionBuilder, AgentSessionError, AgentSessionEvent, AgentSessionSettings,
    CompactionReason, CycleDirection, ForkPosition, NavigateOptions, ScopedModel, SessionEvent,
};
use pi_engine::providers::faux::{Chunking, FauxProvider, FauxRequest, FauxResponse};
use pi_engine::session::compaction::SUMMARIZATION_SYSTEM_PROMPT;
use pi_engine::session::{EntryType, SessionEntry, SessionManager, SessionOptions, convert_to_llm};
use pi_engine::{
    ApiProvider, AssistantMessage, Error, ErrorKind, Message, Model, StopReason, ThinkingLevel,
    llm::{AssistantMessageEventStream, ModelCost, RetryPolicy},
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tempfile::TempDir;

// ----- helpers ---------------------------------------------------------------------------

fn model(id: &str, reasoning: bool, window: u64) -> Model {
    Model::new(id, "faux", "faux", "http://localhost:0")
        .with_reasoning(reasoning)
        .with_cost(ModelCost::new(3.0, 15.0, 0.3, 3.75))
        .with_context_window(window)
        .with_max_tokens(4096)
}

/// A faux provider with a reasoning model "big" (200k window) and a plain "small" one.
fn faux_with(small_window: u64) -> FauxProvider {
    FauxProvider::builder()
        .chunking(Chunking::Whole)
        .model(model("big", true, 200_000))
        .model(model("small", false, small_window))
        .build()
}

fn faux() -> FauxProvider {
    faux_with(128_000)
}

fn builder(faux: &FauxProvider, session: SessionManager) -> AgentSessionBuilder {
    let f = faux.clone();
    AgentSession::builder(session)
        .models(faux.models().to_vec())
        .default_model(faux.model())
        .system_prompt("You are a test agent.")
        .stream_fn(move |m, c, o| f.stream(m, c, o))
}

fn new_session(dir: &TempDir) -> SessionManager {
    SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/project")
}

fn reopen(path: &Path) -> SessionManager {
    SessionOptions::new().open(path).unwrap()
}

/// Records the session events, the kinds of all events, and the replies.
#[derive(Clone, Default)]
struct Recorder {
    session: Arc<Mutex<Vec<SessionEvent>>>,
    kinds: Arc<Mutex<Vec<&'static str>>>,
    replies: Arc<Mutex<Vec<AssistantMessage>>>,
}

impl Recorder {
    fn attach(session: &AgentSession) -> Recorder {
        let r = Recorder::default();
        let sink = r.clone();
        session.subscribe(move |e| {
            sink.kinds.lock().unwrap().push(e.kind());
            match e {
                AgentSessionEvent::Session(s) => sink.session.lock().unwrap().push(s.clone()),
                AgentSessionEvent::Agent(AgentEvent::MessageEnd {
                    message: AgentMessage::Assistant(a),
                }) => sink.replies.lock().unwrap().push(a.clone()),
                _ => {}
            }
        });
        r
    }

    fn session_events(&self) -> Vec<SessionEvent> {
        self.session.lock().unwrap().clone()
    }

    fn kinds(&self) -> Vec<&'static str> {
        self.kinds.lock().unwrap().clone()
    }

    fn replies(&self) -> Vec<AssistantMessage> {
        self.replies.lock().unwrap().clone()
    }
}

fn is_summary_request(r: &FauxRequest) -> bool {
    r.context.system_prompt.as_deref() == Some(SUMMARIZATION_SYSTEM_PROMPT)
}

fn prompt_text(r: &FauxRequest) -> String {
    match r.context.messages.first() {
        Some(Message::User(u)) => u.content.text(),
        _ => String::new(),
    }
}

type Script = Arc<dyn Fn(&FauxRequest) -> FauxResponse + Send + Sync>;

/// Answers summary requests ("PREFIX SUMMARY" for a turn prefix, "HISTORY SUMMARY"
/// otherwise) and leaves every other request to `f`.
fn summarizing(f: impl Fn(&FauxRequest) -> FauxResponse + Send + Sync + 'static) -> Script {
    Arc::new(move |r: &FauxRequest| {
        if is_summary_request(r) {
            if prompt_text(r).contains("This is the PREFIX of a turn") {
                FauxResponse::text("PREFIX SUMMARY")
            } else {
                FauxResponse::text("HISTORY SUMMARY")
            }
        } else {
            f(r)
        }
    })
}

/// Queues `n` answers computed by `script`.
fn script(faux: &FauxProvider, n: usize, script: &Script) {
    for _ in 0..n {
        let s = script.clone();
        faux.push(FauxResponse::respond(move |r| s(r)));
    }
}

fn entries(session: &AgentSession) -> Vec<SessionEntry> {
    session.with_session_manager(|sm| sm.entries().unwrap())
}

fn branch(session: &AgentSession) -> Vec<SessionEntry> {
    session.with_session_manager(|sm| sm.branch_path(None).unwrap())
}

fn context(session: &AgentSession) -> Vec<AgentMessage> {
    session.with_session_manager(|sm| sm.build_session_context().unwrap().messages)
}

fn roles(messages: &[AgentMessage]) -> Vec<String> {
    messages.iter().map(|m| m.role().to_owned()).collect()
}

fn entry_types(entries: &[SessionEntry]) -> Vec<EntryType> {
    entries.iter().map(SessionEntry::entry_type).collect()
}

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

async fn read(args: ReadArgs, _cx: ToolContext) -> Result<AgentToolResult, ToolError> {
    Ok(AgentToolResult::text(format!(
        "{}:\n{}",
        args.path,
        "x".repeat(6000)
    )))
}

/// A `read` tool returning 6000 characters (1500 estimated tokens).
fn read_tool() -> impl pi_engine::agent::AgentTool {
    TypedTool::new("read", "Reads a file", read)
}

/// Chats `n` times ("question i" with `size` characters, answered with `size` characters).
async fn chat(session: &AgentSession, faux: &FauxProvider, n: usize, size: usize) {
    for i in 0..n {
        faux.push(FauxResponse::text(format!(
            "answer {i}: {}",
            "a".repeat(size)
        )));
        session
            .prompt(format!("question {i}: {}", "q".repeat(size)))
            .await
            .unwrap()
            .into_result()
            .unwrap();
    }
}

// ----- persistence and reopening -------------------------------------------------------

#[tokio::test]
async fn every_message_is_written_as_it_ends_and_a_reopened_session_continues() {
    let dir = TempDir::new().unwrap();
    let faux = faux();
    faux.push(FauxResponse::tool_call(
        "c1",
        "read",
        json!({"path": "a.rs"}),
    ));
    faux.push(FauxResponse::text("a.rs holds x's."));
    let session = builder(&faux, new_session(&dir))
        .tool(read_tool())
        .thinking_level(ThinkingLevel::High)
        .build()
        .unwrap();
    // A new session starts with model_change + thinking_level_change, as pi's SDK writes.
    assert_eq!(
        entry_types(&entries(&session)),
        [EntryType::ModelChange, EntryType::ThinkingLevelChange]
    );

    // Each message is in the file when listeners see its message_end.
    let written = Arc::new(Mutex::new(Vec::new()));
    let (probe, file_of) = (written.clone(), session.clone());
    let probing = session.subscribe(move |e| {
        if let AgentSessionEvent::Agent(AgentEvent::MessageEnd { message }) = e {
            let leaf = file_of.with_session_manager(|sm| sm.leaf_entry().unwrap());
            let ok = matches!(leaf, Some(SessionEntry::Message(m)) if m.message == *message);
            probe.lock().unwrap().push(ok);
        }
    });
    session
        .prompt("What is in a.rs?")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(*written.lock().unwrap(), [true, true, true, true]);
    probing.unsubscribe(); // it holds a clone of the session
    let messages = session.messages();
    assert_eq!(
        roles(&messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(
        context(&session),
        messages,
        "the file's context is the agent's"
    );
    let file = session.session_file().unwrap();
    drop(session);

    // Reopen with no explicit model: the session's ("big", high) wins over the default.
    faux.push(FauxResponse::text("You asked about a.rs."));
    let f = faux.clone();
    let reopened = AgentSession::builder(reopen(&file))
        .models(faux.models().to_vec())
        .default_model(faux.get_model("small").unwrap())
        .stream_fn(move |m, c, o| f.stream(m, c, o))
        .build()
        .unwrap();
    assert_eq!(reopened.model().id, "big");
    assert_eq!(reopened.thinking_level(), ThinkingLevel::High);
    assert_eq!(reopened.messages(), messages);
    assert!(reopened.model_fallback_message().is_none());
    reopened
        .prompt("What did I ask?")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let last = faux.requests().pop().unwrap();
    assert_eq!(
        last.context.messages.len(),
        5,
        "the model sees the whole history"
    );
    assert_eq!(last.options.reasoning, Some(ThinkingLevel::High));
    assert_eq!(
        last.options.session_id.as_deref(),
        Some(reopened.session_id().as_str())
    );
    // Reopening wrote no settings entries, only the new messages.
    let types = entry_types(&entries(&reopened));
    assert_eq!(types.len(), 2 + 4 + 2);
    assert_eq!(
        reopened.last_assistant_text().as_deref(),
        Some("You asked about a.rs.")
    );
}

#[tokio::test]
async fn a_reply_with_an_unknown_stop_reason_ends_the_run_and_is_kept() {
    // Not a failure (no retry, no error) and not an overflow: it ends the run as `stop` does,
    // and the session file keeps the reason as written.
    let dir = TempDir::new().unwrap();
    let faux = faux();
    faux.push(FauxResponse::text("Paused.").with_stop_reason(StopReason::from_wire("pauseTurn")));
    let session = builder(&faux, new_session(&dir)).build().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let sub = session.subscribe(move |e| {
        if let AgentSessionEvent::Session(e) = e {
            seen.lock().unwrap().push(format!("{e:?}"));
        }
    });
    session.prompt("Hi").await.unwrap().into_result().unwrap();
    assert_eq!(faux.requests().len(), 1, "no retry");
    assert!(
        !events
            .lock()
            .unwrap()
            .iter()
            .any(|e| e.contains("Retry") || e.contains("Compaction")),
        "{events:?}"
    );
    assert_eq!(session.last_assistant_text().as_deref(), Some("Paused."));
    let file = session.session_file().unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(r#""stopReason":"pauseTurn""#), "{text}");
    sub.unsubscribe();
    drop(session);
    let reopened = reopen(&file);
    let ctx = reopened.build_session_context().unwrap();
    let reply = ctx.messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(reply.stop_reason, StopReason::Unknown("pauseTurn".into()));
}

#[tokio::test]
async fn an_unknown_model_falls_back_with_pis_message() {
    let dir = TempDir::new().unwrap();
    let faux = faux();
    faux.push(FauxResponse::text("hi"));
    let session = builder(&faux, new_session(&dir)).build().unwrap();
    session
        .prompt("hello")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let file = session.session_file().unwrap();
    drop(session);
    let other = FauxProvider::builder()
        .model(model("other", false, 50_000))
        .build();
    let f = other.clone();
    let reopened = AgentSession::builder(reopen(&file))
        .default_model(other.model())
        .stream_fn(move |m, c, o| f.stream(m, c, o))
        .build()
        .unwrap();
    assert_eq!(reopened.model().id, "other");
    assert_eq!(
        reopened.model_fallback_message().as_deref(),
        Some("Could not restore model faux/big. Using faux/other")
    );
    assert!(matches!(
        AgentSession::builder(SessionManager::in_memory("/p")).build(),
        Err(AgentSessionError::NoModel)
    ));
}

#[tokio::test]
async fn steering_and_follow_ups_report_queue_updates() {
    let faux = faux();
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .build()
        .unwrap();
    let rec = Recorder::attach(&session);
    session.steer("look at b.rs too");
    session.follow_up("then summarize");
    assert_eq!(session.pending_message_count(), 2);
    faux.push(FauxResponse::text("one"));
    faux.push(FauxResponse::text("two"));
    faux.push(FauxResponse::text("three"));
    session
        .prompt("start")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let updates: Vec<(Vec<String>, Vec<String>)> = rec
        .session_events()
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::QueueUpdate {
                steering,
                follow_up,
            } => Some((steering, follow_up)),
            _ => None,
        })
        .collect();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        updates,
        [
            (s(&["look at b.rs too"]), s(&[])),
            (s(&["look at b.rs too"]), s(&["then summarize"])),
            (s(&[]), s(&["then summarize"])),
            (s(&[]), s(&[])),
        ]
    );
    assert_eq!(session.pending_message_count(), 0);
    assert_eq!(
        roles(&context(&session)),
        ["user", "user", "assistant", "user", "assistant"]
    );
    assert_eq!(faux.pending(), 1);
}

// ----- compaction ------------------------------------------------------------------------

/// The prompt size of each reply (what the faux provider counted: input and cache).
fn prompt_tokens(reply: &AssistantMessage) -> u64 {
    reply.usage.input + reply.usage.cache_read + reply.usage.cache_write
}

/// A tool loop of 20 `read` calls of 1500 tokens each (30 000 tokens of results) on a model
/// with a 30 000-token window.
async fn tool_loop(compaction: bool) -> (AgentSession, FauxProvider, Recorder) {
    let faux = faux_with(30_000);
    let calls = Arc::new(AtomicUsize::new(0));
    let s = summarizing(move |_| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        if n < 20 {
            FauxResponse::tool_call(
                format!("c{n}"),
                "read",
                json!({"path": format!("src/f{n}.rs")}),
            )
        } else {
            FauxResponse::text("all files read")
        }
    });
    script(&faux, 60, &s);
    let mut settings = AgentSessionSettings::default();
    settings.compaction.keep_recent_tokens = 4000;
    settings.compaction.enabled = compaction;
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .model(faux.get_model("small").unwrap())
        .tool(read_tool())
        .settings(settings)
        .build()
        .unwrap();
    let rec = Recorder::attach(&session);
    session
        .prompt("Read all 20 files.")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    (session, faux, rec)
}

#[tokio::test]
async fn compaction_happens_in_the_middle_of_a_tool_loop() {
    let (session, faux, rec) = tool_loop(true).await;
    let window = 30_000;
    // The model was never sent more than its window holds.
    let replies: Vec<_> = rec.replies();
    assert_eq!(replies.len(), 21);
    let largest = replies.iter().map(prompt_tokens).max().unwrap();
    assert!(largest < window, "a request of {largest} tokens");
    assert_eq!(replies.last().unwrap().stop_reason, StopReason::Stop);
    assert_eq!(
        session.last_assistant_text().as_deref(),
        Some("all files read")
    );

    // Compactions ran during the run (between agent_start and agent_end), for the threshold.
    let kinds = rec.kinds();
    let start = kinds.iter().position(|k| *k == "agent_start").unwrap();
    let end = kinds.iter().rposition(|k| *k == "agent_end").unwrap();
    let compacted: Vec<usize> = kinds
        .iter()
        .enumerate()
        .filter(|(_, k)| **k == "compaction_end")
        .map(|(i, _)| i)
        .collect();
    assert!(!compacted.is_empty());
    assert!(compacted.iter().all(|&i| start < i && i < end));
    assert_eq!(kinds.iter().filter(|k| **k == "agent_start").count(), 1);
    let results: Vec<_> = rec
        .session_events()
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::CompactionEnd { reason, result, .. } => Some((reason, result)),
            _ => None,
        })
        .collect();
    assert!(
        results
            .iter()
            .all(|(reason, result)| *reason == CompactionReason::Threshold && result.is_some())
    );

    // The first compaction cut inside the run's only turn: nothing before it, a turn prefix,
    // the files read; the next ones update that summary.
    let first = results[0].1.as_ref().unwrap();
    assert!(
        first.summary.starts_with(
            "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX SUMMARY"
        ),
        "{}",
        first.summary
    );
    let updates = faux
        .requests()
        .into_iter()
        .filter(|r| {
            is_summary_request(r)
                && prompt_text(r).contains("<previous-summary>\nNo prior history.")
        })
        .count();
    assert!(updates >= 1);
    assert!(first.summary.contains("<read-files>\nsrc/f0.rs\n"));
    assert!(
        first.details.as_ref().unwrap()["readFiles"]
            .as_array()
            .unwrap()
            .contains(&json!("src/f0.rs"))
    );

    // In the file: compaction entries whose kept entry is never a tool result.
    let all = entries(&session);
    for entry in &all {
        if let SessionEntry::Compaction(c) = entry {
            let kept = all
                .iter()
                .find(|e| e.id() == c.first_kept_entry_id)
                .unwrap();
            assert!(!matches!(
                kept.as_message(),
                Some(AgentMessage::ToolResult(_))
            ));
        }
    }
    // Afterwards the agent holds the session's context, starting with the summary.
    let messages = session.messages();
    assert_eq!(messages, context(&session));
    assert_eq!(messages[0].role(), "compactionSummary");
    // Summary requests were made with the session's model and pi's system prompt.
    let summaries = faux
        .requests()
        .into_iter()
        .filter(is_summary_request)
        .count();
    assert!(summaries >= 2);
}

#[tokio::test]
async fn without_the_check_before_each_call_the_same_loop_overflows() {
    // What pi does (it checks only when a run ends): the requests outgrow the window.
    let (_session, _faux, rec) = tool_loop(false).await;
    let largest = rec.replies().iter().map(prompt_tokens).max().unwrap();
    assert!(largest > 30_000, "largest request {largest}");
}

#[tokio::test]
async fn a_context_overflow_compacts_and_retries_once() {
    let faux = faux();
    let mut settings = AgentSessionSettings::default();
    settings.compaction.keep_recent_tokens = 1;
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .settings(settings)
        .build()
        .unwrap();
    chat(&session, &faux, 3, 400).await;
    let rec = Recorder::attach(&session);
    faux.push(FauxResponse::error(
        "prompt is too long: 213462 tokens > 200000 maximum",
    ));
    script(&faux, 2, &summarizing(|_| FauxResponse::text("recovered")));
    session
        .prompt("question 3")
        .await
        .unwrap()
        .into_result()
        .unwrap();

    let events = rec.session_events();
    assert_eq!(
        events[0],
        SessionEvent::CompactionStart {
            reason: CompactionReason::Overflow
        }
    );
    let SessionEvent::CompactionEnd {
        reason,
        result,
        will_retry,
        aborted,
        error_message,
    } = &events[1]
    else {
        panic!("{events:?}")
    };
    assert_eq!(
        (*reason, *will_retry, *aborted, error_message),
        (CompactionReason::Overflow, true, false, &None)
    );
    assert!(
        result
            .as_ref()
            .unwrap()
            .summary
            .starts_with("HISTORY SUMMARY")
    );
    assert_eq!(session.last_assistant_text().as_deref(), Some("recovered"));
    // Retried with the compacted context: summary, the question.
    let retried = faux.requests().pop().unwrap();
    assert_eq!(retried.context.messages.len(), 2);
    assert!(prompt_text(&retried).contains("<summary>\nHISTORY SUMMARY"));
    // The failed reply is in the file, but not in the context (now or when reopened).
    let failed = entries(&session)
        .into_iter()
        .filter(|e| matches!(e.as_message(), Some(AgentMessage::Assistant(a)) if a.stop_reason == StopReason::Error))
        .count();
    assert_eq!(failed, 1);
    assert!(branch(&session).iter().all(|e| !matches!(e.as_message(), Some(AgentMessage::Assistant(a)) if a.stop_reason == StopReason::Error)));
    assert_eq!(session.messages(), context(&session));
    assert_eq!(
        roles(&session.messages()),
        ["compactionSummary", "user", "assistant"]
    );

    // A second overflow right after the recovery is not compacted again.
    let rec = Recorder::attach(&session);
    faux.push(FauxResponse::error(
        "prompt is too long: 300000 tokens > 200000 maximum",
    ));
    script(&faux, 1, &summarizing(|_| FauxResponse::text("unused")));
    faux.push(FauxResponse::error(
        "prompt is too long: 300000 tokens > 200000 maximum",
    ));
    assert!(session.prompt("question 4").await.unwrap().is_failed());
    let ends: Vec<_> = rec
        .session_events()
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::CompactionEnd {
                error_message,
                will_retry,
                ..
            } => Some((will_retry, error_message)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        [
            (true, None),
            (
                false,
                Some("Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.".to_owned())
            )
        ]
    );
    assert!(
        session
            .error_message()
            .unwrap()
            .starts_with("prompt is too long")
    );
}

#[tokio::test]
async fn manual_compaction_with_instructions() {
    let faux = faux();
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .build()
        .unwrap();
    chat(&session, &faux, 4, 40_000).await;
    let rec = Recorder::attach(&session);
    script(&faux, 2, &summarizing(|_| FauxResponse::text("unused")));
    let result = session.compact(Some("the numbers")).await.unwrap();
    let request = faux
        .requests()
        .into_iter()
        .rfind(is_summary_request)
        .unwrap();
    assert!(prompt_text(&request).ends_with("Additional focus: the numbers"));
    assert_eq!(request.options.max_tokens, Some(13_107));
    let events = rec.session_events();
    assert_eq!(
        events[0],
        SessionEvent::CompactionStart {
            reason: CompactionReason::Manual
        }
    );
    assert!(
        matches!(&events[1], SessionEvent::CompactionEnd { result: Some(r), .. } if *r == result)
    );
    assert_eq!(session.messages()[0].role(), "compactionSummary");
    assert!(matches!(
        session.compact(None).await,
        Err(AgentSessionError::AlreadyCompacted)
    ));
    let failed = rec.session_events().pop().unwrap();
    assert_eq!(
        failed,
        SessionEvent::CompactionEnd {
            reason: CompactionReason::Manual,
            result: None,
            aborted: false,
            will_retry: false,
            error_message: Some("Compaction failed: Already compacted".into())
        }
    );
    // The stale usage of the kept replies does not trigger another compaction.
    faux.push(FauxResponse::text("fine"));
    session.prompt("next").await.unwrap().into_result().unwrap();
    assert!(
        rec.session_events().len() == 4,
        "{:?}",
        rec.session_events()
    );
}

// ----- retries (paused time) -------------------------------------------------------------

fn retry_events(rec: &Recorder) -> Vec<SessionEvent> {
    rec.session_events()
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                SessionEvent::AutoRetryStart { .. } | SessionEvent::AutoRetryEnd { .. }
            )
        })
        .collect()
}

fn retry_start(attempt: u32, delay_ms: u64, error: &str) -> SessionEvent {
    SessionEvent::AutoRetryStart {
        attempt,
        max_attempts: 3,
        delay_ms,
        error_message: error.to_owned(),
    }
}

fn retry_end(success: bool, attempt: u32, error: Option<&str>) -> SessionEvent {
    SessionEvent::AutoRetryEnd {
        success,
        attempt,
        final_error: error.map(str::to_owned),
    }
}

fn failed_entries(session: &AgentSession) -> usize {
    entries(session)
        .iter()
        .filter(|e| matches!(e.as_message(), Some(AgentMessage::Assistant(a)) if a.stop_reason == StopReason::Error))
        .count()
}

#[tokio::test(start_paused = true)]
async fn retryable_errors_are_retried_after_2_then_4_seconds() {
    let dir = TempDir::new().unwrap();
    let faux = faux();
    faux.push(FauxResponse::error("503 Service Unavailable"));
    faux.push(FauxResponse::error("529 overloaded_error: Overloaded"));
    faux.push(FauxResponse::text("finally"));
    let session = builder(&faux, new_session(&dir)).build().unwrap();
    let rec = Recorder::attach(&session);
    let t0 = tokio::time::Instant::now();
    session
        .prompt("hello")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(t0.elapsed(), Duration::from_secs(6));
    assert_eq!(
        retry_events(&rec),
        [
            retry_start(1, 2000, "503 Service Unavailable"),
            retry_start(2, 4000, "529 overloaded_error: Overloaded"),
            retry_end(true, 2, None),
        ]
    );
    // Each retry is a new run continuing the same context, without the failed replies.
    assert_eq!(
        rec.kinds().iter().filter(|k| **k == "agent_start").count(),
        3
    );
    assert_eq!(roles(&session.messages()), ["user", "assistant"]);
    assert_eq!(faux.requests()[2].context.messages.len(), 1);
    // The failed replies stay in the file, off the branch: a reopened session has the same
    // context.
    assert_eq!(failed_entries(&session), 2);
    assert_eq!(session.messages(), context(&session));
    let file = session.session_file().unwrap();
    drop(session);
    let reopened = builder(&faux, reopen(&file)).build().unwrap();
    assert_eq!(roles(&reopened.messages()), ["user", "assistant"]);
    // One budget per model call: the provider-level retries were off for every call.
    assert!(
        faux.requests()
            .iter()
            .all(|r| r.options.retry == Some(RetryPolicy::none()))
    );
}

#[tokio::test(start_paused = true)]
async fn retries_stop_after_three() {
    let faux = faux();
    for _ in 0..4 {
        faux.push(FauxResponse::error("fetch failed"));
    }
    faux.push(FauxResponse::text("never"));
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .build()
        .unwrap();
    let rec = Recorder::attach(&session);
    let t0 = tokio::time::Instant::now();
    assert!(session.prompt("hello").await.unwrap().is_failed());
    assert_eq!(t0.elapsed(), Duration::from_secs(2 + 4 + 8));
    assert_eq!(
        retry_events(&rec),
        [
            retry_start(1, 2000, "fetch failed"),
            retry_start(2, 4000, "fetch failed"),
            retry_start(3, 8000, "fetch failed"),
            retry_end(false, 3, Some("fetch failed")),
        ]
    );
    assert_eq!(faux.call_count(), 4);
    assert_eq!(session.error_message().as_deref(), Some("fetch failed"));
    assert_eq!(session.retry_attempt(), 0);
    // The budget is per model call: the next prompt has three retries again.
    faux.set_responses([
        FauxResponse::error("fetch failed"),
        FauxResponse::text("ok"),
    ]);
    session
        .prompt("again")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(session.last_assistant_text().as_deref(), Some("ok"));
}

/// A stream function whose first call fails with a rate limit asking for `after`.
fn rate_limited_once(
    faux: &FauxProvider,
    after: Duration,
) -> impl Fn(&Model, &pi_engine::Context, &pi_engine::StreamOptions) -> AssistantMessageEventStream
+ Send
+ Sync
+ 'static {
    let calls = AtomicUsize::new(0);
    let f = faux.clone();
    move |m, c, o| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            let error = Error::new(ErrorKind::RateLimited, "429 rate_limit_error: slow down")
                .with_status(429)
                .with_retry_after(Some(after));
            AssistantMessageEventStream::failed(
                AssistantMessage::new(&m.api, &m.provider, &m.id),
                error,
            )
        } else {
            f.stream(m, c, o)
        }
    }
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured_up_to_the_cap() {
    for (after, waited) in [(10, 10), (1, 2), (600, 60)] {
        let faux = faux();
        faux.push(FauxResponse::text("ok"));
        let session = AgentSession::builder(SessionManager::in_memory("/p"))
            .default_model(faux.model())
            .stream_fn(rate_limited_once(&faux, Duration::from_secs(after)))
            .build()
            .unwrap();
        let rec = Recorder::attach(&session);
        let t0 = tokio::time::Instant::now();
        session.prompt("hi").await.unwrap().into_result().unwrap();
        assert_eq!(
            t0.elapsed(),
            Duration::from_secs(waited),
            "Retry-After {after}"
        );
        assert_eq!(
            retry_events(&rec)[0],
            retry_start(1, waited * 1000, "429 rate_limit_error: slow down")
        );
        assert_eq!(session.last_assistant_text().as_deref(), Some("ok"));
    }
}

#[tokio::test(start_paused = true)]
async fn abort_during_the_backoff_wait_cancels_the_retry() {
    let faux = faux();
    faux.push(FauxResponse::error("503 Service Unavailable"));
    faux.push(FauxResponse::text("never"));
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .build()
        .unwrap();
    let rec = Recorder::attach(&session);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    session.subscribe(move |e| {
        if e.kind() == "auto_retry_start" {
            let _ = tx.send(());
        }
    });
    let t0 = tokio::time::Instant::now();
    let running = tokio::spawn({
        let session = session.clone();
        async move { session.prompt("hello").await }
    });
    rx.recv().await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(session.is_busy());
    session.abort();
    session.wait_for_idle().await;
    assert!(running.await.unwrap().unwrap().is_aborted());
    assert_eq!(t0.elapsed(), Duration::from_secs(1));
    assert_eq!(
        retry_events(&rec),
        [
            retry_start(1, 2000, "503 Service Unavailable"),
            retry_end(false, 1, Some("Retry cancelled")),
        ]
    );
    assert_eq!(faux.call_count(), 1, "no call after the abort");
    assert!(!session.is_busy());
    // The failed reply was taken out of the context for the retry that did not come.
    assert_eq!(roles(&session.messages()), ["user"]);
}

#[tokio::test(start_paused = true)]
async fn abort_during_the_retried_call_ends_retrying() {
    let faux = faux();
    faux.push(FauxResponse::error("503 Service Unavailable"));
    let mut handle = faux.handle(); // the retried call comes here
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .build()
        .unwrap();
    let rec = Recorder::attach(&session);
    let running = tokio::spawn({
        let session = session.clone();
        async move { session.prompt("hello").await }
    });
    let call = handle.next_call().await.unwrap();
    let mut reply = call.into_reply();
    reply.text_delta("partial answ");
    tokio::task::yield_now().await;
    session.abort();
    assert!(running.await.unwrap().unwrap().is_aborted());
    drop(reply);
    assert_eq!(
        retry_events(&rec),
        [
            retry_start(1, 2000, "503 Service Unavailable"),
            retry_end(false, 1, Some("Request was aborted")),
        ]
    );
    assert_eq!(faux.call_count(), 2);
    let last = session.messages().pop().unwrap();
    let last = last.as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(session.retry_attempt(), 0);
}

#[tokio::test(start_paused = true)]
async fn aborted_and_non_retryable_failures_are_not_retried() {
    let faux = faux();
    faux.push(FauxResponse::error("401 invalid x-api-key"));
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .build()
        .unwrap();
    let rec = Recorder::attach(&session);
    assert!(session.prompt("hello").await.unwrap().is_failed());
    assert!(retry_events(&rec).is_empty());
    assert_eq!(faux.call_count(), 1);

    // Abort during the first call: no retry either.
    let mut handle = faux.handle();
    let running = tokio::spawn({
        let session = session.clone();
        async move { session.prompt("again").await }
    });
    let _call = handle.next_call().await.unwrap();
    session.abort();
    assert!(running.await.unwrap().unwrap().is_aborted());
    assert!(retry_events(&rec).is_empty());
    assert_eq!(faux.call_count(), 2);

    // Retries off: the provider-level policy applies, and nothing is retried here.
    session.set_auto_retry_enabled(false);
    faux.push(FauxResponse::error("503 Service Unavailable"));
    assert!(session.prompt("third").await.unwrap().is_failed());
    assert!(retry_events(&rec).is_empty());
    assert_eq!(faux.requests().pop().unwrap().options.retry, None);
}

// ----- models ----------------------------------------------------------------------------

#[tokio::test]
async fn switching_to_a_smaller_window_compacts_first_and_reclamps_thinking() {
    let dir = TempDir::new().unwrap();
    let faux = faux_with(20_000);
    let mut settings = AgentSessionSettings::default();
    settings.compaction.keep_recent_tokens = 1000;
    let session = builder(&faux, new_session(&dir))
        .settings(settings)
        .scoped_models([
            ScopedModel::new(faux.get_model("big").unwrap()),
            ScopedModel::new(faux.get_model("small").unwrap()),
        ])
        .build()
        .unwrap();
    assert_eq!(
        session
            .set_thinking_level(ThinkingLevel::High)
            .await
            .unwrap(),
        ThinkingLevel::High
    );
    chat(&session, &faux, 4, 8000).await; // about 16 000 tokens: too much for 20 000 - 16 384
    let rec = Recorder::attach(&session);
    script(&faux, 2, &summarizing(|_| FauxResponse::text("unused")));
    session
        .set_model(faux.get_model("small").unwrap())
        .await
        .unwrap();

    // Compacted with the old model, before the switch.
    let summary = faux
        .requests()
        .into_iter()
        .rfind(is_summary_request)
        .unwrap();
    assert_eq!(summary.model.id, "big");
    let types = entry_types(&branch(&session));
    let compaction = types
        .iter()
        .position(|t| *t == EntryType::Compaction)
        .unwrap();
    let change = types
        .iter()
        .rposition(|t| *t == EntryType::ModelChange)
        .unwrap();
    assert!(compaction < change);
    assert_eq!(types.last(), Some(&EntryType::ThinkingLevelChange));
    assert_eq!(session.model().id, "small");
    assert_eq!(
        session.thinking_level(),
        ThinkingLevel::Off,
        "clamped: no reasoning"
    );
    let events = rec.session_events();
    assert_eq!(
        events[0],
        SessionEvent::CompactionStart {
            reason: CompactionReason::Threshold
        }
    );
    assert_eq!(
        events.last(),
        Some(&SessionEvent::ThinkingLevelChanged {
            level: ThinkingLevel::Off
        })
    );

    // Back to the reasoning model through the scoped list: its level comes back, and a
    // larger window needs no compaction.
    let before = rec.session_events().len();
    let cycled = session
        .cycle_model(CycleDirection::Forward)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            cycled.model.id.as_str(),
            cycled.thinking_level,
            cycled.is_scoped
        ),
        ("big", ThinkingLevel::High, true)
    );
    assert_eq!(
        rec.session_events()[before..],
        [SessionEvent::ThinkingLevelChanged {
            level: ThinkingLevel::High
        }]
    );
    assert_eq!(
        session.cycle_thinking_level().await.unwrap(),
        Some(ThinkingLevel::Off)
    );
    assert_eq!(
        session.cycle_thinking_level().await.unwrap(),
        Some(ThinkingLevel::Minimal)
    );

    // Reopening restores both.
    let file = session.session_file().unwrap();
    let expected = session.messages();
    drop(session);
    let reopened = builder(&faux, reopen(&file)).build().unwrap();
    assert_eq!(reopened.model().id, "big");
    assert_eq!(reopened.thinking_level(), ThinkingLevel::Minimal);
    assert_eq!(reopened.messages(), expected);
    assert_eq!(
        reopened
            .cycle_model(CycleDirection::Backward)
            .await
            .unwrap()
            .unwrap()
            .model
            .id,
        "small"
    );
    assert_eq!(reopened.cycle_thinking_level().await.unwrap(), None);
}

#[tokio::test]
async fn models_without_credentials_are_refused_when_the_registry_streams() {
    let session = AgentSession::builder(SessionManager::in_memory("/p"))
        .default_model(model("m", false, 1000))
        .build()
        .unwrap();
    let err = session.prompt("hi").await.unwrap_err();
    assert_eq!(err.to_string(), "No API key found for faux");
    assert!(session.messages().is_empty());
}

// ----- the tree --------------------------------------------------------------------------

#[tokio::test]
async fn navigating_away_summarizes_the_branch_left() {
    let dir = TempDir::new().unwrap();
    let faux = faux();
    let session = builder(&faux, new_session(&dir))
        .tool(read_tool())
        .build()
        .unwrap();
    chat(&session, &faux, 2, 10).await;
    faux.push(FauxResponse::tool_call(
        "c1",
        "read",
        json!({"path": "notes.md"}),
    ));
    faux.push(FauxResponse::text("read it"));
    session
        .prompt("question 2: read notes.md")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let path = branch(&session);
    let users: Vec<&SessionEntry> = path
        .iter()
        .filter(|e| matches!(e.as_message(), Some(AgentMessage::User(_))))
        .collect();
    let (u1, a0) = (
        users[1].id().to_owned(),
        users[1].parent_id().unwrap().to_owned(),
    );
    let old_leaf = path.last().unwrap().id().to_owned();

    script(&faux, 1, &summarizing(|_| FauxResponse::text("unused")));
    let result = session
        .navigate_tree(
            &u1,
            NavigateOptions::new()
                .summarize()
                .with_custom_instructions("the files")
                .with_label("explored"),
        )
        .await
        .unwrap();
    assert_eq!(
        result.editor_text.as_deref(),
        Some(format!("question 1: {}", "q".repeat(10)).as_str())
    );
    let summary = result.summary_entry.unwrap();
    assert_eq!(
        summary.parent_id.as_deref(),
        Some(a0.as_str()),
        "placed before the target"
    );
    assert_eq!(summary.from_id, a0);
    assert_eq!(
        summary.summary,
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\nHISTORY SUMMARY\n\n<read-files>\nnotes.md\n</read-files>"
    );
    assert_eq!(
        summary.details,
        Some(json!({"readFiles": ["notes.md"], "modifiedFiles": []}))
    );
    let request = faux.requests().pop().unwrap();
    assert!(prompt_text(&request).ends_with("Additional focus: the files"));
    assert_eq!(request.options.max_tokens, Some(2048));
    assert_eq!(
        session.with_session_manager(|sm| sm.label(&summary.id).map(str::to_owned)),
        Some("explored".into())
    );
    assert_eq!(
        roles(&session.messages()),
        ["user", "assistant", "branchSummary"]
    );
    assert_eq!(session.messages(), context(&session));

    // The conversation goes on from there; the model sees the summary.
    faux.push(FauxResponse::text("new direction it is"));
    session
        .prompt("let's do something else")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let seen = &faux.requests().pop().unwrap().context.messages;
    let Message::User(u) = &seen[2] else { panic!() };
    assert!(
        u.content
            .text()
            .starts_with("The following is a summary of a branch")
    );

    // Back to the old branch's last reply, without a summary.
    let result = session
        .navigate_tree(&old_leaf, NavigateOptions::new())
        .await
        .unwrap();
    assert!(result.editor_text.is_none() && result.summary_entry.is_none());
    assert_eq!(session.messages().len(), 8);
    assert_eq!(
        session.with_session_manager(|sm| sm.leaf_id().map(str::to_owned)),
        Some(old_leaf.clone())
    );
    assert!(matches!(
        session.navigate_tree("nope", NavigateOptions::new()).await,
        Err(AgentSessionError::InvalidEntry { .. })
    ));
}

#[tokio::test]
async fn an_aborted_branch_summary_leaves_the_session_where_it_was() {
    let faux = faux();
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .build()
        .unwrap();
    chat(&session, &faux, 3, 10).await;
    let first_user = branch(&session)
        .into_iter()
        .find(|e| matches!(e.as_message(), Some(AgentMessage::User(_))))
        .unwrap()
        .id()
        .to_owned();
    let leaf = session.with_session_manager(|sm| sm.leaf_id().map(str::to_owned));
    let mut handle = faux.handle();
    let navigating = tokio::spawn({
        let session = session.clone();
        async move {
            session
                .navigate_tree(&first_user, NavigateOptions::new().summarize())
                .await
        }
    });
    let call = handle.next_call().await.unwrap();
    assert!(is_summary_request(call.request()));
    assert!(session.is_compacting());
    session.abort_branch_summary();
    let result = navigating.await.unwrap().unwrap();
    assert!(result.cancelled && result.aborted);
    assert_eq!(
        session.with_session_manager(|sm| sm.leaf_id().map(str::to_owned)),
        leaf
    );
    assert_eq!(session.messages().len(), 6);
}

#[tokio::test]
async fn forking_and_new_sessions() {
    let dir = TempDir::new().unwrap();
    let faux = faux();
    let session = builder(&faux, new_session(&dir)).build().unwrap();
    chat(&session, &faux, 2, 10).await;
    let original = session.session_file().unwrap();
    let forkable = session.user_messages_for_forking().unwrap();
    assert_eq!(forkable.len(), 2);
    let result = session
        .fork(&forkable[1].0, ForkPosition::Before)
        .await
        .unwrap();
    assert_eq!(
        result.selected_text.as_deref(),
        Some(forkable[1].1.as_str())
    );
    let forked = session.session_file().unwrap();
    assert_ne!(forked, original);
    assert_eq!(roles(&session.messages()), ["user", "assistant"]);
    assert_eq!(
        session.with_session_manager(|sm| sm.header().parent_session.clone()),
        Some(original.display().to_string())
    );
    assert_eq!(session.model().id, "big");
    // Forking at an assistant message keeps it.
    let a0 = branch(&session).last().unwrap().id().to_owned();
    assert!(matches!(
        session.fork(&a0, ForkPosition::Before).await,
        Err(AgentSessionError::InvalidEntry { .. })
    ));
    let _ = session.fork(&a0, ForkPosition::At).await.unwrap();
    assert_eq!(roles(&session.messages()), ["user", "assistant"]);

    let _ = session.new_session().await.unwrap();
    assert!(session.messages().is_empty());
    faux.push(FauxResponse::text("fresh"));
    session.prompt("hi").await.unwrap().into_result().unwrap();
    let fresh = session.session_file().unwrap();
    assert!(fresh != forked && fresh != original);
    assert_eq!(
        entry_types(&entries(&session))[..2],
        [EntryType::ModelChange, EntryType::ThinkingLevelChange]
    );

    // Switch back to the original session.
    let _ = session.switch_session(reopen(&original)).await.unwrap();
    assert_eq!(session.messages().len(), 4);
    assert_eq!(session.session_file().unwrap(), original);
}

// ----- statistics ------------------------------------------------------------------------

#[tokio::test]
async fn statistics_add_up_the_context() {
    let faux = faux();
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .tool(read_tool())
        .build()
        .unwrap();
    let mut usage = pi_engine::Usage::new(1000, 50, 200, 10);
    usage.cost.total = 0.25;
    faux.push(
        FauxResponse::tool_call("c1", "read", json!({"path": "a"})).with_usage(usage.clone()),
    );
    faux.push(FauxResponse::text("done").with_usage(usage.clone()));
    session.prompt("go").await.unwrap().into_result().unwrap();
    session.set_session_name("stats test").await.unwrap();
    let stats = session.session_stats();
    let v = serde_json::to_value(&stats).unwrap();
    assert_eq!(v["userMessages"], 1);
    assert_eq!(v["assistantMessages"], 2);
    assert_eq!(v["toolCalls"], 1);
    assert_eq!(v["toolResults"], 1);
    assert_eq!(v["totalMessages"], 4);
    assert_eq!(
        v["tokens"],
        json!({"input": 2000, "output": 100, "cacheRead": 400, "cacheWrite": 20, "total": 2520})
    );
    assert_eq!(v["cost"], 0.5);
    assert_eq!(v["sessionId"], session.session_id());
    assert_eq!(v["contextUsage"]["contextWindow"], 200_000);
    assert_eq!(v["contextUsage"]["tokens"], 1260);
    assert_eq!(session.session_name().as_deref(), Some("stats test"));
}

// ----- pi reads what the session writes --------------------------------------------------

/// What pi 0.73.1's SessionManager reads from `file` (tests/support/pi_session.mjs).
fn pi_describe(modules: &Path, file: &Path) -> Value {
    let out = pi_npm::stdout_of(
        pi_npm::node_script("pi_session.mjs", modules)
            .arg("describe")
            .arg(file),
    );
    serde_json::from_slice(&out).unwrap()
}

#[tokio::test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
async fn a_session_written_by_agent_session_opens_in_pi_with_the_same_context() {
    let modules = pi_npm::require("@mariozechner/pi-coding-agent");
    let dir = TempDir::new().unwrap();
    let faux = faux();
    let mut settings = AgentSessionSettings::default();
    settings.retry.base_delay_ms = 1;
    settings.compaction.keep_recent_tokens = 300;
    let session = builder(&faux, new_session(&dir))
        .tool(read_tool())
        .settings(settings)
        .thinking_level(ThinkingLevel::High)
        .build()
        .unwrap();
    chat(&session, &faux, 2, 600).await;
    // A tool call, and a retried failure.
    faux.push(FauxResponse::tool_call(
        "c1",
        "read",
        json!({"path": "src/main.rs"}),
    ));
    faux.push(FauxResponse::error("503 Service Unavailable"));
    faux.push(FauxResponse::text("main.rs is all x"));
    session
        .prompt("read src/main.rs")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    // An extension message with the prompt, a model switch, a manual compaction.
    let note = pi_engine::session::ExtensionMessage::new("note", "remember: tabs", true);
    faux.push(FauxResponse::text("noted"));
    session
        .prompt(vec![
            AgentMessage::custom(&note).unwrap(),
            pi_engine::UserMessage::text("noted?").into(),
        ])
        .await
        .unwrap()
        .into_result()
        .unwrap();
    session
        .set_model(faux.get_model("small").unwrap())
        .await
        .unwrap();
    script(&faux, 2, &summarizing(|_| FauxResponse::text("unused")));
    session.compact(None).await.unwrap();
    chat(&session, &faux, 1, 50).await;
    // Back to the first question with a branch summary, then on from there.
    let first = session.user_messages_for_forking().unwrap()[0].0.clone();
    script(&faux, 1, &summarizing(|_| FauxResponse::text("unused")));
    session
        .navigate_tree(&first, NavigateOptions::new().summarize())
        .await
        .unwrap();
    session
        .set_session_name("written by AgentSession")
        .await
        .unwrap();
    faux.push(FauxResponse::text("a new start"));
    session
        .prompt("start over")
        .await
        .unwrap()
        .into_result()
        .unwrap();

    let file = session.session_file().unwrap();
    let ours = session.messages();
    let (model, thinking) = (session.model(), session.thinking_level());
    drop(session);
    let pis = pi_describe(&modules, &file);
    assert_eq!(
        serde_json::to_value(&ours).unwrap(),
        pis["messages"],
        "context"
    );
    assert_eq!(
        serde_json::to_value(convert_to_llm(&ours)).unwrap(),
        pis["llm"],
        "LLM messages"
    );
    assert_eq!(
        pis["model"],
        json!({"provider": "faux", "modelId": model.id})
    );
    assert_eq!(pis["thinkingLevel"], json!(thinking));
    assert_eq!(pis["sessionName"], "written by AgentSession");
    assert_eq!(roles(&ours), ["branchSummary", "user", "assistant"]);

    // And before the navigation, at the compacted branch: reopen in pi from there too.
    let sm = reopen(&file);
    let compacted_leaf = sm
        .entries()
        .unwrap()
        .into_iter()
        .filter(|e| matches!(e.as_message(), Some(AgentMessage::Assistant(_))))
        .map(|e| e.id().to_owned())
        .nth_back(1)
        .unwrap();
    drop(sm);
    let mut sm = reopen(&file);
    sm.branch(&compacted_leaf).unwrap();
    sm.append_session_info("at the compacted branch").unwrap();
    let ours = sm.build_session_context().unwrap();
    drop(sm);
    let pis = pi_describe(&modules, &file);
    assert_eq!(
        serde_json::to_value(&ours.messages).unwrap(),
        pis["messages"]
    );
    assert_eq!(roles(&ours.messages)[0], "compactionSummary");
    assert_eq!(pis["thinkingLevel"], "off");
}

#[tokio::test]
async fn a_navigated_branch_records_the_model_and_level_in_force() {
    let dir = TempDir::new().unwrap();
    let faux = faux();
    let session = builder(&faux, new_session(&dir))
        .thinking_level(ThinkingLevel::High)
        .build()
        .unwrap();
    chat(&session, &faux, 2, 10).await;
    session
        .set_model(faux.get_model("small").unwrap())
        .await
        .unwrap();
    let second = session.user_messages_for_forking().unwrap()[1].0.clone();
    session
        .navigate_tree(&second, NavigateOptions::new())
        .await
        .unwrap();
    // pi would leave the branch saying "big, high" while the session uses "small, off".
    let tail: Vec<EntryType> = entry_types(&branch(&session))
        .into_iter()
        .rev()
        .take(2)
        .collect();
    assert_eq!(
        tail,
        [EntryType::ThinkingLevelChange, EntryType::ModelChange]
    );
    let file = session.session_file().unwrap();
    let expected = session.messages();
    drop(session);
    let reopened = builder(&faux, reopen(&file)).build().unwrap();
    assert_eq!(reopened.model().id, "small");
    assert_eq!(reopened.thinking_level(), ThinkingLevel::Off);
    assert_eq!(reopened.messages(), expected);
    assert_eq!(roles(&expected), ["user", "assistant"]);
}

// ----- one retry budget, end to end over HTTP -------------------------------------------

fn anthropic_model(url: &str) -> Model {
    Model::new("claude-test", "anthropic-messages", "anthropic", url)
        .with_context_window(200_000)
        .with_max_tokens(4096)
}

fn overloaded(retry_after: Option<&str>) -> support::Reply {
    let headers: Vec<(&str, &str)> = retry_after
        .map(|r| ("retry-after", r))
        .into_iter()
        .collect();
    support::Reply::status(
        529,
        &headers,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    )
}

fn anthropic_text_reply() -> support::Reply {
    support::Reply::sse(&[support::anthropic_sse(&[
        r#"{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":10,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}"#,
        r#"{"type":"message_stop"}"#,
    ])])
}

/// The real Anthropic provider against a local server: the session's retries are the only
/// ones (the provider's own are off), so four failures are four requests, not twelve.
#[tokio::test(start_paused = true)]
async fn over_http_a_model_call_has_one_budget_of_attempts() {
    let server = support::MockServer::start(vec![
        overloaded(None),
        overloaded(Some("7")),
        overloaded(None),
        overloaded(None),
        anthropic_text_reply(),
    ])
    .await;
    let model = anthropic_model(server.url());
    let mut registry = pi_engine::llm::ModelRegistry::new();
    registry.set_api_key("anthropic", "sk-ant-test");
    let session = AgentSession::builder(SessionManager::in_memory("/p"))
        .registry(registry)
        .default_model(model.clone())
        .models([model])
        .thinking_level(ThinkingLevel::Off)
        .build()
        .unwrap();
    let rec = Recorder::attach(&session);
    let t0 = tokio::time::Instant::now();
    assert!(session.prompt("hi").await.unwrap().is_failed());
    assert_eq!(server.requests().len(), 4, "no provider-level retries");
    assert_eq!(
        retry_events(&rec),
        [
            retry_start(1, 2000, "529 overloaded_error: Overloaded"),
            retry_start(2, 7000, "529 overloaded_error: Overloaded"),
            retry_start(3, 8000, "529 overloaded_error: Overloaded"),
            retry_end(false, 3, Some("529 overloaded_error: Overloaded")),
        ]
    );
    assert_eq!(t0.elapsed(), Duration::from_secs(2 + 7 + 8));
    assert_eq!(
        server.requests()[0].header("x-api-key"),
        Some("sk-ant-test")
    );
    // The next prompt gets a fresh budget and succeeds on the server's next reply.
    session
        .prompt("again")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(session.last_assistant_text().as_deref(), Some("Hello"));
}

// ----- issue 11 ----------------------------------------------------------------------------

/// Item 13: on a window no larger than the compaction reserve (16k with default settings)
/// an empty or short conversation is never "compacted": no summary request, no compaction
/// entry, nothing put ahead of the user's message, on any prompt.
#[tokio::test]
async fn a_window_within_the_reserve_never_compacts_nothing() {
    let faux = faux_with(16_000);
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .model(faux.get_model("small").unwrap())
        .build()
        .unwrap();
    let rec = Recorder::attach(&session);
    for i in 0..3 {
        faux.push(FauxResponse::text(format!("reply {i}")));
        session
            .prompt(format!("prompt {i}"))
            .await
            .unwrap()
            .into_result()
            .unwrap();
    }
    let requests = faux.requests();
    assert_eq!(requests.len(), 3, "no summary requests");
    assert!(!requests.iter().any(is_summary_request));
    assert!(matches!(
        requests[0].context.messages.as_slice(),
        [Message::User(u)] if u.content.text() == "prompt 0"
    ));
    assert!(!entry_types(&entries(&session)).contains(&EntryType::Compaction));
    assert_eq!(
        roles(&context(&session)),
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert!(
        rec.session_events().iter().all(|e| !matches!(
            e,
            SessionEvent::CompactionStart { .. } | SessionEvent::CompactionEnd { .. }
        )),
        "{:?}",
        rec.session_events()
    );
    // A manual compaction of it has nothing to do.
    assert!(matches!(
        session.compact(None).await,
        Err(AgentSessionError::NothingToCompact)
    ));
}

/// Item 13: on the same small window, a history longer than what a compaction keeps is
/// still compacted (the summary covers real messages).
#[tokio::test]
async fn a_window_within_the_reserve_still_compacts_real_history() {
    let faux = faux_with(16_000);
    let mut settings = AgentSessionSettings::default();
    settings.compaction.keep_recent_tokens = 150;
    let session = builder(&faux, SessionManager::in_memory("/p"))
        .model(faux.get_model("small").unwrap())
        .settings(settings)
        .build()
        .unwrap();
    script(
        &faux,
        12,
        &summarizing(|_| FauxResponse::text("x".repeat(400))),
    );
    for i in 0..4 {
        session
            .prompt(format!("question {i}: {}", "q".repeat(400)))
            .await
            .unwrap()
            .into_result()
            .unwrap();
    }
    let summaries: Vec<FauxRequest> = faux
        .requests()
        .into_iter()
        .filter(is_summary_request)
        .collect();
    assert!(!summaries.is_empty());
    for s in &summaries {
        // What is summarized is the conversation, not nothing.
        let text = format!("{:?}", s.context.messages);
        assert!(
            text.contains("[User]: question") || text.contains("[Assistant]: xxx"),
            "{text}"
        );
    }
    assert!(entry_types(&entries(&session)).contains(&EntryType::Compaction));
}

/// Item 8: a session holding a tool call whose arguments nest far past serde_json's limit
/// of 128 reopens into an `AgentSession` that continues.
#[tokio::test]
async fn a_session_with_deeply_nested_tool_arguments_resumes() {
    let dir = TempDir::new().unwrap();
    let mut sm = new_session(&dir);
    let mut args = json!(1);
    for _ in 0..300 {
        args = json!({ "k": [args] });
    }
    sm.append_message(pi_engine::UserMessage::text("go"))
        .unwrap();
    sm.append_message(
        AssistantMessage::new("faux", "faux", "big")
            .with_content(vec![pi_engine::AssistantContent::tool_call(
                "call_1", "deep", args,
            )])
            .with_stop_reason(StopReason::ToolUse),
    )
    .unwrap();
    sm.append_message(pi_engine::ToolResultMessage::new(
        "call_1",
        "deep",
        vec![pi_engine::Content::text("done")],
        false,
    ))
    .unwrap();
    let path = sm.session_file().unwrap().to_owned();
    drop(sm);

    let faux = faux();
    let session = builder(&faux, reopen(&path)).build().unwrap();
    faux.push(FauxResponse::text("continued"));
    session.prompt("next").await.unwrap().into_result().unwrap();
    let request = &faux.requests()[0];
    assert_eq!(request.context.messages.len(), 4);
    assert_eq!(roles(&context(&session)).len(), 5);
}
