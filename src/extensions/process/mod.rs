//! Extensions that run as child processes and speak JSON lines on stdio
//! (`docs/extension-protocol.md`, protocol 1), so that an extension can be written in any
//! language.
//!
//! [`ProcessExtension::spawn`] starts the child in a process group of its own, does the
//! handshake (the child registers its events, tools, commands, flags and shortcuts) and
//! returns an [`Extension`] whose handlers forward over the connection. The host keeps every
//! rule of the extension API: deadlines (a dialog's wait not counted), failures as
//! `extension_error`, a failing `tool_call` blocking. A child that hangs, crashes, or writes
//! what is not the protocol never makes the session hang or panic.

mod calls;
mod conn;
mod wire;

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::io::BufReader;
use tokio_util::sync::CancellationToken;

use self::conn::{Conn, Lifeline};
use self::wire::{CommandSpec, Registration, ShortcutSpec, ToolSpec};
use super::api::{DEFAULT_HANDLER_TIMEOUT, Extension, ExtensionApi, HandlerError, HandlerResult};
use super::context::ExtensionContext;
use super::deadline::{UiClock, with_deadline};
use crate::agent::{AgentTool, AgentToolResult, ToolError, ToolExecutionMode, ToolUpdates};
use crate::llm::message::Tool;

/// The protocol version this host speaks (`"protocol": 1` in `hello` and `register`).
pub const PROTOCOL_VERSION: u64 = 1;

/// The longest line either side may write, unless
/// [`ProcessExtensionOptions::with_max_line_bytes`] says otherwise: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How a process extension is run: its deadlines, the handshake's timeout, the shutdown
/// grace, the line cap, its directory and environment.
///
/// ```
/// use std::time::Duration;
/// use pi_engine::extensions::ProcessExtensionOptions;
///
/// let options = ProcessExtensionOptions::new()
///     .with_timeout(Duration::from_secs(10))
///     .with_handshake_timeout(Duration::from_secs(5))
///     .with_env("PYTHONDONTWRITEBYTECODE", "1");
/// assert_eq!(options.timeout, Duration::from_secs(10));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProcessExtensionOptions {
    /// The deadline of each handler call (`event`, `command`, `complete`, `shortcut`),
    /// dialog time not counted. Default: [`DEFAULT_HANDLER_TIMEOUT`], 30 s.
    pub timeout: Duration,
    /// The deadline of each tool execution (dialog time not counted). Default: none, like
    /// every tool (an abort stops it).
    pub tool_timeout: Option<Duration>,
    /// How long the child has to register after it starts. Default: 10 s.
    pub handshake_timeout: Duration,
    /// At shutdown, the time between closing the child's stdin and `SIGTERM` to its process
    /// group, and between `SIGTERM` and `SIGKILL`. Default: 2 s.
    pub shutdown_grace: Duration,
    /// The longest line the child may write; a longer one stops it. Default:
    /// [`DEFAULT_MAX_LINE_BYTES`].
    pub max_line_bytes: usize,
    /// The child's working directory (default: this process's).
    pub cwd: Option<PathBuf>,
    /// Variables added to the child's environment.
    pub env: Vec<(OsString, OsString)>,
}

impl Default for ProcessExtensionOptions {
    fn default() -> Self {
        ProcessExtensionOptions {
            timeout: DEFAULT_HANDLER_TIMEOUT,
            tool_timeout: None,
            handshake_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(2),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            cwd: None,
            env: Vec::new(),
        }
    }
}

impl ProcessExtensionOptions {
    /// The defaults.
    pub fn new() -> Self {
        ProcessExtensionOptions::default()
    }

    /// Sets the handler deadline.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets a deadline on each tool execution.
    #[must_use]
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Sets the handshake's timeout.
    #[must_use]
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Sets the shutdown grace.
    #[must_use]
    pub fn with_shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Sets the line cap (at least 1 KiB).
    #[must_use]
    pub fn with_max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes.max(1024);
        self
    }

    /// Sets the child's working directory.
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Adds a variable to the child's environment.
    #[must_use]
    pub fn with_env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// Why a process extension could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessExtensionError {
    /// The command is a pi TypeScript or JavaScript extension file.
    #[error(
        "{} is a pi TypeScript/JavaScript extension: pi-engine does not load pi's TypeScript \
         extensions. Run a program that speaks the process extension protocol instead \
         (docs/extension-protocol.md, in any language; examples/extensions/pi_extension.py is \
         a stdlib-only Python helper), or write the extension in Rust with Extension::new",
        path.display()
    )]
    TypeScriptExtension {
        /// The file given as the command.
        path: PathBuf,
    },
    /// The program could not be started.
    #[error("could not start extension {name:?} ({command}): {source}")]
    Spawn {
        /// The extension's name.
        name: String,
        /// The command.
        command: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// No `register` came within the handshake's timeout.
    #[error("extension {name:?} did not register within {}", humantime::format_duration(*timeout))]
    HandshakeTimeout {
        /// The extension's name.
        name: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The child exited (or closed its output) before registering.
    #[error("extension {name:?} exited before registering: {reason}")]
    Exited {
        /// The extension's name.
        name: String,
        /// Its exit status and last error output.
        reason: String,
    },
    /// The child speaks another version of the protocol.
    #[error(
        "extension {name:?} speaks protocol {found}; this host speaks protocol {PROTOCOL_VERSION}"
    )]
    ProtocolVersion {
        /// The extension's name.
        name: String,
        /// The version it sent.
        found: String,
    },
    /// The child's first message was not `register`, or not a line of the protocol.
    #[error("extension {name:?} broke the handshake: {reason}")]
    Handshake {
        /// The extension's name.
        name: String,
        /// What was wrong.
        reason: String,
    },
    /// The registration is invalid (an unknown event, a tool without a schema, …).
    #[error("extension {name:?} registered something invalid: {reason}")]
    InvalidRegistration {
        /// The extension's name.
        name: String,
        /// What was wrong.
        reason: String,
    },
}

/// Why one request to a process extension failed: its text is what the handler's
/// `extension_error` says, or the tool's error result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessCallError {
    /// The child exited, crashed, closed its output, broke the line cap, or was shut down:
    /// this request and every later one fail at once.
    #[error("{reason}")]
    Exited {
        /// What happened (with the exit status and its last error output, when known).
        reason: String,
    },
    /// The child answered `error`.
    #[error("{message}")]
    Failed {
        /// Its text.
        message: String,
    },
    /// The child's `result` does not have the event's result shape.
    #[error("invalid answer from the extension process: {reason}")]
    InvalidAnswer {
        /// What was wrong.
        reason: String,
    },
    /// The child stopped reading its input and too much is queued for it.
    #[error("the extension process is not reading its input")]
    Backlog,
    /// The operation the request belonged to was aborted.
    #[error("cancelled")]
    Cancelled,
    /// A tool did not finish within its deadline.
    #[error("tool did not finish within {}", humantime::format_duration(*after))]
    TimedOut {
        /// The deadline.
        after: Duration,
    },
}

/// A running process extension: its [`Extension`] and a handle on the child.
///
/// [`spawn`](Self::spawn) is all most programs need; [`start`](Self::start) also keeps the
/// handle, to [`shut down`](Self::shutdown) the child and wait for it. The child runs until
/// `shutdown`, or until this value, the [`Extension`] and every session set up with it are
/// dropped (then its stdin is closed, and `SIGTERM` and `SIGKILL` follow a grace apart).
///
/// A minimal child, in shell — it registers nothing and waits for its stdin to close:
///
/// ```
/// use pi_engine::extensions::{ProcessExtension, ProcessExtensionOptions};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let script = r#"echo '{"type":"register","protocol":1}'; cat > /dev/null"#;
/// let ext = ProcessExtension::start("quiet", "sh", ["-c", script], ProcessExtensionOptions::new())
///     .await
///     .unwrap();
/// assert_eq!(ext.extension().name(), "quiet");
/// assert!(ext.tools().is_empty());
/// let status = ext.shutdown().await;
/// assert_eq!(status.as_deref(), Some("exit status: 0"));
/// # }
/// ```
pub struct ProcessExtension {
    extension: Extension,
    conn: Arc<Conn>,
    registration: Arc<Registration>,
}

impl fmt::Debug for ProcessExtension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessExtension")
            .field("name", &self.extension.name())
            .field("pid", &self.conn.pid())
            .finish_non_exhaustive()
    }
}

/// File endings of pi's own extension modules, which this host does not load.
const SCRIPT_ENDINGS: [&str; 8] = ["ts", "js", "mjs", "cjs", "mts", "cts", "tsx", "jsx"];

impl ProcessExtension {
    /// Starts `command` with `args` as the extension `name` and returns its [`Extension`],
    /// ready for [`AgentSessionBuilder::extension`](crate::agent_session::AgentSessionBuilder::extension).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use pi_engine::agent_session::AgentSession;
    /// use pi_engine::extensions::{ProcessExtension, ProcessExtensionOptions};
    /// use pi_engine::providers::faux::{FauxProvider, FauxResponse};
    /// use pi_engine::session::SessionManager;
    /// use pi_engine::ApiProvider;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let gate = ProcessExtension::spawn(
    ///     "approval-gate",
    ///     "python3",
    ///     ["examples/extensions/approval_gate.py"],
    ///     ProcessExtensionOptions::new().with_timeout(Duration::from_secs(10)),
    /// )
    /// .await?;
    /// let faux = FauxProvider::new();
    /// faux.push(FauxResponse::text("Nothing to run."));
    /// let stream = faux.clone();
    /// let session = AgentSession::builder(SessionManager::in_memory("/project"))
    ///     .default_model(faux.model())
    ///     .stream_fn(move |m, c, o| stream.stream(m, c, o))
    ///     .extension(gate)
    ///     .build()?;
    /// session.prompt("hello").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ProcessExtensionError`]: a pi TypeScript/JavaScript file as the command, a program
    /// that cannot be started, a handshake that fails or times out. The child is stopped.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops the child.
    pub async fn spawn<I, S>(
        name: impl Into<String>,
        command: impl AsRef<OsStr>,
        args: I,
        options: ProcessExtensionOptions,
    ) -> Result<Extension, ProcessExtensionError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Ok(Self::start(name, command, args, options).await?.extension)
    }

    /// As [`spawn`](Self::spawn), keeping the handle on the child.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops the child.
    pub async fn start<I, S>(
        name: impl Into<String>,
        command: impl AsRef<OsStr>,
        args: I,
        options: ProcessExtensionOptions,
    ) -> Result<ProcessExtension, ProcessExtensionError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let name = name.into();
        let command = command.as_ref();
        let path = Path::new(command);
        if is_script(path) {
            return Err(ProcessExtensionError::TypeScriptExtension {
                path: path.to_owned(),
            });
        }
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(cwd) = &options.cwd {
            cmd.current_dir(cwd);
        }
        for (k, v) in &options.env {
            cmd.env(k, v);
        }
        // Its own group: the shutdown signals reach whatever it started too.
        #[cfg(unix)]
        cmd.process_group(0);
        let spawn_error = |source| ProcessExtensionError::Spawn {
            name: name.clone(),
            command: command.to_string_lossy().into_owned(),
            source,
        };
        let mut child = cmd.spawn().map_err(spawn_error)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(spawn_error(std::io::Error::other(
                "its pipes were not set up",
            )));
        };
        let life = Lifeline::start(&name, child, stdin, stderr, &options);
        let mut stdout = BufReader::with_capacity(64 * 1024, stdout);
        let hello = json!({
            "type": "hello",
            "protocol": PROTOCOL_VERSION,
            "host": "pi-engine",
            "hostVersion": env!("CARGO_PKG_VERSION"),
            "name": name,
            "maxLineBytes": options.max_line_bytes,
        });
        // A child that exits before reading it is found by the handshake below.
        let _ = life.send(&hello);
        let register = match tokio::time::timeout(
            options.handshake_timeout,
            conn::read_register(&name, &mut stdout, options.max_line_bytes),
        )
        .await
        {
            Ok(Ok(register)) => register,
            Ok(Err(conn::HandshakeEnd::Exited)) => {
                let reason = life.death().await.brief();
                return Err(ProcessExtensionError::Exited { name, reason });
            }
            Ok(Err(conn::HandshakeEnd::Broken(reason))) => {
                return Err(ProcessExtensionError::Handshake { name, reason });
            }
            Err(_) => {
                return Err(ProcessExtensionError::HandshakeTimeout {
                    name,
                    timeout: options.handshake_timeout,
                });
            }
        };
        let registration = Registration::parse(&register).map_err(|e| match e {
            wire::RegisterError::Version(found) => ProcessExtensionError::ProtocolVersion {
                name: name.clone(),
                found,
            },
            wire::RegisterError::Invalid(reason) => ProcessExtensionError::InvalidRegistration {
                name: name.clone(),
                reason,
            },
        })?;
        let conn = Arc::new(Conn::new(name.clone(), life, stdout, &options));
        let registration = Arc::new(registration);
        let (c, r) = (conn.clone(), registration.clone());
        let tool_timeout = options.tool_timeout;
        let extension = Extension::new(name, move |pi| install(pi, &c, &r, tool_timeout))
            .with_timeout(options.timeout);
        Ok(ProcessExtension {
            extension,
            conn,
            registration,
        })
    }

    /// The extension, for a session's builder (a clone: the same child).
    pub fn extension(&self) -> Extension {
        self.extension.clone()
    }

    /// The child's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.conn.pid()
    }

    /// The names of the tools the child registered.
    pub fn tools(&self) -> Vec<String> {
        self.registration
            .tools
            .iter()
            .map(|t| t.tool.name.clone())
            .collect()
    }

    /// The names of the commands the child registered.
    pub fn commands(&self) -> Vec<String> {
        self.registration
            .commands
            .iter()
            .map(|c| c.name.clone())
            .collect()
    }

    /// The events the child handles, as it listed them.
    pub fn events(&self) -> Vec<String> {
        self.registration.events.clone()
    }

    /// Stops the child: every waiting and later request fails at once (`extension process
    /// was shut down`), its stdin is closed, and after the grace its process group gets
    /// `SIGTERM`, then `SIGKILL`. Returns how it ended (`exit status: 0`, `signal: 15
    /// (SIGTERM)`, …), or `None` when that could not be learnt.
    ///
    /// # Cancel safety
    ///
    /// The child is stopped even if the future is dropped; only the wait is given up.
    pub async fn shutdown(self) -> Option<String> {
        self.conn.shutdown().await
    }
}

impl From<ProcessExtension> for Extension {
    fn from(p: ProcessExtension) -> Extension {
        p.extension
    }
}

/// A handler that sends its event to the child and reads the answer with `parse`.
fn forward<E, R>(
    conn: &Arc<Conn>,
    payload: fn(&E) -> Value,
    parse: fn(Value, &E) -> Result<Option<R>, String>,
) -> impl Fn(E, ExtensionContext) -> BoxFuture<'static, HandlerResult<R>> + Send + Sync + 'static
where
    E: Send + 'static,
    R: Send + 'static,
{
    let conn = conn.clone();
    move |event, ctx| {
        let shared = conn.shared().clone();
        Box::pin(async move {
            let answer = shared.event(&ctx, payload(&event)).await?;
            parse(answer, &event)
                .map_err(|reason| HandlerError::from(ProcessCallError::InvalidAnswer { reason }))
        })
    }
}

/// A handler of an observe-only event: the child's answer is not read.
fn observe<E>(
    conn: &Arc<Conn>,
    payload: fn(&E) -> Value,
) -> impl Fn(E, ExtensionContext) -> BoxFuture<'static, Result<(), HandlerError>> + Send + Sync + 'static
where
    E: Send + 'static,
{
    let conn = conn.clone();
    move |event, ctx| {
        let shared = conn.shared().clone();
        Box::pin(async move {
            shared.event(&ctx, payload(&event)).await?;
            Ok(())
        })
    }
}

/// The setup of a process extension: a handler, tool, command, flag and shortcut for each
/// that the child registered, each forwarding over the connection.
fn install(
    pi: &mut ExtensionApi,
    conn: &Arc<Conn>,
    reg: &Registration,
    tool_timeout: Option<Duration>,
) {
    let events: HashSet<&str> = reg.events.iter().map(String::as_str).collect();
    // Always there: it binds the session, which the child's calls and the tools need.
    let forward_start = events.contains("session_start");
    let c = conn.clone();
    pi.on_session_start(move |event, ctx| {
        let shared = c.shared().clone();
        async move {
            shared.bind(&ctx);
            if forward_start {
                shared.event(&ctx, wire::session_start(&event)).await?;
            }
            Ok(())
        }
    });
    for name in &reg.events {
        match name.as_str() {
            "tool_call" => {
                pi.on_tool_call(forward(conn, wire::tool_call, wire::parse_tool_call));
            }
            "tool_result" => {
                pi.on_tool_result(forward(conn, wire::tool_result, wire::parse_tool_result));
            }
            "context" => {
                pi.on_context(forward(conn, wire::context, wire::parse_context));
            }
            "input" => {
                pi.on_input(forward(conn, wire::input, wire::parse_input));
            }
            "before_agent_start" => {
                pi.on_before_agent_start(forward(
                    conn,
                    wire::before_agent_start,
                    wire::parse_before_agent_start,
                ));
            }
            "message_end" => {
                pi.on_message_end(forward(conn, wire::message_end, wire::parse_message_end));
            }
            "before_provider_request" => {
                pi.on_before_provider_request(forward(
                    conn,
                    wire::provider_request,
                    wire::parse_provider_request,
                ));
            }
            "after_provider_response" => {
                pi.on_after_provider_response(observe(conn, wire::provider_response));
            }
            "session_before_switch" => {
                pi.on_session_before_switch(forward(
                    conn,
                    wire::session_before_switch,
                    wire::parse_cancel,
                ));
            }
            "session_before_fork" => {
                pi.on_session_before_fork(forward(
                    conn,
                    wire::session_before_fork,
                    wire::parse_cancel,
                ));
            }
            "session_before_compact" => {
                pi.on_session_before_compact(forward(
                    conn,
                    wire::session_before_compact,
                    wire::parse_compact,
                ));
            }
            "session_compact" => {
                pi.on_session_compact(observe(conn, wire::session_compact));
            }
            "session_before_tree" => {
                pi.on_session_before_tree(forward(
                    conn,
                    wire::session_before_tree,
                    wire::parse_tree,
                ));
            }
            "session_tree" => {
                pi.on_session_tree(observe(conn, wire::session_tree));
            }
            "session_shutdown" => {
                pi.on_session_shutdown(observe(conn, wire::session_shutdown));
            }
            "model_select" => {
                pi.on_model_select(observe(conn, wire::model_select));
            }
            "thinking_level_select" => {
                pi.on_thinking_level_select(observe(conn, wire::thinking_level_select));
            }
            "resources_discover" => {
                pi.on_resources_discover(forward(
                    conn,
                    wire::resources_discover,
                    wire::parse_resources,
                ));
            }
            #[cfg(feature = "tools")]
            "user_bash" => {
                pi.on_user_bash(forward(conn, wire::user_bash, wire::parse_user_bash));
            }
            _ => {}
        }
    }
    let observed: HashSet<String> = reg
        .events
        .iter()
        .filter(|e| wire::OBSERVED_EVENTS.contains(&e.as_str()))
        .cloned()
        .collect();
    if !observed.is_empty() {
        let c = conn.clone();
        let observed = Arc::new(observed);
        pi.on_event(move |event, ctx| {
            let shared = c.shared().clone();
            let wanted = observed.contains(event.kind());
            async move {
                if wanted {
                    let payload = serde_json::to_value(&event)?;
                    shared.event(&ctx, payload).await?;
                }
                Ok(())
            }
        });
    }
    for spec in &reg.tools {
        pi.register_tool(ProcessTool {
            spec: spec.clone(),
            conn: conn.clone(),
            timeout: tool_timeout,
        });
    }
    for CommandSpec {
        name,
        description,
        completions,
    } in &reg.commands
    {
        let c = conn.clone();
        let command = name.clone();
        pi.register_command(
            name.clone(),
            description.clone().unwrap_or_default(),
            move |args, ctx| {
                let shared = c.shared().clone();
                let body = object(json!({"name": command, "args": args}));
                async move {
                    shared.bind(&ctx);
                    shared.handler_request("command", body, &ctx).await?;
                    Ok(())
                }
            },
        );
        if *completions {
            let c = conn.clone();
            let command = name.clone();
            pi.command_completions(name, move |prefix| {
                let shared = c.shared().clone();
                let body = object(json!({"name": command, "prefix": prefix}));
                async move {
                    match shared.plain_request("complete", body).await {
                        Ok(answer) => match wire::parse_completions(answer) {
                            Ok(items) => items,
                            Err(reason) => {
                                shared.protocol_error("complete", &format!("invalid completions: {reason}"));
                                None
                            }
                        },
                        Err(e) => {
                            tracing::warn!(target: "pi_engine::extensions::process", extension = shared.name(), error = %e, "completions failed");
                            None
                        }
                    }
                }
            });
        }
    }
    for flag in &reg.flags {
        pi.register_flag(flag.clone());
    }
    for ShortcutSpec { key, description } in &reg.shortcuts {
        let c = conn.clone();
        let shortcut = key.clone();
        pi.register_shortcut(
            key.clone(),
            description.clone().unwrap_or_default(),
            move |ctx| {
                let shared = c.shared().clone();
                let body = object(json!({"shortcut": shortcut}));
                async move {
                    shared.bind(&ctx);
                    shared.handler_request("shortcut", body, &ctx).await?;
                    Ok(())
                }
            },
        );
    }
}

/// A JSON object built with `json!` as its map.
fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A tool the child registered: each execution is a `tool` request.
struct ProcessTool {
    spec: ToolSpec,
    conn: Arc<Conn>,
    timeout: Option<Duration>,
}

#[async_trait]
impl AgentTool for ProcessTool {
    fn definition(&self) -> &Tool {
        &self.spec.tool
    }

    fn label(&self) -> &str {
        self.spec.label.as_deref().unwrap_or(&self.spec.tool.name)
    }

    fn prompt_snippet(&self) -> Option<&str> {
        self.spec.prompt_snippet.as_deref()
    }

    fn prompt_guidelines(&self) -> &[String] {
        &self.spec.prompt_guidelines
    }

    fn execution_mode(&self) -> Option<ToolExecutionMode> {
        self.spec.execution_mode
    }

    async fn execute(
        &self,
        tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let shared = self.conn.shared().clone();
        let clock = Arc::new(UiClock::default());
        // The tool gets the context of the session the extension serves (pi's `ctx`).
        let ctx = shared.detached_context(clock.clone(), cancel.clone());
        let body = object(json!({
            "toolName": self.spec.tool.name,
            "toolCallId": tool_call_id,
            "params": args,
        }));
        let run = shared.tool_request(body, ctx.as_ref(), cancel, updates);
        let answer = match self.timeout {
            None => run.await,
            Some(limit) => with_deadline(&clock, limit, run)
                .await
                .unwrap_or(Err(ProcessCallError::TimedOut { after: limit })),
        }?;
        wire::parse_tool_output(answer)
            .map_err(|reason| ProcessCallError::InvalidAnswer { reason }.into())
    }
}

/// Whether a command names one of pi's script extensions.
fn is_script(command: &Path) -> bool {
    command
        .extension()
        .and_then(OsStr::to_str)
        .is_some_and(|e| SCRIPT_ENDINGS.contains(&e.to_ascii_lowercase().as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_endings() {
        for s in ["ext.ts", "a/b/ext.mjs", "ext.JS", "x.tsx"] {
            assert!(is_script(Path::new(s)), "{s}");
        }
        for s in ["python3", "ext.py", "ts", "./run-extension"] {
            assert!(!is_script(Path::new(s)), "{s}");
        }
    }

    #[tokio::test]
    async fn a_typescript_file_is_refused_with_advice() {
        let err = ProcessExtension::spawn(
            "x",
            "./ext.ts",
            [] as [&str; 0],
            ProcessExtensionOptions::new(),
        )
        .await
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(
            err,
            ProcessExtensionError::TypeScriptExtension { .. }
        ));
        assert!(text.contains("does not load pi's TypeScript"), "{text}");
        assert!(text.contains("extension-protocol.md"), "{text}");
    }
}
