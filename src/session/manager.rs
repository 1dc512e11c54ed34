//! [`SessionManager`]: one session tree, backed by a file (or memory), and
//! [`SessionOptions`] to open one with non-default settings.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::context::{self, SessionContext};
use super::entry::{
    BranchSummaryEntry, CompactionEntry, CustomEntry, CustomMessageEntry, EntryType, LabelEntry,
    MessageEntry, ModelChangeEntry, SessionEntry, SessionHeader, SessionInfoEntry,
    ThinkingLevelChangeEntry,
};
use super::error::{Result, SessionError};
use super::index::{self, Index, Loc, Node, Parent, Role};
use super::list::{self, SessionInfo, encode_cwd};
use super::migrate::migrate_header;
use super::read::Data;
use super::store::{FsyncPolicy, Store, SyncHook, SyncSettings};
use super::time::{file_timestamp, iso_to_millis, now_iso};
use super::tree::SessionTree;
use super::writer::{JsonlFileWriter as FileStore, MemoryWriter, SessionWriter};
use crate::ThinkingLevel;
use crate::agent::AgentMessage;
use crate::llm::UserContent;
use crate::llm::message::Extra;

/// The environment variable pi reads for its agent directory (default `~/.pi/agent`).
pub const ENV_AGENT_DIR: &str = "PI_CODING_AGENT_DIR";

/// How sessions are found, opened and written: the directories and the durability policy.
///
/// The free functions of [`SessionManager`] (`create`, `open`, …) use the defaults; build
/// options to change them, like `std::fs::OpenOptions`:
///
/// ```
/// use pi_engine::session::{FsyncPolicy, SessionOptions};
/// use pi_engine::UserMessage;
///
/// let dir = std::env::temp_dir().join(format!("pi-doc-{}", std::process::id()));
/// let mut sm = SessionOptions::new()
///     .with_session_dir(&dir)
///     .with_fsync(FsyncPolicy::Always)
///     .create("/home/me/project");
/// sm.append_message(UserMessage::text("hello")).unwrap();
/// let path = sm.session_file().unwrap().to_owned();
/// drop(sm); // releases the file lock
///
/// let reopened = SessionOptions::new().read_only().open(&path).unwrap();
/// assert_eq!(reopened.build_session_context().unwrap().messages.len(), 1);
/// # std::fs::remove_dir_all(&dir).ok();
/// ```
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    session_dir: Option<PathBuf>,
    agent_dir: Option<PathBuf>,
    cwd: Option<String>,
    fsync: FsyncPolicy,
    read_only: bool,
    max_line: Option<u64>,
    sync_hook: Option<SyncHook>,
}

/// Options of [`SessionManager::new_session`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct NewSession {
    /// The session id (default: a new UUIDv7).
    pub id: Option<String>,
    /// The session this one continues from (written as the header's `parentSession`).
    pub parent_session: Option<String>,
}

impl NewSession {
    /// Defaults: a new id, no parent session.
    pub fn new() -> Self {
        NewSession::default()
    }

    /// Sets the session id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the parent session (the header's `parentSession`).
    #[must_use]
    pub fn with_parent_session(mut self, parent: impl Into<String>) -> Self {
        self.parent_session = Some(parent.into());
        self
    }
}

fn home_dir() -> PathBuf {
    std::env::home_dir().unwrap_or_default()
}

fn expand_tilde(p: &str) -> PathBuf {
    if p == "~" {
        home_dir()
    } else if let Some(rest) = p.strip_prefix("~/") {
        home_dir().join(rest)
    } else {
        PathBuf::from(p)
    }
}

fn new_session_id() -> String {
    uuid::Uuid::now_v7().hyphenated().to_string()
}

impl SessionOptions {
    /// Default options: sessions under `<agent dir>/sessions/--<cwd>--/`, where the agent
    /// dir is `$PI_CODING_AGENT_DIR` or `~/.pi/agent`; no `fsync`; writable.
    ///
    /// Like pi's `SessionManager`, this does not read the CLI's
    /// `PI_CODING_AGENT_SESSION_DIR`; pass it to [`with_session_dir`](Self::with_session_dir).
    pub fn new() -> Self {
        SessionOptions::default()
    }

    /// Puts (and looks for) session files directly in `dir` instead of the per-cwd default.
    /// For [`open`](Self::open) the default is the opened file's directory.
    #[must_use]
    pub fn with_session_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.session_dir = Some(dir.into());
        self
    }

    /// The agent directory (default `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`).
    #[must_use]
    pub fn with_agent_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.agent_dir = Some(dir.into());
        self
    }

    /// For [`open`](Self::open): the working directory to use instead of the header's.
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// When appends are forced to disk (default [`FsyncPolicy::Never`]).
    #[must_use]
    pub fn with_fsync(mut self, policy: FsyncPolicy) -> Self {
        self.fsync = policy;
        self
    }

    /// The longest line a session file may hold (default 256 MiB, more than pi itself can
    /// read). An append whose entry is longer fails with [`SessionError::EntryTooLarge`]
    /// and writes nothing; a longer line in a file is skipped with a warning when the file
    /// is read, without being read into memory. Memory while reading stays within a small
    /// multiple of this bound.
    #[must_use]
    pub fn with_max_line_bytes(mut self, bytes: u64) -> Self {
        self.max_line = Some(bytes);
        self
    }

    /// Calls `hook` before every `fdatasync` of appended entries ([`FsyncPolicy::Always`]);
    /// an error from it is taken as the sync's. For tests of the durability policy.
    #[doc(hidden)]
    #[must_use]
    pub fn with_sync_hook(mut self, hook: SyncHook) -> Self {
        self.sync_hook = Some(hook);
        self
    }

    pub(crate) fn sync_settings(&self) -> SyncSettings {
        SyncSettings {
            policy: self.fsync,
            hook: self.sync_hook.clone(),
        }
    }

    /// The line bound in effect (see [`with_max_line_bytes`](Self::with_max_line_bytes)).
    pub fn max_line_bytes(&self) -> u64 {
        self.max_line.unwrap_or(super::scan::DEFAULT_MAX_LINE)
    }

    /// Opens files for reading only: no lock is taken, appends fail with
    /// [`SessionError::ReadOnly`], and an old-format file is never rewritten.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// The agent directory in effect.
    pub fn agent_dir(&self) -> PathBuf {
        if let Some(d) = &self.agent_dir {
            return d.clone();
        }
        match std::env::var(ENV_AGENT_DIR) {
            Ok(d) if !d.is_empty() => expand_tilde(&d),
            _ => home_dir().join(".pi").join("agent"),
        }
    }

    /// Where the sessions of `cwd` are kept: the session dir if set, else
    /// `<agent dir>/sessions/--<cwd>--` (pi's `getDefaultSessionDir`).
    pub fn session_dir_for(&self, cwd: &str) -> PathBuf {
        match &self.session_dir {
            Some(d) => d.clone(),
            None => self.agent_dir().join("sessions").join(encode_cwd(cwd)),
        }
    }

    /// A new session for `cwd`. Nothing is written until the first append.
    pub fn create(&self, cwd: impl Into<String>) -> SessionManager {
        let cwd = cwd.into();
        let dir = self.session_dir_for(&cwd);
        SessionManager::fresh(cwd, Some(dir), self.clone(), NewSession::default())
    }

    /// A session that lives only in memory.
    pub fn in_memory(&self, cwd: impl Into<String>) -> SessionManager {
        SessionManager::fresh(cwd.into(), None, self.clone(), NewSession::default())
    }

    /// Opens the session file at `path`: indexes it (bodies are read on demand) and, unless
    /// read-only, takes the writer's lock. The leaf is the last entry in the file. A path
    /// that does not exist, or an empty file, starts a new session written there.
    ///
    /// Errors: [`SessionError::NotASession`] for a file with content but no session header
    /// (pi would truncate it), [`SessionError::UnsupportedVersion`],
    /// [`SessionError::Locked`] when another writer has it, [`SessionError::Io`].
    pub fn open(&self, path: impl AsRef<Path>) -> Result<SessionManager> {
        self.open_decoding(path.as_ref(), false).map(|(sm, _)| sm)
    }

    /// [`open`](Self::open), then [`build_session_context`](SessionManager::build_session_context),
    /// in one read of the file: the messages are decoded while the file is indexed, up to the
    /// first compaction met (what precedes a compaction is usually summarized away), so an
    /// uncompacted session is not read and parsed twice. The result is the same as the two
    /// calls; the messages not in the context are dropped.
    ///
    /// ```
    /// use pi_engine::session::{SessionManager, SessionOptions};
    /// use pi_engine::UserMessage;
    ///
    /// let dir = std::env::temp_dir().join(format!("pi-open-ctx-doc-{}", std::process::id()));
    /// let mut sm = SessionOptions::new().with_session_dir(&dir).create("/home/me/project");
    /// sm.append_message(UserMessage::text("Hello")).unwrap();
    /// let path = sm.session_file().unwrap().to_owned();
    /// drop(sm);
    ///
    /// let (sm, context) = SessionOptions::new().read_only().open_with_context(&path).unwrap();
    /// assert_eq!(context, sm.build_session_context().unwrap());
    /// assert_eq!(context.messages.len(), 1);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// ```
    pub fn open_with_context(
        &self,
        path: impl AsRef<Path>,
    ) -> Result<(SessionManager, SessionContext)> {
        let (sm, mut decoded) = self.open_decoding(path.as_ref(), true)?;
        let context = context::build_with(&sm.data, sm.leaf, &mut decoded)?;
        Ok((sm, context))
    }

    /// [`open`](Self::open) for async code: the file is read, indexed and locked on tokio's
    /// blocking pool (the parallel indexing of a large file included), so the executor's
    /// threads go on with other tasks meanwhile. Outside a tokio runtime it opens on the
    /// calling thread.
    ///
    /// ```
    /// use pi_engine::session::SessionOptions;
    /// use pi_engine::UserMessage;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let dir = std::env::temp_dir().join(format!("pi-open-async-doc-{}", std::process::id()));
    /// let mut sm = SessionOptions::new().with_session_dir(&dir).create("/home/me/project");
    /// sm.append_message(UserMessage::text("Hello")).unwrap();
    /// let path = sm.session_file().unwrap().to_owned();
    /// drop(sm);
    ///
    /// let (sm, context) = SessionOptions::new().open_with_context_async(&path).await.unwrap();
    /// assert_eq!(context.messages.len(), 1);
    /// assert_eq!(sm.entry_count(), 1);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # }
    /// ```
    ///
    /// # Cancellation
    ///
    /// Dropping the future does not stop an open already under way on the blocking pool;
    /// the manager it makes is dropped when it finishes (releasing the file's lock).
    pub async fn open_async(&self, path: impl AsRef<Path>) -> Result<SessionManager> {
        let options = self.clone();
        let path = path.as_ref().to_owned();
        off_executor(&path.clone(), move || options.open(path)).await
    }

    /// [`open_with_context`](Self::open_with_context) for async code, read and parsed on
    /// tokio's blocking pool as [`open_async`](Self::open_async) is.
    ///
    /// # Cancellation
    ///
    /// As [`open_async`](Self::open_async).
    pub async fn open_with_context_async(
        &self,
        path: impl AsRef<Path>,
    ) -> Result<(SessionManager, SessionContext)> {
        let options = self.clone();
        let path = path.as_ref().to_owned();
        off_executor(&path.clone(), move || options.open_with_context(path)).await
    }

    fn open_decoding(
        &self,
        path: &Path,
        decode: bool,
    ) -> Result<(SessionManager, Vec<Option<Box<AgentMessage>>>)> {
        let path = std::path::absolute(path).map_err(|e| SessionError::io(path, e))?;
        let dir = self
            .session_dir
            .clone()
            .or_else(|| path.parent().map(Path::to_path_buf));
        if !path.exists() {
            let cwd = self.cwd.clone().unwrap_or_else(current_dir);
            let mut sm = SessionManager::fresh(cwd, dir, self.clone(), NewSession::default());
            sm.data.store = Store::File(FileStore::new_file(path, self.sync_settings()));
            return Ok((sm, Vec::new()));
        }
        let store = FileStore::open(&path, self.read_only, self.sync_settings())?;
        SessionManager::from_store(store, dir, self.clone(), self.cwd.clone(), decode)
    }

    /// Opens the most recently modified session of `cwd`, or creates one.
    pub fn continue_recent(&self, cwd: impl Into<String>) -> Result<SessionManager> {
        let cwd = cwd.into();
        let dir = self.session_dir_for(&cwd);
        match list::most_recent(&dir)? {
            Some(path) => self.clone().with_cwd(cwd).with_session_dir(dir).open(path),
            None => Ok(self.create(cwd)),
        }
    }

    /// Copies the session at `source` (all its entries, migrated to version 3) into a new
    /// file of `target_cwd`'s session directory, whose header names `source` as
    /// `parentSession`, and opens the copy.
    pub fn fork_from(
        &self,
        source: impl AsRef<Path>,
        target_cwd: impl Into<String>,
    ) -> Result<SessionManager> {
        let source = source.as_ref();
        let src = SessionOptions::new().read_only().open(source)?;
        if !src.data.store.path().is_some_and(Path::exists) || !src.header_written {
            return Err(SessionError::NotASession {
                path: source.to_owned(),
                reason: "cannot fork: the source session file is empty or missing".into(),
            });
        }
        let target_cwd = target_cwd.into();
        let dir = self.session_dir_for(&target_cwd);
        let mut header = SessionHeader::new(new_session_id(), now_iso(), target_cwd.clone());
        header.parent_session = Some(source.display().to_string());
        let all: Vec<u32> = (0..src.data.index.len() as u32).collect();
        let path = dir.join(format!(
            "{}_{}.jsonl",
            file_timestamp(&header.timestamp),
            header.id
        ));
        let store = write_file(&path, &header, &src.data, &all, &[], self.sync_settings())?;
        SessionManager::from_store(store, Some(dir), self.clone(), Some(target_cwd), false)
            .map(|(sm, _)| sm)
    }

    /// The sessions of `cwd`, most recently active first.
    pub fn list(&self, cwd: &str) -> Result<Vec<SessionInfo>> {
        list::list_dir(&self.session_dir_for(cwd))
    }

    /// The sessions of every working directory under `<agent dir>/sessions`, most recently
    /// active first.
    pub fn list_all(&self) -> Result<Vec<SessionInfo>> {
        list::list_all(&self.agent_dir().join("sessions"))
    }
}

/// Runs blocking session work on tokio's blocking pool (inline outside a tokio runtime).
async fn off_executor<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    if tokio::runtime::Handle::try_current().is_err() {
        return work();
    }
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(SessionError::Abandoned {
            path: path.to_owned(),
        }),
    }
}

fn current_dir() -> String {
    std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// One JSON line. The stack grows on the heap for a deeply nested value (`serde_stacker`),
/// as it does when reading one back.
pub(crate) fn to_line<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::new(&mut out);
    value
        .serialize(serde_stacker::Serializer::new(&mut ser))
        .map_err(SessionError::Serialize)?;
    Ok(out)
}

/// The temporary file a rewrite of `path` is written to before it is renamed over `path`.
/// The name is fixed (the writer's lock on `path` keeps rewrites from running at once), so
/// a retry after a crash reuses it instead of leaving another one behind.
fn rewrite_temp(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.migrating", path.display()))
}

/// Removes what interrupted rewrites of `path` left: `<file>.migrating`, a half-copied
/// backup `<file>.migrating.bak`, and the `<file>.migrating-<pid>` files of earlier
/// versions of this crate. Only called by the
/// holder of `path`'s writer lock, so none of them is in use.
fn remove_rewrite_leftovers(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return;
    };
    let prefix = format!("{name}.migrating");
    let Ok(listing) = std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return;
    };
    for entry in listing.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let ours = rest.is_empty()
            || rest == ".bak"
            || rest
                .strip_prefix('-')
                .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
        if ours {
            let leftover = entry.path();
            match std::fs::remove_file(&leftover) {
                Ok(()) => {
                    tracing::info!(path = %leftover.display(), "removed the leftover of an interrupted session rewrite")
                }
                Err(e) => {
                    tracing::warn!(path = %leftover.display(), error = %e, "cannot remove the leftover of an interrupted session rewrite")
                }
            }
        }
    }
}

/// True when files `a` and `b` have the same content.
fn same_content(a: &Path, b: &Path) -> std::io::Result<bool> {
    let (fa, fb) = (File::open(a)?, File::open(b)?);
    if fa.metadata()?.len() != fb.metadata()?.len() {
        return Ok(false);
    }
    let (mut ra, mut rb) = (
        std::io::BufReader::with_capacity(64 << 10, fa),
        std::io::BufReader::with_capacity(64 << 10, fb),
    );
    let (mut ba, mut bb) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    loop {
        let n = read_full(&mut ra, &mut ba)?;
        let m = read_full(&mut rb, &mut bb)?;
        if n != m || ba[..n] != bb[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

fn read_full(r: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A backup of `path` as `<file>.<suffix>` (then `.1`, `.2`, … when taken): an existing
/// backup of identical content (left by an interrupted earlier attempt) is reused instead
/// of adding another. The copy is made as `<file>.migrating.bak`, synced, then renamed into
/// place, so a backup name only ever holds a complete copy.
fn backup_of(path: &Path, suffix: &str) -> Result<PathBuf> {
    let mut n = 0;
    let backup = loop {
        let candidate = if n == 0 {
            PathBuf::from(format!("{}.{suffix}", path.display()))
        } else {
            PathBuf::from(format!("{}.{suffix}.{n}", path.display()))
        };
        if !candidate.exists() {
            break candidate;
        }
        if same_content(path, &candidate).unwrap_or(false) {
            return Ok(candidate);
        }
        n += 1;
    };
    let partial = PathBuf::from(format!("{}.bak", rewrite_temp(path).display()));
    std::fs::copy(path, &partial).map_err(|e| SessionError::io(&partial, e))?;
    File::open(&partial)
        .and_then(|f| f.sync_all())
        .map_err(|e| SessionError::io(&partial, e))?;
    std::fs::rename(&partial, &backup).map_err(|e| SessionError::io(&backup, e))?;
    Ok(backup)
}

/// Writes a new session file: `header`, the (version 3) lines of `nodes` of `data`, then
/// `extra` lines. The file is created exclusively and stays locked in the returned store.
fn write_file(
    path: &Path,
    header: &SessionHeader,
    data: &Data,
    nodes: &[u32],
    extra: &[Vec<u8>],
    fsync: SyncSettings,
) -> Result<FileStore> {
    let store = FileStore::new_file(path.to_owned(), fsync);
    store.append_blocking(vec![to_line(header)?])?;
    // In bounded batches, so a large session is never held in memory whole.
    for chunk in nodes.chunks(4096) {
        store.append_blocking(data.v3_lines(chunk)?)?;
    }
    if !extra.is_empty() {
        store.append_blocking(extra.to_vec())?;
    }
    Ok(store)
}

/// A session: an append-only tree of entries in a pi-compatible JSONL file, and a leaf —
/// the entry the conversation continues from.
///
/// Appending creates a child of the leaf and moves the leaf to it; each append writes one
/// whole line and returns after the operating system has it (see [`FsyncPolicy`] for power
/// loss). [`branch`](Self::branch) moves the leaf without writing anything.
/// [`build_session_context`](Self::build_session_context) gives what the agent continues
/// from.
///
/// Only an index is kept in memory; entry bodies are read from the file when asked for.
/// A writer holds an advisory lock on its file: a second writer gets
/// [`SessionError::Locked`].
///
/// The `append_*` methods are synchronous: they block the calling thread until the entry is
/// durable (the write, and the `fdatasync` of [`FsyncPolicy::Always`]). In async code, let
/// [`AgentSession`](crate::agent_session::AgentSession) write (it awaits each entry, the I/O
/// on tokio's blocking pool), or call them from `spawn_blocking`; open files with
/// [`SessionOptions::open_async`].
///
/// ```
/// use pi_engine::session::SessionManager;
/// use pi_engine::{AssistantMessage, AssistantContent, ThinkingLevel, UserMessage};
///
/// let mut sm = SessionManager::in_memory("/tmp/project");
/// sm.append_model_change("anthropic", "claude-sonnet-4-5").unwrap();
/// sm.append_thinking_level_change(ThinkingLevel::High).unwrap();
/// let question = sm.append_message(UserMessage::text("2 + 2?")).unwrap();
/// sm.append_message(
///     AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
///         .with_content(vec![AssistantContent::text("4")]),
/// ).unwrap();
///
/// let ctx = sm.build_session_context().unwrap();
/// assert_eq!(ctx.messages.len(), 2);
/// assert_eq!(ctx.thinking_level, ThinkingLevel::High);
/// assert_eq!(ctx.model.unwrap().model_id, "claude-sonnet-4-5");
///
/// // Go back to the question and take another branch.
/// sm.branch(&question).unwrap();
/// sm.append_message(UserMessage::text("actually, 3 + 3?")).unwrap();
/// assert_eq!(sm.build_session_context().unwrap().messages.len(), 2);
/// ```
///
/// pi's method names map to these: `getLeafId` → [`leaf_id`](Self::leaf_id), `getEntry` →
/// [`entry`](Self::entry), `getEntries` → [`entries`](Self::entries), `getChildren` →
/// [`children`](Self::children), `getBranch` → [`branch_path`](Self::branch_path),
/// `getTree` → [`tree`](Self::tree), `getLabel` → [`label`](Self::label),
/// `getSessionName` → [`session_name`](Self::session_name), `getHeader` →
/// [`header`](Self::header).
#[derive(Debug)]
pub struct SessionManager {
    data: Data,
    header: SessionHeader,
    /// Whether the header line is in the store (a new file gets it with the first entry).
    header_written: bool,
    /// The file's header line is torn and `header` was made in memory: the file is
    /// rewritten with it (after a backup) before the first append.
    header_made: bool,
    cwd: String,
    session_dir: Option<PathBuf>,
    options: SessionOptions,
    leaf: Option<u32>,
    /// Set by [`prepare`](Self::prepare): the append is captured instead of written.
    capture: Option<Option<PreparedAppend>>,
}

/// An append made ready by [`SessionManager::prepare`]: the lines to write, and what the
/// manager records once they are written.
#[derive(Debug)]
pub(crate) struct PreparedAppend {
    entry: SessionEntry,
    role: Role,
    lines: Vec<Vec<u8>>,
    session_id: String,
}

impl PreparedAppend {
    /// The lines to write (taken: a second call gets none).
    pub(crate) fn take_lines(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.lines)
    }

    /// The session the append belongs to.
    pub(crate) fn session_id(&self) -> &str {
        &self.session_id
    }
}

impl SessionManager {
    /// A new session for `cwd` in pi's default directory
    /// (`~/.pi/agent/sessions/--<cwd>--/`). Nothing is written until the first append.
    pub fn create(cwd: impl Into<String>) -> SessionManager {
        SessionOptions::new().create(cwd)
    }

    /// Opens a session file with default options (see [`SessionOptions::open`]).
    pub fn open(path: impl AsRef<Path>) -> Result<SessionManager> {
        SessionOptions::new().open(path)
    }

    /// [`SessionOptions::open_with_context`] with default options: opens the file and builds
    /// its context in one read.
    pub fn open_with_context(path: impl AsRef<Path>) -> Result<(SessionManager, SessionContext)> {
        SessionOptions::new().open_with_context(path)
    }

    /// Opens the most recent session of `cwd`, or creates one (see
    /// [`SessionOptions::continue_recent`]).
    pub fn continue_recent(cwd: impl Into<String>) -> Result<SessionManager> {
        SessionOptions::new().continue_recent(cwd)
    }

    /// A session that lives only in memory.
    pub fn in_memory(cwd: impl Into<String>) -> SessionManager {
        SessionOptions::new().in_memory(cwd)
    }

    /// Copies a session into `target_cwd`'s directory (see [`SessionOptions::fork_from`]).
    pub fn fork_from(
        source: impl AsRef<Path>,
        target_cwd: impl Into<String>,
    ) -> Result<SessionManager> {
        SessionOptions::new().fork_from(source, target_cwd)
    }

    /// The sessions of `cwd` in the default directory, most recently active first.
    pub fn list(cwd: &str) -> Result<Vec<SessionInfo>> {
        SessionOptions::new().list(cwd)
    }

    /// The sessions of every working directory, most recently active first.
    pub fn list_all() -> Result<Vec<SessionInfo>> {
        SessionOptions::new().list_all()
    }

    fn fresh(
        cwd: String,
        session_dir: Option<PathBuf>,
        options: SessionOptions,
        new: NewSession,
    ) -> SessionManager {
        let mut header = SessionHeader::new(
            new.id.unwrap_or_else(new_session_id),
            now_iso(),
            cwd.clone(),
        );
        header.parent_session = new.parent_session;
        let persist = session_dir.is_some();
        let (store, header_written) = match &session_dir {
            Some(dir) => {
                let path = dir.join(format!(
                    "{}_{}.jsonl",
                    file_timestamp(&header.timestamp),
                    header.id
                ));
                (
                    Store::File(FileStore::new_file(path, options.sync_settings())),
                    false,
                )
            }
            None => (Store::Memory(MemoryWriter::new()), false),
        };
        let mut sm = SessionManager {
            data: Data {
                index: Index::default(),
                store,
                source_version: super::CURRENT_SESSION_VERSION,
            },
            header,
            header_written,
            header_made: false,
            cwd,
            session_dir,
            options,
            leaf: None,
            capture: None,
        };
        if !persist {
            // The memory store is a file image: header first.
            if let Ok(line) = to_line(&sm.header)
                && sm.data.store.append(vec![line]).is_ok()
            {
                sm.header_written = true;
            }
        }
        sm
    }

    /// Indexes the file of `store` (which is open, and locked when writable).
    fn from_store(
        store: FileStore,
        session_dir: Option<PathBuf>,
        options: SessionOptions,
        cwd_override: Option<String>,
        decode: bool,
    ) -> Result<(SessionManager, Vec<Option<Box<AgentMessage>>>)> {
        let path = store.path().to_owned();
        let loaded = match store.file() {
            Some(file) => index::load(file, &path, decode, options.max_line_bytes())?,
            None => return Err(SessionError::io(&path, std::io::ErrorKind::NotFound.into())),
        };
        store.set_needs_newline(!loaded.ends_with_newline);
        let Some(header) = loaded.header else {
            // An empty file: a new session, written into this file.
            let cwd = cwd_override.unwrap_or_else(current_dir);
            let mut sm = SessionManager::fresh(cwd, session_dir, options, NewSession::default());
            sm.data.store = Store::File(store);
            return Ok((sm, Vec::new()));
        };
        let cwd = cwd_override
            .or_else(|| (!header.cwd.is_empty()).then(|| header.cwd.clone()))
            .unwrap_or_else(current_dir);
        let mut header = header;
        if loaded.header_made {
            header.cwd = cwd.clone();
        }
        if !options.read_only && (loaded.header_made || loaded.source_version < 3) {
            // This writer holds the lock: an earlier rewrite that was interrupted left its
            // temporary file behind.
            remove_rewrite_leftovers(&path);
        }
        let leaf = loaded.index.len().checked_sub(1).map(|l| l as u32);
        let sm = SessionManager {
            data: Data {
                index: loaded.index,
                store: Store::File(store),
                source_version: loaded.source_version,
            },
            header,
            header_written: true,
            header_made: loaded.header_made,
            cwd,
            session_dir,
            options,
            leaf,
            capture: None,
        };
        Ok((sm, loaded.messages))
    }

    /// Starts a new, empty session in the same directory (pi's `newSession`); returns its
    /// file path (`None` in memory). Nothing is written until the first append.
    pub fn new_session(&mut self, options: NewSession) -> Option<PathBuf> {
        let fresh = SessionManager::fresh(
            self.cwd.clone(),
            self.session_dir.clone(),
            self.options.clone(),
            options,
        );
        *self = fresh;
        self.session_file().map(Path::to_path_buf)
    }

    /// True when the session is backed by a file.
    pub fn is_persisted(&self) -> bool {
        matches!(self.data.store, Store::File(_))
    }

    /// The working directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The directory new session files go to (`None` in memory).
    pub fn session_dir(&self) -> Option<&Path> {
        self.session_dir.as_deref()
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// The session file (`None` in memory). It exists once something was appended.
    pub fn session_file(&self) -> Option<&Path> {
        self.data.store.path()
    }

    /// The header (for a file of an older format, as it was read: the file is migrated to
    /// version 3 before the first append).
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The format version of the file as stored (3 once migrated).
    pub fn file_version(&self) -> u64 {
        self.data.source_version
    }

    // ------------------------------------------------------------------ appending

    fn generate_id(&self) -> String {
        for _ in 0..100 {
            let hex = uuid::Uuid::new_v4().simple().to_string();
            if self.data.index.get(&hex[..8]).is_none() {
                return hex[..8].to_owned();
            }
        }
        uuid::Uuid::new_v4().hyphenated().to_string()
    }

    fn parent_id(&self) -> Option<String> {
        self.leaf.map(|l| self.data.index.node(l).id.to_string())
    }

    /// Appends `entry` as a child of the leaf (its `parent_id` must be the leaf's id, or
    /// the branch point for a branch summary), writes it, and moves the leaf to it. In
    /// [`prepare`](Self::prepare) the write is left to the caller instead.
    fn append_entry(&mut self, entry: SessionEntry, role: Role) -> Result<String> {
        let mut prepared = self.prepare_append(entry, role)?;
        if let Some(slot) = &mut self.capture {
            debug_assert!(slot.is_none(), "one append per prepare");
            let id = prepared.entry.id().to_owned();
            *slot = Some(prepared);
            return Ok(id);
        }
        let lines = std::mem::take(&mut prepared.lines);
        let locs = self.data.store.append(lines)?;
        Ok(self.commit(prepared, locs))
    }

    /// Runs `append` (one of the `append_*` methods) without writing: returns the entry's
    /// lines ready to be written through [`writer`](Self::writer), then
    /// [`commit`](Self::commit)ted with where they went. Nothing changes in the manager
    /// until the commit (except that an old-format file is first rewritten, as before any
    /// append). Between the two, no other append may be made.
    pub(crate) fn prepare(
        &mut self,
        append: impl FnOnce(&mut SessionManager) -> Result<String>,
    ) -> Result<PreparedAppend> {
        self.capture = Some(None);
        let result = append(self);
        let captured = self.capture.take().flatten();
        result?;
        captured.ok_or_else(|| {
            SessionError::Serialize(serde::ser::Error::custom("nothing was appended"))
        })
    }

    /// A handle on the writer of this session's store (it outlives the manager's borrow).
    pub(crate) fn writer(&self) -> std::sync::Arc<dyn SessionWriter> {
        self.data.store.shared_writer()
    }

    /// True when the first append must rewrite the file first (an old format, a torn
    /// header): blocking work beyond the append itself.
    pub(crate) fn needs_rewrite(&self) -> bool {
        self.data.source_version < super::CURRENT_SESSION_VERSION || self.header_made
    }

    /// Records an append of [`prepare`](Self::prepare) that was written at `locs`: the entry
    /// joins the index and becomes the leaf. Returns its id.
    pub(crate) fn commit(&mut self, prepared: PreparedAppend, locs: Vec<Loc>) -> String {
        let PreparedAppend { entry, role, .. } = prepared;
        self.header_written = true;
        let parent = match entry.parent_id().and_then(|p| self.data.index.get(p)) {
            Some(p) => Parent::Node(p),
            None => Parent::Root,
        };
        match &entry {
            SessionEntry::Label(l) => {
                self.data
                    .index
                    .set_label(&l.target_id, l.label.as_deref(), &l.timestamp)
            }
            SessionEntry::SessionInfo(s) => self.data.index.set_session_name(s.name.as_deref()),
            _ => {}
        }
        let id = entry.id().to_owned();
        let timestamp = entry.timestamp();
        let idx = self.data.index.push(Node {
            id: id.as_str().into(),
            parent,
            entry_type: entry.entry_type(),
            role,
            timestamp: timestamp.into(),
            ts_ms: iso_to_millis(timestamp),
            loc: locs[locs.len() - 1],
        });
        self.leaf = Some(idx);
        id
    }

    /// Checks, serializes and (for an old-format file) rewrites before `entry` is written.
    fn prepare_append(&mut self, entry: SessionEntry, role: Role) -> Result<PreparedAppend> {
        if let Store::File(f) = &self.data.store
            && self.options.read_only
        {
            return Err(SessionError::ReadOnly {
                path: f.path().to_owned(),
            });
        }
        let line = to_line(&entry)?;
        let limit = self.options.max_line_bytes();
        if line.len() as u64 > limit {
            return Err(SessionError::EntryTooLarge {
                size: line.len() as u64,
                limit,
            });
        }
        if self.needs_rewrite() {
            self.rewrite_migrated()?;
        }
        let mut lines = Vec::with_capacity(2);
        if !self.header_written {
            lines.push(to_line(&self.header)?);
        }
        lines.push(line);
        Ok(PreparedAppend {
            entry,
            role,
            lines,
            session_id: self.header.id.clone(),
        })
    }

    /// Rewrites an old-format file as version 3 (or a file with a torn header with the header
    /// made in memory) before the first append: the original is copied to `<file>.v<N>.bak`
    /// (`<file>.header.bak` for a torn header) first — unless a backup of identical content
    /// is already there, from an earlier attempt — then the new file is written beside it as
    /// `<file>.migrating` and renamed over it (so the path always holds a complete file),
    /// and the lock moves to it. A retry after a crash overwrites the temporary file.
    fn rewrite_migrated(&mut self) -> Result<()> {
        let Store::File(old) = &self.data.store else {
            self.data.source_version = super::CURRENT_SESSION_VERSION;
            self.header_made = false;
            return Ok(());
        };
        let path = old.path().to_owned();
        let version = self.data.source_version;
        let suffix = if version < super::CURRENT_SESSION_VERSION {
            format!("v{version}.bak")
        } else {
            "header.bak".to_owned()
        };
        let backup = backup_of(&path, &suffix)?;

        let mut header = serde_json::to_value(&self.header).map_err(SessionError::Serialize)?;
        if let Value::Object(obj) = &mut header {
            migrate_header(obj);
        }
        let header: SessionHeader =
            serde_json::from_value(header).map_err(SessionError::Serialize)?;
        let tmp = rewrite_temp(&path);
        let _ = std::fs::remove_file(&tmp);
        let all: Vec<u32> = (0..self.data.index.len() as u32).collect();
        let store = write_file(
            &tmp,
            &header,
            &self.data,
            &all,
            &[],
            SyncSettings {
                policy: FsyncPolicy::Always,
                hook: self.options.sync_hook.clone(),
            },
        );
        let store = match store {
            Ok(s) => s,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        std::fs::rename(&tmp, &path).map_err(|e| SessionError::io(&path, e))?;
        // The rewrite was synced; appends follow the session's own policy.
        let store = store
            .renamed(path.clone(), self.options.sync_settings())
            .ok_or_else(|| {
                SessionError::io(&path, std::io::Error::other("the rewritten file is in use"))
            })?;
        tracing::info!(path = %path.display(), backup = %backup.display(), from = version,
            header_made = self.header_made, "rewrote session file as version 3");
        let leaf_id = self.leaf.map(|l| self.data.index.node(l).id.clone());
        let reopened = SessionManager::from_store(
            store,
            self.session_dir.clone(),
            self.options.clone(),
            Some(self.cwd.clone()),
            false,
        )?
        .0;
        let leaf = leaf_id.and_then(|id| reopened.data.index.get(&id));
        *self = reopened;
        self.leaf = leaf;
        Ok(())
    }

    /// Appends a message (user, assistant, tool result, or a custom role such as
    /// [`BashExecutionMessage`](super::BashExecutionMessage)); returns the entry id.
    ///
    /// Compaction and branch summaries are entries of their own: use
    /// [`append_compaction`](Self::append_compaction) and
    /// [`branch_with_summary`](Self::branch_with_summary).
    pub fn append_message(&mut self, message: impl Into<AgentMessage>) -> Result<String> {
        let message = message.into();
        let role = match &message {
            AgentMessage::User(_) => Role::User,
            AgentMessage::Assistant(_) => Role::Assistant,
            _ => Role::Other,
        };
        let entry = SessionEntry::Message(MessageEntry {
            id: self.generate_id(),
            parent_id: self.parent_id(),
            timestamp: now_iso(),
            message,
            extra: Extra::new(),
        });
        self.append_entry(entry, role)
    }

    /// Records a thinking level change; returns the entry id.
    pub fn append_thinking_level_change(&mut self, level: ThinkingLevel) -> Result<String> {
        let entry = SessionEntry::ThinkingLevelChange(ThinkingLevelChangeEntry {
            id: self.generate_id(),
            parent_id: self.parent_id(),
            timestamp: now_iso(),
            thinking_level: level,
            extra: Extra::new(),
        });
        self.append_entry(entry, Role::NotMessage)
    }

    /// Records a model change; returns the entry id.
    pub fn append_model_change(
        &mut self,
        provider: impl Into<String>,
        model_id: impl Into<String>,
    ) -> Result<String> {
        let entry = SessionEntry::ModelChange(ModelChangeEntry {
            id: self.generate_id(),
            parent_id: self.parent_id(),
            timestamp: now_iso(),
            provider: provider.into(),
            model_id: model_id.into(),
            extra: Extra::new(),
        });
        self.append_entry(entry, Role::NotMessage)
    }

    /// Records a compaction: from now on the context starts with `summary`, then the
    /// entries from `first_kept_entry_id` on. Returns the entry id.
    pub fn append_compaction(
        &mut self,
        summary: impl Into<String>,
        first_kept_entry_id: impl Into<String>,
        tokens_before: u64,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String> {
        let entry = SessionEntry::Compaction(CompactionEntry {
            id: self.generate_id(),
            parent_id: self.parent_id(),
            timestamp: now_iso(),
            summary: summary.into(),
            first_kept_entry_id: first_kept_entry_id.into(),
            tokens_before,
            details,
            from_hook,
            extra: Extra::new(),
        });
        self.append_entry(entry, Role::NotMessage)
    }

    /// Stores extension state (never sent to the model); returns the entry id.
    pub fn append_custom_entry(
        &mut self,
        custom_type: impl Into<String>,
        data: Option<Value>,
    ) -> Result<String> {
        let entry = SessionEntry::Custom(CustomEntry {
            id: self.generate_id(),
            parent_id: self.parent_id(),
            timestamp: now_iso(),
            custom_type: custom_type.into(),
            data,
            extra: Extra::new(),
        });
        self.append_entry(entry, Role::NotMessage)
    }

    /// Adds an extension's message, which the model sees as a user message; returns the
    /// entry id.
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: impl Into<String>,
        content: impl Into<UserContent>,
        display: bool,
        details: Option<Value>,
    ) -> Result<String> {
        let entry = SessionEntry::CustomMessage(CustomMessageEntry {
            id: self.generate_id(),
            parent_id: self.parent_id(),
            timestamp: now_iso(),
            custom_type: custom_type.into(),
            content: content.into(),
            details,
            display,
            extra: Extra::new(),
        });
        self.append_entry(entry, Role::NotMessage)
    }

    /// Names the session (trimmed; an empty name clears it); returns the entry id.
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        let entry = SessionEntry::SessionInfo(SessionInfoEntry {
            id: self.generate_id(),
            parent_id: self.parent_id(),
            timestamp: now_iso(),
            name: Some(name.trim().to_owned()),
            extra: Extra::new(),
        });
        self.append_entry(entry, Role::NotMessage)
    }

    /// Sets (`Some`) or clears (`None` or empty) the label of entry `target_id`; returns
    /// the label entry's id. Labels apply to the whole file, whatever branch sets them.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        if self.data.index.get(target_id).is_none() {
            return Err(SessionError::EntryNotFound {
                id: target_id.to_owned(),
            });
        }
        let entry = SessionEntry::Label(LabelEntry {
            id: self.generate_id(),
            parent_id: self.parent_id(),
            timestamp: now_iso(),
            target_id: target_id.to_owned(),
            label: label.map(str::to_owned),
            extra: Extra::new(),
        });
        self.append_entry(entry, Role::NotMessage)
    }

    /// Moves the leaf to `from` (`None`: before the first entry) and appends a summary of
    /// the branch being left there; returns the summary entry's id.
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: impl Into<String>,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String> {
        let target = match from {
            Some(id) => Some(
                self.data
                    .index
                    .get(id)
                    .ok_or_else(|| SessionError::EntryNotFound { id: id.to_owned() })?,
            ),
            None => None,
        };
        let previous = self.leaf;
        self.leaf = target;
        let entry = SessionEntry::BranchSummary(BranchSummaryEntry {
            id: self.generate_id(),
            parent_id: from.map(str::to_owned),
            timestamp: now_iso(),
            from_id: from.unwrap_or("root").to_owned(),
            summary: summary.into(),
            details,
            from_hook,
            extra: Extra::new(),
        });
        let result = self.append_entry(entry, Role::NotMessage);
        if result.is_err() {
            self.leaf = previous;
        }
        result
    }

    // ------------------------------------------------------------------ reading

    /// The leaf's id (`None` before the first entry, or after [`reset_leaf`](Self::reset_leaf)).
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.map(|l| &*self.data.index.node(l).id)
    }

    /// The leaf entry.
    pub fn leaf_entry(&self) -> Result<Option<SessionEntry>> {
        match self.leaf {
            Some(l) => Ok(self.data.entries(&[l])?.pop()),
            None => Ok(None),
        }
    }

    /// The entry with `id` (read from the file).
    pub fn entry(&self, id: &str) -> Result<Option<SessionEntry>> {
        match self.data.index.get(id) {
            Some(idx) => Ok(self.data.entries(&[idx])?.pop()),
            None => Ok(None),
        }
    }

    /// The type of entry `id`, from the index (nothing is read).
    pub fn entry_type(&self, id: &str) -> Option<EntryType> {
        self.data
            .index
            .get(id)
            .map(|i| self.data.index.node(i).entry_type)
    }

    /// The number of entries (the header not counted).
    pub fn entry_count(&self) -> usize {
        self.data.index.len()
    }

    /// The entry ids, in file order.
    pub fn entry_ids(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.data.index.nodes.iter().map(|n| &*n.id)
    }

    /// Every entry, in file order (reads and parses the whole file: prefer
    /// [`build_session_context`](Self::build_session_context) or [`tree`](Self::tree)).
    pub fn entries(&self) -> Result<Vec<SessionEntry>> {
        let all: Vec<u32> = (0..self.data.index.len() as u32).collect();
        self.data.entries(&all)
    }

    /// Every entry, in file order, never failing on one entry: an entry that cannot be read
    /// as its type is an [`UnknownEntry`](super::UnknownEntry) carrying its JSON (or its id
    /// and parent) and an `error` field. For displays such as the HTML export.
    #[cfg(feature = "export-html")]
    pub(crate) fn entries_lenient(&self) -> Result<Vec<SessionEntry>> {
        self.data.entries_lenient()
    }

    /// The entries whose `parentId` is `parent_id`, in file order.
    pub fn children(&self, parent_id: &str) -> Result<Vec<SessionEntry>> {
        let index = &self.data.index;
        let idxs: Vec<u32> = (0..index.len() as u32)
            .filter(|&i| match &index.node(i).parent {
                Parent::Node(p) => *index.node(*p).id == *parent_id,
                Parent::Missing(p) => **p == *parent_id,
                Parent::Root => false,
            })
            .collect();
        self.data.entries(&idxs)
    }

    /// The label of entry `id`.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.data.index.labels.get(id).map(|l| l.label.as_str())
    }

    /// The session's name (from the latest `session_info` entry in the file).
    pub fn session_name(&self) -> Option<&str> {
        self.data.index.session_name.as_deref()
    }

    /// The entries from the root to `from` (default: the leaf), all types included; empty
    /// when `from` does not exist.
    pub fn branch_path(&self, from: Option<&str>) -> Result<Vec<SessionEntry>> {
        let start = match from {
            Some(id) => self.data.index.get(id),
            None => self.leaf,
        };
        match start {
            Some(s) => self.data.entries(&self.data.index.path_to(s)),
            None => Ok(Vec::new()),
        }
    }

    /// The ids of the entries from the root to `from` (default: the leaf), from the index:
    /// nothing is read. Empty when `from` does not exist.
    pub fn branch_ids(&self, from: Option<&str>) -> Vec<&str> {
        let start = match from {
            Some(id) => self.data.index.get(id),
            None => self.leaf,
        };
        start
            .map(|s| self.data.index.path_to(s))
            .unwrap_or_default()
            .into_iter()
            .map(|i| &*self.data.index.node(i).id)
            .collect()
    }

    /// What the agent continues from: the messages from the root to the leaf (a compaction
    /// replaces what it summarized; branch summaries in place), and the model and thinking
    /// level in force at the leaf. Reads only the entries it returns.
    pub fn build_session_context(&self) -> Result<SessionContext> {
        context::build(&self.data, self.leaf)
    }

    /// The entry tree (no bodies are read).
    pub fn tree(&self) -> SessionTree {
        SessionTree::build(&self.data.index)
    }

    // ------------------------------------------------------------------ navigation

    /// Moves the leaf to entry `id`: the next append starts a new branch there. Nothing is
    /// written (as in pi, a move without a following append is not remembered on reload).
    pub fn branch(&mut self, id: &str) -> Result<()> {
        let idx = self
            .data
            .index
            .get(id)
            .ok_or_else(|| SessionError::EntryNotFound { id: id.to_owned() })?;
        self.leaf = Some(idx);
        Ok(())
    }

    /// Moves the leaf before the first entry: the next append is a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// Moves this manager to a new session holding only the path from the root to
    /// `leaf_id` (labels on that path are carried over as label entries), whose header
    /// names the current file as `parentSession`. Returns the new file (`None` in memory).
    /// Unlike pi, the new file is written at once.
    pub fn create_branched_session(&mut self, leaf_id: &str) -> Result<Option<PathBuf>> {
        let leaf = self
            .data
            .index
            .get(leaf_id)
            .ok_or_else(|| SessionError::EntryNotFound {
                id: leaf_id.to_owned(),
            })?;
        let index = &self.data.index;
        let path: Vec<u32> = index
            .path_to(leaf)
            .into_iter()
            .filter(|&i| index.node(i).entry_type != EntryType::Label)
            .collect();
        let mut taken: std::collections::HashSet<String> =
            path.iter().map(|&i| index.node(i).id.to_string()).collect();
        let mut parent = path.last().map(|&i| index.node(i).id.to_string());
        let mut label_lines = Vec::new();
        for (target, state) in index.labels_in_order() {
            if !taken.contains(target) {
                continue;
            }
            let id = loop {
                let hex = uuid::Uuid::new_v4().simple().to_string();
                if !taken.contains(&hex[..8]) {
                    break hex[..8].to_owned();
                }
            };
            taken.insert(id.clone());
            let entry = SessionEntry::Label(LabelEntry {
                id: id.clone(),
                parent_id: parent.replace(id),
                timestamp: state.timestamp.clone(),
                target_id: target.to_owned(),
                label: Some(state.label.clone()),
                extra: Extra::new(),
            });
            label_lines.push(to_line(&entry)?);
        }
        let mut header = SessionHeader::new(new_session_id(), now_iso(), self.cwd.clone());
        match &self.data.store {
            Store::File(f) => {
                header.parent_session = Some(f.path().display().to_string());
                let dir = self.session_dir.clone().unwrap_or_default();
                let file = dir.join(format!(
                    "{}_{}.jsonl",
                    file_timestamp(&header.timestamp),
                    header.id
                ));
                let store = write_file(
                    &file,
                    &header,
                    &self.data,
                    &path,
                    &label_lines,
                    self.options.sync_settings(),
                )?;
                *self = SessionManager::from_store(
                    store,
                    self.session_dir.clone(),
                    self.options.clone(),
                    Some(self.cwd.clone()),
                    false,
                )?
                .0;
                Ok(Some(file))
            }
            Store::Memory(_) => {
                let mut image = to_line(&header)?;
                image.push(b'\n');
                for line in self.data.v3_lines(&path)?.into_iter().chain(label_lines) {
                    image.extend_from_slice(&line);
                    image.push(b'\n');
                }
                let loaded = index::load(image.as_slice(), Path::new("<memory>"), false, u64::MAX)?;
                let leaf = loaded.index.len().checked_sub(1).map(|l| l as u32);
                self.data = Data {
                    index: loaded.index,
                    store: Store::Memory(MemoryWriter::from_bytes(image)),
                    source_version: super::CURRENT_SESSION_VERSION,
                };
                self.header = header;
                self.leaf = leaf;
                Ok(None)
            }
        }
    }
}
