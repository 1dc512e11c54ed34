//! Configuration values that name a secret instead of holding it (pi's
//! `resolve-config-value`): `apiKey` and header values in `models.json` are
//!
//! * `!command`: the command's standard output, trimmed (run by `sh -c`, or `cmd /C` on
//!   Windows, with a 10-second limit; a failure, a non-zero exit or empty output resolve to
//!   nothing);
//! * the name of a set, non-empty environment variable: its value;
//! * anything else: the text itself.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::OnceCell;

/// One command's result, computed once; concurrent callers wait for the first.
type CachedResult = Arc<OnceCell<Option<String>>>;

/// How long a `!command` may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Resolves a configuration value; a `!command` runs once per process and its result
/// (even a failure) is reused, as pi's `resolveConfigValue`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pi_engine::models::resolve_config_value;
///
/// assert_eq!(resolve_config_value("sk-literal").await.as_deref(), Some("sk-literal"));
/// # #[cfg(unix)]
/// assert_eq!(resolve_config_value("!echo from-a-command").await.as_deref(), Some("from-a-command"));
/// # }
/// ```
///
/// # Cancel safety
///
/// Dropping the future kills a running command; nothing is cached, and the next call runs it
/// again.
pub async fn resolve_config_value(value: &str) -> Option<String> {
    let Some(command) = value.strip_prefix('!') else {
        return Some(resolve_plain(value));
    };
    static CACHE: OnceLock<Mutex<HashMap<String, CachedResult>>> = OnceLock::new();
    let cell = {
        let mut cache = CACHE
            .get_or_init(Default::default)
            .lock()
            // A panic while holding the lock cannot leave the map half-updated.
            .unwrap_or_else(|e| e.into_inner());
        cache.entry(value.to_owned()).or_default().clone()
    };
    cell.get_or_init(|| run_command(command)).await.clone()
}

/// Resolves a configuration value, running a `!command` every time (pi's
/// `resolveConfigValueUncached`, which its model registry uses for each request, so a
/// command can hand out short-lived tokens).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pi_engine::models::resolve_config_value_uncached;
///
/// # #[cfg(unix)]
/// assert_eq!(resolve_config_value_uncached("!exit 3").await, None);
/// # }
/// ```
///
/// # Cancel safety
///
/// Dropping the future kills a running command.
pub async fn resolve_config_value_uncached(value: &str) -> Option<String> {
    match value.strip_prefix('!') {
        Some(command) => run_command(command).await,
        None => Some(resolve_plain(value)),
    }
}

/// An environment variable's value when `value` names a set, non-empty one; else `value`.
fn resolve_plain(value: &str) -> String {
    // Names that cannot be variables are literals (and would make the lookup panic).
    if value.is_empty() || value.contains(['=', '\0']) {
        return value.to_owned();
    }
    std::env::var(value)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| value.to_owned())
}

async fn run_command(command: &str) -> Option<String> {
    let mut cmd = shell(command);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let child = cmd.spawn().ok()?;
    let output = tokio::time::timeout(COMMAND_TIMEOUT, child.wait_with_output())
        .await
        .ok()?
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

#[cfg(unix)]
fn shell(command: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(command);
    cmd
}

#[cfg(windows)]
fn shell(command: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("cmd");
    cmd.arg("/C").arg(command);
    cmd
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn command_output_is_trimmed_and_failures_resolve_to_nothing() {
        assert_eq!(
            resolve_config_value_uncached("!printf '  key-1 \\n'")
                .await
                .as_deref(),
            Some("key-1")
        );
        assert_eq!(resolve_config_value_uncached("!exit 1").await, None);
        assert_eq!(resolve_config_value_uncached("!printf '  '").await, None);
        assert_eq!(resolve_config_value_uncached("!").await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_command_times_out() {
        assert_eq!(
            resolve_config_value_uncached("!sleep 60; echo late").await,
            None
        );
    }

    #[tokio::test]
    async fn cached_commands_run_once() {
        let dir = std::env::temp_dir().join(format!("pi-engine-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let counter = dir.join("count");
        let command = format!("!echo x >> '{}'; echo key", counter.display());
        assert_eq!(resolve_config_value(&command).await.as_deref(), Some("key"));
        assert_eq!(resolve_config_value(&command).await.as_deref(), Some("key"));
        assert_eq!(
            std::fs::read_to_string(&counter).unwrap().lines().count(),
            1
        );
        // The uncached form runs it again.
        resolve_config_value_uncached(&command).await;
        assert_eq!(
            std::fs::read_to_string(&counter).unwrap().lines().count(),
            2
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn env_names_and_literals() {
        // PATH is always set; an unset name and text that cannot be a name are literals.
        assert_eq!(
            resolve_config_value("PATH").await,
            std::env::var("PATH").ok()
        );
        assert_eq!(
            resolve_config_value("PI_ENGINE_SURELY_UNSET_VAR")
                .await
                .as_deref(),
            Some("PI_ENGINE_SURELY_UNSET_VAR")
        );
        assert_eq!(
            resolve_config_value("abc=def").await.as_deref(),
            Some("abc=def")
        );
        assert_eq!(resolve_config_value("").await.as_deref(), Some(""));
    }
}
