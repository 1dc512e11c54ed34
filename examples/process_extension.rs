//! An extension written in Python, run as a child process: `examples/extensions/approval_gate.py`
//! (the seed's approval gate, a `risk_report` tool and a `/gate` command) on the faux
//! provider, offline. The protocol is `docs/extension-protocol.md`.
//!
//! ```text
//! cargo run --example process_extension          # asks on the terminal
//! cargo run --example process_extension -- --no  # answers "No" without asking
//! ```
//!
//! The scripted model first checks a command with the extension's tool, then tries
//! `rm -rf build`; the gate asks before it runs. The `bash` tool here is a stand-in that
//! only says what it would run.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use pi_engine::ApiProvider;
use pi_engine::agent::{AgentMessage, AgentToolResult, TypedTool};
use pi_engine::agent_session::AgentSession;
use pi_engine::extensions::{ExtensionUi, NotifyKind, ProcessExtension, ProcessExtensionOptions};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::session::SessionManager;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

/// Arguments of the stand-in `bash` tool.
#[derive(Deserialize, JsonSchema)]
struct BashArgs {
    /// The command line.
    command: String,
}

/// The Python extension.
fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/extensions/approval_gate.py")
}

/// Whether `python3` can be run here.
async fn have_python() -> bool {
    tokio::process::Command::new("python3")
        .arg("--version")
        .output()
        .await
        .is_ok_and(|o| o.status.success())
}

/// The terminal's UI: dialogs read an answer from stdin (or always answer `fixed`).
struct Terminal {
    fixed: Option<String>,
}

#[async_trait]
impl ExtensionUi for Terminal {
    async fn select(&self, title: &str, options: &[String]) -> Option<String> {
        println!("{title}  [{}]", options.join("/"));
        if let Some(answer) = &self.fixed {
            println!("> {answer}");
            return Some(answer.clone());
        }
        let mut line = String::new();
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
        stdin.read_line(&mut line).await.ok()?;
        let line = line.trim();
        options
            .iter()
            .find(|o| o.eq_ignore_ascii_case(line))
            .cloned()
    }
    async fn confirm(&self, title: &str, message: &str) -> bool {
        self.select(&format!("{title}\n{message}"), &["Yes".into(), "No".into()])
            .await
            .as_deref()
            == Some("Yes")
    }
    async fn input(&self, _title: &str, _placeholder: Option<&str>) -> Option<String> {
        None
    }
    async fn editor(&self, _title: &str, _prefill: Option<&str>) -> Option<String> {
        None
    }
    fn notify(&self, message: &str, kind: Option<NotifyKind>) {
        println!("[{}] {message}", kind.unwrap_or_default().as_str());
    }
}

/// Runs the scripted session; returns the tool results the model saw.
async fn run(ui: Arc<dyn ExtensionUi>) -> Result<Vec<(String, bool)>, Box<dyn std::error::Error>> {
    let gate = ProcessExtension::spawn(
        "approval-gate",
        "python3",
        [script()],
        ProcessExtensionOptions::new(),
    )
    .await?;
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call(
        "c1",
        "risk_report",
        json!({"command": "rm -rf build"}),
    ));
    faux.push(FauxResponse::tool_call(
        "c2",
        "bash",
        json!({"command": "rm -rf build"}),
    ));
    faux.push(FauxResponse::text("Done."));
    let stream = faux.clone();
    let bash = TypedTool::new(
        "bash",
        "Run a shell command",
        |args: BashArgs, _ctx| async move {
            Ok(AgentToolResult::text(format!(
                "(would run: {})",
                args.command
            )))
        },
    );
    let session = AgentSession::builder(SessionManager::in_memory("/project"))
        .default_model(faux.model())
        .stream_fn(move |m, c, o| stream.stream(m, c, o))
        .tool(bash)
        .extension(gate)
        .extension_ui_arc(ui)
        .build()?;
    session.prompt("/gate status").await?.into_result()?;
    session.prompt("clean the build").await?.into_result()?;
    Ok(session
        .messages()
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => Some((r.text(), r.is_error)),
            _ => None,
        })
        .collect())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if !have_python().await {
        println!("python3 is not installed: this example runs a Python extension.");
        return Ok(());
    }
    let fixed = std::env::args()
        .any(|a| a == "--no")
        .then(|| "No".to_owned());
    for (text, is_error) in run(Arc::new(Terminal { fixed })).await? {
        println!("{} {text}", if is_error { "✗" } else { "✓" });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_gate_blocks_rm_rf_when_the_person_says_no() {
        let ui = Arc::new(Terminal {
            fixed: Some("No".into()),
        });
        let results = tokio::time::timeout(std::time::Duration::from_secs(30), run(ui))
            .await
            .expect("finishes")
            .unwrap();
        assert_eq!(
            results,
            [
                ("dangerous: rm -rf".to_owned(), false),
                ("Blocked by user".to_owned(), true),
            ]
        );
    }

    #[tokio::test]
    async fn it_runs_when_the_person_says_yes() {
        let ui = Arc::new(Terminal {
            fixed: Some("Yes".into()),
        });
        let results = tokio::time::timeout(std::time::Duration::from_secs(30), run(ui))
            .await
            .expect("finishes")
            .unwrap();
        assert_eq!(results[1], ("(would run: rm -rf build)".to_owned(), false));
    }
}
