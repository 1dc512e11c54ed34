//! The `pi-engine` binary itself, run as a user runs it: each test starts the built command
//! (`CARGO_BIN_EXE_pi-engine`) in a temporary working directory, with a temporary agent
//! directory (`PI_CODING_AGENT_DIR`, whose `models.json` points a custom `anthropic-messages`
//! provider at a scripted [`MockServer`] on 127.0.0.1), a temporary `HOME` and an otherwise
//! empty environment, and checks what it prints, its exit code, the requests the server got,
//! and the files it leaves (sessions, `settings.json`).
//!
//! Covered: print mode (`-p`: the answer, errors, several messages, piped stdin and `@file`s,
//! sessions: pi's layout, `--no-session`, `-c`, `--session <id prefix>`, `--fork`), JSON mode
//! (`--mode json`, `--json-updates delta`), RPC mode (`--mode rpc`: prompt, `get_state`, bad
//! lines, the end of stdin; settings saved as pi saves them), signals and an extension's
//! shutdown (exit codes 143 and 0, `session_shutdown` delivered), and the command line
//! (`--help`, `--version`, usage errors, extension flags, `--list-models`, `--model`,
//! `--thinking`, `--tools`, `--no-tools`, the system prompt options, `AGENTS.md`, prompt
//! templates, TypeScript extensions, a corrupt `settings.json`).
//!
//! The interop tests at the end run pi 0.73.1's own CLI (`node dist/cli.js`) on the same
//! agent directory: a session goes from `pi-engine -p` to `pi -c -p` and back. They need node
//! and pi's npm packages (`scripts/install-pi-npm.sh`), so a plain `cargo test` lists them as
//! ignored.
//!
//! Every wait is bounded: a child that outlives its limit is killed and the test fails.
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
use support::{MockServer, Recorded, Reply, anthropic_sse};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long one `pi-engine` run may take (about 0.1 s, up to 2 s on a loaded machine with
/// the tests running in parallel), and how long an RPC line may be waited for.
const RUN_LIMIT: Duration = Duration::from_secs(20);

/// How long one run of pi itself (node) may take (about 2 s, 4 s on a loaded machine).
const NODE_LIMIT: Duration = Duration::from_secs(40);

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_pi-engine");

/// The mock provider's models: one that reasons and takes images, one plain.
const PROVIDER: &str = "mock";
const MODEL: &str = "mock-claude";
const PLAIN: &str = "mock-plain";

/// pi's warning for an invalid `--thinking`.
const BAD_THINKING: &str = "Warning: Invalid thinking level \"bogus\". Valid values: off, minimal, low, medium, high, xhigh\n";

// ----- the scripted model ------------------------------------------------------------------

/// One block of a scripted reply.
enum Block<'a> {
    Text(&'a str),
    Thinking(&'a str),
}

/// An Anthropic event stream answering with `blocks`, then `end_turn`.
fn reply(blocks: &[Block<'_>]) -> Reply {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_1", "usage": {"input_tokens": 3, "output_tokens": 0}}})];
    for (i, block) in blocks.iter().enumerate() {
        let (start, delta) = match block {
            Block::Text(t) => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": t}),
            ),
            Block::Thinking(t) => (
                json!({"type": "thinking", "thinking": ""}),
                json!({"type": "thinking_delta", "thinking": t}),
            ),
        };
        events.push(json!({"type": "content_block_start", "index": i, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": i, "delta": delta}));
        if matches!(block, Block::Thinking(_)) {
            events.push(json!({"type": "content_block_delta", "index": i,
                "delta": {"type": "signature_delta", "signature": "sig=="}}));
        }
        events.push(json!({"type": "content_block_stop", "index": i}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 2}}),
    );
    events.push(json!({"type": "message_stop"}));
    let texts: Vec<String> = events.iter().map(Value::to_string).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    Reply::sse(&[anthropic_sse(&refs)])
}

/// A reply with one text block.
fn text(t: &str) -> Reply {
    reply(&[Block::Text(t)])
}

/// The request bodies the server got, as JSON.
fn bodies(server: &MockServer) -> Vec<Value> {
    server.requests().iter().map(Recorded::json).collect()
}

/// The messages of a request as `(role, text)`, the text blocks joined.
fn turns(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .map(|b| b["text"].as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join(""),
                other => panic!("content {other}"),
            };
            (m["role"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

fn turn(role: &str, text: &str) -> (String, String) {
    (role.to_owned(), text.to_owned())
}

/// The system prompt of a request (one text block).
fn system(body: &Value) -> String {
    let blocks = body["system"].as_array().expect("a system prompt");
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    blocks[0]["text"].as_str().unwrap().to_owned()
}

/// The names of the tools of a request.
fn tool_names(body: &Value) -> Vec<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

// ----- the sandbox -------------------------------------------------------------------------

/// A temporary home for one test: `agent/` (the agent directory), `project/` (the working
/// directory), `home/` (`HOME`).
struct Sandbox {
    _tmp: tempfile::TempDir,
    agent: PathBuf,
    cwd: PathBuf,
    home: PathBuf,
}

/// What a finished run left.
#[derive(Debug)]
struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Sandbox {
    /// The directories, with `models.json` pointing the provider `mock` at `url`.
    fn new(url: &str) -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        // The child sees the real path (getcwd); so must the assertions.
        let root = tmp.path().canonicalize().unwrap();
        let (agent, cwd, home) = (root.join("agent"), root.join("project"), root.join("home"));
        for d in [&agent, &cwd, &home] {
            std::fs::create_dir_all(d).unwrap();
        }
        let models = json!({"providers": {PROVIDER: {
            "baseUrl": url,
            "api": "anthropic-messages",
            "apiKey": "test-key",
            "models": [
                {"id": MODEL, "reasoning": true, "input": ["text", "image"],
                 "contextWindow": 200000, "maxTokens": 64000},
                {"id": PLAIN, "reasoning": false},
            ],
        }}});
        write(&agent.join("models.json"), &models.to_string());
        Sandbox {
            _tmp: tmp,
            agent,
            cwd,
            home,
        }
    }

    /// The global `settings.json`.
    fn settings(&self) -> PathBuf {
        self.agent.join("settings.json")
    }

    /// Retries off, the session's and the provider's: a failed request is final at once (the
    /// session's default retries wait 2 s, 4 s, 8 s; without them, the provider's retry).
    fn without_retries(&self) {
        write(
            &self.settings(),
            r#"{"retry": {"enabled": false, "provider": {"maxRetries": 0}}}"#,
        );
    }

    /// pi's session directory of the working directory, `<agent>/sessions/--<cwd>--`.
    fn session_dir(&self) -> PathBuf {
        let cwd = self.cwd.to_str().unwrap();
        let safe = cwd.trim_start_matches('/').replace(['/', '\\', ':'], "-");
        self.agent.join("sessions").join(format!("--{safe}--"))
    }

    /// Every `.jsonl` file under the whole sandbox, sorted.
    fn jsonl_files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push(p);
                }
            }
        }
        let mut out = Vec::new();
        walk(self.agent.parent().unwrap(), &mut out);
        out.sort();
        out
    }

    /// The session files of the working directory, oldest first (the names start with the
    /// creation time).
    fn sessions(&self) -> Vec<PathBuf> {
        let files = self.jsonl_files();
        for f in &files {
            assert_eq!(
                f.parent().unwrap(),
                self.session_dir(),
                "a session elsewhere"
            );
        }
        files
    }

    /// The environment every child gets: nothing of the caller's but `PATH`.
    fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("PI_CODING_AGENT_DIR", &self.agent)
            .current_dir(&self.cwd)
            .kill_on_drop(true);
    }

    /// `pi-engine args`, stdin and stdout piped.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        self.env(&mut cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs `pi-engine args` with `stdin` (empty when `None`: a pipe that ends at once, as
    /// `< /dev/null`) to its end.
    async fn run_with(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let child = self.command(args).spawn().expect("start pi-engine");
        finish(child, stdin, RUN_LIMIT, &format!("pi-engine {args:?}")).await
    }

    async fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, None).await
    }

    /// pi 0.73.1's own CLI (`node dist/cli.js args`) in the same sandbox.
    async fn run_pi(&self, args: &[&str]) -> Output {
        let modules = pi_npm::require("@mariozechner/pi-coding-agent");
        let cli = modules.join("@mariozechner/pi-coding-agent/dist/cli.js");
        let mut cmd = Command::new("node");
        cmd.arg(cli).args(args);
        self.env(&mut cmd);
        cmd.env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().expect("start node");
        finish(child, None, NODE_LIMIT, &format!("pi {args:?}")).await
    }
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

/// Writes `stdin`, closes it, and waits for the child (killed after `limit`).
async fn finish(mut child: Child, stdin: Option<&str>, limit: Duration, what: &str) -> Output {
    // Without `stdin`, the pipe is closed at once (as `< /dev/null`).
    if let (Some(mut input), Some(text)) = (child.stdin.take(), stdin) {
        tokio::time::timeout(limit, input.write_all(text.as_bytes()))
            .await
            .unwrap_or_else(|_| panic!("{what}: stdin not read within {limit:?}"))
            .unwrap();
    }
    // On a timeout the future is dropped with the child, which kills it (kill_on_drop).
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
        .unwrap();
    Output {
        code: out.status.code().expect("an exit code, not a signal"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The JSON lines of a file.
fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The messages of a session file's entries as `(role, text)`.
fn session_turns(entries: &[Value]) -> Vec<(String, String)> {
    entries
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| {
            let m = &e["message"];
            let text = m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "text")
                .map(|b| b["text"].as_str().unwrap())
                .collect::<Vec<_>>()
                .join("");
            (m["role"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

/// Asserts that each entry's `parentId` is the previous entry's `id` (one branch).
fn assert_one_branch(entries: &[Value]) {
    let mut parent = Value::Null;
    for e in &entries[1..] {
        assert_eq!(e["parentId"], parent, "{e}");
        parent = e["id"].clone();
    }
}

/// The shortest prefix of `id` that `other` does not start with (session ids are UUIDv7:
/// ids made the same second share their first characters).
fn unique_prefix<'a>(id: &'a str, other: &str) -> &'a str {
    let n = (1..=id.len())
        .find(|&n| !other.starts_with(&id[..n]))
        .unwrap();
    &id[..n]
}

// ----- print mode ----------------------------------------------------------------------------

#[tokio::test]
async fn print_mode_prints_the_text_of_the_answer() {
    let server = MockServer::start(vec![reply(&[
        Block::Thinking("The user greets me."),
        Block::Text("Hello!"),
        Block::Text("How can I help?"),
    ])])
    .await;
    let sb = Sandbox::new(server.url());
    let out = sb.run(&["-p", "Say hi"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    // Each text block on its own line; no thinking.
    assert_eq!(out.stdout, "Hello!\nHow can I help?\n");
    assert_eq!(out.stderr, "");
    let sent = bodies(&server);
    assert_eq!(sent.len(), 1);
    assert_eq!(server.requests()[0].path, "/v1/messages");
    assert_eq!(server.requests()[0].header("x-api-key"), Some("test-key"));
    assert_eq!(sent[0]["model"], MODEL);
    assert_eq!(turns(&sent[0]), [turn("user", "Say hi")]);
    // The default thinking level is pi's (medium: 8192 tokens).
    assert_eq!(
        sent[0]["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192, "display": "summarized"})
    );
}

#[tokio::test]
async fn a_failed_request_is_reported_on_stderr_with_exit_code_1() {
    let server = MockServer::start(vec![Reply::status(
        500,
        &[("content-type", "application/json")],
        r#"{"type":"error","error":{"type":"api_error","message":"boom"}}"#,
    )])
    .await;
    let sb = Sandbox::new(server.url());
    sb.without_retries();
    let out = sb.run(&["-p", "hi"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stdout, "");
    // pi prints the SDK's message (`500 {"type":"error",…}`); pi-engine describes the body.
    assert_eq!(out.stderr, "500 api_error: boom\n");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_error_event_in_the_stream_is_reported_on_stderr_with_exit_code_1() {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1",
            "usage": {"input_tokens": 3, "output_tokens": 0}}})
        .to_string(),
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "the model refused"}})
        .to_string(),
    ];
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let server = MockServer::start(vec![Reply::sse(&[anthropic_sse(&refs)])]).await;
    let sb = Sandbox::new(server.url());
    sb.without_retries();
    let out = sb.run(&["-p", "hi"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr, "invalid_request_error: the model refused\n");
    // The failed reply is in the session, with its error.
    let session = read_jsonl(&sb.sessions()[0]);
    let last = &session.last().unwrap()["message"];
    assert_eq!(last["stopReason"], "error");
    assert_eq!(
        last["errorMessage"],
        "invalid_request_error: the model refused"
    );
}

#[tokio::test]
async fn several_messages_run_in_order_and_the_last_answer_is_printed() {
    let server = MockServer::start(vec![text("First."), text("Second."), text("Third.")]).await;
    let sb = Sandbox::new(server.url());
    let out = sb.run(&["-p", "one", "two", "three"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Third.\n");
    assert_eq!(out.stderr, "");
    let sent = bodies(&server);
    assert_eq!(sent.len(), 3);
    assert_eq!(turns(&sent[0]), [turn("user", "one")]);
    assert_eq!(
        turns(&sent[2]),
        [
            turn("user", "one"),
            turn("assistant", "First."),
            turn("user", "two"),
            turn("assistant", "Second."),
            turn("user", "three"),
        ]
    );
}

#[tokio::test]
async fn a_failed_message_does_not_stop_the_next_one() {
    // As pi: each message is prompted; only the last reply decides the output.
    let server = MockServer::start(vec![
        Reply::status(
            500,
            &[("content-type", "application/json")],
            r#"{"type":"error","error":{"type":"api_error","message":"boom"}}"#,
        ),
        text("Recovered."),
    ])
    .await;
    let sb = Sandbox::new(server.url());
    sb.without_retries();
    let out = sb.run(&["-p", "one", "two"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Recovered.\n");
    assert_eq!(out.stderr, "");
    let sent = bodies(&server);
    assert_eq!(sent.len(), 2);
    // The failed reply is not sent back to the model.
    assert_eq!(turns(&sent[1]), [turn("user", "one"), turn("user", "two")]);
}

#[tokio::test]
async fn piped_stdin_and_file_arguments_go_into_the_first_message() {
    let server = MockServer::start(vec![text("Summary."), text("More.")]).await;
    let sb = Sandbox::new(server.url());
    write(&sb.cwd.join("notes.md"), "# Notes\nline 2\n");
    write(&sb.cwd.join("empty.txt"), "");
    // A 1x1 PNG.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let png = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(PNG)
            .unwrap()
    };
    std::fs::write(sb.cwd.join("dot.png"), png).unwrap();
    let out = sb
        .run_with(
            &[
                "-p",
                "@notes.md",
                "@empty.txt",
                "@dot.png",
                "Summarize",
                "And more",
            ],
            Some("  piped text\n\n"),
        )
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "More.\n");
    let sent = bodies(&server);
    assert_eq!(sent.len(), 2);
    // pi's buildInitialMessage: stdin (trimmed), the files (an empty one skipped, an image as
    // an attachment with an empty <file> reference), then the first message.
    let cwd = sb.cwd.display();
    let first = format!(
        "piped text<file name=\"{cwd}/notes.md\">\n# Notes\nline 2\n\n</file>\n<file name=\"{cwd}/dot.png\"></file>\nSummarize"
    );
    assert_eq!(
        sent[0]["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": first},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG},
             "cache_control": {"type": "ephemeral"}},
        ]}])
    );
    // The second message is a prompt of its own.
    assert_eq!(
        turns(&sent[1])[1..],
        [turn("assistant", "Summary."), turn("user", "And more")]
    );
}

#[tokio::test]
async fn a_missing_file_argument_is_an_error() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    let out = sb.run(&["-p", "@nope.md", "hi"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        format!("Error: File not found: {}/nope.md\n", sb.cwd.display())
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn piped_stdin_alone_is_print_mode_and_nothing_to_say_is_no_request() {
    let server = MockServer::start(vec![text("Got it.")]).await;
    let sb = Sandbox::new(server.url());
    // No -p: stdin is not a terminal, so pi runs its print mode.
    let out = sb
        .run_with(&["--no-session", "hello"], Some("piped\n"))
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Got it.\n");
    assert_eq!(turns(&bodies(&server)[0]), [turn("user", "pipedhello")]);
    // Neither stdin nor a message: nothing is sent, nothing printed.
    let out = sb.run(&["--no-session", "-p"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    assert_eq!(server.requests().len(), 1);
}

// ----- sessions ------------------------------------------------------------------------------

#[tokio::test]
async fn sessions_are_written_in_pis_layout() {
    let server = MockServer::start(vec![text("Hi there.")]).await;
    let sb = Sandbox::new(server.url());
    let out = sb.run(&["-p", "hello"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    let files = sb.sessions();
    assert_eq!(files.len(), 1, "{files:?}");
    let entries = read_jsonl(&files[0]);
    let header = &entries[0];
    let id = header["id"].as_str().unwrap();
    let timestamp = header["timestamp"].as_str().unwrap();
    // <agent>/sessions/--<cwd>--/<timestamp with - for : and .>_<id>.jsonl
    assert_eq!(
        files[0],
        sb.session_dir()
            .join(format!("{}_{id}.jsonl", timestamp.replace([':', '.'], "-")))
    );
    assert_eq!(
        header,
        &json!({"type": "session", "version": 3, "id": id, "timestamp": timestamp,
            "cwd": sb.cwd.to_str().unwrap()})
    );
    let kinds: Vec<&str> = entries[1..]
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "message",
            "message"
        ]
    );
    assert_eq!(entries[1]["provider"], PROVIDER);
    assert_eq!(entries[1]["modelId"], MODEL);
    assert_eq!(entries[2]["thinkingLevel"], "medium");
    assert_one_branch(&entries);
    assert_eq!(
        session_turns(&entries),
        [turn("user", "hello"), turn("assistant", "Hi there.")]
    );
    let reply = &entries[4]["message"];
    assert_eq!(reply["provider"], PROVIDER);
    assert_eq!(reply["model"], MODEL);
    assert_eq!(reply["stopReason"], "stop");
}

#[tokio::test]
async fn no_session_writes_no_file() {
    let server = MockServer::start(vec![text("Hi."), text("Hi again.")]).await;
    let sb = Sandbox::new(server.url());
    let out = sb.run(&["--no-session", "-p", "hello"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Hi.\n");
    let out = sb.run(&["--no-session", "--mode", "json", "hello"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(sb.jsonl_files(), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn continue_takes_up_the_latest_session() {
    let server = MockServer::start(vec![text("A1."), text("B1."), text("B2.")]).await;
    let sb = Sandbox::new(server.url());
    assert_eq!(sb.run(&["-p", "a"]).await.code, 0);
    assert_eq!(sb.run(&["-p", "b"]).await.code, 0);
    let before = sb.sessions();
    assert_eq!(before.len(), 2);
    let first = std::fs::read_to_string(&before[0]).unwrap();
    let out = sb.run(&["-c", "-p", "b again"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "B2.\n");
    // No new file; the latest one grew, the other did not change.
    assert_eq!(sb.sessions(), before);
    assert_eq!(std::fs::read_to_string(&before[0]).unwrap(), first);
    let entries = read_jsonl(&before[1]);
    assert_one_branch(&entries);
    assert_eq!(
        session_turns(&entries),
        [
            turn("user", "b"),
            turn("assistant", "B1."),
            turn("user", "b again"),
            turn("assistant", "B2."),
        ]
    );
    assert_eq!(
        turns(&bodies(&server)[2]),
        [
            turn("user", "b"),
            turn("assistant", "B1."),
            turn("user", "b again")
        ]
    );
}

#[tokio::test]
async fn session_takes_up_a_session_by_id_prefix() {
    let server = MockServer::start(vec![text("A1."), text("B1."), text("A2.")]).await;
    let sb = Sandbox::new(server.url());
    assert_eq!(sb.run(&["-p", "a"]).await.code, 0);
    assert_eq!(sb.run(&["-p", "b"]).await.code, 0);
    let files = sb.sessions();
    let ids: Vec<String> = files
        .iter()
        .map(|f| read_jsonl(f)[0]["id"].as_str().unwrap().to_owned())
        .collect();
    let prefix = unique_prefix(&ids[0], &ids[1]);
    let b_before = std::fs::read_to_string(&files[1]).unwrap();
    let out = sb.run(&["--session", prefix, "-p", "a again"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "A2.\n");
    assert_eq!(sb.sessions(), files);
    assert_eq!(std::fs::read_to_string(&files[1]).unwrap(), b_before);
    assert_eq!(
        session_turns(&read_jsonl(&files[0])),
        [
            turn("user", "a"),
            turn("assistant", "A1."),
            turn("user", "a again"),
            turn("assistant", "A2."),
        ]
    );
    // An id that matches nothing.
    let out = sb.run(&["--session", "zzzz", "-p", "x"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stderr, "Error: No session found matching 'zzzz'\n");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn fork_copies_a_session_into_a_new_one() {
    let server = MockServer::start(vec![text("A1."), text("F1.")]).await;
    let sb = Sandbox::new(server.url());
    assert_eq!(sb.run(&["-p", "a"]).await.code, 0);
    let original = sb.sessions()[0].clone();
    let before = std::fs::read_to_string(&original).unwrap();
    let id = read_jsonl(&original)[0]["id"].as_str().unwrap().to_owned();
    let out = sb.run(&["--fork", &id[..8], "-p", "forked"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "F1.\n");
    let files = sb.sessions();
    assert_eq!(files.len(), 2, "{files:?}");
    assert_eq!(std::fs::read_to_string(&original).unwrap(), before);
    let fork = files.iter().find(|f| **f != original).unwrap();
    let entries = read_jsonl(fork);
    assert_ne!(entries[0]["id"], id.as_str());
    assert_eq!(entries[0]["parentSession"], original.to_str().unwrap());
    assert_eq!(entries[0]["cwd"], sb.cwd.to_str().unwrap());
    // The original's entries, as they were, then the new ones.
    let old = read_jsonl(&original);
    assert_eq!(entries[1..old.len()], old[1..]);
    assert_one_branch(&entries);
    assert_eq!(
        session_turns(&entries),
        [
            turn("user", "a"),
            turn("assistant", "A1."),
            turn("user", "forked"),
            turn("assistant", "F1."),
        ]
    );
    // pi's rule: --fork does not combine with --session, --continue, --resume, --no-session.
    let out = sb.run(&["--fork", &id[..8], "-c", "-p", "x"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "Error: --fork cannot be combined with --continue\n"
    );
}

// ----- JSON mode ------------------------------------------------------------------------------

/// Each line of `stdout` as a JSON object (fails on anything else).
fn json_lines(stdout: &str) -> Vec<Value> {
    assert!(stdout.ends_with('\n'), "{stdout}");
    stdout
        .lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            assert!(v.is_object(), "{l}");
            v
        })
        .collect()
}

fn kinds(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l["type"].as_str().unwrap().to_owned())
        .collect()
}

/// The events of a run with one text reply (the user message's start and end, then the
/// reply's).
const ONE_TURN: [&str; 11] = [
    "agent_start",
    "turn_start",
    "message_start",
    "message_end",
    "message_start",
    "message_update",
    "message_update",
    "message_update",
    "message_end",
    "turn_end",
    "agent_end",
];

#[tokio::test]
async fn json_mode_prints_the_session_header_then_every_event() {
    let server = MockServer::start(vec![text("Hello!")]).await;
    let sb = Sandbox::new(server.url());
    let out = sb.run(&["--mode", "json", "hi"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, "");
    let lines = json_lines(&out.stdout);
    let file = read_jsonl(&sb.sessions()[0]);
    assert_eq!(lines[0], file[0], "the header is the session file's");
    assert_eq!(kinds(&lines[1..]), ONE_TURN);
    let updates: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message_update")
        .collect();
    let events: Vec<&str> = updates
        .iter()
        .map(|u| u["assistantMessageEvent"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["text_start", "text_delta", "text_end"]);
    // pi's shape: the partial message twice, in the event and beside it.
    for u in &updates {
        let keys: Vec<&String> = u.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["type", "assistantMessageEvent", "message"]);
        assert_eq!(u["assistantMessageEvent"]["partial"], u["message"]);
    }
    assert_eq!(updates[1]["assistantMessageEvent"]["delta"], "Hello!");
    assert_eq!(lines[3]["message"]["content"][0]["text"], "hi");
    let end = lines.last().unwrap();
    assert_eq!(end["messages"].as_array().unwrap().len(), 2);
    assert_eq!(end["messages"][1]["content"][0]["text"], "Hello!");
}

#[tokio::test]
async fn json_updates_delta_leaves_the_partial_message_out() {
    let server = MockServer::start(vec![text("Hello!")]).await;
    let sb = Sandbox::new(server.url());
    let out = sb
        .run(&["--mode", "json", "--json-updates", "delta", "hi"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    let lines = json_lines(&out.stdout);
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(kinds(&lines[1..]), ONE_TURN);
    let updates: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message_update")
        .collect();
    assert_eq!(
        updates,
        [
            &json!({"type": "message_update",
                "assistantMessageEvent": {"type": "text_start", "contentIndex": 0}}),
            &json!({"type": "message_update",
                "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": "Hello!"}}),
            &json!({"type": "message_update",
                "assistantMessageEvent": {"type": "text_end", "contentIndex": 0, "content": "Hello!"}}),
        ]
    );
    // The other events keep their messages.
    assert_eq!(lines[9]["type"], "message_end");
    assert_eq!(lines[9]["message"]["content"][0]["text"], "Hello!");
}

#[tokio::test]
async fn json_mode_has_no_extension_action_lines() {
    // input-transform rewrites `?quick …`: an `extension_action` event in this crate, which
    // pi's JSON lines do not have.
    let server = MockServer::start(vec![text("Rust is a language.")]).await;
    let sb = Sandbox::new(server.url());
    let out = sb
        .run(&[
            "-e",
            "input-transform",
            "--mode",
            "json",
            "?quick what is rust",
        ])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    let lines = json_lines(&out.stdout);
    assert_eq!(kinds(&lines[1..]), ONE_TURN);
    assert!(!out.stdout.contains("extension_action"));
    // The extension did act.
    assert_eq!(
        turns(&bodies(&server)[0]),
        [turn(
            "user",
            "Respond briefly in 1-2 sentences: what is rust"
        )]
    );
}

#[tokio::test]
async fn json_mode_reports_a_model_error_in_its_events_and_exits_0() {
    // As pi: only the text mode turns a failed reply into exit code 1.
    let server = MockServer::start(vec![Reply::status(
        500,
        &[("content-type", "application/json")],
        r#"{"type":"error","error":{"type":"api_error","message":"boom"}}"#,
    )])
    .await;
    let sb = Sandbox::new(server.url());
    sb.without_retries();
    let out = sb.run(&["--no-session", "--mode", "json", "hi"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, "");
    let lines = json_lines(&out.stdout);
    let end = lines.iter().rfind(|l| l["type"] == "message_end").unwrap();
    assert_eq!(end["message"]["stopReason"], "error");
    assert_eq!(end["message"]["errorMessage"], "500 api_error: boom");
    assert_eq!(lines.last().unwrap()["type"], "agent_end");
}

// ----- RPC mode -------------------------------------------------------------------------------

/// `pi-engine --mode rpc` driven line by line.
struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    stderr: tokio::task::JoinHandle<String>,
}

impl Rpc {
    fn start(sb: &Sandbox, args: &[&str]) -> Rpc {
        let mut all = vec!["--mode", "rpc"];
        all.extend_from_slice(args);
        let mut child = sb.command(&all).spawn().expect("start pi-engine");
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut err = child.stderr.take().unwrap();
        let stderr = tokio::spawn(async move {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s).await;
            s
        });
        Rpc {
            child,
            stdin,
            lines,
            stderr,
        }
    }

    async fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        tokio::time::timeout(RUN_LIMIT, write)
            .await
            .expect("stdin not read")
            .unwrap();
    }

    async fn send(&mut self, command: Value) {
        self.send_raw(&command.to_string()).await;
    }

    /// The next line, as JSON (bounded).
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(RUN_LIMIT, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no line within {RUN_LIMIT:?}"))
            .unwrap()
            .expect("stdout ended");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The lines up to and including the first of type `kind`.
    async fn until(&mut self, kind: &str) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let v = self.next().await;
            let done = v["type"] == kind;
            out.push(v);
            if done {
                return out;
            }
        }
    }

    /// Closes stdin and waits for the end: the exit code, the lines still written, stderr.
    async fn close(mut self) -> (i32, Vec<String>, String) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        let read = async {
            while let Some(l) = self.lines.next_line().await.unwrap() {
                rest.push(l);
            }
            self.child.wait().await.unwrap()
        };
        let status = tokio::time::timeout(RUN_LIMIT, read)
            .await
            .unwrap_or_else(|_| panic!("pi-engine --mode rpc did not end within {RUN_LIMIT:?}"));
        let stderr = tokio::time::timeout(RUN_LIMIT, self.stderr)
            .await
            .unwrap()
            .unwrap();
        (status.code().unwrap(), rest, stderr)
    }
}

#[tokio::test]
async fn rpc_mode_answers_a_prompt_state_and_bad_lines_and_ends_with_stdin() {
    let server = MockServer::start(vec![text("Hello!")]).await;
    let sb = Sandbox::new(server.url());
    let mut rpc = Rpc::start(&sb, &[]);
    rpc.send(json!({"id": "p1", "type": "prompt", "message": "hi"}))
        .await;
    let lines = rpc.until("agent_end").await;
    // The response comes when the prompt is accepted, right before the run's events.
    assert_eq!(
        lines[0],
        json!({"id": "p1", "type": "response", "command": "prompt", "success": true})
    );
    assert_eq!(kinds(&lines[1..]), ONE_TURN);
    assert_eq!(lines[9]["message"]["content"][0]["text"], "Hello!");

    rpc.send(json!({"id": "s1", "type": "get_state"})).await;
    let state = rpc.next().await;
    let file = sb.sessions()[0].clone();
    let header = &read_jsonl(&file)[0];
    assert_eq!(state["id"], "s1");
    assert_eq!(state["type"], "response");
    assert_eq!(state["command"], "get_state");
    assert_eq!(state["success"], true);
    let data = state["data"].clone();
    assert_eq!(data["model"]["provider"], PROVIDER);
    assert_eq!(data["model"]["id"], MODEL);
    assert_eq!(data["model"]["baseUrl"], server.url());
    let mut rest = data.as_object().unwrap().clone();
    rest.remove("model");
    assert_eq!(
        Value::Object(rest),
        json!({
            "thinkingLevel": "medium",
            "isStreaming": false,
            "isCompacting": false,
            "steeringMode": "one-at-a-time",
            "followUpMode": "one-at-a-time",
            "sessionFile": file.to_str().unwrap(),
            "sessionId": header["id"],
            "autoCompactionEnabled": true,
            "messageCount": 2,
            "pendingMessageCount": 0,
        })
    );

    rpc.send_raw("not json").await;
    assert_eq!(
        rpc.next().await,
        json!({"type": "response", "command": "parse", "success": false,
            "error": "Failed to parse command: expected ident at line 1 column 2"})
    );
    // An unknown command: answered without its id, as pi does.
    rpc.send(json!({"id": "u1", "type": "bogus"})).await;
    assert_eq!(
        rpc.next().await,
        json!({"type": "response", "command": "bogus", "success": false,
            "error": "Unknown command: bogus"})
    );

    let (code, rest, stderr) = rpc.close().await;
    assert_eq!(code, 0);
    assert_eq!(rest, Vec::<String>::new());
    assert_eq!(stderr, "");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn rpc_settings_changes_are_saved_as_pi_saves_them() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    write(
        &sb.settings(),
        "{\n  \"theme\": \"dark\",\n  \"retry\": {\"enabled\": false, \"maxRetries\": 7},\n  \"custom\": [1, 2]\n}\n",
    );
    let mut rpc = Rpc::start(&sb, &["--no-session"]);
    rpc.send(json!({"id": "t", "type": "set_thinking_level", "level": "high"}))
        .await;
    assert_eq!(
        rpc.until("response").await,
        [
            json!({"type": "thinking_level_changed", "level": "high"}),
            json!({"id": "t", "type": "response", "command": "set_thinking_level", "success": true}),
        ]
    );
    rpc.send(json!({"id": "m", "type": "set_model", "provider": PROVIDER, "modelId": PLAIN}))
        .await;
    let lines = rpc.until("response").await;
    // The plain model does not reason: the level drops to off (and "off" is not saved).
    assert_eq!(
        lines[0],
        json!({"type": "thinking_level_changed", "level": "off"})
    );
    assert_eq!(lines[1]["success"], true);
    assert_eq!(lines[1]["data"]["id"], PLAIN);
    let (code, _, stderr) = rpc.close().await;
    assert_eq!(code, 0, "{stderr}");
    // pi's write: the file read again, the changed keys replaced or appended, the others
    // kept in place, JSON.stringify(…, null, 2). (pi 0.73.1 writes exactly this.)
    assert_eq!(
        std::fs::read_to_string(sb.settings()).unwrap(),
        r#"{
  "theme": "dark",
  "retry": {
    "enabled": false,
    "maxRetries": 7
  },
  "custom": [
    1,
    2
  ],
  "defaultThinkingLevel": "high",
  "defaultProvider": "mock",
  "defaultModel": "mock-plain"
}"#
    );
    // The next start uses them.
    let server = MockServer::start(vec![text("Plain.")]).await;
    let sb2 = Sandbox::new(server.url());
    std::fs::copy(sb.settings(), sb2.settings()).unwrap();
    let out = sb2.run(&["--no-session", "-p", "hi"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(bodies(&server)[0]["model"], PLAIN);
}

// ----- signals --------------------------------------------------------------------------------

/// Sends `SIGTERM` to `pid`.
#[cfg(unix)]
fn terminate(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits (bounded) until `done`.
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < RUN_LIMIT,
            "{what}: not within {RUN_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A process extension that writes the reason of `session_shutdown` to `shutdown.txt`, with
/// a command `/quit-now` that asks the program to end (`ctx.shutdown()`).
fn shutdown_recorder(sb: &Sandbox) {
    write_python_extension(
        &sb.cwd.join("record.py"),
        r#"
@ext.on("session_shutdown")
def shutdown(event, ctx):
    with open("shutdown.txt", "w") as f:
        f.write(event.get("reason", "?"))

@ext.command("quit-now", "Ends the program")
def quit_now(args, ctx):
    ctx.call("shutdown")
"#,
    );
}

/// Writes an executable process extension at `path`: `body` between the setup of
/// `examples/extensions/pi_extension.py`'s `ext = Extension()` (`json` and `sys` imported)
/// and `ext.run()`.
fn write_python_extension(path: &Path, body: &str) {
    let helper = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/extensions");
    write(
        path,
        &format!(
            "#!/usr/bin/env python3\nimport json, sys\nsys.path.insert(0, {helper:?})\n\
             sys.dont_write_bytecode = True\nfrom pi_extension import Extension\n\n\
             ext = Extension()\n{body}\next.run()\n",
            helper = helper.display().to_string()
        ),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[cfg(unix)]
#[tokio::test]
async fn sigterm_ends_print_mode_as_pi_with_exit_code_143() {
    // The reply never comes; SIGTERM stops the run, the session is disposed.
    let server = MockServer::start(vec![Reply::head_then_hang()]).await;
    let sb = Sandbox::new(server.url());
    shutdown_recorder(&sb);
    let mut child = sb
        .command(&["--no-session", "-e", "./record.py", "-p", "hi"])
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    wait_until("the request", || server.requests().len() == 1).await;
    terminate(child.id().unwrap());
    let out = finish(child, None, RUN_LIMIT, "pi-engine -p").await;
    assert_eq!(out.code, 143, "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("shutdown.txt")).unwrap(),
        "quit"
    );
    wait_until("the connection closed", || server.client_closed() == 1).await;
}

#[cfg(unix)]
#[tokio::test]
async fn sigterm_ends_rpc_mode_as_pi_with_exit_code_143() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    shutdown_recorder(&sb);
    let mut rpc = Rpc::start(&sb, &["--no-session", "-e", "./record.py"]);
    rpc.send(json!({"id": "s", "type": "get_state"})).await;
    assert_eq!(rpc.next().await["command"], "get_state");
    terminate(rpc.child.id().unwrap());
    // stdin stays open: the signal alone ends the mode.
    let status = tokio::time::timeout(RUN_LIMIT, rpc.child.wait())
        .await
        .expect("pi-engine --mode rpc did not end on SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(143));
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("shutdown.txt")).unwrap(),
        "quit"
    );
}

#[tokio::test]
async fn an_extensions_shutdown_ends_rpc_mode_while_stdin_is_open() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    shutdown_recorder(&sb);
    let mut rpc = Rpc::start(&sb, &["--no-session", "-e", "./record.py"]);
    rpc.send(json!({"id": "q", "type": "prompt", "message": "/quit-now"}))
        .await;
    assert_eq!(
        rpc.next().await,
        json!({"id": "q", "type": "response", "command": "prompt", "success": true})
    );
    // As pi: the program ends though the client has not closed stdin.
    let status = tokio::time::timeout(RUN_LIMIT, rpc.child.wait())
        .await
        .expect("pi-engine --mode rpc did not end on the extension's shutdown")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("shutdown.txt")).unwrap(),
        "quit"
    );
    assert!(server.requests().is_empty());
}

// ----- the command line ---------------------------------------------------------------------

/// examples/extensions/approval_gate.py: a process extension with the flag `--no-gate`.
fn approval_gate() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/extensions/approval_gate.py")
        .display()
        .to_string()
}

#[tokio::test]
async fn help_lists_the_flags_of_the_loaded_extensions() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    let out = sb.run(&["--help"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, "");
    assert!(
        out.stdout
            .contains("Usage: pi-engine [OPTIONS] [@FILES|MESSAGES]...\n"),
        "{}",
        out.stdout
    );
    for flag in [
        "  -p, --print ",
        "      --mode <MODE> ",
        "  -e, --extension <NAME|PATH> ",
        "      --list-models [<SEARCH>] ",
        "      --json-updates <full|delta> ",
    ] {
        assert!(out.stdout.contains(flag), "{flag}");
    }
    assert!(!out.stdout.contains("Extension flags"));
    let gate = approval_gate();
    let out = sb.run(&["-e", &gate, "--help"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .ends_with("\nExtension flags:\n      --no-gate  Start with the approval gate off\n"),
        "{}",
        out.stdout
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn version_prints_the_version() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    for flag in ["--version", "-v"] {
        let out = sb.run(&[flag]).await;
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(out.stdout, format!("{}\n", env!("CARGO_PKG_VERSION")));
        assert_eq!(out.stderr, "");
    }
}

#[tokio::test]
async fn usage_errors_exit_with_code_2_and_pis_own_with_1() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    let out = sb.run(&["--bogus", "-p", "hi"]).await;
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a value, use '-- --bogus'\n\nUsage: pi-engine [OPTIONS] [@FILES|MESSAGES]...\n"
    );
    // An invalid --mode too.
    let out = sb.run(&["--mode", "xml", "hi"]).await;
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .starts_with("error: invalid value 'xml' for '--mode <MODE>'\n"),
        "{}",
        out.stderr
    );
    // pi's own usage error: @file arguments in RPC mode.
    write(&sb.cwd.join("notes.md"), "x");
    let out = sb.run(&["--mode", "rpc", "@notes.md"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "Error: @file arguments are not supported in RPC mode\n"
    );
    assert!(server.requests().is_empty());
    assert_eq!(sb.jsonl_files(), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn an_extension_flag_is_accepted_after_its_extension_is_loaded() {
    let server = MockServer::start(vec![text("Gated."), text("Flags.")]).await;
    let sb = Sandbox::new(server.url());
    // Without the extension, the flag is unknown.
    let out = sb.run(&["--no-gate", "-p", "hi"]).await;
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .starts_with("error: unexpected argument '--no-gate' found\n"),
        "{}",
        out.stderr
    );
    // With it (before or after the flag), it is the extension's.
    let gate = approval_gate();
    let out = sb
        .run(&["--no-session", "--no-gate", "-e", &gate, "-p", "hi"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Gated.\n");

    // The values reach the extension: one that writes its flags into the system prompt.
    write_python_extension(
        &sb.cwd.join("flags.py"),
        r#"ext.flag("team", type="string", description="The team to answer for")
ext.flag("loud", type="boolean", default=False, description="Shout")

@ext.on("before_agent_start")
def start(event, ctx):
    flags = {"team": ctx.get_flag("team"), "loud": ctx.get_flag("loud")}
    return {"systemPrompt": "flags: " + json.dumps(flags, sort_keys=True)}
"#,
    );
    let out = sb.run(&["-e", "./flags.py", "--help"]).await;
    assert!(
        out.stdout.ends_with(
            "\nExtension flags:\n      --team <VALUE>  The team to answer for\n      --loud          Shout\n"
        ),
        "{}",
        out.stdout
    );
    let out = sb
        .run(&[
            "--no-session",
            "-e",
            "./flags.py",
            "--team",
            "core",
            "--loud",
            "-p",
            "hi",
        ])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Flags.\n");
    assert_eq!(
        system(&bodies(&server)[1]),
        r#"flags: {"loud": true, "team": "core"}"#
    );
}

#[tokio::test]
async fn list_models_prints_pis_table() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    let out = sb.run(&["--list-models"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "provider  model        context  max-out  thinking  images\n\
         mock      mock-claude  200K     64K      yes       yes   \n\
         mock      mock-plain   128K     16.4K    no        no    \n"
    );
    assert_eq!(out.stderr, "");
    let out = sb.run(&["--list-models", "plain"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "provider  model       context  max-out  thinking  images\n\
         mock      mock-plain  128K     16.4K    no        no    \n"
    );
    assert!(server.requests().is_empty());
    assert_eq!(sb.jsonl_files(), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn model_with_a_thinking_suffix_sets_the_level() {
    let server = MockServer::start(vec![text("A."), text("B."), text("C.")]).await;
    let sb = Sandbox::new(server.url());
    let out = sb
        .run(&["--model", "mock/mock-claude:high", "-p", "think hard"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, "");
    let entries = read_jsonl(&sb.sessions()[0]);
    assert_eq!(entries[2]["type"], "thinking_level_change");
    assert_eq!(entries[2]["thinkingLevel"], "high");
    // --thinking, and a model that does not reason.
    let out = sb
        .run(&["--no-session", "--thinking", "low", "-p", "a little"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    let out = sb
        .run(&["--no-session", "--model", "mock/mock-plain", "-p", "plain"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    let sent = bodies(&server);
    // high: 16384 tokens; low: 2048 (max_tokens grows by the budget, as pi's).
    assert_eq!(
        sent[0]["thinking"],
        json!({"type": "enabled", "budget_tokens": 16384, "display": "summarized"})
    );
    assert_eq!(sent[0]["max_tokens"], 48384);
    assert_eq!(
        sent[1]["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048, "display": "summarized"})
    );
    assert_eq!(sent[2]["model"], PLAIN);
    assert_eq!(sent[2].get("thinking"), None);
    // pi does not save a level or model given on the command line.
    assert!(!sb.settings().exists());
}

#[tokio::test]
async fn an_unknown_model_is_pis_error_with_exit_code_1() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    for model in ["nope/x", "nonexistent"] {
        let out = sb.run(&["--model", model, "-p", "hi"]).await;
        assert_eq!(out.code, 1, "{out:?}");
        assert_eq!(out.stdout, "");
        assert_eq!(
            out.stderr,
            format!(
                "Error: Model \"{model}\" not found. Use --list-models to see available models.\n"
            )
        );
    }
    assert!(server.requests().is_empty());
    assert_eq!(sb.jsonl_files(), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn an_invalid_thinking_level_is_a_warning() {
    let server = MockServer::start(vec![text("Fine.")]).await;
    let sb = Sandbox::new(server.url());
    let out = sb
        .run(&["--no-session", "--thinking", "bogus", "-p", "hi"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Fine.\n");
    assert_eq!(out.stderr, BAD_THINKING);
    // The default level (medium).
    assert_eq!(bodies(&server)[0]["thinking"]["budget_tokens"], 8192);
}

#[tokio::test]
async fn tools_chooses_the_tools_and_no_tools_removes_them() {
    let server = MockServer::start(vec![text("A."), text("B."), text("C.")]).await;
    let sb = Sandbox::new(server.url());
    for args in [
        &["-p", "default"][..],
        &["--tools", "read,grep", "-p", "some"],
        &["--no-tools", "-p", "none"],
    ] {
        let mut all = vec!["--no-session"];
        all.extend_from_slice(args);
        let out = sb.run(&all).await;
        assert_eq!(out.code, 0, "{out:?}");
    }
    let sent = bodies(&server);
    assert_eq!(tool_names(&sent[0]), ["read", "bash", "edit", "write"]);
    assert_eq!(tool_names(&sent[1]), ["read", "grep"]);
    assert_eq!(sent[2].get("tools"), None);
    // The system prompt lists the same tools.
    assert!(system(&sent[1]).contains(
        "Available tools:\n- read: Read file contents\n- grep: Search file contents for patterns (respects .gitignore)\n\n"
    ));
    assert!(system(&sent[2]).contains("Available tools:\n(none)\n\n"));
}

/// Splits a system prompt at its date line: the text before `Current date: `, and after
/// the date.
fn split_date(prompt: &str) -> (&str, &str) {
    let (before, rest) = prompt.split_once("Current date: ").expect("a date line");
    let (date, after) = rest.split_at(10);
    assert!(
        date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-',
        "{date}"
    );
    (before, after)
}

#[tokio::test]
async fn system_prompt_options_and_context_files_reach_the_request() {
    let server = MockServer::start(vec![text("A."), text("B.")]).await;
    let sb = Sandbox::new(server.url());
    write(&sb.agent.join("AGENTS.md"), "Global rule.\n");
    write(&sb.cwd.join("AGENTS.md"), "Use tabs.\n");
    let out = sb
        .run(&[
            "--no-session",
            "--system-prompt",
            "You are terse.",
            "--append-system-prompt",
            "Extra rule.",
            "-p",
            "hi",
        ])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    let out = sb.run(&["--no-session", "-p", "hi"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    let sent = bodies(&server);
    let (agent, cwd) = (sb.agent.display(), sb.cwd.display());
    let context = format!(
        "# Project Context\n\nProject-specific instructions and guidelines:\n\n## {agent}/AGENTS.md\n\nGlobal rule.\n\n\n## {cwd}/AGENTS.md\n\nUse tabs.\n\n\n\n"
    );
    let custom = system(&sent[0]);
    let (before, after) = split_date(&custom);
    assert_eq!(
        before,
        format!("You are terse.\n\nExtra rule.\n\n{context}")
    );
    assert_eq!(after, format!("\nCurrent working directory: {cwd}"));
    // pi's own prompt, with the context files after its documentation paragraph.
    let default = system(&sent[1]);
    assert!(
        default.starts_with(
            "You are an expert coding assistant operating inside pi, a coding agent harness."
        ),
        "{default}"
    );
    let (before, after) = split_date(&default);
    assert!(before.ends_with(&format!("\n\n{context}")), "{before}");
    assert_eq!(after, format!("\nCurrent working directory: {cwd}"));
    // --no-context-files leaves them out.
    let server = MockServer::start(vec![text("C.")]).await;
    let sb2 = Sandbox::new(server.url());
    write(&sb2.cwd.join("AGENTS.md"), "Use tabs.\n");
    let out = sb2.run(&["--no-session", "-nc", "-p", "hi"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!system(&bodies(&server)[0]).contains("Use tabs."));
}

#[tokio::test]
async fn a_prompt_template_is_expanded() {
    let server = MockServer::start(vec![text("Reviewed."), text("Plain.")]).await;
    let sb = Sandbox::new(server.url());
    write(
        &sb.cwd.join(".pi/prompts/review.md"),
        "---\ndescription: Review a file\n---\nReview $1 carefully: $@\n",
    );
    let out = sb
        .run(&["--no-session", "-p", "/review main.rs fast"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    // --no-prompt-templates: the text as typed.
    let out = sb
        .run(&["--no-session", "-np", "-p", "/review main.rs fast"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    let sent = bodies(&server);
    assert_eq!(
        turns(&sent[0]),
        [turn("user", "Review main.rs carefully: main.rs fast")]
    );
    assert_eq!(turns(&sent[1]), [turn("user", "/review main.rs fast")]);
}

#[tokio::test]
async fn a_typescript_extension_is_refused_with_a_clear_message() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    write(&sb.cwd.join("x.ts"), "export default function () {}\n");
    let out = sb.run(&["-e", "./x.ts", "-p", "hi"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        format!(
            "Error: Failed to load extension \"./x.ts\": {}/x.ts is a pi TypeScript/JavaScript extension: pi-engine does not load pi's TypeScript extensions. Run a program that speaks the process extension protocol instead (docs/extension-protocol.md, in any language; examples/extensions/pi_extension.py is a stdlib-only Python helper), or write the extension in Rust with Extension::new\n",
            sb.cwd.display()
        )
    );
    // A name that is neither compiled in nor a file.
    let out = sb.run(&["-e", "no-such-extension", "-p", "hi"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.starts_with(
            "Error: Failed to load extension \"no-such-extension\": no compiled-in extension has this name (compiled in: permission-gate, "
        ),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_corrupt_settings_file_is_an_error_naming_it_and_stays_as_it_was() {
    let server = MockServer::start(vec![]).await;
    let sb = Sandbox::new(server.url());
    let corrupt = "{\n  \"theme\": \"dark\",\n  oops\n}\n";
    write(&sb.settings(), corrupt);
    for args in [
        &["-p", "hi"][..],
        &["--mode", "rpc"],
        &["--mode", "json", "hi"],
    ] {
        let out = sb.run(args).await;
        assert_eq!(out.code, 1, "{args:?}: {out:?}");
        assert_eq!(out.stdout, "");
        assert_eq!(
            out.stderr,
            format!(
                "Error: invalid settings file {}: key must be a string at line 3 column 3\n",
                sb.settings().display()
            )
        );
    }
    assert_eq!(std::fs::read_to_string(sb.settings()).unwrap(), corrupt);
    // The project's file too.
    std::fs::remove_file(sb.settings()).unwrap();
    let project = sb.cwd.join(".pi/settings.json");
    write(&project, "[1, 2]");
    let out = sb.run(&["-p", "hi"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.starts_with(&format!(
            "Error: invalid settings file {}",
            project.display()
        )),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read_to_string(&project).unwrap(), "[1, 2]");
    assert!(server.requests().is_empty());
    assert_eq!(sb.jsonl_files(), Vec::<PathBuf>::new());
}

// ----- interop with pi itself -----------------------------------------------------------------

#[tokio::test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
async fn pi_continues_a_session_of_pi_engine_and_back() {
    let server = MockServer::start(vec![
        text("From Rust."),
        text("From pi."),
        text("Rust again."),
    ])
    .await;
    let sb = Sandbox::new(server.url());
    let out = sb.run(&["-p", "first"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    let file = sb.sessions()[0].clone();

    let out = sb.run_pi(&["-c", "-p", "second"]).await;
    assert_eq!(out.code, 0, "pi: {out:?}");
    assert_eq!(out.stdout, "From pi.\n");
    assert_eq!(
        sb.sessions(),
        std::slice::from_ref(&file),
        "pi wrote into the same file"
    );

    let out = sb.run(&["-c", "-p", "third"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "Rust again.\n");
    assert_eq!(sb.sessions(), std::slice::from_ref(&file));

    let sent = bodies(&server);
    assert_eq!(sent.len(), 3);
    // pi's request has pi-engine's messages; pi-engine's next one has pi's.
    assert_eq!(
        turns(&sent[1]),
        [
            turn("user", "first"),
            turn("assistant", "From Rust."),
            turn("user", "second"),
        ]
    );
    assert_eq!(
        turns(&sent[2]),
        [
            turn("user", "first"),
            turn("assistant", "From Rust."),
            turn("user", "second"),
            turn("assistant", "From pi."),
            turn("user", "third"),
        ]
    );
    assert_eq!(sent[1]["model"], MODEL);
    let entries = read_jsonl(&file);
    assert_one_branch(&entries);
    assert_eq!(
        session_turns(&entries),
        [
            turn("user", "first"),
            turn("assistant", "From Rust."),
            turn("user", "second"),
            turn("assistant", "From pi."),
            turn("user", "third"),
            turn("assistant", "Rust again."),
        ]
    );
}

#[tokio::test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
async fn pi_engine_continues_a_session_of_pi() {
    let server = MockServer::start(vec![
        text("From pi."),
        text("From Rust."),
        text("pi again."),
    ])
    .await;
    let sb = Sandbox::new(server.url());
    let out = sb.run_pi(&["-p", "first"]).await;
    assert_eq!(out.code, 0, "pi: {out:?}");
    assert_eq!(out.stdout, "From pi.\n");
    let file = sb.sessions()[0].clone();

    let out = sb.run(&["-c", "-p", "second"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "From Rust.\n");
    assert_eq!(sb.sessions(), std::slice::from_ref(&file));

    let out = sb.run_pi(&["-c", "-p", "third"]).await;
    assert_eq!(out.code, 0, "pi: {out:?}");
    assert_eq!(out.stdout, "pi again.\n");
    assert_eq!(sb.sessions(), std::slice::from_ref(&file));

    let sent = bodies(&server);
    assert_eq!(
        turns(&sent[1]),
        [
            turn("user", "first"),
            turn("assistant", "From pi."),
            turn("user", "second"),
        ]
    );
    assert_eq!(
        turns(&sent[2]),
        [
            turn("user", "first"),
            turn("assistant", "From pi."),
            turn("user", "second"),
            turn("assistant", "From Rust."),
            turn("user", "third"),
        ]
    );
    let entries = read_jsonl(&file);
    assert_one_branch(&entries);
    assert_eq!(
        session_turns(&entries),
        [
            turn("user", "first"),
            turn("assistant", "From pi."),
            turn("user", "second"),
            turn("assistant", "From Rust."),
            turn("user", "third"),
            turn("assistant", "pi again."),
        ]
    );
}

/// `mcpServers` in the project's `.pi/settings.json` (feature `mcp`): the servers start with
/// the session and their tools reach the model; a server that cannot start is a warning.
#[cfg(feature = "mcp")]
#[tokio::test]
#[ignore = "needs node and the MCP servers from npm (scripts/install-mcp-servers.sh)"]
async fn mcp_servers_in_settings_become_tools() {
    use support::scripted::{FINAL, anthropic_reply};
    let everything = mcp_npm::server("server-everything");
    let call = ("everything__echo", json!({"message": "from settings"}));
    let server = MockServer::start(vec![
        anthropic_reply(1, Some(&call)),
        anthropic_reply(2, None),
    ])
    .await;
    let sb = Sandbox::new(server.url());
    let settings = json!({"mcpServers": {
        "everything": {"command": "node", "args": [everything, "stdio"]},
        "broken": {"command": "/nonexistent/mcp-server"},
    }});
    write(&sb.cwd.join(".pi/settings.json"), &settings.to_string());
    let out = sb.run(&["--no-session", "-p", "echo it"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, format!("{}\n", FINAL.concat()));
    assert!(
        out.stderr.contains("Warning: MCP server \"broken\""),
        "{}",
        out.stderr
    );
    let sent = bodies(&server);
    assert_eq!(sent.len(), 2);
    let tools: Vec<&str> = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"everything__echo"), "{tools:?}");
    assert!(sent[1].to_string().contains("Echo: from settings"));
}
