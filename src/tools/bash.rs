//! The `bash` tool: runs a command with `bash -c` in the tool's working directory and returns
//! the tail of its output (stdout and stderr interleaved as they arrive), as pi's `bash` tool
//! does: the last 2000 lines or 50 KiB, with the full output in `pi-bash-<id>.log` in the temp
//! directory once it is over either limit; a non-zero exit, a timeout or an abort is an error
//! result that ends with pi's status line. Memory stays bounded however much the command
//! prints: only a tail is kept, the rest goes to the file.
//!
//! Where it differs from pi: an abort or a timeout sends `SIGTERM` to the command's process
//! group and `SIGKILL` a second later to what is left (pi sends `SIGKILL` at once); dropping
//! the tool's future kills the group too; after the shell exits its pipes are read for 250 ms
//! more (pi: 100 ms), so a background child holding them (`sleep 100 &`) cannot hang the call.

use std::convert::Infallible;
use std::fmt;
use std::fs::File;
use std::future::pending;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Notify;
use tokio::time::{Instant, sleep, sleep_until};
use tokio_util::sync::CancellationToken;

use super::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncatedBy, Truncation, format_size, truncate_tail,
};
use super::{Spec, fail};
use crate::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};
use crate::process::GroupGuard;

/// At most one `tool_execution_update` per this interval (pi's `BASH_UPDATE_THROTTLE_MS`).
const UPDATE_THROTTLE: Duration = Duration::from_millis(100);
/// How long the output pipes are still read after the shell has exited: a background child
/// that inherited them (`sleep 100 &`) must not hold the call open.
const PIPE_GRACE: Duration = Duration::from_millis(250);
/// Between `SIGTERM` and `SIGKILL` when the command is killed (abort or timeout).
const KILL_GRACE: Duration = Duration::from_secs(1);
/// While a killed group winds down, how often it is checked for survivors.
const GROUP_POLL: Duration = Duration::from_millis(20);
/// Bytes read from a pipe at once (a Linux pipe holds 64 KiB).
const READ_CHUNK: usize = 64 * 1024;
/// Output is taken in rounds this long (see [`Rounds`]).
const ROUND: Duration = Duration::from_millis(5);
/// pi's prefix of the full-output file's name.
const TEMP_FILE_PREFIX: &str = "pi-bash";

// ---------------------------------------------------------------------------------------------
// Pluggable execution
// ---------------------------------------------------------------------------------------------

/// How the `bash` tool runs a command (pi's `BashOperations`): locally by default
/// ([`LocalBash`]); an embedder may run it elsewhere (a container, over SSH) or wrap the local
/// one (e.g. to rewrite or log commands).
///
/// ```
/// use std::path::Path;
/// use async_trait::async_trait;
/// use pi_engine::tools::{BashOperations, BashTool, ExecOptions, ExecOutcome};
///
/// /// Answers every command with a canned line instead of running it.
/// #[derive(Debug)]
/// struct DryRun;
///
/// #[async_trait]
/// impl BashOperations for DryRun {
///     async fn exec(&self, command: &str, _cwd: &Path, options: ExecOptions<'_>)
///         -> std::io::Result<ExecOutcome> {
///         (options.on_data)(format!("would run: {command}\n").as_bytes());
///         Ok(ExecOutcome::exited(Some(0)))
///     }
/// }
///
/// let tool = BashTool::new(".").with_operations(std::sync::Arc::new(DryRun));
/// # drop(tool);
/// ```
#[async_trait]
pub trait BashOperations: Send + Sync + fmt::Debug + 'static {
    /// Runs `command` in `cwd`, passing its output to `options.on_data` as it comes, until it
    /// exits, `options.cancel` fires or `options.timeout` passes. A kill for an abort or a
    /// timeout is reported in the outcome ([`ExecOutcome::aborted`], [`ExecOutcome::timed_out`]),
    /// not as an error; `Err` is for a command that could not be run at all (its text is the
    /// tool's error result).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future should stop the command (the bash tool's future is dropped when the
    /// agent gives up on it after an abort); [`LocalBash`] kills the whole process group.
    async fn exec(
        &self,
        command: &str,
        cwd: &Path,
        options: ExecOptions<'_>,
    ) -> io::Result<ExecOutcome>;
}

/// What [`BashOperations::exec`] gets besides the command and the directory.
#[non_exhaustive]
pub struct ExecOptions<'a> {
    /// Receives the output, stdout and stderr alike, chunk by chunk in arrival order.
    pub on_data: &'a mut (dyn FnMut(&[u8]) + Send),
    /// Fires when the call is aborted: stop the command and return
    /// [`ExecOutcome::aborted`].
    pub cancel: CancellationToken,
    /// Stop the command after this long and return [`ExecOutcome::timed_out`] (`None`: no
    /// limit).
    pub timeout: Option<Duration>,
}

impl<'a> ExecOptions<'a> {
    /// Options with no timeout.
    pub fn new(on_data: &'a mut (dyn FnMut(&[u8]) + Send), cancel: CancellationToken) -> Self {
        ExecOptions {
            on_data,
            cancel,
            timeout: None,
        }
    }

    /// Sets the timeout (`None`: no limit).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }
}

impl fmt::Debug for ExecOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecOptions")
            .field("cancel", &self.cancel)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// How a command run by [`BashOperations::exec`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecOutcome {
    /// The exit code; `None` when the process was ended by a signal (which pi, and so this
    /// tool, does not count as a failure unless it was an abort or a timeout).
    pub exit_code: Option<i32>,
    /// The command was killed because the timeout passed.
    pub timed_out: bool,
    /// The command was killed because the call was aborted (takes precedence over
    /// `timed_out`).
    pub aborted: bool,
}

impl ExecOutcome {
    /// The command exited by itself with `exit_code` (`None`: ended by a signal).
    pub fn exited(exit_code: Option<i32>) -> Self {
        ExecOutcome {
            exit_code,
            timed_out: false,
            aborted: false,
        }
    }

    /// The command was killed when its timeout passed.
    pub fn timed_out() -> Self {
        ExecOutcome {
            exit_code: None,
            timed_out: true,
            aborted: false,
        }
    }

    /// The command was killed because the call was aborted.
    pub fn aborted() -> Self {
        ExecOutcome {
            exit_code: None,
            timed_out: false,
            aborted: true,
        }
    }
}

/// Runs commands on this machine (pi's `createLocalBashOperations`): `bash -c <command>` in
/// its own process group, stdin closed, stdout and stderr on two pipes read as they come.
///
/// The shell is `/bin/bash`, else `bash` on `PATH`, else `sh` (as pi picks it), unless set
/// with [`with_shell`](Self::with_shell). An abort or a timeout sends `SIGTERM` to the whole
/// process group and `SIGKILL` one second later to whatever is left; dropping the `exec`
/// future sends `SIGKILL` to the group at once. Once the shell has exited its pipes are read
/// for at most 250 ms more, so a background child that keeps them open (`sleep 100 &`) does
/// not hold the call; such a child is left running, as pi leaves it.
#[derive(Debug, Clone, Default)]
pub struct LocalBash {
    shell: Option<PathBuf>,
}

impl LocalBash {
    /// Runs commands with the default shell.
    pub fn new() -> Self {
        LocalBash::default()
    }

    /// Runs commands with `shell -c <command>` (pi's `shellPath` setting); a shell that does
    /// not exist fails each call with pi's text.
    #[must_use]
    pub fn with_shell(mut self, shell: impl Into<PathBuf>) -> Self {
        self.shell = Some(shell.into());
        self
    }

    fn shell(&self) -> io::Result<PathBuf> {
        match &self.shell {
            Some(custom) if custom.exists() => Ok(custom.clone()),
            Some(custom) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("Custom shell path not found: {}", custom.display()),
            )),
            None => Ok(default_shell().clone()),
        }
    }
}

/// `/bin/bash`, else `bash` on `PATH`, else `sh`; looked up once.
fn default_shell() -> &'static PathBuf {
    static SHELL: OnceLock<PathBuf> = OnceLock::new();
    SHELL.get_or_init(|| {
        let bin_bash = Path::new("/bin/bash");
        if bin_bash.exists() {
            return bin_bash.to_path_buf();
        }
        std::env::var_os("PATH")
            .and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join("bash"))
                    .find(|candidate| candidate.is_file())
            })
            .unwrap_or_else(|| PathBuf::from("sh"))
    })
}

#[async_trait]
impl BashOperations for LocalBash {
    /// Runs the command to its end (see [`LocalBash`]).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills the command's whole process group (`SIGKILL`).
    async fn exec(
        &self,
        command: &str,
        cwd: &Path,
        options: ExecOptions<'_>,
    ) -> io::Result<ExecOutcome> {
        let ExecOptions {
            on_data,
            cancel,
            timeout,
        } = options;
        let shell = self.shell()?;
        if !tokio::fs::try_exists(cwd).await.unwrap_or(false) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "Working directory does not exist: {}\nCannot execute bash commands.",
                    cwd.display()
                ),
            ));
        }
        if cancel.is_cancelled() {
            return Ok(ExecOutcome::aborted());
        }

        let mut cmd = tokio::process::Command::new(&shell);
        cmd.arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn()?;
        // From here on, a drop of this future kills the group.
        let mut group = GroupGuard::new(child.id(), KILL_GRACE);
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let mut out_buf = vec![0u8; READ_CHUNK];
        let mut err_buf = vec![0u8; READ_CHUNK];

        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut status = None;
        // Set when the shell has exited: the pipes are read until then at most.
        let mut drain_until: Option<Instant> = None;
        // Set when the command is being killed: when SIGKILL follows, and whether it was sent.
        let mut kill: Option<(Instant, bool)> = None;
        let mut timed_out = false;
        let mut aborted = false;
        let mut rounds = Rounds::default();

        loop {
            if status.is_some() {
                let pipes_done = (stdout.is_none() && stderr.is_none())
                    || drain_until.is_some_and(|d| Instant::now() >= d);
                let group_done = match kill {
                    None => true,
                    Some((_, sigkill_sent)) => sigkill_sent || !group.alive(),
                };
                if pipes_done && group_done {
                    break;
                }
            }
            let sigkill_at = kill.and_then(|(at, sent)| (!sent).then_some(at));
            // Polled in this order: abort and timeout first, the pipes last, so that a command
            // flooding its output cannot starve the rest.
            tokio::select! {
                biased;
                () = cancel.cancelled(), if !aborted => {
                    aborted = true;
                    if kill.is_none() {
                        kill = Some(group.terminate(&mut child));
                    }
                }
                () = sleep_until_opt(deadline), if deadline.is_some() && kill.is_none() => {
                    timed_out = true;
                    kill = Some(group.terminate(&mut child));
                }
                exit = child.wait(), if status.is_none() => {
                    status = Some(exit?);
                    drain_until = Instant::now().checked_add(PIPE_GRACE);
                }
                () = sleep_until_opt(sigkill_at), if sigkill_at.is_some() => {
                    group.kill(&mut child);
                    kill = kill.map(|(at, _)| (at, true));
                }
                () = sleep(GROUP_POLL), if status.is_some() && sigkill_at.is_some() => {}
                () = sleep_until_opt(rounds.ends), if rounds.ends.is_some() => {
                    rounds.flush(on_data);
                }
                () = sleep_until_opt(drain_until),
                    if drain_until.is_some() && (stdout.is_some() || stderr.is_some()) => {}
                n = read_pipe(&mut stdout, &mut out_buf), if stdout.is_some() => match n {
                    Some(n) => rounds.take(Pipe::Stdout, &out_buf[..n], on_data),
                    None => stdout = None,
                },
                n = read_pipe(&mut stderr, &mut err_buf), if stderr.is_some() => match n {
                    Some(n) => rounds.take(Pipe::Stderr, &err_buf[..n], on_data),
                    None => stderr = None,
                },
            }
        }
        // Done: the shell has been reaped; what is left of the group (a background child of a
        // command that ended by itself) keeps running, as under pi.
        rounds.flush(on_data);
        group.disarm();
        Ok(ExecOutcome {
            exit_code: status.and_then(|s| s.code()),
            timed_out,
            aborted,
        })
    }
}

/// One of the two output pipes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pipe {
    Stdout,
    Stderr,
}

/// Orders the two pipes' output as pi's event loop does. Node reads each ready pipe once per
/// turn of its loop, the one that became ready first first: a burst written at once to both
/// (`echo out; echo err >&2; echo out2`) comes out as `out out2 err`. Here a round starts with
/// a chunk when none is open and lasts [`ROUND`]: the pipe that opened it goes straight
/// through, the other's chunks are held until the round ends (or are 64 KiB). Writes further
/// apart keep their order.
#[derive(Debug, Default)]
struct Rounds {
    /// The pipe that opened the current round.
    lead: Option<Pipe>,
    /// When the current round ends.
    ends: Option<Instant>,
    /// The other pipe's output in this round.
    held: Vec<u8>,
}

impl Rounds {
    fn take(&mut self, pipe: Pipe, chunk: &[u8], on_data: &mut (dyn FnMut(&[u8]) + Send)) {
        match self.lead {
            None => {
                self.lead = Some(pipe);
                self.ends = Instant::now().checked_add(ROUND);
                on_data(chunk);
            }
            Some(lead) if lead == pipe => on_data(chunk),
            Some(_) => {
                self.held.extend_from_slice(chunk);
                if self.held.len() >= READ_CHUNK {
                    self.flush(on_data);
                }
            }
        }
    }

    /// Ends the round: the held output goes out.
    fn flush(&mut self, on_data: &mut (dyn FnMut(&[u8]) + Send)) {
        if !self.held.is_empty() {
            on_data(&self.held);
            self.held.clear();
        }
        self.lead = None;
        self.ends = None;
    }
}

/// Sleeps until `at`; never wakes for `None`.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => pending().await,
    }
}

/// Reads a chunk from `pipe`: `None` at its end (or on an error, which ends it too); never
/// returns while there is no pipe.
async fn read_pipe<R: AsyncRead + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> Option<usize> {
    match pipe {
        Some(pipe) => match pipe.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => pending().await,
    }
}

// ---------------------------------------------------------------------------------------------
// Output accumulation (pi's OutputAccumulator)
// ---------------------------------------------------------------------------------------------

/// The output of one command with bounded memory: a decoded tail for the result, counts of
/// everything, and the raw bytes in the full-output file once they are over a limit.
struct OutputAccumulator {
    max_lines: usize,
    max_bytes: usize,
    /// The tail is cut back to this many bytes when it grows over twice as many.
    max_rolling: usize,
    /// The start of a UTF-8 sequence split across chunks.
    pending: Vec<u8>,
    /// Raw output not yet in the file (none once the file is open).
    raw: Vec<u8>,
    /// The decoded end of the output.
    tail: String,
    tail_starts_at_line_boundary: bool,
    total_raw_bytes: usize,
    total_decoded_bytes: usize,
    total_lines: usize,
    current_line_bytes: usize,
    finished: bool,
    spill: Spill,
    /// Output arrived since the last update.
    dirty: bool,
}

/// The full-output file.
enum Spill {
    /// Not needed yet.
    None,
    /// Open at `path`.
    Open {
        path: PathBuf,
        file: BufWriter<File>,
    },
    /// Written and closed (or failed mid-way, logged).
    Closed { path: PathBuf },
    /// Could not be created.
    Failed(String),
}

/// What the output looks like now.
struct Snapshot {
    truncation: Truncation,
    full_output_path: Option<PathBuf>,
}

impl OutputAccumulator {
    fn new() -> Self {
        OutputAccumulator::with_limits(DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES)
    }

    fn with_limits(max_lines: usize, max_bytes: usize) -> Self {
        OutputAccumulator {
            max_lines,
            max_bytes,
            max_rolling: max_bytes.saturating_mul(2).max(1),
            pending: Vec::new(),
            raw: Vec::new(),
            tail: String::new(),
            tail_starts_at_line_boundary: true,
            total_raw_bytes: 0,
            total_decoded_bytes: 0,
            total_lines: 1,
            current_line_bytes: 0,
            finished: false,
            spill: Spill::None,
            dirty: false,
        }
    }

    fn append(&mut self, data: &[u8]) {
        if self.finished || data.is_empty() {
            return;
        }
        self.dirty = true;
        self.total_raw_bytes = self.total_raw_bytes.saturating_add(data.len());
        self.decode(data, false);
        if !matches!(self.spill, Spill::None) || self.should_spill() {
            self.ensure_spill();
            self.write_spill(data);
        } else {
            self.raw.extend_from_slice(data);
        }
    }

    /// Ends the output: a split UTF-8 sequence left at the end becomes U+FFFD.
    fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.decode(&[], true);
        if self.should_spill() {
            self.ensure_spill();
        }
    }

    /// Flushes and closes the full-output file.
    fn close(&mut self) {
        if let Spill::Open { path, file } = std::mem::replace(&mut self.spill, Spill::None) {
            if let Err(e) = file.into_inner().map_err(|e| e.into_error()) {
                tracing::warn!(path = %path.display(), error = %e, "bash: writing the full output failed");
            }
            self.spill = Spill::Closed { path };
        }
    }

    /// Decodes `data` (after what was pending) as a streaming UTF-8 decoder does, invalid
    /// bytes becoming U+FFFD; a sequence split at the end waits for the next chunk unless
    /// `last`.
    fn decode(&mut self, data: &[u8], last: bool) {
        let joined;
        let input: &[u8] = if self.pending.is_empty() {
            data
        } else {
            let mut j = std::mem::take(&mut self.pending);
            j.extend_from_slice(data);
            joined = j;
            &joined
        };
        let keep = if last { 0 } else { incomplete_suffix(input) };
        let (complete, rest) = input.split_at(input.len() - keep);
        let text = String::from_utf8_lossy(complete);
        self.append_text(&text);
        self.pending.extend_from_slice(rest);
    }

    fn append_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let bytes = text.len();
        self.total_decoded_bytes = self.total_decoded_bytes.saturating_add(bytes);
        self.tail.push_str(text);
        if self.tail.len() > self.max_rolling.saturating_mul(2) {
            self.trim_tail();
        }
        match memchr::memrchr(b'\n', text.as_bytes()) {
            None => self.current_line_bytes = self.current_line_bytes.saturating_add(bytes),
            Some(last) => {
                let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
                self.total_lines = self.total_lines.saturating_add(newlines);
                self.current_line_bytes = bytes - (last + 1);
            }
        }
    }

    /// Cuts the tail back to `max_rolling` bytes (at a character boundary).
    fn trim_tail(&mut self) {
        let len = self.tail.len();
        if len <= self.max_rolling {
            return;
        }
        let mut start = len - self.max_rolling;
        while !self.tail.is_char_boundary(start) {
            start += 1;
        }
        if start > 0 {
            self.tail_starts_at_line_boundary = self.tail.as_bytes()[start - 1] == b'\n';
        }
        self.tail.drain(..start);
    }

    /// The tail without a leading partial line (when the cut fell inside one).
    fn snapshot_text(&self) -> &str {
        if self.tail_starts_at_line_boundary {
            return &self.tail;
        }
        match self.tail.find('\n') {
            Some(i) => &self.tail[i + 1..],
            None => &self.tail,
        }
    }

    fn should_spill(&self) -> bool {
        self.total_raw_bytes > self.max_bytes
            || self.total_decoded_bytes > self.max_bytes
            || self.total_lines > self.max_lines
    }

    /// Opens the full-output file, with what was held back in memory, unless already done.
    fn ensure_spill(&mut self) {
        if !matches!(self.spill, Spill::None) {
            return;
        }
        self.spill = match create_temp_file() {
            Ok((path, file)) => Spill::Open {
                path,
                file: BufWriter::with_capacity(READ_CHUNK, file),
            },
            Err(e) => {
                tracing::warn!(error = %e, "bash: could not create the full-output file");
                Spill::Failed(e.to_string())
            }
        };
        let raw = std::mem::take(&mut self.raw);
        self.write_spill(&raw);
    }

    fn write_spill(&mut self, data: &[u8]) {
        if let Spill::Open { path, file } = &mut self.spill
            && let Err(e) = file.write_all(data)
        {
            tracing::warn!(path = %path.display(), error = %e, "bash: writing the full output failed");
            let path = path.clone();
            self.spill = Spill::Closed { path };
        }
    }

    fn full_output_path(&self) -> Option<&Path> {
        match &self.spill {
            Spill::Open { path, .. } | Spill::Closed { path } => Some(path),
            Spill::None | Spill::Failed(_) => None,
        }
    }

    /// The tail as the result shows it, with the counts of the whole output; opens the
    /// full-output file if the output is truncated.
    fn snapshot(&mut self) -> Snapshot {
        let mut t = truncate_tail(self.snapshot_text(), self.max_lines, self.max_bytes);
        let truncated =
            self.total_lines > self.max_lines || self.total_decoded_bytes > self.max_bytes;
        t.truncated_by = match (truncated, t.truncated_by) {
            (false, _) => None,
            (true, Some(by)) => Some(by),
            (true, None) if self.total_decoded_bytes > self.max_bytes => Some(TruncatedBy::Bytes),
            (true, None) => Some(TruncatedBy::Lines),
        };
        t.truncated = truncated;
        t.total_lines = self.total_lines;
        t.total_bytes = self.total_decoded_bytes;
        if truncated {
            self.ensure_spill();
        }
        Snapshot {
            truncation: t,
            full_output_path: self.full_output_path().map(Path::to_path_buf),
        }
    }

    /// Bytes held in memory (for the bound's test).
    #[cfg(test)]
    fn retained_bytes(&self) -> usize {
        let file = match &self.spill {
            Spill::Open { file, .. } => file.capacity(),
            _ => 0,
        };
        self.tail.capacity() + self.raw.capacity() + self.pending.capacity() + file
    }
}

/// How many bytes at the end of `bytes` are the start of a UTF-8 sequence that the next
/// chunk may complete (0 to 3).
fn incomplete_suffix(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let start = bytes.len() - back;
        if bytes[start] & 0xC0 != 0x80 {
            // The last sequence starts here: incomplete, or complete, or invalid.
            let incomplete = std::str::from_utf8(&bytes[start..])
                .is_err_and(|e| e.valid_up_to() == 0 && e.error_len().is_none());
            return if incomplete { back } else { 0 };
        }
    }
    0
}

/// Creates `pi-bash-<16 hex digits>.log` in the temp directory (readable by the user only).
fn create_temp_file() -> io::Result<(PathBuf, File)> {
    let dir = std::env::temp_dir();
    let mut last_err = None;
    for _ in 0..8 {
        let id: String = uuid::Uuid::new_v4().as_bytes()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let path = dir.join(format!("{TEMP_FILE_PREFIX}-{id}.log"));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        match options.open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no free temp file name")))
}

fn lock(acc: &Mutex<OutputAccumulator>) -> MutexGuard<'_, OutputAccumulator> {
    acc.lock().unwrap_or_else(|e| e.into_inner())
}

/// A partial result as pi sends it: the tail so far, and the truncation and the file's path
/// once there are any.
fn update_of(snapshot: Snapshot) -> AgentToolResult {
    let mut details = Map::new();
    if snapshot.truncation.truncated {
        details.insert(
            "truncation".into(),
            serde_json::to_value(&snapshot.truncation).unwrap_or(Value::Null),
        );
    }
    if let Some(path) = &snapshot.full_output_path {
        details.insert(
            "fullOutputPath".into(),
            path.to_string_lossy().into_owned().into(),
        );
    }
    AgentToolResult::text(snapshot.truncation.content).with_details(Value::Object(details))
}

/// Sends pi's empty first update, then one per burst of output, at most one per
/// [`UPDATE_THROTTLE`]. Never returns: it is dropped when the command is done.
async fn pump_updates(
    acc: &Mutex<OutputAccumulator>,
    notify: &Notify,
    updates: &ToolUpdates,
) -> Infallible {
    updates
        .update(AgentToolResult::new(Vec::new()).with_details(Value::Null))
        .await;
    let mut last: Option<Instant> = None;
    loop {
        notify.notified().await;
        if let Some(last) = last {
            sleep_until(last + UPDATE_THROTTLE).await;
        }
        let partial = {
            let mut acc = lock(acc);
            if !std::mem::take(&mut acc.dirty) {
                continue;
            }
            update_of(acc.snapshot())
        };
        last = Some(Instant::now());
        updates.update(partial).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The tool
// ---------------------------------------------------------------------------------------------

/// pi's `bash` tool: runs a command with `bash -c` in the tool's directory and returns its
/// output (stdout and stderr interleaved), the last 2000 lines or 50 KiB of it, with the full
/// output saved to `pi-bash-<id>.log` in the temp directory when it is longer.
///
/// A non-zero exit code, a timeout (the call's `timeout` argument in seconds; none by default)
/// and an abort are error results: the output, then `Command exited with code N`,
/// `Command timed out after N seconds` or `Command aborted`. The output so far is sent as
/// `tool_execution_update`s while the command runs (at most ten a second).
///
/// The command runs through [`BashOperations`], [`LocalBash`] unless replaced with
/// [`with_operations`](Self::with_operations); see there for how it is killed.
///
/// ```
/// use pi_engine::CancellationToken;
/// use pi_engine::agent::{AgentTool, ToolUpdates};
/// use pi_engine::tools::BashTool;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let bash = BashTool::new(std::env::temp_dir());
/// let args = json!({"command": "echo hello; echo oops >&2"});
/// let result = bash
///     .execute("call_1", args.as_object().cloned().unwrap_or_default(),
///              CancellationToken::new(), ToolUpdates::disconnected())
///     .await?;
/// assert_eq!(result.text_content(), "hello\noops\n");
///
/// let args = json!({"command": "exit 3"});
/// let err = bash
///     .execute("call_2", args.as_object().cloned().unwrap_or_default(),
///              CancellationToken::new(), ToolUpdates::disconnected())
///     .await
///     .unwrap_err();
/// assert_eq!(err.to_string(), "(no output)\n\nCommand exited with code 3");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct BashTool {
    cwd: PathBuf,
    ops: Arc<dyn BashOperations>,
    default_timeout: Option<Duration>,
    spec: Spec,
}

impl BashTool {
    /// A `bash` tool running commands in `cwd` on this machine ([`LocalBash`]).
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        BashTool {
            cwd: cwd.into(),
            ops: Arc::new(LocalBash::new()),
            default_timeout: None,
            spec: spec(None),
        }
    }

    /// Runs commands through `ops` instead of [`LocalBash`].
    #[must_use]
    pub fn with_operations(mut self, ops: Arc<dyn BashOperations>) -> Self {
        self.ops = ops;
        self
    }

    /// Gives calls without a `timeout` argument this one (pi has none; zero is none, as a
    /// call's `timeout` of 0 is). The `timeout` parameter's description then names it, so the
    /// model knows.
    #[must_use]
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = (!timeout.is_zero()).then_some(timeout);
        self.spec = spec(self.default_timeout);
        self
    }

    /// The directory commands run in.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }
}

/// pi's definition of `bash`; a default timeout is named in the `timeout` parameter.
fn spec(default_timeout: Option<Duration>) -> Spec {
    let timeout_description = match default_timeout {
        None => "Timeout in seconds (optional, no default timeout)".to_owned(),
        Some(t) => format!(
            "Timeout in seconds (optional, default {} seconds)",
            seconds_text(t.as_secs_f64())
        ),
    };
    Spec::new(
        "bash",
        format!(
            "Execute a bash command in the current working directory. Returns stdout and stderr. \
             Output is truncated to last {DEFAULT_MAX_LINES} lines or {}KB (whichever is hit \
             first). If truncated, full output is saved to a temp file. Optionally provide a \
             timeout in seconds.",
            DEFAULT_MAX_BYTES / 1024
        ),
        json!({
            "type": "object",
            "required": ["command"],
            "properties": {
                "command": {"type": "string", "description": "Bash command to execute"},
                "timeout": {"type": "number", "description": timeout_description},
            },
        }),
        "Execute bash commands (ls, grep, find, etc.)",
        &[],
    )
}

/// A number of seconds as JavaScript prints it (`1`, `0.5`).
fn seconds_text(secs: f64) -> String {
    format!("{secs}")
}

/// `status` after the output (and a blank line), or alone when there is none.
fn append_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_owned()
    } else {
        format!("{text}\n\n{status}")
    }
}

/// The result's text, `empty` when there is no output, with pi's notice when it is cut; and
/// the details (`None` when not cut).
fn format_output(
    acc: &OutputAccumulator,
    snapshot: &Snapshot,
    empty: &str,
) -> (String, Option<Value>) {
    let t = &snapshot.truncation;
    let mut text = if t.content.is_empty() {
        empty.to_owned()
    } else {
        t.content.clone()
    };
    if !t.truncated {
        return (text, None);
    }
    let path = match (&snapshot.full_output_path, &acc.spill) {
        (Some(p), _) => p.to_string_lossy().into_owned(),
        (None, Spill::Failed(e)) => format!("(not saved: {e})"),
        (None, _) => "(not saved)".to_owned(),
    };
    let start = t.total_lines.saturating_sub(t.output_lines) + 1;
    let end = t.total_lines;
    let notice = if t.last_line_partial {
        format!(
            "[Showing last {} of line {end} (line is {}). Full output: {path}]",
            format_size(t.output_bytes),
            format_size(acc.current_line_bytes)
        )
    } else if t.truncated_by == Some(TruncatedBy::Lines) {
        format!(
            "[Showing lines {start}-{end} of {}. Full output: {path}]",
            t.total_lines
        )
    } else {
        format!(
            "[Showing lines {start}-{end} of {} ({} limit). Full output: {path}]",
            t.total_lines,
            format_size(DEFAULT_MAX_BYTES)
        )
    };
    text.push_str("\n\n");
    text.push_str(&notice);
    let mut details = Map::new();
    details.insert(
        "truncation".into(),
        serde_json::to_value(t).unwrap_or(Value::Null),
    );
    if let Some(p) = &snapshot.full_output_path {
        details.insert(
            "fullOutputPath".into(),
            p.to_string_lossy().into_owned().into(),
        );
    }
    (text, Some(Value::Object(details)))
}

#[async_trait]
impl AgentTool for BashTool {
    spec_accessors!();

    /// Runs the command to its end, streaming the output so far as updates.
    ///
    /// # Cancel safety
    ///
    /// `cancel` kills the command (its process group, with [`LocalBash`]) and ends the call
    /// with `Command aborted`; dropping the future kills it too.
    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| fail("bash: the \"command\" argument must be a string"))?;
        let (timeout, timeout_text) = match args.get("timeout").and_then(Value::as_f64) {
            // pi: a timeout of zero or less is none.
            Some(secs) => (
                (secs > 0.0)
                    .then(|| Duration::try_from_secs_f64(secs).ok())
                    .flatten(),
                seconds_text(secs),
            ),
            None => (
                self.default_timeout,
                self.default_timeout
                    .map(|t| seconds_text(t.as_secs_f64()))
                    .unwrap_or_default(),
            ),
        };

        let acc = Mutex::new(OutputAccumulator::new());
        let notify = Notify::new();
        let mut on_data = |chunk: &[u8]| {
            lock(&acc).append(chunk);
            notify.notify_one();
        };
        let options = ExecOptions::new(&mut on_data, cancel).with_timeout(timeout);
        let outcome = {
            let exec = self.ops.exec(command, &self.cwd, options);
            let pump = pump_updates(&acc, &notify, &updates);
            tokio::select! {
                // The pump first: it is rarely ready, and a flood of output must not starve it.
                biased;
                never = pump => match never {},
                outcome = exec => outcome,
            }
        };

        let mut acc = acc.into_inner().unwrap_or_else(|e| e.into_inner());
        acc.finish();
        if std::mem::take(&mut acc.dirty) {
            let snapshot = acc.snapshot();
            updates.update(update_of(snapshot)).await;
        }
        let snapshot = acc.snapshot();
        acc.close();

        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) => return Err(fail(e.to_string())),
        };
        if outcome.aborted || outcome.timed_out {
            let (text, _) = format_output(&acc, &snapshot, "");
            let status = if outcome.aborted {
                "Command aborted".to_owned()
            } else if timeout_text.is_empty() {
                "Command timed out".to_owned()
            } else {
                format!("Command timed out after {timeout_text} seconds")
            };
            return Err(fail(append_status(&text, &status)));
        }
        let (text, details) = format_output(&acc, &snapshot, "(no output)");
        match outcome.exit_code {
            Some(code) if code != 0 => Err(fail(append_status(
                &text,
                &format!("Command exited with code {code}"),
            ))),
            _ => Ok(AgentToolResult::text(text).with_details(details.unwrap_or(Value::Null))),
        }
    }
}

/// A command a person ran (pi's `executeBashWithOperations`, for `!cmd`): the tail of its
/// output (2,000 lines / 50 KiB, no notice), whether it was cut (the whole output is then
/// in a `pi-bash-*.log` file), its exit code (none when cancelled) and whether it was
/// cancelled.
pub(crate) struct UserCommand {
    pub(crate) output: String,
    pub(crate) exit_code: Option<i64>,
    pub(crate) cancelled: bool,
    pub(crate) truncated: bool,
    pub(crate) full_output_path: Option<PathBuf>,
}

/// Runs a person's command through `ops`, with bounded memory (as the `bash` tool).
///
/// # Cancel safety
///
/// `cancel` kills the command and ends the call with `cancelled`; dropping the future kills
/// it too (with [`LocalBash`]).
pub(crate) async fn run_user_command(
    ops: &dyn BashOperations,
    command: &str,
    cwd: &Path,
    cancel: CancellationToken,
) -> io::Result<UserCommand> {
    let acc = Mutex::new(OutputAccumulator::new());
    let mut on_data = |chunk: &[u8]| lock(&acc).append(chunk);
    let options = ExecOptions::new(&mut on_data, cancel.clone());
    let outcome = ops.exec(command, cwd, options).await;
    let mut acc = acc.into_inner().unwrap_or_else(|e| e.into_inner());
    acc.finish();
    let snapshot = acc.snapshot();
    acc.close();
    let outcome = outcome?;
    let cancelled = outcome.aborted || cancel.is_cancelled();
    Ok(UserCommand {
        output: snapshot.truncation.content,
        exit_code: if cancelled {
            None
        } else {
            outcome.exit_code.map(i64::from)
        },
        cancelled,
        truncated: snapshot.truncation.truncated,
        full_output_path: snapshot.full_output_path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    async fn run(command: &str) -> Result<AgentToolResult, String> {
        BashTool::new(std::env::temp_dir())
            .execute(
                "c1",
                args(json!({ "command": command })),
                CancellationToken::new(),
                ToolUpdates::disconnected(),
            )
            .await
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_default_timeout_is_named_in_the_schema() {
        let tool = BashTool::new(".").with_default_timeout(Duration::from_secs(90));
        assert_eq!(
            tool.definition().parameters["properties"]["timeout"]["description"],
            "Timeout in seconds (optional, default 90 seconds)"
        );
    }

    #[tokio::test]
    async fn echo() {
        let r = run("echo hello; echo world").await.unwrap();
        assert_eq!(r.text_content(), "hello\nworld\n");
        assert_eq!(r.details, Value::Null);
    }

    #[tokio::test]
    async fn no_output() {
        assert_eq!(run("true").await.unwrap().text_content(), "(no output)");
        assert_eq!(
            run("exit 2").await.unwrap_err(),
            "(no output)\n\nCommand exited with code 2"
        );
    }

    #[tokio::test]
    async fn missing_cwd_is_pis_error() {
        let err = BashTool::new("/nonexistent/pi-engine-bash")
            .execute(
                "c1",
                args(json!({"command": "true"})),
                CancellationToken::new(),
                ToolUpdates::disconnected(),
            )
            .await
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "Working directory does not exist: /nonexistent/pi-engine-bash\nCannot execute bash commands."
        );
    }

    #[test]
    fn decoding_splits_sequences_across_chunks() {
        let mut acc = OutputAccumulator::new();
        let e = "é".as_bytes();
        acc.append(&e[..1]);
        assert_eq!(acc.tail, "");
        acc.append(&e[1..]);
        acc.append(b"\xff x");
        acc.append(&e[..1]);
        acc.finish();
        assert_eq!(acc.tail, "é\u{FFFD} x\u{FFFD}");
        assert_eq!(acc.total_raw_bytes, 6);
        assert_eq!(acc.total_decoded_bytes, "é\u{FFFD} x\u{FFFD}".len());

        // A four-byte character a byte at a time, then one split inside a larger chunk.
        let mut acc = OutputAccumulator::new();
        for b in "😀".as_bytes() {
            acc.append(&[*b]);
        }
        let text = "ab€cd😀".as_bytes();
        acc.append(&text[..4]);
        acc.append(&text[4..9]);
        acc.append(&text[9..]);
        acc.append(b"\xe0\x80z\x80");
        acc.finish();
        assert_eq!(acc.tail, "😀ab€cd😀\u{FFFD}\u{FFFD}z\u{FFFD}");
    }

    #[test]
    fn small_output_stays_in_memory() {
        let mut acc = OutputAccumulator::new();
        acc.append(b"a\nb\n");
        acc.finish();
        let s = acc.snapshot();
        assert!(!s.truncation.truncated);
        assert_eq!(s.truncation.content, "a\nb\n");
        assert_eq!(s.truncation.total_lines, 3);
        assert!(s.full_output_path.is_none());
    }

    #[test]
    fn memory_stays_bounded_and_the_file_has_everything() {
        let mut acc = OutputAccumulator::new();
        let line = b"aaaaaaaaa\n";
        let chunk: Vec<u8> = line.iter().copied().cycle().take(65_530).collect();
        let mut total = 0;
        let mut peak = 0;
        while total < 20_000_000 {
            acc.append(&chunk);
            total += chunk.len();
            peak = peak.max(acc.retained_bytes());
        }
        acc.finish();
        let s = acc.snapshot();
        acc.close();
        assert!(peak < 1024 * 1024, "retained {peak} bytes");
        assert_eq!(s.truncation.total_bytes, total);
        assert_eq!(s.truncation.total_lines, total / 10 + 1);
        assert_eq!(s.truncation.output_lines, DEFAULT_MAX_LINES);
        let path = s.full_output_path.unwrap();
        assert!(
            path.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("pi-bash-")
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), total as u64);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_long_last_line_shows_its_end() {
        let mut acc = OutputAccumulator::new();
        acc.append(b"first\n");
        acc.append(&vec![b'x'; 300_000]);
        acc.finish();
        let s = acc.snapshot();
        let (text, details) = format_output(&acc, &s, "");
        acc.close();
        assert!(s.truncation.last_line_partial);
        assert!(
            text.ends_with(&format!(
                "[Showing last 50.0KB of line 2 (line is 293.0KB). Full output: {}]",
                s.full_output_path.as_ref().unwrap().display()
            )),
            "{}",
            &text[text.len() - 200..]
        );
        assert_eq!(details.unwrap()["truncation"]["truncatedBy"], "bytes");
        std::fs::remove_file(s.full_output_path.unwrap()).unwrap();
    }
}
