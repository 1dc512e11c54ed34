//! pi's RPC mode (`pi_engine::cli::rpc::run`) driven over in-memory pipes, on the faux
//! provider: every command's response in pi's shape, a prompt's response before its run
//! and its events after, steering while the agent streams, an extension dialog answered
//! with `extension_ui_response`, malformed lines, unknown commands, CR/LF and U+2028, and
//! the end of the input. The state response and the order of lines are also compared with
//! pi 0.73.1's own stdout (tests/fixtures/pi/pi-mode-rpc-anthropic-messages.stdout.jsonl).
#![cfg(feature = "cli")]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_engine::agent::{AgentToolResult, ToolContext, ToolError, TypedTool};
use pi_engine::agent_session::{AgentSession, AgentSessionBuilder, AgentSessionSettings};
use pi_engine::cli::rpc::{
    self, RpcExit, RpcExitReason, RpcOptions, RpcUi, SlashCommand, SourceInfo, SourceScope,
};
use pi_engine::extensions::{Extension, NotifyKind, ToolCallVerdict};
use pi_engine::llm::{ApiKey, ModelRegistry};
use pi_engine::models::CredentialSource;
use pi_engine::providers::faux::{FauxHandle, FauxProvider, FauxResponse};
use pi_engine::session::{SessionManager, SessionOptions};
use pi_engine::{ApiProvider, StopReason};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long a test waits for a line before it fails.
const WAIT: Duration = Duration::from_secs(20);

// ----- the harness ---------------------------------------------------------------------------

/// A running mode: the client's end of its input, and its output split into lines.
struct Rpc {
    input: Option<DuplexStream>,
    lines: mpsc::UnboundedReceiver<String>,
    next_id: u32,
    mode: JoinHandle<RpcExit>,
}

impl Rpc {
    fn start(session: AgentSession, options: RpcOptions) -> Rpc {
        let (input, mode_in) = tokio::io::duplex(1 << 20);
        let (mode_out, output) = tokio::io::duplex(1 << 20);
        let mode = tokio::spawn(rpc::run(session, mode_in, mode_out, options));
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            // Records end at `\n` only, as pi's clients must read them.
            let mut reader = BufReader::new(output);
            loop {
                let mut buf = Vec::new();
                match reader.read_until(b'\n', &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                assert_eq!(buf.pop(), Some(b'\n'), "a line without its end");
                let _ = tx.send(String::from_utf8(buf).unwrap());
            }
        });
        Rpc {
            input: Some(input),
            lines,
            next_id: 0,
            mode,
        }
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().unwrap();
        input.write_all(bytes).await.unwrap();
        input.flush().await.unwrap();
    }

    async fn send(&mut self, command: Value) {
        let mut line = command.to_string();
        line.push('\n');
        self.send_raw(line.as_bytes()).await;
    }

    async fn next_raw(&mut self) -> String {
        tokio::time::timeout(WAIT, self.lines.recv())
            .await
            .expect("no line in time")
            .expect("the output ended")
    }

    async fn next(&mut self) -> Value {
        let line = self.next_raw().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The lines up to the first that `stop` accepts (included, last).
    async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut lines = Vec::new();
        loop {
            let line = self.next().await;
            let done = stop(&line);
            lines.push(line);
            if done {
                return lines;
            }
        }
    }

    async fn response_to(&mut self, id: &str) -> Value {
        self.until(|l| l["type"] == "response" && l["id"] == id)
            .await
            .pop()
            .unwrap()
    }

    /// Sends a command with a fresh id and returns its response (events before it are
    /// skipped).
    async fn call(&mut self, mut command: Value) -> Value {
        self.next_id += 1;
        let id = format!("req-{}", self.next_id);
        command["id"] = id.clone().into();
        self.send(command).await;
        self.response_to(&id).await
    }

    /// `call`, expecting success; the response's `data`.
    async fn data(&mut self, command: Value) -> Value {
        let r = self.call(command).await;
        assert_eq!(r["success"], true, "{r}");
        r.get("data").cloned().unwrap_or(Value::Null)
    }

    /// `call`, expecting failure; the error.
    async fn error(&mut self, command: Value) -> String {
        let r = self.call(command).await;
        assert_eq!(r["success"], false, "{r}");
        assert!(r.get("data").is_none(), "{r}");
        r["error"].as_str().unwrap().to_owned()
    }

    /// Closes the input and waits for the mode; the lines written after the last one read.
    async fn close(mut self) -> (RpcExit, Vec<Value>) {
        drop(self.input.take());
        self.finish().await
    }

    /// Waits for the mode to end by itself; the rest of its lines.
    async fn finish(mut self) -> (RpcExit, Vec<Value>) {
        let exit = tokio::time::timeout(WAIT, &mut self.mode)
            .await
            .expect("the mode did not end")
            .unwrap();
        let mut rest = Vec::new();
        while let Some(line) = self.lines.recv().await {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        (exit, rest)
    }
}

fn kinds(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}

// ----- sessions ------------------------------------------------------------------------------

/// Credentials for the faux provider only (nothing from the environment).
#[derive(Debug)]
struct OnlyFaux;

#[async_trait::async_trait]
impl CredentialSource for OnlyFaux {
    fn has_auth(&self, provider: &str) -> bool {
        provider == "faux"
    }
    async fn api_key(&self, provider: &str) -> Option<ApiKey> {
        (provider == "faux").then(|| ApiKey::new("faux-key"))
    }
}

/// The built-in models (none usable) and two faux ones.
fn registry() -> ModelRegistry {
    let mut r = ModelRegistry::new().with_credentials(Arc::new(OnlyFaux));
    r.register_provider(
        "faux",
        json!({"baseUrl": "http://localhost:0", "api": "faux", "apiKey": "FAUX_KEY", "models": [
            {"id": "faux-1", "name": "Faux One", "reasoning": true, "input": ["text", "image"],
             "contextWindow": 128000, "maxTokens": 16384},
            {"id": "faux-2", "name": "Faux Two", "contextWindow": 64000, "maxTokens": 8192}
        ]}),
    )
    .unwrap();
    r
}

/// A session on `faux` with the RPC UI, its extensions, in memory or in `dir`.
fn session(
    faux: &FauxProvider,
    dir: Option<&std::path::Path>,
    extensions: Vec<Extension>,
    settings: AgentSessionSettings,
) -> (AgentSession, RpcOptions) {
    session_with(faux, dir, extensions, settings, |b| b)
}

/// [`session`], with more of the builder.
fn session_with(
    faux: &FauxProvider,
    dir: Option<&std::path::Path>,
    extensions: Vec<Extension>,
    settings: AgentSessionSettings,
    more: impl FnOnce(AgentSessionBuilder) -> AgentSessionBuilder,
) -> (AgentSession, RpcOptions) {
    let registry = registry();
    let model = registry.find("faux", "faux-1").unwrap().clone();
    let manager = match dir {
        Some(dir) => SessionOptions::new()
            .with_session_dir(dir)
            .create(dir.to_string_lossy()),
        None => SessionManager::in_memory("/project"),
    };
    let (ui, channel) = RpcUi::new();
    let stream = faux.clone();
    let mut builder = AgentSession::builder(manager)
        .registry(registry)
        .default_model(model)
        .settings(settings)
        .stream_fn(move |m, c, o| stream.stream(m, c, o))
        .extension_ui_arc(ui);
    for e in extensions {
        builder = builder.extension(e);
    }
    (
        more(builder).build().unwrap(),
        RpcOptions::new().with_ui(channel),
    )
}

fn plain(faux: &FauxProvider) -> (AgentSession, RpcOptions) {
    session(faux, None, Vec::new(), AgentSessionSettings::default())
}

/// A session with the [`asker`] extension, and what it has seen.
fn asking(faux: &FauxProvider) -> (AgentSession, RpcOptions, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (session, options) = session(
        faux,
        None,
        vec![asker(seen.clone())],
        AgentSessionSettings::default(),
    );
    (session, options, seen)
}

/// What the extensions of these tests saw.
#[derive(Debug, Default)]
struct Seen {
    confirmed: Option<bool>,
    shutdowns: usize,
}

/// `/ask` (a confirm and an input, then a notification), `/quit` (`ctx.shutdown()`), a
/// `tool_call` gate asking with `select`, and a `session_shutdown` counter.
fn asker(seen: Arc<Mutex<Seen>>) -> Extension {
    Extension::new("asker", move |pi| {
        let s = seen.clone();
        pi.register_command("ask", "Asks things", move |args, ctx| {
            let s = s.clone();
            async move {
                let ok = ctx.ui().confirm("Proceed?", &args).await;
                s.lock().unwrap().confirmed = Some(ok);
                let name = ctx.ui().input("Name", Some("ada")).await;
                ctx.ui()
                    .notify(&format!("ok={ok} name={name:?}"), NotifyKind::Info);
                Ok(())
            }
        });
        pi.register_command("quit", "", |_, ctx| async move {
            ctx.shutdown();
            Ok(())
        });
        pi.on_tool_call(|event, ctx| async move {
            let title = format!("Run {}?", event.tool_name);
            let choice = ctx.ui().select(&title, &["Yes", "No"]).await;
            Ok((choice.as_deref() != Some("Yes"))
                .then(|| ToolCallVerdict::block("Blocked by user")))
        });
        let s = seen.clone();
        pi.on_session_shutdown(move |_, _| {
            let s = s.clone();
            async move {
                s.lock().unwrap().shutdowns += 1;
                Ok(())
            }
        });
    })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// What to echo.
    text: String,
}

async fn echo(args: EchoArgs, _: ToolContext) -> Result<AgentToolResult, ToolError> {
    Ok(AgentToolResult::text(args.text))
}

/// The next model call through the handle.
async fn next_call(handle: &mut FauxHandle) -> pi_engine::providers::faux::FauxCall {
    tokio::time::timeout(WAIT, handle.next_call())
        .await
        .expect("no model call in time")
        .unwrap()
}

fn context_text(call: &pi_engine::providers::faux::FauxCall) -> String {
    serde_json::to_string(&call.request().context.messages).unwrap()
}

// ----- prompt --------------------------------------------------------------------------------

// A program's runtime: several worker threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_is_answered_when_its_run_starts_and_its_events_follow() {
    let (faux, mut handle) = FauxProvider::with_handle();
    let (session, options) = plain(&faux);
    let mut rpc = Rpc::start(session, options);
    rpc.send(json!({"id": "req-1", "type": "prompt", "message": "Hi"}))
        .await;
    assert_eq!(
        rpc.next_raw().await,
        r#"{"id":"req-1","type":"response","command":"prompt","success":true}"#
    );
    assert_eq!(rpc.next().await, json!({"type": "agent_start"}));
    // The response came while the model call is still open: before the run ends.
    let call = next_call(&mut handle).await;
    let mut reply = call.into_reply();
    reply.text_delta("Hel");
    reply.text_delta("lo");
    reply.done(StopReason::Stop);
    let run = rpc.until(|l| l["type"] == "agent_end").await;
    let state = rpc.data(json!({"type": "get_state"})).await;
    let skeleton: Vec<String> = kinds(&run)
        .into_iter()
        .filter(|k| k != "message_update")
        .collect();
    assert_eq!(
        skeleton,
        [
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(run[1]["message"]["role"], "user");
    let update = run
        .iter()
        .rfind(|l| l["assistantMessageEvent"]["type"] == "text_delta")
        .unwrap();
    assert_eq!(update["assistantMessageEvent"]["delta"], "lo");
    assert_eq!(update["message"]["content"][0]["text"], "Hello");
    assert_eq!(
        update["assistantMessageEvent"]["partial"],
        update["message"]
    );
    assert_eq!(state["messageCount"], 2);
    assert_eq!(state["isStreaming"], false);
    let (exit, rest) = rpc.close().await;
    assert!(
        matches!(exit.reason, RpcExitReason::InputClosed),
        "{exit:?}"
    );
    assert_eq!(exit.exit_code(), 0);
    assert!(rest.is_empty(), "{rest:?}");
}

/// pi's own stdout for `prompt` then `get_state`: the same order of lines, the same state
/// fields in the same order, the same `Model` fields.
#[tokio::test]
async fn lines_and_state_are_in_pis_order() {
    let pis = support::pi::jsonl("tests/fixtures/pi/pi-mode-rpc-anthropic-messages.stdout.jsonl");
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("Done."));
    let (session, options) = plain(&faux);
    let mut rpc = Rpc::start(session, options);
    rpc.send(json!({"id": "req-1", "type": "prompt", "message": "Create notes.txt"}))
        .await;
    let mut ours = rpc.until(|l| l["type"] == "agent_end").await;
    rpc.send(json!({"id": "req-2", "type": "get_state"})).await;
    ours.push(rpc.next().await);

    assert_eq!(ours[0], pis[0]);
    let skeleton = |lines: &[Value]| -> Vec<String> {
        let mut k: Vec<String> = kinds(lines)
            .into_iter()
            .filter(|k| k != "message_update")
            .collect();
        k.dedup();
        k
    };
    // pi's run had six turns; ours has the last one (a text reply).
    let (p, o) = (skeleton(&pis), skeleton(&ours));
    assert_eq!(o[..6], p[..6], "the start");
    assert_eq!(o[o.len() - 5..], p[p.len() - 5..], "the end");

    let (pi_state, our_state) = (&pis[pis.len() - 1], &ours[ours.len() - 1]);
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(our_state), keys(pi_state));
    assert_eq!(keys(&our_state["data"]), keys(&pi_state["data"]));
    assert_eq!(
        keys(&our_state["data"]["model"]),
        keys(&pi_state["data"]["model"])
    );
    assert_eq!(our_state["data"]["steeringMode"], "one-at-a-time");
    assert_eq!(our_state["data"]["thinkingLevel"], "medium");
    assert_eq!(our_state["data"]["messageCount"], 2);
    let _ = rpc.close().await;
}

// A program's runtime: several worker threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_and_following_up_while_the_agent_streams() {
    let (faux, mut handle) = FauxProvider::with_handle();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (session, options) = session(
        &faux,
        None,
        vec![asker(seen)],
        AgentSessionSettings::default(),
    );
    let mut rpc = Rpc::start(session, options);
    rpc.send(json!({"id": "p1", "type": "prompt", "message": "Start"}))
        .await;
    assert_eq!(rpc.next().await["id"], "p1");
    let first = next_call(&mut handle).await;

    // A prompt with `streamingBehavior` is queued and answered at once, after its
    // `queue_update`.
    rpc.send(
        json!({"id": "p2", "type": "prompt", "message": "Steer me", "streamingBehavior": "steer"}),
    )
    .await;
    let lines = rpc.until(|l| l["id"] == "p2").await;
    let update = lines.iter().find(|l| l["type"] == "queue_update").unwrap();
    assert_eq!(
        *update,
        json!({"type": "queue_update", "steering": ["Steer me"], "followUp": []})
    );
    assert_eq!(lines.last().unwrap()["success"], true);
    // Without it, refused with pi's words.
    assert_eq!(
        rpc.error(json!({"type": "prompt", "message": "Me too"}))
            .await,
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
    );
    assert!(
        rpc.data(json!({"type": "follow_up", "message": "Later"}))
            .await
            .is_null()
    );
    // An extension command cannot be queued…
    assert_eq!(
        rpc.error(json!({"type": "steer", "message": "/ask now"}))
            .await,
        "Extension command \"/ask\" cannot be queued. Use prompt() or execute the command when not streaming."
    );
    let state = rpc.data(json!({"type": "get_state"})).await;
    assert_eq!(state["isStreaming"], true);
    assert_eq!(state["pendingMessageCount"], 2);

    // The steered message is the next turn, the follow-up the one after.
    first.respond(FauxResponse::text("One"));
    let second = next_call(&mut handle).await;
    assert!(context_text(&second).contains("Steer me"));
    assert!(!context_text(&second).contains("Later"));
    second.respond(FauxResponse::text("Two"));
    let third = next_call(&mut handle).await;
    assert!(context_text(&third).contains("Later"));
    third.respond(FauxResponse::text("Three"));
    let run = rpc.until(|l| l["type"] == "agent_end").await;
    let replies: Vec<&Value> = run
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .collect();
    assert_eq!(replies.len(), 3);
    assert_eq!(
        rpc.data(json!({"type": "get_last_assistant_text"})).await,
        json!({"text": "Three"})
    );
    let _ = rpc.close().await;
}

#[tokio::test]
async fn images_and_a_streaming_behavior_while_idle() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("A red pixel."));
    let (session, options) = plain(&faux);
    let mut rpc = Rpc::start(session, options);
    // While idle, `streamingBehavior` does not matter: the prompt runs (as pi).
    let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
    assert!(
        rpc.data(
            json!({"type": "prompt", "message": "What is it?", "images": [image],
            "streamingBehavior": "followUp"})
        )
        .await
        .is_null()
    );
    let run = rpc.until(|l| l["type"] == "agent_end").await;
    let user = run
        .iter()
        .find(|l| l["type"] == "message_end" && l["message"]["role"] == "user")
        .unwrap();
    assert_eq!(
        user["message"]["content"],
        json!([{"type": "text", "text": "What is it?"}, image])
    );
    assert!(
        rpc.error(json!({"type": "prompt", "message": "x", "images": "no"}))
            .await
            .starts_with("Invalid command: \"images\"")
    );
    let _ = rpc.close().await;
}

// A program's runtime: several worker threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_waiting_for_a_dialog_does_not_hold_prompts_back() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("Meanwhile."));
    let (session, options, seen) = asking(&faux);
    let mut rpc = Rpc::start(session, options);
    rpc.send(json!({"id": "ask", "type": "prompt", "message": "/ask"}))
        .await;
    let confirm = rpc.next().await;
    assert_eq!(confirm["method"], "confirm");
    // The command is no run: a prompt now runs (it is not refused, nor queued).
    rpc.send(json!({"id": "p", "type": "prompt", "message": "Hello"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(
        lines[0],
        json!({"id": "p", "type": "response", "command": "prompt", "success": true})
    );
    assert_eq!(lines[1]["type"], "agent_start");
    rpc.send(json!({"type": "extension_ui_response", "id": confirm["id"], "cancelled": true}))
        .await;
    let input = rpc.next().await;
    rpc.send(json!({"type": "extension_ui_response", "id": input["id"], "cancelled": true}))
        .await;
    assert_eq!(rpc.next().await["message"], "ok=false name=None");
    assert_eq!(rpc.next().await["id"], "ask");
    assert_eq!(seen.lock().unwrap().confirmed, Some(false));
    let _ = rpc.close().await;
}

#[tokio::test]
async fn abort_answers_once_the_run_has_stopped() {
    let (faux, mut handle) = FauxProvider::with_handle();
    let (session, options) = plain(&faux);
    let mut rpc = Rpc::start(session, options);
    rpc.send(json!({"id": "p", "type": "prompt", "message": "Long"}))
        .await;
    let call = next_call(&mut handle).await;
    let cancelled = call.cancel_token().clone();
    let mut reply = call.into_reply();
    reply.text_delta("partial");
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let lines = rpc.until(|l| l["id"] == "a").await;
    assert!(cancelled.is_cancelled());
    let k = kinds(&lines);
    let end = k.iter().position(|k| k == "agent_end").unwrap();
    assert_eq!(end, k.len() - 2, "{k:?}");
    assert_eq!(
        lines[end]["messages"][1]["stopReason"], "aborted",
        "{}",
        lines[end]
    );
    drop(reply);
    let _ = rpc.close().await;
}

// ----- the other commands -----------------------------------------------------------------

#[tokio::test]
async fn models_thinking_levels_and_settings() {
    let faux = FauxProvider::new();
    let (session, options) = plain(&faux);
    let mut rpc = Rpc::start(session, options);

    let models = rpc.data(json!({"type": "get_available_models"})).await;
    let ids: Vec<&str> = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["provider"] == "faux")
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["faux-1", "faux-2"]);

    let model = rpc
        .data(json!({"type": "set_model", "provider": "faux", "modelId": "faux-2"}))
        .await;
    assert_eq!(model["id"], "faux-2");
    assert_eq!(model["name"], "Faux Two");
    assert_eq!(model["contextWindow"], 64000);
    assert_eq!(
        rpc.error(json!({"type": "set_model", "provider": "x", "modelId": "y"}))
            .await,
        "Model not found: x/y"
    );
    let state = rpc.data(json!({"type": "get_state"})).await;
    assert_eq!(state["model"]["id"], "faux-2");
    // faux-2 does not reason.
    assert_eq!(state["thinkingLevel"], "off");
    assert!(
        rpc.data(json!({"type": "cycle_thinking_level"}))
            .await
            .is_null()
    );

    let cycled = rpc.data(json!({"type": "cycle_model"})).await;
    assert_eq!(
        cycled.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["model", "thinkingLevel", "isScoped"]
    );
    assert_eq!(cycled["model"]["provider"], "faux");
    assert_eq!(cycled["isScoped"], false);

    rpc.data(json!({"type": "set_model", "provider": "faux", "modelId": "faux-1"}))
        .await;
    assert!(
        rpc.data(json!({"type": "set_thinking_level", "level": "high"}))
            .await
            .is_null()
    );
    assert_eq!(
        rpc.data(json!({"type": "get_state"})).await["thinkingLevel"],
        "high"
    );
    let level = rpc.data(json!({"type": "cycle_thinking_level"})).await;
    assert_eq!(level.as_object().unwrap().len(), 1);
    assert_ne!(level["level"], "high");
    assert_eq!(
        rpc.error(json!({"type": "set_thinking_level", "level": "max"}))
            .await,
        "Invalid thinking level: max"
    );

    for (kind, key) in [
        ("set_steering_mode", "steeringMode"),
        ("set_follow_up_mode", "followUpMode"),
    ] {
        rpc.data(json!({"type": kind, "mode": "all"})).await;
        assert_eq!(rpc.data(json!({"type": "get_state"})).await[key], "all");
        assert_eq!(
            rpc.error(json!({"type": kind, "mode": "some"})).await,
            "Invalid mode: some"
        );
    }
    rpc.data(json!({"type": "set_auto_compaction", "enabled": false}))
        .await;
    assert_eq!(
        rpc.data(json!({"type": "get_state"})).await["autoCompactionEnabled"],
        false
    );
    assert_eq!(
        rpc.error(json!({"type": "set_auto_retry", "enabled": "yes"}))
            .await,
        "Invalid command: \"enabled\" must be a boolean"
    );
    for kind in ["set_auto_retry"] {
        rpc.data(json!({"type": kind, "enabled": false})).await;
    }
    // Nothing to stop: still answered.
    for kind in ["abort", "abort_retry", "abort_bash"] {
        let r = rpc.call(json!({"type": kind})).await;
        assert_eq!(
            r.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["id", "type", "command", "success"]
        );
        assert_eq!(r["command"], kind);
    }
    let _ = rpc.close().await;
}

#[tokio::test]
async fn sessions_forks_and_what_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let faux = FauxProvider::new();
    let mut settings = AgentSessionSettings::default();
    settings.compaction.keep_recent_tokens = 1;
    let (session, options) = session(&faux, Some(dir.path()), Vec::new(), settings);
    let mut rpc = Rpc::start(session, options);

    assert_eq!(
        rpc.data(json!({"type": "get_last_assistant_text"})).await,
        json!({})
    );
    for (prompt, reply) in [
        ("First question", "First answer"),
        ("Second question", "Second answer"),
    ] {
        faux.push(FauxResponse::text(reply));
        rpc.data(json!({"type": "prompt", "message": prompt})).await;
        rpc.until(|l| l["type"] == "agent_end").await;
    }
    let state = rpc.data(json!({"type": "get_state"})).await;
    let first_file = state["sessionFile"].as_str().unwrap().to_owned();
    assert!(first_file.starts_with(&*dir.path().to_string_lossy()));

    let stats = rpc.data(json!({"type": "get_session_stats"})).await;
    assert_eq!(
        stats.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "sessionFile",
            "sessionId",
            "userMessages",
            "assistantMessages",
            "toolCalls",
            "toolResults",
            "totalMessages",
            "tokens",
            "cost",
            "contextUsage"
        ]
    );
    assert_eq!(stats["userMessages"], 2);
    assert_eq!(stats["totalMessages"], 4);
    assert_eq!(
        stats["tokens"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["input", "output", "cacheRead", "cacheWrite", "total"]
    );
    assert_eq!(stats["contextUsage"]["contextWindow"], 128000);

    let messages = rpc.data(json!({"type": "get_messages"})).await;
    assert_eq!(messages["messages"].as_array().unwrap().len(), 4);
    assert_eq!(messages["messages"][1]["role"], "assistant");

    // bash: the result in pi's shape; it joins the context.
    let bash = rpc
        .data(json!({"type": "bash", "command": "echo from-bash"}))
        .await;
    assert_eq!(
        bash,
        json!({"output": "from-bash\n", "exitCode": 0, "cancelled": false, "truncated": false})
    );
    let messages = rpc.data(json!({"type": "get_messages"})).await;
    assert_eq!(messages["messages"][4]["role"], "bashExecution");

    let name = rpc
        .data(json!({"type": "set_session_name", "name": "  my work "}))
        .await;
    assert!(name.is_null());
    assert_eq!(
        rpc.data(json!({"type": "get_state"})).await["sessionName"],
        "my work"
    );
    assert_eq!(
        rpc.error(json!({"type": "set_session_name", "name": "   "}))
            .await,
        "Session name cannot be empty"
    );

    let forks = rpc.data(json!({"type": "get_fork_messages"})).await;
    let forks = forks["messages"].as_array().unwrap().clone();
    assert_eq!(forks.len(), 2);
    assert_eq!(
        forks[1].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["entryId", "text"]
    );
    assert_eq!(forks[1]["text"], "Second question");

    // export_html: the page of the session file, where asked.
    let page = dir.path().join("export.html");
    let exported = rpc
        .data(json!({"type": "export_html", "outputPath": page.to_string_lossy()}))
        .await;
    assert_eq!(exported, json!({"path": page.to_string_lossy()}));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for text in [
        "First question",
        "First answer",
        "Second question",
        "Second answer",
    ] {
        assert!(html.contains(text), "{text}");
    }
    assert_eq!(
        rpc.error(json!({"type": "export_html", "outputPath": 5}))
            .await,
        "Invalid command: \"outputPath\" must be a string"
    );

    // compact: the summary comes from the model.
    faux.push(FauxResponse::text("The summary."));
    let compacted = rpc
        .data(json!({"type": "compact", "customInstructions": "Be brief"}))
        .await;
    assert!(
        compacted["summary"]
            .as_str()
            .unwrap()
            .contains("The summary."),
        "{compacted}"
    );
    assert!(compacted["firstKeptEntryId"].is_string());
    assert!(compacted["tokensBefore"].as_u64().unwrap() > 0);
    assert_eq!(
        rpc.error(json!({"type": "compact"})).await,
        "Already compacted"
    );

    // fork before the second question: a new file, the question's text back.
    let fork = rpc
        .data(json!({"type": "fork", "entryId": forks[1]["entryId"]}))
        .await;
    assert_eq!(fork, json!({"text": "Second question", "cancelled": false}));
    let state = rpc.data(json!({"type": "get_state"})).await;
    let forked_file = state["sessionFile"].as_str().unwrap().to_owned();
    assert_ne!(forked_file, first_file);
    assert_eq!(state["messageCount"], 2);
    assert_eq!(
        rpc.error(json!({"type": "fork", "entryId": "nope"})).await,
        "Invalid entry ID for forking"
    );

    // clone: the branch as it is, in another file.
    assert_eq!(
        rpc.data(json!({"type": "clone"})).await,
        json!({"cancelled": false})
    );
    let state = rpc.data(json!({"type": "get_state"})).await;
    assert_ne!(state["sessionFile"], forked_file.as_str());
    assert_eq!(state["messageCount"], 2);

    // new_session: empty (with or without a parent named).
    assert_eq!(
        rpc.data(json!({"type": "new_session", "parentSession": first_file}))
            .await,
        json!({"cancelled": false})
    );
    let state = rpc.data(json!({"type": "get_state"})).await;
    assert_eq!(state["messageCount"], 0);
    assert!(state.get("sessionName").is_none());

    // switch_session: back to the first file, as it was.
    assert_eq!(
        rpc.data(json!({"type": "switch_session", "sessionPath": first_file}))
            .await,
        json!({"cancelled": false})
    );
    let state = rpc.data(json!({"type": "get_state"})).await;
    assert_eq!(state["sessionFile"], first_file.as_str());
    assert_eq!(state["sessionName"], "my work");
    // Its compacted context: the summary first.
    let messages = rpc.data(json!({"type": "get_messages"})).await;
    assert_eq!(messages["messages"][0]["role"], "compactionSummary");
    assert!(
        !rpc.error(json!({"type": "switch_session", "sessionPath": "/dev/null/x.jsonl"}))
            .await
            .is_empty()
    );
    let _ = rpc.close().await;
}

#[tokio::test]
async fn export_html_needs_a_session_file_with_something_in_it() {
    let faux = FauxProvider::new();
    // In memory: pi's refusal.
    let (in_memory, options) = plain(&faux);
    let mut rpc = Rpc::start(in_memory, options);
    assert_eq!(
        rpc.error(json!({"type": "export_html"})).await,
        "Cannot export in-memory session to HTML"
    );
    let _ = rpc.close().await;

    // A file that is not there (the builder writes the model and thinking level at once, so
    // a new session has a file; this one was removed).
    let dir = tempfile::tempdir().unwrap();
    let (gone, options) = session(
        &faux,
        Some(&dir.path().join("gone")),
        Vec::new(),
        AgentSessionSettings::default(),
    );
    std::fs::remove_file(gone.session_file().unwrap()).unwrap();
    let mut rpc = Rpc::start(gone, options);
    assert_eq!(
        rpc.error(json!({"type": "export_html"})).await,
        "Nothing to export yet - start a conversation first"
    );
    let _ = rpc.close().await;

    let (on_file, options) = session(
        &faux,
        Some(dir.path()),
        Vec::new(),
        AgentSessionSettings::default(),
    );
    let mut rpc = Rpc::start(on_file, options);
    faux.push(FauxResponse::text("An answer with **markdown**."));
    rpc.data(json!({"type": "prompt", "message": "A <question>"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    let page = dir.path().join("page.html");
    let data = rpc
        .data(json!({"type": "export_html", "outputPath": page.to_string_lossy()}))
        .await;
    assert_eq!(data["path"], page.to_string_lossy().as_ref());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("A &lt;question&gt;"));
    assert!(html.contains("An answer with <strong>markdown</strong>."));
    let _ = rpc.close().await;
}

#[tokio::test]
async fn get_commands_lists_extension_commands_then_templates_then_skills() {
    let faux = FauxProvider::new();
    for reply in ["ok", "then"] {
        faux.push(FauxResponse::text(reply));
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (session, options) = session_with(
        &faux,
        None,
        vec![asker(seen)],
        AgentSessionSettings::default(),
        // The resource loader's expansion of templates and skills.
        |b| {
            b.input_expander(
                |text: String| async move { text.replace("/review", "Review the diff:") },
            )
        },
    );
    let options = options
        .with_commands([
            SlashCommand::skill(
                "search",
                Some("Web search"),
                SourceInfo::new("/s/SKILL.md", "local"),
            ),
            SlashCommand::prompt_template(
                "review",
                None,
                SourceInfo::new("/p/review.md", "local").with_scope(SourceScope::Project),
            ),
        ])
        .with_extension_source(
            "asker",
            SourceInfo::new("/ext/asker.py", "local").with_base_dir("/ext"),
        );
    let mut rpc = Rpc::start(session, options);
    let commands = rpc.data(json!({"type": "get_commands"})).await;
    assert_eq!(
        commands,
        json!({"commands": [
            {"name": "ask", "description": "Asks things", "source": "extension",
             "sourceInfo": {"path": "/ext/asker.py", "source": "local", "scope": "temporary",
                            "origin": "top-level", "baseDir": "/ext"}},
            {"name": "quit", "source": "extension",
             "sourceInfo": {"path": "/ext/asker.py", "source": "local", "scope": "temporary",
                            "origin": "top-level", "baseDir": "/ext"}},
            {"name": "review", "source": "prompt",
             "sourceInfo": {"path": "/p/review.md", "source": "local", "scope": "project",
                            "origin": "top-level"}},
            {"name": "skill:search", "description": "Web search", "source": "skill",
             "sourceInfo": {"path": "/s/SKILL.md", "source": "local", "scope": "temporary",
                            "origin": "top-level"}},
        ]})
    );
    // A template is expanded before it is sent, and before it is queued.
    rpc.data(json!({"type": "prompt", "message": "/review main.rs"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    let sent = |i: usize| serde_json::to_string(&faux.requests()[i].context.messages).unwrap();
    assert!(sent(0).contains("Review the diff: main.rs"));
    let queued = rpc
        .call(json!({"type": "steer", "message": "/review lib.rs"}))
        .await;
    assert_eq!(queued["success"], true);
    rpc.data(json!({"type": "prompt", "message": "Go"})).await;
    rpc.until(|l| l["type"] == "agent_end").await;
    // (Queued while idle, it goes with the next run's first call.)
    assert_eq!(faux.requests().len(), 2);
    assert!(sent(1).contains("Review the diff: lib.rs"), "{}", sent(1));
    let _ = rpc.close().await;
}

// ----- the extension UI ----------------------------------------------------------------------

// A program's runtime: several worker threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_is_answered_through_extension_ui_response_and_never_blocks_the_reader() {
    let faux = FauxProvider::new();
    let (session, options, seen) = asking(&faux);
    let mut rpc = Rpc::start(session, options);
    rpc.send(json!({"id": "ask", "type": "prompt", "message": "/ask deploy?"}))
        .await;
    let confirm = rpc.next().await;
    assert_eq!(confirm["type"], "extension_ui_request");
    assert_eq!(confirm["method"], "confirm");
    assert_eq!(confirm["title"], "Proceed?");
    assert_eq!(confirm["message"], "deploy?");
    assert!(confirm.get("timeout").is_none());

    // The dialog is open; other commands are still read and answered.
    let state = rpc.data(json!({"type": "get_state"})).await;
    assert_eq!(state["isStreaming"], false);
    // An answer to no one changes nothing.
    rpc.send(json!({"type": "extension_ui_response", "id": "nobody", "confirmed": false}))
        .await;
    rpc.send(json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": true}))
        .await;
    let input = rpc.next().await;
    assert_eq!(input["method"], "input");
    assert_eq!(input["placeholder"], "ada");
    rpc.send(json!({"type": "extension_ui_response", "id": input["id"], "value": "Grace"}))
        .await;
    let notify = rpc.next().await;
    assert_eq!(notify["method"], "notify");
    assert_eq!(notify["message"], "ok=true name=Some(\"Grace\")");
    assert_eq!(notify["notifyType"], "info");
    // The command has run: the prompt is answered (an extension command is "handled").
    assert_eq!(
        rpc.next().await,
        json!({"id": "ask", "type": "response", "command": "prompt", "success": true})
    );
    assert_eq!(seen.lock().unwrap().confirmed, Some(true));
    let _ = rpc.close().await;
}

#[tokio::test]
async fn a_tool_call_gate_asks_with_select_and_extension_actions_stay_out() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call(
        "call_1",
        "echo",
        json!({"text": "hi"}),
    ));
    faux.push(FauxResponse::text("It was blocked."));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let registry = registry();
    let model = registry.find("faux", "faux-1").unwrap().clone();
    let (ui, channel) = RpcUi::new();
    let stream = faux.clone();
    let session = AgentSession::builder(SessionManager::in_memory("/project"))
        .registry(registry)
        .default_model(model)
        .stream_fn(move |m, c, o| stream.stream(m, c, o))
        .tool(TypedTool::new("echo", "Echoes text", echo))
        .extension(asker(seen))
        .extension_ui_arc(ui)
        .build()
        .unwrap();
    // The crate reports the block as `extension_action`; pi's output has no such line.
    let actions = Arc::new(Mutex::new(0));
    let counted = actions.clone();
    let _sub = session.subscribe(move |e| {
        if e.kind() == "extension_action" {
            *counted.lock().unwrap() += 1;
        }
    });
    let mut rpc = Rpc::start(session, RpcOptions::new().with_ui(channel));
    rpc.data(json!({"type": "prompt", "message": "Echo hi"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "extension_ui_request").await;
    let select = lines.last().unwrap();
    assert_eq!(select["method"], "select");
    assert_eq!(select["title"], "Run echo?");
    assert_eq!(select["options"], json!(["Yes", "No"]));
    rpc.send(json!({"type": "extension_ui_response", "id": select["id"], "value": "No"}))
        .await;
    let run = rpc.until(|l| l["type"] == "agent_end").await;
    let end = run
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], true);
    assert_eq!(end["result"]["content"][0]["text"], "Blocked by user");
    assert_eq!(*actions.lock().unwrap(), 1);
    assert!(
        lines
            .iter()
            .chain(&run)
            .all(|l| l["type"] != "extension_action")
    );
    let _ = rpc.close().await;
}

// ----- framing and errors --------------------------------------------------------------------

#[tokio::test]
async fn malformed_lines_and_unknown_commands() {
    let faux = FauxProvider::new();
    let (session, options) = plain(&faux);
    let mut rpc = Rpc::start(session, options.with_max_line_bytes(1024));
    let parse = |detail: &str| {
        json!({"type": "response", "command": "parse", "success": false,
            "error": format!("Failed to parse command: {detail}")})
    };
    rpc.send_raw(b"\n").await;
    assert_eq!(rpc.next().await, parse("Unexpected end of JSON input"));
    rpc.send_raw(b"{\"type\":\n").await;
    assert_eq!(rpc.next().await, parse("Unexpected end of JSON input"));
    rpc.send_raw(b"not json\n").await;
    let r = rpc.next().await;
    assert_eq!(r["command"], "parse");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .starts_with("Failed to parse command: "),
        "{r}"
    );
    let long = format!(
        "{{\"type\":\"get_state\",\"pad\":\"{}\"}}\n",
        "x".repeat(2000)
    );
    rpc.send_raw(long.as_bytes()).await;
    assert_eq!(rpc.next().await, parse("line too long"));
    // Unknown: answered without the id, as pi.
    rpc.send(json!({"id": "u1", "type": "no_such_thing"})).await;
    assert_eq!(
        rpc.next_raw().await,
        r#"{"type":"response","command":"no_such_thing","success":false,"error":"Unknown command: no_such_thing"}"#
    );
    rpc.send_raw(b"42\n").await;
    assert_eq!(
        rpc.next().await,
        json!({"type": "response", "success": false, "error": "Unknown command: undefined"})
    );
    rpc.send(json!({"id": "u2"})).await;
    assert_eq!(rpc.next().await["error"], "Unknown command: undefined");
    // A known command with a missing field: an error with the id.
    rpc.send(json!({"id": "m", "type": "prompt"})).await;
    assert_eq!(
        rpc.next().await,
        json!({"id": "m", "type": "response", "command": "prompt", "success": false,
            "error": "Invalid command: \"message\" must be a string"})
    );
    // Any id is echoed as given.
    rpc.send(json!({"id": 7, "type": "get_last_assistant_text"}))
        .await;
    assert_eq!(
        rpc.next_raw().await,
        r#"{"id":7,"type":"response","command":"get_last_assistant_text","success":true,"data":{}}"#
    );
    let _ = rpc.close().await;
}

#[tokio::test]
async fn crlf_unicode_separators_and_an_unterminated_last_line() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("x\u{2028}y"));
    let (session, options) = plain(&faux);
    let mut rpc = Rpc::start(session, options);
    // Raw U+2028 and U+2029 inside the JSON string, and CR LF at the end.
    rpc.send_raw(
        "{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"a\u{2028}b\u{2029}c\"}\r\n".as_bytes(),
    )
    .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(lines[0]["id"], "p");
    let user = lines
        .iter()
        .find(|l| l["type"] == "message_end" && l["message"]["role"] == "user")
        .unwrap();
    assert_eq!(user["message"]["content"][0]["text"], "a\u{2028}b\u{2029}c");
    // The output keeps them raw, inside one line.
    rpc.send(json!({"id": "t", "type": "get_last_assistant_text"}))
        .await;
    let raw = rpc.next_raw().await;
    assert!(raw.contains('\u{2028}'), "{raw}");
    assert_eq!(
        serde_json::from_str::<Value>(&raw).unwrap()["data"]["text"],
        "x\u{2028}y"
    );
    // A last line without `\n` still counts.
    rpc.send_raw(b"{\"id\":\"last\",\"type\":\"get_state\"}")
        .await;
    let (exit, rest) = rpc.close().await;
    assert_eq!(exit.exit_code(), 0);
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], "last");
    assert_eq!(rest[0]["success"], true);
}

// ----- the end -------------------------------------------------------------------------------

// A program's runtime: several worker threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_input_cancels_open_dialogs_and_shuts_the_session_down() {
    let faux = FauxProvider::new();
    let (session, options, seen) = asking(&faux);
    let mut rpc = Rpc::start(session, options);
    rpc.send(json!({"id": "ask", "type": "prompt", "message": "/ask"}))
        .await;
    assert_eq!(rpc.next().await["method"], "confirm");
    let (exit, _) = rpc.close().await;
    assert!(matches!(exit.reason, RpcExitReason::InputClosed));
    assert!(exit.output.is_ok());
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.confirmed,
        Some(false),
        "the dialog was answered as cancelled"
    );
    assert_eq!(seen.shutdowns, 1, "session_shutdown ran");
}

#[tokio::test]
async fn the_end_of_input_aborts_a_run() {
    let (faux, mut handle) = FauxProvider::with_handle();
    let (session, options) = plain(&faux);
    let probe = session.clone();
    let mut rpc = Rpc::start(session, options);
    rpc.send(json!({"id": "p", "type": "prompt", "message": "Long"}))
        .await;
    let call = next_call(&mut handle).await;
    let cancelled = call.cancel_token().clone();
    let (exit, rest) = rpc.close().await;
    assert_eq!(exit.exit_code(), 0);
    assert!(cancelled.is_cancelled());
    assert!(!probe.is_streaming());
    // pi stops writing events at the end of the input: the aborted run's end is not written.
    assert!(rest.iter().all(|l| l["type"] != "agent_end"), "{rest:?}");
    drop(call);
}

#[tokio::test]
async fn an_extension_shutdown_ends_the_mode_after_its_command() {
    let faux = FauxProvider::new();
    let (session, options, seen) = asking(&faux);
    let mut rpc = Rpc::start(session, options);
    rpc.send(json!({"id": "q", "type": "prompt", "message": "/quit"}))
        .await;
    assert_eq!(rpc.next().await["id"], "q");
    // The input stays open: the mode ends by itself.
    let input = rpc.input.take();
    let (exit, rest) = rpc.finish().await;
    drop(input);
    assert!(
        matches!(exit.reason, RpcExitReason::ShutdownRequested),
        "{exit:?}"
    );
    assert_eq!(exit.exit_code(), 0);
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(seen.lock().unwrap().shutdowns, 1);
}

#[tokio::test]
async fn stop_on_ends_the_mode_with_its_code() {
    let faux = FauxProvider::new();
    let (session, options) = plain(&faux);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let mut rpc = Rpc::start(
        session,
        options.stop_on(async move {
            let _ = rx.await;
            143
        }),
    );
    assert_eq!(
        rpc.data(json!({"type": "get_state"})).await["messageCount"],
        0
    );
    tx.send(()).unwrap();
    let input = rpc.input.take();
    let (exit, _) = rpc.finish().await;
    drop(input);
    assert!(matches!(exit.reason, RpcExitReason::Stopped(143)));
    assert_eq!(exit.exit_code(), 143);
}

#[tokio::test]
async fn a_closed_output_is_reported() {
    let faux = FauxProvider::new();
    let (session, options) = plain(&faux);
    let (mut input, mode_in) = tokio::io::duplex(1 << 16);
    let (mode_out, output) = tokio::io::duplex(64);
    drop(output);
    let mode = tokio::spawn(rpc::run(session, mode_in, mode_out, options));
    input
        .write_all(b"{\"type\":\"get_state\"}\n")
        .await
        .unwrap();
    drop(input);
    let exit = tokio::time::timeout(WAIT, mode).await.unwrap().unwrap();
    assert!(exit.output.is_err());
    assert_eq!(exit.exit_code(), 1);
}

#[tokio::test]
async fn dropping_the_mode_detaches_it_from_the_session() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("Direct."));
    let (session, options) = plain(&faux);
    let probe = session.clone();
    let mut rpc = Rpc::start(session, options);
    assert_eq!(
        rpc.data(json!({"type": "get_state"})).await["messageCount"],
        0
    );
    rpc.mode.abort();
    assert!((&mut rpc.mode).await.unwrap_err().is_cancelled());
    // Nothing holds the output any more: it ends, and a run of the session writes nothing.
    probe.prompt("Hi").await.unwrap().into_result().unwrap();
    let rest = tokio::time::timeout(WAIT, async {
        let mut rest = Vec::new();
        while let Some(line) = rpc.lines.recv().await {
            rest.push(line);
        }
        rest
    })
    .await
    .expect("the output did not end");
    assert!(rest.is_empty(), "{rest:?}");
}
