//! One writer at a time per file: `write` and `edit` calls of one batch run in parallel, but
//! two of them on the same file (under any spelling of its path) take turns, in the order they
//! asked, so neither reads the file while the other is half-way through. Reads do not queue.
//!
//! The queue is process-wide, as pi's is: tools of two agents editing one file take turns too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::fs::FileSystem;

type Slot = Arc<tokio::sync::Mutex<()>>;

fn queues() -> &'static Mutex<HashMap<PathBuf, Weak<tokio::sync::Mutex<()>>>> {
    static QUEUES: OnceLock<Mutex<HashMap<PathBuf, Weak<tokio::sync::Mutex<()>>>>> =
        OnceLock::new();
    QUEUES.get_or_init(Default::default)
}

/// Held while a file is being changed; the next writer of that file goes when it drops.
#[derive(Debug)]
#[must_use = "the file is unlocked as soon as the guard drops"]
pub struct FileMutationGuard {
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

/// Waits for this process's other writers of `path` (keyed by `fs`'s canonical path, or the
/// path itself when it does not exist yet), then returns the guard that holds the file.
///
/// # Cancellation
///
/// Dropping the future while it waits leaves the queue; the writers behind it move up.
///
/// ```
/// use pi_engine::tools::{lock_file, LocalFs};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let fs = LocalFs::new();
/// let guard = lock_file(&fs, std::path::Path::new("/tmp/pi-engine-doc-lock")).await;
/// // … read, change and write the file …
/// drop(guard);
/// # }
/// ```
pub async fn lock_file(fs: &dyn FileSystem, path: &Path) -> FileMutationGuard {
    let key = fs
        .canonicalize(path)
        .await
        .unwrap_or_else(|_| super::path::normalize(path));
    let slot = slot(key);
    FileMutationGuard {
        _guard: slot.lock_owned().await,
    }
}

fn slot(key: PathBuf) -> Slot {
    let mut map = queues().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(slot) = map.get(&key).and_then(Weak::upgrade) {
        return slot;
    }
    // Forget files nobody holds any more, so the map stays as small as the files in use.
    map.retain(|_, w| w.strong_count() > 0);
    let slot: Slot = Arc::default();
    map.insert(key, Arc::downgrade(&slot));
    slot
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::LocalFs;
    use std::time::Duration;

    #[tokio::test]
    async fn two_spellings_of_one_file_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        std::os::unix::fs::symlink(&file, dir.path().join("alias")).unwrap();
        let fs = LocalFs::new();
        let first = lock_file(&fs, &file).await;
        let alias = dir.path().join("alias");
        let second = lock_file(&fs, &alias);
        tokio::pin!(second);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut second)
                .await
                .is_err(),
            "the alias must wait for the first writer"
        );
        // Another file does not wait.
        let _other = lock_file(&fs, &dir.path().join("other.txt")).await;
        drop(first);
        let _second = second.await;
    }
}
