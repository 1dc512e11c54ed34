//! Where entry lines live: a file (append-only, locked, read back with positioned reads) or
//! memory, each written through its [`SessionWriter`] (the durability rules are in
//! [`writer`](super::writer)).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::{Result, SessionError};
use super::index::Loc;
use super::writer::{JsonlFileWriter, MemoryWriter, SessionWriter};

/// When appended entries are forced to stable storage.
///
/// Either way each append is handed to the operating system before the call returns, so a
/// crash of the process loses nothing that was appended. `Always` also survives a power
/// loss, at the cost of a disk flush per entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FsyncPolicy {
    /// Never call `fsync` (pi's behaviour).
    #[default]
    Never,
    /// `fdatasync` after every append.
    Always,
}

/// A function called in place of each `fdatasync` of appended entries (after which the
/// real sync runs when it returns `Ok`): for tests of the durability policy, which count
/// syncs and make them fail. Not part of the stable API.
#[doc(hidden)]
#[derive(Clone)]
pub struct SyncHook(pub(crate) Arc<SyncFn>);

type SyncFn = dyn Fn(&Path) -> std::io::Result<()> + Send + Sync;

impl SyncHook {
    /// Wraps `f`.
    pub fn new(f: impl Fn(&Path) -> std::io::Result<()> + Send + Sync + 'static) -> Self {
        SyncHook(Arc::new(f))
    }
}

impl std::fmt::Debug for SyncHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SyncHook")
    }
}

/// The durability settings of a file store: the policy, and the test hook on its syncs.
#[derive(Debug, Clone, Default)]
pub(crate) struct SyncSettings {
    pub(crate) policy: FsyncPolicy,
    pub(crate) hook: Option<SyncHook>,
}

impl SyncSettings {
    pub(crate) fn sync(&self, file: &File, path: &Path) -> std::io::Result<()> {
        if let Some(hook) = &self.hook {
            (hook.0)(path)?;
        }
        file.sync_data()
    }
}

/// The lines of a session: a JSONL file or memory, each behind its [`SessionWriter`].
#[derive(Debug)]
pub(crate) enum Store {
    Memory(MemoryWriter),
    File(JsonlFileWriter),
}

#[cfg(unix)]
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Store {
    /// Appends whole lines (without `\n`), blocking the calling thread until they are
    /// durable; returns where each one is.
    pub(crate) fn append(&mut self, lines: Vec<Vec<u8>>) -> Result<Vec<Loc>> {
        self.writer().append_blocking(lines)
    }

    /// The writer of this store.
    pub(crate) fn writer(&self) -> &dyn SessionWriter {
        match self {
            Store::Memory(m) => m,
            Store::File(f) => f,
        }
    }

    /// A handle on this store's writer that outlives the borrow (clones share the queue).
    pub(crate) fn shared_writer(&self) -> Arc<dyn SessionWriter> {
        match self {
            Store::Memory(m) => Arc::new(m.clone()),
            Store::File(f) => Arc::new(f.clone()),
        }
    }

    /// Calls `f(i, line)` for each location, reading nearby lines of a file together (one
    /// positioned read per run of close lines, at most `MAX_RUN` bytes at a time).
    pub(crate) fn for_each_line<F>(&self, locs: &[Loc], mut f: F) -> Result<()>
    where
        F: FnMut(usize, &[u8]) -> Result<()>,
    {
        const MAX_GAP: u64 = 64 << 10;
        const MAX_RUN: u64 = 256 << 10;
        match self {
            Store::Memory(mem) => {
                let buf = mem.read();
                for (i, loc) in locs.iter().enumerate() {
                    let line = buf
                        .get(loc.offset as usize..loc.end() as usize)
                        .ok_or_else(|| SessionError::ModifiedExternally {
                            path: PathBuf::new(),
                        })?;
                    f(i, line)?;
                }
                Ok(())
            }
            Store::File(fs) => {
                let Some(file) = fs.file() else {
                    return if locs.is_empty() {
                        Ok(())
                    } else {
                        Err(SessionError::ModifiedExternally {
                            path: fs.path().to_owned(),
                        })
                    };
                };
                let mut buf = Vec::new();
                let mut i = 0;
                while i < locs.len() {
                    let start = locs[i].offset;
                    let mut end = locs[i].end();
                    let mut j = i + 1;
                    while j < locs.len()
                        && locs[j].offset >= end
                        && locs[j].offset - end <= MAX_GAP
                        && locs[j].end() - start <= MAX_RUN
                    {
                        end = locs[j].end();
                        j += 1;
                    }
                    buf.resize((end - start) as usize, 0);
                    read_exact_at(file, &mut buf, start).map_err(|e| {
                        if e.kind() == std::io::ErrorKind::UnexpectedEof {
                            SessionError::ModifiedExternally {
                                path: fs.path().to_owned(),
                            }
                        } else {
                            SessionError::io(fs.path(), e)
                        }
                    })?;
                    for (k, loc) in locs.iter().enumerate().take(j).skip(i) {
                        let s = (loc.offset - start) as usize;
                        f(k, &buf[s..s + loc.len as usize])?;
                    }
                    i = j;
                }
                Ok(())
            }
        }
    }

    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Store::Memory(_) => None,
            Store::File(f) => Some(f.path()),
        }
    }
}
