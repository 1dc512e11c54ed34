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

/// The writer process: appends entries of varied sizes forever, printing `ACK <id>` after
/// each append returns. Run only by `kill_the_writer_mid_append_many_times`.
#[test]
#[ignore = "helper process of kill_the_writer_mid_append_many_times"]
fn writer_process() {
    let path = std::env::var(CHILD_ENV).expect("run by the durability test");
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
                if let Some(id) = line.strip_prefix("ACK ") {
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
            if let Some(id) = line.unwrap().strip_prefix("ACK ") {
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
