//! Tools from [Model Context Protocol](https://modelcontextprotocol.io) servers (feature
//! `mcp`): each tool of each configured server becomes an [`AgentTool`](crate::agent::AgentTool)
//! named `<server>__<tool>`.
//!
//! pi leaves MCP out by design; this module adds it without changing anything else: the tools
//! are ordinary agent tools, their schemas validated like any tool's, their results ordinary
//! tool results. Servers are configured in the `mcpServers` shape other MCP clients use
//! ([`McpServers`]), reached over stdio (a child process) or streamable HTTP, and run by an
//! [`McpManager`]:
//!
//! * servers start together, each within a startup deadline (30 s); one that fails is
//!   reported in [`McpManager::errors`] and the others run;
//! * every call has a deadline (60 s, or the server's `timeout`) and is cancelled at the server
//!   (`notifications/cancelled`) when the agent aborts; nothing waits on a server forever;
//! * a server that dies mid-call gives an error result at once, and is started again on its
//!   next call; a server's `notifications/tools/list_changed` makes the manager list its
//!   tools again ([`McpManager::changes`]);
//! * a stdio server runs in its own process group, its stderr goes to the log (target
//!   `pi_engine::mcp`, never the terminal), and the whole group is killed on
//!   [`McpManager::shutdown`] and when the manager and its tools are dropped.
//!
//! The client library is [rmcp](https://docs.rs/rmcp), behind our own small seam
//! ([`McpConnector`] and [`McpConnection`]), so that an upgrade of rmcp, whose API has broken
//! three times in five months, touches one file; a test or an embedder can put a fake or an
//! in-process server behind the same seam.
//!
//! ```no_run
//! use pi_engine::agent::Agent;
//! use pi_engine::mcp::{McpManager, McpServerConfig, McpServers};
//! use pi_engine::providers::faux::FauxProvider;
//!
//! # async fn demo() {
//! let servers = McpServers::new()
//!     .with("fs", McpServerConfig::stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "."]))
//!     .with("remote", McpServerConfig::http("http://localhost:3001/mcp"));
//! let mcp = McpManager::start(&servers, ".").await;
//! for failure in mcp.errors() {
//!     eprintln!("{failure}"); // e.g. MCP server "remote": cannot connect …
//! }
//! let faux = FauxProvider::new();
//! let agent = Agent::builder(faux.model()).tools(mcp.tools()).provider(faux).build();
//! // … the model may now call `fs__read_text_file`, `remote__echo`, …
//! mcp.shutdown().await;
//! # drop(agent); }
//! ```

mod config;
mod connection;
mod manager;
mod rmcp_client;
mod tool;

use std::fmt;

pub use config::{McpServerConfig, McpServerError, McpServers, McpTransport};
pub use connection::{
    ConnectContext, McpCall, McpCallResult, McpConnection, McpConnector, McpEvent, McpEventFn,
    McpProgress, McpToolInfo, ProgressFn,
};
pub use manager::{DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, McpManager, McpManagerBuilder};
pub use rmcp_client::RmcpConnector;
pub use tool::{MAX_TOOL_NAME, map_result, tool_name};

/// What went wrong with an MCP server: its configuration, its start, a deadline, a lost
/// connection, or the server's refusal. Branch on the predicates; the text is for people.
///
/// ```
/// use pi_engine::mcp::McpError;
///
/// let e = McpError::closed("the server exited");
/// assert!(e.is_closed() && !e.is_timeout());
/// assert_eq!(e.to_string(), "the server exited");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpError {
    kind: Kind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Config,
    Start,
    Timeout,
    Closed,
    Server,
    Cancelled,
}

impl McpError {
    fn new(kind: Kind, message: impl Into<String>) -> Self {
        McpError {
            kind,
            message: message.into(),
        }
    }

    /// The configuration is invalid (a missing `command`, a bad header).
    pub fn config(message: impl Into<String>) -> Self {
        McpError::new(Kind::Config, message)
    }

    /// The server could not be started or reached, or failed MCP's handshake.
    pub fn start(message: impl Into<String>) -> Self {
        McpError::new(Kind::Start, message)
    }

    /// A deadline passed.
    pub fn timeout(message: impl Into<String>) -> Self {
        McpError::new(Kind::Timeout, message)
    }

    /// The connection is over: the server exited or the transport closed. The manager
    /// reconnects on the next call.
    pub fn closed(message: impl Into<String>) -> Self {
        McpError::new(Kind::Closed, message)
    }

    /// The server refused a request or answered something unreadable.
    pub fn server(message: impl Into<String>) -> Self {
        McpError::new(Kind::Server, message)
    }

    /// The request was cancelled.
    pub fn cancelled() -> Self {
        McpError::new(Kind::Cancelled, "the MCP request was cancelled")
    }

    /// True for an invalid configuration.
    pub fn is_config(&self) -> bool {
        self.kind == Kind::Config
    }

    /// True for a server that could not be started or reached.
    pub fn is_start(&self) -> bool {
        self.kind == Kind::Start
    }

    /// True when a deadline passed.
    pub fn is_timeout(&self) -> bool {
        self.kind == Kind::Timeout
    }

    /// True when the connection is over (the server died or closed it).
    pub fn is_closed(&self) -> bool {
        self.kind == Kind::Closed
    }

    /// True when the server refused the request.
    pub fn is_server(&self) -> bool {
        self.kind == Kind::Server
    }

    /// True for a cancelled request.
    pub fn is_cancelled(&self) -> bool {
        self.kind == Kind::Cancelled
    }
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for McpError {}
