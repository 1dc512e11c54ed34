//! `conformance extension-scenario <scenarios.json> <name>`: one scenario of
//! `shared/conformance/extensions/scenarios.json` (or of the crate's own,
//! `tests/fixtures/extensions/scenarios.json`) through an `AgentSession` with the Rust port
//! of the named pi example extension, pi's default built-in tools, a scripted UI answering
//! the extension's dialogs, and `mock_llm_server.py` as the model. Prints the transcript that
//! `extensions/run-pi-extension.mjs` prints for pi itself (see `extensions/README.md`).

#[path = "../pi_extensions/mod.rs"]
mod pi_extensions;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pi_engine::ThinkingLevel;
use pi_engine::agent::AgentEvent;
use pi_engine::agent_session::{
    AgentSession, AgentSessionEvent, AgentSessionSettings, SessionEvent,
};
use pi_engine::extensions::{ExtensionUi, NotifyKind};
use pi_engine::llm::ModelRegistry;
use pi_engine::session::SessionOptions;
use pi_engine::tools::BuiltinTools;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// How long a step may run, how long the session may take to settle after it, and how long
/// all the steps may take (under the comparer's 120 s, so that a transcript is printed).
const STEP_TIMEOUT: Duration = Duration::from_secs(60);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(90);
/// A step is over when the session is idle and nothing has happened for this long (pi's
/// driver: 400 ms).
const QUIET: Duration = Duration::from_millis(400);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Scenario {
    name: String,
    extension: String,
    #[serde(default)]
    files: Map<String, Value>,
    #[serde(default)]
    mock_script: Vec<Value>,
    #[serde(default)]
    steps: Vec<Value>,
    #[serde(default)]
    ui: Vec<Value>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What happened, as the transcript lists it, and when something last happened.
#[derive(Default)]
struct Log {
    events: Mutex<Vec<String>>,
    ui: Mutex<Vec<Value>>,
    last: Mutex<Option<Instant>>,
}

impl Log {
    fn touch(&self) {
        *lock(&self.last) = Some(Instant::now());
    }

    fn quiet_for(&self) -> Duration {
        lock(&self.last).map_or(Duration::MAX, |t| t.elapsed())
    }

    fn event(&self, label: String) {
        lock(&self.events).push(label);
        self.touch();
    }

    fn ui(&self, request: Value) {
        lock(&self.ui).push(request);
        self.touch();
    }
}

/// An event as pi's driver names it: the type, then the assistant event's type, the tool
/// name (and error flag), or the message's role.
fn event_label(event: &AgentSessionEvent) -> String {
    let mut label = event.kind().to_owned();
    if let Some(agent) = event.as_agent() {
        match agent {
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => {
                label.push(':');
                label.push_str(assistant_message_event.kind());
            }
            AgentEvent::ToolExecutionStart { tool_name, .. }
            | AgentEvent::ToolExecutionUpdate { tool_name, .. } => {
                label.push(':');
                label.push_str(tool_name);
            }
            AgentEvent::ToolExecutionEnd {
                tool_name,
                is_error,
                ..
            } => label.push_str(&format!(":{tool_name}:{is_error}")),
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                label.push(':');
                label.push_str(message.role());
            }
            _ => {}
        }
    }
    label
}

/// The UI of pi's RPC mode, scripted: every call recorded as its `extension_ui_request`,
/// dialogs answered from the scenario's list (`null`, or no answer left, cancels).
struct ScriptedUi {
    answers: Mutex<VecDeque<Value>>,
    log: Arc<Log>,
}

impl ScriptedUi {
    /// Records a dialog with the next answer, and returns the answer.
    fn ask(&self, mut request: Map<String, Value>) -> Value {
        let answer = lock(&self.answers).pop_front().unwrap_or(Value::Null);
        request.insert("answer".into(), answer.clone());
        self.log.ui(Value::Object(request));
        answer
    }

    fn value(answer: Value) -> Option<String> {
        match answer {
            Value::Null => None,
            Value::String(s) => Some(s),
            other => Some(other.to_string()),
        }
    }
}

fn request(method: &str, fields: &[(&str, Option<Value>)]) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("method".into(), Value::from(method));
    for (k, v) in fields {
        // pi's JSON leaves out what is undefined.
        if let Some(v) = v {
            map.insert((*k).to_owned(), v.clone());
        }
    }
    map
}

#[async_trait]
impl ExtensionUi for ScriptedUi {
    async fn select(&self, title: &str, options: &[String]) -> Option<String> {
        let answer = self.ask(request(
            "select",
            &[
                ("title", Some(json!(title))),
                ("options", Some(json!(options))),
            ],
        ));
        Self::value(answer)
    }

    async fn confirm(&self, title: &str, message: &str) -> bool {
        let answer = self.ask(request(
            "confirm",
            &[
                ("title", Some(json!(title))),
                ("message", Some(json!(message))),
            ],
        ));
        // pi's driver answers `!!answer`.
        match answer {
            Value::Null => false,
            Value::Bool(b) => b,
            Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
            Value::String(s) => !s.is_empty(),
            Value::Array(_) | Value::Object(_) => true,
        }
    }

    async fn input(&self, title: &str, placeholder: Option<&str>) -> Option<String> {
        let answer = self.ask(request(
            "input",
            &[
                ("title", Some(json!(title))),
                ("placeholder", placeholder.map(|p| json!(p))),
            ],
        ));
        Self::value(answer)
    }

    async fn editor(&self, title: &str, prefill: Option<&str>) -> Option<String> {
        let answer = self.ask(request(
            "editor",
            &[
                ("title", Some(json!(title))),
                ("prefill", prefill.map(|p| json!(p))),
            ],
        ));
        Self::value(answer)
    }

    fn notify(&self, message: &str, kind: Option<NotifyKind>) {
        self.log.ui(Value::Object(request(
            "notify",
            &[
                ("message", Some(json!(message))),
                ("notifyType", kind.map(|k| json!(k.as_str()))),
            ],
        )));
    }

    fn set_status(&self, key: &str, text: Option<&str>) {
        self.log.ui(Value::Object(request(
            "setStatus",
            &[
                ("statusKey", Some(json!(key))),
                ("statusText", text.map(|t| json!(t))),
            ],
        )));
    }

    fn set_widget(&self, key: &str, lines: Option<&[String]>) {
        self.log.ui(Value::Object(request(
            "setWidget",
            &[
                ("widgetKey", Some(json!(key))),
                ("widgetLines", lines.map(|l| json!(l))),
            ],
        )));
    }

    fn set_title(&self, title: &str) {
        self.log.ui(Value::Object(request(
            "setTitle",
            &[("title", Some(json!(title)))],
        )));
    }

    fn set_editor_text(&self, text: &str) {
        self.log.ui(Value::Object(request(
            "set_editor_text",
            &[("text", Some(json!(text)))],
        )));
    }
}

/// `mock_llm_server.py` on a free loopback port, killed when dropped.
struct MockServer {
    child: tokio::process::Child,
    port: u16,
}

impl MockServer {
    async fn start(script: &Path, mock_script: &[Value]) -> Result<MockServer, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let log = std::env::temp_dir().join(format!("ext-mock-{port}.jsonl"));
        let script_json = serde_json::to_string(mock_script).map_err(|e| e.to_string())?;
        let child = tokio::process::Command::new("python3")
            .arg(script)
            .env("MOCK_PORT", port.to_string())
            .env("MOCK_SCRIPT", script_json)
            .env("MOCK_DELAY_S", "0")
            .env("MOCK_LOG", log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", script.display()))?;
        let server = MockServer { child, port };
        // Ready when it accepts a connection (within 10 s).
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if Instant::now() > deadline {
                return Err(format!("the mock server did not listen on port {port}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(server)
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// pi's driver's `models.json`: `mock-anthropic`/`mock-claude` at the mock server.
fn models_json(port: u16) -> String {
    json!({"providers": {"mock-anthropic": {
        "baseUrl": format!("http://127.0.0.1:{port}"),
        "api": "anthropic-messages",
        "apiKey": "dummy",
        "models": [{
            "id": "mock-claude",
            "reasoning": true,
            "input": ["text"],
            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
            "contextWindow": 200000,
            "maxTokens": 8192,
        }],
    }}})
    .to_string()
}

/// A message as pi's driver normalizes it.
fn norm_message(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), m.get("role").cloned().unwrap_or(Value::Null));
    match m.get("content") {
        Some(Value::Array(blocks)) => {
            let blocks = blocks
                .iter()
                .map(|b| {
                    let kind = b.get("type").cloned().unwrap_or(Value::Null);
                    match kind.as_str() {
                        Some("text") => json!({"type": kind, "text": b.get("text")}),
                        Some("toolCall") => json!({"type": kind, "name": b.get("name"),
                            "arguments": b.get("arguments")}),
                        _ => json!({"type": kind}),
                    }
                })
                .collect();
            out.insert("content".into(), Value::Array(blocks));
        }
        Some(other) => {
            out.insert("content".into(), other.clone());
        }
        None => {}
    }
    for k in ["stopReason", "toolName", "isError", "customType", "display"] {
        if let Some(v) = m.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// The session file's lines as pi's driver normalizes them (none when there is no file).
fn entries(file: Option<PathBuf>) -> Value {
    let Some(file) = file.filter(|f| f.exists()) else {
        return json!([]);
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => return json!(format!("unreadable: {e}")),
    };
    let mut out = Vec::new();
    for line in text.trim().lines() {
        let e: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(err) => return json!(format!("unreadable: {err}")),
        };
        let mut o = Map::new();
        o.insert("type".into(), e.get("type").cloned().unwrap_or(Value::Null));
        let message = e.get("message").filter(|_| e["type"] == "message");
        if let Some(message) = message {
            o.insert(
                "role".into(),
                message.get("role").cloned().unwrap_or(Value::Null),
            );
        }
        for k in [
            "customType",
            "data",
            "label",
            "name",
            "thinkingLevel",
            "provider",
            "modelId",
        ] {
            if let Some(v) = e.get(k) {
                o.insert(k.into(), v.clone());
            }
        }
        if let Some(ct) = message
            .and_then(|m| m.get("customType"))
            .filter(|c| is_truthy(c))
        {
            o.insert("customType".into(), ct.clone());
        }
        out.push(Value::Object(o));
    }
    Value::Array(out)
}

fn is_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// The files under `dir`: path relative to `root` -> text, or `"<n> bytes"` from 2000 UTF-16
/// units up (pi's driver's `length`).
fn files(root: &Path, dir: &Path, out: &mut Map<String, Value>) -> Result<(), String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    names.sort();
    for path in names {
        if path.is_dir() {
            files(root, &path, out)?;
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let text = String::from_utf8_lossy(&bytes);
        let units = text.encode_utf16().count();
        let rel = path
            .strip_prefix(root)
            .map_err(|e| e.to_string())?
            .to_string_lossy()
            .into_owned();
        let value = if units < 2000 {
            Value::String(text.into_owned())
        } else {
            Value::String(format!("{units} bytes"))
        };
        out.insert(rel, value);
    }
    Ok(())
}

/// Waits until the session is idle and quiet (pi's driver's `settle`).
async fn settle(session: &AgentSession, log: &Log) -> Result<(), String> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let idle = !session.is_busy()
            && !session.is_streaming()
            && !session.is_compacting()
            && session.pending_message_count() == 0;
        if idle && log.quiet_for() > QUIET {
            return Ok(());
        }
    }
    Err(format!(
        "scenario did not settle in {} s",
        SETTLE_TIMEOUT.as_secs()
    ))
}

/// Runs the steps; the first failure stops them.
async fn run_steps(session: &AgentSession, log: &Log, steps: &[Value]) -> Result<(), String> {
    for step in steps {
        match step {
            Value::String(text) => {
                let outcome = tokio::time::timeout(STEP_TIMEOUT, session.prompt(text.as_str()))
                    .await
                    .map_err(|_| format!("prompt {text:?} did not finish"))?;
                if outcome.is_err() {
                    log.event("rejected:prompt".into());
                }
            }
            _ => {
                let kind = step
                    .pointer("/rpc/type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if kind != "new_session" {
                    return Err(format!("unsupported step {step}"));
                }
                let switched = tokio::time::timeout(STEP_TIMEOUT, session.new_session())
                    .await
                    .map_err(|_| "new_session did not finish".to_owned())?;
                match switched {
                    Ok(result) => {
                        log.event(format!("new_session:cancelled={}", result.cancelled()));
                    }
                    Err(_) => log.event("rejected:new_session".into()),
                }
            }
        }
        settle(session, log).await?;
    }
    Ok(())
}

/// `mock_llm_server.py`: beside the scenarios' folder, as pi's driver finds it for the shared
/// scenarios; else (the crate's own scenarios, `tests/fixtures/extensions/`) the shared suite's,
/// in `$PI_SHARED/conformance` or `../shared/conformance` beside the crate.
fn mock_server_script(scenarios: &Path) -> Result<PathBuf, String> {
    let beside = scenarios
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("mock_llm_server.py"));
    let shared = std::env::var_os("PI_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"))
        .join("conformance/mock_llm_server.py");
    beside
        .into_iter()
        .chain([shared])
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "no mock_llm_server.py beside {} nor in the shared suite (set PI_SHARED)",
                scenarios.display()
            )
        })
}

pub(crate) async fn scenario(scenarios: &str, name: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(scenarios).map_err(|e| format!("{scenarios}: {e}"))?;
    let all: Vec<Scenario> =
        serde_json::from_str(&text).map_err(|e| format!("{scenarios}: {e}"))?;
    let sc = all
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("no scenario {name}"))?;
    let stem = sc.extension.trim_end_matches(".ts");
    let scenarios_path = Path::new(scenarios)
        .canonicalize()
        .map_err(|e| format!("{scenarios}: {e}"))?;
    let mock = mock_server_script(&scenarios_path)?;
    let server = MockServer::start(&mock, &sc.mock_script).await?;

    let agent_dir = tempfile::Builder::new()
        .prefix("ext-agent-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let extension = match stem {
        // pi's driver gives pi an agent directory of its own, where tool-override keeps its
        // log: so does this one.
        "tool-override" => pi_extensions::tool_override::extension_logging_to(
            agent_dir
                .path()
                .join(pi_extensions::tool_override::LOG_NAME),
        ),
        _ => pi_extensions::by_name(stem).ok_or_else(|| {
            format!(
                "no port of {}; ported: {}",
                sc.extension,
                pi_extensions::NAMES.join(", ")
            )
        })?,
    };
    let cwd_dir = tempfile::Builder::new()
        .prefix("ext-cwd-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let cwd = cwd_dir.path().to_path_buf();
    for (path, content) in &sc.files {
        let target = cwd.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&target, content.as_str().unwrap_or_default())
            .map_err(|e| format!("{}: {e}", target.display()))?;
    }

    let registry =
        ModelRegistry::from_models_json(&models_json(server.port)).map_err(|e| e.to_string())?;
    let model = registry
        .find("mock-anthropic", "mock-claude")
        .cloned()
        .ok_or("models.json has no mock-claude")?;
    let log = Arc::new(Log::default());
    let ui = ScriptedUi {
        answers: Mutex::new(sc.ui.iter().cloned().collect()),
        log: log.clone(),
    };
    let sessions = SessionOptions::new()
        .with_session_dir(agent_dir.path().join("sessions"))
        .create(cwd.to_string_lossy());
    // pi's driver's settings.json: `{"defaultThinkingLevel": "high", …}` (a new session
    // starts at that level).
    let settings: AgentSessionSettings =
        serde_json::from_value(json!({"defaultThinkingLevel": "high"}))
            .map_err(|e| e.to_string())?;
    let session = AgentSession::builder(sessions)
        .registry(registry)
        .model(model)
        .settings(settings)
        .thinking_level(ThinkingLevel::High)
        .tools(BuiltinTools::new(&cwd).coding())
        .extension(extension)
        .extension_ui(ui)
        .build()
        .map_err(|e| e.to_string())?;
    let listener_log = log.clone();
    let subscription = session.subscribe(move |event| {
        // `extension_action` is this crate's own event (an extension blocked, transformed,
        // handled or cancelled something): pi has no such event, so its transcript has none.
        if !matches!(
            event.as_session(),
            Some(SessionEvent::ExtensionAction { .. })
        ) {
            listener_log.event(event_label(event));
        }
    });

    let outcome = tokio::time::timeout(SCENARIO_TIMEOUT, run_steps(&session, &log, &sc.steps))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "scenario did not finish in {} s",
                SCENARIO_TIMEOUT.as_secs()
            ))
        });
    if outcome.is_err() {
        session.abort();
        let _ = tokio::time::timeout(Duration::from_secs(5), session.wait_for_idle()).await;
    }
    subscription.unsubscribe();
    server.stop().await;

    let mut out = Map::new();
    if let Err(failure) = &outcome {
        out.insert("failure".into(), json!(failure));
    }
    out.insert("sessionName".into(), json!(session.session_name()));
    let messages: Vec<Value> = session
        .messages()
        .iter()
        .map(|m| serde_json::to_value(m).map(|v| norm_message(&v)))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    out.insert("messages".into(), Value::Array(messages));
    // pi's driver drops repeats of the same update.
    let mut events: Vec<String> = std::mem::take(&mut *lock(&log.events));
    events.dedup_by(|later, earlier| {
        later == earlier
            && (later.starts_with("message_update") || later.starts_with("tool_execution_update"))
    });
    out.insert("events".into(), json!(events));
    out.insert(
        "ui".into(),
        Value::Array(std::mem::take(&mut *lock(&log.ui))),
    );
    out.insert("entries".into(), entries(session.session_file()));
    let mut tree = Map::new();
    files(&cwd, &cwd, &mut tree)?;
    out.insert("files".into(), Value::Object(tree));
    drop(session);

    let text = serde_json::to_string_pretty(&Value::Object(out)).map_err(|e| e.to_string())?;
    println!("{text}");
    outcome
}
