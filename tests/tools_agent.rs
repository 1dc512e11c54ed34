//! The built-in tools in an `Agent`, end to end: the faux model calls each of the seven, the
//! agent runs them, and their results reach the next model call.
#![cfg(feature = "tools")]

use pi_engine::agent::Agent;
use pi_engine::llm::{AssistantContent, Message, ToolCall};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::tools::BuiltinTools;
use serde_json::json;

fn call(id: &str, name: &str, args: serde_json::Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall::new(id, name, args))
}

#[tokio::test]
async fn the_model_calls_all_seven_tools_and_reads_their_results() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();

    let faux = FauxProvider::new();
    // Turn 1: read-only tools in parallel.
    faux.push(FauxResponse::content(vec![
        call("c1", "read", json!({"path": "src/main.rs"})),
        call("c2", "grep", json!({"pattern": "println"})),
        call("c3", "find", json!({"pattern": "*.rs"})),
        call("c4", "ls", json!({})),
    ]));
    // Turn 2: change things.
    faux.push(FauxResponse::content(vec![
        call(
            "c5",
            "edit",
            json!({"path": "src/main.rs", "edits": [{"oldText": "hi", "newText": "bye"}]}),
        ),
        call(
            "c6",
            "write",
            json!({"path": "notes/todo.md", "content": "- ship\n"}),
        ),
    ]));
    // Turn 3: look at the result with the shell.
    faux.push(FauxResponse::tool_call(
        "c7",
        "bash",
        json!({"command": "cat src/main.rs notes/todo.md"}),
    ));
    faux.push(FauxResponse::text("All done."));

    let agent = Agent::builder(faux.model())
        .tools(BuiltinTools::new(dir.path()).all())
        .provider(faux.clone())
        .build();
    agent
        .prompt("Tidy up")
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(agent.last_assistant_text().as_deref(), Some("All done."));

    // The model saw every definition, pi's seven in pi's order.
    let requests = faux.requests();
    assert_eq!(requests.len(), 4);
    let names: Vec<&str> = requests[0]
        .context
        .tools
        .as_ref()
        .unwrap()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["read", "bash", "edit", "write", "grep", "find", "ls"]
    );

    // Each result went into the next call's context.
    let results = |i: usize| -> Vec<(String, String, bool)> {
        requests[i]
            .context
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult(r) => Some((
                    r.tool_name.clone(),
                    r.content.iter().filter_map(|c| c.as_text()).collect(),
                    r.is_error,
                )),
                _ => None,
            })
            .collect()
    };
    let first = results(1);
    assert_eq!(first.len(), 4);
    assert_eq!(
        first[0],
        (
            "read".into(),
            "fn main() {\n    println!(\"hi\");\n}\n".into(),
            false
        )
    );
    assert_eq!(
        first[1],
        (
            "grep".into(),
            "src/main.rs:2:     println!(\"hi\");".into(),
            false
        )
    );
    assert_eq!(first[2], ("find".into(), "src/main.rs".into(), false));
    assert_eq!(first[3], ("ls".into(), "src/".into(), false));

    let second = results(2);
    assert_eq!(
        second[4],
        (
            "edit".into(),
            "Successfully replaced 1 block(s) in src/main.rs.".into(),
            false
        )
    );
    assert_eq!(
        second[5],
        (
            "write".into(),
            "Successfully wrote 7 bytes to notes/todo.md".into(),
            false
        )
    );

    let third = results(3);
    assert_eq!(
        third[6],
        (
            "bash".into(),
            "fn main() {\n    println!(\"bye\");\n}\n- ship\n".into(),
            false
        )
    );
}
