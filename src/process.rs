//! A child process's whole process group, for the commands the crate runs (`bash`, an
//! extension's `exec`): signalled as a whole, so a command's own children go with it.

use std::time::Duration;

use tokio::time::Instant;

/// The command's process group: signalled as a whole, and killed if dropped while armed.
pub(crate) struct GroupGuard {
    /// The time between `SIGTERM` and `SIGKILL`.
    grace: Duration,
    #[cfg(unix)]
    pgid: Option<rustix::process::Pid>,
    #[cfg_attr(not(unix), allow(dead_code))]
    armed: bool,
}

impl GroupGuard {
    /// The group led by the child `pid` (spawned with `process_group(0)`).
    pub(crate) fn new(pid: Option<u32>, grace: Duration) -> Self {
        GroupGuard {
            grace,
            // Never 0 or 1: `kill(-1)` would signal every process we may signal.
            #[cfg(unix)]
            pgid: pid
                .and_then(|p| i32::try_from(p).ok())
                .filter(|&p| p > 1)
                .and_then(rustix::process::Pid::from_raw),
            #[cfg(not(unix))]
            armed: pid.is_some(),
            #[cfg(unix)]
            armed: true,
        }
    }

    /// Sends `sig` to the group; false when there is no group to signal.
    #[cfg(unix)]
    fn signal(&self, sig: rustix::process::Signal) -> bool {
        self.pgid
            .is_some_and(|pgid| rustix::process::kill_process_group(pgid, sig).is_ok())
    }

    /// Starts killing the command: `SIGTERM` to the group (or, with no group, kills the
    /// shell). Returns when `SIGKILL` follows, and whether it has been sent already.
    pub(crate) fn terminate(&self, child: &mut tokio::process::Child) -> (Instant, bool) {
        #[cfg(unix)]
        if self.signal(rustix::process::Signal::TERM) {
            return (Instant::now() + self.grace, false);
        }
        let _ = child.start_kill();
        (Instant::now(), true)
    }

    /// `SIGKILL` to the group (and the shell, if there is no group).
    pub(crate) fn kill(&self, child: &mut tokio::process::Child) {
        #[cfg(unix)]
        if self.signal(rustix::process::Signal::KILL) {
            return;
        }
        let _ = child.start_kill();
    }

    /// Whether any process of the group is left (a zombie not yet reaped by its new parent
    /// counts, which at worst waits for the `SIGKILL`).
    #[cfg_attr(not(feature = "tools"), allow(dead_code))]
    pub(crate) fn alive(&self) -> bool {
        #[cfg(unix)]
        {
            self.pgid
                .is_some_and(|pgid| rustix::process::test_kill_process_group(pgid).is_ok())
        }
        #[cfg(not(unix))]
        false
    }

    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        if self.armed {
            self.signal(rustix::process::Signal::KILL);
        }
    }
}
