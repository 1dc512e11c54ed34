//! [`ExtensionContext::exec`](super::ExtensionContext::exec): a program an extension runs
//! (pi's `pi.exec`), bounded in time and memory and stopped with its whole process group.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use crate::process::GroupGuard;

/// The most output kept of each stream; more is dropped (and counted in
/// [`ExecResult::truncated`]).
pub const MAX_EXEC_OUTPUT: usize = 16 * 1024 * 1024;

/// The time between `SIGTERM` and `SIGKILL` when a program is stopped (pi waits 5 s).
const KILL_GRACE: Duration = Duration::from_secs(5);

/// After the program exits, how long its pipes are still read: a background child that
/// keeps them open cannot hold the call.
const PIPE_GRACE: Duration = Duration::from_millis(250);

/// How to run a program.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ExecOptions {
    /// The working directory (default: the session's).
    pub cwd: Option<PathBuf>,
    /// Stop it after this long (pi's `timeout`, in milliseconds there).
    pub timeout: Option<Duration>,
    /// Stop it when this is cancelled (pi's `signal`); the handler's own token is used too.
    pub cancel: Option<CancellationToken>,
}

impl ExecOptions {
    /// No timeout, the session's directory.
    pub fn new() -> Self {
        ExecOptions::default()
    }

    /// Sets the working directory.
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Stops the program when `cancel` fires.
    #[must_use]
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }
}

/// How a program ended (pi's `ExecResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecResult {
    /// Its standard output (lossy UTF-8).
    pub stdout: String,
    /// Its standard error (lossy UTF-8).
    pub stderr: String,
    /// The exit code: 0 when it was ended by a signal (pi's `code ?? 0`), 1 when it could
    /// not be started or waited for.
    pub code: i32,
    /// True when it was stopped (timeout or cancellation).
    pub killed: bool,
    /// True when output beyond [`MAX_EXEC_OUTPUT`] per stream was dropped.
    pub truncated: bool,
}

/// Reads a pipe to its end, keeping at most [`MAX_EXEC_OUTPUT`] bytes.
async fn drain(pipe: Option<impl AsyncRead + Unpin>) -> (Vec<u8>, bool) {
    let Some(mut pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, truncated),
            Ok(n) => {
                let room = MAX_EXEC_OUTPUT.saturating_sub(kept.len());
                if n > room {
                    truncated = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// Runs `program` with `args` (no shell), stdin closed, in its own process group.
pub(crate) async fn exec(
    program: &str,
    args: &[String],
    cwd: PathBuf,
    timeout: Option<Duration>,
    cancel: [Option<CancellationToken>; 2],
) -> ExecResult {
    let [first, second] = cancel;
    let cancelled = || {
        let (first, second) = (first.clone(), second.clone());
        async move {
            let wait = |t: Option<CancellationToken>| async move {
                match t {
                    Some(t) => t.cancelled_owned().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = wait(first) => {},
                () = wait(second) => {},
            }
        }
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            return ExecResult {
                stdout: String::new(),
                stderr: e.to_string(),
                code: 1,
                killed: false,
                truncated: false,
            };
        }
    };
    let mut group = GroupGuard::new(child.id(), KILL_GRACE);
    let stdout = tokio::spawn(drain(child.stdout.take()));
    let stderr = tokio::spawn(drain(child.stderr.take()));
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let mut killed = false;
    let mut kill_at: Option<tokio::time::Instant> = None;
    let status = loop {
        let stop = async {
            match (killed, deadline) {
                (true, _) => std::future::pending().await,
                (false, Some(d)) => tokio::select! {
                    () = tokio::time::sleep_until(d) => {},
                    () = cancelled() => {},
                },
                (false, None) => cancelled().await,
            }
        };
        let force = async {
            match kill_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            status = child.wait() => break status.ok(),
            () = stop => {
                killed = true;
                let (at, sent) = group.terminate(&mut child);
                if !sent {
                    kill_at = Some(at);
                }
            }
            () = force => {
                group.kill(&mut child);
                kill_at = None;
            }
        }
    };
    // The program is gone: what is left of its group goes too, unless it ended by itself
    // (a background child it started is left running, as pi leaves it).
    if killed {
        group.kill(&mut child);
    }
    group.disarm();
    let read = |task: tokio::task::JoinHandle<(Vec<u8>, bool)>| async move {
        match tokio::time::timeout(PIPE_GRACE, task).await {
            Ok(Ok(out)) => out,
            _ => (Vec::new(), false),
        }
    };
    let ((out, t1), (err, t2)) = tokio::join!(read(stdout), read(stderr));
    let code = match status {
        Some(s) => s.code().unwrap_or(0),
        None => 1,
    };
    ExecResult {
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        code,
        killed,
        truncated: t1 || t2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn output_and_exit_code() {
        let r = exec(
            "sh",
            &["-c".into(), "echo out; echo err >&2; exit 3".into()],
            std::env::temp_dir(),
            None,
            [None, None],
        )
        .await;
        assert_eq!(r.stdout, "out\n");
        assert_eq!(r.stderr, "err\n");
        assert_eq!(r.code, 3);
        assert!(!r.killed);
    }

    #[tokio::test]
    async fn a_timeout_stops_the_whole_group() {
        let started = std::time::Instant::now();
        // The shell's child would keep the pipe open if only the shell were killed.
        let r = exec(
            "sh",
            &["-c".into(), "sleep 30 & sleep 30".into()],
            std::env::temp_dir(),
            Some(Duration::from_millis(100)),
            [Some(CancellationToken::new()), None],
        )
        .await;
        assert!(r.killed);
        // Generous liveness bound: SIGTERM ends both sleeps at once.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_missing_program_is_code_1() {
        let r = exec(
            "/nonexistent/program",
            &[],
            std::env::temp_dir(),
            None,
            [None, None],
        )
        .await;
        assert_eq!(r.code, 1);
        assert!(!r.stderr.is_empty());
    }
}
