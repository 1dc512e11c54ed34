//! The session layer against pi's files and behaviour: goldens built by pi 0.73.1's
//! `SessionManager`, round trips, the tree, forks, listings, migration, bad input.

use std::path::{Path, PathBuf};

use pi_engine::agent::AgentMessage;
use pi_engine::session::{
    BashExecutionMessage, EntryType, FsyncPolicy, NewSession, SessionEntry, SessionError,
    SessionManager, SessionOptions, convert_to_llm,
};
use pi_engine::{AssistantContent, AssistantMessage, Message, ThinkingLevel, UserMessage};
use serde_json::{Value, json};

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/conformance/session.rs"]
mod driver;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi")
}

/// A writable copy of a fixture in a fresh temp dir.
fn copy_fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let src = [
        fixtures().join(name),
        fixtures().join("session-golden").join(name),
    ]
    .into_iter()
    .find(|p| p.exists())
    .unwrap();
    let dst = dir.path().join(name);
    std::fs::copy(&src, &dst).unwrap();
    (dir, dst)
}

fn assistant(text: &str) -> AssistantMessage {
    AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
        .with_content(vec![AssistantContent::text(text)])
}

#[test]
fn goldens_built_by_pi_match() {
    let dir = fixtures().join("session-golden");
    let mut checked = 0;
    for golden in std::fs::read_dir(&dir).unwrap() {
        let golden = golden.unwrap().path();
        let name = golden.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".context.json") {
            continue;
        }
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(&golden).unwrap()).unwrap();
        let file = expected["file"].as_str().unwrap();
        let (_tmp, copy) = copy_fixture(file);
        let mut sm = SessionManager::open(&copy).unwrap();
        let branch = expected
            .get("branch")
            .map(|b| b.as_str().map(str::to_owned));
        match &branch {
            Some(Some(id)) => sm.branch(id).unwrap(),
            Some(None) => sm.reset_leaf(),
            None => {}
        }
        let ours = driver::describe(&sm, file, branch.as_ref()).unwrap();
        assert_eq!(ours, expected, "{name}");
        checked += 1;
    }
    assert_eq!(checked, 13);
}

#[test]
fn v1_files_open_like_pis_migrated_copies() {
    for base in ["large-session", "before-compaction"] {
        let (_t1, v1) = copy_fixture(&format!("{base}.jsonl"));
        let (_t2, v3) = copy_fixture(&format!("{base}.migrated-v3-by-pi-0.73.1.jsonl"));
        let before = std::fs::read(&v1).unwrap();
        let a = SessionManager::open(&v1).unwrap();
        let b = SessionManager::open(&v3).unwrap();
        assert_eq!(a.file_version(), 1);
        assert_eq!(a.entry_count(), b.entry_count());
        let (ca, cb) = (
            a.build_session_context().unwrap(),
            b.build_session_context().unwrap(),
        );
        assert_eq!(ca.model, cb.model);
        assert_eq!(ca.thinking_level, cb.thinking_level);
        assert_eq!(convert_to_llm(&ca.messages), convert_to_llm(&cb.messages));
        // Opening changed nothing on disk, and the ids are the same every time.
        drop(a);
        assert_eq!(std::fs::read(&v1).unwrap(), before);
        let again = SessionManager::open(&v1).unwrap();
        let ids: Vec<_> = again.entry_ids().map(str::to_owned).collect();
        let a = SessionManager::open(&copy_fixture(&format!("{base}.jsonl")).1).unwrap();
        assert_eq!(a.entry_ids().collect::<Vec<_>>(), ids);
        assert!(
            ids.iter()
                .all(|id| id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()))
        );
    }
}

#[test]
fn first_append_to_a_v1_file_migrates_it_with_a_backup() {
    let (dir, path) = copy_fixture("before-compaction.jsonl");
    let original = std::fs::read(&path).unwrap();
    let mut sm = SessionManager::open(&path).unwrap();
    let before = sm.build_session_context().unwrap();
    let ids: Vec<_> = sm.entry_ids().map(str::to_owned).collect();
    let leaf = sm.leaf_id().unwrap().to_owned();
    sm.append_message(UserMessage::text("after migration"))
        .unwrap();
    assert_eq!(sm.file_version(), 3);

    let backup = dir.path().join("before-compaction.jsonl.v1.bak");
    assert_eq!(
        std::fs::read(&backup).unwrap(),
        original,
        "the original is kept byte for byte"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["version"], 3);
    assert_eq!(text.lines().next().unwrap().matches("\"type\"").count(), 1);
    for line in text.lines().skip(1) {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["id"].is_string() && v.get("parentId").is_some());
        if v["type"] == "compaction" {
            assert!(
                v.get("firstKeptEntryIndex").is_none() && v["firstKeptEntryId"].is_string(),
                "{v}"
            );
        }
    }
    drop(sm);

    let sm = SessionManager::open(&path).unwrap();
    assert_eq!(sm.file_version(), 3);
    let after: Vec<_> = sm.entry_ids().map(str::to_owned).collect();
    assert_eq!(
        &after[..ids.len()],
        &ids[..],
        "migrated ids are the ones the index showed"
    );
    let ctx = sm.build_session_context().unwrap();
    assert_eq!(ctx.messages.len(), before.messages.len() + 1);
    assert_eq!(
        sm.entry(sm.leaf_id().unwrap())
            .unwrap()
            .unwrap()
            .parent_id(),
        Some(leaf.as_str())
    );
}

#[test]
fn v2_hook_messages_become_custom() {
    let (_t, path) = copy_fixture("synthetic-v2-hookmessage.jsonl");
    let sm = SessionManager::open(&path).unwrap();
    let entry = sm.entry("e0000002").unwrap().unwrap();
    assert_eq!(entry.as_message().unwrap().role(), "custom");
    let llm = convert_to_llm(&sm.build_session_context().unwrap().messages);
    let Message::User(u) = &llm[1] else { panic!() };
    assert_eq!(u.content.text(), "Hook says hello");
}

fn every_kind(sm: &mut SessionManager) -> Vec<String> {
    let mut ids = vec![
        sm.append_model_change("anthropic", "claude-sonnet-4-5")
            .unwrap(),
        sm.append_thinking_level_change(ThinkingLevel::High)
            .unwrap(),
        sm.append_session_info("  My session  ").unwrap(),
        sm.append_message(UserMessage::text("Hello")).unwrap(),
        sm.append_message(assistant("Hi")).unwrap(),
    ];
    let mut bash = BashExecutionMessage::new("ls", "a.txt\n", Some(0));
    bash.timestamp = 5;
    ids.push(
        sm.append_message(AgentMessage::custom(&bash).unwrap())
            .unwrap(),
    );
    ids.push(
        sm.append_custom_entry("ext", Some(json!({"n": 1})))
            .unwrap(),
    );
    ids.push(
        sm.append_custom_message_entry("ext", "injected", false, Some(json!({"k": "v"})))
            .unwrap(),
    );
    ids.push(sm.append_label_change(&ids[3], Some("start")).unwrap());
    ids.push(
        sm.append_compaction(
            "Summary",
            ids[3].clone(),
            1234,
            Some(json!({"readFiles": []})),
            None,
        )
        .unwrap(),
    );
    ids.push(sm.append_message(UserMessage::text("after")).unwrap());
    ids
}

#[test]
fn written_sessions_read_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionOptions::new()
        .with_session_dir(dir.path())
        .with_fsync(FsyncPolicy::Always)
        .create("/work/project");
    assert!(sm.session_file().is_some());
    assert!(
        !sm.session_file().unwrap().exists(),
        "nothing is written before the first append"
    );
    let ids = every_kind(&mut sm);
    let entries = sm.entries().unwrap();
    let ctx = sm.build_session_context().unwrap();
    let path = sm.session_file().unwrap().to_owned();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.ends_with(&format!("_{}.jsonl", sm.session_id())),
        "{name}"
    );
    drop(sm);

    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), ids.len() + 1);
    for line in text.lines().skip(1) {
        let v: Value = serde_json::from_str(line).unwrap();
        let id = v["id"].as_str().unwrap();
        assert!(id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(
            serde_json::from_value::<SessionEntry>(v.clone())
                .map(|e| serde_json::to_value(e).unwrap())
                .unwrap(),
            v
        );
    }

    let sm = SessionManager::open(&path).unwrap();
    assert_eq!(sm.entries().unwrap(), entries);
    assert_eq!(sm.build_session_context().unwrap(), ctx);
    assert_eq!(sm.session_name(), Some("My session"));
    assert_eq!(sm.label(&ids[3]), Some("start"));
    assert_eq!(sm.leaf_id(), Some(ids[ids.len() - 1].as_str()));
    assert_eq!(ctx.thinking_level, ThinkingLevel::High);
    assert_eq!(ctx.model.as_ref().unwrap().provider, "anthropic");
    // summary, then from the kept user message on: user, assistant, bash, custom, after
    let roles: Vec<_> = ctx.messages.iter().map(AgentMessage::role).collect();
    assert_eq!(
        roles,
        [
            "compactionSummary",
            "user",
            "assistant",
            "bashExecution",
            "custom",
            "user"
        ]
    );
    let llm = convert_to_llm(&ctx.messages);
    let Message::User(u) = &llm[3] else { panic!() };
    assert_eq!(u.content.text(), "Ran `ls`\n```\na.txt\n\n```");
}

#[test]
fn branches_tree_and_navigation() {
    let mut sm = SessionManager::in_memory("/p");
    let root = sm.append_message(UserMessage::text("q")).unwrap();
    let a = sm.append_message(assistant("a1")).unwrap();
    sm.branch(&root).unwrap();
    assert_eq!(
        sm.build_session_context().unwrap().messages.len(),
        1,
        "branch() only moves the leaf"
    );
    let b = sm.append_message(assistant("b1")).unwrap();
    assert_eq!(
        sm.entry(&b).unwrap().unwrap().parent_id(),
        Some(root.as_str())
    );
    let summary = sm
        .branch_with_summary(Some(&root), "explored b", None, None)
        .unwrap();
    let ctx = sm.build_session_context().unwrap();
    assert_eq!(
        ctx.messages
            .iter()
            .map(AgentMessage::role)
            .collect::<Vec<_>>(),
        ["user", "branchSummary"]
    );
    let tree = sm.tree();
    assert_eq!(tree.roots().len(), 1);
    let node = tree.roots().next().unwrap();
    let kids: Vec<_> = tree.children(node).map(|c| c.id.clone()).collect();
    assert_eq!(kids, [a.clone(), b.clone(), summary.clone()]);
    assert_eq!(
        tree.get(&summary).unwrap().entry_type,
        EntryType::BranchSummary
    );
    assert_eq!(sm.children(&root).unwrap().len(), 3);
    assert_eq!(sm.branch_path(Some(&b)).unwrap().len(), 2);
    assert!(matches!(
        sm.branch("nope"),
        Err(SessionError::EntryNotFound { .. })
    ));
    assert!(matches!(
        sm.append_label_change("nope", Some("x")),
        Err(SessionError::EntryNotFound { .. })
    ));
    sm.reset_leaf();
    assert!(sm.build_session_context().unwrap().messages.is_empty());
    let new_root = sm.append_message(UserMessage::text("again")).unwrap();
    assert_eq!(sm.tree().roots().len(), 2);
    assert_eq!(sm.entry(&new_root).unwrap().unwrap().parent_id(), None);
    // branch_with_summary from before the first entry
    let s = sm
        .branch_with_summary(None, "from scratch", None, Some(true))
        .unwrap();
    let SessionEntry::BranchSummary(e) = sm.entry(&s).unwrap().unwrap() else {
        panic!()
    };
    assert_eq!(e.from_id, "root");
    assert_eq!(e.parent_id, None);
}

#[test]
fn create_branched_session_keeps_the_path_and_its_labels() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/p");
    let q = sm.append_message(UserMessage::text("q")).unwrap();
    let a = sm.append_message(assistant("a")).unwrap();
    sm.append_label_change(&q, Some("question")).unwrap();
    sm.branch(&q).unwrap();
    let other = sm.append_message(assistant("other")).unwrap();
    sm.append_label_change(&other, Some("other branch"))
        .unwrap();
    let source = sm.session_file().unwrap().to_owned();

    let new_file = sm.create_branched_session(&a).unwrap().unwrap();
    assert_ne!(new_file, source);
    assert_eq!(sm.session_file(), Some(new_file.as_path()));
    assert_eq!(
        sm.header().parent_session.as_deref(),
        Some(source.to_str().unwrap())
    );
    let ids: Vec<_> = sm.entry_ids().map(str::to_owned).collect();
    assert_eq!(&ids[..2], &[q.clone(), a.clone()]);
    assert_eq!(ids.len(), 3, "one label re-materialized");
    assert_eq!(sm.label(&q), Some("question"));
    assert_eq!(sm.label(&other), None);
    assert_eq!(sm.build_session_context().unwrap().messages.len(), 2);
    // The source is untouched and unlocked.
    drop(sm);
    assert_eq!(SessionManager::open(&source).unwrap().entry_count(), 5);

    let mut mem = SessionManager::in_memory("/p");
    let q = mem.append_message(UserMessage::text("q")).unwrap();
    mem.append_label_change(&q, Some("l")).unwrap();
    let a = mem.append_message(assistant("a")).unwrap();
    assert_eq!(mem.create_branched_session(&a).unwrap(), None);
    assert_eq!(mem.entry_count(), 3);
    assert_eq!(mem.label(&q), Some("l"));
}

#[test]
fn fork_list_and_continue_in_pis_layout() {
    let agent = tempfile::tempdir().unwrap();
    let opts = SessionOptions::new().with_agent_dir(agent.path());
    let cwd = "/home/dev/proj";
    let dir = opts.session_dir_for(cwd);
    assert_eq!(dir, agent.path().join("sessions").join("--home-dev-proj--"));

    assert!(opts.list(cwd).unwrap().is_empty());
    let mut first = opts.continue_recent(cwd).unwrap();
    first
        .append_message(UserMessage::text("first prompt"))
        .unwrap();
    first.append_message(assistant("ok")).unwrap();
    first.append_session_info("named").unwrap();
    let first_path = first.session_file().unwrap().to_owned();
    assert!(first_path.starts_with(&dir));
    drop(first);

    let mut second = opts.create(cwd);
    second
        .append_message(UserMessage::text("second prompt"))
        .unwrap();
    let second_path = second.session_file().unwrap().to_owned();
    drop(second);
    std::fs::write(dir.join("not-a-session.jsonl"), "hello\n").unwrap();

    let list = opts.list(cwd).unwrap();
    assert_eq!(list.len(), 2);
    let info = list.iter().find(|i| i.path == first_path).unwrap();
    assert_eq!(info.first_message, "first prompt");
    assert_eq!(info.message_count, 2);
    assert_eq!(info.name.as_deref(), Some("named"));
    assert_eq!(info.cwd, cwd);
    assert_eq!(opts.list_all().unwrap().len(), 2);

    let recent = opts.continue_recent(cwd).unwrap();
    assert_eq!(recent.session_file(), Some(second_path.as_path()));
    drop(recent);

    let fork = opts.fork_from(&first_path, "/other/place").unwrap();
    assert_eq!(fork.cwd(), "/other/place");
    assert_eq!(
        fork.header().parent_session.as_deref(),
        Some(first_path.to_str().unwrap())
    );
    assert_eq!(fork.entry_count(), 3);
    assert!(
        fork.session_file()
            .unwrap()
            .starts_with(opts.session_dir_for("/other/place"))
    );
    // forking a v1 file writes migrated entries
    let (_t, v1) = copy_fixture("large-session.jsonl");
    let fork = opts.fork_from(&v1, cwd).unwrap();
    assert_eq!(fork.file_version(), 3);
    let original = SessionManager::open(&v1).unwrap();
    assert_eq!(
        fork.entry_ids().collect::<Vec<_>>(),
        original.entry_ids().collect::<Vec<_>>()
    );
}

#[test]
fn new_session_and_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/p");
    sm.append_message(UserMessage::text("x")).unwrap();
    let old = sm.session_id().to_owned();
    let path = sm
        .new_session(
            NewSession::new()
                .with_id("my-id")
                .with_parent_session("/elsewhere.jsonl"),
        )
        .unwrap();
    assert_eq!(sm.session_id(), "my-id");
    assert_ne!(old, "my-id");
    assert_eq!(
        sm.header().parent_session.as_deref(),
        Some("/elsewhere.jsonl")
    );
    assert!(path.to_string_lossy().ends_with("_my-id.jsonl"));
    assert_eq!(sm.entry_count(), 0);
    let mem = SessionManager::in_memory("/p");
    assert!(!mem.is_persisted());
    assert_eq!(mem.session_file(), None);
}

#[test]
fn torn_and_corrupt_lines_are_skipped_and_appends_stay_valid() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/p");
    let a = sm.append_message(UserMessage::text("one")).unwrap();
    let b = sm.append_message(assistant("two")).unwrap();
    let path = sm.session_file().unwrap().to_owned();
    drop(sm);
    // A bad edit in the middle and a write torn at the end.
    let mut text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    text = format!("{}\n{{garbage\n{}\n{}", lines[0], lines[1], lines[2]);
    text.push_str("\n{\"type\":\"message\",\"id\":\"deadbeef\",\"parentId\":");
    std::fs::write(&path, &text).unwrap();
    let before = std::fs::read(&path).unwrap();

    let mut sm = SessionManager::open(&path).unwrap();
    assert_eq!(sm.entry_ids().collect::<Vec<_>>(), [a.as_str(), b.as_str()]);
    let c = sm.append_message(UserMessage::text("three")).unwrap();
    drop(sm);
    let after = std::fs::read(&path).unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "nothing already in the file changed"
    );
    let sm = SessionManager::open(&path).unwrap();
    assert_eq!(
        sm.entry_ids().collect::<Vec<_>>(),
        [a.as_str(), b.as_str(), c.as_str()]
    );
    assert_eq!(sm.build_session_context().unwrap().messages.len(), 3);
}

#[test]
fn bad_files_give_typed_errors_and_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("prose.jsonl", "this is not json\nneither is this\n"),
        (
            "entry-first.jsonl",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
        ),
        ("array.jsonl", "[1,2,3]\n"),
    ];
    for (name, content) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        assert!(
            matches!(
                SessionManager::open(&path),
                Err(SessionError::NotASession { .. })
            ),
            "{name}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            content,
            "pi would truncate {name}"
        );
    }
    let v4 = dir.path().join("v4.jsonl");
    std::fs::write(
        &v4,
        "{\"type\":\"session\",\"version\":4,\"id\":\"x\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
    )
    .unwrap();
    let err = SessionManager::open(&v4).unwrap_err();
    assert!(
        matches!(err, SessionError::UnsupportedVersion { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("version 4"));

    // An empty file is a new session, written into that file.
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let mut sm = SessionManager::open(&empty).unwrap();
    sm.append_message(UserMessage::text("hi")).unwrap();
    drop(sm);
    let sm = SessionManager::open(&empty).unwrap();
    assert_eq!(sm.entry_count(), 1);
}

#[test]
fn orphans_and_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let user = |id: &str, parent: Value| {
        json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-01-01T00:00:00.000Z",
               "message":{"role":"user","content":id,"timestamp":1}})
        .to_string()
    };
    let lines = [
        json!({"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}).to_string(),
        user("aaaaaaaa", json!("bbbbbbbb")),
        user("bbbbbbbb", json!("aaaaaaaa")),
        user("cccccccc", json!("cccccccc")),
        user("dddddddd", json!("missing0")),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let mut sm = SessionManager::open(&path).unwrap();
    // pi would loop forever on the a <-> b cycle; here the walk stops.
    sm.branch("aaaaaaaa").unwrap();
    assert_eq!(sm.build_session_context().unwrap().messages.len(), 2);
    sm.branch("cccccccc").unwrap();
    assert_eq!(sm.build_session_context().unwrap().messages.len(), 1);
    sm.branch("dddddddd").unwrap();
    let ctx = sm.build_session_context().unwrap();
    assert_eq!(ctx.messages.len(), 1);
    assert_eq!(ctx.model, None);
    let roots: Vec<_> = sm.tree().roots().map(|n| n.id.clone()).collect();
    assert_eq!(roots, ["cccccccc", "dddddddd"]);
    assert_eq!(sm.children("missing0").unwrap().len(), 1);
}

#[test]
fn a_second_writer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/p");
    sm.append_message(UserMessage::text("x")).unwrap();
    let path = sm.session_file().unwrap().to_owned();
    let err = SessionManager::open(&path).unwrap_err();
    assert!(matches!(err, SessionError::Locked { .. }), "{err}");
    // Readers are fine, and cannot write.
    let mut reader = SessionOptions::new().read_only().open(&path).unwrap();
    assert_eq!(reader.entry_count(), 1);
    assert!(matches!(
        reader.append_message(UserMessage::text("y")),
        Err(SessionError::ReadOnly { .. })
    ));
    drop(sm);
    assert!(
        SessionManager::open(&path).is_ok(),
        "the lock goes with the writer"
    );
}

#[test]
fn entries_keep_unknown_fields_and_types() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let lines = [
        json!({"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/","future":1}),
        json!({"type":"message","id":"aaaaaaaa","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",
               "message":{"role":"user","content":"x","timestamp":1,"newField":[1]},"envelopeExtra":"k"}),
        json!({"type":"hologram","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"2026-01-01T00:00:02.000Z","depth":3}),
    ];
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&path, &text).unwrap();
    let mut sm = SessionManager::open(&path).unwrap();
    assert_eq!(serde_json::to_value(sm.header()).unwrap(), lines[0]);
    for (id, line) in [("aaaaaaaa", &lines[1]), ("bbbbbbbb", &lines[2])] {
        assert_eq!(
            serde_json::to_value(sm.entry(id).unwrap().unwrap()).unwrap(),
            *line
        );
    }
    assert_eq!(sm.entry_type("bbbbbbbb"), Some(EntryType::Unknown));
    assert_eq!(sm.leaf_id(), Some("bbbbbbbb"));
    sm.append_message(UserMessage::text("y")).unwrap();
    // forks copy lines byte for byte
    let leaf = sm.leaf_id().unwrap().to_owned();
    let new = sm.create_branched_session(&leaf).unwrap().unwrap();
    let forked = std::fs::read_to_string(new).unwrap();
    assert!(forked.contains(&lines[1].to_string()) && forked.contains(&lines[2].to_string()));
}

#[test]
fn managers_move_between_threads() {
    fn check<T: Send + Sync>() {}
    check::<SessionManager>();
    check::<SessionError>();
    let mut sm = SessionManager::in_memory("/p");
    sm.append_message(UserMessage::text("x")).unwrap();
    let n = std::thread::spawn(move || sm.build_session_context().unwrap().messages.len())
        .join()
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn open_with_context_is_open_then_build_context() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [fixtures(), fixtures().join("session-golden")] {
        for f in std::fs::read_dir(dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "jsonl") {
                files.push(f);
            }
        }
    }
    // One written here: compactions between branches, a corrupt line, a message of the
    // wrong shape, a custom role, and a torn last line.
    let tmp = tempfile::tempdir().unwrap();
    let mut sm = SessionOptions::new()
        .with_session_dir(tmp.path())
        .create("/p");
    let first = sm.append_message(UserMessage::text("one")).unwrap();
    sm.append_message(assistant("two")).unwrap();
    sm.append_compaction("summary", &first, 100, None, None)
        .unwrap();
    sm.append_message(UserMessage::text("three")).unwrap();
    every_kind(&mut sm);
    let path = sm.session_file().unwrap().to_owned();
    drop(sm);
    let mut text = std::fs::read_to_string(&path).unwrap();
    let last = text.lines().last().unwrap().to_owned();
    let parent = serde_json::from_str::<Value>(&last).unwrap()["id"].clone();
    text.push_str("{\"type\":\"message\",\"id\":\"bad1\", oops\n");
    text.push_str(&format!(
        "{{\"type\":\"message\",\"id\":\"bad2\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\"}}}}\n"
    ));
    text.push_str(
        "{\"type\":\"message\",\"id\":\"ok3\",\"parentId\":\"bad2\",\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{\"timestamp\":5,\"role\":\"note\",\"x\":[1]}}\n",
    );
    text.push_str("{\"type\":\"message\",\"id\":\"torn\"");
    std::fs::write(&path, text).unwrap();
    files.push(path);

    for f in &files {
        // (Some fixtures are not sessions.)
        let Ok(plain) = SessionOptions::new().read_only().open(f) else {
            continue;
        };
        let expected = plain.build_session_context().unwrap();
        let (sm, context) = SessionOptions::new()
            .read_only()
            .open_with_context(f)
            .unwrap();
        assert_eq!(context, expected, "{}", f.display());
        assert_eq!(sm.entry_count(), plain.entry_count(), "{}", f.display());
        assert_eq!(sm.leaf_id(), plain.leaf_id(), "{}", f.display());
        assert_eq!(sm.build_session_context().unwrap(), expected);
    }
    assert!(files.len() > 10);
}
