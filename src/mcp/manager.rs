//! [`McpManager`]: the configured servers, started together, their tools for an agent, kept
//! current, reconnected after a crash, and stopped with the session.

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::McpError;
use super::config::{McpServerConfig, McpServerError, McpServers};
use super::connection::{
    ConnectContext, McpConnection, McpConnector, McpEvent, McpEventFn, McpToolInfo,
};
use super::rmcp_client::RmcpConnector;
use super::tool::{McpTool, definition, hashed, tool_name};
use crate::agent::AgentTool;

/// The deadline of one tool call unless a server sets its own `timeout`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The deadline to start a server, complete the handshake and list its tools, unless it
/// sets its own `startupTimeout`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long [`McpManager::shutdown`] waits for each server.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
const LOG_TARGET: &str = "pi_engine::mcp";

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One configured server: how to (re)connect, the live connection, the tools it listed.
pub(crate) struct Server {
    pub(crate) name: String,
    config: McpServerConfig,
    pub(crate) call_timeout: Duration,
    startup_timeout: Duration,
    connector: Arc<dyn McpConnector>,
    cwd: PathBuf,
    /// The live connection; `None` before the first and after a lost one.
    conn: tokio::sync::Mutex<Option<Arc<dyn McpConnection>>>,
    tools: Mutex<Vec<McpToolInfo>>,
    changes: Arc<watch::Sender<u64>>,
    shutdown: CancellationToken,
}

impl Server {
    fn events(self: &Arc<Self>) -> McpEventFn {
        let weak: Weak<Server> = Arc::downgrade(self);
        Arc::new(move |event| {
            let Some(server) = weak.upgrade() else { return };
            match event {
                McpEvent::ToolsChanged => {
                    if let Ok(rt) = tokio::runtime::Handle::try_current() {
                        rt.spawn(async move { server.relist().await });
                    }
                }
                McpEvent::Closed(how) => {
                    tracing::warn!(target: LOG_TARGET, server = %server.name,
                        "{how}; it will be restarted on the next call");
                }
            }
        })
    }

    /// Connects and lists the tools, within the startup deadline.
    async fn connect(self: &Arc<Self>) -> Result<Arc<dyn McpConnection>, McpError> {
        let cx = ConnectContext::new(self.name.clone(), self.cwd.clone(), self.events());
        let work = async {
            let conn = self.connector.connect(&self.config, cx).await?;
            match conn.list_tools().await {
                Ok(tools) => Ok((conn, tools)),
                Err(e) => {
                    conn.close().await;
                    Err(e)
                }
            }
        };
        let (conn, tools) = tokio::select! {
            biased;
            () = self.shutdown.cancelled() => {
                return Err(McpError::closed("the MCP servers were shut down"));
            }
            r = tokio::time::timeout(self.startup_timeout, work) => match r {
                Ok(r) => r?,
                Err(_) => {
                    return Err(McpError::timeout(format!(
                        "MCP server \"{}\" did not start and list its tools within {} s",
                        self.name,
                        self.startup_timeout.as_secs_f64()
                    )));
                }
            },
        };
        self.set_tools(tools);
        Ok(conn)
    }

    fn set_tools(&self, tools: Vec<McpToolInfo>) {
        let changed = {
            let mut current = lock(&self.tools);
            let changed = *current != tools;
            *current = tools;
            changed
        };
        if changed {
            self.changes.send_modify(|g| *g += 1);
        }
    }

    /// The live connection, reconnecting if there is none or it is closed (the recipe is
    /// the configuration: a crashed server is started again on the next call).
    pub(crate) async fn connection(self: &Arc<Self>) -> Result<Arc<dyn McpConnection>, McpError> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref() {
            if !conn.is_closed() {
                return Ok(conn.clone());
            }
            if let Some(old) = slot.take() {
                tokio::spawn(async move { old.close().await });
            }
        }
        if self.shutdown.is_cancelled() {
            return Err(McpError::closed(format!(
                "MCP server \"{}\" was shut down",
                self.name
            )));
        }
        tracing::info!(target: LOG_TARGET, server = %self.name, "reconnecting to MCP server");
        let conn = self.connect().await?;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Drops `conn` if it is still the live one (it failed): the next call reconnects.
    pub(crate) async fn forget(&self, conn: &Arc<dyn McpConnection>) {
        let mut slot = self.conn.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn))
            && let Some(old) = slot.take()
        {
            tokio::spawn(async move { old.close().await });
        }
    }

    /// Lists the tools again (after `notifications/tools/list_changed`).
    async fn relist(self: &Arc<Self>) {
        let Some(conn) = self.conn.lock().await.clone() else {
            return;
        };
        match tokio::time::timeout(self.startup_timeout, conn.list_tools()).await {
            Ok(Ok(tools)) => {
                tracing::debug!(target: LOG_TARGET, server = %self.name, count = tools.len(),
                    "MCP server's tools listed again");
                self.set_tools(tools);
            }
            Ok(Err(e)) => tracing::warn!(target: LOG_TARGET, server = %self.name,
                "listing the tools again failed: {e}"),
            Err(_) => tracing::warn!(target: LOG_TARGET, server = %self.name,
                "listing the tools again timed out"),
        }
    }

    async fn close(&self) {
        let conn = self.conn.lock().await.take();
        if let Some(conn) = conn {
            let _ = tokio::time::timeout(SHUTDOWN_WAIT, conn.close()).await;
        }
    }
}

/// Configures an [`McpManager`]: the working directory, the deadlines, the connector.
#[must_use]
pub struct McpManagerBuilder {
    cwd: PathBuf,
    call_timeout: Duration,
    startup_timeout: Duration,
    connector: Arc<dyn McpConnector>,
}

impl fmt::Debug for McpManagerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpManagerBuilder")
            .field("cwd", &self.cwd)
            .field("call_timeout", &self.call_timeout)
            .field("startup_timeout", &self.startup_timeout)
            .field("connector", &self.connector)
            .finish()
    }
}

impl McpManagerBuilder {
    /// The working directory of stdio servers without a `cwd`, and the root offered to
    /// servers. Default: `.`.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = cwd.into();
        self
    }

    /// The deadline of a tool call for servers without a `timeout`. Default: 60 s.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// The deadline to start a server and list its tools, for servers without a
    /// `startupTimeout`. Default: 30 s.
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// How servers are reached. Default: [`RmcpConnector`].
    pub fn connector(mut self, connector: Arc<dyn McpConnector>) -> Self {
        self.connector = connector;
        self
    }

    /// Starts every enabled server of `servers` at once and waits until each has listed its
    /// tools or failed (at most its startup deadline). A server that fails is reported in
    /// [`McpManager::errors`] and left out; the others are not held up by it.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops the servers started so far.
    pub async fn start(self, servers: &McpServers) -> McpManager {
        let (tx, _) = watch::channel(0u64);
        let changes = Arc::new(tx);
        let shutdown = CancellationToken::new();
        let all: Vec<Arc<Server>> = servers
            .servers
            .iter()
            .filter(|(_, c)| c.enabled)
            .map(|(name, config)| {
                Arc::new(Server {
                    name: name.clone(),
                    config: config.clone(),
                    call_timeout: config.timeout.unwrap_or(self.call_timeout),
                    startup_timeout: config.startup_timeout.unwrap_or(self.startup_timeout),
                    connector: self.connector.clone(),
                    cwd: self.cwd.clone(),
                    conn: tokio::sync::Mutex::new(None),
                    tools: Mutex::new(Vec::new()),
                    changes: changes.clone(),
                    shutdown: shutdown.clone(),
                })
            })
            .collect();
        let results = futures::future::join_all(all.iter().map(|s| async move {
            let r = s.connect().await;
            (s.clone(), r)
        }))
        .await;
        let mut started = Vec::new();
        let mut errors = Vec::new();
        for (server, result) in results {
            match result {
                Ok(conn) => {
                    *server.conn.lock().await = Some(conn);
                    started.push(server);
                }
                Err(e) => {
                    tracing::warn!(target: LOG_TARGET, server = %server.name, "{e}");
                    errors.push(McpServerError::new(server.name.clone(), e));
                }
            }
        }
        McpManager {
            servers: started,
            errors: Mutex::new(errors),
            changes,
            shutdown,
        }
    }
}

/// The MCP servers of a session: started together, their tools handed to an agent.
///
/// Every call of an MCP tool has a deadline (the server's `timeout`, else 60 s) and is
/// cancelled at the server (`notifications/cancelled`) when the agent aborts; a server that
/// dies mid-call gives an error result at once and is started again on its next call;
/// a stdio server's stderr goes to the log (target `pi_engine::mcp`), and it is killed with
/// its whole process group on [`shutdown`](Self::shutdown) or when the last handle to it
/// (the manager, the tools) is dropped.
///
/// ```no_run
/// use pi_engine::agent_session::AgentSession;
/// use pi_engine::mcp::McpManager;
/// use pi_engine::session::SessionManager;
///
/// # async fn demo(session: SessionManager) {
/// let config = serde_json::json!({"mcpServers": {
///     "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}
/// }});
/// let mcp = McpManager::start_json(&config, ".").await;
/// for failure in mcp.errors() {
///     eprintln!("{failure}");
/// }
/// let agent = AgentSession::builder(session).tools(mcp.tools()).build();
/// // … use the agent …
/// mcp.shutdown().await;
/// # drop(agent); }
/// ```
pub struct McpManager {
    servers: Vec<Arc<Server>>,
    errors: Mutex<Vec<McpServerError>>,
    changes: Arc<watch::Sender<u64>>,
    shutdown: CancellationToken,
}

impl fmt::Debug for McpManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &self.server_names())
            .field("errors", &*lock(&self.errors))
            .finish_non_exhaustive()
    }
}

impl McpManager {
    /// Configures a manager (working directory, deadlines, connector).
    pub fn builder() -> McpManagerBuilder {
        McpManagerBuilder {
            cwd: PathBuf::from("."),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            connector: Arc::new(RmcpConnector::new()),
        }
    }

    /// Starts `servers` with the default deadlines, in `cwd` (see
    /// [`McpManagerBuilder::start`]).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops the servers started so far.
    pub async fn start(servers: &McpServers, cwd: impl Into<PathBuf>) -> McpManager {
        McpManager::builder().cwd(cwd).start(servers).await
    }

    /// Starts the servers of an `mcpServers` JSON object (the whole `{"mcpServers": …}`
    /// document or the map inside it) in `cwd`: what a front end calls with its settings or
    /// with the servers an ACP client passes. Entries that are not valid servers, and
    /// servers that fail to start, are in [`errors`](Self::errors); the rest run.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops the servers started so far.
    pub async fn start_json(value: &Value, cwd: impl Into<PathBuf>) -> McpManager {
        let (servers, config_errors) = McpServers::from_json(value);
        let manager = McpManager::start(&servers, cwd).await;
        let mut errors = config_errors;
        errors.append(&mut lock(&manager.errors));
        *lock(&manager.errors) = errors;
        manager
    }

    /// The servers that started, in name order.
    pub fn server_names(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.name.clone()).collect()
    }

    /// The servers that could not be configured or started, and why.
    pub fn errors(&self) -> Vec<McpServerError> {
        lock(&self.errors).clone()
    }

    /// The tools `server` listed last (`None`: no such running server).
    pub fn server_tools(&self, server: &str) -> Option<Vec<McpToolInfo>> {
        self.servers
            .iter()
            .find(|s| s.name == server)
            .map(|s| lock(&s.tools).clone())
    }

    /// Every server's tools as agent tools, named `<server>__<tool>` (see
    /// [`tool_name`](super::tool_name)), for
    /// [`AgentSessionBuilder::tools`](crate::agent_session::AgentSessionBuilder::tools) or
    /// [`Agent::set_tools`](crate::agent::Agent::set_tools). Servers in name order, each
    /// server's tools in its order; a name that two tools would share gets a hash suffix.
    ///
    /// The list is a snapshot: after a server's tools change ([`changes`](Self::changes)),
    /// call it again.
    pub fn tools(&self) -> Vec<Arc<dyn AgentTool>> {
        let mut taken = HashSet::new();
        let mut out: Vec<Arc<dyn AgentTool>> = Vec::new();
        for server in &self.servers {
            for info in lock(&server.tools).iter() {
                let mut name = tool_name(&server.name, &info.name);
                if !taken.insert(name.clone()) {
                    let cut = name.len().min(super::tool::MAX_TOOL_NAME - 9);
                    name = hashed(&name[..cut], &format!("{}\0{}", server.name, info.name));
                    if !taken.insert(name.clone()) {
                        tracing::warn!(target: LOG_TARGET, server = %server.name,
                            tool = %info.name, "two MCP tools share a name; one is left out");
                        continue;
                    }
                }
                let label = info.title.clone().unwrap_or_else(|| info.name.clone());
                out.push(Arc::new(McpTool {
                    definition: definition(name, &server.name, info),
                    server: server.clone(),
                    tool: info.name.clone(),
                    label: format!("{label} ({})", server.name),
                }));
            }
        }
        out
    }

    /// A counter that goes up each time a server's list of tools changes (a server sent
    /// `notifications/tools/list_changed`, or listed other tools after a restart): wait on
    /// it, then hand [`tools`](Self::tools) to the agent again.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Stops every server: each connection is closed, a stdio server asked to exit and its
    /// process group killed (at most a few seconds per server, all at once). The tools then
    /// fail with an error instead of restarting their server.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the servers to be killed when the last handle to them is
    /// dropped.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        futures::future::join_all(self.servers.iter().map(|s| s.close())).await;
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        // The connections, and with them the processes, go when the last tool holding them
        // goes; no tool may restart a server once its manager is gone.
        self.shutdown.cancel();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use async_trait::async_trait;
    use serde_json::json;

    use super::*;
    use crate::agent::{AgentToolResult, ToolUpdates};
    use crate::mcp::{McpCall, McpCallResult, McpProgress};

    /// A fake server: `echo`, `slow` (waits until cancelled, reporting progress), `die`
    /// (closes the connection mid-call), `fail` (an isError result).
    #[derive(Debug, Default)]
    struct Fake {
        closed: AtomicBool,
        cancelled: Arc<AtomicUsize>,
        gen_: usize,
        extra_tool: AtomicBool,
    }

    #[async_trait]
    impl McpConnection for Fake {
        async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
            let mut tools: Vec<McpToolInfo> = ["echo", "slow", "die", "fail"]
                .iter()
                .map(|n| McpToolInfo::new(*n, json!({"type": "object"})))
                .collect();
            if self.extra_tool.load(Ordering::SeqCst) {
                tools.push(McpToolInfo::new("extra", json!({})));
            }
            Ok(tools)
        }
        async fn call_tool(&self, call: McpCall) -> Result<McpCallResult, McpError> {
            match call.name.as_str() {
                "echo" => Ok(McpCallResult::text(format!(
                    "gen {} {}",
                    self.gen_,
                    Value::Object(call.arguments)
                ))),
                "slow" => {
                    struct Count(Arc<AtomicUsize>);
                    impl Drop for Count {
                        fn drop(&mut self) {
                            self.0.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    let _count = Count(self.cancelled.clone());
                    if let Some(p) = &call.on_progress {
                        p(McpProgress::new(1.0, Some(2.0)));
                    }
                    std::future::pending().await
                }
                "die" => {
                    self.closed.store(true, Ordering::SeqCst);
                    Err(McpError::closed("the server exited"))
                }
                _ => Ok(McpCallResult::text("it broke").into_error()),
            }
        }
        fn is_closed(&self) -> bool {
            self.closed.load(Ordering::SeqCst)
        }
        async fn close(&self) {
            self.closed.store(true, Ordering::SeqCst);
        }
    }

    #[derive(Default)]
    struct FakeConnector {
        connects: AtomicUsize,
        cancelled: Arc<AtomicUsize>,
        last: Mutex<Option<(Arc<Fake>, McpEventFn)>>,
    }

    impl fmt::Debug for FakeConnector {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("FakeConnector")
        }
    }

    #[async_trait]
    impl McpConnector for FakeConnector {
        async fn connect(
            &self,
            config: &McpServerConfig,
            cx: ConnectContext,
        ) -> Result<Arc<dyn McpConnection>, McpError> {
            if let crate::mcp::McpTransport::Stdio { command, .. } = &config.transport {
                match command.as_str() {
                    "missing" => return Err(McpError::start("no such program")),
                    "hang" => std::future::pending::<()>().await,
                    _ => {}
                }
            }
            let n = self.connects.fetch_add(1, Ordering::SeqCst);
            let fake = Arc::new(Fake {
                gen_: n,
                cancelled: self.cancelled.clone(),
                ..Fake::default()
            });
            *lock(&self.last) = Some((fake.clone(), cx.events.clone()));
            Ok(fake)
        }
    }

    async fn manager(connector: Arc<FakeConnector>) -> McpManager {
        let servers = McpServers::new()
            .with("fake", McpServerConfig::stdio("fake", [""; 0]))
            .with("broken", McpServerConfig::stdio("missing", [""; 0]))
            .with(
                "slowstart",
                McpServerConfig::stdio("hang", [""; 0])
                    .with_startup_timeout(Duration::from_millis(50)),
            )
            .with(
                "off",
                McpServerConfig::stdio("fake", [""; 0]).with_enabled(false),
            );
        McpManager::builder()
            .connector(connector)
            .call_timeout(Duration::from_millis(300))
            .start(&servers)
            .await
    }

    fn args(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn find(tools: &[Arc<dyn AgentTool>], name: &str) -> Arc<dyn AgentTool> {
        tools.iter().find(|t| t.name() == name).cloned().unwrap()
    }

    async fn run(
        tool: &Arc<dyn AgentTool>,
        cancel: CancellationToken,
    ) -> Result<AgentToolResult, crate::agent::ToolError> {
        tool.execute(
            "c1",
            args(json!({"x": 1})),
            cancel,
            ToolUpdates::disconnected(),
        )
        .await
    }

    #[tokio::test]
    async fn starts_reports_and_calls() {
        let connector = Arc::new(FakeConnector::default());
        let mcp = manager(connector.clone()).await;
        assert_eq!(mcp.server_names(), ["fake"]);
        let mut errors: Vec<_> = mcp.errors().iter().map(|e| e.server().to_owned()).collect();
        errors.sort();
        assert_eq!(errors, ["broken", "slowstart"]);
        assert!(
            mcp.errors()
                .iter()
                .any(|e| e.error().is_timeout() && e.server() == "slowstart")
        );
        let tools = mcp.tools();
        let names: Vec<_> = tools.iter().map(|t| t.name().to_owned()).collect();
        assert_eq!(
            names,
            ["fake__echo", "fake__slow", "fake__die", "fake__fail"]
        );
        let out = run(&find(&tools, "fake__echo"), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(out.text_content(), r#"gen 0 {"x":1}"#);
        let err = run(&find(&tools, "fake__fail"), CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "it broke");
    }

    #[tokio::test]
    async fn abort_and_deadline_cancel_the_call() {
        let connector = Arc::new(FakeConnector::default());
        let mcp = manager(connector.clone()).await;
        let slow = find(&mcp.tools(), "fake__slow");
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            c2.cancel();
        });
        let err = run(&slow, cancel).await.unwrap_err();
        assert_eq!(err.to_string(), "Operation aborted");
        assert_eq!(
            connector.cancelled.load(Ordering::SeqCst),
            1,
            "call dropped"
        );
        let err = run(&slow, CancellationToken::new()).await.unwrap_err();
        assert!(err.to_string().contains("timed out after 0.3 s"), "{err}");
        assert_eq!(connector.cancelled.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_dead_server_is_reported_then_restarted() {
        let connector = Arc::new(FakeConnector::default());
        let mcp = manager(connector.clone()).await;
        let tools = mcp.tools();
        let err = run(&find(&tools, "fake__die"), CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("restarted on the next call"),
            "{err}"
        );
        let out = run(&find(&tools, "fake__echo"), CancellationToken::new())
            .await
            .unwrap();
        assert!(out.text_content().starts_with("gen 1 "), "reconnected");
        mcp.shutdown().await;
        let err = run(&find(&tools, "fake__echo"), CancellationToken::new())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("shut down"), "{err}");
    }

    #[tokio::test]
    async fn tools_are_listed_again_when_they_change() {
        let connector = Arc::new(FakeConnector::default());
        let mcp = manager(connector.clone()).await;
        let mut changes = mcp.changes();
        let (fake, events) = lock(&connector.last).clone().unwrap();
        fake.extra_tool.store(true, Ordering::SeqCst);
        events(McpEvent::ToolsChanged);
        tokio::time::timeout(Duration::from_secs(5), changes.changed())
            .await
            .unwrap()
            .unwrap();
        assert!(mcp.tools().iter().any(|t| t.name() == "fake__extra"));
        assert_eq!(mcp.server_tools("fake").unwrap().len(), 5);
    }

    #[tokio::test]
    async fn colliding_names_get_a_suffix() {
        let connector = Arc::new(FakeConnector::default());
        let servers = McpServers::new()
            .with("a.b", McpServerConfig::stdio("fake", [""; 0]))
            .with("a_b", McpServerConfig::stdio("fake", [""; 0]));
        let mcp = McpManager::builder()
            .connector(connector)
            .start(&servers)
            .await;
        let names: Vec<_> = mcp.tools().iter().map(|t| t.name().to_owned()).collect();
        assert_eq!(names.len(), 8);
        assert_eq!(names.iter().collect::<HashSet<_>>().len(), 8, "{names:?}");
        assert_eq!(names[0], "a_b__echo");
        assert!(names[4].starts_with("a_b__echo_"), "{names:?}");
    }

    #[tokio::test]
    async fn start_json_reports_bad_entries() {
        let mcp = McpManager::builder()
            .connector(Arc::new(FakeConnector::default()))
            .start(&McpServers::new())
            .await;
        assert!(mcp.tools().is_empty());
        let mcp = McpManager::start_json(&json!({"mcpServers": {"x": {}}}), ".").await;
        assert_eq!(mcp.errors()[0].server(), "x");
        assert!(mcp.errors()[0].error().is_config());
    }
}
