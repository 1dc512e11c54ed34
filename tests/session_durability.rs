//! Durability under crashes: a writer process (this test binary, re-executed) is killed
//! (SIGKILL) at random points while it appends, 200 times, over a few files. After each kill
//! the file must open, hold every entry the writer had acknowledged, skip only torn lines,
//! and take further appends that read back. While the writer lives, a second writer must be
//! refused. The fsync policy is tested apart, through a hook on the sync call.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pi_engine::UserMessage;
use pi_engine::session::{FsyncPolicy, SessionError, SessionManager, SessionOptions, SyncHook};

const CHILD_ENV: &str = "PI_ENGINE_DURABILITY_WRITER";
const MIGRATION_ENV: &str = "PI_ENGINE_DURABILITY_MIGRATOR";

/// Held by the tests that spawn writer processes, one at a time: a process forked by one
/// test inherits, until it execs, the file descriptions the other has open — and with them
/// the writer's lock, which would show as `Locked` to the other test.
static SPAWNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The id in a line of the writer's output (libtest may print the test's name before the
/// first one, on the same line).
fn ack(line: &str) -> Option<&str> {
    line.find("ACK ").map(|i| &line[i + 4..])
}

/// The writer process: appends entries of varied sizes forever, printing `ACK <id>` after
/// each append returns. Run only by `kill_the_writer_mid_append_many_times`.
#[test]
#[ignore = "helper process of kill_the_writer_mid_append_many_times"]
fn writer_process() {
    // The child half of its parent test; run on its own (`--include-ignored`), it has no
    // parent environment and nothing to do.
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let mut sm = SessionManager::open(&path).expect("open");
    let mut out = std::io::stdout().lock();
    let mut seed = std::process::id() as u64;
    loop {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // Mostly small entries, now and then a large one (whose write a kill can tear).
        let r = (seed >> 33) as usize;
        let size = if r.is_multiple_of(16) {
            20_000 + r % 300_000
        } else {
            50 + r % 2_000
        };
        let id = sm
            .append_message(UserMessage::text("x".repeat(size)))
            .expect("append");
        writeln!(out, "ACK {id}")
            .and_then(|()| out.flush())
            .expect("stdout");
    }
}

fn pseudo_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn kill_the_writer_mid_append_many_times() {
    let _one_at_a_time = SPAWNING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut acked: Vec<String> = Vec::new();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut torn_total = 0;
    let mut acked_total = 0;
    let mut early_kills = 0;
    const ROUNDS: usize = 200;
    // A new file every so many rounds keeps each reopen cheap.
    const ROUNDS_PER_FILE: usize = 25;
    let started_all = Instant::now();

    for round in 0..ROUNDS {
        let path = dir
            .path()
            .join(format!("crash-{}.jsonl", round / ROUNDS_PER_FILE));
        if round % ROUNDS_PER_FILE == 0 {
            acked.clear();
        }
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "writer_process",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        if pseudo_random(&mut rng).is_multiple_of(8) {
            // Now and then: killed at once, possibly while it opens the file.
            early_kills += 1;
            std::thread::sleep(Duration::from_micros(pseudo_random(&mut rng) % 3_000));
        } else {
            // Wait for the writer to be appending, then let it run a random while.
            let started = Instant::now();
            loop {
                let line = lines.next().expect("writer exited early").unwrap();
                if let Some(id) = ack(&line) {
                    acked.push(id.to_owned());
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "writer never appended"
                );
            }
            let err = SessionManager::open(&path).unwrap_err();
            assert!(
                matches!(err, SessionError::Locked { .. }),
                "round {round}: {err}"
            );
            std::thread::sleep(Duration::from_micros(pseudo_random(&mut rng) % 8_000));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        for line in lines {
            if let Some(id) = ack(&line.unwrap()) {
                acked.push(id.to_owned());
            }
        }

        if !path.exists() {
            // Killed before its first append created the file.
            assert!(acked.is_empty(), "round {round}");
            continue;
        }
        // Every line that is not JSON is a torn write, and only those are skipped.
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let nonblank: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        if nonblank.is_empty() {
            // Killed after the file was created, before its header was written: nothing was
            // acknowledged, and opening it starts a new session (as for a missing file).
            assert!(acked.is_empty(), "round {round}");
            continue;
        }
        let torn = nonblank
            .iter()
            .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
            .count();
        torn_total += torn;

        let mut sm = SessionManager::open(&path).unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(sm.entry_count(), nonblank.len() - 1 - torn, "round {round}");
        let ids: std::collections::HashSet<&str> = sm.entry_ids().collect();
        for id in &acked {
            assert!(
                ids.contains(id.as_str()),
                "round {round}: acknowledged entry {id} lost"
            );
        }
        assert_eq!(
            sm.build_session_context().unwrap().messages.len(),
            sm.entry_count()
        );
        // An append after the crash lands on a line of its own and reads back.
        let id = sm
            .append_message(UserMessage::text(format!("after crash {round}")))
            .unwrap();
        acked_total += acked.len();
        acked.push(id.clone());
        drop(sm);
        let sm = SessionManager::open(&path).unwrap();
        assert_eq!(sm.leaf_id(), Some(id.as_str()));
        assert!(sm.entry(&id).unwrap().is_some());
    }
    eprintln!(
        "{ROUNDS} kills ({early_kills} early) in {:?}, {acked_total} acknowledged entries checked, {torn_total} torn lines seen",
        started_all.elapsed()
    );
}

/// The fsync policy, through the hook on the sync call: `Always` syncs once per append (the
/// first append's header and entry in one write, one sync), `Never` not at all; a failed
/// sync is a typed error for that append, which is then not acknowledged — the leaf stays,
/// the line is taken back out of the file — and the session goes on.
#[test]
fn every_append_is_synced_and_a_failed_sync_acknowledges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let fail = Arc::new(AtomicBool::new(false));
    let hook = {
        let (calls, fail) = (calls.clone(), fail.clone());
        SyncHook::new(move |_path| {
            calls.fetch_add(1, Ordering::SeqCst);
            if fail.load(Ordering::SeqCst) {
                Err(std::io::Error::other("injected EIO"))
            } else {
                Ok(())
            }
        })
    };
    let options = SessionOptions::new()
        .with_session_dir(dir.path())
        .with_fsync(FsyncPolicy::Always)
        .with_sync_hook(hook.clone());
    let mut sm = options.create("/p");
    let mut acked = Vec::new();
    for i in 0..3 {
        acked.push(
            sm.append_message(UserMessage::text(format!("m{i}")))
                .unwrap(),
        );
        assert_eq!(calls.load(Ordering::SeqCst), i + 1);
    }
    let path = sm.session_file().unwrap().to_owned();
    let len = std::fs::metadata(&path).unwrap().len();

    fail.store(true, Ordering::SeqCst);
    let err = sm.append_message(UserMessage::text("lost")).unwrap_err();
    assert!(matches!(err, SessionError::Sync { .. }), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(sm.leaf_id(), Some(acked[2].as_str()));
    assert_eq!(sm.entry_count(), 3);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        len,
        "taken back out"
    );

    fail.store(false, Ordering::SeqCst);
    let next = sm.append_message(UserMessage::text("m3")).unwrap();
    acked.push(next.clone());
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    drop(sm);
    let sm = SessionManager::open(&path).unwrap();
    assert_eq!(sm.entry_ids().collect::<Vec<_>>(), acked);
    let branch = sm.branch_path(None).unwrap();
    assert_eq!(branch.len(), 4, "m3 follows m2");
    drop(sm);

    // A failed first append (header and entry) leaves an empty file that opens as new.
    fail.store(true, Ordering::SeqCst);
    let mut first = options.create("/p");
    assert!(matches!(
        first.append_message(UserMessage::text("x")).unwrap_err(),
        SessionError::Sync { .. }
    ));
    let first_path = first.session_file().unwrap().to_owned();
    drop(first);
    assert_eq!(std::fs::metadata(&first_path).unwrap().len(), 0);
    assert_eq!(SessionManager::open(&first_path).unwrap().entry_count(), 0);
    fail.store(false, Ordering::SeqCst);

    // `Never` does not sync.
    let before = calls.load(Ordering::SeqCst);
    let mut never = SessionOptions::new()
        .with_session_dir(dir.path())
        .with_sync_hook(hook)
        .create("/p");
    never.append_message(UserMessage::text("a")).unwrap();
    never.append_message(UserMessage::text("b")).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), before);
}

/// The migrating process: opens a version 2 file and appends once (which rewrites the file
/// as version 3 first), then prints `DONE`. Run only by
/// `kill_the_writer_mid_migration_many_times`.
#[test]
#[ignore = "helper process of kill_the_writer_mid_migration_many_times"]
fn migration_process() {
    // The child half of its parent test; run on its own (`--include-ignored`), it has no
    // parent environment and nothing to do.
    let Some(path) = std::env::var_os(MIGRATION_ENV) else {
        return;
    };
    let mut sm = SessionManager::open(&path).expect("open");
    sm.append_message(UserMessage::text("after migration"))
        .expect("append");
    println!("DONE");
}

fn run_migrator(exe: &std::path::Path, path: &std::path::Path) -> std::process::Child {
    Command::new(exe)
        .args([
            "--exact",
            "migration_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MIGRATION_ENV, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// A version 2 file of `entries` entries of about 2 KB.
fn v2_file(entries: usize) -> Vec<u8> {
    let mut out = String::from(
        r#"{"type":"session","version":2,"id":"019b7a00-0000-7000-8000-000000000002","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp/p"}"#,
    );
    out.push('\n');
    let text = "y".repeat(2000);
    for i in 0..entries {
        let parent = if i == 0 {
            "null".to_owned()
        } else {
            format!("\"{:08x}\"", i - 1)
        };
        out.push_str(&format!(
            r#"{{"type":"message","id":"{i:08x}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"hookMessage","customType":"h","content":"{text}","display":true,"timestamp":1}}}}"#
        ));
        out.push('\n');
    }
    out.into_bytes()
}

/// Item 9 of issue 11: a writer killed (SIGKILL) at random moments while it migrates a
/// version 2 file leaves, once the file is next opened for writing, no temporary file and
/// never more than the one backup of the original; the file always opens with every entry.
#[test]
fn kill_the_writer_mid_migration_many_times() {
    let _one_at_a_time = SPAWNING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.jsonl");
    let exe = std::env::current_exe().unwrap();
    const ENTRIES: usize = 2000;
    let original = v2_file(ENTRIES);
    std::fs::write(&path, &original).unwrap();

    // How long an undisturbed migration takes here.
    let started = Instant::now();
    let mut child = run_migrator(&exe, &path);
    assert!(child.wait().unwrap().success());
    let full = started.elapsed();
    assert_eq!(
        SessionManager::open(&path).unwrap().entry_count(),
        ENTRIES + 1
    );

    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let (mut interrupted, mut completed) = (0, 0);
    for round in 0..15 {
        // Start again from the version 2 file (the backup of it is already there).
        std::fs::write(&path, &original).unwrap();
        let mut child = run_migrator(&exe, &path);
        let wait = full.as_micros() as u64 * 2;
        std::thread::sleep(Duration::from_micros(pseudo_random(&mut rng) % wait.max(1)));
        let _ = child.kill();
        child.wait().unwrap();
        let done = child
            .stdout
            .take()
            .map(|o| {
                BufReader::new(o)
                    .lines()
                    .any(|l| l.is_ok_and(|l| l.contains("DONE")))
            })
            .unwrap_or(false);

        // The file opens, with every entry (migrated or not).
        let n = SessionOptions::new()
            .read_only()
            .open(&path)
            .unwrap_or_else(|e| panic!("round {round}: {e}"))
            .entry_count();
        assert!(n == ENTRIES || n == ENTRIES + 1, "round {round}: {n}");
        if done {
            completed += 1;
            assert_eq!(n, ENTRIES + 1, "round {round}");
        } else {
            interrupted += 1;
        }
        // A writable open removes what an interrupted rewrite left.
        drop(SessionManager::open(&path).unwrap());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n.contains(".migrating")),
            "round {round}: {names:?}"
        );
        let backups: Vec<&String> = names.iter().filter(|n| n.contains(".v2.bak")).collect();
        assert_eq!(backups, ["old.jsonl.v2.bak"], "round {round}");
    }
    assert_eq!(
        std::fs::read(dir.path().join("old.jsonl.v2.bak")).unwrap(),
        original
    );
    eprintln!(
        "migration kills: {interrupted} interrupted, {completed} completed (undisturbed: {full:?})"
    );
}
