//! [`SessionWriter`]: where a session's entry lines go — an ordered, durable, asynchronous
//! append — and its two implementations, the JSONL file ([`JsonlFileWriter`]) and memory
//! ([`MemoryWriter`]).
//!
//! This is the seed of the `SessionStore` of the store layer to come (SQLite, Postgres): the
//! write side of a session, kept small. Reading back, listing and deleting sessions are not
//! part of it yet.
//!
//! Durability rules of the file, in one place:
//! * every append is one `write` of whole lines ending in `\n` (`O_APPEND`), then
//!   `fdatasync`ed when the [`FsyncPolicy`] asks for it, before the append is acknowledged;
//! * appends are written one at a time, in the order they were made (a queue drained by one
//!   thread of tokio's blocking pool, never an async worker thread);
//! * when the file does not end with `\n` (a torn last line, or a failed write) the next
//!   append starts with a `\n`, so the torn line stays one skippable line and nothing is
//!   rewritten;
//! * a writer holds an exclusive advisory lock (`flock`) on the file, so a second writer —
//!   in another process or in this one — is refused ([`SessionError::Locked`]) instead of
//!   interleaved.

use std::collections::VecDeque;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

use futures::future::BoxFuture;

use super::error::{Result, SessionError};
use super::store::{FsyncPolicy, SyncSettings};

/// Where an appended line is in its session's storage: `len` bytes from `offset` (the
/// line's `\n` not counted). For a file, a byte range of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LineSpan {
    /// Where the line starts.
    pub offset: u64,
    /// Its length in bytes, without the `\n`.
    pub len: u64,
}

impl LineSpan {
    /// A span of `len` bytes at `offset`.
    pub fn new(offset: u64, len: u64) -> Self {
        LineSpan { offset, len }
    }

    /// Where the line ends (its `\n`, when it has one).
    pub fn end(self) -> u64 {
        self.offset + self.len
    }
}

/// The write side of a session's storage: appends entry lines in order and acknowledges
/// them once they are durable. [`SessionManager`](super::SessionManager) and
/// [`AgentSession`](crate::agent_session::AgentSession) write every entry through one.
///
/// Each line is one JSON entry (or the session header) without its `\n`. The contract every
/// implementation keeps:
///
/// * **Durable when acknowledged.** `append` resolves `Ok` only once its lines are stored
///   as durably as the writer promises (for [`JsonlFileWriter`]: handed to the operating
///   system, and synced when its [`FsyncPolicy`] is `Always`).
/// * **Ordered.** Appends are stored one after another in the order they were called (each
///   call's lines together, never interleaved with another's).
/// * **Never silently lost.** A write that fails resolves to a typed [`SessionError`]; the
///   lines of a failed append are not acknowledged, and a failed sync takes them back out.
/// * **Off the executor.** Blocking I/O runs off the async worker threads.
///
/// This is the seed of the future `SessionStore` (sessions in SQLite or Postgres): the
/// write half of that contract.
pub trait SessionWriter: Send + Sync + fmt::Debug {
    /// Appends `lines` after everything appended before, and resolves once they are durable;
    /// returns where each line is.
    ///
    /// The append is queued when this method is *called*, not when the future is first
    /// polled: the order of calls is the order in the storage.
    ///
    /// # Cancellation
    ///
    /// Dropping the future does not cancel the append: its lines are written (and synced)
    /// anyway, in their place in the order; only the acknowledgement — the spans, or the
    /// error — is lost.
    fn append(&self, lines: Vec<Vec<u8>>) -> BoxFuture<'static, Result<Vec<LineSpan>>>;

    /// [`append`](Self::append) for synchronous callers: blocks the calling thread until
    /// the lines are durable (after any append queued before). Do not call it on an async
    /// worker thread; use [`append`](Self::append) there.
    fn append_blocking(&self, lines: Vec<Vec<u8>>) -> Result<Vec<LineSpan>>;
}

// ---------------------------------------------------------------------------------------
// The JSONL file

/// A session's JSONL file, opened for appending (and positioned reads) and locked against
/// other writers. Cheap to clone: clones share the file and its queue of appends.
///
/// Appends are queued and written, one at a time in call order, by a drainer running on
/// tokio's blocking pool (`spawn_blocking`; a plain thread outside a runtime), so neither the
/// `write` nor the `fdatasync` runs on an async worker thread. A synchronous
/// [`append_blocking`](SessionWriter::append_blocking) with nothing queued writes on the
/// calling thread.
#[derive(Clone)]
pub struct JsonlFileWriter {
    inner: Arc<FileInner>,
}

struct FileInner {
    path: PathBuf,
    /// Set once: at open, or by the first append of a new file.
    file: OnceLock<File>,
    writable: bool,
    fsync: SyncSettings,
    state: Mutex<WriteState>,
}

#[derive(Default)]
struct WriteState {
    needs_newline: bool,
    /// Appends waiting for the drainer, oldest first.
    queue: VecDeque<Job>,
    /// Whether a drainer is at work (it empties the queue before it stops).
    draining: bool,
}

struct Job {
    lines: Vec<Vec<u8>>,
    reply: Reply,
}

enum Reply {
    Async(tokio::sync::oneshot::Sender<Result<Vec<LineSpan>>>),
    Blocking(std::sync::mpsc::SyncSender<Result<Vec<LineSpan>>>),
}

impl Reply {
    fn send(self, result: Result<Vec<LineSpan>>) {
        // A receiver that is gone was cancelled: the lines were written all the same.
        match self {
            Reply::Async(tx) => {
                let _ = tx.send(result);
            }
            Reply::Blocking(tx) => {
                let _ = tx.send(result);
            }
        }
    }
}

impl fmt::Debug for JsonlFileWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonlFileWriter")
            .field("path", &self.inner.path)
            .field("writable", &self.inner.writable)
            .field("fsync", &self.inner.fsync.policy)
            .finish_non_exhaustive()
    }
}

/// How long a lock held by someone else is waited for before the file counts as locked: a
/// process spawned by this one (a tool's command) shares the open file, and with it the lock,
/// for the moment between its fork and its exec, so a writer that was just closed can look
/// alive for a few microseconds.
const LOCK_GRACE: std::time::Duration = std::time::Duration::from_millis(20);

fn lock_file(file: &File, path: &Path) -> Result<()> {
    let start = std::time::Instant::now();
    let mut result = file.try_lock();
    while matches!(result, Err(std::fs::TryLockError::WouldBlock)) && start.elapsed() < LOCK_GRACE {
        std::thread::sleep(std::time::Duration::from_millis(1));
        result = file.try_lock();
    }
    match result {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(SessionError::Locked {
            path: path.to_owned(),
        }),
        Err(std::fs::TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
            tracing::warn!(path = %path.display(), "file locking is not supported here; concurrent writers will not be detected");
            Ok(())
        }
        Err(std::fs::TryLockError::Error(e)) => Err(SessionError::io(path, e)),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Clears the drainer's flag when it stops, however it stops; a drainer that never ran
/// (its runtime shut down first) or that panicked fails the appends still queued, so no
/// caller waits forever and none is told its entry was written.
struct DrainGuard(Arc<FileInner>);

impl Drop for DrainGuard {
    fn drop(&mut self) {
        let abandoned: Vec<Job> = {
            let mut st = lock(&self.0.state);
            if !st.draining {
                return;
            }
            st.draining = false;
            st.queue.drain(..).collect()
        };
        for job in abandoned {
            job.reply.send(Err(SessionError::Abandoned {
                path: self.0.path.clone(),
            }));
        }
    }
}

impl JsonlFileWriter {
    /// Opens the existing file at `path` for reading, and — unless `read_only` — for
    /// appending, taking the writer's lock ([`SessionError::Locked`] when another writer
    /// has it).
    pub(crate) fn open(path: &Path, read_only: bool, fsync: SyncSettings) -> Result<Self> {
        let file = if read_only {
            File::open(path)
        } else {
            OpenOptions::new().read(true).append(true).open(path)
        }
        .map_err(|e| SessionError::io(path, e))?;
        if !read_only {
            lock_file(&file, path)?;
        }
        Ok(Self::with(
            path.to_owned(),
            OnceLock::from(file),
            !read_only,
            fsync,
        ))
    }

    /// A writer for a file that does not exist yet; the first append creates it (and its
    /// directory) and takes the lock.
    pub(crate) fn new_file(path: PathBuf, fsync: SyncSettings) -> Self {
        Self::with(path, OnceLock::new(), true, fsync)
    }

    fn with(path: PathBuf, file: OnceLock<File>, writable: bool, fsync: SyncSettings) -> Self {
        JsonlFileWriter {
            inner: Arc::new(FileInner {
                path,
                file,
                writable,
                fsync,
                state: Mutex::new(WriteState::default()),
            }),
        }
    }

    /// The same file (and lock) under another path and durability settings: for a file just
    /// written under a temporary name and renamed. `None` when the writer is shared.
    pub(crate) fn renamed(self, path: PathBuf, fsync: SyncSettings) -> Option<Self> {
        let inner = Arc::try_unwrap(self.inner).ok()?;
        let needs_newline = inner
            .state
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .needs_newline;
        let writer = Self::with(path, inner.file, inner.writable, fsync);
        writer.set_needs_newline(needs_newline);
        Some(writer)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The durability policy of appends.
    pub fn fsync_policy(&self) -> FsyncPolicy {
        self.inner.fsync.policy
    }

    /// The open file (`None` before the first append of a new file).
    pub(crate) fn file(&self) -> Option<&File> {
        self.inner.file.get()
    }

    /// Whether the next append must start with a `\n` (the file does not end with one).
    pub(crate) fn set_needs_newline(&self, yes: bool) {
        lock(&self.inner.state).needs_newline = yes;
    }

    /// Queues `job`; starts a drainer on the blocking pool unless one is at work.
    fn enqueue(&self, job: Job) {
        {
            let mut st = lock(&self.inner.state);
            st.queue.push_back(job);
            if st.draining {
                return;
            }
            st.draining = true;
        }
        let guard = DrainGuard(self.inner.clone());
        let run = move || guard.drain();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                // The guard fails the queued appends should the task never run.
                drop(handle.spawn_blocking(run));
            }
            Err(_) => {
                if let Err(e) = std::thread::Builder::new()
                    .name("pi-session-writer".into())
                    .spawn(run)
                {
                    // The closure (and its guard) was dropped: the queue was failed.
                    tracing::error!(error = %e, "cannot start the session writer thread");
                }
            }
        }
    }
}

impl FileInner {
    /// The next queued append; `None` (and the drainer's flag cleared) when there is none.
    fn next_job(&self) -> Option<Job> {
        let mut st = lock(&self.state);
        let job = st.queue.pop_front();
        if job.is_none() {
            st.draining = false;
        }
        job
    }
}

impl DrainGuard {
    /// Writes queued appends, oldest first, until the queue is empty. The last reply is sent
    /// after the drainer let go of the file, so a caller that drops its session once the
    /// last append is acknowledged finds the file closed (and its lock released).
    fn drain(self) {
        let Some(mut job) = self.0.next_job() else {
            return;
        };
        loop {
            let result = self.0.write(&job.lines);
            match self.0.next_job() {
                Some(next) => {
                    std::mem::replace(&mut job, next).reply.send(result);
                }
                None => {
                    drop(self);
                    job.reply.send(result);
                    return;
                }
            }
        }
    }
}

impl FileInner {
    fn create(&self) -> Result<&File> {
        if let Some(dir) = self.path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| SessionError::io(dir, e))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(&self.path)
            .map_err(|e| SessionError::io(&self.path, e))?;
        lock_file(&file, &self.path)?;
        // Only the drainer creates the file, so it is not set yet.
        Ok(self.file.get_or_init(move || file))
    }

    /// One append: whole lines in one write, synced per the policy. Only the drainer calls
    /// it, so appends never overlap.
    fn write(&self, lines: &[Vec<u8>]) -> Result<Vec<LineSpan>> {
        if !self.writable {
            return Err(SessionError::ReadOnly {
                path: self.path.clone(),
            });
        }
        let needs_newline = lock(&self.state).needs_newline;
        let lead = usize::from(needs_newline);
        let mut buf = Vec::with_capacity(lead + lines.iter().map(|l| l.len() + 1).sum::<usize>());
        if needs_newline {
            buf.push(b'\n');
        }
        for line in lines {
            buf.extend_from_slice(line);
            buf.push(b'\n');
        }
        let file = match self.file.get() {
            Some(f) => f,
            None => self.create()?,
        };
        let mut writer: &File = file;
        // With O_APPEND the position is now the end of what was just written, even if
        // another program appended before us.
        let written = writer
            .write_all(&buf)
            .and_then(|()| writer.stream_position());
        let end = match written {
            Ok(end) => end,
            Err(e) => {
                // Part of the line may be in the file: start the next append on a new line.
                lock(&self.state).needs_newline = true;
                return Err(SessionError::io(&self.path, e));
            }
        };
        if self.fsync.policy == FsyncPolicy::Always
            && let Err(source) = self.fsync.sync(file, &self.path)
        {
            // Not durable, so not acknowledged: take the lines back out of the file (this
            // writer holds the lock, nobody appended after them), so a reopen does not
            // show them either. Should that fail too, the next append starts a new line.
            let start = end - buf.len() as u64;
            if file.set_len(start).is_err() {
                lock(&self.state).needs_newline = true;
            }
            return Err(SessionError::Sync {
                path: self.path.clone(),
                source,
            });
        }
        lock(&self.state).needs_newline = false;
        let mut offset = end - buf.len() as u64 + lead as u64;
        Ok(lines
            .iter()
            .map(|l| {
                let span = LineSpan::new(offset, l.len() as u64);
                offset += l.len() as u64 + 1;
                span
            })
            .collect())
    }
}

impl SessionWriter for JsonlFileWriter {
    /// Queues the append for the writer's drainer (on tokio's blocking pool).
    ///
    /// # Cancellation
    ///
    /// Dropping the future does not cancel the append: the lines are written and synced in
    /// their turn; only the acknowledgement is lost.
    fn append(&self, lines: Vec<Vec<u8>>) -> BoxFuture<'static, Result<Vec<LineSpan>>> {
        if !self.inner.writable {
            let err = SessionError::ReadOnly {
                path: self.inner.path.clone(),
            };
            return Box::pin(std::future::ready(Err(err)));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.enqueue(Job {
            lines,
            reply: Reply::Async(tx),
        });
        let path = self.inner.path.clone();
        Box::pin(async move { rx.await.unwrap_or(Err(SessionError::Abandoned { path })) })
    }

    fn append_blocking(&self, lines: Vec<Vec<u8>>) -> Result<Vec<LineSpan>> {
        if !self.inner.writable {
            return Err(SessionError::ReadOnly {
                path: self.inner.path.clone(),
            });
        }
        let rx = {
            let mut st = lock(&self.inner.state);
            if st.draining {
                let (tx, rx) = std::sync::mpsc::sync_channel(1);
                st.queue.push_back(Job {
                    lines,
                    reply: Reply::Blocking(tx),
                });
                rx
            } else {
                // Nothing is queued (the queue is empty whenever no drainer is at work):
                // write on this thread, then drain what was queued meanwhile.
                st.draining = true;
                drop(st);
                let guard = DrainGuard(self.inner.clone());
                let result = guard.0.write(&lines);
                guard.drain();
                return result;
            }
        };
        rx.recv().unwrap_or_else(|_| {
            Err(SessionError::Abandoned {
                path: self.inner.path.clone(),
            })
        })
    }
}

// ---------------------------------------------------------------------------------------
// Memory

/// A session kept in memory: the bytes a JSONL file would hold. Appends complete at once
/// (there is no I/O), so they never block. Cheap to clone: clones share the bytes.
#[derive(Clone, Default)]
pub struct MemoryWriter {
    buf: Arc<RwLock<Vec<u8>>>,
}

impl fmt::Debug for MemoryWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryWriter")
            .field("bytes", &self.read().len())
            .finish()
    }
}

impl MemoryWriter {
    /// An empty session image.
    pub fn new() -> Self {
        MemoryWriter::default()
    }

    /// An image holding `bytes` already (whole lines, each ending in `\n`).
    pub(crate) fn from_bytes(bytes: Vec<u8>) -> Self {
        MemoryWriter {
            buf: Arc::new(RwLock::new(bytes)),
        }
    }

    /// A copy of the bytes: what the JSONL file of this session would hold.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.read().clone()
    }

    pub(crate) fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<u8>> {
        self.buf.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_now(&self, lines: &[Vec<u8>]) -> Vec<LineSpan> {
        let mut buf = self.buf.write().unwrap_or_else(|e| e.into_inner());
        lines
            .iter()
            .map(|l| {
                let span = LineSpan::new(buf.len() as u64, l.len() as u64);
                buf.extend_from_slice(l);
                buf.push(b'\n');
                span
            })
            .collect()
    }
}

impl SessionWriter for MemoryWriter {
    /// Appends at once, when called; the future only carries the result.
    ///
    /// # Cancellation
    ///
    /// The lines are appended before the future exists: dropping it loses only the spans.
    fn append(&self, lines: Vec<Vec<u8>>) -> BoxFuture<'static, Result<Vec<LineSpan>>> {
        let spans = self.write_now(&lines);
        Box::pin(std::future::ready(Ok(spans)))
    }

    fn append_blocking(&self, lines: Vec<Vec<u8>>) -> Result<Vec<LineSpan>> {
        Ok(self.write_now(&lines))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pi-writer-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("s.jsonl")
    }

    #[tokio::test(flavor = "current_thread")]
    async fn file_appends_keep_call_order_and_are_on_disk_when_acknowledged() {
        let path = temp("order");
        let w = JsonlFileWriter::new_file(path.clone(), SyncSettings::default());
        // Queued without awaiting: the order of calls is the order in the file.
        let futures: Vec<_> = (0..50)
            .map(|i| w.append(vec![format!("{{\"n\":{i}}}").into_bytes()]))
            .collect();
        let mut spans = Vec::new();
        for f in futures {
            spans.extend(f.await.unwrap());
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 50);
        for (i, (line, span)) in lines.iter().zip(&spans).enumerate() {
            assert_eq!(*line, format!("{{\"n\":{i}}}"));
            assert_eq!(
                &text.as_bytes()[span.offset as usize..span.end() as usize],
                line.as_bytes()
            );
        }
        // A blocking append after the queued ones follows them.
        w.append_blocking(vec![b"{\"n\":50}".to_vec()]).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .ends_with("{\"n\":50}\n")
        );
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_dropped_append_is_written_anyway() {
        let path = temp("dropped");
        let w = JsonlFileWriter::new_file(path.clone(), SyncSettings::default());
        drop(w.append(vec![b"{\"a\":1}".to_vec()]));
        w.append(vec![b"{\"b\":2}".to_vec()]).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n"
        );
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    #[test]
    fn appends_outside_a_runtime_use_a_thread_of_their_own() {
        let path = temp("no-runtime");
        let w = JsonlFileWriter::new_file(path.clone(), SyncSettings::default());
        let spans = futures::executor::block_on(w.append(vec![b"{}".to_vec()])).unwrap();
        assert_eq!(spans, vec![LineSpan::new(0, 2)]);
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_sync_is_an_error_and_leaves_nothing() {
        let path = temp("sync-fails");
        let hook = super::super::store::SyncHook::new(|_| Err(std::io::Error::other("disk")));
        let w = JsonlFileWriter::new_file(
            path.clone(),
            SyncSettings {
                policy: FsyncPolicy::Always,
                hook: Some(hook),
            },
        );
        let err = w.append(vec![b"{}".to_vec()]).await.unwrap_err();
        assert!(matches!(err, SessionError::Sync { .. }), "{err:?}");
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn memory_appends_at_once() {
        let w = MemoryWriter::new();
        let pending = w.append(vec![b"{}".to_vec(), b"[]".to_vec()]);
        assert_eq!(w.to_bytes(), b"{}\n[]\n");
        assert_eq!(
            pending.await.unwrap(),
            vec![LineSpan::new(0, 2), LineSpan::new(3, 2)]
        );
    }
}
