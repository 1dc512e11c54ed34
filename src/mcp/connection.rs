//! Our seam over an MCP client library: [`McpConnector`] opens a [`McpConnection`] to one
//! server; the connection lists the server's tools and calls them. The types crossing the
//! seam are ours, in MCP's wire shape (tool definitions and results as the protocol writes
//! them), so the library under it — rmcp today, in `rmcp_client.rs` — can be upgraded or
//! replaced by touching one file, and tests can stand a fake server in its place.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::McpError;
use super::config::McpServerConfig;

/// A tool as a server lists it (`tools/list`), in MCP's JSON shape.
///
/// ```
/// use pi_engine::mcp::McpToolInfo;
///
/// let tool: McpToolInfo = serde_json::from_value(serde_json::json!({
///     "name": "echo", "description": "Echoes back the input",
///     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}
/// })).unwrap();
/// assert_eq!(tool.name, "echo");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct McpToolInfo {
    /// The tool's name on its server.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// The JSON Schema of its structured result, if it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

impl McpToolInfo {
    /// A tool `name` taking `input_schema`.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        McpToolInfo {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// The result of a `tools/call`, in MCP's JSON shape: content blocks (`text`, `image`,
/// `audio`, `resource`, `resource_link`, kept as JSON), structured content, `isError`.
///
/// ```
/// use pi_engine::mcp::McpCallResult;
///
/// let result: McpCallResult = serde_json::from_value(serde_json::json!({
///     "content": [{"type": "text", "text": "Echo: hi"}]
/// })).unwrap();
/// assert!(!result.is_error);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct McpCallResult {
    /// The content blocks, as the server sent them.
    #[serde(default)]
    pub content: Vec<Value>,
    /// The structured result, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool failed (its content says why).
    #[serde(default, deserialize_with = "null_false")]
    pub is_error: bool,
}

fn null_false<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

impl McpCallResult {
    /// A result of `content` blocks.
    pub fn new(content: Vec<Value>) -> Self {
        McpCallResult {
            content,
            structured_content: None,
            is_error: false,
        }
    }

    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        McpCallResult::new(vec![
            serde_json::json!({"type": "text", "text": text.into()}),
        ])
    }

    /// Sets the structured content.
    #[must_use]
    pub fn with_structured_content(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }

    /// Marks the result as an error (`isError: true`).
    #[must_use]
    pub fn into_error(mut self) -> Self {
        self.is_error = true;
        self
    }
}

/// A progress notification of a running call (`notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpProgress {
    /// Progress so far (grows with each notification).
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A message, when the server sends one.
    pub message: Option<String>,
}

impl McpProgress {
    /// Progress `progress` of `total`.
    pub fn new(progress: f64, total: Option<f64>) -> Self {
        McpProgress {
            progress,
            total,
            message: None,
        }
    }
}

/// Receives the progress notifications of one call.
pub type ProgressFn = Arc<dyn Fn(McpProgress) + Send + Sync>;

/// One `tools/call`: the tool, its arguments, and where its progress goes.
#[non_exhaustive]
pub struct McpCall {
    /// The tool's name on its server.
    pub name: String,
    /// Its arguments (validated against its schema by the agent).
    pub arguments: Map<String, Value>,
    /// Receives progress notifications (a progress token is sent only when this is set).
    pub on_progress: Option<ProgressFn>,
}

impl McpCall {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Map<String, Value>) -> Self {
        McpCall {
            name: name.into(),
            arguments,
            on_progress: None,
        }
    }

    /// Sends progress notifications to `f`.
    #[must_use]
    pub fn with_progress(mut self, f: ProgressFn) -> Self {
        self.on_progress = Some(f);
        self
    }
}

impl fmt::Debug for McpCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpCall")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .field("on_progress", &self.on_progress.is_some())
            .finish()
    }
}

/// What a connection reports on its own, between calls.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpEvent {
    /// The server said its tools changed (`notifications/tools/list_changed`).
    ToolsChanged,
    /// The connection ended (the server exited or the transport closed); the text says how.
    Closed(String),
}

/// Where a connection sends its [`McpEvent`]s.
pub type McpEventFn = Arc<dyn Fn(McpEvent) + Send + Sync>;

/// What [`McpConnector::connect`] gets besides the server's configuration.
#[derive(Clone)]
#[non_exhaustive]
pub struct ConnectContext {
    /// The server's name (for the log).
    pub server: String,
    /// The working directory: a stdio server's default directory, and the root the client
    /// offers servers that ask for roots.
    pub cwd: PathBuf,
    /// Receives the connection's events.
    pub events: McpEventFn,
}

impl ConnectContext {
    /// A context for `server` in `cwd`, whose events go to `events`.
    pub fn new(server: impl Into<String>, cwd: impl Into<PathBuf>, events: McpEventFn) -> Self {
        ConnectContext {
            server: server.into(),
            cwd: cwd.into(),
            events,
        }
    }
}

impl fmt::Debug for ConnectContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectContext")
            .field("server", &self.server)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

/// Opens connections to MCP servers. The default, [`RmcpConnector`](super::RmcpConnector),
/// speaks stdio and streamable HTTP through rmcp; a test or an embedder may bring its own.
///
/// ```
/// use std::sync::Arc;
/// use async_trait::async_trait;
/// use pi_engine::mcp::{ConnectContext, McpCall, McpCallResult, McpConnection, McpConnector,
///                      McpError, McpServerConfig, McpToolInfo};
///
/// /// A server with one tool, `hello`, in this process.
/// #[derive(Debug)]
/// struct Hello;
///
/// #[async_trait]
/// impl McpConnection for Hello {
///     async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
///         Ok(vec![McpToolInfo::new("hello", serde_json::json!({"type": "object"}))])
///     }
///     async fn call_tool(&self, _call: McpCall) -> Result<McpCallResult, McpError> {
///         Ok(McpCallResult::text("hello!"))
///     }
///     fn is_closed(&self) -> bool { false }
///     async fn close(&self) {}
/// }
///
/// #[derive(Debug)]
/// struct InProcess;
///
/// #[async_trait]
/// impl McpConnector for InProcess {
///     async fn connect(&self, _config: &McpServerConfig, _cx: ConnectContext)
///         -> Result<Arc<dyn McpConnection>, McpError> {
///         Ok(Arc::new(Hello))
///     }
/// }
/// ```
#[async_trait]
pub trait McpConnector: Send + Sync + fmt::Debug + 'static {
    /// Starts (stdio) or reaches (HTTP) the server and completes MCP's handshake.
    ///
    /// # Cancel safety
    ///
    /// The manager bounds this with the server's startup deadline and drops the future when
    /// it passes: a half-started server must then be stopped (a stdio child killed).
    async fn connect(
        &self,
        config: &McpServerConfig,
        cx: ConnectContext,
    ) -> Result<Arc<dyn McpConnection>, McpError>;
}

/// One live connection to an MCP server.
///
/// Calls may run concurrently. The caller owns the deadlines: it drops a call's future when
/// the agent aborts or the call's time is up, and that drop is the cancellation — an
/// implementation must then tell the server (`notifications/cancelled`) and forget the
/// request. A call in flight when the server dies should end promptly with a
/// [`closed`](McpError::is_closed) error, and [`is_closed`](Self::is_closed) then says so,
/// which makes the manager reconnect on the next call.
#[async_trait]
pub trait McpConnection: Send + Sync + fmt::Debug + 'static {
    /// Every tool of the server (all pages of `tools/list`).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the request.
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError>;

    /// Calls a tool. A tool's own failure is an `Ok` result with
    /// [`is_error`](McpCallResult::is_error); `Err` is for the protocol (the server is gone,
    /// refused the request, answered nonsense).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the call: the server is sent `notifications/cancelled`.
    async fn call_tool(&self, call: McpCall) -> Result<McpCallResult, McpError>;

    /// True once the connection is over (the server exited, the transport closed).
    fn is_closed(&self) -> bool;

    /// Ends the connection: a stdio server is asked to exit, then its process group killed.
    /// Returns within a few seconds whatever the server does.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future (or the connection) still stops the server, without waiting.
    async fn close(&self);
}
