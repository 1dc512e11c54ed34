//! Which failed replies are retried or compacted, and how long to wait (pi's
//! `_isRetryableError`, `isContextOverflow`).

use std::time::Duration;

use super::settings::RetrySettings;
use crate::llm::error::RetryVerdict;
use crate::llm::message::{AssistantMessage, StopReason};

/// True when the reply failed because the context did not fit (pi's `isContextOverflow`):
/// an error classified as an overflow; a reply that "succeeded" with more input than the
/// window holds (servers that truncate silently); or one that stopped at the length limit
/// with no output and an input filling 99 % of the window.
pub(crate) fn is_context_overflow(message: &AssistantMessage, context_window: u64) -> bool {
    let input = message.usage.input.saturating_add(message.usage.cache_read);
    match message.stop_reason {
        StopReason::Error => message.error().is_some_and(|e| e.is_context_overflow()),
        StopReason::Stop => context_window > 0 && input > context_window,
        StopReason::Length => {
            context_window > 0
                && message.usage.output == 0
                && input as f64 >= context_window as f64 * 0.99
        }
        _ => false,
    }
}

/// True when a failed reply is worth retrying, by the crate's one classifier
/// ([`Error::retry_verdict`](crate::Error::retry_verdict)): its typed kind first, pi's text
/// pattern where the kind does not decide. Context overflows are not retried here:
/// compaction handles them.
pub(crate) fn is_retryable(message: &AssistantMessage, context_window: u64) -> bool {
    if message.stop_reason != StopReason::Error {
        return false;
    }
    if message.error_message.as_deref().is_none_or(str::is_empty) {
        return false;
    }
    if is_context_overflow(message, context_window) {
        return false;
    }
    let Some(error) = message.error() else {
        return false;
    };
    match error.retry_verdict() {
        RetryVerdict::Retry => true,
        RetryVerdict::Never => false,
        _ => error.matches_retry_text(),
    }
}

/// The wait before retry `attempt` (from 1): `base × 2^(attempt−1)`, or the server's
/// `Retry-After` when longer, at most `max_delay_ms`.
pub(crate) fn retry_delay(
    settings: &RetrySettings,
    attempt: u32,
    retry_after: Option<Duration>,
) -> Duration {
    let factor = 2u64.saturating_pow(attempt.saturating_sub(1));
    let backoff = Duration::from_millis(settings.base_delay_ms.saturating_mul(factor));
    let wanted = retry_after.map_or(backoff, |r| r.max(backoff));
    wanted.min(Duration::from_millis(settings.max_delay_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::error::{Error, ErrorKind};
    use crate::llm::message::Usage;

    fn failed(text: &str) -> AssistantMessage {
        AssistantMessage::new("a", "p", "m").with_error(Error::from_message(text))
    }

    #[test]
    fn retryable_errors() {
        for text in [
            "529 overloaded_error: Overloaded",
            "429 Too Many Requests",
            "503 Service Unavailable",
            "fetch failed",
            "socket hang up",
            "terminated",
            "Request timed out",
            "The stream ended without a finish reason",
        ] {
            assert!(is_retryable(&failed(text), 128_000), "{text}");
        }
        for text in [
            "prompt is too long: 213462 tokens > 200000 maximum",
            "invalid x-api-key",
            "insufficient_quota: You exceeded your current quota (429)",
            "Some other failure",
        ] {
            assert!(!is_retryable(&failed(text), 128_000), "{text}");
        }
        let aborted = AssistantMessage::new("a", "p", "m")
            .with_error(Error::new(ErrorKind::Aborted, "Request was aborted"));
        assert!(!is_retryable(&aborted, 128_000));
        // A typed error wins over its text.
        let typed = AssistantMessage::new("a", "p", "m")
            .with_error(Error::new(ErrorKind::Status, "upstream says 500").with_status(500));
        assert!(is_retryable(&typed, 128_000));
    }

    #[test]
    fn overflow_kinds() {
        assert!(is_context_overflow(&failed("prompt is too long"), 1000));
        let silent = AssistantMessage::new("a", "p", "m").with_usage(Usage::new(900, 5, 200, 0));
        assert!(is_context_overflow(&silent, 1000));
        assert!(!is_context_overflow(&silent, 2000));
        let truncated = AssistantMessage::new("a", "p", "m")
            .with_usage(Usage::new(990, 0, 0, 0))
            .with_stop_reason(StopReason::Length);
        assert!(is_context_overflow(&truncated, 1000));
        // pi checks the silent overflow on `stop` only: an unknown reason is neither an
        // overflow nor retryable.
        let unknown = silent.with_stop_reason(StopReason::from_wire("pauseTurn"));
        assert!(!is_context_overflow(&unknown, 1000));
        assert!(!is_retryable(&unknown, 1000));
    }

    #[test]
    fn usage_near_the_maximum_saturates() {
        let usage = Usage {
            input: u64::MAX,
            cache_read: u64::MAX,
            ..Usage::default()
        };
        let huge = AssistantMessage::new("a", "p", "m").with_usage(usage);
        assert!(is_context_overflow(&huge, 1000));
        let truncated = huge.clone().with_stop_reason(StopReason::Length);
        assert!(is_context_overflow(&truncated, 1000));
    }

    #[test]
    fn delays() {
        let s = RetrySettings::default();
        let secs = |a, r| retry_delay(&s, a, r).as_millis();
        assert_eq!(
            (secs(1, None), secs(2, None), secs(3, None)),
            (2000, 4000, 8000)
        );
        assert_eq!(secs(1, Some(Duration::from_secs(10))), 10_000);
        assert_eq!(secs(3, Some(Duration::from_secs(1))), 8000);
        assert_eq!(secs(1, Some(Duration::from_secs(600))), 60_000);
    }

    #[test]
    fn the_session_and_the_transport_share_one_classifier() {
        let cases = [
            Error::new(ErrorKind::RateLimited, "429 Too Many Requests").with_status(429),
            Error::new(ErrorKind::QuotaExceeded, "429 insufficient_quota").with_status(429),
            Error::new(ErrorKind::Status, "409 Conflict").with_status(409),
            Error::new(ErrorKind::Status, "400 bad request").with_status(400),
            Error::new(ErrorKind::Status, "400 Provider returned error").with_status(400),
            Error::new(ErrorKind::Provider, "Provider returned error"),
            Error::new(ErrorKind::Provider, "You asked for something odd"),
            Error::new(ErrorKind::Timeout, "Request timed out"),
            Error::new(ErrorKind::Auth, "401 rate limit of keys"),
            Error::new(ErrorKind::Aborted, "Request was aborted"),
        ];
        for error in cases {
            let message = AssistantMessage::new("a", "p", "m").with_error(error.clone());
            let session = is_retryable(&message, 0);
            match error.retry_verdict() {
                // What the transport retries, the session retries.
                RetryVerdict::Retry => assert!(session, "{error}"),
                RetryVerdict::Never => assert!(!session, "{error}"),
                // Undecided: pi's pattern decides for the session only.
                _ => {
                    assert!(!error.is_retryable(), "{error}");
                    assert_eq!(session, error.matches_retry_text(), "{error}");
                }
            }
        }
    }
}
