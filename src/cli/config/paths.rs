//! Where pi keeps its configuration: the agent directory and the files in it, the project's
//! `.pi/settings.json`, and the session directory (pi's `config.ts`).

use std::path::{Path, PathBuf};

use crate::session::SessionOptions;

pub use crate::session::ENV_AGENT_DIR;

/// The environment variable pi reads for the session directory (`--session-dir` wins over
/// it; it wins over the `sessionDir` setting).
pub const ENV_SESSION_DIR: &str = "PI_CODING_AGENT_SESSION_DIR";

/// The name of pi's configuration directory, in the home directory (`~/.pi/agent`) and in a
/// project (`.pi/settings.json`).
pub const CONFIG_DIR_NAME: &str = ".pi";

fn home_dir() -> PathBuf {
    std::env::home_dir().unwrap_or_default()
}

/// `~` and a leading `~/` replaced by the home directory (pi's `expandTildePath`); any other
/// path unchanged.
///
/// ```
/// use pi_engine::cli::config::expand_tilde;
///
/// let home = std::env::home_dir().unwrap();
/// assert_eq!(expand_tilde("~/x/y"), home.join("x/y"));
/// assert_eq!(expand_tilde("/abs"), std::path::PathBuf::from("/abs"));
/// assert_eq!(expand_tilde("~user/x"), std::path::PathBuf::from("~user/x"));
/// ```
pub fn expand_tilde(path: &str) -> PathBuf {
    if path == "~" {
        home_dir()
    } else if let Some(rest) = path.strip_prefix("~/") {
        home_dir().join(rest)
    } else {
        PathBuf::from(path)
    }
}

/// The agent directory pi uses: `$PI_CODING_AGENT_DIR` (`~` expanded) when set and not
/// empty, else `~/.pi/agent` (pi's `getAgentDir`).
pub fn default_agent_dir() -> PathBuf {
    match std::env::var(ENV_AGENT_DIR) {
        Ok(dir) if !dir.is_empty() => expand_tilde(&dir),
        _ => home_dir().join(CONFIG_DIR_NAME).join("agent"),
    }
}

/// The places of pi's configuration for one working directory.
///
/// ```
/// use pi_engine::cli::config::ConfigPaths;
/// use std::path::Path;
///
/// let paths = ConfigPaths::new("/home/me/project", "/home/me/.pi/agent");
/// assert_eq!(paths.settings(), Path::new("/home/me/.pi/agent/settings.json"));
/// assert_eq!(paths.project_settings(), Path::new("/home/me/project/.pi/settings.json"));
/// assert_eq!(paths.auth(), Path::new("/home/me/.pi/agent/auth.json"));
/// assert_eq!(paths.models(), Path::new("/home/me/.pi/agent/models.json"));
/// assert_eq!(
///     paths.default_session_dir(),
///     Path::new("/home/me/.pi/agent/sessions/--home-me-project--"),
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigPaths {
    /// The working directory (its `.pi/settings.json` is the project's settings).
    pub cwd: PathBuf,
    /// The agent directory (`~/.pi/agent`).
    pub agent_dir: PathBuf,
}

impl ConfigPaths {
    /// The paths for `cwd` with the given agent directory.
    pub fn new(cwd: impl Into<PathBuf>, agent_dir: impl Into<PathBuf>) -> Self {
        ConfigPaths {
            cwd: cwd.into(),
            agent_dir: agent_dir.into(),
        }
    }

    /// The paths for `cwd` with pi's agent directory ([`default_agent_dir`]).
    pub fn for_cwd(cwd: impl Into<PathBuf>) -> Self {
        ConfigPaths::new(cwd, default_agent_dir())
    }

    /// The global settings: `<agent dir>/settings.json`.
    pub fn settings(&self) -> PathBuf {
        self.agent_dir.join("settings.json")
    }

    /// The project's settings: `<cwd>/.pi/settings.json`.
    pub fn project_settings(&self) -> PathBuf {
        self.cwd.join(CONFIG_DIR_NAME).join("settings.json")
    }

    /// Custom models and provider overrides: `<agent dir>/models.json`.
    pub fn models(&self) -> PathBuf {
        self.agent_dir.join("models.json")
    }

    /// Stored credentials: `<agent dir>/auth.json`.
    pub fn auth(&self) -> PathBuf {
        self.agent_dir.join("auth.json")
    }

    /// Every project's sessions: `<agent dir>/sessions`.
    pub fn sessions(&self) -> PathBuf {
        self.agent_dir.join("sessions")
    }

    /// pi's per-cwd session directory, `<agent dir>/sessions/--<cwd>--`.
    pub fn default_session_dir(&self) -> PathBuf {
        self.session_options(None)
            .session_dir_for(&self.cwd.to_string_lossy())
    }

    /// Session options with this agent directory and, when given, the session directory
    /// ([`resolve_session_dir`]); without one, pi's per-cwd layout applies.
    pub fn session_options(&self, session_dir: Option<PathBuf>) -> SessionOptions {
        let options = SessionOptions::new().with_agent_dir(&self.agent_dir);
        match session_dir {
            Some(dir) => options.with_session_dir(dir),
            None => options,
        }
    }
}

/// The session directory as pi's `main` picks it: `--session-dir` (as given), else
/// `$PI_CODING_AGENT_SESSION_DIR` (`~` expanded), else the `sessionDir` setting (`~`
/// expanded); `None` for pi's per-cwd layout. Empty values count as unset; relative paths
/// are taken from `cwd`, as pi takes them from its working directory.
///
/// ```
/// use pi_engine::cli::config::resolve_session_dir;
/// use std::path::{Path, PathBuf};
///
/// let cwd = Path::new("/work");
/// let pick = |cli, env, setting| resolve_session_dir(cli, env, setting, cwd);
/// assert_eq!(pick(Some("/a"), Some("/b"), Some("/c")), Some(PathBuf::from("/a")));
/// assert_eq!(pick(None, Some("/b"), Some("/c")), Some(PathBuf::from("/b")));
/// assert_eq!(pick(None, None, Some("sessions")), Some(PathBuf::from("/work/sessions")));
/// assert_eq!(pick(None, Some(""), None), None);
/// ```
pub fn resolve_session_dir(
    cli: Option<&str>,
    env: Option<&str>,
    setting: Option<&str>,
    cwd: &Path,
) -> Option<PathBuf> {
    let chosen = match (cli, env, setting) {
        (Some(dir), _, _) if !dir.is_empty() => PathBuf::from(dir),
        (_, Some(dir), _) if !dir.is_empty() => expand_tilde(dir),
        (_, _, Some(dir)) if !dir.is_empty() => expand_tilde(dir),
        _ => return None,
    };
    Some(cwd.join(chosen))
}
