//! pi's JSON lines: the output of `pi --mode json` (and the event lines of `pi --mode rpc`) —
//! the session header, then one line per [`AgentSessionEvent`], each one JSON object and `\n`.
//!
//! * [`header_line`] is the session header as pi prints it (`{"type":"session","version":3,
//!   "id",…,"timestamp",…,"cwd",…}`, with `parentSession` when the session was forked).
//! * [`JsonLineEncoder`] turns events into lines. It is stateful: pi's `message_update`
//!   carries the reply as it stands (`message`, and `assistantMessageEvent.partial`), which the
//!   crate's events leave out, so the encoder folds the reply from the events it is given.
//! * [`JsonLinesWriter`] attaches to an [`AgentSession`] and writes every event's line to an
//!   async sink ([`tokio::io::AsyncWrite`], e.g. `tokio::io::stdout()`), in order, from a task
//!   of its own; [`flush`](JsonLinesWriter::flush) and [`finish`](JsonLinesWriter::finish)
//!   say when the lines are written, and whether writing failed.
//!
//! Lines are serde_json's compact JSON: a newline (or any control character) inside a string
//! is escaped, so a line never contains a raw `\n`. U+2028 and U+2029 are not escaped (nor
//! are they by pi): split records on `\n` only.
//!
//! The public items are re-exported by [`agent_session`](super); the example and what
//! cancelling does are on [`JsonLinesWriter`].

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::event::AgentSessionEvent;
use super::session::{AgentSession, SessionSubscription};
use crate::agent::{AgentEvent, AgentMessage};
use crate::llm::event::{AssistantMessageEvent, PartialMessage};
use crate::llm::message::AssistantMessage;
use crate::session::{CURRENT_SESSION_VERSION, SessionHeader};

/// The header line of a session, as pi's JSON mode prints it first: the session file's header
/// (`type`, `version`, `id`, `timestamp`, `cwd`, and `parentSession` for a fork), with `\n`.
///
/// The version is always 3: pi migrates an older file when it opens it, and prints the
/// migrated header (this crate migrates the file before its first append; the header of a
/// version 1 file keeps its other fields, as pi's does).
///
/// # Errors
///
/// Only if serialization fails, which a header's JSON cannot make it do.
///
/// ```
/// use pi_engine::agent_session::header_line;
/// use pi_engine::session::SessionHeader;
///
/// let header = SessionHeader::new("0192-…", "2026-01-01T00:00:00.000Z", "/project");
/// assert_eq!(
///     header_line(&header).unwrap(),
///     "{\"type\":\"session\",\"version\":3,\"id\":\"0192-…\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/project\"}\n"
/// );
/// ```
pub fn header_line(header: &SessionHeader) -> Result<String, serde_json::Error> {
    if header.version == Some(CURRENT_SESSION_VERSION) {
        json_line(header)
    } else {
        let mut migrated = header.clone();
        migrated.version = Some(CURRENT_SESSION_VERSION);
        json_line(&migrated)
    }
}

/// Any value as one JSON line (compact JSON and `\n`): what pi's RPC mode writes for its
/// responses (`{"id":"req-1","type":"response","command":"prompt","success":true}`).
///
/// # Errors
///
/// When `value` fails to serialize (a map with keys that are not strings, a failing
/// `Serialize` implementation).
pub fn json_line<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut line = serde_json::to_string(value)?;
    line.push('\n');
    Ok(line)
}

/// How a `message_update` line is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UpdateShape {
    /// pi's shape: `{"type":"message_update","assistantMessageEvent":{…,"partial":M},
    /// "message":M}`, `M` being the reply as it stands after the event (a `toolcall_start`
    /// names its call in `M` only, as pi's does). Each line is as large as the reply so far,
    /// so a long reply costs quadratic output — as it does in pi.
    #[default]
    Pi,
    /// The crate's [`AgentEvent`] shape, without `message` and `partial`:
    /// `{"type":"message_update","assistantMessageEvent":{…}}` (a `toolcall_start` carries
    /// the call's `id` and `toolName`). Linear; a reader rebuilds the reply with
    /// [`PartialMessage`]. Every other line is the same as in [`Pi`](Self::Pi).
    EventOnly,
}

/// Turns [`AgentSessionEvent`]s into pi's JSON lines, one event at a time, in order.
///
/// Every event is its own JSON (see [`AgentSessionEvent`]) and `\n`, with two changes that
/// make it pi's:
///
/// * In pi's [shape](UpdateShape::Pi), a `message_update` also carries the reply as it
///   stands, which the encoder folds from the `message_start` and the `message_update`s it
///   was given: give it every event of a session, in order (or [`observe`](Self::observe)
///   those not written). The fold holds the content; metadata a provider reports as it
///   streams (usage, `responseId`, signatures, the stop reason) stays as the `message_start`
///   had it until `message_end` — pi-ai writes it into its partial reply as it arrives.
/// * A tool result's details that the tool left out (`null` in
///   [`AgentToolResult`](crate::agent::AgentToolResult)) are no field, as pi's `undefined`.
///
/// ```
/// use pi_engine::agent::AgentEvent;
/// use pi_engine::agent_session::{AgentSessionEvent, JsonLineEncoder};
/// use pi_engine::{AssistantMessage, AssistantMessageEvent};
///
/// let mut encoder = JsonLineEncoder::new();
/// let start = AgentEvent::MessageStart { message: AssistantMessage::new("faux", "faux", "faux-1").into() };
/// encoder.encode(&AgentSessionEvent::Agent(start)).unwrap();
/// encoder.encode(&AgentSessionEvent::Agent(AgentEvent::MessageUpdate {
///     assistant_message_event: AssistantMessageEvent::TextStart { content_index: 0 },
/// })).unwrap();
/// let line = encoder.encode(&AgentSessionEvent::Agent(AgentEvent::MessageUpdate {
///     assistant_message_event: AssistantMessageEvent::TextDelta { content_index: 0, delta: "Hi".into() },
/// })).unwrap();
/// let v: serde_json::Value = serde_json::from_str(&line).unwrap();
/// assert_eq!(v["assistantMessageEvent"]["delta"], "Hi");
/// assert_eq!(v["message"]["content"][0]["text"], "Hi");
/// assert_eq!(v["assistantMessageEvent"]["partial"], v["message"]);
/// ```
#[derive(Clone, Default)]
pub struct JsonLineEncoder {
    shape: UpdateShape,
    /// The reply being streamed (pi's shape only).
    streaming: Option<PartialMessage>,
}

impl fmt::Debug for JsonLineEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLineEncoder")
            .field("shape", &self.shape)
            .field("streaming", &self.streaming.is_some())
            .finish()
    }
}

impl JsonLineEncoder {
    /// An encoder writing pi's shapes.
    pub fn new() -> Self {
        JsonLineEncoder::default()
    }

    /// An encoder writing `message_update` in `shape`.
    pub fn with_shape(shape: UpdateShape) -> Self {
        JsonLineEncoder {
            shape,
            streaming: None,
        }
    }

    /// The shape of its `message_update` lines.
    pub fn shape(&self) -> UpdateShape {
        self.shape
    }

    /// Starts from a reply being streamed (for an encoder that joins in the middle of a
    /// reply, e.g. from [`Agent::streaming_message`](crate::agent::Agent::streaming_message)).
    /// Without it, the `message_update`s of a reply whose `message_start` the encoder did
    /// not see are written without `message` and `partial`.
    pub fn resume(&mut self, streaming: Option<AssistantMessage>) {
        if self.shape == UpdateShape::Pi {
            self.streaming = streaming.map(PartialMessage::new);
        }
    }

    /// The line of `event` (JSON and `\n`).
    ///
    /// # Errors
    ///
    /// When the event fails to serialize, which pi's JSON shapes cannot make it do (the
    /// event's values are plain JSON).
    pub fn encode(&mut self, event: &AgentSessionEvent) -> Result<String, serde_json::Error> {
        let mut out = Vec::new();
        self.encode_into(event, &mut out)?;
        // serde_json writes UTF-8 only.
        String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
    }

    /// Appends the line of `event` (JSON and `\n`) to `out`. On error `out` is as it was.
    ///
    /// # Errors
    ///
    /// As [`encode`](Self::encode).
    pub fn encode_into(
        &mut self,
        event: &AgentSessionEvent,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        let len = out.len();
        let result = self.write(event, out);
        match result {
            Ok(()) => out.push(b'\n'),
            Err(_) => out.truncate(len),
        }
        result
    }

    /// Folds `event` into the reply being streamed without writing it (for an event left
    /// out of the output).
    pub fn observe(&mut self, event: &AgentSessionEvent) {
        if let AgentSessionEvent::Agent(e) = event {
            self.fold(e);
        }
    }

    /// Folds `event`; true when it is a `message_update` to write with the reply.
    fn fold(&mut self, event: &AgentEvent) -> bool {
        match event {
            AgentEvent::MessageStart {
                message: AgentMessage::Assistant(m),
            } if self.shape == UpdateShape::Pi => {
                self.streaming = Some(PartialMessage::new(m.clone()));
            }
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => {
                if let Some(partial) = &mut self.streaming {
                    partial.apply(assistant_message_event);
                    return true;
                }
            }
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(_),
            }
            | AgentEvent::AgentEnd { .. } => self.streaming = None,
            _ => {}
        }
        false
    }

    fn write(
        &mut self,
        event: &AgentSessionEvent,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        let AgentSessionEvent::Agent(agent_event) = event else {
            return serde_json::to_writer(out, event);
        };
        if self.fold(agent_event)
            && let (
                Some(partial),
                AgentEvent::MessageUpdate {
                    assistant_message_event,
                },
            ) = (&self.streaming, agent_event)
        {
            return write_pi_update(assistant_message_event, partial.message(), out);
        }
        match agent_event {
            // pi writes a tool's `undefined` details as no field; the crate's
            // `AgentToolResult` holds them as `null`.
            AgentEvent::ToolExecutionUpdate {
                partial_result: result,
                ..
            }
            | AgentEvent::ToolExecutionEnd { result, .. }
                if result.details.is_null() =>
            {
                let mut value = serde_json::to_value(event)?;
                for key in ["partialResult", "result"] {
                    if let Some(Value::Object(result)) = value.get_mut(key) {
                        result.shift_remove("details");
                    }
                }
                serde_json::to_writer(out, &value)
            }
            _ => serde_json::to_writer(out, event),
        }
    }
}

/// pi's `message_update`: the event with `partial`, and `message`, both the reply as it
/// stands (serialized once). A `toolcall_start` carries the call's id and name in `partial`
/// only, as in pi.
fn write_pi_update(
    event: &AssistantMessageEvent,
    message: &AssistantMessage,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    let bare;
    let event = match event {
        AssistantMessageEvent::ToolcallStart {
            content_index,
            id,
            tool_name,
        } if !id.is_empty() || !tool_name.is_empty() => {
            bare = AssistantMessageEvent::ToolcallStart {
                content_index: *content_index,
                id: String::new(),
                tool_name: String::new(),
            };
            &bare
        }
        _ => event,
    };
    #[derive(Serialize)]
    struct WithPartial<'a> {
        #[serde(flatten)]
        event: &'a AssistantMessageEvent,
        partial: &'a RawValue,
    }
    #[derive(Serialize)]
    #[serde(tag = "type", rename = "message_update")]
    struct Update<'a> {
        #[serde(rename = "assistantMessageEvent")]
        event: WithPartial<'a>,
        message: &'a RawValue,
    }
    let message = serde_json::value::to_raw_value(message)?;
    serde_json::to_writer(
        out,
        &Update {
            event: WithPartial {
                event,
                partial: &message,
            },
            message: &message,
        },
    )
}

/// Why JSON lines were not (all) written.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum JsonLinesError {
    /// Writing to the sink failed (a closed pipe, a full disk); nothing was written after it.
    #[error("writing JSON lines failed: {0}")]
    Write(Arc<io::Error>),
    /// An event could not be serialized; its line is missing, the others were written.
    #[error("an event could not be written as JSON: {0}")]
    Serialize(Arc<serde_json::Error>),
    /// The writer's task has stopped: [`finish`](JsonLinesWriter::finish) was called, or the
    /// Tokio runtime shut down.
    #[error("the JSON lines writer has stopped")]
    Stopped,
}

impl JsonLinesError {
    /// The I/O error, for [`Write`](Self::Write).
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            JsonLinesError::Write(e) => Some(e),
            _ => None,
        }
    }
}

/// A request to the writer's task.
enum Cmd {
    /// A line (or several), with its `\n`.
    Line(Vec<u8>),
    /// A line that could not be serialized.
    Failed(JsonLinesError),
    /// Write what is queued, flush the sink, answer.
    Flush(oneshot::Sender<Result<(), JsonLinesError>>),
    /// As `Flush`, then shut the sink down and stop.
    Finish(oneshot::Sender<Result<(), JsonLinesError>>),
}

/// What a listener shares with the writer: the encoder, and whether it may still queue.
struct Attached {
    encoder: JsonLineEncoder,
    live: bool,
}

struct Attachment {
    subscription: SessionSubscription,
    state: Arc<Mutex<Attached>>,
}

impl Attachment {
    /// No more lines from the listener (one running now finishes first), and unsubscribed.
    fn stop(self) {
        lock(&self.state).live = false;
        self.subscription.unsubscribe();
    }
}

/// Locks a mutex, ignoring poisoning (every update under these locks is a single step).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes pi's JSON lines to an async sink: the events of the [`AgentSession`] it is
/// [attached](Self::attach) to, and lines of its own ([`write_header`](Self::write_header),
/// [`write_value`](Self::write_value)), in the order they were produced — `pi --mode json`'s
/// stdout, and the event stream of `pi --mode rpc`.
///
/// The session's listener only serializes (with a [`JsonLineEncoder`]) and queues the bytes;
/// a task of the writer writes them, so no async thread waits on the sink. The queue is
/// unbounded: a sink slower than the events (a stalled pipe) makes it grow, as pi's stdout
/// buffer does. Whenever the queue runs empty the sink is flushed, so lines go out as they
/// come.
///
/// The first error — a failed write, an event that could not be serialized — is kept and
/// returned by every later [`flush`](Self::flush) and [`finish`](Self::finish); after a
/// failed write (a closed stdout) the rest is discarded. Nothing panics.
///
/// ```
/// use pi_engine::agent_session::{AgentSession, JsonLinesWriter};
/// use pi_engine::providers::faux::{FauxProvider, FauxResponse};
/// use pi_engine::session::SessionManager;
/// use pi_engine::ApiProvider;
/// use tokio::io::AsyncReadExt;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("Hello!"));
/// let stream = faux.clone();
/// let session = AgentSession::builder(SessionManager::in_memory("/project"))
///     .default_model(faux.model())
///     .stream_fn(move |m, c, o| stream.stream(m, c, o))
///     .build()
///     .unwrap();
///
/// // `pi --mode json "Hi"`, here into a pipe (a program gives `tokio::io::stdout()`).
/// let (sink, mut out) = tokio::io::duplex(1 << 20);
/// let writer = JsonLinesWriter::new(sink);
/// writer.write_header(&session).unwrap();
/// writer.attach(&session);
/// session.prompt("Hi").await.unwrap();
/// writer.finish().await.unwrap(); // every line written, the sink shut down
///
/// let mut text = String::new();
/// out.read_to_string(&mut text).await.unwrap();
/// let types: Vec<String> = text
///     .lines()
///     .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].as_str().unwrap().to_owned())
///     .collect();
/// assert_eq!(types[..3], ["session", "agent_start", "turn_start"]);
/// assert_eq!(types.last().unwrap(), "agent_end");
/// # }
/// ```
///
/// # Cancellation
///
/// Lines are queued synchronously (by the session's listener, by
/// [`write_header`](Self::write_header) and [`write_value`](Self::write_value)) and written by
/// the writer's own task, so no future decides whether a line is written. Dropping a
/// [`flush`](Self::flush) future loses only its answer. Dropping a [`finish`](Self::finish)
/// future after its first poll leaves the writer detached and its task writing what was
/// queued, then shutting the sink down and stopping. Dropping the writer detaches it; its
/// task writes what was queued, flushes the sink and ends (an error then reaches only the
/// log). If the Tokio runtime shuts down first, what was still queued is lost, and
/// `flush`/`finish` report [`JsonLinesError::Stopped`].
pub struct JsonLinesWriter {
    tx: mpsc::UnboundedSender<Cmd>,
    shape: UpdateShape,
    attachment: Mutex<Option<Attachment>>,
}

impl fmt::Debug for JsonLinesWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLinesWriter")
            .field("shape", &self.shape)
            .field("attached", &lock(&self.attachment).is_some())
            .field("stopped", &self.tx.is_closed())
            .finish()
    }
}

impl JsonLinesWriter {
    /// A writer of pi's shapes to `sink`, not attached yet. Its task starts now.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (as [`tokio::spawn`]).
    pub fn new(sink: impl AsyncWrite + Send + Unpin + 'static) -> Self {
        JsonLinesWriter::with_shape(sink, UpdateShape::Pi)
    }

    /// A writer whose `message_update` lines have `shape`.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (as [`tokio::spawn`]).
    pub fn with_shape(sink: impl AsyncWrite + Send + Unpin + 'static, shape: UpdateShape) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(Box::new(sink), rx));
        JsonLinesWriter {
            tx,
            shape,
            attachment: Mutex::new(None),
        }
    }

    /// Writes every event of `session` from now on (detaching from the session it was
    /// attached to, if any). Attached while a reply streams, its updates continue from the
    /// message as the agent has it now.
    pub fn attach(&self, session: &AgentSession) {
        self.attach_filtered(session, |_| true);
    }

    /// Writes the events of `session` for which `keep` is true (e.g. only the events pi
    /// has, leaving out the crate's own). The others still advance the encoder's fold.
    pub fn attach_filtered(
        &self,
        session: &AgentSession,
        keep: impl Fn(&AgentSessionEvent) -> bool + Send + Sync + 'static,
    ) {
        // Held throughout, so that two attachments racing leave one subscription.
        let mut attachment = lock(&self.attachment);
        if let Some(old) = attachment.take() {
            old.stop();
        }
        let mut encoder = JsonLineEncoder::with_shape(self.shape);
        encoder.resume(session.agent().streaming_message());
        let state = Arc::new(Mutex::new(Attached {
            encoder,
            live: true,
        }));
        let shared = state.clone();
        let tx = self.tx.clone();
        let subscription = session.subscribe(move |event| {
            let write = keep(event);
            let mut st = lock(&shared);
            if !st.live {
                return;
            }
            if !write {
                st.encoder.observe(event);
                return;
            }
            let mut line = Vec::with_capacity(128);
            // Queued under the lock: lines leave in the order the encoder saw the events.
            // A send fails only when the task has stopped, which `flush` reports.
            let _ = match st.encoder.encode_into(event, &mut line) {
                Ok(()) => tx.send(Cmd::Line(line)),
                Err(e) => {
                    tracing::warn!(event = event.kind(), error = %e, "an event could not be written as JSON");
                    tx.send(Cmd::Failed(JsonLinesError::Serialize(Arc::new(e))))
                }
            };
        });
        *attachment = Some(Attachment {
            subscription,
            state,
        });
    }

    /// Stops writing the session's events. When it returns, no more of them are queued
    /// (those queued are still written). Does nothing when not attached.
    pub fn detach(&self) {
        let attachment = lock(&self.attachment).take();
        if let Some(a) = attachment {
            a.stop();
        }
    }

    /// Queues the header line of `session` ([`header_line`]), as pi's JSON mode prints it
    /// before any event.
    ///
    /// # Errors
    ///
    /// [`JsonLinesError::Stopped`] when the writer has stopped, and serialization errors
    /// (which a header cannot cause).
    pub fn write_header(&self, session: &AgentSession) -> Result<(), JsonLinesError> {
        let line = session
            .with_session_manager(|sm| header_line(sm.header()))
            .map_err(|e| JsonLinesError::Serialize(Arc::new(e)))?;
        self.send(Cmd::Line(line.into_bytes()))
    }

    /// Queues `value` as one line ([`json_line`]), after the lines queued so far (an RPC
    /// response among the events).
    ///
    /// # Errors
    ///
    /// [`JsonLinesError::Serialize`] when `value` fails to serialize (nothing is queued),
    /// [`JsonLinesError::Stopped`] when the writer has stopped.
    pub fn write_value<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), JsonLinesError> {
        let line = json_line(value).map_err(|e| JsonLinesError::Serialize(Arc::new(e)))?;
        self.send(Cmd::Line(line.into_bytes()))
    }

    /// Resolves when every line queued before the call is written and the sink flushed.
    ///
    /// # Errors
    ///
    /// The first error of the writer so far (see [`JsonLinesError`]), or
    /// [`JsonLinesError::Stopped`].
    ///
    /// # Cancellation
    ///
    /// Dropping the future loses only the answer: the lines are written all the same.
    pub async fn flush(&self) -> Result<(), JsonLinesError> {
        let (reply, answer) = oneshot::channel();
        self.send(Cmd::Flush(reply))?;
        answer.await.unwrap_or(Err(JsonLinesError::Stopped))
    }

    /// Detaches, writes every line queued, flushes and shuts the sink down (for stdout, a
    /// flush; for a pipe or socket, the end of the stream), and stops the writer: later
    /// writes and flushes return [`JsonLinesError::Stopped`].
    ///
    /// # Errors
    ///
    /// As [`flush`](Self::flush), and the shutdown's error.
    ///
    /// # Cancellation
    ///
    /// Dropped after its first poll, the writer is detached and stops after writing what was
    /// queued, all the same.
    pub async fn finish(&self) -> Result<(), JsonLinesError> {
        self.detach();
        let (reply, answer) = oneshot::channel();
        self.send(Cmd::Finish(reply))?;
        answer.await.unwrap_or(Err(JsonLinesError::Stopped))
    }

    fn send(&self, cmd: Cmd) -> Result<(), JsonLinesError> {
        self.tx.send(cmd).map_err(|_| JsonLinesError::Stopped)
    }
}

impl Drop for JsonLinesWriter {
    fn drop(&mut self) {
        self.detach();
    }
}

/// Lines gathered before one write to the sink.
const BATCH: usize = 64 * 1024;

/// The sink and what became of it.
struct Output {
    sink: Box<dyn AsyncWrite + Send + Unpin>,
    buf: Vec<u8>,
    error: Option<JsonLinesError>,
    /// A write failed: the rest is discarded.
    broken: bool,
}

impl Output {
    fn fail(&mut self, error: JsonLinesError) {
        if self.error.is_none() {
            self.error = Some(error);
        }
    }

    fn failed_io(&mut self, e: io::Error) {
        tracing::warn!(error = %e, "writing JSON lines failed; the rest is discarded");
        self.broken = true;
        self.buf = Vec::new();
        self.fail(JsonLinesError::Write(Arc::new(e)));
    }

    async fn push(&mut self, line: Vec<u8>) {
        if self.broken {
            return;
        }
        if self.buf.is_empty() {
            self.buf = line;
        } else {
            self.buf.extend_from_slice(&line);
        }
        if self.buf.len() >= BATCH {
            self.write().await;
        }
    }

    async fn write(&mut self) {
        if self.broken || self.buf.is_empty() {
            return;
        }
        let result = self.sink.write_all(&self.buf).await;
        self.buf.clear();
        if let Err(e) = result {
            self.failed_io(e);
        }
    }

    async fn flush(&mut self) {
        self.write().await;
        if !self.broken
            && let Err(e) = self.sink.flush().await
        {
            self.failed_io(e);
        }
    }

    async fn shutdown(&mut self) {
        self.flush().await;
        if !self.broken
            && let Err(e) = self.sink.shutdown().await
        {
            self.failed_io(e);
        }
    }

    fn result(&self) -> Result<(), JsonLinesError> {
        self.error.clone().map_or(Ok(()), Err)
    }
}

/// The writer's task: writes lines in the order they were queued, gathering those queued
/// together into one write, and flushes the sink whenever the queue runs empty.
async fn run(sink: Box<dyn AsyncWrite + Send + Unpin>, mut rx: mpsc::UnboundedReceiver<Cmd>) {
    let mut out = Output {
        sink,
        buf: Vec::new(),
        error: None,
        broken: false,
    };
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(cmd) = next.take() {
            match cmd {
                Cmd::Line(line) => out.push(line).await,
                Cmd::Failed(e) => out.fail(e),
                Cmd::Flush(reply) => {
                    out.flush().await;
                    let _ = reply.send(out.result());
                }
                Cmd::Finish(reply) => {
                    out.shutdown().await;
                    let _ = reply.send(out.result());
                    return;
                }
            }
            next = rx.try_recv().ok();
        }
        out.flush().await;
    }
    // Every sender is gone (the writer was dropped): what was queued is written.
    out.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentToolResult;
    use crate::agent_session::{CompactionReason, SessionEvent};
    use crate::llm::message::ToolCall;
    use serde_json::{Value, json};
    use std::pin::Pin;
    use std::task::{Context, Poll};

    fn agent(e: AgentEvent) -> AgentSessionEvent {
        AgentSessionEvent::Agent(e)
    }

    fn update(e: AssistantMessageEvent) -> AgentSessionEvent {
        agent(AgentEvent::MessageUpdate {
            assistant_message_event: e,
        })
    }

    fn parse(line: &str) -> Value {
        assert!(line.ends_with('\n'), "{line:?}");
        assert_eq!(line.matches('\n').count(), 1, "{line:?}");
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn the_writer_and_encoder_are_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<JsonLinesWriter>();
        send_sync::<JsonLineEncoder>();
        send_sync::<JsonLinesError>();
    }

    #[test]
    fn header_lines_are_pis() {
        let mut h = SessionHeader::new("id-1", "2026-01-01T00:00:00.000Z", "/p");
        assert_eq!(
            parse(&header_line(&h).unwrap()),
            json!({"type": "session", "version": 3, "id": "id-1",
                   "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"})
        );
        h.parent_session = Some("/sessions/a.jsonl".into());
        assert_eq!(
            parse(&header_line(&h).unwrap())["parentSession"],
            "/sessions/a.jsonl"
        );
        // A version 1 header is printed migrated, its other fields kept.
        let v1: SessionHeader = serde_json::from_value(json!({"type": "session", "id": "old",
            "timestamp": "t", "cwd": "/p", "provider": "anthropic"}))
        .unwrap();
        let v = parse(&header_line(&v1).unwrap());
        assert_eq!(v["version"], 3);
        assert_eq!(v["provider"], "anthropic");
    }

    #[test]
    fn message_updates_carry_the_reply_as_it_stands() {
        let mut enc = JsonLineEncoder::new();
        let start = AssistantMessage::new("anthropic-messages", "p", "m").with_timestamp(7);
        let line = enc
            .encode(&agent(AgentEvent::MessageStart {
                message: start.clone().into(),
            }))
            .unwrap();
        assert_eq!(parse(&line)["message"]["content"], json!([]));

        let events = [
            AssistantMessageEvent::ThinkingStart { content_index: 0 },
            AssistantMessageEvent::ThinkingDelta {
                content_index: 0,
                delta: "hm".into(),
            },
            AssistantMessageEvent::TextStart { content_index: 1 },
            AssistantMessageEvent::TextDelta {
                content_index: 1,
                delta: "a\nb".into(),
            },
            AssistantMessageEvent::ToolcallStart {
                content_index: 2,
                id: "c1".into(),
                tool_name: "read".into(),
            },
            AssistantMessageEvent::ToolcallDelta {
                content_index: 2,
                delta: r#"{"path": "x"#.into(),
            },
        ];
        let mut last = Value::Null;
        for e in events {
            let line = enc.encode(&update(e)).unwrap();
            last = parse(&line);
            assert_eq!(
                last.as_object().unwrap().keys().collect::<Vec<_>>(),
                ["type", "assistantMessageEvent", "message"]
            );
            assert_eq!(last["assistantMessageEvent"]["partial"], last["message"]);
        }
        assert_eq!(last["type"], "message_update");
        assert_eq!(
            last["assistantMessageEvent"]["delta"],
            json!(r#"{"path": "x"#)
        );
        let content = &last["message"]["content"];
        assert_eq!(content[0], json!({"type": "thinking", "thinking": "hm"}));
        assert_eq!(content[1], json!({"type": "text", "text": "a\nb"}));
        assert_eq!(
            content[2],
            json!({"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x"}})
        );
        assert_eq!(last["message"]["role"], "assistant");
        assert_eq!(last["message"]["timestamp"], 7);

        // message_end ends the fold: a stray update is written without the reply.
        let mut end = start;
        end.content = vec![crate::llm::message::AssistantContent::ToolCall(
            ToolCall::new("c1", "read", json!({"path": "x"})),
        )];
        enc.encode(&agent(AgentEvent::MessageEnd {
            message: end.into(),
        }))
        .unwrap();
        let stray = parse(
            &enc.encode(&update(AssistantMessageEvent::TextStart {
                content_index: 0,
            }))
            .unwrap(),
        );
        assert_eq!(
            stray,
            json!({"type": "message_update", "assistantMessageEvent": {"type": "text_start", "contentIndex": 0}})
        );
    }

    #[test]
    fn event_only_updates_and_resuming() {
        let mut enc = JsonLineEncoder::with_shape(UpdateShape::EventOnly);
        enc.encode(&agent(AgentEvent::MessageStart {
            message: AssistantMessage::new("a", "p", "m").into(),
        }))
        .unwrap();
        let v = parse(
            &enc.encode(&update(AssistantMessageEvent::TextStart {
                content_index: 0,
            }))
            .unwrap(),
        );
        assert!(v.get("message").is_none());
        assert!(v["assistantMessageEvent"].get("partial").is_none());

        // Joining in the middle of a reply.
        let mut enc = JsonLineEncoder::new();
        let mut so_far = AssistantMessage::new("a", "p", "m");
        so_far.content = vec![crate::llm::message::AssistantContent::text("Hel")];
        enc.resume(Some(so_far));
        let v = parse(
            &enc.encode(&update(AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "lo".into(),
            }))
            .unwrap(),
        );
        assert_eq!(v["message"]["content"][0]["text"], "Hello");
    }

    #[test]
    fn other_events_are_their_own_json() {
        let mut enc = JsonLineEncoder::new();
        let cases = [
            agent(AgentEvent::AgentStart),
            agent(AgentEvent::ToolExecutionEnd {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                result: AgentToolResult::text("line\nline"),
                is_error: false,
            }),
            AgentSessionEvent::Session(SessionEvent::CompactionStart {
                reason: CompactionReason::Threshold,
            }),
        ];
        for e in cases {
            let line = enc.encode(&e).unwrap();
            assert_eq!(parse(&line), serde_json::to_value(&e).unwrap());
        }
    }

    #[test]
    fn toolcall_start_names_its_call_in_the_partial_only() {
        let start = agent(AgentEvent::MessageStart {
            message: AssistantMessage::new("a", "p", "m").into(),
        });
        let call = update(AssistantMessageEvent::ToolcallStart {
            content_index: 0,
            id: "c1".into(),
            tool_name: "read".into(),
        });
        let mut pi = JsonLineEncoder::new();
        pi.encode(&start).unwrap();
        let v = parse(&pi.encode(&call).unwrap());
        assert_eq!(
            v["assistantMessageEvent"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["type", "contentIndex", "partial"]
        );
        assert_eq!(v["message"]["content"][0]["id"], "c1");
        assert_eq!(v["message"]["content"][0]["name"], "read");

        let mut bare = JsonLineEncoder::with_shape(UpdateShape::EventOnly);
        bare.encode(&start).unwrap();
        assert_eq!(
            parse(&bare.encode(&call).unwrap()),
            json!({"type": "message_update", "assistantMessageEvent": {"type": "toolcall_start",
                "contentIndex": 0, "id": "c1", "toolName": "read"}})
        );
    }

    #[test]
    fn tool_details_left_out_are_no_field() {
        let mut enc = JsonLineEncoder::new();
        let end = |details: Value| {
            agent(AgentEvent::ToolExecutionEnd {
                tool_call_id: "c".into(),
                tool_name: "bash".into(),
                result: AgentToolResult::text("ok").with_details(details),
                is_error: false,
            })
        };
        assert_eq!(
            parse(&enc.encode(&end(Value::Null)).unwrap()),
            json!({"type": "tool_execution_end", "toolCallId": "c", "toolName": "bash",
                "result": {"content": [{"type": "text", "text": "ok"}]}, "isError": false})
        );
        assert_eq!(
            parse(&enc.encode(&end(json!({}))).unwrap())["result"]["details"],
            json!({})
        );
        let progress = agent(AgentEvent::ToolExecutionUpdate {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            args: serde_json::Map::new(),
            partial_result: AgentToolResult::new(vec![]).with_details(Value::Null),
        });
        assert_eq!(
            parse(&enc.encode(&progress).unwrap())["partialResult"],
            json!({"content": []})
        );
    }

    #[test]
    fn observed_events_advance_the_fold() {
        let mut enc = JsonLineEncoder::new();
        enc.observe(&agent(AgentEvent::MessageStart {
            message: AssistantMessage::new("a", "p", "m").into(),
        }));
        enc.observe(&update(AssistantMessageEvent::TextStart {
            content_index: 0,
        }));
        let v = parse(
            &enc.encode(&update(AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "x".into(),
            }))
            .unwrap(),
        );
        assert_eq!(v["message"]["content"][0]["text"], "x");
    }

    #[test]
    fn encode_into_appends() {
        let mut enc = JsonLineEncoder::new();
        let mut out = b"{}\n".to_vec();
        enc.encode_into(&agent(AgentEvent::TurnStart), &mut out)
            .unwrap();
        assert_eq!(out, b"{}\n{\"type\":\"turn_start\"}\n");
    }

    /// A sink that fails every write after `ok` bytes, or stalls.
    struct Sink {
        data: Arc<Mutex<Vec<u8>>>,
        fail_after: usize,
        flushes: Arc<Mutex<usize>>,
        shut: Arc<Mutex<bool>>,
    }

    impl Sink {
        fn new(fail_after: usize) -> Sink {
            Sink {
                data: Arc::default(),
                fail_after,
                flushes: Arc::default(),
                shut: Arc::default(),
            }
        }
    }

    impl AsyncWrite for Sink {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let mut data = self.data.lock().unwrap();
            if data.len() + buf.len() > self.fail_after {
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed")));
            }
            data.extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            *self.flushes.lock().unwrap() += 1;
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            *self.shut.lock().unwrap() = true;
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn lines_are_written_in_order_and_flushed() {
        let sink = Sink::new(usize::MAX);
        let (data, flushes, shut) = (sink.data.clone(), sink.flushes.clone(), sink.shut.clone());
        let writer = JsonLinesWriter::new(sink);
        for i in 0..1000 {
            writer.write_value(&json!({"n": i, "s": "a\nb"})).unwrap();
        }
        writer.flush().await.unwrap();
        let text = String::from_utf8(data.lock().unwrap().clone()).unwrap();
        let lines: Vec<Value> = text
            .split_terminator('\n')
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1000);
        assert!(lines.iter().enumerate().all(|(i, v)| v["n"] == i));
        assert!(*flushes.lock().unwrap() >= 1);
        assert!(!*shut.lock().unwrap());
        writer.finish().await.unwrap();
        assert!(*shut.lock().unwrap());
        assert!(matches!(
            writer.write_value(&1),
            Err(JsonLinesError::Stopped)
        ));
        assert!(matches!(writer.flush().await, Err(JsonLinesError::Stopped)));
    }

    #[tokio::test]
    async fn a_failed_write_is_reported_by_every_flush_and_never_panics() {
        let writer = JsonLinesWriter::new(Sink::new(10));
        writer.write_value(&"short").unwrap(); // 8 bytes
        writer.flush().await.unwrap();
        writer.write_value(&"this one does not fit").unwrap();
        let err = writer.flush().await.unwrap_err();
        assert_eq!(
            err.io_error().map(io::Error::kind),
            Some(io::ErrorKind::BrokenPipe)
        );
        writer.write_value(&"discarded").unwrap();
        assert!(matches!(
            writer.flush().await,
            Err(JsonLinesError::Write(_))
        ));
        assert!(matches!(
            writer.finish().await,
            Err(JsonLinesError::Write(_))
        ));
    }

    #[tokio::test]
    async fn a_value_that_does_not_serialize_is_refused() {
        let writer = JsonLinesWriter::new(Sink::new(usize::MAX));
        let mut bad = std::collections::BTreeMap::new();
        bad.insert(vec![1u8], 1); // a key that is not a string
        assert!(matches!(
            writer.write_value(&bad),
            Err(JsonLinesError::Serialize(_))
        ));
        writer.flush().await.unwrap();
    }

    fn faux_session(replies: &[&str]) -> AgentSession {
        use crate::providers::ApiProvider;
        use crate::providers::faux::{FauxProvider, FauxResponse};
        let faux = FauxProvider::new();
        for r in replies {
            faux.push(FauxResponse::text(*r));
        }
        let stream = faux.clone();
        AgentSession::builder(crate::session::SessionManager::in_memory("/p"))
            .default_model(faux.model())
            .stream_fn(move |m, c, o| stream.stream(m, c, o))
            .build()
            .unwrap()
    }

    fn lines_of(data: &Mutex<Vec<u8>>) -> Vec<Value> {
        let text = String::from_utf8(data.lock().unwrap().clone()).unwrap();
        assert!(text.is_empty() || text.ends_with('\n'));
        text.split_terminator('\n')
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn a_session_s_events_in_order_until_detached() {
        let session = faux_session(&["one", "two", "three"]);
        let sink = Sink::new(usize::MAX);
        let data = sink.data.clone();
        let writer = JsonLinesWriter::new(sink);
        writer.write_header(&session).unwrap();
        writer.attach_filtered(&session, |e| e.kind() != "message_update");
        session.prompt("hi").await.unwrap().into_result().unwrap();
        writer.flush().await.unwrap();
        let lines = lines_of(&data);
        let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "session",
                "agent_start",
                "turn_start",
                "message_start",
                "message_end",
                "message_start",
                "message_end",
                "turn_end",
                "agent_end"
            ]
        );
        assert_eq!(lines[0]["id"], session.session_id());
        assert_eq!(lines[6]["message"]["content"][0]["text"], "one");

        // Detached: the next run writes nothing.
        writer.detach();
        session
            .prompt("again")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        writer.flush().await.unwrap();
        assert_eq!(lines_of(&data).len(), lines.len());

        // Attached again (pi's shape): updates carry the reply.
        writer.attach(&session);
        session.prompt("more").await.unwrap().into_result().unwrap();
        writer.finish().await.unwrap();
        let all = lines_of(&data);
        let update = all.iter().find(|l| l["type"] == "message_update").unwrap();
        assert_eq!(
            update["assistantMessageEvent"]["partial"],
            update["message"]
        );
        assert_eq!(all.last().unwrap()["type"], "agent_end");
    }

    #[tokio::test]
    async fn dropping_the_writer_still_writes_what_was_queued() {
        let sink = Sink::new(usize::MAX);
        let data = sink.data.clone();
        let writer = JsonLinesWriter::new(sink);
        writer.write_value(&1).unwrap();
        writer.write_value(&2).unwrap();
        drop(writer);
        for _ in 0..100 {
            if data.lock().unwrap().len() == 4 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(&*data.lock().unwrap(), b"1\n2\n");
    }
}
