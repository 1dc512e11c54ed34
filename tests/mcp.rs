//! MCP servers as agent tools (feature `mcp`), against real servers from npm that nobody here
//! wrote: `@modelcontextprotocol/server-everything` over stdio and streamable HTTP, and
//! `@modelcontextprotocol/server-filesystem` over stdio. They are installed into `.mcp-npm/`
//! by `scripts/install-mcp-servers.sh`; without them these tests are ignored.
#![cfg(feature = "mcp")]

#[path = "support/mcp_npm.rs"]
mod mcp_npm;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pi_engine::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};
use pi_engine::agent_session::AgentSession;
use pi_engine::mcp::{
    ConnectContext, McpCall, McpConnector, McpManager, McpServerConfig, McpServers, RmcpConnector,
};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::session::SessionManager;
use pi_engine::{ApiProvider, Content, Message};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

const NEEDS: &str = "needs node and the MCP servers from npm (scripts/install-mcp-servers.sh)";

fn everything_stdio() -> McpServerConfig {
    McpServerConfig::stdio(
        "node",
        [
            mcp_npm::server("server-everything").display().to_string(),
            "stdio".into(),
        ],
    )
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn find(tools: &[Arc<dyn AgentTool>], name: &str) -> Arc<dyn AgentTool> {
    tools
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| {
            let names: Vec<_> = tools.iter().map(|t| t.name()).collect();
            panic!("no tool {name} among {names:?}")
        })
}

async fn call(tool: &Arc<dyn AgentTool>, a: Value) -> Result<AgentToolResult, ToolError> {
    tool.execute(
        "c1",
        args(a),
        CancellationToken::new(),
        ToolUpdates::disconnected(),
    )
    .await
}

/// Calls `tool` and cancels it after `after`; returns how long the call took past the abort.
async fn abort_after(tool: &Arc<dyn AgentTool>, a: Value, after: Duration) -> Duration {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let at = Arc::new(Mutex::new(None));
    let at2 = at.clone();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        *at2.lock().unwrap() = Some(Instant::now());
        c.cancel();
    });
    let err = tool
        .execute("c1", args(a), cancel, ToolUpdates::disconnected())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "Operation aborted");
    let at = at.lock().unwrap().expect("aborted");
    at.elapsed()
}

/// Lists, calls, maps every kind of result, reports errors, and cancels a long call: the
/// checks shared by the stdio and HTTP transports.
async fn exercise_everything(mcp: &McpManager) {
    assert!(mcp.errors().is_empty(), "{:?}", mcp.errors());
    let tools = mcp.tools();
    let echo = find(&tools, "everything__echo");
    assert_eq!(echo.definition().parameters["required"], json!(["message"]));
    let out = call(&echo, json!({"message": "hi"})).await.unwrap();
    assert_eq!(out.text_content(), "Echo: hi");

    let image = call(&find(&tools, "everything__get-tiny-image"), json!({}))
        .await
        .unwrap();
    assert!(
        image
            .content
            .iter()
            .any(|c| matches!(c, Content::Image(i) if i.mime_type == "image/png")),
        "{image:?}"
    );

    let weather = call(
        &find(&tools, "everything__get-structured-content"),
        json!({"location": "Chicago"}),
    )
    .await
    .unwrap();
    assert!(weather.text_content().contains("drizzle"), "{weather:?}");
    assert_eq!(
        weather.details["mcp"]["structuredContent"]["temperature"],
        36
    );

    let resource = call(
        &find(&tools, "everything__get-resource-reference"),
        json!({"resourceType": "Text", "resourceId": 2}),
    )
    .await
    .unwrap();
    assert!(
        resource.content.len() >= 3,
        "text, the resource's text, text: {resource:?}"
    );

    // A tool that throws is an error result (isError), not a protocol error.
    let err = call(
        &find(&tools, "everything__get-resource-reference"),
        json!({"resourceType": "Text", "resourceId": 0}),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("resourceId"), "{err}");

    // An abort mid-call returns at once, and the server goes on serving.
    let long = find(&tools, "everything__trigger-long-running-operation");
    let late = abort_after(
        &long,
        json!({"duration": 30, "steps": 30}),
        Duration::from_millis(700),
    )
    .await;
    assert!(late < Duration::from_secs(1), "abort took {late:?}");
    let out = call(&echo, json!({"message": "still here"})).await.unwrap();
    assert_eq!(out.text_content(), "Echo: still here");
}

#[tokio::test]
#[ignore = "needs node and the MCP servers from npm (scripts/install-mcp-servers.sh)"]
async fn everything_over_stdio() {
    let _ = NEEDS;
    let dir = tempfile::tempdir().unwrap();
    let servers = McpServers::new().with("everything", everything_stdio());
    let mcp = McpManager::start(&servers, dir.path()).await;
    exercise_everything(&mcp).await;

    // The client offers roots, so the server adds `get-roots-list` after the handshake and
    // says so (`notifications/tools/list_changed`): the manager lists the tools again.
    let mut changes = mcp.changes();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !mcp
        .tools()
        .iter()
        .any(|t| t.name() == "everything__get-roots-list")
    {
        assert!(Instant::now() < deadline, "the tools were not listed again");
        let _ = tokio::time::timeout(Duration::from_millis(500), changes.changed()).await;
    }
    let roots = call(&find(&mcp.tools(), "everything__get-roots-list"), json!({}))
        .await
        .unwrap();
    let uri = format!(
        "file://{}",
        std::path::absolute(dir.path()).unwrap().display()
    );
    assert!(roots.text_content().contains(&uri), "{roots:?}");
    mcp.shutdown().await;
}

#[tokio::test]
#[ignore = "needs node and the MCP servers from npm (scripts/install-mcp-servers.sh)"]
async fn progress_reaches_the_caller() {
    let (events, _) = tokio::sync::mpsc::unbounded_channel();
    let cx = ConnectContext::new(
        "everything",
        ".",
        Arc::new(move |e| {
            let _ = events.send(e);
        }),
    );
    let conn = RmcpConnector::new()
        .connect(&everything_stdio(), cx)
        .await
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let result = conn
        .call_tool(
            McpCall::new(
                "trigger-long-running-operation",
                args(json!({"duration": 1, "steps": 4})),
            )
            .with_progress(Arc::new(move |p| s.lock().unwrap().push(p))),
        )
        .await
        .unwrap();
    assert!(!result.is_error);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(seen[3].progress, 4.0);
    assert_eq!(seen[3].total, Some(4.0));
    conn.close().await;
    assert!(conn.is_closed());
}

#[tokio::test]
#[ignore = "needs node and the MCP servers from npm (scripts/install-mcp-servers.sh)"]
async fn a_call_past_its_deadline_is_an_error() {
    let servers = McpServers::new().with(
        "everything",
        everything_stdio().with_timeout(Duration::from_millis(500)),
    );
    let mcp = McpManager::start(&servers, ".").await;
    let long = find(&mcp.tools(), "everything__trigger-long-running-operation");
    let start = Instant::now();
    let err = call(&long, json!({"duration": 30, "steps": 30}))
        .await
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_millis(1500));
    assert!(err.to_string().contains("timed out after 0.5 s"), "{err}");
    mcp.shutdown().await;
}

/// A free port on the loopback interface.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
#[ignore = "needs node and the MCP servers from npm (scripts/install-mcp-servers.sh)"]
async fn everything_over_streamable_http() {
    let port = free_port();
    let mut server = tokio::process::Command::new("node")
        .arg(mcp_npm::server("server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the HTTP server did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (servers, errors) = McpServers::from_json(&json!({"mcpServers": {
        "everything": {"url": format!("http://127.0.0.1:{port}/mcp"),
                       "headers": {"X-Test": "1"}}
    }}));
    assert!(errors.is_empty());
    let mcp = McpManager::start(&servers, ".").await;
    exercise_everything(&mcp).await;
    mcp.shutdown().await;
    server.kill().await.unwrap();
}

#[tokio::test]
#[ignore = "needs node and the MCP servers from npm (scripts/install-mcp-servers.sh)"]
async fn filesystem_server_reads_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("hello.txt"), "hello from a temp dir\n").unwrap();
    let config = json!({"fs": {
        "command": "node",
        "args": [mcp_npm::server("server-filesystem"), root],
    }});
    let mcp = McpManager::start_json(&config, &root).await;
    assert!(mcp.errors().is_empty(), "{:?}", mcp.errors());
    let tools = mcp.tools();
    let out = call(
        &find(&tools, "fs__read_text_file"),
        json!({"path": root.join("hello.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(out.text_content(), "hello from a temp dir\n");
    // Outside the allowed directory: the server refuses, as an error result.
    let err = call(
        &find(&tools, "fs__read_text_file"),
        json!({"path": "/etc/hostname"}),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().to_lowercase().contains("denied"), "{err}");
    mcp.shutdown().await;
}

#[tokio::test]
#[ignore = "needs node and the MCP servers from npm (scripts/install-mcp-servers.sh)"]
async fn a_server_killed_mid_call_gives_an_error_then_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // `exec` keeps the shell's pid: the file names the node process serving us.
    let script = format!(
        "echo $$ > '{}'; exec node '{}' stdio",
        pid_file.display(),
        mcp_npm::server("server-everything").display()
    );
    let servers =
        McpServers::new().with("everything", McpServerConfig::stdio("sh", ["-c", &script]));
    let mcp = McpManager::start(&servers, dir.path()).await;
    assert!(mcp.errors().is_empty(), "{:?}", mcp.errors());
    let tools = mcp.tools();
    let long = find(&tools, "everything__trigger-long-running-operation");
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let killed_at = Instant::now();
        std::process::Command::new("kill")
            .args(["-9", &pid])
            .status()
            .unwrap();
        killed_at
    });
    let err = call(&long, json!({"duration": 30, "steps": 30}))
        .await
        .unwrap_err();
    let killed_at = killer.await.unwrap();
    assert!(
        killed_at.elapsed() < Duration::from_secs(2),
        "took {:?}",
        killed_at.elapsed()
    );
    assert!(
        err.to_string().contains("restarted on the next call"),
        "{err}"
    );
    // The next call starts the server again.
    let out = call(
        &find(&tools, "everything__echo"),
        json!({"message": "back"}),
    )
    .await
    .unwrap();
    assert_eq!(out.text_content(), "Echo: back");
    let new_pid = std::fs::read_to_string(&pid_file).unwrap();
    assert_ne!(new_pid.trim(), "", "restarted");
    mcp.shutdown().await;
    // Shut down: the process group is gone.
    let alive = std::process::Command::new("kill")
        .args(["-0", new_pid.trim()])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(!alive, "the server outlived the shutdown");
}

#[tokio::test]
#[ignore = "needs node and the MCP servers from npm (scripts/install-mcp-servers.sh)"]
async fn an_agent_calls_an_mcp_tool_and_aborts_a_long_one() {
    let servers = McpServers::new().with("everything", everything_stdio());
    let mcp = McpManager::start(&servers, ".").await;
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call(
        "call_1",
        "everything__echo",
        json!({"message": "from the agent"}),
    ));
    faux.push(FauxResponse::text("The server echoed."));
    let f = faux.clone();
    let session = AgentSession::builder(SessionManager::in_memory("/p"))
        .models(faux.models().to_vec())
        .default_model(faux.model())
        .stream_fn(move |m, c, o| f.stream(m, c, o))
        .tools(mcp.tools())
        .build()
        .unwrap();
    session
        .prompt("Echo something")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let requests = faux.requests();
    let result = requests[1]
        .context
        .messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(result.tool_name, "everything__echo");
    assert!(!result.is_error);
    let text: String = result.content.iter().filter_map(|c| c.as_text()).collect();
    assert_eq!(text, "Echo: from the agent");

    // An abort mid-call: the run ends within a second.
    faux.push(FauxResponse::tool_call(
        "call_2",
        "everything__trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
    ));
    let s = session.clone();
    let run = tokio::spawn(async move { s.prompt("Take your time").await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let aborted_at = Instant::now();
    session.abort();
    let _ = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("the run ended");
    assert!(
        aborted_at.elapsed() < Duration::from_secs(1),
        "took {:?}",
        aborted_at.elapsed()
    );
    mcp.shutdown().await;
}
