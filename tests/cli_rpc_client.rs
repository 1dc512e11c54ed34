//! pi's own `RpcClient` (pi-coding-agent 0.73.1) drives `pi-engine --mode rpc` as it drives
//! `pi --mode rpc`: the same 31 steps (`tests/support/rpc_client_diff.mjs`) against the real
//! pi (`node dist/cli.js`) and against the `pi-engine` binary (through a one-line node shim as
//! `cliPath`), each with its own agent directory, working directory and scripted Anthropic
//! server on 127.0.0.1, and the two transcripts compared after normalizing only what
//! legitimately differs: ids, timestamps, paths and the servers' addresses (the driver and
//! [`normalize`] here), and pi's bugs listed in `tests/conformance/deviations.json` as
//! `rpc/…` (each checked to be still what each side does). The requests each server received
//! for the prompt, the settings each side saved and the session file each wrote are compared
//! too.
//!
//! It needs node and pi's npm packages (`scripts/install-pi-npm.sh`), so a plain `cargo test`
//! lists it as ignored; `.ci/run` runs it. Nothing outside the repository is needed: the
//! scripted model is the shared `mock_llm_server.py`'s scripted mode, ported to
//! [`support::MockServer`] replies.
#![cfg(feature = "cli")]

mod support;

#[path = "support/pi_npm.rs"]
mod pi_npm;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::scripted::{FINAL, anthropic_reply};
use support::{MockServer, Recorded, Reply};

/// How long one run of the driver may take (it takes a few seconds); then its process
/// group is killed and the test fails.
const RUN_LIMIT: Duration = Duration::from_secs(150);

/// The prompt's tool calls, as `MOCK_SCRIPT` gives them to the shared mock server.
fn script() -> Vec<(&'static str, Value)> {
    vec![
        (
            "write",
            json!({"path": "notes.txt", "content": "line one\nline two\n"}),
        ),
        (
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "line two", "newText": "line 2"}]}),
        ),
        ("read", json!({"path": "notes.txt"})),
    ]
}

/// The replies, in order: the prompt's tool loop and final answer, then final answers (the
/// last step's prompt, and spares).
fn replies() -> Vec<Reply> {
    let script = script();
    let mut out: Vec<Reply> = script
        .iter()
        .enumerate()
        .map(|(i, step)| anthropic_reply(i + 1, Some(step)))
        .collect();
    for n in script.len() + 1..script.len() + 5 {
        out.push(anthropic_reply(n, None));
    }
    out
}

/// Which `--mode rpc` the driver starts.
enum Target<'a> {
    /// pi itself: `node dist/cli.js`.
    Pi,
    /// This binary, through the driver's shim.
    Engine(&'a Path),
}

/// One run of the driver, with what it left behind.
struct Run {
    transcript: Vec<Value>,
    requests: Vec<Recorded>,
    /// The temporary home: `agent/`, `cwd/`, `sessions/`, `home/`.
    root: PathBuf,
    _dir: tempfile::TempDir,
}

async fn run(target: Target<'_>, modules: &Path) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in ["agent", "cwd", "sessions", "home"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let server = MockServer::start(replies()).await;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let models = std::fs::read_to_string(manifest.join("tests/fixtures/pi/models.json")).unwrap();
    std::fs::write(
        root.join("agent/models.json"),
        models.replace("http://127.0.0.1:18080", server.url()),
    )
    .unwrap();

    let target_arg = match target {
        Target::Pi => "pi".to_owned(),
        Target::Engine(bin) => bin.to_str().unwrap().to_owned(),
    };
    let mut command = tokio::process::Command::new("node");
    command
        .arg(manifest.join("tests/support/rpc_client_diff.mjs"))
        .arg(&target_arg)
        .arg(root.join("cwd"))
        .args(["--provider", "mock-anthropic", "--model", "mock-claude"])
        .arg("--session-dir")
        .arg(root.join("sessions"))
        .current_dir(root.join("cwd"))
        .env("PI_NPM_MODULES", modules)
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("HOME", root.join("home"))
        // pi's startup network checks (the version check) are off; pi-engine makes none.
        .env("PI_OFFLINE", "1")
        .env_remove("PI_PACKAGE_DIR")
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: node, the agent it starts and the shim's child are all
        // killed if the run overstays.
        .process_group(0)
        .kill_on_drop(true);
    let child = command.spawn().expect("node runs");
    let pgid = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(i32::try_from(id).unwrap()));
    let kill_group = || {
        if let Some(pgid) = pgid {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    };
    let output = tokio::time::timeout(RUN_LIMIT, child.wait_with_output()).await;
    // Whatever is left of the group (nothing, normally) goes.
    kill_group();
    let output = match output {
        Ok(out) => out.unwrap(),
        Err(_) => panic!("the driver against {target_arg} did not finish in {RUN_LIMIT:?}"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the driver against {target_arg} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    // The server's address differs between the runs.
    let stdout = stdout.replace(server.url(), "<server>");
    let transcript: Vec<Value> = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not a transcript ({e}):\n{stdout}\n{stderr}"));
    Run {
        transcript,
        requests: server.requests(),
        root,
        _dir: dir,
    }
}

/// Each step's entry by name.
fn step<'a>(transcript: &'a [Value], name: &str) -> &'a Value {
    transcript
        .iter()
        .find(|s| s["step"] == name)
        .unwrap_or_else(|| panic!("no step {name}"))
}

fn step_mut<'a>(transcript: &'a mut [Value], name: &str) -> &'a mut Value {
    transcript
        .iter_mut()
        .find(|s| s["step"] == name)
        .unwrap_or_else(|| panic!("no step {name}"))
}

/// pi's documented differences (`tests/conformance/deviations.json`), each checked to be
/// what pi and pi-engine still do, then made equal.
fn normalize(pi: &mut [Value], ours: &mut [Value]) {
    // rpc/clone-before-first-reply: the fork to the first message has no reply yet; pi has
    // not written its file, and its clone reads the file.
    let p = step_mut(pi, "clone");
    assert_eq!(
        *p,
        json!({"step": "clone", "ok": false, "error": "Entry <id> not found"}),
        "pi's clone of an unwritten session"
    );
    *p = json!({"step": "clone", "deviation": "rpc/clone-before-first-reply"});
    let o = step_mut(ours, "clone");
    assert_eq!(
        *o,
        json!({"step": "clone", "ok": true, "value": {"cancelled": false}}),
        "pi-engine's clone of a session without a reply"
    );
    *o = json!({"step": "clone", "deviation": "rpc/clone-before-first-reply"});
}

/// The run did what the script makes it do (so that two runs failing alike do not pass).
fn check_pi_ran_the_script(pi: &[Value]) {
    let prompt = step(pi, "prompt");
    assert_eq!(prompt["ok"], true, "{prompt}");
    let ends = prompt["value"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| *e == "tool_execution_end")
        .count();
    assert_eq!(ends, 3, "{prompt}");
    assert_eq!(
        step(pi, "get_last_assistant_text")["value"],
        FINAL.concat(),
        "{pi:?}"
    );
    assert_eq!(step(pi, "bash")["value"]["output"], "from-bash\n");
    assert_eq!(step(pi, "raw lines")["value"].as_array().unwrap().len(), 6);
    assert_eq!(pi.len(), 31);
}

/// A request's body as pi's and ours should have it alike: the working directory, the
/// documentation paths of pi's system prompt (pi's package, this repository) and the date
/// made placeholders.
fn request_body(r: &Recorded, cwd: &Path) -> Value {
    let docs = regex::Regex::new(r"(?m)^(- (?:Main documentation|Additional docs|Examples): )\S+")
        .unwrap();
    let date = regex::Regex::new(r"Current date: \d{4}-\d{2}-\d{2}").unwrap();
    let cwd = cwd.to_str().unwrap();
    let mut body: Value = serde_json::from_slice(&r.body).unwrap();
    map_strings(&mut body, &|s| {
        let s = s.replace(cwd, "<cwd>");
        let s = docs.replace_all(&s, "${1}<docs>");
        date.replace_all(&s, "Current date: <date>").into_owned()
    });
    body
}

fn map_strings(v: &mut Value, f: &dyn Fn(&str) -> String) {
    match v {
        Value::String(s) => *s = f(s),
        Value::Array(a) => a.iter_mut().for_each(|v| map_strings(v, f)),
        Value::Object(o) => o.values_mut().for_each(|v| map_strings(v, f)),
        _ => {}
    }
}

/// Where two JSON values differ: each differing leaf's path and both values.
fn json_diff(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                if x.contains_key(k) != y.contains_key(k) {
                    out.push(format!(
                        "{path}/{k}: pi {:?}, pi-engine {:?}",
                        x.get(k),
                        y.get(k)
                    ));
                } else {
                    json_diff(va, vb, &format!("{path}/{k}"), out);
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                json_diff(va, vb, &format!("{path}/{i}"), out);
            }
        }
        _ if a != b => out.push(format!("{path}:\n    pi:        {a}\n    pi-engine: {b}")),
        _ => {}
    }
}

/// Headers that are the HTTP clients' own (Anthropic's SDK on node, reqwest).
fn client_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("x-stainless-")
        || [
            "user-agent",
            "accept-encoding",
            "accept-language",
            "sec-fetch-mode",
            "connection",
            "content-length",
            "host",
        ]
        .contains(&name.as_str())
}

fn headers(r: &Recorded) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(k, _)| !client_header(k))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .collect();
    h.sort();
    h
}

/// The entries of the first session file (by name: by time), each as its type (and a
/// message's role).
fn first_session(root: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let text = std::fs::read_to_string(files.first().expect("a session file")).unwrap();
    text.lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            match e["message"]["role"].as_str() {
                Some(role) => format!("{}:{role}", e["type"].as_str().unwrap()),
                None => e["type"].as_str().unwrap().to_owned(),
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
async fn rpc_client_drives_pi_engine_as_it_drives_pi() {
    let modules = pi_npm::require("@mariozechner/pi-coding-agent");
    let engine = Path::new(env!("CARGO_BIN_EXE_pi-engine"));
    // One after the other: on a small machine a run beside another skews their timing.
    let pi = run(Target::Pi, &modules).await;
    let ours = run(Target::Engine(engine), &modules).await;
    let (mut p, mut o) = (pi.transcript.clone(), ours.transcript.clone());
    check_pi_ran_the_script(&p);
    normalize(&mut p, &mut o);

    let mut differences = Vec::new();
    let names = |t: &[Value]| -> Vec<String> {
        t.iter()
            .map(|s| s["step"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&p), names(&o), "the steps");
    for (a, b) in p.iter().zip(&o) {
        if a != b {
            differences.push(format!(
                "step {}:\n  pi:        {a}\n  pi-engine: {b}",
                a["step"]
            ));
        }
    }

    // The prompt's model requests: the same bodies and headers, but the HTTP clients' own.
    let script_calls = script().len() + 1;
    for (name, run) in [("pi", &pi), ("pi-engine", &ours)] {
        assert!(
            run.requests.len() >= script_calls,
            "{name} made {} requests",
            run.requests.len()
        );
    }
    for (i, (a, b)) in pi.requests[..script_calls]
        .iter()
        .zip(&ours.requests[..script_calls])
        .enumerate()
    {
        if (&a.method, &a.path) != (&b.method, &b.path) {
            differences.push(format!(
                "request {i}: pi {} {}, pi-engine {} {}",
                a.method, a.path, b.method, b.path
            ));
        }
        let (ba, bb) = (
            request_body(a, &pi.root.join("cwd")),
            request_body(b, &ours.root.join("cwd")),
        );
        let mut body = Vec::new();
        json_diff(&ba, &bb, "", &mut body);
        for d in body {
            differences.push(format!("request {i}'s body at {d}"));
        }
        if headers(a) != headers(b) {
            differences.push(format!(
                "request {i}'s headers:\n  pi:        {:?}\n  pi-engine: {:?}",
                headers(a),
                headers(b)
            ));
        }
    }

    // What each saved: the settings the steps changed, the prompt's session, the file the
    // tools made.
    let read = |root: &Path, rel: &str| std::fs::read_to_string(root.join(rel)).ok();
    let settings = |root: &Path| -> Option<Value> {
        read(root, "agent/settings.json").map(|s| serde_json::from_str(&s).unwrap())
    };
    if settings(&pi.root) != settings(&ours.root) {
        differences.push(format!(
            "settings.json:\n  pi:        {:?}\n  pi-engine: {:?}",
            settings(&pi.root),
            settings(&ours.root)
        ));
    }
    let (sa, sb) = (first_session(&pi.root), first_session(&ours.root));
    if sa != sb {
        differences.push(format!(
            "the session file:\n  pi:        {sa:?}\n  pi-engine: {sb:?}"
        ));
    }
    assert_eq!(
        read(&pi.root, "cwd/notes.txt").as_deref(),
        Some("line one\nline 2\n")
    );
    if read(&pi.root, "cwd/notes.txt") != read(&ours.root, "cwd/notes.txt") {
        differences.push("notes.txt differs".to_owned());
    }

    assert!(
        differences.is_empty(),
        "pi-engine differs from pi under pi's RpcClient ({} differences):\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// Each `rpc/…` entry of `tests/conformance/deviations.json` names a test of this file.
#[test]
fn rpc_deviations_name_tests_here() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("tests/conformance/deviations.json")).unwrap();
    let deviations: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    let this = std::fs::read_to_string(root.join("tests/cli_rpc_client.rs")).unwrap();
    let mut seen = 0;
    for (key, why) in deviations.iter().filter(|(k, _)| k.starts_with("rpc/")) {
        let why = why.as_str().unwrap();
        let test = why
            .split("Test: tests/cli_rpc_client.rs ")
            .nth(1)
            .unwrap_or_else(|| panic!("{key} names no test of tests/cli_rpc_client.rs"));
        let name = test
            .trim_end_matches('.')
            .split_whitespace()
            .next()
            .unwrap();
        assert!(
            this.contains(&format!("fn {name}(")),
            "{key}: no test {name}"
        );
        assert!(
            this.contains(&format!("\"{key}\"")),
            "{key} is not checked here"
        );
        seen += 1;
    }
    assert!(seen >= 1);
}
