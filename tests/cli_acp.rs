//! `pi-engine --mode acp` driven by the official TypeScript ACP client library
//! (`@agentclientprotocol/sdk`, through `tests/support/acp_client.mjs`) against the scripted
//! model: initialize, a new session, a prompt whose tool calls write a file through the
//! client and ask for permission (answered both ways), a prompt cancelled mid-stream, then a
//! new process that loads the session.
//!
//! It needs node and the client library (`scripts/install-pi-npm.sh` installs it beside pi's
//! packages), so a plain `cargo test` lists it as ignored; `.ci/run` runs it.
#![cfg(feature = "cli")]

mod support;

#[path = "support/pi_npm.rs"]
mod pi_npm;

#[cfg(feature = "mcp")]
#[path = "support/mcp_npm.rs"]
mod mcp_npm;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::scripted::{FINAL, anthropic_reply};
use support::{MockServer, Reply, Step, anthropic_sse};

/// One run of the client takes a few seconds; then it is killed and the test fails.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The first prompt's tool calls: a file written, then two commands the approval gate asks
/// about (the client allows the first and rejects the second).
fn script() -> Vec<(&'static str, Value)> {
    vec![
        (
            "write",
            json!({"path": "notes.txt", "content": "line one\n"}),
        ),
        ("bash", json!({"command": "rm -rf junk"})),
        ("bash", json!({"command": "rm -rf keep"})),
    ]
}

/// A reply that starts to stream its text, then never goes on: the prompt cancelled.
fn stalled_reply() -> Reply {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_stall", "type": "message",
            "role": "assistant", "model": "mock-claude", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Working on "}}),
    ];
    let chunks: Vec<String> = events
        .iter()
        .map(|e| anthropic_sse(&[e.to_string().as_str()]))
        .collect();
    Reply::sse_open(&chunks).then(Step::Hang)
}

struct Home {
    root: PathBuf,
    _dir: tempfile::TempDir,
}

impl Home {
    fn new(url: &str) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["agent", "cwd/junk", "cwd/keep", "sessions", "home"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let models =
            std::fs::read_to_string(manifest.join("tests/fixtures/pi/models.json")).unwrap();
        std::fs::write(
            root.join("agent/models.json"),
            models.replace("http://127.0.0.1:18080", url),
        )
        .unwrap();
        Home { root, _dir: dir }
    }

    /// Runs the client's `scenario` against a fresh `pi-engine --mode acp` and returns its
    /// report.
    async fn client(&self, scenario: &str, env: &[(&str, &str)]) -> Value {
        let modules = pi_npm::require("@agentclientprotocol/sdk");
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let gate = manifest.join("examples/extensions/approval_gate.py");
        let args = json!([
            "--mode",
            "acp",
            "--provider",
            "mock-anthropic",
            "--model",
            "mock-claude",
            "--session-dir",
            self.root.join("sessions"),
            "-e",
            gate,
        ]);
        let mut command = tokio::process::Command::new("node");
        command
            .arg(manifest.join("tests/support/acp_client.mjs"))
            .current_dir(self.root.join("cwd"))
            .env("PI_NPM_MODULES", &modules)
            .env("ACP_BIN", env!("CARGO_BIN_EXE_pi-engine"))
            .env("ACP_ARGS", args.to_string())
            .env("ACP_CWD", self.root.join("cwd"))
            .env("ACP_SCENARIO", scenario)
            .env("PI_CODING_AGENT_DIR", self.root.join("agent"))
            .env("HOME", self.root.join("home"))
            .env("PI_OFFLINE", "1")
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let child = command.spawn().expect("node runs");
        let out = tokio::time::timeout(RUN_LIMIT, child.wait_with_output())
            .await
            .expect("the ACP client finished in time")
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "the client failed: {stderr}");
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)))
    }
}

/// The `sessionUpdate` kinds of `updates`, in order.
fn kinds(updates: &[Value]) -> Vec<&str> {
    updates
        .iter()
        .map(|u| u["update"]["sessionUpdate"].as_str().unwrap())
        .collect()
}

fn text_of(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["update"]["sessionUpdate"] == kind)
        .filter_map(|u| u["update"]["content"]["text"].as_str())
        .collect()
}

#[tokio::test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
async fn an_editor_drives_pi_engine_over_acp_with_the_official_client() {
    let script = script();
    let mut replies: Vec<Reply> = script
        .iter()
        .enumerate()
        .map(|(i, step)| anthropic_reply(i + 1, Some(step)))
        .collect();
    replies.push(anthropic_reply(script.len() + 1, None));
    replies.push(stalled_reply());
    let server = MockServer::start(replies).await;
    let home = Home::new(server.url());
    let report = home
        .client("work", &[("ACP_DECISIONS", r#"["allow","reject"]"#)])
        .await;

    // initialize
    let init = &report["initialize"];
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"],
        true
    );
    assert_eq!(init["agentInfo"]["name"], "pi-engine");
    assert_eq!(init["authMethods"][0]["id"], "api-key");

    // The work prompt: four model calls, the end of the turn.
    assert_eq!(report["work"]["stopReason"], "end_turn", "{report}");
    let session_id = report["sessionId"].as_str().unwrap().to_owned();
    let updates: Vec<Value> = report["updates"].as_array().unwrap().clone();
    assert!(
        updates
            .iter()
            .all(|u| u["sessionId"] == session_id.as_str())
    );
    let work = &updates[..report["updatesAfterWork"].as_u64().unwrap() as usize];
    let thought = text_of(work, "agent_thought_chunk");
    assert!(
        thought.starts_with("The user wants something. I should call a tool first."),
        "{thought}"
    );
    assert!(text_of(work, "agent_message_chunk").ends_with(&FINAL.concat()));

    // Each call: announced (pending) with its input, in progress, then finished.
    let calls: Vec<&Value> = work
        .iter()
        .filter(|u| u["update"]["sessionUpdate"] == "tool_call")
        .map(|u| &u["update"])
        .collect();
    assert_eq!(calls.len(), 3, "{:?}", kinds(work));
    assert_eq!(calls[0]["title"], "Write notes.txt");
    assert_eq!(calls[0]["kind"], "edit");
    assert!(
        calls[0].get("status").is_none(),
        "pending, the default, is left out"
    );
    assert_eq!(calls[0]["rawInput"]["path"], "notes.txt");
    let notes = home.root.join("cwd/notes.txt");
    assert_eq!(calls[0]["locations"][0]["path"], notes.to_str().unwrap());
    assert_eq!(calls[0]["content"][0]["type"], "diff");
    assert_eq!(calls[0]["content"][0]["newText"], "line one\n");
    assert_eq!(calls[1]["kind"], "execute");
    assert_eq!(calls[1]["title"], "`rm -rf junk`");
    let finished = |id: &Value| -> Value {
        work.iter()
            .rev()
            .find(|u| {
                u["update"]["sessionUpdate"] == "tool_call_update"
                    && u["update"]["toolCallId"] == *id
            })
            .map(|u| u["update"].clone())
            .unwrap()
    };
    let write_done = finished(&calls[0]["toolCallId"]);
    assert_eq!(write_done["status"], "completed", "{write_done}");
    assert_eq!(
        write_done["content"][0]["type"], "diff",
        "the last update keeps the diff"
    );
    assert_eq!(finished(&calls[1]["toolCallId"])["status"], "completed");
    let blocked = finished(&calls[2]["toolCallId"]);
    assert_eq!(blocked["status"], "failed");
    assert!(
        blocked["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Blocked by user"),
        "{blocked}"
    );

    // The file went through the client's fs/write_text_file.
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "line one\n");
    assert_eq!(report["fs"][0]["method"], "write", "{}", report["fs"]);
    assert_eq!(report["fs"][0]["path"], notes.to_str().unwrap());

    // The gate's two questions, about the calls they gate, answered both ways.
    let permissions = report["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 2, "{permissions:?}");
    assert_eq!(
        permissions[0]["toolCall"]["toolCallId"],
        calls[1]["toolCallId"]
    );
    assert_eq!(
        permissions[1]["toolCall"]["toolCallId"],
        calls[2]["toolCallId"]
    );
    let options: Vec<(&str, &str)> = permissions[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["name"].as_str().unwrap(), o["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(options, [("Yes", "allow_once"), ("No", "reject_once")]);
    assert!(
        permissions[0]["toolCall"]["title"]
            .as_str()
            .unwrap()
            .contains("rm -rf junk")
    );
    assert!(!home.root.join("cwd/junk").exists(), "allowed: it ran");
    assert!(
        home.root.join("cwd/keep").exists(),
        "rejected: it did not run"
    );

    // Cancelled mid-stream; unknown methods and sessions are errors.
    assert_eq!(report["cancelled"]["stopReason"], "cancelled", "{report}");
    assert_eq!(report["unknown"]["code"], -32601);
    assert_eq!(report["badSession"]["code"], -32002);
    assert_eq!(report["exit"]["code"], 0);

    // A new process loads the session: the conversation comes back as updates.
    let loaded = home
        .client("load", &[("ACP_SESSION", session_id.as_str())])
        .await;
    assert!(loaded["load"].is_object(), "{loaded}");
    let replay: Vec<Value> = loaded["updates"].as_array().unwrap().clone();
    let replayed = kinds(&replay);
    assert_eq!(replayed[0], "user_message_chunk", "{replayed:?}");
    assert_eq!(
        text_of(&replay, "user_message_chunk"),
        "do the workand again"
    );
    assert_eq!(replayed.iter().filter(|k| **k == "tool_call").count(), 3);
    assert!(text_of(&replay, "agent_message_chunk").contains(&FINAL.concat()));
}

/// The MCP servers an editor passes in `session/new` are started for the session (feature
/// `mcp`): the model calls the reference server's `echo` and gets its answer.
#[cfg(feature = "mcp")]
#[tokio::test]
#[ignore = "needs node, pi's npm packages and the MCP servers from npm (scripts/install-mcp-servers.sh)"]
async fn the_mcp_servers_an_editor_passes_become_the_sessions_tools() {
    let everything = mcp_npm::server("server-everything");
    let call = ("everything__echo", json!({"message": "hi from the editor"}));
    let server = MockServer::start(vec![
        anthropic_reply(1, Some(&call)),
        anthropic_reply(2, None),
    ])
    .await;
    let home = Home::new(server.url());
    let servers = json!([{"name": "everything", "command": "node",
        "args": [everything, "stdio"], "env": []}]);
    let report = home
        .client("mcp", &[("ACP_MCP", servers.to_string().as_str())])
        .await;
    assert_eq!(report["work"]["stopReason"], "end_turn", "{report}");
    let updates = report["updates"].as_array().unwrap();
    let done = updates
        .iter()
        .map(|u| &u["update"])
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{updates:?}"));
    assert!(
        done.to_string().contains("Echo: hi from the editor"),
        "{done}"
    );
    // The tool result went back to the model.
    let second = server.requests()[1].json();
    assert!(second.to_string().contains("Echo: hi from the editor"));
}
