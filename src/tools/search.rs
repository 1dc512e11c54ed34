//! What `grep`, `find` and `ls` share: their arguments, where a search may walk, the parallel
//! walk of the local disk (ripgrep's `ignore` crate), a collector that keeps the first results
//! in path order while the walk runs, and the plain walk through a [`FileSystem`] for a file
//! system that is not the local disk.
//!
//! Results are always in path order, compared component by component (`a/b` before `a.txt`,
//! the order of a depth-first walk that visits each directory's entries sorted by name, as
//! `rg --sort path` prints). A parallel walk visits in no particular order, so with a result
//! limit the collector keeps the first `limit` results found so far in that order; once it
//! has `limit` of them, anything that sorts after the last one kept cannot be among the first
//! `limit`: such a file is not searched and such a directory is not entered. The output is
//! exactly the first `limit` results of a complete sorted walk, however the threads raced.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{self, AtomicBool};
use std::sync::{Mutex, MutexGuard};

use ignore::WalkBuilder;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::fs::{FileKind, FileSystem, LocalSearch};
use super::{ABORTED, fail};
use crate::agent::ToolError;

/// JavaScript's `Number.MAX_SAFE_INTEGER`: pi's "no line limit" for `truncateHead`, which
/// `details.truncation.maxLines` shows.
pub(super) const NO_LINE_LIMIT: usize = 9_007_199_254_740_991;

/// A string argument (`None` when absent or not a string).
pub(super) fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// A boolean argument, false unless `true`.
pub(super) fn bool_arg(args: &Map<String, Value>, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// A count argument: a JSON number (maybe a float, rounded up, as pi's `count >= limit`
/// stops at the first whole count past it), at least 1; `default` when absent.
pub(super) fn limit_arg(args: &Map<String, Value>, key: &str, default: usize) -> usize {
    match args.get(key).and_then(Value::as_f64) {
        Some(n) if n.is_finite() => {
            let n = n.ceil();
            if n < 1.0 {
                1
            } else if n >= usize::MAX as f64 {
                usize::MAX
            } else {
                n as usize
            }
        }
        _ => default,
    }
}

/// A non-negative whole-number argument (`grep`'s `context`): 0 when absent or not positive.
pub(super) fn count_arg(args: &Map<String, Value>, key: &str) -> usize {
    match args.get(key).and_then(Value::as_f64) {
        Some(n) if n.is_finite() && n > 0.0 => {
            if n >= u32::MAX as f64 {
                u32::MAX as usize
            } else {
                n.floor() as usize
            }
        }
        _ => 0,
    }
}

/// A search path on the local disk, checked.
#[derive(Debug)]
pub(super) struct LocalTarget {
    /// The path to walk: as given, or with symlinks resolved when the search is confined.
    pub(super) walk: PathBuf,
    /// A directory (else a single file, or something that is neither).
    pub(super) is_dir: bool,
    /// A regular file (after symlinks).
    pub(super) is_file: bool,
    /// Confined to a root: paths inside the walk are spelled from the canonical root.
    pub(super) confined: bool,
}

/// Why a search path cannot be searched.
#[derive(Debug)]
pub(super) enum Unsearchable {
    /// It does not exist (or cannot be looked at).
    NotFound,
    /// It resolves outside the root the search is confined to; the text says so.
    Outside(String),
}

/// Checks `path` for a search of the local disk (blocking): it exists, and, when confined,
/// resolves (symlinks followed) inside the root. The walk itself never follows a symlink, so
/// nothing below a checked path leads out.
pub(super) fn local_target(search: &LocalSearch, path: &Path) -> Result<LocalTarget, Unsearchable> {
    let meta = std::fs::metadata(path).map_err(|_| Unsearchable::NotFound)?;
    let (walk, confined) = match &search.root {
        None => (path.to_owned(), false),
        Some(root) => {
            let canonical = std::fs::canonicalize(path).map_err(|_| Unsearchable::NotFound)?;
            if !canonical.starts_with(root) {
                return Err(Unsearchable::Outside(
                    super::fs::outside(path, root).to_string(),
                ));
            }
            (canonical, true)
        }
    };
    Ok(LocalTarget {
        walk,
        is_dir: meta.is_dir(),
        is_file: meta.is_file(),
        confined,
    })
}

/// `cwd` spelled as the walk spells paths: with symlinks resolved when the search is confined
/// (glob overrides are matched relative to it).
pub(super) fn walk_cwd(cwd: &Path, confined: bool) -> PathBuf {
    if confined {
        std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned())
    } else {
        cwd.to_owned()
    }
}

/// The walker both searches use: hidden files included, symlinks not followed, `.gitignore`
/// (and `.ignore`, `.git/info/exclude`, the global git excludes, and `custom_ignore`) honoured
/// — only inside a git repository when `require_git` — and the `.git` directory itself
/// skipped.
pub(super) fn walker(
    root: &Path,
    cwd: &Path,
    require_git: bool,
    custom_ignore: &str,
) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(require_git)
        .add_custom_ignore_filename(custom_ignore)
        .current_dir(cwd)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

/// `path` below `root`, `/`-separated (lossily UTF-8).
pub(super) fn relative(path: &Path, root: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut out = String::new();
    for component in rel.components() {
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(&component.as_os_str().to_string_lossy());
    }
    out
}

/// Runs `job` on the blocking pool and returns its result, or [`ABORTED`] as soon as `cancel`
/// fires (the job sees the same token and stops at its next check).
pub(super) async fn run_blocking<T: Send + 'static>(
    cancel: &CancellationToken,
    job: impl FnOnce(&CancellationToken) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let token = cancel.clone();
    let task = tokio::task::spawn_blocking(move || job(&token));
    match super::abortable(cancel, task).await? {
        // The job ended because it saw the token: the call is aborted, not done.
        Ok(_) if cancel.is_cancelled() => Err(fail(ABORTED)),
        Ok(result) => result,
        Err(e) => Err(fail(format!("search failed: {e}"))),
    }
}

/// A path ordered as the walk's results are: component by component (`a/b` before `a.txt`).
/// For the clean paths a walk yields this is byte order with the separator ranked below every
/// other byte, which compares faster than [`Path`]'s own `Ord` (that parses components).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SortPath(pub(super) PathBuf);

impl Ord for SortPath {
    fn cmp(&self, other: &Self) -> Ordering {
        path_cmp(&self.0, &other.0)
    }
}

impl PartialOrd for SortPath {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Component-wise order of two clean paths (see [`SortPath`]).
pub(super) fn path_cmp(a: &Path, b: &Path) -> Ordering {
    let (a, b) = (
        a.as_os_str().as_encoded_bytes(),
        b.as_os_str().as_encoded_bytes(),
    );
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let rank = |byte: u8| {
        if std::path::is_separator(char::from(byte)) {
            0
        } else {
            u16::from(byte) + 1
        }
    };
    match (a.get(same), b.get(same)) {
        (Some(&x), Some(&y)) => rank(x).cmp(&rank(y)),
        (x, y) => x.is_some().cmp(&y.is_some()),
    }
}

/// The first results of a search in path order, while a parallel walk adds them in any
/// order: each path carries a count (grep: its matching lines, find: 1). Each walker thread
/// keeps its own [`TopLocal`] (no lock on the way); a thread whose kept counts reach `limit`
/// publishes the last path it keeps, and a path after the smallest such path cannot be among
/// the first `limit`.
#[derive(Debug)]
pub(super) struct TopPaths<T> {
    limit: usize,
    /// Set once a threshold is published.
    full: AtomicBool,
    threshold: Mutex<Option<SortPath>>,
    /// What each thread kept, handed over when its [`TopLocal`] is dropped.
    done: Mutex<Vec<Kept<T>>>,
}

#[derive(Debug)]
struct Kept<T> {
    items: BTreeMap<SortPath, (usize, T)>,
    /// Sum of the kept counts.
    total: usize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T> TopPaths<T> {
    /// Keeps the paths that make up the first `limit` counts.
    pub(super) fn new(limit: usize) -> Self {
        TopPaths {
            limit: limit.max(1),
            full: AtomicBool::new(false),
            threshold: Mutex::new(None),
            done: Mutex::new(Vec::new()),
        }
    }

    /// A collector for one thread.
    pub(super) fn local(&self) -> TopLocal<'_, T> {
        TopLocal {
            shared: self,
            kept: Kept {
                items: BTreeMap::new(),
                total: 0,
            },
        }
    }

    fn past_threshold(&self, path: &Path) -> bool {
        self.full.load(atomic::Ordering::Acquire)
            && lock(&self.threshold)
                .as_ref()
                .is_some_and(|t| path_cmp(path, &t.0).is_gt())
    }

    fn publish(&self, last: &SortPath) {
        let mut threshold = lock(&self.threshold);
        if threshold.as_ref().is_none_or(|t| last < t) {
            *threshold = Some(last.clone());
        }
        self.full.store(true, atomic::Ordering::Release);
    }

    /// The results in path order (the paths that make up the first `limit` counts), and
    /// whether they reach the limit (there may be more).
    pub(super) fn into_sorted(self) -> (Vec<(PathBuf, usize, T)>, bool) {
        let done = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut all: Vec<(SortPath, (usize, T))> =
            done.into_iter().flat_map(|kept| kept.items).collect();
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut total = 0;
        let mut out = Vec::new();
        for (path, (count, item)) in all {
            if total >= self.limit {
                break;
            }
            total += count;
            out.push((path.0, count, item));
        }
        (out, total >= self.limit)
    }
}

/// One thread's part of a [`TopPaths`].
#[derive(Debug)]
pub(super) struct TopLocal<'a, T> {
    shared: &'a TopPaths<T>,
    kept: Kept<T>,
}

impl<T> TopLocal<'_, T> {
    /// True when `path`, and everything below it, sorts after the first `limit` counts found
    /// so far: it cannot be among the results.
    pub(super) fn beyond(&self, path: &Path) -> bool {
        (self.kept.total >= self.shared.limit
            && self
                .kept
                .items
                .last_key_value()
                .is_some_and(|(last, _)| path_cmp(path, &last.0).is_gt()))
            || self.shared.past_threshold(path)
    }

    /// Adds a result at `path` with `count` (at least 1).
    pub(super) fn insert(&mut self, path: PathBuf, count: usize, item: T) {
        if self.beyond(&path) {
            return;
        }
        let limit = self.shared.limit;
        let kept = &mut self.kept;
        kept.total += count;
        if let Some((old, _)) = kept.items.insert(SortPath(path), (count, item)) {
            kept.total -= old;
        }
        // Drop the last paths while the others still make up the limit.
        while let Some((_, (last, _))) = kept.items.last_key_value() {
            let last = *last;
            if kept.total - last >= limit {
                kept.items.pop_last();
                kept.total -= last;
            } else {
                break;
            }
        }
        if kept.total >= limit
            && let Some((last, _)) = kept.items.last_key_value()
        {
            self.shared.publish(last);
        }
    }
}

impl<T> Drop for TopLocal<'_, T> {
    fn drop(&mut self) {
        let kept = std::mem::replace(
            &mut self.kept,
            Kept {
                items: BTreeMap::new(),
                total: 0,
            },
        );
        if !kept.items.is_empty() {
            lock(&self.shared.done).push(kept);
        }
    }
}

/// One entry of a [`FsWalk`].
#[derive(Debug, Clone)]
pub(super) struct FsEntry {
    /// Absolute.
    pub(super) path: PathBuf,
    /// Below the walk's root, `/`-separated.
    pub(super) rel: String,
    /// What it is (symlinks followed).
    pub(super) kind: FileKind,
}

/// Directories below the root a [`FsWalk`] enters at most (a guard against a link cycle on a
/// file system whose `canonicalize` cannot see it).
const MAX_FS_DEPTH: usize = 256;

/// A depth-first walk through [`FileSystem::read_dir`], each directory's entries in name order,
/// so entries come in path order: the walk for a file system that is not the local disk. It
/// includes hidden files, skips `.git`, and reads no ignore files. Directories that cannot be
/// read are passed over.
pub(super) struct FsWalk<'a> {
    fs: &'a dyn FileSystem,
    /// Entries still to visit, the next one last, with their depth.
    stack: Vec<(FsEntry, usize)>,
    /// Directories entered, by canonical path (a symlink cycle is entered once).
    seen: HashSet<PathBuf>,
}

impl<'a> FsWalk<'a> {
    /// A walk of the entries below `root` (a directory).
    pub(super) async fn new(fs: &'a dyn FileSystem, root: &Path) -> FsWalk<'a> {
        let mut walk = FsWalk {
            fs,
            stack: Vec::new(),
            seen: HashSet::new(),
        };
        let entry = FsEntry {
            path: root.to_owned(),
            rel: String::new(),
            kind: FileKind::Dir,
        };
        walk.enter(&entry, 0).await;
        walk
    }

    /// The next entry in path order. A directory's entries follow it only if
    /// [`descend`](Self::descend) is called for it before the next call.
    pub(super) fn next(&mut self) -> Option<(FsEntry, usize)> {
        self.stack.pop()
    }

    /// Visits the entries of `entry` (a directory at `depth`) next.
    pub(super) async fn descend(&mut self, entry: &FsEntry, depth: usize) {
        if entry.kind == FileKind::Dir && depth < MAX_FS_DEPTH {
            self.enter(entry, depth).await;
        }
    }

    async fn enter(&mut self, dir: &FsEntry, depth: usize) {
        let canonical = self
            .fs
            .canonicalize(&dir.path)
            .await
            .unwrap_or_else(|_| dir.path.clone());
        if !self.seen.insert(canonical) {
            return;
        }
        let Ok(mut entries) = self.fs.read_dir(&dir.path).await else {
            return;
        };
        entries.retain(|e| e.name != ".git" && !e.name.is_empty());
        // Reverse order: the stack pops the smallest name first.
        entries.sort_by(|a, b| b.name.cmp(&a.name));
        for e in entries {
            let rel = if dir.rel.is_empty() {
                e.name.clone()
            } else {
                format!("{}/{}", dir.rel, e.name)
            };
            self.stack.push((
                FsEntry {
                    path: dir.path.join(&e.name),
                    rel,
                    kind: e.kind,
                },
                depth + 1,
            ));
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! An in-memory [`FileSystem`] for the tools' tests, and tests of the shared parts.

    use super::*;
    use crate::tools::fs::{DirEntry, Metadata};
    use async_trait::async_trait;
    use std::io;

    /// A tree of files in memory: paths are absolute; directories are implied by the files
    /// below them, or added empty.
    #[derive(Debug, Default)]
    pub(crate) struct MemFs {
        files: Mutex<BTreeMap<PathBuf, Vec<u8>>>,
        dirs: Mutex<HashSet<PathBuf>>,
    }

    impl MemFs {
        pub(crate) fn with(files: &[(&str, &str)]) -> Self {
            let fs = MemFs::default();
            for (path, body) in files {
                fs.put(path, body.as_bytes());
            }
            fs
        }

        pub(crate) fn put(&self, path: &str, body: &[u8]) {
            let path = PathBuf::from(path);
            let mut dirs = self.dirs.lock().unwrap();
            for ancestor in path.ancestors().skip(1) {
                dirs.insert(ancestor.to_owned());
            }
            self.files.lock().unwrap().insert(path, body.to_vec());
        }

        pub(crate) fn dir(&self, path: &str) {
            let path = PathBuf::from(path);
            let mut dirs = self.dirs.lock().unwrap();
            for ancestor in path.ancestors() {
                dirs.insert(ancestor.to_owned());
            }
        }

        fn kind(&self, path: &Path) -> Option<FileKind> {
            if self.files.lock().unwrap().contains_key(path) {
                Some(FileKind::File)
            } else if self.dirs.lock().unwrap().contains(path) {
                Some(FileKind::Dir)
            } else {
                None
            }
        }
    }

    #[async_trait]
    impl FileSystem for MemFs {
        async fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
            self.files
                .lock()
                .unwrap()
                .get(path)
                .cloned()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        }
        async fn write(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
            self.put(&path.to_string_lossy(), contents);
            Ok(())
        }
        async fn create_dir_all(&self, path: &Path) -> io::Result<()> {
            self.dir(&path.to_string_lossy());
            Ok(())
        }
        async fn metadata(&self, path: &Path) -> io::Result<Metadata> {
            match self.kind(path) {
                Some(FileKind::File) => {
                    let len = self.files.lock().unwrap()[path].len() as u64;
                    Ok(Metadata::new(FileKind::File, len))
                }
                Some(kind) => Ok(Metadata::new(kind, 0)),
                None => Err(io::Error::from(io::ErrorKind::NotFound)),
            }
        }
        async fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
            if self.kind(path) != Some(FileKind::Dir) {
                return Err(io::Error::from(io::ErrorKind::NotFound));
            }
            let mut out = Vec::new();
            for file in self.files.lock().unwrap().keys() {
                if file.parent() == Some(path) {
                    let name = file.file_name().unwrap().to_string_lossy();
                    out.push(DirEntry::new(name, FileKind::File));
                }
            }
            for dir in self.dirs.lock().unwrap().iter() {
                if dir.parent() == Some(path) {
                    let name = dir.file_name().unwrap().to_string_lossy();
                    out.push(DirEntry::new(name, FileKind::Dir));
                }
            }
            // No particular order, as the trait allows.
            out.reverse();
            Ok(out)
        }
    }

    /// Runs `tool` once with `args` (a JSON object).
    pub(crate) async fn call(
        tool: &dyn crate::agent::AgentTool,
        args: Value,
    ) -> Result<crate::agent::AgentToolResult, ToolError> {
        let args = args.as_object().cloned().unwrap_or_default();
        tool.execute(
            "call",
            args,
            CancellationToken::new(),
            crate::agent::ToolUpdates::disconnected(),
        )
        .await
    }

    /// Writes files (parents created) below `root`.
    pub(crate) fn tree(root: &Path, files: &[(&str, &str)]) {
        for (path, body) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, body).unwrap();
        }
    }

    #[test]
    fn top_paths_keeps_the_first_counts_in_path_order() {
        let top = TopPaths::new(3);
        {
            let mut local = top.local();
            local.insert(PathBuf::from("/r/c"), 2, "c");
            local.insert(PathBuf::from("/r/d"), 1, "d");
            assert!(local.beyond(Path::new("/r/e")));
            assert!(!local.beyond(Path::new("/r/a")));
            local.insert(PathBuf::from("/r/a"), 1, "a");
            // a (1) + c (2) make 3: d is cut, and so is anything after c.
            assert!(local.beyond(Path::new("/r/d")));
            assert!(!local.beyond(Path::new("/r/b")));
            // Another thread sees the threshold.
            let mut other = top.local();
            assert!(other.beyond(Path::new("/r/d")));
            assert!(!other.beyond(Path::new("/r/b")));
            other.insert(PathBuf::from("/r/b"), 1, "b");
            other.insert(PathBuf::from("/r/z"), 5, "z");
        }
        let (items, reached) = top.into_sorted();
        let names: Vec<_> = items.iter().map(|(_, _, n)| *n).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(reached);
    }

    #[test]
    fn top_paths_orders_components_like_a_sorted_walk() {
        let top = TopPaths::new(10);
        {
            let mut local = top.local();
            for p in ["/r/a.txt", "/r/a/b", "/r/a-b", "/r/B", "/r/a/b/c", "/r/a0"] {
                local.insert(PathBuf::from(p), 1, ());
            }
        }
        let (items, reached) = top.into_sorted();
        let paths: Vec<_> = items.iter().map(|(p, _, _)| p.to_str().unwrap()).collect();
        assert_eq!(
            paths,
            ["/r/B", "/r/a/b", "/r/a/b/c", "/r/a-b", "/r/a.txt", "/r/a0"]
        );
        let mut by_path = paths.clone();
        by_path.sort_by(|a, b| Path::new(a).cmp(Path::new(b)));
        assert_eq!(paths, by_path);
        assert!(!reached);
    }

    #[test]
    fn limits_and_counts_from_json_numbers() {
        let args = serde_json::json!({"a": 2.5, "b": -3, "c": 0, "d": "x", "e": 1e300});
        let args = args.as_object().unwrap();
        assert_eq!(limit_arg(args, "a", 9), 3);
        assert_eq!(limit_arg(args, "b", 9), 1);
        assert_eq!(limit_arg(args, "c", 9), 1);
        assert_eq!(limit_arg(args, "d", 9), 9);
        assert_eq!(limit_arg(args, "missing", 9), 9);
        assert_eq!(limit_arg(args, "e", 9), usize::MAX);
        assert_eq!(count_arg(args, "a"), 2);
        assert_eq!(count_arg(args, "b"), 0);
    }

    #[tokio::test]
    async fn fs_walk_visits_in_path_order_and_skips_git() {
        let fs = MemFs::with(&[
            ("/r/b.txt", ""),
            ("/r/a/z.txt", ""),
            ("/r/.git/HEAD", ""),
            ("/r/.hidden", ""),
            ("/r/a.txt", ""),
        ]);
        let mut walk = FsWalk::new(&fs, Path::new("/r")).await;
        let mut seen = Vec::new();
        while let Some((entry, depth)) = walk.next() {
            seen.push(entry.rel.clone());
            walk.descend(&entry, depth).await;
        }
        assert_eq!(seen, [".hidden", "a", "a/z.txt", "a.txt", "b.txt"]);
    }
}
