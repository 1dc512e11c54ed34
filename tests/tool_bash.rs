//! The `bash` tool against real processes: results and pi's texts, interleaving, the process
//! group killed on abort, timeout and drop, a background child holding the pipes, and a
//! 100 MB output.

#![cfg(all(unix, feature = "tools"))]

use std::path::Path;
use std::time::{Duration, Instant};

use pi_engine::CancellationToken;
use pi_engine::agent::{AgentTool, AgentToolResult, ToolUpdates};
use pi_engine::tools::BashTool;
use serde_json::{Map, Value, json};

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

async fn run_in(dir: &Path, call: Value) -> Result<AgentToolResult, String> {
    BashTool::new(dir)
        .execute(
            "call_1",
            args(call),
            CancellationToken::new(),
            ToolUpdates::disconnected(),
        )
        .await
        .map_err(|e| e.to_string())
}

async fn run(command: &str) -> Result<AgentToolResult, String> {
    let dir = tempfile::tempdir().unwrap();
    run_in(dir.path(), json!({ "command": command })).await
}

/// Whether `pid` is a live process (a zombie, waiting for a parent to reap it, is dead).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses, which may contain spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Waits up to `limit` for `f` to hold.
async fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f()
}

/// The pids written to `file` by the command, once it has written them.
async fn pids_from(file: &Path) -> Vec<u32> {
    assert!(
        eventually(Duration::from_secs(10), || std::fs::read_to_string(file)
            .is_ok_and(|s| s.ends_with('\n')))
        .await,
        "the command never wrote its pids"
    );
    std::fs::read_to_string(file)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

#[tokio::test]
async fn echo_and_cwd() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("marker.txt"), "m\n").unwrap();
    let r = run_in(dir.path(), json!({"command": "ls; pwd"}))
        .await
        .unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(r.text_content(), format!("marker.txt\n{}\n", cwd.display()));
    assert_eq!(r.details, Value::Null);
}

#[tokio::test]
async fn non_zero_exit_is_an_error_with_pis_text() {
    assert_eq!(
        run("echo before; exit 3").await.unwrap_err(),
        "before\n\n\nCommand exited with code 3"
    );
}

#[tokio::test]
async fn a_command_killed_by_a_signal_is_not_a_failure_as_in_pi() {
    assert_eq!(
        run("echo hi; kill -9 $$").await.unwrap().text_content(),
        "hi\n"
    );
}

#[tokio::test]
async fn stdout_and_stderr_interleave_in_arrival_order() {
    let r = run("echo out; sleep 0.2; echo err >&2; sleep 0.2; echo out2")
        .await
        .unwrap();
    assert_eq!(r.text_content(), "out\nerr\nout2\n");
}

#[tokio::test]
async fn stdin_is_closed() {
    assert_eq!(run("cat; echo end").await.unwrap().text_content(), "end\n");
}

#[tokio::test]
async fn timeout_kills_and_says_so() {
    let start = Instant::now();
    let err = run_in(
        tempfile::tempdir().unwrap().path(),
        json!({"command": "echo start; sleep 30; echo never", "timeout": 1}),
    )
    .await
    .unwrap_err();
    assert_eq!(err, "start\n\n\nCommand timed out after 1 seconds");
    assert!(start.elapsed() < Duration::from_secs(10));

    let err = run_in(
        tempfile::tempdir().unwrap().path(),
        json!({"command": "sleep 30", "timeout": 0.3}),
    )
    .await
    .unwrap_err();
    assert_eq!(err, "Command timed out after 0.3 seconds");
}

#[tokio::test]
async fn the_default_timeout_applies_without_a_timeout_argument() {
    let dir = tempfile::tempdir().unwrap();
    let tool = BashTool::new(dir.path()).with_default_timeout(Duration::from_millis(300));
    let err = tool
        .execute(
            "c",
            args(json!({"command": "echo a; sleep 30"})),
            CancellationToken::new(),
            ToolUpdates::disconnected(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(err, "a\n\n\nCommand timed out after 0.3 seconds");
    // A call's own timeout wins; zero is none, as in pi.
    let r = tool
        .execute(
            "c",
            args(json!({"command": "sleep 0.5; echo done", "timeout": 0})),
            CancellationToken::new(),
            ToolUpdates::disconnected(),
        )
        .await
        .unwrap();
    assert_eq!(r.text_content(), "done\n");
}

/// pi's bug #7636: a background child inherits the output pipes and keeps them open.
#[tokio::test]
async fn a_background_child_holding_the_pipes_does_not_hang_the_call() {
    let start = Instant::now();
    let r = run("sleep 100 & echo $!").await.unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    // Left running, as pi leaves it.
    let pid: u32 = r.text_content().trim().parse().unwrap();
    assert!(alive(pid));
    let _ = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status();
}

#[tokio::test]
async fn abort_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let cancel = CancellationToken::new();
    let tool = BashTool::new(dir.path());
    let call = tool.execute(
        "c",
        args(json!({"command": "echo started; sleep 1000 & echo $$ $! > pids; wait"})),
        cancel.clone(),
        ToolUpdates::disconnected(),
    );
    let canceller = async {
        let pids = pids_from(&pidfile).await;
        assert!(pids.iter().all(|&p| alive(p)));
        cancel.cancel();
        pids
    };
    let (result, pids) = tokio::join!(call, canceller);
    assert_eq!(
        result.unwrap_err().to_string(),
        "started\n\n\nCommand aborted"
    );
    assert!(
        eventually(Duration::from_secs(5), || pids.iter().all(|&p| !alive(p))).await,
        "survivors among {pids:?}"
    );
}

#[tokio::test]
async fn abort_escalates_to_sigkill_for_a_tree_that_ignores_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let cancel = CancellationToken::new();
    let tool = BashTool::new(dir.path());
    let call = tool.execute(
        "c",
        args(json!({"command": "trap '' TERM; sleep 1000 & echo $$ $! > pids; wait; wait"})),
        cancel.clone(),
        ToolUpdates::disconnected(),
    );
    let canceller = async {
        let pids = pids_from(&pidfile).await;
        cancel.cancel();
        pids
    };
    let start = Instant::now();
    let (result, pids) = tokio::join!(call, canceller);
    assert_eq!(result.unwrap_err().to_string(), "Command aborted");
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(
        eventually(Duration::from_secs(5), || pids.iter().all(|&p| !alive(p))).await,
        "survivors among {pids:?}"
    );
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let tool = BashTool::new(dir.path());
    let pids = {
        let call = tool.execute(
            "c",
            args(json!({"command": "sleep 1000 & echo $$ $! > pids; wait"})),
            CancellationToken::new(),
            ToolUpdates::disconnected(),
        );
        tokio::select! {
            _ = call => panic!("the command ended by itself"),
            pids = pids_from(&pidfile) => pids,
        }
        // `call` is dropped here.
    };
    assert!(
        eventually(Duration::from_secs(5), || pids.iter().all(|&p| !alive(p))).await,
        "survivors among {pids:?}"
    );
}

#[tokio::test]
async fn a_hundred_megabytes_keep_the_tail_and_the_file_gets_everything() {
    let r = run("yes aaaaaaaaa | head -c 100000000").await.unwrap();
    let text = r.text_content();
    let path = r.details["fullOutputPath"].as_str().unwrap().to_owned();
    assert!(
        Path::new(&path)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("pi-bash-")
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 100_000_000);
    assert!(
        text.ends_with(&format!(
            "aaaaaaaaa\n\n\n[Showing lines 9998002-10000001 of 10000001. Full output: {path}]"
        )),
        "{}",
        &text[text.len().saturating_sub(200)..]
    );
    let t = &r.details["truncation"];
    assert_eq!(t["truncatedBy"], "lines");
    assert_eq!(t["totalLines"], 10_000_001);
    assert_eq!(t["totalBytes"], 100_000_000);
    assert_eq!(t["outputLines"], 2000);
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn large_output_matches_pis_notice() {
    let r = run("seq 1 5000").await.unwrap();
    let text = r.text_content();
    let path = r.details["fullOutputPath"].as_str().unwrap().to_owned();
    assert!(text.starts_with("3002\n3003\n"));
    assert!(text.ends_with(&format!(
        "4999\n5000\n\n\n[Showing lines 3002-5001 of 5001. Full output: {path}]"
    )));
    let full = std::fs::read_to_string(&path).unwrap();
    assert_eq!(full.lines().count(), 5000);
    assert_eq!(r.details["truncation"]["outputBytes"], 9995);
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn a_missing_working_directory_is_pis_error() {
    let err = run_in(
        Path::new("/nonexistent/pi-engine-bash-test"),
        json!({"command": "true"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        "Working directory does not exist: /nonexistent/pi-engine-bash-test\nCannot execute bash commands."
    );
}

#[tokio::test]
async fn the_output_so_far_streams_as_updates() {
    use pi_engine::agent::{Agent, AgentEvent};
    use pi_engine::providers::faux::{FauxProvider, FauxResponse};
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo one; sleep 0.3; echo two"}),
    ));
    faux.push(FauxResponse::text("done"));
    let tool: Arc<dyn AgentTool> = Arc::new(BashTool::new(dir.path()));
    let agent = Agent::builder(faux.model())
        .tools(vec![tool])
        .provider(faux)
        .build();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = agent.subscribe(move |event, _| {
        if let AgentEvent::ToolExecutionUpdate { partial_result, .. } = event {
            sink.lock().unwrap().push(partial_result.clone());
        }
    });
    let _ = agent.prompt("run it").await.unwrap();
    let seen = seen.lock().unwrap();
    // pi's first update is empty; then the output so far, the last one all of it.
    assert!(seen.len() >= 3, "{seen:?}");
    assert!(seen[0].content.is_empty());
    assert!(seen.iter().any(|u| u.text_content() == "one\n"), "{seen:?}");
    assert_eq!(seen.last().unwrap().text_content(), "one\ntwo\n");
    assert_eq!(seen.last().unwrap().details, json!({}));
}
