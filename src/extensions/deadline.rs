//! A handler's deadline that stops while a person is being asked something: time spent in
//! a UI dialog (`confirm`, `select`, …) does not count against it.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// How long a handler has spent waiting for a person; shared by a handler's context and
/// the deadline that watches it.
#[derive(Debug, Default)]
pub(crate) struct UiClock {
    state: Mutex<ClockState>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct ClockState {
    /// Dialogs open now.
    open: usize,
    /// When the first of the open dialogs opened.
    since: Option<Instant>,
    /// Time in dialogs that have closed.
    paused: Duration,
}

impl UiClock {
    fn lock(&self) -> std::sync::MutexGuard<'_, ClockState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks a dialog open until the guard drops.
    pub(crate) fn pause(self: &Arc<Self>) -> PauseGuard {
        let mut s = self.lock();
        if s.open == 0 {
            s.since = Some(Instant::now());
        }
        s.open += 1;
        PauseGuard(self.clone())
    }

    /// Time spent in dialogs so far (open ones included), and whether one is open.
    fn paused(&self) -> (Duration, bool) {
        let s = self.lock();
        let open = s.since.map(|t| t.elapsed()).unwrap_or_default();
        (s.paused + open, s.open > 0)
    }
}

/// Closes a dialog's pause when dropped (also when the dialog's future is dropped).
pub(crate) struct PauseGuard(Arc<UiClock>);

impl Drop for PauseGuard {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.open -= 1;
        if s.open == 0
            && let Some(t) = s.since.take()
        {
            s.paused += t.elapsed();
        }
        drop(s);
        self.0.changed.notify_waiters();
    }
}

/// Runs `fut` with `limit` of time that is not spent in dialogs; `None` when the limit
/// passed first (the future is then dropped).
pub(crate) async fn with_deadline<F: Future>(
    clock: &UiClock,
    limit: Duration,
    fut: F,
) -> Option<F::Output> {
    let start = Instant::now();
    tokio::pin!(fut);
    loop {
        let (paused, open) = clock.paused();
        let deadline = start + limit + paused;
        if open {
            // A person is being asked: only the dialog's end can move the deadline.
            let changed = clock.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !clock.paused().1 {
                continue;
            }
            tokio::select! {
                biased;
                out = &mut fut => return Some(out),
                () = changed => continue,
            }
        }
        tokio::select! {
            biased;
            out = &mut fut => return Some(out),
            () = tokio::time::sleep_until(deadline) => {
                let (later, open) = clock.paused();
                if !open && later == paused {
                    return None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn times_out_without_dialogs() {
        let clock = Arc::new(UiClock::default());
        let out = with_deadline(&clock, Duration::from_secs(1), async {
            tokio::time::sleep(Duration::from_secs(5)).await;
        })
        .await;
        assert!(out.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn dialog_time_does_not_count() {
        let clock = Arc::new(UiClock::default());
        let c = clock.clone();
        let out = with_deadline(&clock, Duration::from_secs(1), async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            {
                let _asking = c.pause();
                // A person takes an hour to answer.
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            tokio::time::sleep(Duration::from_millis(400)).await;
            7
        })
        .await;
        assert_eq!(out, Some(7));
    }

    #[tokio::test(start_paused = true)]
    async fn time_after_the_dialog_still_counts() {
        let clock = Arc::new(UiClock::default());
        let c = clock.clone();
        let out = with_deadline(&clock, Duration::from_secs(1), async move {
            drop(c.pause());
            tokio::time::sleep(Duration::from_secs(2)).await;
        })
        .await;
        assert!(out.is_none());
    }
}
