//! Where entry lines live: a file (append-only, locked, read back with positioned reads) or
//! memory.
//!
//! Durability rules, in one place:
//! * every append is one `write` of whole lines ending in `\n` (`O_APPEND`), done before the
//!   call returns, then `fdatasync`ed when the [`FsyncPolicy`] asks for it;
//! * when the file does not end with `\n` (a torn last line, or a failed write) the next
//!   append starts with a `\n`, so the torn line stays one skippable line and nothing is
//!   rewritten;
//! * a writer holds an exclusive advisory lock (`flock`) on the file, so a second writer —
//!   in another process or in this one — is refused instead of interleaved.

use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::{Result, SessionError};
use super::index::Loc;

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
    fn sync(&self, file: &File, path: &Path) -> std::io::Result<()> {
        if let Some(hook) = &self.hook {
            (hook.0)(path)?;
        }
        file.sync_data()
    }
}

/// The lines of a session.
#[derive(Debug)]
pub(crate) enum Store {
    Memory(Vec<u8>),
    File(FileStore),
}

#[derive(Debug)]
pub(crate) struct FileStore {
    pub(crate) path: PathBuf,
    /// `None` until the first append of a new session creates the file.
    file: Option<File>,
    writable: bool,
    needs_newline: bool,
    pub(crate) fsync: SyncSettings,
}

/// How long a lock held by someone else is waited for before the file counts as locked: a
/// process spawned by this one (a tool's command) shares the open file, and with it the lock,
/// for the moment between its fork and its exec, so a writer that was just closed can look
/// alive for a few microseconds.
const LOCK_GRACE: std::time::Duration = std::time::Duration::from_millis(20);

fn lock(file: &File, path: &Path) -> Result<()> {
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

impl FileStore {
    /// Opens an existing file for reading, and for appending unless `read_only`; a writer
    /// takes the lock.
    pub(crate) fn open(path: &Path, read_only: bool, fsync: SyncSettings) -> Result<FileStore> {
        let file = if read_only {
            File::open(path)
        } else {
            OpenOptions::new().read(true).append(true).open(path)
        }
        .map_err(|e| SessionError::io(path, e))?;
        if !read_only {
            lock(&file, path)?;
        }
        Ok(FileStore {
            path: path.to_owned(),
            file: Some(file),
            writable: !read_only,
            needs_newline: false,
            fsync,
        })
    }

    /// A store for a file that does not exist yet; it is created by the first append.
    pub(crate) fn new_file(path: PathBuf, fsync: SyncSettings) -> FileStore {
        FileStore {
            path,
            file: None,
            writable: true,
            needs_newline: false,
            fsync,
        }
    }

    pub(crate) fn set_needs_newline(&mut self, yes: bool) {
        self.needs_newline = yes;
    }

    pub(crate) fn file(&self) -> Option<&File> {
        self.file.as_ref()
    }

    fn create(&mut self) -> Result<&File> {
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
        lock(&file, &self.path)?;
        Ok(self.file.insert(file))
    }

    /// Appends whole lines (without `\n`) in one write; returns where each one is.
    pub(crate) fn append(&mut self, lines: &[Vec<u8>]) -> Result<Vec<Loc>> {
        if !self.writable {
            return Err(SessionError::ReadOnly {
                path: self.path.clone(),
            });
        }
        let lead = usize::from(self.needs_newline);
        let mut buf = Vec::with_capacity(lead + lines.iter().map(|l| l.len() + 1).sum::<usize>());
        if self.needs_newline {
            buf.push(b'\n');
        }
        for line in lines {
            buf.extend_from_slice(line);
            buf.push(b'\n');
        }
        let path = self.path.clone();
        let fsync = self.fsync.clone();
        let file = match self.file.as_ref() {
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
                self.needs_newline = true;
                return Err(SessionError::io(path, e));
            }
        };
        if fsync.policy == FsyncPolicy::Always
            && let Err(source) = fsync.sync(file, &path)
        {
            // Not durable, so not acknowledged: take the lines back out of the file (this
            // writer holds the lock, nobody appended after them), so a reopen does not
            // show them either. Should that fail too, the next append starts a new line.
            let start = end - buf.len() as u64;
            if file.set_len(start).is_err() {
                self.needs_newline = true;
            }
            return Err(SessionError::Sync { path, source });
        }
        self.needs_newline = false;
        let mut offset = end - buf.len() as u64 + lead as u64;
        Ok(lines
            .iter()
            .map(|l| {
                let loc = Loc {
                    offset,
                    len: l.len() as u64,
                };
                offset += l.len() as u64 + 1;
                loc
            })
            .collect())
    }
}

impl Store {
    /// Appends whole lines (without `\n`); returns where each one is.
    pub(crate) fn append(&mut self, lines: &[Vec<u8>]) -> Result<Vec<Loc>> {
        match self {
            Store::Memory(buf) => Ok(lines
                .iter()
                .map(|l| {
                    let loc = Loc {
                        offset: buf.len() as u64,
                        len: l.len() as u64,
                    };
                    buf.extend_from_slice(l);
                    buf.push(b'\n');
                    loc
                })
                .collect()),
            Store::File(f) => f.append(lines),
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
            Store::Memory(buf) => {
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
                            path: fs.path.clone(),
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
                                path: fs.path.clone(),
                            }
                        } else {
                            SessionError::io(&fs.path, e)
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
            Store::File(f) => Some(&f.path),
        }
    }
}
