//! [`RmcpConnector`]: our [`McpConnector`] on the rmcp crate's client. This is the only file
//! that names rmcp's types; an rmcp upgrade touches it alone. Values cross the seam as MCP's
//! JSON (rmcp's structs are serialized and read back as ours), so a field rmcp adds or
//! renames in Rust does not reach the rest of the crate.
//!
//! What it adds to rmcp's defaults, each learnt from a bug that other MCP clients shipped:
//!
//! * a stdio server is spawned by us, not by rmcp's `TokioChildProcess`, so that it gets its
//!   own process group (`process_group(0)`), its stderr goes to the log (rmcp inherits it,
//!   which scribbles over a terminal UI), its exit is noticed at once (a call in flight ends
//!   with an error instead of waiting for a pipe a grandchild may hold open), and the whole
//!   group is killed on close and on drop;
//! * the client offers one root, the working directory (servers such as
//!   `server-filesystem` take their allowed directories from it);
//! * progress notifications are routed to the call that asked for them.
//!
//! Deadlines are not set here: the manager bounds every call and drops it on abort or
//! timeout, and that drop sends `notifications/cancelled` (see `InFlight`).

// Roots and server logging are deprecated by the 2026-07-28 revision (SEP-2577), but every
// server on the earlier revisions, which is all of npm's today, still uses them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, RequestId, ServerResult,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ErrorData, Peer, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::McpError;
use super::config::{McpServerConfig, McpTransport};
use super::connection::{
    ConnectContext, McpCall, McpCallResult, McpConnection, McpConnector, McpEvent, McpEventFn,
    McpToolInfo, ProgressFn,
};
use crate::process::GroupGuard;

/// Between `SIGTERM` and `SIGKILL` when a stdio server is stopped.
const KILL_GRACE: Duration = Duration::from_secs(1);
/// How long `close` waits for rmcp's service loop to wind down.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// The log target of servers' stderr and of this module.
const LOG_TARGET: &str = "pi_engine::mcp";

/// Connects to MCP servers with rmcp: stdio servers as child processes in their own process
/// group, HTTP servers over streamable HTTP (reqwest; `https` needs the `tls` feature).
///
/// ```no_run
/// use std::sync::Arc;
/// use pi_engine::mcp::{ConnectContext, McpConnector, McpServerConfig, RmcpConnector};
///
/// # async fn demo() -> Result<(), pi_engine::mcp::McpError> {
/// let config = McpServerConfig::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]);
/// let cx = ConnectContext::new("everything", ".", Arc::new(|event| println!("{event:?}")));
/// let connection = RmcpConnector::new().connect(&config, cx).await?;
/// for tool in connection.list_tools().await? {
///     println!("{}", tool.name);
/// }
/// connection.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct RmcpConnector {
    _private: (),
}

impl RmcpConnector {
    /// The connector.
    pub fn new() -> Self {
        RmcpConnector::default()
    }
}

#[async_trait]
impl McpConnector for RmcpConnector {
    async fn connect(
        &self,
        config: &McpServerConfig,
        cx: ConnectContext,
    ) -> Result<Arc<dyn McpConnection>, McpError> {
        match &config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let dir = match cwd {
                    Some(d) if d.is_relative() => cx.cwd.join(d),
                    Some(d) => d.clone(),
                    None => cx.cwd.clone(),
                };
                connect_stdio(command, args, env, &dir, cx).await
            }
            McpTransport::Http { url, headers } => connect_http(url, headers, cx).await,
        }
    }
}

/// The client side of the protocol: roots, progress, list changes, the server's log.
struct Handler {
    server: Arc<str>,
    roots: Vec<Value>,
    progress: Arc<Mutex<HashMap<String, ProgressFn>>>,
    events: McpEventFn,
}

impl Handler {
    fn new(cx: &ConnectContext) -> Self {
        Handler {
            server: cx.server.as_str().into(),
            roots: vec![json!({"uri": file_uri(&cx.cwd), "name": "cwd"})],
            progress: Arc::default(),
            events: cx.events.clone(),
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"roots": {"listChanged": false}})).unwrap_or_default();
        let implementation: Implementation = serde_json::from_value(json!({
            "name": "pi-engine", "version": env!("CARGO_PKG_VERSION")
        }))
        .unwrap_or_else(|_| Implementation::from_build_env());
        ClientConfig::new(capabilities, implementation)
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        serde_json::from_value(json!({"roots": self.roots}))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Ok(params) = serde_json::to_value(&params) else {
            return;
        };
        let key = token_key(&params["progressToken"]);
        let f = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        if let Some(f) = f {
            let mut p = super::McpProgress::new(
                params["progress"].as_f64().unwrap_or(0.0),
                params["total"].as_f64(),
            );
            p.message = params["message"].as_str().map(str::to_owned);
            f(p);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.events)(McpEvent::ToolsChanged);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let params = serde_json::to_value(&params).unwrap_or(Value::Null);
        tracing::info!(target: LOG_TARGET, server = %self.server, level = %params["level"],
            "{}", params["data"]);
    }
}

/// A progress token as a map key (`"7"` and `7` are different tokens).
fn token_key(token: &Value) -> String {
    token.to_string()
}

/// `dir` as a `file://` URI (the characters URIs reserve percent-encoded).
fn file_uri(dir: &Path) -> String {
    let path = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut uri = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(b as char);
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri
}

/// An rmcp error as ours: a closed transport is [`McpError::closed`].
fn service_error(server: &str, e: ServiceError) -> McpError {
    match e {
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => McpError::closed(
            format!("the connection to MCP server \"{server}\" closed ({e})"),
        ),
        ServiceError::McpError(data) => McpError::server(format!(
            "MCP server \"{server}\" refused the request: {}",
            data.message
        )),
        ServiceError::Timeout { .. } => McpError::timeout(format!("MCP server \"{server}\": {e}")),
        ServiceError::Cancelled { .. } => McpError::cancelled(),
        other => McpError::server(format!("MCP server \"{server}\": {other}")),
    }
}

/// A `tools/call` in flight: cancelled at the server (`notifications/cancelled`) if dropped
/// before its answer, and its progress callback unregistered in any case.
struct InFlight<'a> {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    progress: &'a Mutex<HashMap<String, ProgressFn>>,
    key: Option<String>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.progress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key);
        }
        let Some(id) = self.id.take() else { return };
        let params = serde_json::to_value(&id).and_then(|id| {
            serde_json::from_value::<CancelledNotificationParam>(
                json!({"requestId": id, "reason": "cancelled by the client"}),
            )
        });
        if let (Ok(params), Ok(rt)) = (params, tokio::runtime::Handle::try_current()) {
            let peer = self.peer.clone();
            rt.spawn(async move {
                if let Err(e) = peer.notify_cancelled(params).await {
                    tracing::debug!(target: LOG_TARGET, "sending notifications/cancelled failed: {e}");
                }
            });
        }
    }
}

/// One rmcp client session, over stdio or HTTP.
struct RmcpConnection {
    server: Arc<str>,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    progress: Arc<Mutex<HashMap<String, ProgressFn>>>,
    /// Cancelled when the connection is over (the child exited, the transport closed).
    closed: CancellationToken,
    closed_flag: AtomicBool,
    /// The stdio child, if any.
    child: Option<ChildHandle>,
}

impl fmt::Debug for RmcpConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RmcpConnection")
            .field("server", &self.server)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

/// A stdio server's process: told to stop when this is dropped (its task then kills the
/// group), and awaited on close.
struct ChildHandle {
    stop: CancellationToken,
    done: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for ChildHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl RmcpConnection {
    fn mark_closed(&self) {
        self.closed_flag.store(true, Ordering::Release);
        self.closed.cancel();
    }

    /// Runs a request until it answers or the connection closes.
    async fn request<T>(
        &self,
        fut: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        let closed = || {
            McpError::closed(format!(
                "MCP server \"{}\" exited or closed the connection",
                self.server
            ))
        };
        if self.closed.is_cancelled() {
            return Err(closed());
        }
        tokio::select! {
            biased;
            r = fut => r.map_err(|e| {
                let e = service_error(&self.server, e);
                if e.is_closed() {
                    self.mark_closed();
                }
                e
            }),
            () = self.closed.cancelled() => Err(closed()),
        }
    }
}

#[async_trait]
impl McpConnection for RmcpConnection {
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        let tools = self.request(self.peer.list_all_tools()).await?;
        tools
            .iter()
            .map(|t| {
                serde_json::to_value(t)
                    .and_then(serde_json::from_value)
                    .map_err(|e| {
                        McpError::server(format!(
                            "MCP server \"{}\" listed a tool this client cannot read: {e}",
                            self.server
                        ))
                    })
            })
            .collect()
    }

    async fn call_tool(&self, call: McpCall) -> Result<McpCallResult, McpError> {
        let params: CallToolRequestParams =
            serde_json::from_value(json!({"name": call.name, "arguments": call.arguments}))
                .map_err(|e| {
                    McpError::server(format!("cannot build the tools/call request: {e}"))
                })?;
        // Sent by hand rather than with `Peer::call_tool`: rmcp puts a progress token of its
        // own in every request, and only the request handle tells which.
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = self
            .request(
                self.peer
                    .send_request_with_option(request, PeerRequestOptions::no_options()),
            )
            .await?;
        // From here a drop (abort, deadline) cancels the request at the server, and however
        // the call ends its progress callback is unregistered.
        let mut guard = InFlight {
            peer: self.peer.clone(),
            id: Some(handle.id.clone()),
            progress: &self.progress,
            key: None,
        };
        if let Some(f) = call.on_progress {
            let key = serde_json::to_value(&handle.progress_token)
                .map(|t| token_key(&t))
                .unwrap_or_default();
            self.progress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key.clone(), f);
            guard.key = Some(key);
        }
        let result = self.request(handle.await_response()).await;
        guard.id = None;
        drop(guard);
        let result = match result? {
            ServerResult::CallToolResult(result) => serde_json::to_value(&result),
            // A reply that is not a CallToolResult to rmcp (a contentless one, say) is read
            // as MCP's JSON all the same.
            other => serde_json::to_value(&other),
        };
        result.and_then(serde_json::from_value).map_err(|e| {
            McpError::server(format!(
                "MCP server \"{}\" sent a result this client cannot read: {e}",
                self.server
            ))
        })
    }

    fn is_closed(&self) -> bool {
        self.closed_flag.load(Ordering::Acquire) || self.peer.is_transport_closed()
    }

    async fn close(&self) {
        self.mark_closed();
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(CLOSE_WAIT).await;
        }
        if let Some(child) = &self.child {
            child.stop.cancel();
            if let Some(task) = child.done.lock().await.take() {
                // The task kills the group within KILL_GRACE; a little more for the reaping.
                let _ = tokio::time::timeout(KILL_GRACE * 3, task).await;
            }
        }
    }
}

/// Spawns the server in its own process group, its stderr to the log, and does the
/// handshake on its stdin and stdout.
async fn connect_stdio(
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    dir: &Path,
    cx: ConnectContext,
) -> Result<Arc<dyn McpConnection>, McpError> {
    let server: Arc<str> = cx.server.as_str().into();
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .envs(env)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(|e| {
        McpError::start(format!(
            "cannot start MCP server \"{server}\" (`{command}` in {}): {e}",
            dir.display()
        ))
    })?;
    // Armed until the end: dropping it (a failed or abandoned handshake) kills the group.
    let group = GroupGuard::new(child.id(), KILL_GRACE);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(McpError::start("the server's pipes were not set up"));
    };
    tokio::spawn(log_stderr(server.clone(), stderr));

    let handler = Handler::new(&cx);
    let progress = handler.progress.clone();
    let service = handler.serve((stdout, stdin)).await.map_err(|e| {
        McpError::start(format!(
            "MCP server \"{server}\" (`{command}`) failed the handshake: {e}"
        ))
    })?;

    let closed = CancellationToken::new();
    let stop = CancellationToken::new();
    let task = tokio::spawn(watch_child(
        server.clone(),
        child,
        group,
        stop.clone(),
        closed.clone(),
        cx.events.clone(),
    ));
    Ok(Arc::new(RmcpConnection {
        server,
        peer: service.peer().clone(),
        service: tokio::sync::Mutex::new(Some(service)),
        progress,
        closed,
        closed_flag: AtomicBool::new(false),
        child: Some(ChildHandle {
            stop,
            done: tokio::sync::Mutex::new(Some(task)),
        }),
    }))
}

/// Waits for the server to exit (reported as closed) or to be told to stop (then asks it to
/// with `SIGTERM` and kills what is left of its group after [`KILL_GRACE`]).
async fn watch_child(
    server: Arc<str>,
    mut child: tokio::process::Child,
    mut group: GroupGuard,
    stop: CancellationToken,
    closed: CancellationToken,
    events: McpEventFn,
) {
    tokio::select! {
        status = child.wait() => {
            let how = match status {
                Ok(s) => format!("MCP server \"{server}\" exited ({s})"),
                Err(e) => format!("MCP server \"{server}\" was lost: {e}"),
            };
            tracing::warn!(target: LOG_TARGET, "{how}");
            closed.cancel();
            // Whatever it left running in its group goes with it (the guard's drop).
            group.kill(&mut child);
            events(McpEvent::Closed(how));
        }
        () = stop.cancelled() => {
            closed.cancel();
            let (kill_at, killed) = group.terminate(&mut child);
            if !killed
                && tokio::time::timeout_at(kill_at, child.wait()).await.is_err()
            {
                tracing::debug!(target: LOG_TARGET, server = %server,
                    "MCP server did not exit on SIGTERM; killed");
            }
            group.kill(&mut child);
            let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
            group.disarm();
        }
    }
}

/// Each line the server writes on stderr, as a log line (never to the terminal).
async fn log_stderr(server: Arc<str>, stderr: tokio::process::ChildStderr) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: LOG_TARGET, server = %server, "{line}");
    }
}

/// Connects over streamable HTTP, the configured headers on every request.
async fn connect_http(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    cx: ConnectContext,
) -> Result<Arc<dyn McpConnection>, McpError> {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let server: Arc<str> = cx.server.as_str().into();
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| McpError::config(format!("invalid header name {name:?}: {e}")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| McpError::config(format!("invalid value of header {name}: {e}")))?;
        map.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .default_headers(map)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| McpError::start(format!("cannot build the HTTP client: {e}")))?;
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    let handler = Handler::new(&cx);
    let progress = handler.progress.clone();
    let service = handler.serve(transport).await.map_err(|e| {
        McpError::start(format!(
            "cannot connect to MCP server \"{server}\" at {url}: {e}"
        ))
    })?;
    Ok(Arc::new(RmcpConnection {
        server,
        peer: service.peer().clone(),
        service: tokio::sync::Mutex::new(Some(service)),
        progress,
        closed: CancellationToken::new(),
        closed_flag: AtomicBool::new(false),
        child: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_escape_what_they_must() {
        assert_eq!(file_uri(Path::new("/tmp/a b/c")), "file:///tmp/a%20b/c");
        assert_eq!(file_uri(Path::new("/x/%")), "file:///x/%25");
    }
}
