//! The extension API on an `AgentSession` with the faux provider: each event's rule
//! (first block wins, chains, collected messages, cancel), failures as `extension_error`,
//! deadlines that do not count a person's time, commands and the runs they start.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pi_engine::agent::{AgentMessage, AgentToolResult, TypedTool};
use pi_engine::agent_session::{AgentSession, AgentSessionEvent, SessionEvent};
use pi_engine::extensions::{
    BeforeAgentStart, Cancel, Delivery, Extension, ExtensionUi, InputAction, ToolCallVerdict,
    ToolResultPatch,
};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::session::{ExtensionMessage, SessionManager};
use pi_engine::{ApiProvider, Content};
use serde_json::json;

fn session_with(faux: &FauxProvider, extensions: Vec<Extension>) -> AgentSession {
    session_with_ui(faux, extensions, None::<Script>)
}

fn session_with_ui(
    faux: &FauxProvider,
    extensions: Vec<Extension>,
    ui: Option<impl ExtensionUi>,
) -> AgentSession {
    let stream = faux.clone();
    let counter = Arc::new(AtomicUsize::new(0));
    let c = counter.clone();
    let echo = TypedTool::new("echo", "Echoes.", move |args: EchoArgs, _ctx| {
        c.fetch_add(1, Ordering::SeqCst);
        async move { Ok(AgentToolResult::text(format!("echo: {}", args.text))) }
    });
    let mut b = AgentSession::builder(SessionManager::in_memory("/project"))
        .default_model(faux.model())
        .stream_fn(move |m, c, o| stream.stream(m, c, o))
        .tool(echo);
    for e in extensions {
        b = b.extension(e);
    }
    if let Some(ui) = ui {
        b = b.extension_ui(ui);
    }
    b.build().unwrap()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

fn errors(session: &AgentSession) -> Arc<Mutex<Vec<(String, String, String)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    session.subscribe(move |e| {
        if let AgentSessionEvent::Session(SessionEvent::ExtensionError {
            extension_path,
            event,
            error,
        }) = e
        {
            s.lock()
                .unwrap()
                .push((extension_path.clone(), event.clone(), error.clone()));
        }
    });
    seen
}

fn tool_result_text(session: &AgentSession) -> (String, bool) {
    session
        .messages()
        .iter()
        .find_map(|m| match m {
            AgentMessage::ToolResult(r) => Some((r.text(), r.is_error)),
            _ => None,
        })
        .unwrap()
}

fn block_echo(name: &str, reason: &'static str) -> Extension {
    Extension::new(name, move |pi| {
        pi.on_tool_call(move |e, _ctx| async move {
            Ok((e.tool_name == "echo").then(|| ToolCallVerdict::block(reason)))
        });
    })
}

#[tokio::test]
async fn the_first_block_wins_and_the_tool_does_not_run() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call(
        "c1",
        "echo",
        json!({"text": "rm -rf /"}),
    ));
    faux.push(FauxResponse::text("ok"));
    let later_asked = Arc::new(AtomicUsize::new(0));
    let l = later_asked.clone();
    let later = Extension::new("later", move |pi| {
        let l = l.clone();
        pi.on_tool_call(move |_e, _ctx| {
            l.fetch_add(1, Ordering::SeqCst);
            async { Ok(None) }
        });
    });
    let session = session_with(
        &faux,
        vec![
            block_echo("first", "no echo"),
            block_echo("second", "never"),
            later,
        ],
    );
    session.prompt("go").await.unwrap().into_result().unwrap();
    assert_eq!(tool_result_text(&session), ("no echo".to_owned(), true));
    assert_eq!(later_asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_failing_or_panicking_tool_call_handler_blocks_and_is_reported() {
    for (name, ext) in [
        (
            "fails",
            Extension::new("fails", |pi| {
                pi.on_tool_call(|_e, _ctx| async { Err("no database".into()) });
            }),
        ),
        (
            "panics",
            Extension::new("panics", |pi| {
                pi.on_tool_call(|_e, _ctx| async { panic!("bug in the gate") });
            }),
        ),
    ] {
        let faux = FauxProvider::new();
        faux.push(FauxResponse::tool_call("c1", "echo", json!({"text": "x"})));
        faux.push(FauxResponse::text("ok"));
        let session = session_with(&faux, vec![ext]);
        let seen = errors(&session);
        session.prompt("go").await.unwrap().into_result().unwrap();
        let (text, is_error) = tool_result_text(&session);
        assert!(is_error);
        assert!(
            text.starts_with("Extension failed, blocking execution: "),
            "{text}"
        );
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{name}");
        assert_eq!(
            (seen[0].0.as_str(), seen[0].1.as_str()),
            (name, "tool_call")
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_hung_handler_is_cut_off_at_its_deadline() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call("c1", "echo", json!({"text": "x"})));
    faux.push(FauxResponse::text("ok"));
    let hung = Extension::new("hung", |pi| {
        pi.on_tool_call(|_e, ctx| async move {
            // Waits for hours unless its token stops it.
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(3 * 3600)) => {}
                () = ctx.cancelled().cancelled() => {}
            }
            Ok(None)
        });
    })
    .with_timeout(Duration::from_secs(2));
    let session = session_with(&faux, vec![hung]);
    let seen = errors(&session);
    let start = tokio::time::Instant::now();
    session.prompt("go").await.unwrap().into_result().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(tool_result_text(&session).1);
    assert!(
        seen.lock().unwrap()[0]
            .2
            .contains("did not finish within 2s")
    );
}

/// Answers dialogs from a script, after a person's hour.
struct Script(Mutex<Vec<&'static str>>);

#[async_trait]
impl ExtensionUi for Script {
    async fn select(&self, _title: &str, _options: &[String]) -> Option<String> {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        self.0.lock().unwrap().pop().map(str::to_owned)
    }
    async fn confirm(&self, _title: &str, _message: &str) -> bool {
        self.0.lock().unwrap().pop() == Some("yes")
    }
    async fn input(&self, _title: &str, _placeholder: Option<&str>) -> Option<String> {
        None
    }
    async fn editor(&self, _title: &str, _prefill: Option<&str>) -> Option<String> {
        None
    }
}

fn approval_gate() -> Extension {
    Extension::new("approval-gate", |pi| {
        pi.on_tool_call(|e, ctx| async move {
            if !ctx.has_ui() {
                return Ok(Some(ToolCallVerdict::block("no UI to ask")));
            }
            let text = e.input["text"].as_str().unwrap_or_default().to_owned();
            let choice = ctx
                .ui()
                .select(&format!("Allow {text}?"), &["Yes", "No"])
                .await;
            Ok((choice.as_deref() != Some("Yes"))
                .then(|| ToolCallVerdict::block("Blocked by user")))
        });
    })
    .with_timeout(Duration::from_secs(1))
}

#[tokio::test(start_paused = true)]
async fn time_waiting_for_a_person_does_not_count() {
    for (answer, blocked) in [("Yes", false), ("No", true)] {
        let faux = FauxProvider::new();
        faux.push(FauxResponse::tool_call("c1", "echo", json!({"text": "x"})));
        faux.push(FauxResponse::text("ok"));
        let ui = Script(Mutex::new(vec![answer]));
        let session = session_with_ui(&faux, vec![approval_gate()], Some(ui));
        let seen = errors(&session);
        session.prompt("go").await.unwrap().into_result().unwrap();
        assert_eq!(tool_result_text(&session).1, blocked, "{answer}");
        assert!(
            seen.lock().unwrap().is_empty(),
            "{answer}: {:?}",
            seen.lock().unwrap()
        );
    }
    // Without a UI the gate blocks by default.
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call("c1", "echo", json!({"text": "x"})));
    faux.push(FauxResponse::text("ok"));
    let session = session_with(&faux, vec![approval_gate()]);
    session.prompt("go").await.unwrap().into_result().unwrap();
    assert_eq!(
        tool_result_text(&session),
        ("no UI to ask".to_owned(), true)
    );
}

#[tokio::test]
async fn tool_result_patches_chain() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call("c1", "echo", json!({"text": "x"})));
    faux.push(FauxResponse::text("ok"));
    let upper = Extension::new("upper", |pi| {
        pi.on_tool_result(|e, _ctx| async move {
            let text = e
                .content
                .iter()
                .filter_map(Content::as_text)
                .collect::<String>();
            Ok(Some(
                ToolResultPatch::default().with_content(vec![Content::text(text.to_uppercase())]),
            ))
        });
    });
    let suffix = Extension::new("suffix", |pi| {
        pi.on_tool_result(|e, _ctx| async move {
            let text = e
                .content
                .iter()
                .filter_map(Content::as_text)
                .collect::<String>();
            Ok(Some(
                ToolResultPatch::default()
                    .with_content(vec![Content::text(format!("{text}!"))])
                    .with_details(json!({"seen": true})),
            ))
        });
    });
    let session = session_with(&faux, vec![upper, suffix]);
    session.prompt("go").await.unwrap().into_result().unwrap();
    assert_eq!(tool_result_text(&session), ("ECHO: X!".to_owned(), false));
}

#[tokio::test]
async fn input_transforms_chain_and_handled_stops() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("brief"));
    let quick = Extension::new("quick", |pi| {
        pi.on_input(|e, _ctx| async move {
            Ok(if e.text == "ping" {
                Some(InputAction::Handled)
            } else {
                e.text
                    .strip_prefix("?quick ")
                    .map(|q| InputAction::transform(format!("Briefly: {q}")))
            })
        });
    });
    let shout = Extension::new("shout", |pi| {
        pi.on_input(
            |e, _ctx| async move { Ok(Some(InputAction::transform(e.text.to_uppercase()))) },
        );
    });
    let session = session_with(&faux, vec![quick, shout]);
    let outcome = session.prompt("ping").await.unwrap();
    assert!(outcome.is_handled());
    assert!(faux.requests().is_empty());
    session
        .prompt("?quick monads")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let sent = format!("{:?}", faux.requests()[0].context.messages[0]);
    assert!(sent.contains("BRIEFLY: MONADS"), "{sent}");
}

#[tokio::test]
async fn before_agent_start_collects_messages_and_chains_the_system_prompt() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("ok"));
    let a = Extension::new("a", |pi| {
        pi.on_before_agent_start(|e, _ctx| async move {
            Ok(Some(
                BeforeAgentStart::default()
                    .with_system_prompt(format!("{} +a", e.system_prompt))
                    .with_message(ExtensionMessage::new("memory", "Ada likes tea.", false)),
            ))
        });
    });
    let b = Extension::new("b", |pi| {
        pi.on_before_agent_start(|e, _ctx| async move {
            Ok(Some(
                BeforeAgentStart::default().with_system_prompt(format!("{} +b", e.system_prompt)),
            ))
        });
    });
    let stream = faux.clone();
    let session = AgentSession::builder(SessionManager::in_memory("/p"))
        .default_model(faux.model())
        .system_prompt("base")
        .stream_fn(move |m, c, o| stream.stream(m, c, o))
        .extension(a)
        .extension(b)
        .build()
        .unwrap();
    session.prompt("hi").await.unwrap().into_result().unwrap();
    let req = &faux.requests()[0];
    assert_eq!(req.context.system_prompt.as_deref(), Some("base +a +b"));
    let all = format!("{:?}", req.context.messages);
    assert!(all.contains("Ada likes tea."), "{all}");
    // The run's prompt does not outlive the run.
    assert_eq!(session.agent().state().system_prompt, "base");
    let entries = session.with_session_manager(|sm| sm.entries().unwrap());
    assert!(
        entries
            .iter()
            .any(|e| serde_json::to_value(e).unwrap()["type"] == "custom_message")
    );
}

#[tokio::test]
async fn context_handlers_filter_what_the_model_sees() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("one"));
    faux.push(FauxResponse::text("two"));
    let last_only = Extension::new("last-only", |pi| {
        pi.on_context(|e, _ctx| async move {
            Ok(Some(e.messages.iter().rev().take(1).cloned().collect()))
        });
    });
    let session = session_with(&faux, vec![last_only]);
    session
        .prompt("first")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    session
        .prompt("second")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(faux.requests()[1].context.messages.len(), 1);
    // The session keeps everything.
    assert_eq!(session.messages().len(), 4);
}

#[tokio::test]
async fn commands_run_instead_of_the_model_and_start_the_runs_they_ask_for() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("four"));
    let ext = Extension::new("ask", |pi| {
        pi.register_command("ask", "Ask the agent", |args, ctx| async move {
            ctx.send_user_message(args, None);
            Ok(())
        });
        pi.register_command("name", "Name the session", |args, ctx| async move {
            ctx.set_session_name(&args).await?;
            Ok(())
        });
        pi.register_command(
            "broken",
            "",
            |_args, _ctx| async move { Err("nope".into()) },
        );
    });
    let session = session_with(&faux, vec![ext]);
    let seen = errors(&session);
    assert!(
        session
            .prompt("/name Release prep")
            .await
            .unwrap()
            .is_handled()
    );
    assert_eq!(session.session_name().as_deref(), Some("Release prep"));
    session
        .prompt("/ask what is two plus two")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(faux.requests().len(), 1);
    assert_eq!(session.last_assistant_text().as_deref(), Some("four"));
    assert!(session.prompt("/broken").await.unwrap().is_handled());
    assert_eq!(seen.lock().unwrap()[0].1, "command");
    assert_eq!(session.commands().len(), 3);
}

#[tokio::test]
async fn extension_tools_and_tools_added_at_run_time() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call(
        "c1",
        "hello",
        json!({"text": "Ada"}),
    ));
    faux.push(FauxResponse::text("done"));
    faux.push(FauxResponse::tool_call(
        "c2",
        "shout",
        json!({"text": "hey"}),
    ));
    faux.push(FauxResponse::text("done"));
    let ext =
        Extension::new("tools", |pi| {
            pi.register_tool(TypedTool::new("hello", "Greets.", |a: EchoArgs, _| async move {
            Ok(AgentToolResult::text(format!("Hello, {}!", a.text)))
        }));
            pi.register_command("add-shout", "", |_args, ctx| async move {
                ctx.register_tool(TypedTool::new("shout", "Shouts.", |a: EchoArgs, _| async move {
                Ok(AgentToolResult::text(a.text.to_uppercase()))
            }));
                Ok(())
            });
        });
    let session = session_with(&faux, vec![ext]);
    session
        .prompt("greet")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(
        tool_result_text(&session),
        ("Hello, Ada!".to_owned(), false)
    );
    assert!(session.prompt("/add-shout").await.unwrap().is_handled());
    session
        .prompt("shout")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let last = session.messages().into_iter().rev().find_map(|m| match m {
        AgentMessage::ToolResult(r) => Some(r.text()),
        _ => None,
    });
    assert_eq!(last.as_deref(), Some("HEY"));
}

#[tokio::test]
async fn send_message_while_idle_joins_the_context_and_next_turn_waits() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("ok"));
    let ext = Extension::new("notes", |pi| {
        pi.register_command("note", "", |args, ctx| async move {
            ctx.send_message(ExtensionMessage::new("note", args, true), None, false)
                .await?;
            Ok(())
        });
        pi.register_command("later", "", |args, ctx| async move {
            ctx.send_message(
                ExtensionMessage::new("later", args, false),
                Some(Delivery::NextTurn),
                false,
            )
            .await?;
            Ok(())
        });
    });
    let session = session_with(&faux, vec![ext]);
    assert!(
        session
            .prompt("/note remember tea")
            .await
            .unwrap()
            .is_handled()
    );
    assert_eq!(session.messages().len(), 1);
    assert!(faux.requests().is_empty());
    assert!(
        session
            .prompt("/later held back")
            .await
            .unwrap()
            .is_handled()
    );
    assert_eq!(session.messages().len(), 1);
    session.prompt("hi").await.unwrap().into_result().unwrap();
    let sent = format!("{:?}", faux.requests()[0].context.messages);
    assert!(
        sent.contains("remember tea") && sent.contains("held back"),
        "{sent}"
    );
}

#[tokio::test]
async fn session_before_switch_can_cancel_a_new_session() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("ok"));
    let starts = Arc::new(AtomicUsize::new(0));
    let s = starts.clone();
    let ext = Extension::new("confirm", move |pi| {
        let s = s.clone();
        pi.on_session_before_switch(|_e, ctx| async move {
            Ok((!ctx.ui().confirm("Clear session?", "").await).then(Cancel::now))
        });
        pi.on_session_start(move |_e, _ctx| {
            s.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        });
    });
    let ui = Script(Mutex::new(vec!["yes", "no"]));
    let session = session_with_ui(&faux, vec![ext], Some(ui));
    session.prompt("hi").await.unwrap().into_result().unwrap();
    let refused = session.new_session().await.unwrap();
    assert_eq!(refused.cancelled_by.as_deref(), Some("confirm"));
    assert_eq!(session.messages().len(), 2);
    assert!(!session.new_session().await.unwrap().cancelled());
    assert!(session.messages().is_empty());
    assert_eq!(starts.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn observers_see_every_event_in_order_without_holding_the_run() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("ok"));
    let kinds = Arc::new(Mutex::new(Vec::new()));
    let k = kinds.clone();
    let ext = Extension::new("log", move |pi| {
        let k = k.clone();
        pi.on_event(move |e, _ctx| {
            k.lock().unwrap().push(e.kind());
            async { Ok(()) }
        });
    });
    let session = session_with(&faux, vec![ext]);
    session.prompt("hi").await.unwrap().into_result().unwrap();
    for _ in 0..100 {
        if kinds.lock().unwrap().contains(&"agent_end") {
            break;
        }
        tokio::task::yield_now().await;
    }
    let kinds = kinds.lock().unwrap();
    assert_eq!(kinds.first(), Some(&"agent_start"));
    assert_eq!(kinds.last(), Some(&"agent_end"));
}
