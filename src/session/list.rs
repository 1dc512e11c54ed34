//! Finding sessions on disk: pi's directory layout, [`SessionInfo`] for listings, the most
//! recent session of a directory.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use super::context::message_text;
use super::error::{Result, SessionError};
use super::scan::{LineScanner, is_blank, parse_head, parse_value};
use super::time::{iso_to_millis, millis_to_system_time};

/// What a session listing shows of one session file (pi's `SessionInfo`).
///
/// Unlike pi, the listing does not hold every message's text (`allMessagesText`, the cause
/// of pi's out-of-memory reports on large histories); read a session with
/// [`SessionManager::open`](super::SessionManager::open) to search it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The file.
    pub path: PathBuf,
    /// The session id.
    pub id: String,
    /// The working directory in the header (empty when absent).
    pub cwd: String,
    /// The latest session name, if any.
    pub name: Option<String>,
    /// The file this session was forked from.
    pub parent_session_path: Option<String>,
    /// The header's timestamp (`None` when unparsable).
    pub created: Option<SystemTime>,
    /// The last user or assistant activity, else the header's timestamp, else the file's
    /// modification time.
    pub modified: SystemTime,
    /// The number of `message` entries.
    pub message_count: usize,
    /// The text of the first user message, or `"(no messages)"`.
    pub first_message: String,
}

/// pi's per-cwd directory name: `--<cwd without its leading separator, with / \ : as ->--`.
pub(crate) fn encode_cwd(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

/// Reads the summary of one session file; `Ok(None)` when it is not a session file.
pub(crate) fn session_info(path: &Path) -> Result<Option<SessionInfo>> {
    let file = File::open(path).map_err(|e| SessionError::io(path, e))?;
    let mtime = file
        .metadata()
        .and_then(|m| m.modified())
        .map_err(|e| SessionError::io(path, e))?;
    let mut scanner = LineScanner::new(file);
    let mut header: Option<Value> = None;
    let mut name = None;
    let mut message_count = 0;
    let mut first_message = String::new();
    let mut last_activity: Option<i64> = None;
    while let Some(line) = scanner.next_line().map_err(|e| SessionError::io(path, e))? {
        if is_blank(line.bytes) {
            continue;
        }
        if header.is_none() {
            match parse_value(line.bytes) {
                Ok(v) if v.get("type").and_then(Value::as_str) == Some("session") => {
                    header = Some(v)
                }
                Ok(_) => return Ok(None),
                Err(_) => {}
            }
            continue;
        }
        let Ok(head) = parse_head(line.bytes) else {
            continue;
        };
        match head.kind.as_deref() {
            Some("session_info") => {
                name = head
                    .name
                    .as_deref()
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned);
            }
            Some("message") => {
                message_count += 1;
                let m = &head.message;
                let role = m.role.as_deref();
                if !(m.has_content && matches!(role, Some("user" | "assistant"))) {
                    continue;
                }
                let t = match m.timestamp {
                    Some(t) => Some(t as i64),
                    None => head.timestamp.as_deref().and_then(iso_to_millis),
                };
                if let Some(t) = t {
                    last_activity = Some(last_activity.map_or(t, |l| l.max(t)));
                }
                if first_message.is_empty()
                    && role == Some("user")
                    && let Ok(v) = parse_value(line.bytes)
                    && let Some(msg) = v.get("message")
                {
                    first_message = message_text(msg);
                }
            }
            _ => {}
        }
    }
    let Some(header) = header else {
        return Ok(None);
    };
    let text = |k: &str| header.get(k).and_then(Value::as_str).map(str::to_owned);
    let created = text("timestamp").as_deref().and_then(iso_to_millis);
    let modified = match last_activity.filter(|&t| t > 0) {
        Some(t) => millis_to_system_time(t),
        None => created.map_or(mtime, millis_to_system_time),
    };
    Ok(Some(SessionInfo {
        path: path.to_owned(),
        id: text("id").unwrap_or_default(),
        cwd: text("cwd").unwrap_or_default(),
        name,
        parent_session_path: text("parentSession"),
        created: created.map(millis_to_system_time),
        modified,
        message_count,
        first_message: if first_message.is_empty() {
            "(no messages)".into()
        } else {
            first_message
        },
    }))
}

fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SessionError::io(dir, e)),
    };
    let mut files = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| SessionError::io(dir, e))?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "jsonl") && path.is_file() {
            files.push(path);
        }
    }
    Ok(files)
}

/// The sessions in `dir`, most recently active first. Unreadable files are skipped.
pub(crate) fn list_dir(dir: &Path) -> Result<Vec<SessionInfo>> {
    let mut out = Vec::new();
    for path in jsonl_files(dir)? {
        match session_info(&path) {
            Ok(Some(info)) => out.push(info),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "skipping an unreadable session file"),
        }
    }
    out.sort_by_key(|info| std::cmp::Reverse(info.modified));
    Ok(out)
}

/// The sessions of every directory under `sessions_dir`, most recently active first.
pub(crate) fn list_all(sessions_dir: &Path) -> Result<Vec<SessionInfo>> {
    let rd = match std::fs::read_dir(sessions_dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SessionError::io(sessions_dir, e)),
    };
    let mut out = Vec::new();
    for entry in rd {
        let path = entry.map_err(|e| SessionError::io(sessions_dir, e))?.path();
        if path.is_dir() {
            out.extend(list_dir(&path)?);
        }
    }
    out.sort_by_key(|info| std::cmp::Reverse(info.modified));
    Ok(out)
}

/// True when the first line of `path` is a session header with a string id.
fn is_session_file(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut scanner = LineScanner::new(file);
    match scanner.next_line() {
        Ok(Some(line)) => parse_value(line.bytes).is_ok_and(|v| {
            v.get("type").and_then(Value::as_str) == Some("session")
                && v.get("id").is_some_and(Value::is_string)
        }),
        _ => false,
    }
}

/// The most recently modified session file in `dir` (by file modification time, as pi). A
/// tie (two files written within one tick of the file system's clock) goes to the later
/// name: names start with their creation time, so the newer session wins, whatever order
/// the directory lists them in.
pub(crate) fn most_recent(dir: &Path) -> Result<Option<PathBuf>> {
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for path in jsonl_files(dir)? {
        if !is_session_file(&path) {
            continue;
        }
        let Ok(mtime) = path.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        if best
            .as_ref()
            .is_none_or(|(t, p)| mtime > *t || (mtime == *t && path > *p))
        {
            best = Some((mtime, path));
        }
    }
    Ok(best.map(|(_, p)| p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_go_to_the_later_name() {
        let dir = tempfile::tempdir().unwrap();
        let header = r#"{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;
        let when = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        // Written newest first, so that directory order alone would pick the older one.
        for name in [
            "2026-01-01T00-00-00-002Z_b.jsonl",
            "2026-01-01T00-00-00-001Z_a.jsonl",
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("{header}\n")).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
        let recent = most_recent(dir.path()).unwrap().unwrap();
        assert!(
            recent.ends_with("2026-01-01T00-00-00-002Z_b.jsonl"),
            "{recent:?}"
        );
    }

    #[test]
    fn cwd_encoding_matches_pi() {
        assert_eq!(encode_cwd("/home/dev/my-proj"), "--home-dev-my-proj--");
        assert_eq!(encode_cwd("C:\\Users\\me"), "--C--Users-me--");
        assert_eq!(encode_cwd("\\\\server\\share"), "---server-share--");
    }
}
