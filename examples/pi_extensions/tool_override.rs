//! tool-override: replaces the built-in `read` tool with an audited one. Every read is logged
//! (`[<time>] ALLOWED: <absolute path>` to `read-access.log` in pi's agent directory); a path
//! that looks sensitive (`.env`, `.env.*`, `secret(s)`/`credential(s)` `.json`/`.yaml`/`.yml`/
//! `.toml`, anything under `.ssh/`, `.aws/`, `.gnupg/`) is not read: it is logged as `BLOCKED`
//! and the model is told "Access denied: …". Other files are read as text, from `offset`
//! (1-based) for `limit` lines, cut at 50 KB. `/read-log` shows the last 20 lines of the log.
//! Port of pi's `examples/extensions/tool-override.ts`.
//!
//! pi's tool gets the extension context (`ctx.cwd`) with each call; an `AgentTool` here gets
//! none, so the port keeps the working directory the session last started in. pi serializes
//! its log appends with `withFileMutationQueue`; here each line is one append. Otherwise all
//! of it is ported (the results are pi's: a blocked or failed read is not an error result).

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use pi_engine::Tool;
use pi_engine::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};
use pi_engine::extensions::{Extension, NotifyKind};
use pi_engine::llm::CancellationToken;
use pi_engine::session::SessionOptions;
use regex::Regex;
use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt;

/// The log's name in the agent directory.
pub(crate) const LOG_NAME: &str = "read-access.log";

/// The paths that are never read (pi's `BLOCKED_PATTERNS`, tested on the absolute path).
static BLOCKED_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"\.env$",
        r"\.env\..+$",
        r"(?i)secrets?\.(json|yaml|yml|toml)$",
        r"(?i)credentials?\.(json|yaml|yml|toml)$",
        r"/\.ssh/",
        r"/\.aws/",
        r"/\.gnupg/",
    ]
    .iter()
    .map(|p| Regex::new(p).expect("a valid pattern"))
    .collect()
});

/// Whether `path` (absolute) is one the tool refuses to read.
pub(crate) fn is_blocked_path(path: &str) -> bool {
    BLOCKED_PATTERNS.iter().any(|p| p.is_match(path))
}

/// `path` against `cwd`, with `.` and `..` resolved (node's `path.resolve`).
pub(crate) fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in cwd.join(path).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// An index of JavaScript's `Array.prototype.slice`: truncated, counted from the end when
/// negative, clamped to `len`.
fn js_index(x: f64, len: usize) -> usize {
    let x = x.trunc();
    let len_f = len as f64;
    if x.is_nan() {
        0
    } else if x < 0.0 {
        (len_f + x).max(0.0) as usize
    } else {
        x.min(len_f) as usize
    }
}

/// The most the tool returns, in bytes (pi cuts the text at this many UTF-16 units).
const MAX_BYTES: usize = 50 * 1024;

/// The text `read` returns for `content` with pi's `offset` and `limit` (0 or absent: from
/// the start, to the end), cut at 50 KB; and the file's line count.
pub(crate) fn select_lines(
    content: &str,
    offset: Option<f64>,
    limit: Option<f64>,
) -> (String, usize) {
    let lines: Vec<&str> = content.split('\n').collect();
    // JavaScript's truthiness: 0 and NaN are "not given".
    let given = |v: Option<f64>| v.filter(|v| *v != 0.0 && !v.is_nan());
    let start = given(offset).map_or(0.0, |o| (o - 1.0).max(0.0));
    let end = given(limit).map_or(lines.len() as f64, |l| start + l);
    let (from, to) = (js_index(start, lines.len()), js_index(end, lines.len()));
    let mut text = if from < to {
        lines[from..to].join("\n")
    } else {
        String::new()
    };
    if text.len() > MAX_BYTES {
        // JavaScript's `slice(0, maxBytes)` counts UTF-16 units; a character is kept whole.
        let mut units = 0;
        let cut = text
            .char_indices()
            .find(|(_, c)| {
                units += c.len_utf16();
                units > MAX_BYTES
            })
            .map_or(text.len(), |(i, _)| i);
        text.truncate(cut);
        text.push_str("\n\n[Output truncated at 50KB]");
    }
    (text, lines.len())
}

/// A file error as node words it (`ENOENT: no such file or directory, access '<path>'`).
fn node_error(e: &std::io::Error, path: &Path) -> String {
    let path = path.display();
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("ENOENT: no such file or directory, access '{path}'")
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("EACCES: permission denied, access '{path}'")
        }
        std::io::ErrorKind::IsADirectory => "EISDIR: illegal operation on a directory, read".into(),
        _ => e.to_string(),
    }
}

/// Appends one line to the log; failures are ignored (the directory may not exist).
async fn log_access(log: &Path, path: &Path, allowed: bool, reason: Option<&str>) {
    let time = humantime::format_rfc3339_millis(SystemTime::now());
    let status = if allowed { "ALLOWED" } else { "BLOCKED" };
    let why = reason.map(|r| format!(" ({r})")).unwrap_or_default();
    let line = format!("[{time}] {status}: {}{why}\n", path.display());
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .await;
    if let Ok(mut file) = file {
        let _ = file.write_all(line.as_bytes()).await;
    }
}

/// The working directory the session last started in.
type Cwd = Arc<Mutex<Option<PathBuf>>>;

/// The audited `read`.
pub(crate) struct AuditedRead {
    definition: Tool,
    log: PathBuf,
    cwd: Cwd,
}

impl AuditedRead {
    fn new(log: PathBuf, cwd: Cwd) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string",
                    "description": "Path to the file to read (relative or absolute)"},
                "offset": {"type": "number",
                    "description": "Line number to start reading from (1-indexed)"},
                "limit": {"type": "number", "description": "Maximum number of lines to read"},
            },
            "required": ["path"],
        });
        AuditedRead {
            definition: Tool::new(
                "read",
                "Read the contents of a file with access logging. Some sensitive paths (.env, \
                 secrets, credentials) are blocked.",
                parameters,
            ),
            log,
            cwd,
        }
    }
}

#[async_trait]
impl AgentTool for AuditedRead {
    fn definition(&self) -> &Tool {
        &self.definition
    }

    fn label(&self) -> &str {
        "read (audited)"
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        _cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let path = args
            .get("path")
            .and_then(Value::as_str)
            .ok_or("path must be a string")?;
        let cwd = self
            .cwd
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let absolute = resolve(&cwd, path);

        if is_blocked_path(&absolute.to_string_lossy()) {
            log_access(&self.log, &absolute, false, Some("matches blocked pattern")).await;
            return Ok(AgentToolResult::text(format!(
                "Access denied: \"{path}\" matches a blocked pattern (sensitive file). This tool \
                 blocks access to .env files, secrets, credentials, and SSH/AWS/GPG directories."
            ))
            .with_details(json!({"blocked": true})));
        }

        log_access(&self.log, &absolute, true, None).await;
        match tokio::fs::read(&absolute).await {
            Ok(bytes) => {
                let content = String::from_utf8_lossy(&bytes);
                let number = |key: &str| args.get(key).and_then(Value::as_f64);
                let (text, lines) = select_lines(&content, number("offset"), number("limit"));
                Ok(AgentToolResult::text(text).with_details(json!({"lines": lines})))
            }
            Err(e) => Ok(AgentToolResult::text(format!(
                "Error reading file: {}",
                node_error(&e, &absolute)
            ))
            .with_details(json!({"error": true}))),
        }
    }
}

/// The last 20 lines of the log, as `/read-log` shows them (`None` without a log).
pub(crate) fn recent_access(log: &Path) -> Option<String> {
    let text = std::fs::read(log).ok()?;
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.trim().split('\n').collect();
    let recent = &lines[lines.len().saturating_sub(20)..];
    Some(format!("Recent file access:\n{}", recent.join("\n")))
}

/// The extension, registered as `tool-override`, logging to `read-access.log` in pi's agent
/// directory (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`).
pub(crate) fn extension() -> Extension {
    extension_logging_to(SessionOptions::new().agent_dir().join(LOG_NAME))
}

/// The extension, logging to `log`.
pub(crate) fn extension_logging_to(log: PathBuf) -> Extension {
    Extension::new("tool-override", move |pi| {
        let cwd: Cwd = Arc::default();

        let started_in = cwd.clone();
        pi.on_session_start(move |_event, ctx| {
            let started_in = started_in.clone();
            async move {
                *started_in.lock().unwrap_or_else(|e| e.into_inner()) = Some(ctx.cwd());
                Ok(())
            }
        });

        // The same name as the built-in: this one replaces it.
        pi.register_tool(AuditedRead::new(log.clone(), cwd));

        let log = log.clone();
        pi.register_command("read-log", "View the file access log", move |_args, ctx| {
            let log = log.clone();
            async move {
                let text = recent_access(&log).unwrap_or_else(|| "No access log found".into());
                ctx.ui().notify(&text, NotifyKind::Info);
                Ok(())
            }
        });
    })
}
