//! Session writes off the executor: an `AgentSession` on a `current_thread` runtime whose
//! every `fdatasync` takes 200 ms (an injected sync hook) leaves the executor free for other
//! tasks while an entry is synced, and every entry is durable when the call that wrote it
//! returns; a write whose future is dropped mid-sync completes and is recorded; a session
//! opens off the executor with the same result as the synchronous open.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_engine::ApiProvider;
use pi_engine::agent_session::AgentSession;
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::session::{FsyncPolicy, SessionEntry, SessionManager, SessionOptions, SyncHook};

const SYNC_TIME: Duration = Duration::from_millis(200);
const TICK: Duration = Duration::from_millis(10);

/// A sync hook that takes [`SYNC_TIME`] and records, while `measuring`, how far the ticker
/// advanced during each sync.
#[derive(Clone, Default)]
struct SlowDisk {
    ticks: Arc<AtomicUsize>,
    measuring: Arc<AtomicBool>,
    /// Ticks seen during each measured sync.
    during: Arc<Mutex<Vec<usize>>>,
    /// Set while a sync is in progress.
    syncing: Arc<AtomicBool>,
}

impl SlowDisk {
    fn hook(&self) -> SyncHook {
        let disk = self.clone();
        SyncHook::new(move |_| {
            disk.syncing.store(true, Ordering::SeqCst);
            let before = disk.ticks.load(Ordering::SeqCst);
            std::thread::sleep(SYNC_TIME);
            if disk.measuring.load(Ordering::SeqCst) {
                let after = disk.ticks.load(Ordering::SeqCst);
                disk.during.lock().unwrap().push(after - before);
            }
            disk.syncing.store(false, Ordering::SeqCst);
            Ok(())
        })
    }

    /// A task that counts ticks until it is aborted.
    fn ticker(&self) -> tokio::task::JoinHandle<()> {
        let ticks = self.ticks.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(TICK).await;
                ticks.fetch_add(1, Ordering::SeqCst);
            }
        })
    }
}

fn slow_session(dir: &tempfile::TempDir, disk: &SlowDisk) -> SessionManager {
    SessionOptions::new()
        .with_session_dir(dir.path())
        .with_fsync(FsyncPolicy::Always)
        .with_sync_hook(disk.hook())
        .create("/project")
}

fn agent_session(sm: SessionManager, replies: &[&str]) -> AgentSession {
    let faux = FauxProvider::new();
    for r in replies {
        faux.push(FauxResponse::text(*r));
    }
    let f = faux.clone();
    AgentSession::builder(sm)
        .default_model(faux.model())
        .stream_fn(move |m, c, o| f.stream(m, c, o))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_slow_sync_leaves_the_executor_free_and_the_entries_are_durable_when_the_run_returns() {
    let dir = tempfile::tempdir().unwrap();
    let disk = SlowDisk::default();
    let session = agent_session(slow_session(&dir, &disk), &["Hello!"]);
    let ticker = disk.ticker();
    disk.measuring.store(true, Ordering::SeqCst);

    let outcome = session.prompt("Hi").await.unwrap();
    outcome.into_result().unwrap();
    disk.measuring.store(false, Ordering::SeqCst);
    ticker.abort();

    // Both messages of the run (the prompt and the reply) were synced, one at a time, and
    // while each sync took its 200 ms the ticker task kept running on the one thread.
    let during = disk.during.lock().unwrap().clone();
    assert_eq!(during.len(), 2, "one sync per message: {during:?}");
    for ticks in &during {
        assert!(
            *ticks >= 5,
            "the ticker advanced only {ticks} times during a 200 ms sync: the sync blocked the executor ({during:?})"
        );
    }
    // Durable when the run returned: a reader sees both messages, in pi's order.
    let file = session.session_file().unwrap();
    let reopened = SessionOptions::new().read_only().open(&file).unwrap();
    let context = reopened.build_session_context().unwrap();
    assert_eq!(context.messages.len(), 2);
    assert_eq!(context.messages[0].role(), "user");
    assert_eq!(context.messages[1].role(), "assistant");
    assert_eq!(
        reopened.leaf_id(),
        session
            .with_session_manager(|sm| sm.leaf_id().map(str::to_owned))
            .as_deref()
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_whose_future_is_dropped_mid_sync_completes_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let disk = SlowDisk::default();
    let session = agent_session(slow_session(&dir, &disk), &[]);
    // Dropped while its entry is being synced.
    let dropped = tokio::time::timeout(SYNC_TIME / 4, session.set_session_name("renamed")).await;
    assert!(dropped.is_err(), "the write should still be syncing");
    assert!(disk.syncing.load(Ordering::SeqCst));
    // The next write waits for it, then follows it.
    session.set_session_name("renamed again").await.unwrap();
    assert_eq!(session.session_name().as_deref(), Some("renamed again"));
    let file = session.session_file().unwrap();
    let reopened = SessionOptions::new().read_only().open(&file).unwrap();
    let names: Vec<String> = reopened
        .entries()
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            SessionEntry::SessionInfo(i) => i.name,
            _ => None,
        })
        .collect();
    assert_eq!(names, ["renamed", "renamed again"]);
    // Recorded in order: the second is the child of the first.
    let ids = reopened.branch_ids(None);
    assert_eq!(
        ids.len(),
        reopened.entry_count(),
        "one branch, no fork: {ids:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_session_opens_off_the_executor_with_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/project");
    for i in 0..200 {
        sm.append_message(pi_engine::UserMessage::text(format!("message {i}")))
            .unwrap();
    }
    let path = sm.session_file().unwrap().to_owned();
    drop(sm);

    let (sync_sm, sync_context) = SessionOptions::new()
        .read_only()
        .open_with_context(&path)
        .unwrap();
    let (async_sm, async_context) = SessionOptions::new()
        .read_only()
        .open_with_context_async(&path)
        .await
        .unwrap();
    assert_eq!(async_context, sync_context);
    assert_eq!(async_sm.leaf_id(), sync_sm.leaf_id());
    let opened = SessionOptions::new().open_async(&path).await.unwrap();
    assert_eq!(opened.entry_count(), 200);
    // The async open took the writer's lock like the synchronous one.
    let second = SessionOptions::new().open_async(&path).await.unwrap_err();
    assert!(
        matches!(second, pi_engine::session::SessionError::Locked { .. }),
        "{second:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_session_is_not_replaced_under_a_write_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let disk = SlowDisk::default();
    let session = agent_session(slow_session(&dir, &disk), &[]);
    let naming = session.clone();
    let pending = tokio::spawn(async move { naming.set_session_name("first").await });
    while !disk.syncing.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // The entry being synced belongs to this session: it cannot be swapped for another now.
    assert!(matches!(
        session.new_session().await,
        Err(pi_engine::agent_session::AgentSessionError::Busy)
    ));
    pending.await.unwrap().unwrap();
    assert_eq!(session.session_name().as_deref(), Some("first"));
    let _ = session.new_session().await.unwrap();
    assert_eq!(session.session_name(), None);
}
