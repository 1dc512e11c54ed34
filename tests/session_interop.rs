//! Interop with pi itself, both ways: pi 0.73.1's `SessionManager` (run with node) opens the
//! files this crate writes and builds the same context, and this crate reads what pi writes.
//!
//! Needs node and the npm package `@mariozechner/pi-coding-agent@0.73.1` in `.pi-npm/` or
//! `$PI_NPM` (`scripts/install-pi-npm.sh`): ignored by a plain `cargo test`, run by `.ci/run`.

#[path = "support/pi_npm.rs"]
mod pi_npm;

use std::path::Path;

use pi_engine::agent::AgentMessage;
use pi_engine::session::{BashExecutionMessage, SessionManager, SessionOptions, convert_to_llm};
use pi_engine::{
    AssistantContent, AssistantMessage, Content, StopReason, ThinkingLevel, ToolResultMessage,
    Usage, UserMessage,
};
use serde_json::{Value, json};

fn run_pi(modules: &Path, args: &[&str]) -> String {
    let out = pi_npm::stdout_of(pi_npm::node_script("pi_session.mjs", modules).args(args));
    String::from_utf8(out).unwrap()
}

/// What this crate reads from a file, in the shape `pi_session.mjs describe` prints.
fn describe(sm: &SessionManager) -> Value {
    let ctx = sm.build_session_context().unwrap();
    let labels: serde_json::Map<String, Value> = sm
        .entry_ids()
        .filter_map(|id| sm.label(id).map(|l| (id.to_owned(), json!(l))))
        .collect();
    json!({
        "sessionId": sm.session_id(),
        "leafId": sm.leaf_id(),
        "entryCount": sm.entry_count(),
        "sessionName": sm.session_name(),
        "model": ctx.model,
        "thinkingLevel": ctx.thinking_level,
        "labels": labels,
        "roots": sm.tree().roots().map(|n| n.id.clone()).collect::<Vec<_>>(),
        "messages": ctx.messages,
        "llm": convert_to_llm(&ctx.messages),
    })
}

fn assert_same(ours: &Value, pis: &Value) {
    for key in [
        "sessionId",
        "leafId",
        "entryCount",
        "sessionName",
        "model",
        "thinkingLevel",
        "labels",
        "roots",
    ] {
        assert_eq!(ours[key], pis[key], "{key}");
    }
    let (a, b) = (
        ours["messages"].as_array().unwrap(),
        pis["messages"].as_array().unwrap(),
    );
    assert_eq!(a.len(), b.len(), "message count");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x, y, "message {i}");
    }
    assert_eq!(ours["llm"], pis["llm"], "LLM messages");
}

fn assistant_with_tool_call() -> AssistantMessage {
    let mut usage = Usage::new(10, 5, 0, 0);
    usage.cost.input = 0.1;
    AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
        .with_content(vec![
            AssistantContent::thinking("use ls"),
            AssistantContent::tool_call("t1", "bash", json!({"command": "ls"})),
        ])
        .with_stop_reason(StopReason::ToolUse)
        .with_usage(usage)
        .with_timestamp(1_767_225_602_000)
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn pi_reads_what_we_write() {
    let modules = pi_npm::require("@mariozechner/pi-coding-agent");
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/interop/project");
    sm.append_model_change("openai", "gpt-4o").unwrap();
    sm.append_thinking_level_change(ThinkingLevel::Medium)
        .unwrap();
    let q = sm
        .append_message(UserMessage::text("List files").with_timestamp(1))
        .unwrap();
    sm.append_message(assistant_with_tool_call()).unwrap();
    sm.append_message(
        ToolResultMessage::new("t1", "bash", vec![Content::text("a.txt\n")], false)
            .with_details(json!({"x": 1}))
            .with_timestamp(3),
    )
    .unwrap();
    let mut bash = BashExecutionMessage::new("cat x", "", Some(2));
    bash.timestamp = 4;
    sm.append_message(AgentMessage::custom(&bash).unwrap())
        .unwrap();
    bash.exclude_from_context = Some(true);
    sm.append_message(AgentMessage::custom(&bash).unwrap())
        .unwrap();
    sm.append_custom_entry("ext", Some(json!({"n": [1, 2]})))
        .unwrap();
    let kept = sm
        .append_custom_message_entry("ext", "injected", false, Some(json!({"k": "v"})))
        .unwrap();
    sm.append_label_change(&q, Some("start")).unwrap();
    sm.append_session_info("Written in Rust").unwrap();
    sm.append_compaction("Compacted", kept, 999, Some(json!({"readFiles": []})), None)
        .unwrap();
    sm.append_message(UserMessage::text("after").with_timestamp(5))
        .unwrap();
    sm.branch_with_summary(Some(&q), "the other way", None, None)
        .unwrap();
    sm.append_message(UserMessage::text("branch b").with_timestamp(6))
        .unwrap();
    let path = sm.session_file().unwrap().to_owned();
    let ours = describe(&sm);
    drop(sm);
    let pis: Value =
        serde_json::from_str(&run_pi(&modules, &["describe", path.to_str().unwrap()])).unwrap();
    assert_same(&ours, &pis);
    assert_eq!(pis["messages"].as_array().unwrap().len(), 3);

    // Same for the compacted branch, seen from its leaf (the leaf on load is the last line,
    // so make the compaction branch last).
    let mut sm = SessionManager::open(&path).unwrap();
    let after = sm
        .entry_ids()
        .zip(sm.entries().unwrap())
        .filter(|(_, e)| e.as_message().and_then(AgentMessage::timestamp) == Some(5))
        .map(|(id, _)| id.to_owned())
        .next()
        .unwrap();
    sm.branch(&after).unwrap();
    sm.append_message(assistant_with_tool_call()).unwrap();
    let ours = describe(&sm);
    drop(sm);
    let pis: Value =
        serde_json::from_str(&run_pi(&modules, &["describe", path.to_str().unwrap()])).unwrap();
    assert_same(&ours, &pis);
    let roles: Vec<_> = pis["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].clone())
        .collect();
    assert_eq!(roles, ["compactionSummary", "custom", "user", "assistant"]);
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn pi_reads_a_v1_file_we_migrated() {
    let modules = pi_npm::require("@mariozechner/pi-coding-agent");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("before-compaction.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi/before-compaction.jsonl"),
        &path,
    )
    .unwrap();
    let mut sm = SessionManager::open(&path).unwrap();
    sm.append_message(UserMessage::text("continuing in Rust").with_timestamp(7))
        .unwrap();
    let ours = describe(&sm);
    drop(sm);
    let pis: Value =
        serde_json::from_str(&run_pi(&modules, &["describe", path.to_str().unwrap()])).unwrap();
    assert_same(&ours, &pis);
    assert_eq!(pis["messages"][0]["role"], "compactionSummary");
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn we_read_what_pi_writes() {
    let modules = pi_npm::require("@mariozechner/pi-coding-agent");
    let dir = tempfile::tempdir().unwrap();
    let path = run_pi(&modules, &["write", dir.path().to_str().unwrap()]);
    let pis: Value = serde_json::from_str(&run_pi(&modules, &["describe", &path])).unwrap();
    let sm = SessionManager::open(&path).unwrap();
    assert_same(&describe(&sm), &pis);
    assert_eq!(sm.session_name(), Some("Interop session"));
    let roles: Vec<_> = pis["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].clone())
        .collect();
    assert_eq!(roles, ["user", "branchSummary", "user"]);
    // Every entry pi wrote round-trips through the typed entries.
    for (line, entry) in std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .skip(1)
        .zip(sm.entries().unwrap())
    {
        let raw: Value = serde_json::from_str(line).unwrap();
        assert_eq!(serde_json::to_value(&entry).unwrap(), raw);
    }
}
