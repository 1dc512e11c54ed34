//! Which session the command uses: `--session`, `-c/--continue`, `--fork`, `--no-session`,
//! as pi's `main` picks it.

use std::path::{Path, PathBuf};

use crate::session::{SessionError, SessionManager, SessionOptions};

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SessionRequest {
    /// A new session (no flag).
    #[default]
    New,
    /// `--no-session`: a session in memory only.
    NoSession,
    /// `-c`/`--continue`: the most recent session of the working directory, or a new one.
    Continue,
    /// `-r`/`--resume`: pi's interactive session picker.
    Resume,
    /// `--session <path|id prefix>`.
    Open(String),
    /// `--fork <path|id prefix>`: a copy of that session, in the working directory.
    Fork(String),
}

/// Why no session could be opened. The `Display` texts are pi's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionSelectError {
    /// `--fork` with a flag that picks another session (pi: `Error: --fork cannot be
    /// combined with …`).
    #[error("--fork cannot be combined with {}", .0.join(", "))]
    ForkConflict(Vec<&'static str>),
    /// No session's path or id prefix matches.
    #[error("No session found matching '{0}'")]
    NotFound(String),
    /// `--session` found the session in another project. pi asks whether to fork it into
    /// the working directory; [`fork_session`] does that.
    #[error("Session found in different project: {cwd}")]
    OtherProject {
        /// The session file.
        path: PathBuf,
        /// Its project's working directory.
        cwd: String,
    },
    /// `--resume` needs pi's interactive picker.
    #[error("--resume needs an interactive terminal; use --session <path|id> or --continue")]
    ResumeUnsupported,
    /// The session's working directory no longer exists (pi asks in its interactive mode,
    /// and fails so in the others). Reopen with [`SessionOptions::with_cwd`] to go on in
    /// another directory.
    #[error("Stored session working directory does not exist: {session_cwd}\nSession file: {}\nCurrent working directory: {}", session_file.display(), cwd.display())]
    MissingCwd {
        /// The session file.
        session_file: PathBuf,
        /// The working directory its header names.
        session_cwd: String,
        /// The command's working directory.
        cwd: PathBuf,
    },
    /// The source of `--fork` is empty or missing.
    #[error("Cannot fork: source session file is empty or invalid: {}", .0.display())]
    EmptyForkSource(PathBuf),
    /// The session layer's error (a file that is not a session, locked, unreadable, …).
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl SessionRequest {
    /// The request of the session flags, refusing `--fork` with another of them as pi does.
    ///
    /// ```
    /// use pi_engine::cli::config::SessionRequest;
    ///
    /// let r = SessionRequest::from_flags(false, false, false, None, Some("abc"));
    /// assert_eq!(r.unwrap(), SessionRequest::Fork("abc".into()));
    /// let e = SessionRequest::from_flags(true, true, false, None, Some("abc")).unwrap_err();
    /// assert_eq!(e.to_string(), "--fork cannot be combined with --continue, --no-session");
    /// ```
    ///
    /// # Errors
    ///
    /// [`SessionSelectError::ForkConflict`].
    pub fn from_flags(
        continue_recent: bool,
        no_session: bool,
        resume: bool,
        session: Option<&str>,
        fork: Option<&str>,
    ) -> Result<SessionRequest, SessionSelectError> {
        if let Some(fork) = fork {
            let conflicts: Vec<&'static str> = [
                (session.is_some(), "--session"),
                (continue_recent, "--continue"),
                (resume, "--resume"),
                (no_session, "--no-session"),
            ]
            .into_iter()
            .filter_map(|(set, name)| set.then_some(name))
            .collect();
            if !conflicts.is_empty() {
                return Err(SessionSelectError::ForkConflict(conflicts));
            }
            return Ok(SessionRequest::Fork(fork.to_owned()));
        }
        // pi's order: --no-session, --session, --resume, --continue.
        Ok(if no_session {
            SessionRequest::NoSession
        } else if let Some(s) = session {
            SessionRequest::Open(s.to_owned())
        } else if resume {
            SessionRequest::Resume
        } else if continue_recent {
            SessionRequest::Continue
        } else {
            SessionRequest::New
        })
    }
}

/// Where a `--session`/`--fork` argument points.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionMatch {
    /// The argument is a path (it has a `/` or `\`, or ends in `.jsonl`), relative to the
    /// working directory.
    Path(PathBuf),
    /// The most recent session of the working directory whose id starts with the argument.
    Local(PathBuf),
    /// The most recent session of any project whose id starts with the argument.
    Global {
        /// The session file.
        path: PathBuf,
        /// Its working directory.
        cwd: String,
    },
}

impl SessionMatch {
    /// The session file.
    pub fn path(&self) -> &Path {
        match self {
            SessionMatch::Path(p) | SessionMatch::Local(p) => p,
            SessionMatch::Global { path, .. } => path,
        }
    }
}

/// pi's `resolveSessionPath`: a path as it is; else an id prefix, among the sessions of
/// `cwd` (in the session directory of `options`) first, then among every project's
/// (`<agent dir>/sessions`). `None` when nothing matches.
///
/// # Errors
///
/// When a session directory cannot be listed.
pub fn resolve_session_arg(
    arg: &str,
    cwd: &Path,
    options: &SessionOptions,
) -> Result<Option<SessionMatch>, SessionError> {
    if arg.contains(['/', '\\']) || arg.ends_with(".jsonl") {
        return Ok(Some(SessionMatch::Path(cwd.join(arg))));
    }
    let cwd_str = cwd.to_string_lossy();
    if let Some(s) = options
        .list(&cwd_str)?
        .into_iter()
        .find(|s| s.id.starts_with(arg))
    {
        return Ok(Some(SessionMatch::Local(s.path)));
    }
    Ok(options
        .list_all()?
        .into_iter()
        .find(|s| s.id.starts_with(arg))
        .map(|s| SessionMatch::Global {
            path: s.path,
            cwd: s.cwd,
        }))
}

/// Copies the session at `source` into a new session of `cwd` (pi's `forkFrom`), in the
/// session directory of `options`.
///
/// # Errors
///
/// [`SessionSelectError::EmptyForkSource`] for a missing or empty file, else the session
/// layer's error.
pub fn fork_session(
    source: &Path,
    cwd: &Path,
    options: &SessionOptions,
) -> Result<SessionManager, SessionSelectError> {
    let empty = std::fs::metadata(source).map_or(true, |m| m.len() == 0);
    if empty {
        return Err(SessionSelectError::EmptyForkSource(source.to_owned()));
    }
    match options.fork_from(source, cwd.to_string_lossy()) {
        Err(SessionError::NotASession { .. }) => {
            Err(SessionSelectError::EmptyForkSource(source.to_owned()))
        }
        other => Ok(other?),
    }
}

/// The session the command uses, as pi's `main` makes it: `--no-session` in memory,
/// `--fork` a copy in `cwd`, `--session` the file (a session of another project is
/// [`SessionSelectError::OtherProject`]: pi asks whether to fork it), `--continue` the most
/// recent session of `cwd` or a new one, else a new session. `options` holds the agent and
/// session directories ([`ConfigPaths::session_options`](super::ConfigPaths::session_options)).
/// A reopened session whose working directory is gone is
/// [`SessionSelectError::MissingCwd`], as in pi's headless modes.
///
/// ```
/// use pi_engine::cli::config::{SessionRequest, open_session};
/// use pi_engine::session::SessionOptions;
/// use pi_engine::UserMessage;
///
/// let dir = std::env::temp_dir().join(format!("pi-open-session-doc-{}", std::process::id()));
/// let cwd = std::env::current_dir().unwrap();
/// let options = SessionOptions::new().with_agent_dir(&dir);
/// let mut first = open_session(&SessionRequest::New, &cwd, &options).unwrap();
/// first.append_message(UserMessage::text("hello")).unwrap();
/// let id = first.session_id().to_owned();
/// drop(first);
///
/// let again = open_session(&SessionRequest::Open(id[..8].to_owned()), &cwd, &options).unwrap();
/// assert_eq!(again.session_id(), id);
/// let err = open_session(&SessionRequest::Open("zzzz".into()), &cwd, &options).unwrap_err();
/// assert_eq!(err.to_string(), "No session found matching 'zzzz'");
/// # drop(again);
/// # std::fs::remove_dir_all(&dir).ok();
/// ```
///
/// # Errors
///
/// See [`SessionSelectError`].
pub fn open_session(
    request: &SessionRequest,
    cwd: &Path,
    options: &SessionOptions,
) -> Result<SessionManager, SessionSelectError> {
    let cwd_str = cwd.to_string_lossy().into_owned();
    let sm = match request {
        SessionRequest::NoSession => return Ok(options.in_memory(cwd_str)),
        SessionRequest::New => return Ok(options.create(cwd_str)),
        SessionRequest::Resume => return Err(SessionSelectError::ResumeUnsupported),
        SessionRequest::Fork(arg) => {
            let found = resolve_session_arg(arg, cwd, options)?
                .ok_or_else(|| SessionSelectError::NotFound(arg.clone()))?;
            return fork_session(found.path(), cwd, options);
        }
        SessionRequest::Open(arg) => {
            match resolve_session_arg(arg, cwd, options)?
                .ok_or_else(|| SessionSelectError::NotFound(arg.clone()))?
            {
                SessionMatch::Path(path) | SessionMatch::Local(path) => options.open(path)?,
                SessionMatch::Global { path, cwd } => {
                    return Err(SessionSelectError::OtherProject { path, cwd });
                }
            }
        }
        SessionRequest::Continue => options.continue_recent(cwd_str)?,
    };
    check_session_cwd(&sm, cwd)?;
    Ok(sm)
}

/// pi's `getMissingSessionCwdIssue`: fails when `session` is a file whose working directory
/// does not exist.
///
/// # Errors
///
/// [`SessionSelectError::MissingCwd`].
pub fn check_session_cwd(session: &SessionManager, cwd: &Path) -> Result<(), SessionSelectError> {
    let Some(file) = session.session_file() else {
        return Ok(());
    };
    let session_cwd = session.cwd();
    if session_cwd.is_empty() || Path::new(session_cwd).exists() {
        return Ok(());
    }
    Err(SessionSelectError::MissingCwd {
        session_file: file.to_owned(),
        session_cwd: session_cwd.to_owned(),
        cwd: cwd.to_owned(),
    })
}
