//! An approval gate: a `before_tool_call` hook asks a person before a dangerous shell
//! command runs, and blocks it unless they agree.
//!
//! ```text
//! cargo run --example approval_gate          # asks on the terminal
//! cargo run --example approval_gate -- --no  # answers "no" without asking
//! ```
//!
//! The shell tool is a small example-local one (`sh -c`, output and exit code, stopped on
//! abort). The scripted model (faux provider, offline) first lists a scratch folder, then
//! tries to delete a file in it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use pi_engine::agent::{
    Agent, AgentEvent, AgentHooks, AgentTool, AgentToolResult, ToolCallDecision, ToolContext,
    ToolError, TypedTool,
};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::{ApiProvider, AssistantContent};
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

/// Arguments of the `bash` tool.
#[derive(Deserialize, JsonSchema)]
struct BashArgs {
    /// The command line, run with `sh -c`.
    command: String,
}

/// Runs a command in `dir`; stops it when the run is aborted.
fn bash_tool(dir: PathBuf) -> impl AgentTool {
    TypedTool::new(
        "bash",
        "Run a shell command and return its output",
        move |args: BashArgs, cx: ToolContext| {
            let dir = dir.clone();
            async move {
                let child = tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg(&args.command)
                    .current_dir(&dir)
                    .kill_on_drop(true)
                    .output();
                let output = tokio::select! {
                    out = child => out?,
                    () = cx.cancel.cancelled() => return Err("Command aborted".into()),
                };
                let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&output.stderr));
                let code = output.status.code().unwrap_or(-1);
                if code != 0 {
                    return Err(format!("{text}\nCommand exited with code {code}").into());
                }
                Ok::<_, ToolError>(
                    AgentToolResult::text(text).with_details(json!({"exitCode": code})),
                )
            }
        },
    )
}

/// Asks a person whether a command may run.
type Ask = Arc<dyn Fn(String) -> BoxFuture<'static, bool> + Send + Sync>;

/// The gate: dangerous `bash` commands need a yes.
fn approval_gate(ask: Ask) -> AgentHooks {
    let dangerous = Regex::new(r"\b(rm|del|format|shutdown|mkfs|dd)\b").expect("a valid pattern");
    AgentHooks::new().with_before_tool_call(move |cx| {
        let ask = ask.clone();
        let dangerous = dangerous.clone();
        Box::pin(async move {
            let command = cx.args.get("command").and_then(|c| c.as_str());
            let Some(command) =
                command.filter(|c| cx.tool_call.name == "bash" && dangerous.is_match(c))
            else {
                return ToolCallDecision::Allow;
            };
            let question = format!("Execute dangerous command?\n  {command}");
            // An abort (e.g. Ctrl-C handled by the application) also ends the wait.
            let approved = tokio::select! {
                yes = ask(question) => yes,
                () = cx.cancel.cancelled() => false,
            };
            if approved {
                ToolCallDecision::Allow
            } else {
                ToolCallDecision::block("User cancelled operation")
            }
        })
    })
}

/// Asks on the terminal.
fn ask_on_terminal() -> Ask {
    Arc::new(|question| {
        Box::pin(async move {
            println!("{question}\n  Allow? [y/N] ");
            let mut line = String::new();
            let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
            stdin.read_line(&mut line).await.is_ok() && line.trim().eq_ignore_ascii_case("y")
        })
    })
}

/// The script: list the folder, then delete a file.
fn scripted_model() -> FauxProvider {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::content(vec![
        AssistantContent::text("Let me look first."),
        AssistantContent::tool_call("call_1", "bash", json!({"command": "ls"})),
    ]));
    faux.push(FauxResponse::tool_call(
        "call_2",
        "bash",
        json!({"command": "rm -f victim.txt"}),
    ));
    faux.push(FauxResponse::text("Done."));
    faux
}

/// Runs the agent in `dir` with `ask` deciding; returns it for inspection.
async fn run(dir: &Path, ask: Ask) -> Agent {
    let faux = scripted_model();
    let agent = Agent::builder(faux.model())
        .system_prompt("You are a careful shell assistant.")
        .tool(bash_tool(dir.to_path_buf()))
        .hooks(approval_gate(ask).with_stream_fn(move |m, c, o| faux.stream(m, c, o)))
        .build();
    agent.subscribe(|event, _| {
        if let AgentEvent::ToolExecutionEnd {
            tool_name,
            result,
            is_error,
            ..
        } = event
        {
            let mark = if *is_error { "✗" } else { "✓" };
            println!("{mark} {tool_name}: {}", result.text_content().trim());
        }
    });
    match agent.prompt("Clean up the scratch folder").await {
        Ok(outcome) => {
            if let Err(e) = outcome.into_result() {
                eprintln!("error: {e}");
            }
        }
        Err(e) => eprintln!("error: {e}"),
    }
    agent
}

fn scratch_dir(name: &str) -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("pi-engine-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("victim.txt"), "precious")?;
    Ok(dir)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let dir = scratch_dir("approval")?;
    let ask = if std::env::args().any(|a| a == "--no") {
        Arc::new(|_| Box::pin(async { false }) as BoxFuture<'static, bool>) as Ask
    } else {
        ask_on_terminal()
    };
    run(&dir, ask).await;
    println!(
        "victim.txt {}",
        if dir.join("victim.txt").exists() {
            "survived"
        } else {
            "was deleted"
        }
    );
    std::fs::remove_dir_all(&dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn scripted_answer(answer: bool, asked: Arc<Mutex<Vec<String>>>) -> Ask {
        Arc::new(move |question| {
            asked.lock().unwrap().push(question);
            Box::pin(async move { answer })
        })
    }

    fn results(agent: &Agent) -> Vec<(bool, String)> {
        agent
            .messages()
            .into_iter()
            .filter_map(|m| match m {
                pi_engine::agent::AgentMessage::ToolResult(r) => Some((r.is_error, r.text())),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn a_denied_command_does_not_run() {
        let dir = scratch_dir("approval-denied").unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let agent = run(&dir, scripted_answer(false, asked.clone())).await;
        // Only the dangerous command was asked about.
        assert_eq!(
            *asked.lock().unwrap(),
            ["Execute dangerous command?\n  rm -f victim.txt"]
        );
        assert!(dir.join("victim.txt").exists());
        let results = results(&agent);
        assert!(
            !results[0].0 && results[0].1.contains("victim.txt"),
            "ls ran"
        );
        assert_eq!(results[1], (true, "User cancelled operation".into()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn an_approved_command_runs() {
        let dir = scratch_dir("approval-approved").unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let agent = run(&dir, scripted_answer(true, asked.clone())).await;
        assert_eq!(asked.lock().unwrap().len(), 1);
        assert!(!dir.join("victim.txt").exists());
        assert!(!results(&agent)[1].0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
