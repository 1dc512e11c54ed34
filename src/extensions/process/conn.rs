//! The connection to a child: its pipes (a writer task, a reader task, a task logging its
//! stderr), the requests waiting for answers, the calls the child makes, and the child's life
//! (a task that waits for it and stops it).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::super::context::ExtensionContext;
use super::super::deadline::UiClock;
use super::super::runner::ExtensionRunner;
use super::{ProcessCallError, ProcessExtensionOptions, calls, wire};
use crate::agent::ToolUpdates;
use crate::agent_session::AgentSession;
use crate::process::GroupGuard;

/// The `tracing` target of everything about process extensions (their stderr included).
pub(super) const TARGET: &str = "pi_engine::extensions::process";

/// The most bytes queued for the child's stdin; past it, requests fail (`Backlog`) rather
/// than fill memory while a child does not read.
const MAX_QUEUED_BYTES: usize = 64 * 1024 * 1024;

/// The longest stderr line kept (the rest of the line is dropped).
const MAX_STDERR_LINE: usize = 8 * 1024;

/// How many stderr lines are kept to explain a death.
const STDERR_TAIL: usize = 8;

/// Undelivered updates kept per tool call (progress: more are dropped).
const UPDATE_BUFFER: usize = 64;

/// Session writes waiting for the ordered worker.
const ORDERED_BUFFER: usize = 256;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ----- lines --------------------------------------------------------------------------

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line (without its `\n`) is in the buffer.
    Full,
    /// The line passed the cap (only with [`Overflow::Fail`]); the stream is left mid-line.
    TooLong,
    /// The end of the stream.
    Eof,
}

/// What [`read_line`] does with a line longer than the cap.
#[derive(Debug, Clone, Copy)]
enum Overflow {
    /// Stop: the protocol's lines.
    Fail,
    /// Keep the start, drop the rest: stderr.
    Truncate,
}

/// Reads one line into `buf`, never holding more than `max` bytes of it.
async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
    overflow: Overflow,
) -> io::Result<Line> {
    buf.clear();
    let mut started = false;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if started { Line::Full } else { Line::Eof });
        }
        started = true;
        let (take, end) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        if take > room {
            match overflow {
                Overflow::Fail => return Ok(Line::TooLong),
                Overflow::Truncate => buf.extend_from_slice(&chunk[..room]),
            }
        } else {
            buf.extend_from_slice(&chunk[..take]);
        }
        r.consume(take + usize::from(end));
        if end {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Line::Full);
        }
    }
}

/// The start of a line, for an error message.
fn preview(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned();
    if line.len() > 120 {
        format!("{text}…")
    } else {
        text
    }
}

/// How the handshake ended without a `register`.
#[derive(Debug)]
pub(super) enum HandshakeEnd {
    /// The child closed its output (exited).
    Exited,
    /// The child wrote something else.
    Broken(String),
}

/// Reads until the child's `register`; lines that are not JSON objects are skipped (a
/// stray print at start-up).
pub(super) async fn read_register(
    name: &str,
    stdout: &mut BufReader<ChildStdout>,
    max: usize,
) -> Result<Map<String, Value>, HandshakeEnd> {
    let mut line = Vec::new();
    loop {
        match read_line(stdout, &mut line, max, Overflow::Fail).await {
            Err(e) => {
                return Err(HandshakeEnd::Broken(format!(
                    "its output could not be read: {e}"
                )));
            }
            Ok(Line::Eof) => return Err(HandshakeEnd::Exited),
            Ok(Line::TooLong) => {
                return Err(HandshakeEnd::Broken(format!(
                    "a line longer than {max} bytes"
                )));
            }
            Ok(Line::Full) => {}
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(&line) {
            Ok(Value::Object(m)) => {
                return match m.get("type").and_then(Value::as_str) {
                    Some("register") => Ok(m),
                    Some(other) => Err(HandshakeEnd::Broken(format!(
                        "expected a `register` message first, got {other:?}"
                    ))),
                    None => Err(HandshakeEnd::Broken(
                        "expected a `register` message first, got a message without a type".into(),
                    )),
                };
            }
            _ => tracing::warn!(
                target: TARGET,
                extension = name,
                line = %preview(&line),
                "skipping a line that is not a protocol message before `register`"
            ),
        }
    }
}

// ----- the child's life ---------------------------------------------------------------

/// What goes to the writer task.
enum Out {
    Line(Vec<u8>),
    /// Close the child's stdin: the connection ends.
    Close,
}

/// The queue of lines for the child's stdin, bounded in bytes.
pub(super) struct Outbox {
    tx: mpsc::UnboundedSender<Out>,
    queued: Arc<AtomicUsize>,
}

impl Outbox {
    /// Queues `message` as one line.
    pub(super) fn send(&self, message: &Value) -> Result<(), ProcessCallError> {
        let mut line = serde_json::to_vec(message).map_err(|e| ProcessCallError::Failed {
            message: format!("could not encode a message for the extension process: {e}"),
        })?;
        line.push(b'\n');
        let len = line.len();
        if self.queued.fetch_add(len, Ordering::AcqRel) + len > MAX_QUEUED_BYTES {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            return Err(ProcessCallError::Backlog);
        }
        self.tx.send(Out::Line(line)).map_err(|_| {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            ProcessCallError::Exited {
                reason: "extension process closed its input".into(),
            }
        })
    }

    fn close(&self) {
        let _ = self.tx.send(Out::Close);
    }
}

/// Answers a call of the child.
fn reply(outbox: &Outbox, id: Value, answer: Result<Value, String>) {
    let message = match answer {
        Ok(result) => json!({"type": "reply", "id": id, "result": result}),
        Err(error) => json!({"type": "reply", "id": id, "error": error}),
    };
    // A child that cannot be written to is dying: the reader reports it.
    let _ = outbox.send(&message);
}

/// What the tasks around the child know of its life.
#[derive(Clone)]
struct Vitals {
    /// Cancelled to stop the child (shutdown, a fatal protocol error, the connection gone).
    stop: CancellationToken,
    /// How it ended (`exit status: 1`), once it has.
    exit: watch::Receiver<Option<String>>,
    /// Its last stderr lines.
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// Cancelled when its stderr is closed (read to the end).
    stderr_done: CancellationToken,
}

impl Vitals {
    /// How the child ended: its exit status when it comes soon, and its last stderr lines.
    async fn death(&self) -> Death {
        let mut exit = self.exit.clone();
        let status = tokio::time::timeout(Duration::from_millis(500), async {
            exit.wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|s| s.clone())
        })
        .await
        .ok()
        .flatten();
        let _ =
            tokio::time::timeout(Duration::from_millis(200), self.stderr_done.cancelled()).await;
        let tail: Vec<String> = lock(&self.stderr_tail)
            .iter()
            .rev()
            .take(3)
            .rev()
            .cloned()
            .collect();
        let tail = (!tail.is_empty()).then(|| {
            let mut text = tail.join(" | ");
            if text.len() > 600 {
                let mut cut = 600;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.push('…');
            }
            text
        });
        Death { status, tail }
    }
}

/// How a child ended, as far as is known.
pub(super) struct Death {
    /// `exit status: 1`, `signal: 9 (SIGKILL)`.
    status: Option<String>,
    /// Its last stderr lines.
    tail: Option<String>,
}

impl Death {
    /// `what` (e.g. `extension process exited`), the status in brackets, the stderr tail.
    fn describe(&self, what: &str, with_status: bool) -> String {
        let mut text = what.to_owned();
        if let (true, Some(status)) = (with_status, &self.status) {
            text.push_str(&format!(" ({status})"));
        }
        if let Some(tail) = &self.tail {
            text.push_str("; its last error output: ");
            text.push_str(tail);
        }
        text
    }

    /// For a child that ended its output: exited, or just closed it.
    fn exited(&self) -> String {
        if self.status.is_some() {
            self.describe("extension process exited", true)
        } else {
            self.describe("extension process closed its output", false)
        }
    }

    /// For the handshake's error: the status and the tail, without a prefix.
    pub(super) fn brief(&self) -> String {
        let status = self
            .status
            .clone()
            .unwrap_or_else(|| "it closed its output".to_owned());
        match &self.tail {
            Some(tail) => format!("{status}; its last error output: {tail}"),
            None => status,
        }
    }
}

/// The child's tasks, stopped when this is dropped: its stdin is closed and, after the
/// grace, its process group is signalled.
pub(super) struct Lifeline {
    outbox: Arc<Outbox>,
    vitals: Vitals,
    pid: Option<u32>,
    grace: Duration,
}

impl Lifeline {
    /// Starts the tasks around a spawned `child` (its stdin and stderr taken).
    pub(super) fn start(
        name: &str,
        child: Child,
        stdin: ChildStdin,
        stderr: ChildStderr,
        options: &ProcessExtensionOptions,
    ) -> Lifeline {
        let pid = child.id();
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        tokio::spawn(write_loop(stdin, rx, queued.clone()));
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_done = CancellationToken::new();
        tokio::spawn(stderr_loop(
            name.to_owned(),
            stderr,
            stderr_tail.clone(),
            stderr_done.clone(),
        ));
        let stop = CancellationToken::new();
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(wait_loop(
            child,
            stop.clone(),
            options.shutdown_grace,
            exit_tx,
        ));
        Lifeline {
            outbox: Arc::new(Outbox { tx, queued }),
            vitals: Vitals {
                stop,
                exit,
                stderr_tail,
                stderr_done,
            },
            pid,
            grace: options.shutdown_grace,
        }
    }

    /// Queues a message for the child.
    pub(super) fn send(&self, message: &Value) -> Result<(), ProcessCallError> {
        self.outbox.send(message)
    }

    /// How the child ended (after it closed its output during the handshake).
    pub(super) async fn death(&self) -> Death {
        self.vitals.death().await
    }
}

impl Drop for Lifeline {
    fn drop(&mut self) {
        self.outbox.close();
        self.vitals.stop.cancel();
    }
}

/// Writes the queued lines to the child's stdin, in order, until `Close` or a broken pipe.
async fn write_loop(
    mut stdin: ChildStdin,
    mut rx: mpsc::UnboundedReceiver<Out>,
    queued: Arc<AtomicUsize>,
) {
    while let Some(out) = rx.recv().await {
        match out {
            Out::Line(line) => {
                let written = stdin.write_all(&line).await;
                queued.fetch_sub(line.len(), Ordering::AcqRel);
                if written.is_err() {
                    // The child is gone; the reader sees its output end.
                    break;
                }
            }
            Out::Close => break,
        }
    }
    let _ = stdin.shutdown().await;
}

/// Logs the child's stderr (never to the terminal), keeping its last lines.
async fn stderr_loop(
    name: String,
    stderr: ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
    done: CancellationToken,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    while let Ok(Line::Full) =
        read_line(&mut reader, &mut line, MAX_STDERR_LINE, Overflow::Truncate).await
    {
        let text = String::from_utf8_lossy(&line).into_owned();
        tracing::info!(target: TARGET, extension = %name, "{text}");
        if text.trim().is_empty() {
            continue;
        }
        let mut tail = lock(&tail);
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(text);
    }
    done.cancel();
}

/// Waits for the child; when asked to stop it, gives it the grace after its stdin closed,
/// then `SIGTERM`s its group, then `SIGKILL`s it. Publishes how it ended.
async fn wait_loop(
    mut child: Child,
    stop: CancellationToken,
    grace: Duration,
    exit: watch::Sender<Option<String>>,
) {
    let mut group = GroupGuard::new(child.id(), grace);
    let status = tokio::select! {
        status = child.wait() => status,
        () = stop.cancelled() => stop_child(&mut child, &group, grace).await,
    };
    // The extension's process group does not outlive it.
    group.kill(&mut child);
    group.disarm();
    let text = match status {
        Ok(status) => status.to_string(),
        Err(e) => format!("could not be waited for: {e}"),
    };
    let _ = exit.send(Some(text));
}

async fn stop_child(
    child: &mut Child,
    group: &GroupGuard,
    grace: Duration,
) -> io::Result<std::process::ExitStatus> {
    if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
        return status;
    }
    let (kill_at, killed) = group.terminate(child);
    if !killed {
        if let Ok(status) = tokio::time::timeout_at(kill_at, child.wait()).await {
            return status;
        }
        group.kill(child);
    }
    child.wait().await
}

// ----- the connection -----------------------------------------------------------------

/// A request waiting for the child's answer.
struct Pending {
    answer: oneshot::Sender<Result<Value, ProcessCallError>>,
    /// A tool's updates.
    updates: Option<mpsc::Sender<Value>>,
    /// The context of the handler or tool it runs for: the child's calls made for it use
    /// it (its dialogs pause its deadline).
    ctx: Option<ExtensionContext>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    pending: HashMap<u64, Pending>,
    /// Set once the child is gone: every request fails with it.
    dead: Option<String>,
}

/// The session the extension last served (held weakly: the session holds the extension).
struct Binding {
    session: Arc<dyn Fn() -> Option<AgentSession> + Send + Sync>,
    runner: Weak<ExtensionRunner>,
    extension: usize,
}

/// What the handlers, the tools and the reader share.
pub(super) struct Shared {
    name: String,
    outbox: Arc<Outbox>,
    state: Mutex<State>,
    binding: Mutex<Option<Binding>>,
    vitals: Vitals,
}

/// The owner of a connection: the child stops when the last one is dropped.
pub(super) struct Conn {
    shared: Arc<Shared>,
    life: Lifeline,
}

impl Conn {
    /// The connection after the handshake: starts reading the child's output.
    pub(super) fn new(
        name: String,
        life: Lifeline,
        stdout: BufReader<ChildStdout>,
        options: &ProcessExtensionOptions,
    ) -> Conn {
        let shared = Arc::new(Shared {
            name,
            outbox: life.outbox.clone(),
            state: Mutex::new(State {
                next_id: 1,
                ..State::default()
            }),
            binding: Mutex::new(None),
            vitals: life.vitals.clone(),
        });
        let (worker_tx, worker_rx) = mpsc::channel(ORDERED_BUFFER);
        tokio::spawn(ordered_loop(life.outbox.clone(), worker_rx));
        tokio::spawn(read_loop(
            shared.clone(),
            stdout,
            options.max_line_bytes,
            worker_tx,
        ));
        Conn { shared, life }
    }

    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The child's pid, while it runs.
    pub(super) fn pid(&self) -> Option<u32> {
        self.life
            .vitals
            .exit
            .borrow()
            .is_none()
            .then_some(self.life.pid)
            .flatten()
    }

    /// Stops the child and waits (bounded) for how it ended.
    pub(super) async fn shutdown(&self) -> Option<String> {
        self.shared.fail_all("extension process was shut down");
        self.life.outbox.close();
        self.life.vitals.stop.cancel();
        let mut exit = self.life.vitals.exit.clone();
        let bound = self.life.grace * 2 + Duration::from_secs(5);
        tokio::time::timeout(bound, async {
            exit.wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|s| s.clone())
        })
        .await
        .ok()
        .flatten()
    }
}

/// Removes a request that is given up (its future dropped: a deadline, an abort) and tells
/// the child with `cancel`.
struct RequestGuard {
    shared: Arc<Shared>,
    id: u64,
    cancel_sent: bool,
}

impl RequestGuard {
    /// Tells the child to stop, still waiting for its answer (a tool).
    fn cancel_now(&mut self) {
        if !self.cancel_sent {
            self.cancel_sent = true;
            let _ = self
                .shared
                .outbox
                .send(&json!({"type": "cancel", "id": self.id}));
        }
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let waiting = {
            let mut state = lock(&self.shared.state);
            state.pending.remove(&self.id).is_some() && state.dead.is_none()
        };
        if waiting {
            self.cancel_now();
        }
    }
}

fn received(
    answer: Result<Result<Value, ProcessCallError>, oneshot::error::RecvError>,
) -> Result<Value, ProcessCallError> {
    answer.unwrap_or_else(|_| {
        Err(ProcessCallError::Exited {
            reason: "extension process connection closed".into(),
        })
    })
}

/// The part of pi's `ExtensionContext` that goes with each request.
fn snapshot(ctx: &ExtensionContext) -> Value {
    json!({
        "hasUI": ctx.has_ui(),
        "cwd": ctx.cwd().to_string_lossy(),
        "isIdle": ctx.is_idle(),
    })
}

impl Shared {
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// Remembers the session a handler runs for (the child's calls without a request, and
    /// the tools, use it).
    pub(super) fn bind(&self, ctx: &ExtensionContext) {
        let mut binding = lock(&self.binding);
        if binding
            .as_ref()
            .is_some_and(|b| std::ptr::eq(b.runner.as_ptr(), Arc::as_ptr(&ctx.runner)))
        {
            return;
        }
        let weak = ctx.session.downgrade();
        *binding = Some(Binding {
            session: Arc::new(move || weak.upgrade()),
            runner: Arc::downgrade(&ctx.runner),
            extension: ctx.extension,
        });
    }

    fn bound_session(&self) -> Option<AgentSession> {
        let session = lock(&self.binding).as_ref().map(|b| b.session.clone())?;
        session()
    }

    /// A context of the bound session, outside any handler call.
    pub(super) fn detached_context(
        &self,
        clock: Arc<UiClock>,
        cancel: CancellationToken,
    ) -> Option<ExtensionContext> {
        let (session, runner, extension) = {
            let b = lock(&self.binding);
            let b = b.as_ref()?;
            (b.session.clone(), b.runner.clone(), b.extension)
        };
        Some(ExtensionContext::new(
            session()?,
            runner.upgrade()?,
            extension,
            clock,
            cancel,
        ))
    }

    /// Reports a protocol error (`extension_error` on the bound session, and a warning).
    pub(super) fn protocol_error(&self, event: &str, error: &str) {
        tracing::warn!(target: TARGET, extension = %self.name, event, error, "process extension error");
        if let Some(session) = self.bound_session() {
            session.emit_extension_error(&self.name, event, error);
        }
    }

    /// Marks the child gone (unless it already is) and fails every waiting request.
    fn fail_all(&self, reason: &str) {
        // The first reason stays: a shutdown is not later called a crash.
        let (reason, pending): (String, Vec<Pending>) = {
            let mut state = lock(&self.state);
            let reason = state.dead.get_or_insert_with(|| reason.to_owned()).clone();
            (reason, state.pending.drain().map(|(_, p)| p).collect())
        };
        for p in pending {
            let _ = p.answer.send(Err(ProcessCallError::Exited {
                reason: reason.clone(),
            }));
        }
    }

    /// Registers and sends a request.
    fn send_request(
        self: &Arc<Self>,
        kind: &str,
        body: Map<String, Value>,
        ctx: Option<&ExtensionContext>,
        updates: Option<mpsc::Sender<Value>>,
    ) -> Result<
        (
            oneshot::Receiver<Result<Value, ProcessCallError>>,
            RequestGuard,
        ),
        ProcessCallError,
    > {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut state = lock(&self.state);
            if let Some(reason) = &state.dead {
                return Err(ProcessCallError::Exited {
                    reason: reason.clone(),
                });
            }
            let id = state.next_id;
            state.next_id += 1;
            state.pending.insert(
                id,
                Pending {
                    answer: tx,
                    updates,
                    ctx: ctx.cloned(),
                },
            );
            id
        };
        let mut guard = RequestGuard {
            shared: self.clone(),
            id,
            cancel_sent: false,
        };
        let mut message = Map::with_capacity(body.len() + 3);
        message.insert("type".into(), Value::from(kind));
        message.insert("id".into(), Value::from(id));
        message.extend(body);
        if let Some(ctx) = ctx {
            message.insert("ctx".into(), snapshot(ctx));
        }
        if let Err(e) = self.outbox.send(&Value::Object(message)) {
            // The child never got it: nothing to cancel.
            guard.cancel_sent = true;
            return Err(e);
        }
        Ok((rx, guard))
    }

    /// Sends an event to the child and waits for its answer.
    pub(super) async fn event(
        self: &Arc<Self>,
        ctx: &ExtensionContext,
        payload: Value,
    ) -> Result<Value, ProcessCallError> {
        self.bind(ctx);
        let mut body = Map::new();
        body.insert("event".into(), payload);
        self.handler_request("event", body, ctx).await
    }

    /// A request for a handler: it ends when the answer comes or the handler's token is
    /// cancelled (an abort); the runner's deadline drops it.
    pub(super) async fn handler_request(
        self: &Arc<Self>,
        kind: &str,
        body: Map<String, Value>,
        ctx: &ExtensionContext,
    ) -> Result<Value, ProcessCallError> {
        let (rx, _guard) = self.send_request(kind, body, Some(ctx), None)?;
        tokio::select! {
            biased;
            answer = rx => received(answer),
            () = ctx.cancelled().cancelled() => Err(ProcessCallError::Cancelled),
        }
    }

    /// A request without a context (completions).
    pub(super) async fn plain_request(
        self: &Arc<Self>,
        kind: &str,
        body: Map<String, Value>,
    ) -> Result<Value, ProcessCallError> {
        let (rx, _guard) = self.send_request(kind, body, None, None)?;
        received(rx.await)
    }

    /// A tool execution: its updates are passed on; `cancel` sends `cancel` and the
    /// answer is still waited for (the agent's abort grace bounds that).
    pub(super) async fn tool_request(
        self: &Arc<Self>,
        body: Map<String, Value>,
        ctx: Option<&ExtensionContext>,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> Result<Value, ProcessCallError> {
        let (utx, mut urx) = mpsc::channel(UPDATE_BUFFER);
        let (mut rx, mut guard) = self.send_request("tool", body, ctx, Some(utx))?;
        loop {
            tokio::select! {
                // Updates the child sent before its result reach the session first.
                biased;
                Some(partial) = urx.recv() => match wire::parse_tool_output(partial) {
                    Ok(partial) => updates.update(partial).await,
                    Err(e) => tracing::debug!(target: TARGET, extension = %self.name, error = %e, "an invalid tool update; dropped"),
                },
                answer = &mut rx => return received(answer),
                () = cancel.cancelled(), if !guard.cancel_sent => guard.cancel_now(),
            }
        }
    }

    // ----- what the child writes ------------------------------------------------------

    /// One line from the child.
    fn dispatch(self: &Arc<Self>, line: &[u8], ordered: &mpsc::Sender<OrderedCall>) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let message = match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return self.protocol_error(
                    "protocol",
                    &format!("a line that is not a JSON object: {}", preview(line)),
                );
            }
            Err(e) => {
                return self.protocol_error(
                    "protocol",
                    &format!("a line that is not JSON ({e}): {}", preview(line)),
                );
            }
        };
        match message.get("type").and_then(Value::as_str) {
            Some("result") => {
                let result = message.get("result").cloned().unwrap_or(Value::Null);
                self.answer(&message, Ok(result));
            }
            Some("error") => {
                let text = match message.get("error") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Object(o)) if o.get("message").is_some_and(Value::is_string) => o
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    Some(other) => other.to_string(),
                    None => "the extension failed (no error text)".to_owned(),
                };
                self.answer(&message, Err(ProcessCallError::Failed { message: text }));
            }
            Some("update") => self.update(&message),
            Some("call") => self.child_call(message, ordered),
            Some(other) => self.protocol_error(
                "protocol",
                &format!("unknown message type {other:?}: {}", preview(line)),
            ),
            None => self.protocol_error(
                "protocol",
                &format!("a message without a type: {}", preview(line)),
            ),
        }
    }

    fn request_id(&self, message: &Map<String, Value>) -> Option<u64> {
        let id = message.get("id").and_then(Value::as_u64);
        if id.is_none() {
            self.protocol_error(
                "protocol",
                "a `result`, `error` or `update` without the numeric id of a request",
            );
        }
        id
    }

    fn answer(&self, message: &Map<String, Value>, answer: Result<Value, ProcessCallError>) {
        let Some(id) = self.request_id(message) else {
            return;
        };
        let pending = lock(&self.state).pending.remove(&id);
        match pending {
            Some(p) => {
                let _ = p.answer.send(answer);
            }
            None => tracing::debug!(
                target: TARGET,
                extension = %self.name,
                id,
                "an answer to a request that is not waiting (late, or after `cancel`); ignored"
            ),
        }
    }

    fn update(&self, message: &Map<String, Value>) {
        let Some(id) = self.request_id(message) else {
            return;
        };
        let partial = message.get("partialResult").cloned().unwrap_or(Value::Null);
        let updates = lock(&self.state)
            .pending
            .get(&id)
            .and_then(|p| p.updates.clone());
        match updates {
            Some(tx) => {
                if tx.try_send(partial).is_err() {
                    tracing::debug!(target: TARGET, extension = %self.name, id, "too many tool updates waiting; one dropped");
                }
            }
            None => tracing::debug!(
                target: TARGET,
                extension = %self.name,
                id,
                "an update for a request that is not a running tool; ignored"
            ),
        }
    }

    /// A call of the child: display calls and reads now, session writes in order on the
    /// ordered worker, dialogs and `exec` on tasks of their own.
    fn child_call(
        self: &Arc<Self>,
        message: Map<String, Value>,
        ordered: &mpsc::Sender<OrderedCall>,
    ) {
        let Some(id) = message
            .get("id")
            .filter(|v| v.is_number() || v.is_string())
            .cloned()
        else {
            return self
                .protocol_error("protocol", "a `call` without an id (a number or a string)");
        };
        let outbox = &self.outbox;
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return reply(outbox, id, Err("a call needs a `method`".into()));
        };
        let params = match message.get("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return reply(outbox, id, Err("`params` must be an object".into())),
        };
        let Some(kind) = calls::kind(method) else {
            return reply(outbox, id, Err(format!("unknown method {method:?}")));
        };
        let parent = message.get("parent").and_then(Value::as_u64);
        let parent_ctx = parent.and_then(|p| {
            lock(&self.state)
                .pending
                .get(&p)
                .and_then(|p| p.ctx.clone())
        });
        if let (calls::Kind::Dialog, Some(p), None) = (kind, parent, &parent_ctx) {
            return reply(outbox, id, Err(format!("request {p} has ended")));
        }
        let ctx = parent_ctx.or_else(|| {
            self.detached_context(Arc::new(UiClock::default()), CancellationToken::new())
        });
        let Some(ctx) = ctx else {
            return reply(
                outbox,
                id,
                Err("no session has used this extension yet".into()),
            );
        };
        let method = method.to_owned();
        match kind {
            calls::Kind::Inline => reply(outbox, id, calls::inline(&method, &params, &ctx)),
            calls::Kind::Ordered => {
                let call = OrderedCall {
                    id: id.clone(),
                    method,
                    params,
                    ctx,
                };
                if ordered.try_send(call).is_err() {
                    reply(outbox, id, Err("too many calls waiting; try again".into()));
                }
            }
            calls::Kind::Dialog => {
                let outbox = outbox.clone();
                tokio::spawn(async move {
                    // A dialog goes when the request it was asked for ends.
                    let answer = tokio::select! {
                        answer = calls::dialog(&method, &params, &ctx) => answer,
                        () = ctx.cancelled().cancelled() => Err("the request it was asked for has ended".into()),
                    };
                    reply(&outbox, id, answer);
                });
            }
            calls::Kind::Exec => {
                let outbox = outbox.clone();
                tokio::spawn(async move {
                    reply(&outbox, id, calls::exec(&params, &ctx).await);
                });
            }
        }
    }

    /// The child's output ended, or broke the line cap.
    async fn ended(&self, end: End, max_line: usize) {
        let stopping = self.vitals.stop.is_cancelled();
        let reason = match end {
            End::TooLong => {
                self.vitals.stop.cancel();
                self.vitals.death().await.describe(
                    &format!(
                        "extension process wrote a line longer than {max_line} bytes and was stopped"
                    ),
                    false,
                )
            }
            _ if stopping => "extension process was shut down".to_owned(),
            End::Eof => self.vitals.death().await.exited(),
            End::Failed(e) => {
                self.vitals.stop.cancel();
                self.vitals.death().await.describe(
                    &format!("extension process output could not be read ({e})"),
                    false,
                )
            }
        };
        let already = lock(&self.state).dead.is_some();
        self.fail_all(&reason);
        // Whatever is left of it goes.
        self.vitals.stop.cancel();
        if !already && !stopping {
            self.protocol_error("process", &reason);
        }
    }
}

/// How the reading ended.
enum End {
    Eof,
    TooLong,
    Failed(String),
}

/// Reads the child's lines until its output ends.
async fn read_loop(
    shared: Arc<Shared>,
    mut stdout: BufReader<ChildStdout>,
    max_line: usize,
    ordered: mpsc::Sender<OrderedCall>,
) {
    let mut line = Vec::new();
    let end = loop {
        match read_line(&mut stdout, &mut line, max_line, Overflow::Fail).await {
            Ok(Line::Full) => shared.dispatch(&line, &ordered),
            Ok(Line::TooLong) => break End::TooLong,
            Ok(Line::Eof) => break End::Eof,
            Err(e) => break End::Failed(e.to_string()),
        }
    };
    drop(ordered);
    shared.ended(end, max_line).await;
}

/// A session write the child asked for, done in order.
struct OrderedCall {
    id: Value,
    method: String,
    params: Map<String, Value>,
    ctx: ExtensionContext,
}

async fn ordered_loop(outbox: Arc<Outbox>, mut rx: mpsc::Receiver<OrderedCall>) {
    while let Some(call) = rx.recv().await {
        let answer = calls::ordered(&call.method, &call.params, &call.ctx).await;
        reply(&outbox, call.id, answer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize, overflow: Overflow) -> Vec<(Line, Vec<u8>)> {
        let mut r = BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let l = read_line(&mut r, &mut buf, max, overflow).await.unwrap();
            let stop = l != Line::Full;
            out.push((l, buf.clone()));
            if stop {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn lines_are_split_and_capped() {
        let got = lines(b"ab\r\ncdef\n\nlast", 16, Overflow::Fail).await;
        let texts: Vec<&[u8]> = got.iter().map(|(_, b)| b.as_slice()).collect();
        assert_eq!(texts, [&b"ab"[..], b"cdef", b"", b"last", b""]);
        assert_eq!(got.last().unwrap().0, Line::Eof);

        let got = lines(b"short\nmuch too long a line\nnext\n", 8, Overflow::Fail).await;
        assert_eq!(got[0], (Line::Full, b"short".to_vec()));
        assert_eq!(got[1].0, Line::TooLong);

        let got = lines(b"much too long a line\nnext\n", 8, Overflow::Truncate).await;
        assert_eq!(got[0], (Line::Full, b"much too".to_vec()));
        assert_eq!(got[1], (Line::Full, b"next".to_vec()));
    }
}
