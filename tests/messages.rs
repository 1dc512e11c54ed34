//! Every message pi wrote in the fixture sessions deserializes into this crate's types and
//! serializes back to the same JSON.

use std::path::Path;

use pi_engine::Message;
use serde_json::Value;

fn fixture_files() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("pi-session-") || name.contains(".migrated-v3-")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn session_messages_round_trip() {
    let mut checked = 0;
    for file in fixture_files() {
        let text = std::fs::read_to_string(&file).expect("read fixture");
        for (n, line) in text.lines().enumerate() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if entry["type"] != "message" {
                continue;
            }
            let raw = &entry["message"];
            let role = raw["role"].as_str().unwrap_or("");
            if !matches!(role, "user" | "assistant" | "toolResult") {
                continue;
            }
            let msg: Message = serde_json::from_value(raw.clone()).unwrap_or_else(|e| {
                panic!("{}:{}: {e}", file.display(), n + 1);
            });
            let back = serde_json::to_value(&msg).expect("serialize");
            assert_eq!(
                &back,
                raw,
                "{}:{} does not round-trip",
                file.display(),
                n + 1
            );
            checked += 1;
        }
    }
    assert!(checked > 1900, "only {checked} messages checked");
}

#[test]
fn assistant_message_with_thinking_code_round_trips() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pi/assistant-message-with-thinking-code.json");
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
    let msg: Message = serde_json::from_value(raw.clone()).expect("parse");
    assert_eq!(serde_json::to_value(&msg).expect("serialize"), raw);
}
