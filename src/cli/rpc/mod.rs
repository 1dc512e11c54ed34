//! pi's RPC mode (`pi --mode rpc`, pi-coding-agent 0.73.1) on an [`AgentSession`]: commands
//! as JSON lines on the input, responses and the session's events as JSON lines on the
//! output — for a program that drives the agent through pipes (pi's `RpcClient`, an editor
//! plugin).
//!
//! [`run`] is the whole mode. It reads until the input ends (or an extension asks to shut
//! down, or [`RpcOptions::stop_on`] fires), then ends the session and returns how it ended:
//!
//! ```
//! use pi_engine::agent_session::AgentSession;
//! use pi_engine::cli::rpc::{self, RpcOptions, RpcUi};
//! use pi_engine::providers::faux::{FauxProvider, FauxResponse};
//! use pi_engine::session::SessionManager;
//! use pi_engine::ApiProvider;
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let faux = FauxProvider::new();
//! faux.push(FauxResponse::text("Hello!"));
//! let stream = faux.clone();
//! let (ui, channel) = RpcUi::new(); // extensions' dialogs go to the client
//! let session = AgentSession::builder(SessionManager::in_memory("/project"))
//!     .default_model(faux.model())
//!     .stream_fn(move |m, c, o| stream.stream(m, c, o))
//!     .extension_ui_arc(ui)
//!     .build()
//!     .unwrap();
//!
//! // A program gives `tokio::io::stdin()` and `tokio::io::stdout()`.
//! let (mut client, input) = tokio::io::duplex(1 << 16);
//! let (output, mut events) = tokio::io::duplex(1 << 20);
//! let mode = tokio::spawn(rpc::run(session, input, output, RpcOptions::new().with_ui(channel)));
//!
//! client.write_all(b"{\"id\":\"1\",\"type\":\"prompt\",\"message\":\"Hi\"}\n").await.unwrap();
//! let mut seen = String::new();
//! let mut buf = [0u8; 4096];
//! while !seen.contains("\"agent_end\"") {
//!     let n = events.read(&mut buf).await.unwrap();
//!     seen.push_str(std::str::from_utf8(&buf[..n]).unwrap());
//! }
//! drop(client); // the end of the input ends the mode
//! let exit = mode.await.unwrap();
//! assert_eq!(exit.exit_code(), 0);
//! assert!(seen.starts_with(r#"{"id":"1","type":"response","command":"prompt","success":true}"#));
//! # }
//! ```
//!
//! # The protocol
//!
//! * **Framing**: one JSON object per line, `\n` only (U+2028 and U+2029 are text, a
//!   trailing `\r` is dropped, an unterminated last line counts); a line longer than
//!   [`RpcOptions::with_max_line_bytes`] is skipped. Nothing but protocol lines is written.
//! * **Commands** (`{"id"?, "type", …}`): all of pi 0.73.1's — `prompt`, `steer`,
//!   `follow_up`, `abort`, `new_session`, `get_state`, `set_model`, `cycle_model`,
//!   `get_available_models`, `set_thinking_level`, `cycle_thinking_level`,
//!   `set_steering_mode`, `set_follow_up_mode`, `compact`, `set_auto_compaction`,
//!   `set_auto_retry`, `abort_retry`, `bash`, `abort_bash`, `get_session_stats`,
//!   `export_html` (the page is rendered by
//!   [`AgentSession::export_html`](crate::agent_session::AgentSession::export_html)),
//!   `switch_session`, `fork`, `clone`, `get_fork_messages`, `get_last_assistant_text`,
//!   `set_session_name`, `get_messages`, `get_commands`.
//! * **Responses**: `{"id"?, "type":"response", "command", "success", "data"?, "error"?}`
//!   as pi shapes them. A line that is not JSON: `{"type":"response","command":"parse",
//!   "success":false,"error":"Failed to parse command: …"}`; an unknown command:
//!   `Unknown command: <type>` (without the id, as pi). Commands run concurrently, as in pi:
//!   a slow one (`compact`, `bash`, a `set_model` that compacts) never holds up the reading,
//!   and responses come in the order the commands finish (what a command does at once — a
//!   queue mode, a thinking level — is done before the next line is read).
//! * **`prompt`** is answered when it is accepted: right before its run's `agent_start`,
//!   when it is queued (`streamingBehavior` `steer`/`followUp` while the agent runs), or
//!   when an extension command or `input` handler took it. A failure after that is in the
//!   events (the run's error message), not a second response. While the agent runs, a
//!   prompt without `streamingBehavior` is refused (`Agent is already processing. Specify
//!   streamingBehavior …`), except an extension command, which runs at once. Only the
//!   prompt's own run answers it (a run an extension starts on a task of its own does not).
//! * **Events**: every [`AgentSessionEvent`] in pi's JSON shapes ([`JsonLinesWriter`]),
//!   without this crate's own `extension_action`.
//! * **Extension UI**: with [`RpcUi`], `extension_ui_request` lines, and dialogs answered by
//!   `extension_ui_response` lines.
//!
//! # Ending
//!
//! When the input ends — or an extension called `ctx.shutdown()` (checked each time a
//! command finishes, as pi checks after each command), or [`RpcOptions::stop_on`] resolved —
//! the mode stops writing events (pi unsubscribes first too), answers open dialogs as
//! cancelled, calls [`AgentSession::shutdown`] (what runs is aborted and waited for; the
//! extensions get `session_shutdown`, reason `quit`), lets the commands still running
//! finish (their responses are written), then flushes and shuts the output down. pi exits
//! the process at that point; what has not stopped within [`SHUTDOWN_GRACE`] is dropped.
//!
//! # Where this differs from pi, and why
//!
//! * A line has a length cap (pi has none), so a client cannot exhaust memory with one
//!   endless line.
//! * `Failed to parse command: …` carries serde_json's wording of the error, except for an
//!   empty or cut line, which is V8's `Unexpected end of JSON input`.
//! * A command with a missing or mistyped field is answered `Invalid command: "<field>" must
//!   be a …` (pi fails inside with a JavaScript `TypeError`, or stores the odd value); an
//!   invalid thinking level or queue mode is refused rather than stored.
//! * `export_html` writes a page of this crate's own design (rendered in Rust, readable
//!   without JavaScript; see [`session::export_html`](crate::session::export_html)), not
//!   pi's template; the response is pi's, `{"path": …}`.
//! * A prompt queued with `streamingBehavior` does not go through the `input` handlers (it
//!   is expanded, [`AgentSession::expand_input`], and queued); pi asks them first.
//! * A prompt that arrives while another prompt is still before its run (in its `input`
//!   handlers, say) counts as arriving while the agent runs: pi would start a second run
//!   that fails after its response was sent, which loses the prompt.
//! * A shutdown asked for by an extension while a prompt's run goes on takes effect when
//!   that run ends (pi waits for the next command line).
//! * A dialog with a timeout ([`Ui::select_with_timeout`]) carries it (`timeout`, in
//!   milliseconds) and the extension's side enforces it; a dialog that times out is
//!   withdrawn and a late answer is ignored, as in pi.
//!
//! [`AgentSessionEvent`]: crate::agent_session::AgentSessionEvent
//! [`JsonLinesWriter`]: crate::agent_session::JsonLinesWriter
//! [`Ui::select_with_timeout`]: crate::extensions::Ui::select_with_timeout
//! [`ExtensionUi`]: crate::extensions::ExtensionUi

mod commands;
pub(crate) mod framing;
mod response;
mod slash;
mod ui;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;

use self::commands::{Config, Ctx, Prompts, Request};
use self::framing::{Line, LineReader};
use self::response::{Response, parse_error_text};
pub use self::slash::{CommandSource, SlashCommand, SourceInfo, SourceOrigin, SourceScope};
pub use self::ui::{RpcUi, RpcUiChannel};
use crate::agent::AgentEvent;
use crate::agent_session::{
    AgentSession, AgentSessionEvent, JsonLinesError, JsonLinesWriter, SessionEvent,
    SessionSubscription,
};
use crate::session::SessionOptions;

/// The longest input line [`run`] accepts by default: 128 MiB (a prompt's images are in it,
/// base64-encoded).
pub const DEFAULT_MAX_LINE_BYTES: usize = 128 * 1024 * 1024;

/// How long the end of the mode waits for what runs to stop before dropping it.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How [`run`] is set up: the extension UI's channel, the commands `get_commands` lists
/// besides the extensions', where sessions are opened, the line cap, and a signal to stop
/// on. (Prompt templates and skills are expanded by the session:
/// [`AgentSessionBuilder::input_expander`](crate::agent_session::AgentSessionBuilder::input_expander).)
///
/// ```
/// use pi_engine::cli::rpc::{RpcOptions, SlashCommand, SourceInfo};
///
/// let options = RpcOptions::new()
///     .with_commands([SlashCommand::prompt_template("review", Some("Review the diff"),
///         SourceInfo::new("/home/me/.pi/agent/prompts/review.md", "local"))])
///     .with_max_line_bytes(1 << 20)
///     .stop_on(async { 143 }); // e.g. SIGTERM's exit code, when it arrives
/// # let _ = options;
/// ```
#[derive(Default)]
pub struct RpcOptions {
    ui: Option<RpcUiChannel>,
    commands: Vec<SlashCommand>,
    extension_sources: HashMap<String, SourceInfo>,
    session_options: SessionOptions,
    max_line_bytes: Option<usize>,
    stop: Option<BoxFuture<'static, u8>>,
}

impl fmt::Debug for RpcOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcOptions")
            .field("ui", &self.ui)
            .field("commands", &self.commands)
            .field("extension_sources", &self.extension_sources)
            .field("session_options", &self.session_options)
            .field("max_line_bytes", &self.max_line_bytes())
            .field("stop", &self.stop.is_some())
            .finish()
    }
}

impl RpcOptions {
    /// No UI channel, no templates or skills, default session options, the default line cap.
    pub fn new() -> Self {
        RpcOptions::default()
    }

    /// The channel of the [`RpcUi`] the session was built with: its requests go to the
    /// output, and `extension_ui_response` lines to it. Without one,
    /// `extension_ui_response` lines are ignored.
    #[must_use]
    pub fn with_ui(mut self, channel: RpcUiChannel) -> Self {
        self.ui = Some(channel);
        self
    }

    /// The prompt templates and skills `get_commands` lists after the extensions' commands
    /// (templates first, then skills, each in the order given).
    #[must_use]
    pub fn with_commands(mut self, commands: impl IntoIterator<Item = SlashCommand>) -> Self {
        self.commands.extend(commands);
        self
    }

    /// Where the extension named `extension` was loaded from, for `get_commands`' `sourceInfo`
    /// of its commands (default: `{"path": <name>, "source": "local", "scope": "temporary",
    /// "origin": "top-level"}`).
    #[must_use]
    pub fn with_extension_source(mut self, extension: impl Into<String>, info: SourceInfo) -> Self {
        self.extension_sources.insert(extension.into(), info);
        self
    }

    /// How `switch_session` opens a session file (fsync policy, line cap; default
    /// [`SessionOptions::new`]).
    #[must_use]
    pub fn with_session_options(mut self, options: SessionOptions) -> Self {
        self.session_options = options;
        self
    }

    /// The longest input line, in bytes without its `\n` (default
    /// [`DEFAULT_MAX_LINE_BYTES`]). A longer line is skipped and answered as a parse error.
    #[must_use]
    pub fn with_max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = Some(bytes);
        self
    }

    /// Ends the mode, as the end of the input does, when `stop` resolves; its value is the
    /// exit code (e.g. a signal's: 143 for `SIGTERM`, 129 for `SIGHUP`, as pi).
    #[must_use]
    pub fn stop_on(mut self, stop: impl Future<Output = u8> + Send + 'static) -> Self {
        self.stop = Some(Box::pin(stop));
        self
    }

    fn max_line_bytes(&self) -> usize {
        self.max_line_bytes.unwrap_or(DEFAULT_MAX_LINE_BYTES)
    }
}

/// Why [`run`] ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RpcExitReason {
    /// The input ended (pi: stdin's `end`).
    InputClosed,
    /// An extension asked to shut down (`ctx.shutdown()`).
    ShutdownRequested,
    /// [`RpcOptions::stop_on`] resolved with this exit code.
    Stopped(u8),
    /// Reading the input failed.
    InputFailed(Arc<io::Error>),
}

/// How [`run`] ended: why, and whether every line was written.
#[derive(Debug)]
#[non_exhaustive]
#[must_use]
pub struct RpcExit {
    /// Why it ended.
    pub reason: RpcExitReason,
    /// The output's first error, if writing failed (a closed stdout).
    pub output: Result<(), JsonLinesError>,
}

impl RpcExit {
    /// The process's exit code: 0 when the input ended or an extension shut down (as pi),
    /// the code of [`RpcOptions::stop_on`], 1 when reading or writing failed.
    pub fn exit_code(&self) -> u8 {
        match (&self.reason, &self.output) {
            (RpcExitReason::Stopped(code), _) => *code,
            (RpcExitReason::InputFailed(_), _) | (_, Err(_)) => 1,
            _ => 0,
        }
    }
}

/// Runs pi's RPC mode on `session`: reads commands from `input`, writes responses, events
/// and extension UI requests to `output`, until the input ends, an extension shuts down, or
/// [`RpcOptions::stop_on`] fires; then shuts the session down and flushes the output (see
/// the [module docs](self) for the protocol).
///
/// ```
/// use pi_engine::agent_session::AgentSession;
/// use pi_engine::cli::rpc::{self, RpcOptions, RpcUi};
/// use pi_engine::providers::faux::FauxProvider;
/// use pi_engine::session::SessionManager;
/// use pi_engine::ApiProvider;
/// use tokio::io::AsyncReadExt;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let faux = FauxProvider::new();
/// let stream = faux.clone();
/// let (ui, channel) = RpcUi::new();
/// let session = AgentSession::builder(SessionManager::in_memory("/project"))
///     .default_model(faux.model())
///     .stream_fn(move |m, c, o| stream.stream(m, c, o))
///     .extension_ui_arc(ui)
///     .build()
///     .unwrap();
/// let input: &[u8] = b"{\"id\":\"1\",\"type\":\"get_state\"}\n"; // a program: tokio::io::stdin()
/// let (output, mut client) = tokio::io::duplex(1 << 16); // a program: tokio::io::stdout()
/// let exit = rpc::run(session, input, output, RpcOptions::new().with_ui(channel)).await;
/// assert_eq!(exit.exit_code(), 0); // the input ended, so did the mode
///
/// let mut lines = String::new();
/// client.read_to_string(&mut lines).await.unwrap();
/// let state: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
/// assert_eq!(state["data"]["model"]["id"], "faux-1");
/// # }
/// ```
///
/// # Panics
///
/// Outside a Tokio runtime. A command that panics is answered with an error response.
///
/// # Cancel safety
///
/// Dropping the future stops reading, detaches from the session and drops the commands that
/// run (their runs stop where they are) without the session's shutdown; the lines already
/// produced are still written by the output's task. Use [`RpcOptions::stop_on`] for an
/// orderly end.
pub async fn run<R, W>(session: AgentSession, input: R, output: W, options: RpcOptions) -> RpcExit
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let max_line = options.max_line_bytes();
    let RpcOptions {
        ui,
        commands,
        extension_sources,
        session_options,
        stop,
        ..
    } = options;
    let out = Arc::new(JsonLinesWriter::new(output));
    let prompts = Arc::new(Prompts::default());
    // Subscribed before the event writer: a prompt's response precedes its `agent_start`.
    let acceptance = {
        let (out, prompts) = (out.clone(), prompts.clone());
        session.subscribe(move |event| {
            if matches!(event, AgentSessionEvent::Agent(AgentEvent::AgentStart))
                && let Some(id) = prompts.accept_current()
            {
                let _ = out.write_value(&Response::success(id, Some("prompt".into()), None));
            }
        })
    };
    out.attach_filtered(&session, |event| {
        !matches!(
            event,
            AgentSessionEvent::Session(SessionEvent::ExtensionAction { .. })
        )
    });
    let link = ui.map(|channel| channel.link);
    if let Some(link) = &link {
        link.connect(out.clone());
    }
    let mut attached = Attached {
        acceptance: Some(acceptance),
        out: out.clone(),
        link: link.clone(),
    };
    let ctx = Arc::new(Ctx {
        session: session.clone(),
        out: out.clone(),
        prompts,
        config: Config {
            commands,
            extension_sources,
            session_options,
        },
    });

    let mut reader = LineReader::new(input, max_line);
    let mut tasks: JoinSet<()> = JoinSet::new();
    // pi sends `session_start` when the session is created, before the first command; on
    // a task of its own, as its handlers may ask the client something.
    let starting = session.clone();
    tasks.spawn(async move { starting.start_extensions().await });
    let mut stop = stop;
    let reason = loop {
        tokio::select! {
            line = reader.next_line() => match line {
                Ok(Some(line)) => {
                    if let Some(mut command) = handle_line(&ctx, link.as_deref(), line) {
                        // What a command does at once is done before the next line is read
                        // (as a JavaScript handler runs to its first await).
                        if futures::poll!(command.as_mut()).is_pending() {
                            tasks.spawn(command);
                        }
                    }
                    if session.is_shutdown_requested() {
                        break RpcExitReason::ShutdownRequested;
                    }
                }
                Ok(None) => break RpcExitReason::InputClosed,
                Err(e) => break RpcExitReason::InputFailed(Arc::new(e)),
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {
                if session.is_shutdown_requested() {
                    break RpcExitReason::ShutdownRequested;
                }
            }
            code = stopped(&mut stop) => break RpcExitReason::Stopped(code),
        }
    };
    drop(reader);

    // pi stops writing events first, then disposes of the session.
    attached.stop_events();
    // What runs is aborted, the commands finish (a handler whose dialog was cancelled goes
    // on), within one grace period; what is left then is dropped.
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    let shut = tokio::time::timeout_at(deadline, session.shutdown())
        .await
        .is_ok();
    let drained = tokio::time::timeout_at(deadline, async {
        while tasks.join_next().await.is_some() {}
    })
    .await
    .is_ok();
    if !shut || !drained {
        tracing::warn!("RPC mode: commands did not stop in time; dropping them");
        tasks.shutdown().await;
        if !shut {
            session.shutdown().await;
        }
    }
    drop(attached);
    let output = out.finish().await;
    RpcExit { reason, output }
}

/// What the mode hooked into the session and the UI, undone when it ends — also when its
/// future is dropped.
struct Attached {
    acceptance: Option<SessionSubscription>,
    out: Arc<JsonLinesWriter>,
    link: Option<Arc<ui::Link>>,
}

impl Attached {
    /// No more events; open dialogs are answered as cancelled, later ones at once.
    fn stop_events(&mut self) {
        if let Some(s) = self.acceptance.take() {
            s.unsubscribe();
        }
        self.out.detach();
        if let Some(link) = &self.link {
            link.close_input();
        }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.stop_events();
        if let Some(link) = &self.link {
            link.disconnect();
        }
    }
}

/// Resolves with the stop signal's code; never without one.
async fn stopped(stop: &mut Option<BoxFuture<'static, u8>>) -> u8 {
    match stop {
        Some(stop) => stop.await,
        None => std::future::pending().await,
    }
}

/// One input line: a UI answer, a parse error, an unknown command (all answered here), or
/// a command to run.
fn handle_line(
    ctx: &Arc<Ctx>,
    link: Option<&ui::Link>,
    line: Line,
) -> Option<BoxFuture<'static, ()>> {
    let text = match line {
        Line::Text(text) => text,
        Line::TooLong => {
            ctx.write(&Response::parse_error("line too long"));
            return None;
        }
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => {
            ctx.write(&Response::parse_error(&parse_error_text(&e)));
            return None;
        }
    };
    if value.get("type").and_then(Value::as_str) == Some("extension_ui_response") {
        if let Some(link) = link {
            link.resolve(value);
        }
        return None;
    }
    commands::start(ctx, Request::new(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        let exit = |reason, output| RpcExit { reason, output };
        assert_eq!(exit(RpcExitReason::InputClosed, Ok(())).exit_code(), 0);
        assert_eq!(
            exit(RpcExitReason::ShutdownRequested, Ok(())).exit_code(),
            0
        );
        assert_eq!(exit(RpcExitReason::Stopped(143), Ok(())).exit_code(), 143);
        assert_eq!(
            exit(RpcExitReason::Stopped(129), Err(JsonLinesError::Stopped)).exit_code(),
            129
        );
        assert_eq!(
            exit(RpcExitReason::InputClosed, Err(JsonLinesError::Stopped)).exit_code(),
            1
        );
        let failed = RpcExitReason::InputFailed(Arc::new(io::Error::other("x")));
        assert_eq!(exit(failed, Ok(())).exit_code(), 1);
    }

    #[test]
    fn options_debug_and_defaults() {
        let options = RpcOptions::new();
        assert_eq!(options.max_line_bytes(), DEFAULT_MAX_LINE_BYTES);
        assert!(format!("{options:?}").contains("RpcOptions"));
    }
}
