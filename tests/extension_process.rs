//! Extensions as child processes (`docs/extension-protocol.md`) on an `AgentSession` with
//! the faux provider, against real Python children: registration, a call blocked after a
//! scripted dialog, a tool with updates, a command, rewrites, the child's calls back to the
//! host, and every way a child can fail — hanging, crashing mid-call, writing garbage or an
//! endless line, a broken handshake — each a typed error or an `extension_error`, never a
//! hang. Every wait is bounded (about ten times what it should take).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pi_engine::ApiProvider;
use pi_engine::agent::{AgentEvent, AgentMessage, AgentToolResult, TypedTool};
use pi_engine::agent_session::{AgentSession, AgentSessionEvent, SessionEvent};
use pi_engine::extensions::{
    Extension, ExtensionUi, FlagValue, NotifyKind, ProcessExtension, ProcessExtensionError,
    ProcessExtensionOptions,
};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::session::{SessionEntry, SessionManager};
use serde_json::json;

// ----- helpers ------------------------------------------------------------------------

fn helpers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/extensions")
}

/// Fails the test when `fut` takes longer than `secs` (a liveness bound).
async fn bounded<T>(secs: u64, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), fut)
        .await
        .unwrap_or_else(|_| panic!("did not finish within {secs} s"))
}

/// Runs a prompt to its end (bounded), which must succeed.
async fn run(session: &AgentSession, text: &str) {
    bounded(15, session.prompt(text))
        .await
        .unwrap()
        .into_result()
        .unwrap();
}

/// A Python child: `body` between the helper's import and `ext.run()`.
struct Child {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn child(body: &str) -> Child {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ext.py");
    let source = format!(
        "import os, sys, time, json\nsys.dont_write_bytecode = True\nsys.path.insert(0, {helpers:?})\nimport pi_extension\nfrom pi_extension import Extension\next = Extension()\n{body}\next.run()\n",
        helpers = helpers_dir().to_str().unwrap(),
    );
    std::fs::write(&path, source).unwrap();
    Child { _dir: dir, path }
}

/// A Python child that speaks the protocol by hand (no helper).
fn raw_child(source: &str) -> Child {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw.py");
    std::fs::write(&path, source).unwrap();
    Child { _dir: dir, path }
}

async fn start(name: &str, c: &Child, options: ProcessExtensionOptions) -> ProcessExtension {
    bounded(
        20,
        ProcessExtension::start(name, "python3", [&c.path], options),
    )
    .await
    .unwrap()
}

async fn spawn(name: &str, c: &Child, options: ProcessExtensionOptions) -> Extension {
    start(name, c, options).await.extension()
}

fn gate_script() -> PathBuf {
    helpers_dir().join("approval_gate.py")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct BashArgs {
    command: String,
}

fn session(faux: &FauxProvider, extensions: Vec<Extension>, ui: Option<Script>) -> AgentSession {
    session_for(faux, faux.model(), extensions, ui)
}

fn session_for(
    faux: &FauxProvider,
    model: pi_engine::Model,
    extensions: Vec<Extension>,
    ui: Option<Script>,
) -> AgentSession {
    let stream = faux.clone();
    let echo = TypedTool::new("echo", "Echoes.", |args: EchoArgs, _ctx| async move {
        Ok(AgentToolResult::text(format!("echo: {}", args.text)))
    });
    // Never runs anything: says what it would have run.
    let bash = TypedTool::new(
        "bash",
        "Runs a command.",
        |args: BashArgs, _ctx| async move {
            Ok(AgentToolResult::text(format!("ran: {}", args.command)))
        },
    );
    let mut b = AgentSession::builder(SessionManager::in_memory("/project"))
        .default_model(model)
        .stream_fn(move |m, c, o| stream.stream(m, c, o))
        .tool(echo)
        .tool(bash);
    for e in extensions {
        b = b.extension(e);
    }
    if let Some(ui) = ui {
        b = b.extension_ui(ui);
    }
    b.build().unwrap()
}

type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

/// The `extension_error` events, as `(extension, event, error)`.
fn errors(session: &AgentSession) -> Seen {
    let seen: Seen = Arc::default();
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

fn tool_results(session: &AgentSession) -> Vec<(String, bool)> {
    session
        .messages()
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => Some((r.text(), r.is_error)),
            _ => None,
        })
        .collect()
}

fn push_call(faux: &FauxProvider, tool: &str, args: serde_json::Value) {
    faux.push(FauxResponse::tool_call("c1", tool, args));
    faux.push(FauxResponse::text("done"));
}

/// A front end's UI, scripted: dialogs answered from a list after `delay`, displays
/// recorded.
#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<Vec<&'static str>>>,
    delay: Duration,
    shown: Arc<Mutex<Vec<String>>>,
}

impl Script {
    fn answering(answers: &[&'static str], delay: Duration) -> Self {
        Script {
            answers: Arc::new(Mutex::new(answers.iter().rev().copied().collect())),
            delay,
            shown: Arc::default(),
        }
    }
    fn shown(&self) -> Vec<String> {
        self.shown.lock().unwrap().clone()
    }
}

#[async_trait]
impl ExtensionUi for Script {
    async fn select(&self, title: &str, _options: &[String]) -> Option<String> {
        self.shown.lock().unwrap().push(format!("select: {title}"));
        tokio::time::sleep(self.delay).await;
        self.answers.lock().unwrap().pop().map(str::to_owned)
    }
    async fn confirm(&self, _title: &str, _message: &str) -> bool {
        self.answers.lock().unwrap().pop() == Some("yes")
    }
    async fn input(&self, _title: &str, _placeholder: Option<&str>) -> Option<String> {
        self.answers.lock().unwrap().pop().map(str::to_owned)
    }
    async fn editor(&self, _title: &str, _prefill: Option<&str>) -> Option<String> {
        None
    }
    fn notify(&self, message: &str, _kind: Option<NotifyKind>) {
        self.shown
            .lock()
            .unwrap()
            .push(format!("notify: {message}"));
    }
    fn set_status(&self, key: &str, text: Option<&str>) {
        self.shown
            .lock()
            .unwrap()
            .push(format!("status: {key}={}", text.unwrap_or("-")));
    }
}

// ----- what a child registers and does ------------------------------------------------

#[tokio::test]
async fn the_registration_reaches_the_session() {
    let c = child(
        r#"
ext.flag("verbose", type="boolean", default=False, description="Say more")
ext.flag("mode", type="string", default="fast")

@ext.tool("shout", "Shouts.", {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
          label="Shout", prompt_snippet="Shout a text", execution_mode="sequential")
def shout(params, ctx, update):
    return params["text"].upper()

@ext.command("hi", "Says hi", completions=lambda prefix: [{"value": w} for w in ("world", "there") if w.startswith(prefix)])
def hi(args, ctx):
    ctx.notify("hi " + args)

@ext.shortcut("ctrl+x", "Says x")
def x(ctx):
    ctx.notify("x pressed, mode " + ctx.get_flag("mode"))

@ext.on("tool_call")
def nothing(event, ctx):
    return None
"#,
    );
    let ext = start("reg", &c, ProcessExtensionOptions::new()).await;
    assert_eq!(ext.tools(), ["shout"]);
    assert_eq!(ext.commands(), ["hi"]);
    assert_eq!(ext.events(), ["tool_call"]);
    assert!(ext.pid().is_some());
    let faux = FauxProvider::new();
    let ui = Script::default();
    let session = session(&faux, vec![ext.extension()], Some(ui.clone()));
    assert_eq!(session.extension_names(), ["reg"]);
    let tool = session
        .all_tools()
        .into_iter()
        .find(|t| t.name == "shout")
        .unwrap();
    assert_eq!(tool.description, "Shouts.");
    assert_eq!(tool.parameters["required"], json!(["text"]));
    let commands = session.commands();
    assert_eq!(
        (
            commands[0].name.as_str(),
            commands[0].description.as_deref(),
            commands[0].has_completions
        ),
        ("hi", Some("Says hi"), true)
    );
    let flags = session.flags();
    assert_eq!(flags.len(), 2);
    assert_eq!(flags[0].flag.default, Some(FlagValue::Bool(false)));
    assert_eq!(session.shortcuts()[0].key, "ctrl+x");

    bounded(10, async {
        let completions = session.command_completions("hi", "w").await.unwrap();
        assert_eq!(completions.len(), 1);
        assert_eq!(completions[0].value, "world");
        assert!(session.run_shortcut("ctrl+x").await);
        let outcome = session.prompt("/hi you").await.unwrap();
        assert!(matches!(outcome, pi_engine::agent::RunOutcome::Handled));
    })
    .await;
    assert_eq!(
        ui.shown(),
        ["notify: x pressed, mode fast", "notify: hi you"]
    );

    // The tool runs in the child.
    push_call(&faux, "shout", json!({"text": "hey"}));
    run(&session, "go").await;
    assert_eq!(tool_results(&session), [("HEY".to_owned(), false)]);
}

#[tokio::test]
async fn the_approval_gate_blocks_after_the_person_says_no() {
    let options = || ProcessExtensionOptions::new().with_timeout(Duration::from_secs(2));
    // The person takes longer than the deadline to answer "No": a dialog's wait does not
    // count.
    for (answer, delay, expected) in [
        ("No", 2500, ("Blocked by user".to_owned(), true)),
        ("Yes", 0, ("ran: rm -rf build".to_owned(), false)),
    ] {
        let gate = bounded(
            20,
            ProcessExtension::spawn("approval-gate", "python3", [gate_script()], options()),
        )
        .await
        .unwrap();
        let faux = FauxProvider::new();
        push_call(&faux, "bash", json!({"command": "rm -rf build"}));
        let ui = Script::answering(&[answer], Duration::from_millis(delay));
        let session = session(&faux, vec![gate], Some(ui.clone()));
        let seen = errors(&session);
        run(&session, "clean up").await;
        assert_eq!(tool_results(&session), [expected], "{answer}");
        assert!(
            seen.lock().unwrap().is_empty(),
            "{:?}",
            seen.lock().unwrap()
        );
        assert!(ui.shown()[0].contains("rm -rf build"), "{:?}", ui.shown());
    }

    // Without a UI the gate blocks; a harmless command is not asked about.
    let gate = bounded(
        20,
        ProcessExtension::spawn("approval-gate", "python3", [gate_script()], options()),
    )
    .await
    .unwrap();
    let faux = FauxProvider::new();
    push_call(&faux, "bash", json!({"command": "rm -rf build"}));
    push_call(&faux, "bash", json!({"command": "ls"}));
    let session = session(&faux, vec![gate], None);
    run(&session, "clean up").await;
    run(&session, "list").await;
    assert_eq!(
        tool_results(&session),
        [
            (
                "Dangerous command blocked (no UI for confirmation)".to_owned(),
                true
            ),
            ("ran: ls".to_owned(), false)
        ]
    );
}

#[tokio::test]
async fn a_tool_runs_in_the_child_with_its_updates() {
    let gate = bounded(
        20,
        ProcessExtension::spawn(
            "approval-gate",
            "python3",
            [gate_script()],
            ProcessExtensionOptions::new(),
        ),
    )
    .await
    .unwrap();
    let faux = FauxProvider::new();
    push_call(
        &faux,
        "risk_report",
        json!({"command": "sudo rm -rf /var/x"}),
    );
    let session = session(&faux, vec![gate], None);
    let updates = Arc::new(Mutex::new(Vec::new()));
    let u = updates.clone();
    session.subscribe(move |e| {
        if let AgentSessionEvent::Agent(AgentEvent::ToolExecutionUpdate {
            partial_result, ..
        }) = e
        {
            u.lock().unwrap().push(partial_result.text_content());
        }
    });
    run(&session, "check it").await;
    assert_eq!(
        tool_results(&session),
        [("dangerous: rm -rf, sudo".to_owned(), false)]
    );
    let updates = updates.lock().unwrap().clone();
    assert_eq!(updates.len(), 5, "{updates:?}");
    assert_eq!(updates[4], "checked 5 of 5 patterns");
    let details = session.messages().iter().find_map(|m| match m {
        AgentMessage::ToolResult(r) => Some(r.details.clone()),
        _ => None,
    });
    assert_eq!(details, Some(Some(json!({"patterns": ["rm -rf", "sudo"]}))));
}

#[tokio::test]
async fn a_command_runs_in_the_child() {
    let gate = bounded(
        20,
        ProcessExtension::spawn(
            "approval-gate",
            "python3",
            [gate_script()],
            ProcessExtensionOptions::new(),
        ),
    )
    .await
    .unwrap();
    let faux = FauxProvider::new();
    let ui = Script::default();
    let session = session(&faux, vec![gate], Some(ui.clone()));
    bounded(10, async {
        let completions = session.command_completions("gate", "o").await.unwrap();
        let values: Vec<&str> = completions.iter().map(|c| c.value.as_str()).collect();
        assert_eq!(values, ["on", "off"]);
        let outcome = session.prompt("/gate off").await.unwrap();
        assert!(matches!(outcome, pi_engine::agent::RunOutcome::Handled));
    })
    .await;
    assert_eq!(ui.shown(), ["notify: Approval gate is off"]);
    let entries = session.with_session_manager(|sm| sm.entries().unwrap());
    let custom = entries.iter().find_map(|e| match e {
        SessionEntry::Custom(c) => Some((c.custom_type.clone(), c.data.clone())),
        _ => None,
    });
    assert_eq!(
        custom,
        Some(("approval-gate".to_owned(), Some(json!({"enabled": false}))))
    );
    // The gate is off: rm -rf runs without a question.
    push_call(&faux, "bash", json!({"command": "rm -rf build"}));
    run(&session, "clean up").await;
    assert_eq!(
        tool_results(&session),
        [("ran: rm -rf build".to_owned(), false)]
    );
    assert_eq!(ui.shown().len(), 1);
}

#[tokio::test]
async fn rewrites_cross_the_boundary() {
    let c = child(
        r#"
@ext.on("tool_call")
def rewrite(event, ctx):
    if event["toolName"] == "echo":
        return {"input": {"text": event["input"]["text"] + " (checked)"}}

@ext.on("tool_result")
def upper(event, ctx):
    text = "".join(b["text"] for b in event["content"] if b["type"] == "text")
    return {"content": [{"type": "text", "text": text.upper()}], "details": {"seen": True}}

@ext.on("context")
def last_only(event, ctx):
    # Only the last message goes to the model.
    return {"messages": event["messages"][-1:]}

@ext.on("input")
def quick(event, ctx):
    if event["text"].startswith("?quick "):
        return {"action": "transform", "text": "Briefly: " + event["text"][7:]}
    if event["text"] == "ping":
        return {"action": "handled"}

@ext.on("before_agent_start")
def extra(event, ctx):
    return {"systemPrompt": event["systemPrompt"] + "\nBe terse."}
"#,
    );
    let ext = spawn("rewriter", &c, ProcessExtensionOptions::new()).await;
    let faux = FauxProvider::new();
    push_call(&faux, "echo", json!({"text": "hi"}));
    let session = session(&faux, vec![ext], None);
    let seen = errors(&session);
    run(&session, "?quick say hi").await;
    assert_eq!(
        tool_results(&session),
        [("ECHO: HI (CHECKED)".to_owned(), false)]
    );
    let requests = faux.requests();
    // First call: the transformed prompt, alone; second: only the tool result.
    assert_eq!(requests[0].context.messages.len(), 1);
    assert!(format!("{:?}", requests[0].context.messages[0]).contains("Briefly: say hi"));
    assert_eq!(requests[1].context.messages.len(), 1);
    assert!(
        requests[0]
            .context
            .system_prompt
            .as_deref()
            .unwrap_or_default()
            .ends_with("Be terse.")
    );
    let outcome = bounded(10, session.prompt("ping")).await.unwrap();
    assert!(matches!(outcome, pi_engine::agent::RunOutcome::Handled));
    assert!(
        seen.lock().unwrap().is_empty(),
        "{:?}",
        seen.lock().unwrap()
    );
}

#[tokio::test]
async fn the_childs_calls_reach_the_session() {
    let c = child(
        r#"
levels = []

@ext.on("thinking_level_select")
def level(event, ctx):
    # Sent while the child waits for its own setThinkingLevel: it answers it meanwhile.
    levels.append(event["previousLevel"] + "->" + event["level"])

@ext.command("note", "Takes a note")
def note(args, ctx):
    ctx.send_message("note", "Noted: " + args, display=True)
    entry = ctx.append_entry("notes", {"text": args})
    ctx.set_session_name("Notes session")
    ctx.set_label(entry, "first note")
    ctx.call("setThinkingLevel", level="high")
    state = ctx.get_state()
    out = ctx.exec("echo", ["from", "exec"], cwd="/")
    ctx.set_status("notes", out["stdout"].strip())
    ctx.notify("%s|%s|%s|%s|%s" % (state["sessionName"], state["isIdle"], state["thinkingLevel"], ",".join(levels), ctx.get_flag("nope")))
    try:
        ctx.call("ui.custom")
    except pi_extension.HostError as e:
        ctx.notify("refused: " + str(e))
"#,
    );
    let ext = spawn("notes", &c, ProcessExtensionOptions::new()).await;
    let faux = FauxProvider::new();
    let ui = Script::default();
    let model = faux.model().with_reasoning(true);
    let session = session_for(&faux, model, vec![ext], Some(ui.clone()));
    let seen = errors(&session);
    run(&session, "/note buy milk").await;
    assert_eq!(
        ui.shown(),
        [
            "status: notes=from exec",
            "notify: Notes session|True|high|medium->high|None",
            "notify: refused: unknown method \"ui.custom\"",
        ]
    );
    assert_eq!(session.session_name().as_deref(), Some("Notes session"));
    let custom = session.messages().iter().any(|m| {
        matches!(m, AgentMessage::Custom(c) if c.get("content") == Some(&json!("Noted: buy milk")))
    });
    assert!(custom, "{:?}", session.messages());
    let labelled = session.with_session_manager(|sm| {
        let id = sm
            .entries()
            .unwrap()
            .iter()
            .find_map(|e| match e {
                SessionEntry::Custom(c) if c.custom_type == "notes" => Some(c.id.clone()),
                _ => None,
            })
            .unwrap();
        sm.label(&id).map(str::to_owned)
    });
    assert_eq!(labelled.as_deref(), Some("first note"));
    assert!(
        seen.lock().unwrap().is_empty(),
        "{:?}",
        seen.lock().unwrap()
    );
}

// ----- a child that fails -------------------------------------------------------------

#[tokio::test]
async fn a_hung_child_is_cut_off_and_the_session_goes_on() {
    let c = child(
        r#"
@ext.on("tool_call")
def hang(event, ctx):
    time.sleep(60)
"#,
    );
    let ext = spawn(
        "hung",
        &c,
        ProcessExtensionOptions::new().with_timeout(Duration::from_millis(500)),
    )
    .await;
    let faux = FauxProvider::new();
    push_call(&faux, "echo", json!({"text": "x"}));
    faux.push(FauxResponse::text("still here"));
    let session = session(&faux, vec![ext], None);
    let seen = errors(&session);
    let started = Instant::now();
    run(&session, "go").await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let (text, is_error) = &tool_results(&session)[0];
    assert!(*is_error);
    assert!(text.contains("did not finish within 500ms"), "{text}");
    {
        let seen = seen.lock().unwrap();
        assert_eq!(
            (seen[0].0.as_str(), seen[0].1.as_str()),
            ("hung", "tool_call")
        );
    }
    // The session goes on.
    bounded(10, session.prompt("still there?"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(session.last_assistant_text().as_deref(), Some("still here"));
}

#[tokio::test]
async fn a_tool_past_its_deadline_is_an_error_result() {
    let c = child(
        r#"
@ext.tool("slow", "Never ends.", {"type": "object", "properties": {}})
def slow(params, ctx, update):
    update("started")
    time.sleep(60)
"#,
    );
    let ext = spawn(
        "slow",
        &c,
        ProcessExtensionOptions::new().with_tool_timeout(Duration::from_millis(500)),
    )
    .await;
    let faux = FauxProvider::new();
    push_call(&faux, "slow", json!({}));
    let session = session(&faux, vec![ext], None);
    let started = Instant::now();
    run(&session, "go").await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        tool_results(&session),
        [("tool did not finish within 500ms".to_owned(), true)]
    );
}

#[tokio::test]
async fn a_child_that_crashes_mid_call_fails_every_call_at_once() {
    let c = child(
        r#"
@ext.on("tool_call")
def crash(event, ctx):
    print("boom: the gate fell over", file=sys.stderr)
    sys.stderr.flush()
    os._exit(3)
"#,
    );
    // A long deadline: the failure must come from the death, not the clock.
    let ext = start(
        "crashy",
        &c,
        ProcessExtensionOptions::new().with_timeout(Duration::from_secs(30)),
    )
    .await;
    let faux = FauxProvider::new();
    push_call(&faux, "echo", json!({"text": "x"}));
    push_call(&faux, "echo", json!({"text": "y"}));
    let session = session(&faux, vec![ext.extension()], None);
    let seen = errors(&session);
    let started = Instant::now();
    run(&session, "go").await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (text, is_error) = &tool_results(&session)[0];
    assert!(*is_error);
    assert!(
        text.starts_with(
            "Extension failed, blocking execution: extension process exited (exit status: 3)"
        ),
        "{text}"
    );
    assert!(text.contains("boom: the gate fell over"), "{text}");
    // Later calls fail at once, the same way (fail closed).
    let started = Instant::now();
    run(&session, "again").await;
    assert!(started.elapsed() < Duration::from_secs(2));
    let results = tool_results(&session);
    assert!(
        results[1].1 && results[1].0.contains("exit status: 3"),
        "{results:?}"
    );
    let seen = seen.lock().unwrap();
    let events: Vec<&str> = seen.iter().map(|s| s.1.as_str()).collect();
    assert!(events.contains(&"process"), "{seen:?}");
    assert_eq!(events.iter().filter(|e| **e == "tool_call").count(), 2);
    assert_eq!(ext.pid(), None);
}

#[tokio::test]
async fn malformed_output_is_reported_and_skipped() {
    let c = child(
        r#"
out = pi_extension._OUT

@ext.on("tool_call")
def noisy(event, ctx):
    out.write("this is not json\n")
    out.write('{"type": "frobnicate", "id": 1}\n')
    out.write("[1, 2, 3]\n")
    out.write('{"type": "result", "id": 999999, "result": null}\n')
    out.flush()
    return {"input": {"text": "still heard"}}

@ext.on("tool_result")
def wrong(event, ctx):
    return {"content": "not a list of blocks"}
"#,
    );
    let ext = spawn("noisy", &c, ProcessExtensionOptions::new()).await;
    let faux = FauxProvider::new();
    push_call(&faux, "echo", json!({"text": "x"}));
    let session = session(&faux, vec![ext], None);
    let seen = errors(&session);
    run(&session, "go").await;
    // The valid answer after the garbage still counts; the wrong-shaped one is refused.
    assert_eq!(
        tool_results(&session),
        [("echo: still heard".to_owned(), false)]
    );
    let seen = seen.lock().unwrap();
    let protocol: Vec<&str> = seen
        .iter()
        .filter(|s| s.1 == "protocol")
        .map(|s| s.2.as_str())
        .collect();
    assert_eq!(protocol.len(), 3, "{seen:?}");
    assert!(protocol[0].contains("not JSON"), "{protocol:?}");
    assert!(
        protocol[1].contains("unknown message type \"frobnicate\""),
        "{protocol:?}"
    );
    assert!(protocol[2].contains("not a JSON object"), "{protocol:?}");
    let result_error = seen
        .iter()
        .find(|s| s.1 == "tool_result")
        .unwrap_or_else(|| panic!("{seen:?}"));
    assert!(
        result_error.2.contains("invalid answer") && result_error.2.contains("content"),
        "{result_error:?}"
    );
}

#[tokio::test]
async fn a_line_over_the_cap_stops_the_child() {
    let c = child(
        r#"
@ext.on("tool_call")
def huge(event, ctx):
    return {"block": True, "reason": "x" * 5000}
"#,
    );
    let ext = start(
        "huge",
        &c,
        ProcessExtensionOptions::new().with_max_line_bytes(1024),
    )
    .await;
    let faux = FauxProvider::new();
    push_call(&faux, "echo", json!({"text": "x"}));
    let session = session(&faux, vec![ext.extension()], None);
    run(&session, "go").await;
    let (text, is_error) = &tool_results(&session)[0];
    assert!(*is_error);
    assert!(
        text.contains("wrote a line longer than 1024 bytes and was stopped"),
        "{text}"
    );
    // Stopped: it is gone soon.
    bounded(10, async {
        while ext.pid().is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn handshake_failures_are_typed_errors() {
    let options = || ProcessExtensionOptions::new().with_handshake_timeout(Duration::from_secs(2));
    let attempt = |source: &'static str| async move {
        let c = raw_child(source);
        bounded(
            20,
            ProcessExtension::spawn("broken", "python3", [&c.path], options()),
        )
        .await
        .unwrap_err()
    };

    let started = Instant::now();
    let err = attempt("import time\ntime.sleep(60)\n").await;
    assert!(
        matches!(err, ProcessExtensionError::HandshakeTimeout { .. }),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    let err =
        attempt("import sys\nprint('no such module: frob', file=sys.stderr)\nsys.exit(2)\n").await;
    let text = err.to_string();
    assert!(
        matches!(err, ProcessExtensionError::Exited { .. }),
        "{text}"
    );
    assert!(
        text.contains("exit status: 2") && text.contains("no such module: frob"),
        "{text}"
    );

    let err = attempt("print('{\"type\":\"register\",\"protocol\":2}', flush=True)\nimport sys\nsys.stdin.read()\n").await;
    assert!(
        matches!(err, ProcessExtensionError::ProtocolVersion { ref found, .. } if found == "2"),
        "{err}"
    );

    let err = attempt("print('starting up...')\nprint('{\"type\":\"result\",\"id\":1}', flush=True)\nimport sys\nsys.stdin.read()\n").await;
    assert!(
        matches!(err, ProcessExtensionError::Handshake { ref reason, .. } if reason.contains("\"result\"")),
        "{err}"
    );

    let err = attempt("print('{\"type\":\"register\",\"protocol\":1,\"events\":[\"on_everything\"]}', flush=True)\nimport sys\nsys.stdin.read()\n").await;
    assert!(
        matches!(err, ProcessExtensionError::InvalidRegistration { ref reason, .. } if reason.contains("on_everything")),
        "{err}"
    );

    let err = ProcessExtension::spawn(
        "missing",
        "/nonexistent/extension-program",
        [] as [&str; 0],
        options(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ProcessExtensionError::Spawn { .. }), "{err}");

    for file in ["extensions/gate.ts", "gate.js", "gate.mjs"] {
        let err = ProcessExtension::spawn("pi-ts", file, [] as [&str; 0], options())
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, ProcessExtensionError::TypeScriptExtension { .. }),
            "{text}"
        );
        assert!(
            text.contains("does not load pi's TypeScript extensions"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn shutdown_closes_stdin_then_signals_the_group() {
    // A well-behaved child ends when its stdin closes (not by a signal).
    let gate = bounded(
        20,
        ProcessExtension::start(
            "approval-gate",
            "python3",
            [gate_script()],
            ProcessExtensionOptions::new(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        bounded(10, gate.shutdown()).await.as_deref(),
        Some("exit status: 0")
    );

    // One that ignores its stdin and SIGTERM is killed, a grace after each.
    let stubborn = raw_child(
        "import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('{\"type\":\"register\",\"protocol\":1,\"events\":[\"tool_call\"]}', flush=True)\nwhile True:\n    time.sleep(1)\n",
    );
    let ext = start(
        "stubborn",
        &stubborn,
        ProcessExtensionOptions::new().with_shutdown_grace(Duration::from_millis(200)),
    )
    .await;
    let extension = ext.extension();
    let started = Instant::now();
    let status = bounded(10, ext.shutdown()).await;
    assert_eq!(status.as_deref(), Some("signal: 9 (SIGKILL)"));
    assert!(started.elapsed() >= Duration::from_millis(400));
    // A session set up with it afterwards fails its calls at once.
    let faux = FauxProvider::new();
    push_call(&faux, "echo", json!({"text": "x"}));
    let session = session(&faux, vec![extension], None);
    run(&session, "go").await;
    assert_eq!(
        tool_results(&session),
        [(
            "Extension failed, blocking execution: extension process was shut down".to_owned(),
            true
        )]
    );
}

#[tokio::test]
async fn an_abort_cancels_a_running_tool_in_the_child() {
    let c = child(
        r#"
@ext.tool("wait", "Waits until cancelled.", {"type": "object", "properties": {}})
def wait(params, ctx, update):
    update("waiting")
    # Each call lets the helper read what the host sent, `cancel` included.
    while not ctx.cancelled:
        ctx.get_state()
        time.sleep(0.02)
    raise Exception("stopped by the host")
"#,
    );
    let ext = spawn("waiter", &c, ProcessExtensionOptions::new()).await;
    let faux = FauxProvider::new();
    push_call(&faux, "wait", json!({}));
    let session = session(&faux, vec![ext], None);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    session.subscribe(move |e| {
        if let AgentSessionEvent::Agent(AgentEvent::ToolExecutionUpdate { .. }) = e {
            let _ = tx.send(());
        }
    });
    let s = session.clone();
    let running = tokio::spawn(async move { s.prompt("wait").await });
    bounded(10, rx.recv()).await;
    let started = Instant::now();
    session.abort();
    let outcome = bounded(10, running).await.unwrap().unwrap();
    assert!(
        matches!(outcome, pi_engine::agent::RunOutcome::Aborted),
        "{outcome:?}"
    );
    // Well within the agent's abort grace (5 s): the child heard the `cancel`.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        tool_results(&session),
        [("stopped by the host".to_owned(), true)]
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_extension_and_its_session_stops_the_child() {
    let ext = bounded(
        20,
        ProcessExtension::start(
            "approval-gate",
            "python3",
            [gate_script()],
            ProcessExtensionOptions::new(),
        ),
    )
    .await
    .unwrap();
    let pid = ext.pid().unwrap();
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("hi"));
    let session = session(&faux, vec![ext.extension()], None);
    run(&session, "hello").await;
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    drop(session);
    drop(ext);
    // Its stdin closes; it exits and is reaped.
    bounded(10, async {
        while Path::new(&format!("/proc/{pid}")).exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}
