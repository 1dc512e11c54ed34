//! A coding agent with pi's seven built-in tools, offline: a scripted (faux) model finds a
//! bug in a small project, reads the file, fixes it with `edit`, and runs the program with
//! `bash` to check. Every tool call and its result is printed as it happens.
//!
//! ```text
//! cargo run --example coding_agent
//! ```
//!
//! With a real model, replace the faux provider: `Agent::builder(get_model("anthropic",
//! "claude-sonnet-4-5").unwrap())` and set `ANTHROPIC_API_KEY`; the tools stay the same.

use std::path::Path;

use pi_engine::agent::{Agent, AgentEvent};
use pi_engine::llm::{AssistantContent, ToolCall};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::tools::BuiltinTools;
use serde_json::json;

/// The model's side of the conversation, scripted.
fn scripted_model() -> FauxProvider {
    let faux = FauxProvider::new();
    let call =
        |id: &str, name: &str, args| AssistantContent::ToolCall(ToolCall::new(id, name, args));
    faux.push(FauxResponse::content(vec![
        call("c1", "ls", json!({})),
        call("c2", "grep", json!({"pattern": "TODO"})),
    ]));
    faux.push(FauxResponse::tool_call(
        "c3",
        "read",
        json!({"path": "greet.sh"}),
    ));
    faux.push(FauxResponse::tool_call(
        "c4",
        "edit",
        json!({"path": "greet.sh", "edits": [{"oldText": "echo \"Helo, $1\"  # TODO: typo", "newText": "echo \"Hello, $1\""}]}),
    ));
    faux.push(FauxResponse::tool_call(
        "c5",
        "bash",
        json!({"command": "sh greet.sh world"}),
    ));
    faux.push(FauxResponse::text(
        "Fixed the typo in greet.sh; it now prints \"Hello, world\".",
    ));
    faux
}

/// Runs the agent on a project in `dir`; returns it for inspection.
async fn run(dir: &Path, faux: FauxProvider) -> Agent {
    std::fs::write(
        dir.join("greet.sh"),
        "#!/bin/sh\necho \"Helo, $1\"  # TODO: typo\n",
    )
    .expect("write the project");
    let agent = Agent::builder(faux.model())
        .system_prompt("You are a coding assistant.")
        .tools(BuiltinTools::new(dir).all())
        .provider(faux)
        .build();
    agent.subscribe(|event, _| match event {
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => {
            println!("→ {tool_name} {}", serde_json::Value::Object(args.clone()))
        }
        AgentEvent::ToolExecutionEnd {
            result, is_error, ..
        } => {
            let mark = if *is_error { "✗" } else { "✓" };
            for line in result.text_content().lines() {
                println!("  {mark} {line}");
            }
        }
        _ => {}
    });
    match agent.prompt("greet.sh prints a typo; fix it").await {
        Ok(outcome) => {
            if let Err(e) = outcome.into_result() {
                eprintln!("error: {e}");
            }
        }
        Err(e) => eprintln!("error: {e}"),
    }
    agent
}

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("pi-engine-coding-agent-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the project directory");
    let agent = run(&dir, scripted_model()).await;
    if let Some(text) = agent.last_assistant_text() {
        println!("\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_agent_fixes_the_typo_with_the_tools() {
        let dir = tempfile::tempdir().unwrap();
        let agent = super::run(dir.path(), super::scripted_model()).await;
        let fixed = std::fs::read_to_string(dir.path().join("greet.sh")).unwrap();
        assert_eq!(fixed, "#!/bin/sh\necho \"Hello, $1\"\n");
        let bash = agent
            .messages()
            .iter()
            .filter_map(|m| m.as_tool_result().cloned())
            .find(|r| r.tool_name == "bash")
            .unwrap();
        assert!(!bash.is_error);
        assert_eq!(bash.content[0].as_text(), Some("Hello, world\n"));
    }
}
