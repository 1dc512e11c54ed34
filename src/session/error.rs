//! [`SessionError`]: what can go wrong opening, reading or writing a session file.

use std::path::PathBuf;

/// An error of the session layer.
///
/// Corrupt *lines* are not errors: a line that is not JSON (a crash mid-write, a bad edit) is
/// skipped with a `tracing` warning, as pi skips it. These errors are for files that cannot
/// be used at all, for writes that did not happen, and for misuse of the API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Reading or writing the file failed.
    #[error("session file {path}: {source}")]
    Io {
        /// The file (or directory).
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// With [`FsyncPolicy::Always`](super::FsyncPolicy::Always): the entry was written but
    /// could not be forced to stable storage. It is not acknowledged: the append failed, the
    /// leaf did not move, and the line was taken back out of the file.
    #[error("session file {path}: cannot sync appended entries to disk: {source}")]
    Sync {
        /// The file.
        path: PathBuf,
        /// The error of `fdatasync`.
        #[source]
        source: std::io::Error,
    },
    /// The file has content but no session header (`{"type":"session",...}`) as its first
    /// JSON line: it is not a pi session file. pi would silently truncate such a file; this
    /// crate leaves it alone.
    #[error("{path} is not a session file: {reason}")]
    NotASession {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// The header's `version` is newer than this crate understands (3).
    #[error(
        "{path}: session format version {version} is not supported (this crate reads versions 1 to 3)"
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version in the header.
        version: String,
    },
    /// Another writer holds the file's lock (another process, or another `SessionManager`
    /// in this one). Two writers are never interleaved.
    #[error("session file {path} is locked by another writer")]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// No entry has this id.
    #[error("entry {id} not found")]
    EntryNotFound {
        /// The id asked for.
        id: String,
    },
    /// An entry's JSON does not have the shape its `type` requires.
    #[error("entry {id}: {source}")]
    InvalidEntry {
        /// The entry's id.
        id: String,
        /// What did not fit.
        #[source]
        source: serde_json::Error,
    },
    /// An entry's line was indexed when the file was opened (its `id` and `type` read), but
    /// the line as a whole does not parse (for example a number too large for JSON's
    /// doubles): that one entry cannot be read. Building the context leaves it out with a
    /// `tracing` warning; the rest of the session is unaffected.
    #[error("session file {path}: entry {id} (at byte {offset}) cannot be parsed: {source}")]
    UnreadableEntry {
        /// The file (empty for a session in memory).
        path: PathBuf,
        /// The entry's id.
        id: String,
        /// Where its line starts in the file.
        offset: u64,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// The file changed under this manager (an entry is no longer where it was written).
    #[error("session file {path} was modified by another program")]
    ModifiedExternally {
        /// The file.
        path: PathBuf,
    },
    /// An entry's line would be longer than the session's line bound
    /// ([`SessionOptions::with_max_line_bytes`](super::SessionOptions::with_max_line_bytes),
    /// default 256 MiB): nothing was written. A longer line in a file is skipped with a
    /// warning when the file is read.
    #[error("entry of {size} bytes is larger than the session line limit of {limit} bytes")]
    EntryTooLarge {
        /// The size of the entry's JSON line.
        size: u64,
        /// The bound in force.
        limit: u64,
    },
    /// The session is read-only (opened with [`SessionOptions::read_only`](super::SessionOptions::read_only)).
    #[error("session {path} was opened read-only")]
    ReadOnly {
        /// The file.
        path: PathBuf,
    },
    /// Blocking work of the session — an append, an open — was abandoned before it ran,
    /// because its tokio runtime shut down or a thread could not be started: it did not
    /// take effect (an append is not in the file, and not acknowledged).
    #[error("session file {path}: the work was abandoned before it ran (the runtime shut down)")]
    Abandoned {
        /// The file.
        path: PathBuf,
    },
    /// A value could not be serialized to JSON (a custom `data` or `details` value that is
    /// not representable).
    #[error("cannot serialize entry: {0}")]
    Serialize(#[source] serde_json::Error),
}

impl SessionError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SessionError::Io {
            path: path.into(),
            source,
        }
    }
}

/// Shorthand for results of the session layer.
pub type Result<T, E = SessionError> = std::result::Result<T, E>;
