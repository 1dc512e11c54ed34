//! Session files against adversarial content (issue 11): deeply nested entries, interrupted
//! migrations, torn headers, oversized lines.

use std::path::Path;

use pi_engine::session::{SessionEntry, SessionError, SessionManager, SessionOptions};
use pi_engine::{AssistantContent, AssistantMessage, UserMessage};
use serde_json::{Value, json};

/// `depth` levels of alternating objects and arrays around a number.
fn nested(depth: usize) -> Value {
    let mut v = json!(1);
    for level in 0..depth {
        v = if level % 2 == 0 {
            json!({ "k": v })
        } else {
            json!([v])
        };
    }
    v
}

/// Drops a nested value without deep recursion.
fn drop_flat(value: Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a),
            Value::Object(o) => stack.extend(o.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

fn tool_call_reply(args: Value) -> AssistantMessage {
    AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
        .with_content(vec![AssistantContent::tool_call("call_1", "deep", args)])
}

fn args_of(entry: &SessionEntry) -> Value {
    let Some(pi_engine::agent::AgentMessage::Assistant(a)) = entry.as_message() else {
        panic!("not an assistant message: {entry:?}");
    };
    match &a.content[0] {
        AssistantContent::ToolCall(c) => Value::Object(c.arguments.clone()),
        other => panic!("not a tool call: {other:?}"),
    }
}

/// Item 8: whatever depth the crate writes, it reads back — entries, context, reopen, the
/// one-pass open.
#[test]
fn deeply_nested_tool_arguments_read_back() {
    for depth in [126, 127, 128, 129, 300, 1_000] {
        let dir = tempfile::tempdir().unwrap();
        let mut sm = SessionOptions::new()
            .with_session_dir(dir.path())
            .create("/project");
        sm.append_message(UserMessage::text("go deep")).unwrap();
        let args = json!({ "root": nested(depth) });
        let id = sm.append_message(tool_call_reply(args.clone())).unwrap();
        sm.append_message(UserMessage::text("after")).unwrap();
        let path = sm.session_file().unwrap().to_owned();

        // In the writing manager.
        let context = sm
            .build_session_context()
            .unwrap_or_else(|e| panic!("{depth}: {e}"));
        assert_eq!(context.messages.len(), 3, "depth {depth}");
        let entries = sm.entries().unwrap_or_else(|e| panic!("{depth}: {e}"));
        assert!(args_of(&entries[1]) == args, "depth {depth}");
        drop(sm);

        // Reopened, both ways.
        let sm = SessionManager::open(&path).unwrap_or_else(|e| panic!("{depth}: {e}"));
        let entry = sm.entry(&id).unwrap().unwrap();
        assert!(args_of(&entry) == args, "depth {depth}");
        assert_eq!(sm.build_session_context().unwrap().messages.len(), 3);
        drop(sm);
        let (_sm, context) = SessionOptions::new()
            .read_only()
            .open_with_context(&path)
            .unwrap_or_else(|e| panic!("{depth}: {e}"));
        assert_eq!(context.messages.len(), 3, "depth {depth}");
        let listed = SessionOptions::new().list_all_in(dir.path());
        assert_eq!(listed, 1);
        drop_flat(args);
        for e in entries {
            if let SessionEntry::Message(m) = e
                && let pi_engine::agent::AgentMessage::Assistant(a) = m.message
            {
                for c in a.content {
                    if let AssistantContent::ToolCall(c) = c {
                        drop_flat(Value::Object(c.arguments));
                    }
                }
            }
        }
        drop_flat(args_of(&entry));
    }
}

trait ListIn {
    fn list_all_in(&self, dir: &Path) -> usize;
}

impl ListIn for SessionOptions {
    fn list_all_in(&self, dir: &Path) -> usize {
        self.clone()
            .with_session_dir(dir)
            .list("/project")
            .unwrap()
            .len()
    }
}

/// Item 8: an entry whose line is indexed but does not parse as a whole is its own typed
/// error, not "modified by another program", and the context leaves it out.
#[test]
fn an_unparsable_entry_is_not_an_external_modification() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let lines = [
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","id":"aaaaaaaa","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}"#,
        // A number no double holds: the head parses, the whole entry does not.
        r#"{"type":"message","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"two","timestamp":2,"extra":[1e400]}}"#,
        r#"{"type":"message","id":"cccccccc","parentId":"bbbbbbbb","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"three","timestamp":3}}"#,
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let sm = SessionManager::open(&path).unwrap();
    assert_eq!(sm.entry_count(), 3);
    let err = sm.entry("bbbbbbbb").unwrap_err();
    assert!(
        matches!(&err, SessionError::UnreadableEntry { id, offset, .. } if id == "bbbbbbbb" && *offset > 0),
        "{err}"
    );
    assert!(matches!(
        sm.entries().unwrap_err(),
        SessionError::UnreadableEntry { .. }
    ));
    let context = sm.build_session_context().unwrap();
    assert_eq!(context.messages.len(), 2);
    drop(sm);
    let (_, context) = SessionManager::open_with_context(&path).unwrap();
    assert_eq!(context.messages.len(), 2);
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pi/session-golden")
        .join(name)
}

/// The files of `dir` whose names start with `prefix`, sorted.
fn files_like(dir: &Path, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// Item 9: what an interrupted v2 → v3 migration leaves (its temporary files, old style
/// `.migrating-<pid>` and the fixed `.migrating`, and a backup already taken) is cleaned
/// when the file is next opened for writing, and the retry adds no second backup.
#[test]
fn an_interrupted_migration_leaves_nothing_behind_on_retry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::copy(fixture("synthetic-v2-hookmessage.jsonl"), &path).unwrap();
    let original = std::fs::read(&path).unwrap();
    // A killed migration: a backup was taken, a temporary file was half written.
    std::fs::write(dir.path().join("s.jsonl.v2.bak"), &original).unwrap();
    std::fs::write(dir.path().join("s.jsonl.migrating-4242"), &original[..20]).unwrap();
    std::fs::write(dir.path().join("s.jsonl.migrating"), &original[..10]).unwrap();
    // Not ours: kept.
    std::fs::write(dir.path().join("s.jsonl.migrating-notes"), b"keep").unwrap();
    std::fs::write(dir.path().join("other.jsonl.migrating-1"), b"keep").unwrap();

    // A reader cleans nothing.
    drop(SessionOptions::new().read_only().open(&path).unwrap());
    assert_eq!(files_like(dir.path(), "s.jsonl.migrating").len(), 3);

    let mut sm = SessionManager::open(&path).unwrap();
    assert_eq!(
        files_like(dir.path(), "s.jsonl.migrating"),
        ["s.jsonl.migrating-notes"],
        "leftovers are removed at a writable open"
    );
    let entries = sm.entry_count();
    sm.append_message(UserMessage::text("after")).unwrap();
    assert_eq!(sm.file_version(), 3);
    drop(sm);
    assert_eq!(
        files_like(dir.path(), "s.jsonl."),
        ["s.jsonl.migrating-notes", "s.jsonl.v2.bak"],
        "the identical backup is reused"
    );
    assert!(dir.path().join("other.jsonl.migrating-1").exists());
    assert_eq!(
        std::fs::read(dir.path().join("s.jsonl.v2.bak")).unwrap(),
        original
    );
    assert_eq!(
        SessionManager::open(&path).unwrap().entry_count(),
        entries + 1
    );

    // A backup of different content is not overwritten: the next name is taken.
    let path2 = dir.path().join("t.jsonl");
    std::fs::copy(fixture("synthetic-v2-hookmessage.jsonl"), &path2).unwrap();
    std::fs::write(dir.path().join("t.jsonl.v2.bak"), b"something else").unwrap();
    SessionManager::open(&path2)
        .unwrap()
        .append_message(UserMessage::text("x"))
        .unwrap();
    assert_eq!(
        files_like(dir.path(), "t.jsonl."),
        ["t.jsonl.v2.bak", "t.jsonl.v2.bak.1"]
    );
    assert_eq!(
        std::fs::read(dir.path().join("t.jsonl.v2.bak.1")).unwrap(),
        original
    );
}

const TORN_ID: &str = "0193e5a0-1111-7000-8000-000000000abc";

/// A session file named like the crate names them, whose header line is torn.
fn torn_header_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join(format!("2025-01-01T00-00-00-000Z_{TORN_ID}.jsonl"));
    let lines = [
        // The header, cut mid-write.
        r#"{"type":"session","version":3,"id":"0193e5a0-1111-7000-8000-0000"#,
        r#"{"type":"message","id":"aaaaaaaa","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}"#,
        r#"{"type":"message","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"two"}],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}}"#,
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// Item 9: a torn header line no longer makes the file unopenable: it opens with a header
/// made in memory (the id from the file name), the file is untouched until the first
/// append, which backs it up and rewrites it with a real header.
#[test]
fn a_torn_header_opens_and_is_repaired_at_the_first_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = torn_header_file(dir.path());
    let before = std::fs::read(&path).unwrap();

    let sm = SessionOptions::new()
        .read_only()
        .with_cwd("/work")
        .open(&path)
        .unwrap();
    assert_eq!(sm.session_id(), TORN_ID);
    assert_eq!(sm.entry_count(), 2);
    assert_eq!(sm.build_session_context().unwrap().messages.len(), 2);
    drop(sm);
    let sm = SessionManager::open(&path).unwrap();
    assert_eq!(sm.leaf_id(), Some("bbbbbbbb"));
    drop(sm);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "opening writes nothing"
    );

    let mut sm = SessionOptions::new().with_cwd("/work").open(&path).unwrap();
    let id = sm.append_message(UserMessage::text("three")).unwrap();
    drop(sm);
    let backup = dir.path().join(format!(
        "{}.header.bak",
        path.file_name().unwrap().to_string_lossy()
    ));
    assert_eq!(std::fs::read(&backup).unwrap(), before);
    let text = std::fs::read_to_string(&path).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["type"], "session");
    assert_eq!(header["id"], TORN_ID);
    assert_eq!(header["cwd"], "/work");
    assert_eq!(header["version"], 3);
    assert_eq!(text.lines().count(), 4);
    let sm = SessionManager::open(&path).unwrap();
    assert_eq!(sm.entry_count(), 3);
    assert_eq!(sm.leaf_id(), Some(id.as_str()));
    assert_eq!(sm.build_session_context().unwrap().messages.len(), 3);
    assert_eq!(
        files_like(dir.path(), "2025").len(),
        2,
        "file and its backup only"
    );

    // Garbage followed by no entry is still not a session.
    let junk = dir.path().join("junk.jsonl");
    std::fs::write(&junk, "not json\n{\"a\":1}\n").unwrap();
    assert!(matches!(
        SessionManager::open(&junk).unwrap_err(),
        SessionError::NotASession { .. }
    ));
}

/// Item 11: a line over the bound is refused at write with a typed error (nothing written,
/// the session goes on), and skipped with a warning at read, as is a longer line in the file.
#[test]
fn lines_over_the_bound_are_refused_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let options = SessionOptions::new()
        .with_session_dir(dir.path())
        .with_max_line_bytes(64 << 10);
    assert_eq!(options.max_line_bytes(), 64 << 10);
    assert_eq!(SessionOptions::new().max_line_bytes(), 256 << 20);
    let mut sm = options.create("/p");
    let first = sm.append_message(UserMessage::text("small")).unwrap();
    let path = sm.session_file().unwrap().to_owned();
    let size = std::fs::metadata(&path).unwrap().len();
    let err = sm
        .append_message(UserMessage::text("x".repeat(64 << 10)))
        .unwrap_err();
    assert!(
        matches!(err, SessionError::EntryTooLarge { size, limit } if limit == 64 << 10 && size > limit),
        "{err}"
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        size,
        "nothing written"
    );
    assert_eq!(sm.leaf_id(), Some(first.as_str()));
    // Just under the bound is fine.
    let fits = sm
        .append_message(UserMessage::text("y".repeat(60 << 10)))
        .unwrap();
    drop(sm);

    // A file holding a longer line (written by another program, or with a larger bound).
    let mut big = SessionOptions::new().open(&path).unwrap();
    let long = big
        .append_message(UserMessage::text("z".repeat(1 << 20)))
        .unwrap();
    let last = big.append_message(UserMessage::text("last")).unwrap();
    drop(big);
    let sm = options.open(&path).unwrap();
    let ids: Vec<&str> = sm.entry_ids().collect();
    assert_eq!(ids, [first.as_str(), fits.as_str(), last.as_str()]);
    assert!(!ids.contains(&long.as_str()));
    // The skipped entry's child is an orphan root, as for any missing parent.
    let context = sm.build_session_context().unwrap();
    assert_eq!(context.messages.len(), 1);
    drop(sm);
    let (_, context) = options.open_with_context(&path).unwrap();
    assert_eq!(context.messages.len(), 1);
    // With the default bound it is all there.
    assert_eq!(SessionManager::open(&path).unwrap().entry_count(), 4);
}

/// The hidden entry point the fuzz targets call: one line, every parse the reader does.
#[test]
fn parse_line_reads_what_the_reader_reads() {
    let deep = format!(
        r#"{{"type":"custom","id":"abcd0123","parentId":null,"timestamp":"t","customType":"x","data":{}1{}}}"#,
        "[".repeat(1000),
        "]".repeat(1000)
    );
    let entry = pi_engine::session::parse_line(deep.as_bytes()).unwrap();
    assert_eq!(entry.id(), "abcd0123");
    let message = br#"{"type":"message","id":"m1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#;
    assert!(
        pi_engine::session::parse_line(message)
            .unwrap()
            .as_message()
            .is_some()
    );
    for bad in [
        &b"{"[..],
        b"[]",
        b"{\"type\":\"message\"}",
        b"\xff\xfe",
        b"",
    ] {
        assert!(pi_engine::session::parse_line(bad).is_err());
    }
}
