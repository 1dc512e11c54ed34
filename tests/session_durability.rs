//! Durability under crashes: a writer process is killed (SIGKILL) at random points while it
//! appends, many times over the same file. After each kill the file must open, hold every
//! entry the writer had acknowledged, skip only torn lines, and take further appends that
//! read back. While the writer lives, a second writer must be refused.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pi_engine::UserMessage;
use pi_engine::session::{SessionError, SessionManager};

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
        let size = 200 + (seed >> 33) as usize % 300_000;
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
    let path = dir.path().join("crash.jsonl");
    let exe = std::env::current_exe().unwrap();
    let mut acked: Vec<String> = Vec::new();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut torn_total = 0;
    const ROUNDS: usize = 30;

    for round in 0..ROUNDS {
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
        std::thread::sleep(Duration::from_micros(pseudo_random(&mut rng) % 20_000));
        child.kill().unwrap();
        child.wait().unwrap();
        for line in lines {
            if let Some(id) = line.unwrap().strip_prefix("ACK ") {
                acked.push(id.to_owned());
            }
        }

        // Every line that is not JSON is a torn write, and only those are skipped.
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let nonblank: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let torn = nonblank
            .iter()
            .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
            .count();
        torn_total = torn;

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
        acked.push(id.clone());
        drop(sm);
        let sm = SessionManager::open(&path).unwrap();
        assert_eq!(sm.leaf_id(), Some(id.as_str()));
        assert!(sm.entry(&id).unwrap().is_some());
    }
    eprintln!(
        "{ROUNDS} kills, {} acknowledged entries kept, {torn_total} torn lines skipped",
        acked.len()
    );
}
