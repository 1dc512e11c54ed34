//! The rest of pi's extension events and calls on an `AgentSession`: argument rewrites,
//! `message_end` replacements, provider request and response hooks (against a local HTTP
//! server), the session events around fork, switch, compaction and tree moves, model and
//! thinking-level changes, resources, flags, shortcuts, completions, renderers, active
//! tools, providers added at run time, the event bus, `exec`, shutdown and a person's own
//! shell commands.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_engine::agent::{AgentMessage, AgentToolResult, TypedTool};
use pi_engine::agent_session::{
    AgentSession, AgentSessionError, AgentSessionEvent, AgentSessionSettings, ForkPosition,
    NavigateOptions, SessionEvent,
};
use pi_engine::extensions::{
    BranchSummaryText, Cancel, CompactDecision, Completion, ExecOptions, Extension, Flag,
    FlagValue, MessageRenderOptions, ProviderConfig, RenderedMessage, Resources, ResourcesReason,
    SessionStartReason, ShutdownReason, ToolCallVerdict, TreeDecision,
};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::session::compaction::CompactionResult;
use pi_engine::session::{ExtensionMessage, SessionEntry, SessionManager};
use pi_engine::{ApiProvider, Model, ThinkingLevel};
use serde_json::json;
use support::{MockServer, Reply, anthropic_sse};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

fn echo_tool() -> impl pi_engine::agent::AgentTool {
    TypedTool::new("echo", "Echoes.", |args: EchoArgs, _ctx| async move {
        Ok(AgentToolResult::text(format!("echo: {}", args.text)))
    })
}

fn session(faux: &FauxProvider, extensions: Vec<Extension>) -> AgentSession {
    session_in(faux, extensions, SessionManager::in_memory("/project"))
}

fn session_in(faux: &FauxProvider, extensions: Vec<Extension>, sm: SessionManager) -> AgentSession {
    let stream = faux.clone();
    let mut b = AgentSession::builder(sm)
        .default_model(faux.model())
        .stream_fn(move |m, c, o| stream.stream(m, c, o))
        .tool(echo_tool());
    for e in extensions {
        b = b.extension(e);
    }
    b.build().unwrap()
}

/// The session events of one kind, as they come.
fn record(session: &AgentSession) -> Arc<Mutex<Vec<SessionEvent>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    session.subscribe(move |e| {
        if let AgentSessionEvent::Session(e) = e {
            s.lock().unwrap().push(e.clone());
        }
    });
    seen
}

fn actions(events: &Mutex<Vec<SessionEvent>>) -> Vec<(String, String, String)> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ExtensionAction {
                extension_path,
                event,
                action,
            } => Some((extension_path.clone(), event.clone(), action.clone())),
            _ => None,
        })
        .collect()
}

fn errors(events: &Mutex<Vec<SessionEvent>>) -> Vec<(String, String)> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ExtensionError {
                extension_path,
                error,
                ..
            } => Some((extension_path.clone(), error.clone())),
            _ => None,
        })
        .collect()
}

/// A log the extensions of a test write to.
type Log = Arc<Mutex<Vec<String>>>;

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn text_of(m: &AgentMessage) -> String {
    match m {
        AgentMessage::Assistant(a) => a.text(),
        AgentMessage::ToolResult(r) => r.text(),
        AgentMessage::User(u) => u.content.text(),
        _ => String::new(),
    }
}

#[tokio::test]
async fn tool_call_rewrites_chain_and_the_tool_runs_with_them() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call("c1", "echo", json!({"text": "a"})));
    faux.push(FauxResponse::text("done"));
    let seen = log();
    let s = seen.clone();
    let first = Extension::new("upper", |pi| {
        pi.on_tool_call(|e, _ctx| async move {
            let mut input = e.input;
            let text = input["text"].as_str().unwrap_or_default().to_uppercase();
            input.insert("text".into(), json!(text));
            Ok(Some(ToolCallVerdict::rewrite(input)))
        });
    });
    let second = Extension::new("suffix", move |pi| {
        let s = s.clone();
        pi.on_tool_call(move |e, _ctx| {
            // Sees the first extension's rewrite.
            s.lock().unwrap().push(e.input["text"].to_string());
            let mut input = e.input;
            let text = format!("{}!", input["text"].as_str().unwrap_or_default());
            input.insert("text".into(), json!(text));
            async move { Ok(Some(ToolCallVerdict::rewrite(input))) }
        });
    });
    let session = session(&faux, vec![first, second]);
    let events = record(&session);
    session.prompt("go").await.unwrap().into_result().unwrap();
    assert_eq!(*seen.lock().unwrap(), ["\"A\""]);
    assert_eq!(text_of(&session.messages()[2]), "echo: A!");
    let acted = actions(&events);
    assert!(acted.contains(&(
        "upper".into(),
        "tool_call".into(),
        "rewrote the arguments".into()
    )));
    assert!(acted.contains(&(
        "suffix".into(),
        "tool_call".into(),
        "rewrote the arguments".into()
    )));
}

#[tokio::test]
async fn a_block_names_the_extension_that_blocked() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call("c1", "echo", json!({"text": "a"})));
    faux.push(FauxResponse::text("done"));
    let gate = Extension::new("gate", |pi| {
        pi.on_tool_call(|_e, _ctx| async { Ok(Some(ToolCallVerdict::block("no"))) });
    });
    let session = session(&faux, vec![gate]);
    let events = record(&session);
    session.prompt("go").await.unwrap().into_result().unwrap();
    assert_eq!(
        actions(&events),
        [("gate".into(), "tool_call".into(), "blocked".into())]
    );
}

#[tokio::test]
async fn message_end_replaces_a_message_of_the_same_role_everywhere() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("the secret is 42"));
    let redact = Extension::new("redact", |pi| {
        pi.on_message_end(|e, _ctx| async move {
            match e.message {
                AgentMessage::Assistant(mut a) => {
                    let text = a.text().replace("42", "[redacted]");
                    a.content = vec![pi_engine::AssistantContent::text(text)];
                    Ok(Some(AgentMessage::Assistant(a)))
                }
                _ => Ok(None),
            }
        });
    });
    let wrong = Extension::new("wrong-role", |pi| {
        pi.on_message_end(|e, _ctx| async move {
            Ok(matches!(e.message, AgentMessage::User(_))
                .then(|| pi_engine::UserMessage::text("swapped").into()))
            .map(|m: Option<AgentMessage>| {
                // A user message becomes... an assistant one: refused.
                m.map(|_| AgentMessage::Assistant(pi_engine::AssistantMessage::new("a", "p", "m")))
            })
        });
    });
    let dir = tempfile::tempdir().unwrap();
    let sm = pi_engine::session::SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/project");
    let session = session_in(&faux, vec![redact, wrong], sm);
    let events = record(&session);
    let ends = log();
    let e = ends.clone();
    session.subscribe(move |ev| {
        if let AgentSessionEvent::Agent(pi_engine::agent::AgentEvent::MessageEnd { message }) = ev {
            e.lock().unwrap().push(text_of(message));
        }
    });
    session
        .prompt("tell me")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(
        session.last_assistant_text().as_deref(),
        Some("the secret is [redacted]")
    );
    assert_eq!(
        *ends.lock().unwrap(),
        ["tell me", "the secret is [redacted]"]
    );
    let file = std::fs::read_to_string(session.session_file().unwrap()).unwrap();
    assert!(
        file.contains("[redacted]") && !file.contains("is 42"),
        "{file}"
    );
    assert_eq!(
        errors(&events),
        [(
            "wrong-role".into(),
            "message_end handlers must return a message with the same role".into()
        )]
    );
}

fn anthropic_model(url: &str) -> Model {
    Model::builder()
        .id("claude-test")
        .provider("anthropic")
        .api(pi_engine::llm::api::ANTHROPIC_MESSAGES)
        .base_url(url)
        .build()
        .unwrap()
}

fn reply_sse() -> String {
    anthropic_sse(&[
        r#"{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3,"output_tokens":0}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
        r#"{"type":"message_stop"}"#,
    ])
}

#[tokio::test]
async fn provider_request_and_response_hooks_see_the_real_call() {
    let server = MockServer::start(vec![Reply::sse(&[reply_sse()])]).await;
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let st = statuses.clone();
    let ext = Extension::new("payload", move |pi| {
        pi.on_before_provider_request(|e, _ctx| async move {
            let mut body = e.payload;
            body["metadata"] = json!({"user_id": "team-search"});
            Ok(Some(body))
        });
        let st = st.clone();
        pi.on_after_provider_response(move |e, _ctx| {
            st.lock()
                .unwrap()
                .push((e.status, e.headers.get("content-type").cloned()));
            async { Ok(()) }
        });
    });
    let model = anthropic_model(server.url());
    let mut registry = pi_engine::models::ModelRegistry::new();
    registry.set_api_key("anthropic", "sk-ant-test");
    let session = AgentSession::builder(SessionManager::in_memory("/project"))
        .registry(registry)
        .models([model.clone()])
        .model(model)
        .extension(ext)
        .build()
        .unwrap();
    session
        .prompt("hello")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(session.last_assistant_text().as_deref(), Some("hi"));
    let sent = server.requests()[0].json();
    assert_eq!(sent["metadata"], json!({"user_id": "team-search"}));
    let statuses = statuses.lock().unwrap();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].0, 200);
    assert!(
        statuses[0]
            .1
            .as_deref()
            .unwrap_or_default()
            .contains("text/event-stream")
    );
}

/// Records the session lifecycle events an extension sees.
fn lifecycle(log: Log, cancel_fork: bool) -> Extension {
    Extension::new("lifecycle", move |pi| {
        let l = log.clone();
        pi.on_session_start(move |e, _ctx| {
            l.lock()
                .unwrap()
                .push(format!("start:{}", e.reason.as_str()));
            async { Ok(()) }
        });
        let l = log.clone();
        pi.on_session_shutdown(move |e, _ctx| {
            l.lock()
                .unwrap()
                .push(format!("shutdown:{}", e.reason.as_str()));
            async { Ok(()) }
        });
        let l = log.clone();
        pi.on_session_before_switch(move |e, _ctx| {
            l.lock().unwrap().push(format!(
                "before_switch:{}:{}",
                e.reason.as_str(),
                e.target_session_file.is_some()
            ));
            async { Ok(None) }
        });
        let l = log.clone();
        pi.on_session_before_fork(move |e, _ctx| {
            l.lock()
                .unwrap()
                .push(format!("before_fork:{:?}", e.position));
            async move { Ok(cancel_fork.then(Cancel::now)) }
        });
    })
}

#[tokio::test]
async fn fork_and_switch_ask_then_tell_the_extensions() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("one"));
    let seen = log();
    let dir = tempfile::tempdir().unwrap();
    let sm = pi_engine::session::SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/project");
    let session = session_in(&faux, vec![lifecycle(seen.clone(), false)], sm);
    session
        .prompt("first")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let first_file = session.session_file().unwrap();
    let user = session.user_messages_for_forking().unwrap()[0].0.clone();
    let forked = session.fork(&user, ForkPosition::Before).await.unwrap();
    assert_eq!(forked.selected_text.as_deref(), Some("first"));
    assert!(!forked.cancelled());
    let reopened = pi_engine::session::SessionOptions::new()
        .with_session_dir(dir.path())
        .open(&first_file)
        .unwrap();
    let switched = session.switch_session(reopened).await.unwrap();
    assert!(!switched.cancelled());
    assert_eq!(session.messages().len(), 2);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "start:startup",
            "before_fork:Before",
            "shutdown:fork",
            "start:fork",
            "before_switch:resume:true",
            "shutdown:resume",
            "start:resume",
        ]
    );
}

#[tokio::test]
async fn a_cancelled_fork_changes_nothing() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("one"));
    let seen = log();
    let session = session(&faux, vec![lifecycle(seen.clone(), true)]);
    let events = record(&session);
    session
        .prompt("first")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let id = session.session_id();
    let user = session.user_messages_for_forking().unwrap()[0].0.clone();
    let result = session.fork(&user, ForkPosition::At).await.unwrap();
    assert_eq!(result.cancelled_by.as_deref(), Some("lifecycle"));
    assert_eq!(session.session_id(), id);
    assert_eq!(*seen.lock().unwrap(), ["start:startup", "before_fork:At"]);
    assert!(actions(&events).contains(&(
        "lifecycle".into(),
        "session_before_fork".into(),
        "cancelled".into()
    )));
}

fn compactable(faux: &FauxProvider, extensions: Vec<Extension>) -> AgentSession {
    let stream = faux.clone();
    let mut settings = AgentSessionSettings::default();
    settings.compaction.keep_recent_tokens = 1;
    let mut b = AgentSession::builder(SessionManager::in_memory("/project"))
        .default_model(faux.model())
        .stream_fn(move |m, c, o| stream.stream(m, c, o))
        .settings(settings);
    for e in extensions {
        b = b.extension(e);
    }
    b.build().unwrap()
}

#[tokio::test]
async fn session_before_compact_can_cancel_or_provide_the_compaction() {
    let faux = FauxProvider::new();
    for text in ["one", "two", "three"] {
        faux.push(FauxResponse::text(text));
    }
    let mode = Arc::new(Mutex::new("cancel"));
    let compacted = log();
    let (m, c) = (mode.clone(), compacted.clone());
    let ext = Extension::new("compactor", move |pi| {
        let m = m.clone();
        pi.on_session_before_compact(move |e, _ctx| {
            let mode = *m.lock().unwrap();
            async move {
                Ok(Some(match mode {
                    "cancel" => CompactDecision::cancel(),
                    _ => {
                        assert!(!e.branch_entries.is_empty());
                        CompactDecision::with_compaction(CompactionResult::new(
                            "my summary",
                            e.preparation.first_kept_entry_id.clone(),
                            e.preparation.tokens_before,
                        ))
                    }
                }))
            }
        });
        let c = c.clone();
        pi.on_session_compact(move |e, _ctx| {
            c.lock().unwrap().push(format!(
                "{}:{}",
                e.compaction_entry.summary, e.from_extension
            ));
            async { Ok(()) }
        });
    });
    let session = compactable(&faux, vec![ext]);
    for p in ["a", "b", "c"] {
        session.prompt(p).await.unwrap().into_result().unwrap();
    }
    let err = session.compact(None).await.unwrap_err();
    assert!(matches!(err, AgentSessionError::Cancelled(_)), "{err}");
    *mode.lock().unwrap() = "provide";
    let result = session.compact(None).await.unwrap();
    assert_eq!(result.summary, "my summary");
    assert_eq!(
        faux.requests().len(),
        3,
        "no summary was asked of the model"
    );
    assert_eq!(*compacted.lock().unwrap(), ["my summary:true"]);
    let from_hook = session.with_session_manager(|sm| {
        sm.entries().unwrap().into_iter().find_map(|e| match e {
            SessionEntry::Compaction(c) => Some(c.from_hook),
            _ => None,
        })
    });
    assert_eq!(from_hook, Some(Some(true)));
}

#[tokio::test]
async fn session_before_tree_can_cancel_or_bring_the_summary() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("one"));
    faux.push(FauxResponse::text("two"));
    let cancel = Arc::new(Mutex::new(true));
    let moves = log();
    let (c, mv) = (cancel.clone(), moves.clone());
    let ext = Extension::new("tree", move |pi| {
        let c = c.clone();
        pi.on_session_before_tree(move |e, _ctx| {
            let cancel = *c.lock().unwrap();
            assert!(e.preparation.user_wants_summary);
            async move {
                Ok(Some(if cancel {
                    TreeDecision::cancel()
                } else {
                    TreeDecision::default()
                        .with_summary(BranchSummaryText::new("left a branch"))
                        .with_label("checkpoint")
                }))
            }
        });
        let mv = mv.clone();
        pi.on_session_tree(move |e, _ctx| {
            mv.lock().unwrap().push(format!(
                "{}:{:?}",
                e.summary_entry.map(|s| s.summary).unwrap_or_default(),
                e.from_extension
            ));
            async { Ok(()) }
        });
    });
    let session = session(&faux, vec![ext]);
    session.prompt("a").await.unwrap().into_result().unwrap();
    session.prompt("b").await.unwrap().into_result().unwrap();
    let first_reply = session.with_session_manager(|sm| {
        sm.entries()
            .unwrap()
            .into_iter()
            .find_map(|e| match e {
                SessionEntry::Message(m) if matches!(m.message, AgentMessage::Assistant(_)) => {
                    Some(m.id)
                }
                _ => None,
            })
            .unwrap()
    });
    let refused = session
        .navigate_tree(&first_reply, NavigateOptions::new().summarize())
        .await
        .unwrap();
    assert!(refused.cancelled);
    assert_eq!(refused.cancelled_by.as_deref(), Some("tree"));
    assert_eq!(session.messages().len(), 4);
    *cancel.lock().unwrap() = false;
    let moved = session
        .navigate_tree(&first_reply, NavigateOptions::new().summarize())
        .await
        .unwrap();
    assert_eq!(moved.summary_entry.unwrap().summary, "left a branch");
    assert_eq!(
        faux.requests().len(),
        2,
        "no summary was asked of the model"
    );
    assert_eq!(*moves.lock().unwrap(), ["left a branch:Some(true)"]);
    let labelled = session.with_session_manager(|sm| {
        sm.entries().unwrap().into_iter().any(
            |e| matches!(e, SessionEntry::Label(l) if l.label.as_deref() == Some("checkpoint")),
        )
    });
    assert!(labelled);
}

#[tokio::test]
async fn model_and_thinking_level_changes_are_told() {
    let faux = FauxProvider::new();
    let other = Model::builder()
        .id("other")
        .provider(faux.model().provider.clone())
        .api(faux.model().api.clone())
        .base_url("http://127.0.0.1:9")
        .reasoning(true)
        .build()
        .unwrap();
    let seen = log();
    let s = seen.clone();
    let ext = Extension::new("watch", move |pi| {
        let l = s.clone();
        pi.on_model_select(move |e, _ctx| {
            l.lock().unwrap().push(format!(
                "model:{}<-{}:{:?}",
                e.model.id,
                e.previous_model.map(|m| m.id).unwrap_or_default(),
                e.source
            ));
            async { Ok(()) }
        });
        let l = s.clone();
        pi.on_thinking_level_select(move |e, _ctx| {
            l.lock()
                .unwrap()
                .push(format!("level:{}<-{}", e.level, e.previous_level));
            async { Ok(()) }
        });
    });
    let session = session(&faux, vec![ext]);
    session.set_model(other).await.unwrap();
    session
        .set_thinking_level(ThinkingLevel::High)
        .await
        .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0], format!("model:other<-{}:Set", faux.model().id));
    assert!(seen.contains(&"level:high<-medium".to_owned()), "{seen:?}");
}

#[tokio::test]
async fn registrations_a_front_end_uses() {
    let faux = FauxProvider::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let ext = Extension::new("ui-bits", move |pi| {
        pi.register_flag(Flag::boolean("plan").with_description("Plan first"));
        pi.register_flag(Flag::string("team").with_default("core"));
        let r = r.clone();
        pi.register_shortcut("ctrl+shift+p", "Plan", move |ctx| {
            r.fetch_add(1, Ordering::SeqCst);
            async move {
                assert_eq!(ctx.flag("plan"), Some(FlagValue::Bool(true)));
                Ok(())
            }
        });
        pi.register_command("deploy", "Deploy somewhere", |_args, _ctx| async { Ok(()) });
        pi.command_completions("deploy", |prefix| async move {
            Some(
                ["staging", "production"]
                    .into_iter()
                    .filter(|t| t.starts_with(&prefix))
                    .map(Completion::new)
                    .collect(),
            )
        });
        pi.register_message_renderer("note", |m, o| {
            Some(RenderedMessage::lines([format!(
                "note ({}): {}",
                if o.expanded { "expanded" } else { "short" },
                m.content.text()
            )]))
        });
        pi.on_resources_discover(|e, _ctx| async move {
            Ok(Some(Resources::new().with_skill_path(e.cwd.join("skills"))))
        });
    });
    let session = {
        let stream = faux.clone();
        AgentSession::builder(SessionManager::in_memory("/project"))
            .default_model(faux.model())
            .stream_fn(move |m, c, o| stream.stream(m, c, o))
            .extension(ext)
            .flag_value("plan", true)
            .build()
            .unwrap()
    };
    let flags = session.flags();
    assert_eq!(flags.len(), 2);
    assert_eq!(flags[0].extension, "ui-bits");
    assert!(session.run_shortcut("ctrl+shift+p").await);
    assert!(!session.run_shortcut("ctrl+x").await);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let commands = session.commands();
    assert_eq!(commands[0].name, "deploy");
    assert!(commands[0].has_completions);
    let done = session.command_completions("deploy", "pro").await.unwrap();
    assert_eq!(done, [Completion::new("production")]);
    let note = ExtensionMessage::new("note", "remember", true);
    let shown = session
        .render_message(&note, MessageRenderOptions::new().expanded())
        .unwrap();
    assert_eq!(shown.lines, ["note (expanded): remember"]);
    assert!(
        session
            .render_message(
                &ExtensionMessage::new("other", "x", true),
                MessageRenderOptions::new()
            )
            .is_none()
    );
    let found = session.discover_resources(ResourcesReason::Startup).await;
    assert_eq!(
        found.skill_paths,
        [(
            std::path::PathBuf::from("/project/skills"),
            "ui-bits".to_owned()
        )]
    );
}

#[tokio::test]
async fn active_tools_can_be_narrowed_and_tools_added() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("ok"));
    let ext =
        Extension::new("tools", |pi| {
            pi.register_command("read-only", "", |_args, ctx| async move {
                ctx.set_active_tools(&["shout"]);
                Ok(())
            });
            pi.register_command("add", "", |_args, ctx| async move {
                ctx.register_tool(TypedTool::new("shout", "Shouts.", |a: EchoArgs, _c| async move {
                Ok(AgentToolResult::text(a.text.to_uppercase()))
            }));
                Ok(())
            });
        });
    let session = session(&faux, vec![ext]);
    let _ = session.prompt("/add").await.unwrap();
    assert_eq!(session.active_tools(), ["echo", "shout"]);
    let _ = session.prompt("/read-only").await.unwrap();
    assert_eq!(session.active_tools(), ["shout"]);
    let all = session.all_tools();
    assert_eq!(all.len(), 2);
    assert!(!all[0].active && all[1].active);
    session.prompt("hi").await.unwrap().into_result().unwrap();
    let offered: Vec<String> = faux.requests()[0]
        .context
        .tools
        .iter()
        .flatten()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(offered, ["shout"]);
}

#[tokio::test]
async fn providers_come_and_go_at_run_time() {
    let faux = FauxProvider::new();
    let ext = Extension::new("corp", |pi| {
        pi.register_provider(
            "corp",
            ProviderConfig::new(json!({
                "baseUrl": "https://llm.corp.example/v1", "apiKey": "CORP_KEY",
                "api": "openai-completions", "models": [{"id": "corp-large"}]
            })),
        );
        pi.register_command("corp-off", "", |_a, ctx| async move {
            ctx.unregister_provider("corp");
            Ok(())
        });
        pi.register_command("corp-on", "", |_a, ctx| async move {
            ctx.register_provider(
                "corp2",
                ProviderConfig::new(json!({"baseUrl": "https://x.example", "apiKey": "K",
                    "api": "openai-completions", "models": [{"id": "m2"}]})),
            )?;
            Ok(())
        });
    });
    let session = session(&faux, vec![ext]);
    assert!(
        session
            .model_registry()
            .find("corp", "corp-large")
            .is_some()
    );
    let _ = session.prompt("/corp-off").await.unwrap();
    assert!(
        session
            .model_registry()
            .find("corp", "corp-large")
            .is_none()
    );
    let _ = session.prompt("/corp-on").await.unwrap();
    assert!(session.model_registry().find("corp2", "m2").is_some());
}

#[tokio::test]
async fn the_event_bus_carries_messages_between_extensions() {
    let faux = FauxProvider::new();
    let got = log();
    let g = got.clone();
    let listener = Extension::new("listener", move |pi| {
        let g = g.clone();
        pi.on_bus_event("my:notification", move |data, ctx| {
            g.lock()
                .unwrap()
                .push(format!("{} via {}", data["message"], ctx.extension_name()));
            async { Ok(()) }
        });
        pi.on_bus_event("my:notification", |_data, _ctx| async {
            Err("this one fails".into())
        });
    });
    let emitter = Extension::new("emitter", |pi| {
        pi.register_command("emit", "", |args, ctx| async move {
            ctx.emit_bus_event("my:notification", json!({"message": args}));
            Ok(())
        });
    });
    let session = session(&faux, vec![listener, emitter]);
    let events = record(&session);
    let _ = session.prompt("/emit hello").await.unwrap();
    for _ in 0..200 {
        if !errors(&events).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(*got.lock().unwrap(), ["\"hello\" via listener"]);
    assert_eq!(
        errors(&events),
        [("listener".into(), "this one fails".into())]
    );
}

#[tokio::test]
async fn exec_runs_a_program_and_shutdown_is_asked_for() {
    let faux = FauxProvider::new();
    let out = log();
    let o = out.clone();
    let ext = Extension::new("runner", move |pi| {
        let o = o.clone();
        pi.register_command("run", "", move |_args, ctx| {
            let o = o.clone();
            async move {
                let r = ctx
                    .exec("sh", &["-c", "printf hi; exit 4"], ExecOptions::new())
                    .await;
                o.lock()
                    .unwrap()
                    .push(format!("{}:{}:{}", r.stdout, r.code, r.killed));
                let r = ctx
                    .exec(
                        "sleep",
                        &["30"],
                        ExecOptions::new().with_timeout(Duration::from_millis(50)),
                    )
                    .await;
                o.lock().unwrap().push(format!("killed:{}", r.killed));
                ctx.shutdown();
                Ok(())
            }
        });
    });
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_string_lossy().into_owned();
    let session = session_in(&faux, vec![ext], SessionManager::in_memory(&cwd));
    assert!(!session.is_shutdown_requested());
    let _ = session.prompt("/run").await.unwrap();
    assert_eq!(*out.lock().unwrap(), ["hi:4:false", "killed:true"]);
    assert!(session.is_shutdown_requested());
    tokio::time::timeout(Duration::from_secs(5), session.shutdown_requested())
        .await
        .unwrap();
}

#[tokio::test]
async fn shutdown_tells_the_extensions() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("ok"));
    let seen = log();
    let session = session(&faux, vec![lifecycle(seen.clone(), false)]);
    session.prompt("hi").await.unwrap().into_result().unwrap();
    session.shutdown().await;
    assert_eq!(*seen.lock().unwrap(), ["start:startup", "shutdown:quit"]);
    let _ = SessionStartReason::Startup;
    let _ = ShutdownReason::Quit;
}

#[cfg(feature = "tools")]
mod user_bash {
    use super::*;
    use pi_engine::agent_session::BashRun;
    use pi_engine::extensions::UserBashAction;
    use pi_engine::session::BashExecutionMessage;

    #[tokio::test]
    async fn a_persons_command_is_recorded_and_extensions_may_take_it() {
        let faux = FauxProvider::new();
        faux.push(FauxResponse::text("ok"));
        let ext = Extension::new("bash-gate", |pi| {
            pi.on_user_bash(|e, _ctx| async move {
                Ok(e.command.starts_with("deploy").then(|| {
                    UserBashAction::Answer(BashExecutionMessage::new(
                        &e.command,
                        "not here",
                        Some(1),
                    ))
                }))
            });
        });
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().to_string_lossy().into_owned();
        let session = session_in(&faux, vec![ext], SessionManager::in_memory(&cwd));
        let ran = session
            .execute_bash("echo from-the-shell", BashRun::new())
            .await
            .unwrap();
        assert_eq!(ran.output, "from-the-shell\n");
        assert_eq!(ran.exit_code, Some(0));
        let answered = session
            .execute_bash("deploy prod", BashRun::new().excluded_from_context())
            .await
            .unwrap();
        assert_eq!(answered.output, "not here");
        assert_eq!(answered.exclude_from_context, Some(true));
        let messages = session.messages();
        let roles: Vec<&str> = messages.iter().map(|m| m.role()).collect();
        assert_eq!(roles, ["bashExecution", "bashExecution"]);
        session
            .prompt("what did I run?")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        // The first joins the model's context; the excluded one does not.
        let sent = format!("{:?}", faux.requests()[0].context.messages);
        assert!(
            sent.contains("from-the-shell") && !sent.contains("not here"),
            "{sent}"
        );
    }
}

#[tokio::test]
async fn thinking_level_is_clamped_for_extensions() {
    let faux = FauxProvider::new();
    let levels = log();
    let l = levels.clone();
    let ext = Extension::new("thinker", move |pi| {
        let l = l.clone();
        pi.register_command("think", "", move |_a, ctx| {
            let l = l.clone();
            async move {
                let set = ctx.set_thinking_level(ThinkingLevel::Xhigh).await?;
                l.lock()
                    .unwrap()
                    .push(format!("{set}:{}", ctx.thinking_level()));
                Ok(())
            }
        });
    });
    let session = session(&faux, vec![ext]);
    let _ = session.prompt("/think").await.unwrap();
    let levels = levels.lock().unwrap();
    assert_eq!(levels.len(), 1);
    let (set, now) = levels[0].split_once(':').unwrap();
    assert_eq!(set, now);
    assert!(
        session
            .available_thinking_levels()
            .iter()
            .any(|l| l.to_string() == set)
    );
}

/// Deviation `extension/session-name-set-show` and `extension/input-transform-ping`: what
/// happens before the first reply is on disk at once (pi writes nothing until the first
/// assistant message, so a name given first is lost when the program ends).
#[tokio::test]
async fn what_happens_before_the_first_reply_survives_a_restart() {
    let faux = FauxProvider::new();
    let namer = Extension::new("session-name", |pi| {
        pi.register_command("session-name", "", |args, ctx| async move {
            ctx.set_session_name(args.trim()).await?;
            Ok(())
        });
    });
    let dir = tempfile::tempdir().unwrap();
    let sm = pi_engine::session::SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/project");
    let session = session_in(&faux, vec![namer], sm);
    let _ = session.prompt("/session-name Release prep").await.unwrap();
    let file = session.session_file().unwrap();
    drop(session);
    let reopened = pi_engine::session::SessionOptions::new()
        .with_session_dir(dir.path())
        .open(&file)
        .unwrap();
    assert_eq!(reopened.session_name(), Some("Release prep"));
}
