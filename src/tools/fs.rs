//! The file system the file tools (`read`, `write`, `edit`, `ls`) work on: the [`FileSystem`]
//! trait (pi's `*Operations`), so an application can point them at a remote machine, a
//! container or an in-memory tree, and [`LocalFs`], the local disk, optionally confined to a
//! root directory.
//!
//! Confinement resolves every path through an open handle on the root (`cap-std`, which uses
//! `openat2(RESOLVE_BENEATH)` where the kernel has it and a component-by-component walk with
//! `O_NOFOLLOW` elsewhere), so a `..`, an absolute path elsewhere or a symlink that leads out
//! is refused, and a file swapped for a symlink between a check and the open cannot escape:
//! there is no separate check.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else (a socket, a device, a broken symlink).
    Other,
}

/// What [`FileSystem::metadata`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metadata {
    /// File, directory or other (symlinks followed).
    pub kind: FileKind,
    /// Size in bytes.
    pub len: u64,
}

impl Metadata {
    /// Metadata of the given kind and size.
    pub fn new(kind: FileKind, len: u64) -> Self {
        Metadata { kind, len }
    }
}

/// One entry of [`FileSystem::read_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DirEntry {
    /// The entry's file name (lossily UTF-8).
    pub name: String,
    /// What it is, symlinks followed (a broken link is [`FileKind::Other`]).
    pub kind: FileKind,
}

impl DirEntry {
    /// An entry.
    pub fn new(name: impl Into<String>, kind: FileKind) -> Self {
        DirEntry {
            name: name.into(),
            kind,
        }
    }
}

/// The file operations of `read`, `write`, `edit` and `ls`. Paths are absolute: the tool has
/// resolved them against its cwd.
///
/// Errors are `io::Error`s; their [`io::ErrorKind`] picks the text the model reads (pi's
/// `ENOENT: no such file or directory, …`), so an implementation for a remote machine should
/// map its failures to the nearest kind.
///
/// # Cancel safety
///
/// A tool may drop a call's future when the run is aborted. An implementation should leave
/// nothing half-done on drop beyond what the operation itself implies (a `write` dropped
/// midway may have written part of the file, as a local write would).
#[async_trait]
pub trait FileSystem: Send + Sync + fmt::Debug + 'static {
    /// The whole file.
    async fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Creates or replaces the file with `contents` (the parent directory exists).
    async fn write(&self, path: &Path, contents: &[u8]) -> io::Result<()>;
    /// Creates the directory and its missing parents.
    async fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// What the path is, symlinks followed.
    async fn metadata(&self, path: &Path) -> io::Result<Metadata>;
    /// The entries of a directory, in no particular order (without `.` and `..`).
    async fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>>;
    /// The path with symlinks resolved, naming the same file for every spelling; it keys the
    /// per-file mutation queue. The default returns the path as it is.
    async fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(path.to_owned())
    }
    /// Whether the path exists (symlinks followed).
    async fn exists(&self, path: &Path) -> bool {
        self.metadata(path).await.is_ok()
    }
    /// The directory on the local disk that in-process search (`grep`, `find`) may walk for
    /// `path`, and the root it must stay in. `None` (the default) for a file system that is
    /// not the local disk.
    fn local_search_root(&self) -> Option<LocalSearch> {
        None
    }
}

/// What [`FileSystem::local_search_root`] allows: a walk of the local disk, confined to
/// `root` when there is one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LocalSearch {
    /// Every path searched must be inside it (symlinks resolved); `None`: anywhere.
    pub root: Option<PathBuf>,
}

/// The local disk. Its I/O runs on tokio's blocking pool, off the async threads.
///
/// ```
/// use pi_engine::tools::{FileSystem, LocalFs};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
/// let dir = tempfile::tempdir()?;
/// let fs = LocalFs::confined(dir.path())?;
/// fs.write(&dir.path().join("a.txt"), b"hi").await?;
/// assert_eq!(fs.read(&dir.path().join("a.txt")).await?, b"hi");
/// // Outside the root: refused, whichever way the path gets there.
/// assert!(fs.read(&dir.path().join("../../etc/passwd")).await.is_err());
/// assert!(fs.read(std::path::Path::new("/etc/passwd")).await.is_err());
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct LocalFs {
    root: Option<Arc<Root>>,
}

struct Root {
    /// As given, and with symlinks resolved: an absolute path under either is inside.
    given: PathBuf,
    canonical: PathBuf,
    dir: cap_std::fs::Dir,
}

impl fmt::Debug for LocalFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalFs")
            .field("root", &self.root.as_ref().map(|r| &r.given))
            .finish()
    }
}

impl LocalFs {
    /// The whole local disk.
    pub fn new() -> Self {
        LocalFs { root: None }
    }

    /// The local disk below `root` only: a path that resolves outside it (through `..`, an
    /// absolute path elsewhere or a symlink) fails with [`io::ErrorKind::PermissionDenied`].
    /// Fails when `root` is not a directory.
    pub fn confined(root: impl AsRef<Path>) -> io::Result<Self> {
        let given = super::path::normalize(&std::path::absolute(root.as_ref())?);
        let canonical = std::fs::canonicalize(&given)?;
        let dir = cap_std::fs::Dir::open_ambient_dir(&canonical, cap_std::ambient_authority())?;
        Ok(LocalFs {
            root: Some(Arc::new(Root {
                given,
                canonical,
                dir,
            })),
        })
    }

    /// The root this file system is confined to, if any.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_ref().map(|r| r.given.as_path())
    }

    async fn run<T: Send + 'static>(
        &self,
        path: &Path,
        local: impl FnOnce(&Path) -> io::Result<T> + Send + 'static,
        confined: impl FnOnce(&cap_std::fs::Dir, &Path) -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let path = path.to_owned();
        let root = self.root.clone();
        let job = move || match root {
            None => local(&path),
            Some(root) => {
                let rel = root.relative(&path)?;
                confined(&root.dir, &rel)
            }
        };
        match tokio::task::spawn_blocking(job).await {
            Ok(result) => result,
            Err(e) => Err(io::Error::other(format!("file system task failed: {e}"))),
        }
    }
}

impl Root {
    /// The path relative to the root, or the error for a path outside it.
    fn relative(&self, path: &Path) -> io::Result<PathBuf> {
        let path = super::path::normalize(path);
        let rel = path
            .strip_prefix(&self.given)
            .or_else(|_| path.strip_prefix(&self.canonical))
            .map_err(|_| outside(&path, &self.given))?;
        Ok(if rel.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            rel.to_owned()
        })
    }
}

pub(crate) fn outside(path: &Path, root: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "Path {} is outside the allowed root {}",
            path.display(),
            root.display()
        ),
    )
}

/// cap-std's own refusal ("a path led outside of the filesystem") with the path in it.
fn escaped(e: io::Error, path: &Path) -> io::Error {
    if e.kind() == io::ErrorKind::PermissionDenied {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("Path {} resolves outside the allowed root", path.display()),
        )
    } else {
        e
    }
}

fn kind_of(ft: std::fs::FileType) -> FileKind {
    if ft.is_file() {
        FileKind::File
    } else if ft.is_dir() {
        FileKind::Dir
    } else {
        FileKind::Other
    }
}

#[async_trait]
impl FileSystem for LocalFs {
    async fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.run(
            path,
            |p| std::fs::read(p),
            |d, p| d.read(p).map_err(|e| escaped(e, p)),
        )
        .await
    }

    async fn write(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        // One copy to move to the blocking pool, shared by whichever branch runs.
        let (a, b): (Arc<[u8]>, Arc<[u8]>) = {
            let data: Arc<[u8]> = contents.into();
            (data.clone(), data)
        };
        self.run(
            path,
            move |p| std::fs::write(p, &a),
            move |d, p| d.write(p, &b).map_err(|e| escaped(e, p)),
        )
        .await
    }

    async fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.run(
            path,
            |p| std::fs::create_dir_all(p),
            |d, p| d.create_dir_all(p).map_err(|e| escaped(e, p)),
        )
        .await
    }

    async fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.run(
            path,
            |p| std::fs::metadata(p).map(|m| Metadata::new(kind_of(m.file_type()), m.len())),
            |d, p| {
                let m = d.metadata(p).map_err(|e| escaped(e, p))?;
                let kind = if m.is_file() {
                    FileKind::File
                } else if m.is_dir() {
                    FileKind::Dir
                } else {
                    FileKind::Other
                };
                Ok(Metadata::new(kind, m.len()))
            },
        )
        .await
    }

    async fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        self.run(
            path,
            |p| {
                let mut out = Vec::new();
                for entry in std::fs::read_dir(p)? {
                    let entry = entry?;
                    // Follow a symlink to say what it points at, as pi's `statSync` does.
                    let kind = std::fs::metadata(entry.path())
                        .map(|m| kind_of(m.file_type()))
                        .unwrap_or(FileKind::Other);
                    out.push(DirEntry::new(entry.file_name().to_string_lossy(), kind));
                }
                Ok(out)
            },
            |d, p| {
                let mut out = Vec::new();
                for entry in d.read_dir(p).map_err(|e| escaped(e, p))? {
                    let entry = entry?;
                    let name = entry.file_name();
                    let kind = match d.metadata(p.join(&name)) {
                        Ok(m) if m.is_file() => FileKind::File,
                        Ok(m) if m.is_dir() => FileKind::Dir,
                        // A link leading out of the root is listed, but as nothing to open.
                        _ => FileKind::Other,
                    };
                    out.push(DirEntry::new(name.to_string_lossy(), kind));
                }
                Ok(out)
            },
        )
        .await
    }

    async fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let root = self.root.clone();
        self.run(
            path,
            |p| std::fs::canonicalize(p),
            move |d, p| {
                let rel = d.canonicalize(p).map_err(|e| escaped(e, p))?;
                let base = root.map(|r| r.canonical.clone()).unwrap_or_default();
                Ok(base.join(rel))
            },
        )
        .await
    }

    fn local_search_root(&self) -> Option<LocalSearch> {
        Some(LocalSearch {
            root: self.root.as_ref().map(|r| r.canonical.clone()),
        })
    }
}

/// The text node gives an I/O error: `ENOENT: no such file or directory, access '/x/y'`.
/// pi's tools pass these through to the model, so ours read the same.
pub(crate) fn node_error(e: &io::Error, syscall: &str, path: &Path) -> String {
    match errno_name(e) {
        Some((code, text)) => format!("{code}: {text}, {syscall} '{}'", path.display()),
        None => e.to_string(),
    }
}

/// The error code node would name (`ENOENT`), if the error is one it has a name for.
pub(crate) fn error_code(e: &io::Error) -> Option<&'static str> {
    errno_name(e).map(|(code, _)| code)
}

fn errno_name(e: &io::Error) -> Option<(&'static str, &'static str)> {
    use io::ErrorKind as K;
    // A refusal of the root confinement is ours, not the OS's: its own text says what happened.
    if e.raw_os_error().is_none() && e.get_ref().is_some() {
        return None;
    }
    // ELOOP has no stable ErrorKind yet: by its number (Linux 40, the BSDs and macOS 62).
    let eloop = if cfg!(target_os = "linux") { 40 } else { 62 };
    if e.raw_os_error() == Some(eloop) {
        return Some(("ELOOP", "too many symbolic links encountered"));
    }
    Some(match e.kind() {
        K::NotFound => ("ENOENT", "no such file or directory"),
        K::PermissionDenied => ("EACCES", "permission denied"),
        K::IsADirectory => ("EISDIR", "illegal operation on a directory"),
        K::NotADirectory => ("ENOTDIR", "not a directory"),
        K::AlreadyExists => ("EEXIST", "file already exists"),
        K::InvalidFilename => ("ENAMETOOLONG", "name too long"),
        K::StorageFull => ("ENOSPC", "no space left on device"),
        K::ReadOnlyFilesystem => ("EROFS", "read-only file system"),
        K::ResourceBusy => ("EBUSY", "resource busy or locked"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn confined_refuses_a_symlink_out_of_the_root() {
        let outside_dir = tempfile::tempdir().unwrap();
        std::fs::write(outside_dir.path().join("secret"), b"s").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside_dir.path(), root.path().join("link")).unwrap();
        std::fs::write(root.path().join("ok.txt"), b"ok").unwrap();
        let fs = LocalFs::confined(root.path()).unwrap();
        assert_eq!(fs.read(&root.path().join("ok.txt")).await.unwrap(), b"ok");
        let err = fs.read(&root.path().join("link/secret")).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("outside"), "{err}");
        // Writing through the link is refused too, and leaves nothing behind.
        assert!(fs.write(&root.path().join("link/new"), b"x").await.is_err());
        assert!(!outside_dir.path().join("new").exists());
        // An absolute path elsewhere.
        let err = fs
            .read(&outside_dir.path().join("secret"))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("outside the allowed root"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_symlink_inside_the_root_is_fine() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("real")).unwrap();
        std::fs::write(root.path().join("real/f"), b"f").unwrap();
        std::os::unix::fs::symlink("real", root.path().join("alias")).unwrap();
        let fs = LocalFs::confined(root.path()).unwrap();
        assert_eq!(fs.read(&root.path().join("alias/f")).await.unwrap(), b"f");
        let canon = fs.canonicalize(&root.path().join("alias/f")).await.unwrap();
        assert_eq!(
            canon,
            std::fs::canonicalize(root.path().join("real/f")).unwrap()
        );
    }

    #[test]
    fn node_texts() {
        let e = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(
            node_error(&e, "access", Path::new("/x")),
            "ENOENT: no such file or directory, access '/x'"
        );
        assert_eq!(
            error_code(&io::Error::from_raw_os_error(21)),
            Some("EISDIR")
        );
    }
}
