//! The Agent Client Protocol (`pi-engine --mode acp`): editors (Zed, JetBrains, Neovim,
//! Emacs, …) run the agent as a subprocess and talk JSON-RPC 2.0 to it over stdio,
//! one message per line, with nothing else on stdout.
//!
//! Built on [`AgentSession`] directly, not as a translation of the RPC mode's lines, with
//! the wire types of the `agent-client-protocol-schema` crate (protocol version 1):
//!
//! * `initialize` answers with protocol version 1, `loadSession`, image and embedded-context
//!   prompts, no MCP transports beyond stdio, and one auth method (`api-key`: a key in the
//!   environment or `auth.json`; `authenticate` checks it is there now).
//! * `session/new` builds a session in the client's `cwd` (pi's project settings, resources
//!   and session directory for that directory); its id is the pi session's id, so
//!   `session/load` reopens it later, replaying the conversation as `session/update`s. The
//!   MCP servers the client passes reach the factory in the `mcpServers` shape
//!   ([`AcpSessionSetup::mcp_servers`]); what goes wrong without stopping the session is
//!   reported ([`AcpSessionSetup::warn`]: a `notice` when the client takes notices, and
//!   stderr).
//! * `session/prompt` runs the prompt (text, images, resource links as `@uri`, embedded
//!   resources as context blocks) and answers with the stop reason: `end_turn`,
//!   `max_tokens`, `max_turn_requests` (the turn limit), `refusal`, `cancelled`. A failed
//!   model call is an error response with the provider's message; a second prompt waits for
//!   the first.
//! * Updates: `agent_message_chunk` and `agent_thought_chunk` as text streams, a `tool_call`
//!   when the model has finished writing a call (pending: it may still need approval), its
//!   `tool_call_update`s (in progress, partial output, then completed or failed with the
//!   result), with `write`/`edit` changes as structured diffs (`path`, `oldText`,
//!   `newText`), file locations for the editor to follow, and the call's raw input and
//!   output.
//! * `session/cancel` aborts the run and answers open permission requests as cancelled; the
//!   prompt then answers `cancelled`, as the protocol asks, whatever the tools did.
//! * Extensions' approval dialogs become `session/request_permission`: `confirm` offers
//!   Allow / Reject about the tool call being prepared, `select` offers its choices (kinds
//!   from their words: "Block" is a reject). A checklist widget (pi's plan-mode todos) is
//!   sent as the session's `plan`.
//! * When the client offers `fs.readTextFile` / `fs.writeTextFile`, the tools read and write
//!   text files through the editor (unsaved buffers included).
//!
//! Not supported: the client's terminals (`bash` runs locally and streams its output into
//! the tool call), `session/set_mode`, free-text extension dialogs (`input`, `editor`:
//! answered as cancelled).

mod fs;
mod peer;
mod ui;
mod updates;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;

use self::peer::{Peer, internal};
use self::ui::AcpUi;
use self::updates::Translator;
use super::rpc::framing::{Line, LineReader};
use crate::agent::{AgentError, PromptInput, RunOutcome};
use crate::agent_session::{AgentSession, AgentSessionError, JsonLinesWriter, SessionSubscription};
use crate::extensions::{ExtensionUi, InputSource};
use crate::llm::message::{ImageContent, StopReason};
use crate::tools::FileSystem;

/// The longest input line accepted: 128 MiB (a prompt's images are in it).
const MAX_LINE_BYTES: usize = 128 * 1024 * 1024;

/// How long the end of the mode waits for the sessions to shut down.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What [`run`] hands the session factory for `session/new` and `session/load`: the
/// directory, the session to reopen, and the pieces the session must be built with.
pub struct AcpSessionSetup {
    cwd: PathBuf,
    load: Option<String>,
    ui: Arc<dyn ExtensionUi>,
    fs: Option<Arc<dyn FileSystem>>,
    mcp_servers: serde_json::Map<String, Value>,
    warnings: Mutex<Vec<String>>,
}

impl fmt::Debug for AcpSessionSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcpSessionSetup")
            .field("cwd", &self.cwd)
            .field("load", &self.load)
            .field("client_fs", &self.fs.is_some())
            .finish()
    }
}

impl AcpSessionSetup {
    /// The session's working directory (absolute, as the protocol requires).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// For `session/load`: the id of the session to reopen (a pi session id); `None` for a
    /// new session.
    pub fn session_to_load(&self) -> Option<&str> {
        self.load.as_deref()
    }

    /// The extension UI to build the session with
    /// ([`AgentSessionBuilder::extension_ui_arc`](crate::agent_session::AgentSessionBuilder::extension_ui_arc)):
    /// approval dialogs become permission requests to the editor.
    pub fn extension_ui(&self) -> Arc<dyn ExtensionUi> {
        self.ui.clone()
    }

    /// The file system the built-in tools should use
    /// ([`BuiltinTools::with_fs`](crate::tools::BuiltinTools::with_fs)) when the client
    /// offers its own; `None`: the local disk.
    pub fn file_system(&self) -> Option<Arc<dyn FileSystem>> {
        self.fs.clone()
    }

    /// The MCP servers the client passed, in the `mcpServers` shape (`{"name": {"command",
    /// "args", "env"}}` or `{"name": {"url", "headers"}}`): start them for the session
    /// ([`McpManager`](crate::mcp::McpManager) with feature `mcp`) or report them with
    /// [`warn`](Self::warn).
    pub fn mcp_servers(&self) -> &serde_json::Map<String, Value> {
        &self.mcp_servers
    }

    /// Tells the client something went wrong that does not stop the session (a server that
    /// did not start): a `notice` when it takes them, a warning on stderr otherwise.
    pub fn warn(&self, text: String) {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text);
    }
}

/// Why the factory could not make a session; each becomes the JSON-RPC error the protocol
/// names for it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AcpSetupError {
    /// The model's provider has no credentials (`auth_required`, -32000).
    NeedsAuth(String),
    /// `session/load` of a session that does not exist (`resource_not_found`, -32002).
    NotFound(String),
    /// Anything else (`internal_error`, -32603), e.g. a corrupt settings file.
    Failed(String),
}

impl fmt::Display for AcpSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AcpSetupError::NeedsAuth(m) | AcpSetupError::NotFound(m) | AcpSetupError::Failed(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for AcpSetupError {}

type Factory = Arc<
    dyn Fn(Arc<AcpSessionSetup>) -> BoxFuture<'static, Result<AgentSession, AcpSetupError>>
        + Send
        + Sync,
>;

/// How [`run`] is set up: the agent's name and version in `initialize`, how credentials are
/// checked for `authenticate`, and a signal to stop on.
pub struct AcpOptions {
    name: String,
    version: String,
    has_auth: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
    stop: Option<BoxFuture<'static, u8>>,
}

impl fmt::Debug for AcpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcpOptions")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("stop", &self.stop.is_some())
            .finish()
    }
}

impl Default for AcpOptions {
    fn default() -> Self {
        AcpOptions {
            name: "pi-engine".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            has_auth: None,
            stop: None,
        }
    }
}

impl AcpOptions {
    /// `pi-engine` and this crate's version; `authenticate` always succeeds; no stop signal.
    pub fn new() -> Self {
        AcpOptions::default()
    }

    /// The name and version `initialize` reports (`agentInfo`).
    #[must_use]
    pub fn with_agent_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// What `authenticate` checks: true when the credentials are there now (a key may have
    /// been added since `session/new` failed with `auth_required`). It runs on the blocking
    /// pool, so it may read files.
    #[must_use]
    pub fn with_auth_check(mut self, has_auth: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.has_auth = Some(Arc::new(has_auth));
        self
    }

    /// Ends the mode, as the end of the input does, when `stop` resolves; its value is the
    /// exit code (e.g. 143 for `SIGTERM`).
    #[must_use]
    pub fn stop_on(mut self, stop: impl Future<Output = u8> + Send + 'static) -> Self {
        self.stop = Some(Box::pin(stop));
        self
    }
}

/// How [`run`] ended.
#[derive(Debug)]
#[non_exhaustive]
#[must_use]
pub struct AcpExit {
    /// The stop signal's code, if [`AcpOptions::stop_on`] ended the mode.
    pub stopped: Option<u8>,
    /// The input's error, if reading it failed.
    pub input: Option<Arc<std::io::Error>>,
    /// The output's first error, if writing failed.
    pub output: Result<(), crate::agent_session::JsonLinesError>,
}

impl AcpExit {
    /// The process's exit code: the stop signal's, 1 when reading or writing failed, else 0.
    pub fn exit_code(&self) -> u8 {
        match (self.stopped, &self.input, &self.output) {
            (Some(code), _, _) => code,
            (None, Some(_), _) | (None, None, Err(_)) => 1,
            (None, None, Ok(())) => 0,
        }
    }
}

/// One session the client opened.
struct Live {
    session: AgentSession,
    ui: Arc<AcpUi>,
    /// Prompts run one at a time.
    turn: tokio::sync::Mutex<()>,
    /// `session/cancel` arrived during the running prompt.
    cancelled: AtomicBool,
    _events: SessionSubscription,
}

struct Agent {
    peer: Arc<Peer>,
    factory: Factory,
    has_auth: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
    info: (String, String),
    client: Mutex<acp::ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
}

/// Runs the ACP agent: reads the client's messages from `input`, writes to `output`, and
/// makes sessions with `factory` (given the client's directory and the UI and file system
/// to build them with), until the input ends or [`AcpOptions::stop_on`] fires; then shuts
/// every session down and flushes the output. See the [module docs](self) for the protocol.
///
/// ```
/// use pi_engine::agent_session::AgentSession;
/// use pi_engine::cli::acp::{self, AcpOptions, AcpSetupError};
/// use pi_engine::providers::faux::FauxProvider;
/// use pi_engine::session::SessionManager;
/// use pi_engine::ApiProvider;
/// use tokio::io::AsyncReadExt;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let faux = FauxProvider::new();
/// let factory = move |setup: std::sync::Arc<acp::AcpSessionSetup>| {
///     let stream = faux.clone();
///     let model = faux.model();
///     async move {
///         AgentSession::builder(SessionManager::in_memory(setup.cwd().to_string_lossy()))
///             .default_model(model)
///             .stream_fn(move |m, c, o| stream.stream(m, c, o))
///             .extension_ui_arc(setup.extension_ui())
///             .build()
///             .map_err(|e| AcpSetupError::Failed(e.to_string()))
///     }
/// };
/// let input: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}
/// {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/project","mcpServers":[]}}
/// "#; // a program: tokio::io::stdin()
/// let (output, mut client) = tokio::io::duplex(1 << 16); // a program: tokio::io::stdout()
/// let exit = acp::run(factory, input, output, AcpOptions::new()).await;
/// assert_eq!(exit.exit_code(), 0);
///
/// let mut text = String::new();
/// client.read_to_string(&mut text).await.unwrap();
/// let lines: Vec<serde_json::Value> =
///     text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
/// assert_eq!(lines[0]["result"]["protocolVersion"], 1);
/// assert!(lines[1]["result"]["sessionId"].is_string());
/// # }
/// ```
///
/// # Panics
///
/// Outside a Tokio runtime.
///
/// # Cancel safety
///
/// Dropping the future stops reading and drops the requests being handled (their runs stop
/// where they are) without shutting the sessions down; what was written stays written.
pub async fn run<F, Fut, R, W>(factory: F, input: R, output: W, options: AcpOptions) -> AcpExit
where
    F: Fn(Arc<AcpSessionSetup>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentSession, AcpSetupError>> + Send + 'static,
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let peer = Peer::new(Arc::new(JsonLinesWriter::new(output)));
    let agent = Arc::new(Agent {
        peer: peer.clone(),
        factory: Arc::new(move |setup| Box::pin(factory(setup))),
        has_auth: options.has_auth,
        info: (options.name, options.version),
        client: Mutex::new(acp::ClientCapabilities::new()),
        sessions: Mutex::new(HashMap::new()),
    });
    let mut reader = LineReader::new(input, MAX_LINE_BYTES);
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut stop = options.stop;
    let mut exit = AcpExit {
        stopped: None,
        input: None,
        output: Ok(()),
    };
    loop {
        tokio::select! {
            line = reader.next_line() => match line {
                Ok(Some(Line::Text(text))) => {
                    if let Some(task) = agent.handle_line(&text) {
                        tasks.spawn(task);
                    }
                }
                Ok(Some(Line::TooLong)) => {
                    peer.respond(&Value::Null, Err(acp::Error::parse_error().data(json!("line too long"))));
                }
                Ok(None) => break,
                Err(e) => {
                    exit.input = Some(Arc::new(e));
                    break;
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            code = stopped(&mut stop) => {
                exit.stopped = Some(code);
                break;
            }
        }
    }
    drop(reader);
    // Nobody is left to answer: requests to the client fail, runs are aborted.
    peer.close();
    let sessions: Vec<Arc<Live>> = agent
        .sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .drain()
        .map(|(_, live)| live)
        .collect();
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    for live in &sessions {
        live.ui.cancel_dialogs();
        live.session.abort();
    }
    let drained = tokio::time::timeout_at(deadline, async {
        while tasks.join_next().await.is_some() {}
    })
    .await
    .is_ok();
    if !drained {
        tracing::warn!("ACP mode: requests did not stop in time; dropping them");
        tasks.shutdown().await;
    }
    for live in sessions {
        if tokio::time::timeout_at(deadline, live.session.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("ACP mode: a session did not shut down in time");
        }
    }
    exit.output = peer.finish().await;
    exit
}

async fn stopped(stop: &mut Option<BoxFuture<'static, u8>>) -> u8 {
    match stop {
        Some(stop) => stop.await,
        None => std::future::pending().await,
    }
}

impl Agent {
    /// One input line: a request (answered on a task of its own), a notification (handled
    /// here, so a cancel is not queued behind anything), or the answer to one of ours.
    fn handle_line(self: &Arc<Self>, text: &str) -> Option<BoxFuture<'static, ()>> {
        if text.trim().is_empty() {
            return None;
        }
        let message: Value = match serde_json::from_str(text) {
            Ok(Value::Object(m)) => Value::Object(m),
            Ok(_) => {
                self.peer
                    .respond(&Value::Null, Err(acp::Error::invalid_request()));
                return None;
            }
            Err(e) => {
                self.peer.respond(
                    &Value::Null,
                    Err(acp::Error::parse_error().data(json!(e.to_string()))),
                );
                return None;
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match (method, id) {
            (Some(method), Some(id)) => {
                let agent = self.clone();
                let method = method.to_owned();
                Some(Box::pin(async move {
                    let result = agent.request(&method, params).await;
                    agent.peer.respond(&id, result);
                }))
            }
            (Some(method), None) => {
                self.notification(method, &params);
                None
            }
            (None, Some(_)) => {
                self.peer.resolve(&message);
                None
            }
            (None, None) => {
                self.peer
                    .respond(&Value::Null, Err(acp::Error::invalid_request()));
                None
            }
        }
    }

    fn notification(&self, method: &str, params: &Value) {
        match method {
            "session/cancel" => {
                let Ok(cancel) = serde_json::from_value::<acp::CancelNotification>(params.clone())
                else {
                    return;
                };
                if let Some(live) = self.live(&cancel.session_id) {
                    live.cancelled.store(true, Ordering::SeqCst);
                    live.ui.cancel_dialogs();
                    live.session.abort();
                }
            }
            other => tracing::debug!(method = other, "ACP: notification ignored"),
        }
    }

    fn live(&self, id: &acp::SessionId) -> Option<Arc<Live>> {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&*id.0)
            .cloned()
    }

    async fn request(self: &Arc<Self>, method: &str, params: Value) -> Result<Value, acp::Error> {
        fn parse<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, acp::Error> {
            serde_json::from_value(params)
                .map_err(|e| acp::Error::invalid_params().data(json!(e.to_string())))
        }
        fn answer<T: serde::Serialize>(value: T) -> Result<Value, acp::Error> {
            serde_json::to_value(value).map_err(internal)
        }
        match method {
            "initialize" => answer(self.initialize(parse(params)?)),
            "authenticate" => {
                let _: acp::AuthenticateRequest = parse(params)?;
                // The check reads files: off the async threads.
                let ok = match self.has_auth.clone() {
                    Some(check) => tokio::task::spawn_blocking(move || check())
                        .await
                        .unwrap_or(false),
                    None => true,
                };
                if ok {
                    answer(acp::AuthenticateResponse::new())
                } else {
                    Err(acp::Error::auth_required().data(json!(
                        "no API key for the model's provider: set its environment variable or add it to auth.json"
                    )))
                }
            }
            "session/new" => {
                let request: acp::NewSessionRequest = parse(params)?;
                let live = self.open(&request.cwd, None, &request.mcp_servers).await?;
                answer(acp::NewSessionResponse::new(live))
            }
            "session/load" => {
                let request: acp::LoadSessionRequest = parse(params)?;
                self.open(
                    &request.cwd,
                    Some(&request.session_id),
                    &request.mcp_servers,
                )
                .await?;
                answer(acp::LoadSessionResponse::new())
            }
            "session/prompt" => answer(self.prompt(parse(params)?).await?),
            _ => Err(acp::Error::method_not_found().data(json!(method))),
        }
    }

    fn initialize(&self, request: acp::InitializeRequest) -> acp::InitializeResponse {
        *self.client.lock().unwrap_or_else(|e| e.into_inner()) = request.client_capabilities;
        let capabilities = acp::AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                acp::PromptCapabilities::new()
                    .image(true)
                    .embedded_context(true),
            );
        // pi's credentials: a key in the environment or auth.json (OAuth logins are not
        // supported), checked again by `authenticate`.
        let method = acp::AuthMethod::Agent(
            acp::AuthMethodAgent::new("api-key", "API key").description(
                "Set the provider's API key in its environment variable or in ~/.pi/agent/auth.json, then authenticate",
            ),
        );
        acp::InitializeResponse::new(agent_client_protocol_schema::ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .auth_methods(vec![method])
            .agent_info(acp::Implementation::new(
                self.info.0.clone(),
                self.info.1.clone(),
            ))
    }

    /// `session/new` (`load: None`) and `session/load`: builds the session, hooks its
    /// events to the client, and for a load replays the conversation first.
    async fn open(
        self: &Arc<Self>,
        cwd: &Path,
        load: Option<&acp::SessionId>,
        mcp_servers: &[acp::McpServer],
    ) -> Result<acp::SessionId, acp::Error> {
        if !cwd.is_absolute() {
            return Err(acp::Error::invalid_params().data(json!("cwd must be an absolute path")));
        }
        let client = self
            .client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let current = Arc::new(Mutex::new(None));
        let ui = Arc::new(AcpUi::new(self.peer.clone(), current.clone()));
        let bound = Arc::new(OnceLock::new());
        let fs = (client.fs.read_text_file || client.fs.write_text_file).then(|| {
            Arc::new(fs::AcpFs::new(self.peer.clone(), bound.clone(), &client.fs))
                as Arc<dyn FileSystem>
        });
        let setup = Arc::new(AcpSessionSetup {
            cwd: cwd.to_owned(),
            load: load.map(|id| id.0.to_string()),
            ui: ui.clone(),
            fs,
            mcp_servers: mcp_config(mcp_servers),
            warnings: Mutex::new(Vec::new()),
        });
        let made = (self.factory)(setup.clone()).await;
        let warnings =
            std::mem::take(&mut *setup.warnings.lock().unwrap_or_else(|e| e.into_inner()));
        let session = made.map_err(|e| match e {
            AcpSetupError::NeedsAuth(m) => acp::Error::auth_required().data(json!(m)),
            AcpSetupError::NotFound(m) => acp::Error::resource_not_found(None).data(json!(m)),
            AcpSetupError::Failed(m) => acp::Error::new(-32603, m),
        })?;
        // A loaded session answers to the id the client knows it by.
        let id = load
            .cloned()
            .unwrap_or_else(|| acp::SessionId::new(session.session_id()));
        ui.bind(id.clone());
        let _ = bound.set(id.clone());

        if load.is_some() {
            let cwd_text = session.with_session_manager(|sm| PathBuf::from(sm.cwd()));
            for update in updates::replay(&session.messages(), &cwd_text) {
                self.peer.update(&id, update);
            }
        }
        let events = {
            let (peer, id) = (self.peer.clone(), id.clone());
            let translator = Mutex::new(Translator::new(cwd));
            session.subscribe(move |event| {
                let updates = translator
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .updates(event);
                for update in updates {
                    track(&current, &update);
                    peer.update(&id, update);
                }
            })
        };
        for text in warnings {
            self.warn(&id, &client, text);
        }
        let live = Arc::new(Live {
            session: session.clone(),
            ui,
            turn: tokio::sync::Mutex::new(()),
            cancelled: AtomicBool::new(false),
            _events: events,
        });
        // pi's `session_start` for the extensions, before the first prompt.
        let starting = session.clone();
        tokio::spawn(async move { starting.start_extensions().await });
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.0.to_string(), live);
        Ok(id)
    }

    /// A warning about the session: a `notice` when the client takes them, and stderr.
    fn warn(&self, id: &acp::SessionId, client: &acp::ClientCapabilities, text: String) {
        // Logs reach stderr only with a subscriber; a person must see this one.
        eprintln!("Warning: {text}");
        if client.session.as_ref().is_some_and(|s| s.notices.is_some()) {
            self.peer.update(
                id,
                acp::SessionUpdate::Notice(
                    acp::Notice::new(acp::NoticeSeverity::Warning, "pi-engine").description(text),
                ),
            );
        }
    }

    async fn prompt(&self, request: acp::PromptRequest) -> Result<acp::PromptResponse, acp::Error> {
        let live = self
            .live(&request.session_id)
            .ok_or_else(|| acp::Error::session_not_found(request.session_id.clone()))?;
        let input = prompt_input(&request.prompt);
        let _turn = live.turn.lock().await;
        live.cancelled.store(false, Ordering::SeqCst);
        let outcome = live.session.prompt_from(input, InputSource::Rpc).await;
        if live.cancelled.swap(false, Ordering::SeqCst) {
            return Ok(acp::PromptResponse::new(acp::StopReason::Cancelled));
        }
        let reason = match outcome {
            Ok(RunOutcome::Completed(StopReason::Length)) => acp::StopReason::MaxTokens,
            Ok(RunOutcome::Completed(StopReason::ToolUse)) => acp::StopReason::MaxTurnRequests,
            Ok(RunOutcome::Completed(StopReason::Unknown(r))) if &*r == "refusal" => {
                acp::StopReason::Refusal
            }
            Ok(RunOutcome::Aborted) => acp::StopReason::Cancelled,
            Ok(RunOutcome::Failed(e)) => return Err(acp::Error::new(-32603, e.to_string())),
            Ok(_) => acp::StopReason::EndTurn,
            Err(AgentSessionError::NoApiKey { provider }) => {
                return Err(acp::Error::auth_required()
                    .data(json!(format!("No API key found for {provider}"))));
            }
            Err(AgentSessionError::Agent(AgentError::AlreadyProcessing)) => {
                return Err(acp::Error::new(
                    -32603,
                    "the agent is already running a prompt",
                ));
            }
            Err(e) => return Err(acp::Error::new(-32603, e.to_string())),
        };
        Ok(acp::PromptResponse::new(reason))
    }
}

/// Keeps the tool call being prepared (the subject of an approval dialog) up to date.
fn track(current: &Mutex<Option<acp::ToolCall>>, update: &acp::SessionUpdate) {
    let mut current = current.lock().unwrap_or_else(|e| e.into_inner());
    match update {
        acp::SessionUpdate::ToolCall(call) => *current = Some(call.clone()),
        acp::SessionUpdate::ToolCallUpdate(u)
            if u.fields.status == Some(acp::ToolCallStatus::InProgress)
                && current
                    .as_ref()
                    .is_none_or(|c| c.tool_call_id != u.tool_call_id) =>
        {
            *current = Some(acp::ToolCall::new(
                u.tool_call_id.clone(),
                u.fields.title.clone().unwrap_or_default(),
            ));
        }
        acp::SessionUpdate::ToolCallUpdate(u)
            if matches!(
                u.fields.status,
                Some(acp::ToolCallStatus::Completed | acp::ToolCallStatus::Failed)
            ) && current
                .as_ref()
                .is_some_and(|c| c.tool_call_id == u.tool_call_id) =>
        {
            *current = None;
        }
        _ => {}
    }
}

/// The client's MCP servers in the `mcpServers` shape [`AcpSessionSetup::mcp_servers`] gives.
fn mcp_config(servers: &[acp::McpServer]) -> serde_json::Map<String, Value> {
    let pairs = |items: Vec<(String, String)>| -> Value {
        Value::Object(
            items
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect(),
        )
    };
    let mut out = serde_json::Map::new();
    for server in servers {
        let (name, config) = match server {
            acp::McpServer::Stdio(s) => (
                s.name.clone(),
                json!({
                    "command": s.command,
                    "args": s.args,
                    "env": pairs(s.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect()),
                }),
            ),
            acp::McpServer::Http(s) => (
                s.name.clone(),
                json!({
                    "url": s.url,
                    "headers": pairs(s.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect()),
                }),
            ),
            acp::McpServer::Sse(s) => (s.name.clone(), json!({"url": s.url, "type": "sse"})),
            _ => continue,
        };
        out.insert(name, config);
    }
    out
}

/// A prompt's content blocks as pi's input: texts run together as the client split them,
/// images attached, a resource link as `@path` (its `file://` stripped), an embedded text
/// resource as a `<context>` block of its own.
fn prompt_input(blocks: &[acp::ContentBlock]) -> PromptInput {
    let mut text = String::new();
    let mut images = Vec::new();
    let spaced = |text: &mut String, piece: &str| {
        if !text.is_empty() && !text.ends_with(char::is_whitespace) {
            text.push(' ');
        }
        text.push_str(piece);
    };
    for block in blocks {
        match block {
            acp::ContentBlock::Text(t) => text.push_str(&t.text),
            acp::ContentBlock::Image(i) => {
                images.push(ImageContent::new(i.data.clone(), i.mime_type.clone()));
            }
            acp::ContentBlock::ResourceLink(link) => {
                let target = link.uri.strip_prefix("file://").unwrap_or(&link.uri);
                spaced(&mut text, &format!("@{target} "));
            }
            acp::ContentBlock::Resource(acp::EmbeddedResource {
                resource: acp::EmbeddedResourceResource::TextResourceContents(r),
                ..
            }) => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "<context ref=\"{}\">\n{}\n</context>\n",
                    r.uri, r.text
                ));
            }
            _ => {}
        }
    }
    let text = text.trim_end().to_owned();
    PromptInput::Text { text, images }
}

#[cfg(test)]
mod tests;
