//! Reading pi's JSON configuration files, and writing one as pi does: under pi's lock
//! (`<file>.lock`, a directory, as `proper-lockfile` makes it), but atomically.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

/// Why a configuration file could not be read or written.
#[derive(Debug)]
pub(crate) enum FileError {
    Read {
        path: PathBuf,
        message: String,
    },
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    NotAnObject {
        path: PathBuf,
    },
    Locked {
        path: PathBuf,
    },
    Write {
        path: PathBuf,
        message: String,
    },
}

/// The file's text; `None` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, FileError> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|e| FileError::Read {
                path: path.to_owned(),
                message: format!("not UTF-8: {e}"),
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(FileError::Read {
            path: path.to_owned(),
            message: e.to_string(),
        }),
    }
}

/// A file's text as a JSON object; an empty text is `{}` (pi reads it so).
pub(crate) fn parse_object(text: &str, path: &Path) -> Result<Map<String, Value>, FileError> {
    if text.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(FileError::NotAnObject {
            path: path.to_owned(),
        }),
        Err(e) => {
            let (line, column) = (e.line(), e.column());
            let full = e.to_string();
            let suffix = format!(" at line {line} column {column}");
            let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
            Err(FileError::Syntax {
                path: path.to_owned(),
                line,
                column,
                message,
            })
        }
    }
}

/// pi's lock on `path`: the directory `<path>.lock`. Released (removed) on drop.
struct Lock {
    dir: PathBuf,
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Best effort: a lock left behind goes stale after `STALE`.
        let _ = fs::remove_dir(&self.dir);
    }
}

/// `proper-lockfile`'s defaults as pi uses them: a lock older than 10 s is stale; 10
/// attempts 20 ms apart.
const STALE: Duration = Duration::from_secs(10);
const ATTEMPTS: u32 = 10;
const PAUSE: Duration = Duration::from_millis(20);

fn lock(path: &Path) -> Result<Lock, FileError> {
    let dir = PathBuf::from(format!("{}.lock", path.display()));
    for attempt in 1..=ATTEMPTS {
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(Lock { dir }),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let stale = fs::metadata(&dir)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok())
                    .is_some_and(|age| age > STALE);
                if stale {
                    // The holder died; take the lock over, as proper-lockfile does.
                    let _ = fs::remove_dir(&dir);
                    continue;
                }
                if attempt < ATTEMPTS {
                    std::thread::sleep(PAUSE);
                }
            }
            Err(e) => {
                return Err(FileError::Write {
                    path: path.to_owned(),
                    message: format!("cannot take the lock {}: {e}", dir.display()),
                });
            }
        }
    }
    Err(FileError::Locked {
        path: path.to_owned(),
    })
}

/// Reads `path` (`None` when missing) under pi's lock, and writes what `update` makes of it
/// atomically. `update`'s error leaves the file as it was.
pub(crate) fn update_locked<E: From<FileError>>(
    path: &Path,
    update: impl FnOnce(Option<&str>) -> Result<String, E>,
) -> Result<(), E> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| FileError::Write {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
    }
    let _lock = lock(path)?;
    let current = read_optional(path)?;
    let next = update(current.as_deref())?;
    write_atomic(path, next.as_bytes()).map_err(|e| {
        FileError::Write {
            path: path.to_owned(),
            message: e.to_string(),
        }
        .into()
    })
}

/// Replaces the file at `path` (or, for a symlink, the file it points to) with `content`:
/// written to a temporary file beside it, flushed, given the old file's permissions, and
/// renamed over it.
pub(crate) fn write_atomic(path: &Path, content: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // Through a symlink (a dotfiles manager's), so the link stays a link.
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(content)?;
        if let Ok(meta) = fs::metadata(&target) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        fs::rename(&tmp, &target)?;
        // The rename itself is durable once the directory is synced (not possible on
        // every platform; best effort).
        if let Ok(d) = fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_have_a_position_and_a_bare_message() {
        let e = parse_object("{\"a\": tru}", Path::new("f")).unwrap_err();
        match e {
            FileError::Syntax {
                line,
                column,
                message,
                ..
            } => {
                assert_eq!((line, column), (1, 10));
                assert_eq!(message, "expected ident");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_held_lock_times_out_and_a_stale_one_is_taken_over() {
        let dir = std::env::temp_dir().join(format!("pi-engine-lock-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("settings.json");
        let held = lock(&file).unwrap();
        assert!(matches!(lock(&file), Err(FileError::Locked { .. })));
        drop(held);
        let again = lock(&file).unwrap();
        drop(again);
        assert!(!dir.join("settings.json.lock").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_goes_through_symlinks_and_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("pi-engine-atomic-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let real = dir.join("real.json");
        fs::write(&real, "{}").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"{\"a\": 1}").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "{\"a\": 1}");
        let mode = fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let leftovers = fs::read_dir(&dir).unwrap().count();
        assert_eq!(leftovers, 2);
        fs::remove_dir_all(&dir).unwrap();
    }
}
