//! Wire values a newer pi may write (a stop reason, a content block type, an entry type this
//! crate does not know) are kept, not dropped: the message stays in the context (tool-call /
//! result pairing intact), every entry reads into the typed model and writes back unchanged,
//! and a provider's request leaves the unknown blocks out.

use pi_engine::agent::AgentMessage;
use pi_engine::llm::{AssistantContent, Content, Message, StopReason, UserContent};
use pi_engine::session::{EntryType, SessionEntry, SessionManager, convert_to_llm};

/// A session as a newer pi could write it: an assistant message with an unknown stop reason,
/// an unknown block before its tool call, a tool result and a user message holding unknown
/// blocks, and an entry of an unknown type in the middle of the path.
const LINES: &[&str] = &[
    r#"{"type":"session","version":3,"id":"019b7a00-0000-7000-8000-0000000000aa","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp/p"}"#,
    r#"{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"Read a.txt"},{"type":"audio","data":"AAA=","format":"wav"}],"timestamp":1767225601000}}"#,
    r#"{"type":"future_marker","id":"e2","parentId":"e1","timestamp":"2026-01-01T00:00:02.000Z","payload":{"k":[1,{"z":null}]},"note":"from pi 9"}"#,
    r#"{"type":"message","id":"e3","parentId":"e2","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"citation","source":{"url":"https://x"},"quote":"q"},{"type":"text","text":"Reading."},{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"a.txt"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"pauseTurn","timestamp":1767225603000}}"#,
    r#"{"type":"message","id":"e4","parentId":"e3","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"read","content":[{"type":"text","text":"hello"},{"type":"resource","uri":"file:///a.txt"}],"isError":false,"timestamp":1767225604000}}"#,
    r#"{"type":"message","id":"e5","parentId":"e4","timestamp":"2026-01-01T00:00:05.000Z","message":{"role":"assistant","content":[{"type":"text","text":"It says hello."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":20,"output":4,"cacheRead":0,"cacheWrite":0,"totalTokens":24,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1767225605000}}"#,
];

fn session_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer-pi.jsonl");
    std::fs::write(&path, LINES.join("\n") + "\n").unwrap();
    (dir, path)
}

#[test]
fn a_newer_pis_session_keeps_unknown_values_in_context_and_on_rewrite() {
    let (_dir, path) = session_file();
    let sm = SessionManager::open(&path).unwrap();

    // The context holds every message, the one with the unknown stop reason included.
    let context = sm.build_session_context().unwrap();
    assert_eq!(context.messages.len(), 4);
    let AgentMessage::Assistant(reply) = &context.messages[1] else {
        panic!("{:?}", context.messages[1])
    };
    assert_eq!(reply.stop_reason, StopReason::Unknown("pauseTurn".into()));
    assert!(!reply.stop_reason.is_failure());
    assert_eq!(reply.stop_reason.as_str(), "pauseTurn");
    assert_eq!(reply.content.len(), 3);
    assert_eq!(reply.content[0].block_type(), "citation");
    assert!(matches!(&reply.content[0], AssistantContent::Unknown(raw) if raw["quote"] == "q"));
    assert_eq!(reply.text(), "Reading.");
    assert_eq!(reply.tool_calls().next().unwrap().id, "call_1");
    let AgentMessage::ToolResult(result) = &context.messages[2] else {
        panic!()
    };
    assert_eq!(result.tool_call_id, "call_1");
    assert_eq!(result.text(), "hello");
    assert!(matches!(&result.content[1], Content::Unknown(_)));
    let AgentMessage::User(user) = &context.messages[0] else {
        panic!()
    };
    assert_eq!(user.content.text(), "Read a.txt");
    let UserContent::Blocks(blocks) = &user.content else {
        panic!()
    };
    assert_eq!(blocks[1].block_type(), "audio");

    // The LLM view keeps the pairing: the call and its result are both there.
    let llm = convert_to_llm(&context.messages);
    assert_eq!(llm.len(), 4);
    assert!(matches!(&llm[1], Message::Assistant(a) if a.tool_calls().count() == 1));
    assert!(matches!(&llm[2], Message::ToolResult(r) if r.tool_call_id == "call_1"));

    // Every entry reads into the typed model and writes back byte for byte.
    let entries = sm.entries().unwrap();
    assert_eq!(entries.len(), LINES.len() - 1);
    assert_eq!(entries[1].entry_type(), EntryType::Unknown);
    assert_eq!(entries[1].type_name(), "future_marker");
    for (entry, line) in entries.iter().zip(&LINES[1..]) {
        assert_eq!(&serde_json::to_string(entry).unwrap(), line);
        let again: SessionEntry = serde_json::from_str(line).unwrap();
        assert_eq!(&again, entry);
    }
}

#[test]
fn appending_to_a_newer_pis_session_keeps_its_lines() {
    let (_dir, path) = session_file();
    let mut sm = SessionManager::open(&path).unwrap();
    sm.append_message(pi_engine::UserMessage::text("more").with_timestamp(1))
        .unwrap();
    drop(sm);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[..LINES.len()], LINES);
    let sm = SessionManager::open(&path).unwrap();
    assert_eq!(sm.build_session_context().unwrap().messages.len(), 5);
}
