//! `pi-engine --export <session.jsonl> [output.html]`, run as a user runs it: the built
//! command (`CARGO_BIN_EXE_pi-engine`) in a temporary working directory, with a temporary
//! `HOME` and agent directory and an otherwise empty environment. pi's messages: `Exported
//! to: <path>` on stdout and exit code 0; `Error: <message>` on stderr and exit code 1. Every
//! run is killed after 20 s.
#![cfg(feature = "cli")]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pi_engine::session::SessionOptions;
use pi_engine::{AssistantContent, AssistantMessage, UserMessage};

const BIN: &str = env!("CARGO_BIN_EXE_pi-engine");
const RUN_LIMIT: Duration = Duration::from_secs(20);

#[derive(Debug)]
struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `pi-engine args` in `cwd`; killed after [`RUN_LIMIT`].
fn run(cwd: &Path, args: &[&str]) -> Output {
    let home = cwd.join(".home");
    std::fs::create_dir_all(&home).unwrap();
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("HOME", &home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).unwrap();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pi-engine {args:?} did not finish in {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A session file in `dir` with a question and a reply.
fn session_file(dir: &Path) -> std::path::PathBuf {
    let mut sm = SessionOptions::new()
        .with_session_dir(dir)
        .create("/home/me/project");
    sm.append_message(UserMessage::text("What is <b>2+2</b>?"))
        .unwrap();
    sm.append_message(
        AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
            .with_content(vec![AssistantContent::text("It is **4**.")]),
    )
    .unwrap();
    sm.session_file().unwrap().to_owned()
}

#[test]
fn export_writes_the_page_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    let file = session_file(&dir.path().join("sessions"));
    let out = run(
        dir.path(),
        &["--export", &file.to_string_lossy(), "page.html"],
    );
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "Exported to: page.html\n", ""),
        "{out:?}"
    );
    let html = std::fs::read_to_string(dir.path().join("page.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("What is &lt;b&gt;2+2&lt;/b&gt;?"));
    assert!(html.contains("It is <strong>4</strong>."));
}

#[test]
fn export_names_the_page_after_the_session_file_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let file = session_file(&dir.path().join("sessions"));
    let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
    let out = run(dir.path(), &["--export", &file.to_string_lossy()]);
    let name = format!("pi-session-{stem}.html");
    assert_eq!(
        (out.code, out.stdout.clone(), out.stderr.as_str()),
        (0, format!("Exported to: {name}\n"), ""),
        "{out:?}"
    );
    assert!(
        std::fs::read_to_string(dir.path().join(&name))
            .unwrap()
            .contains("It is <strong>4</strong>.")
    );
}

#[test]
fn export_errors_are_reported_with_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--export", "missing.jsonl"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (1, "", "Error: File not found: missing.jsonl\n"),
        "{out:?}"
    );

    std::fs::write(dir.path().join("notes.jsonl"), "not a session\n").unwrap();
    let out = run(dir.path(), &["--export", "notes.jsonl", "out.html"]);
    assert_eq!((out.code, out.stdout.as_str()), (1, ""), "{out:?}");
    assert!(out.stderr.starts_with("Error: "), "{out:?}");
    assert!(out.stderr.contains("is not a session file"), "{out:?}");
    assert!(!dir.path().join("out.html").exists());

    // An output that cannot be written.
    let file = session_file(&dir.path().join("sessions"));
    let out = run(
        dir.path(),
        &["--export", &file.to_string_lossy(), "no/such/dir/page.html"],
    );
    assert_eq!((out.code, out.stdout.as_str()), (1, ""), "{out:?}");
    assert!(
        out.stderr
            .starts_with("Error: Failed to write no/such/dir/page.html: "),
        "{out:?}"
    );
}
