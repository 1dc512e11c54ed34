//! The crate's error type.
//!
//! [`Error`] is opaque: callers branch on its predicates ([`Error::is_retryable`],
//! [`Error::is_context_overflow`], …) and on [`Error::kind`], so new kinds can be added
//! without breaking anyone. Streams never return it directly: a failed model call ends
//! with an `error` event whose [`AssistantMessage`](crate::AssistantMessage) carries the
//! partial output, and [`AssistantMessage::error`](crate::AssistantMessage::error) turns
//! that message back into an [`Error`].
//!
//! The `Display` text of an error is meant for people and may change between versions;
//! it never contains an API key.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use regex::{Regex, RegexSet};

/// What went wrong, broadly. Use the predicates on [`Error`] for decisions; `kind()` is for
/// logging and for matching the cases a caller cares about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The provider answered with an HTTP error status (see [`Error::status`]).
    Status,
    /// The provider is rate limiting this caller (HTTP 429 or an equivalent message).
    RateLimited,
    /// The provider is overloaded or temporarily unavailable (5xx, `overloaded_error`).
    Overloaded,
    /// The request does not fit the model's context window.
    ContextOverflow,
    /// The request was rejected because of credentials (missing, invalid or not permitted).
    Auth,
    /// The account has no quota left. Never retried.
    QuotaExceeded,
    /// The connection failed or broke (refused, reset, DNS, TLS).
    Connection,
    /// The provider stopped sending data for longer than the idle timeout, or a deadline passed.
    Timeout,
    /// The operation was cancelled through its [`CancellationToken`](tokio_util::sync::CancellationToken).
    Aborted,
    /// The provider sent something this crate cannot decode (bad JSON, a truncated stream).
    InvalidResponse,
    /// The provider refused to answer (safety refusal, content filter).
    Refused,
    /// The request could not be built: unknown api, unusable options, no API key.
    Config,
    /// Anything else the provider reported.
    Provider,
}

impl ErrorKind {
    fn label(self) -> &'static str {
        match self {
            ErrorKind::Status => "http status",
            ErrorKind::RateLimited => "rate limited",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::ContextOverflow => "context overflow",
            ErrorKind::Auth => "authentication",
            ErrorKind::QuotaExceeded => "quota exceeded",
            ErrorKind::Connection => "connection",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Aborted => "aborted",
            ErrorKind::InvalidResponse => "invalid response",
            ErrorKind::Refused => "refused",
            ErrorKind::Config => "configuration",
            ErrorKind::Provider => "provider",
        }
    }
}

/// An error from a model call or from the crate's machinery around it.
///
/// Cheap to clone. Build one from a failed message with
/// [`AssistantMessage::error`](crate::AssistantMessage::error), or receive one from an
/// operation that has its own failures.
///
/// ```
/// use pi_engine::{Error, ErrorKind};
///
/// let err = Error::from_message("429 Too Many Requests: rate limit exceeded");
/// assert!(err.is_rate_limited());
/// assert!(err.is_retryable());
/// assert_eq!(err.kind(), ErrorKind::RateLimited);
/// ```
#[derive(Clone)]
pub struct Error {
    inner: Arc<Inner>,
}

struct Inner {
    kind: ErrorKind,
    message: String,
    status: Option<u16>,
    request_id: Option<String>,
    retry_after: Option<Duration>,
    /// Shared, so that changing a clone of an error keeps its cause.
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// A new error of `kind` with a human-readable `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            inner: Arc::new(Inner {
                kind,
                message: message.into(),
                status: None,
                request_id: None,
                retry_after: None,
                source: None,
            }),
        }
    }

    /// Classify an error from its message text alone, as pi does for messages that come back
    /// from a session file or another process (context-overflow patterns, then the retryable
    /// patterns of pi's auto-retry).
    pub fn from_message(message: impl Into<String>) -> Self {
        let message = message.into();
        let kind = classify_message(&message);
        let mut err = Error::new(kind, message);
        if let Some(status) = status_in_message(&err.inner.message) {
            err = err.with_status(status);
        }
        err
    }

    /// Sets the HTTP status.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.inner_mut().status = Some(status);
        self
    }

    /// The error with `secrets` and tokens of the known key formats removed from its
    /// message ([`redact::scrub`](crate::llm::redact::scrub)).
    #[must_use]
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn scrubbed(mut self, secrets: &crate::llm::redact::Secrets) -> Self {
        if let std::borrow::Cow::Owned(message) = secrets.scrub(&self.inner.message) {
            self.inner_mut().message = message;
        }
        self
    }

    /// Sets the provider's request id.
    #[must_use]
    pub fn with_request_id(mut self, id: Option<String>) -> Self {
        self.inner_mut().request_id = id;
        self
    }

    /// Sets the delay the provider asked for.
    #[must_use]
    pub fn with_retry_after(mut self, after: Option<Duration>) -> Self {
        self.inner_mut().retry_after = after;
        self
    }

    /// Sets the underlying cause.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.inner_mut().source = Some(Arc::new(source));
        self
    }

    fn inner_mut(&mut self) -> &mut Inner {
        // Errors are built before they are shared, so this never clones in practice.
        if Arc::get_mut(&mut self.inner).is_none() {
            let old = &*self.inner;
            self.inner = Arc::new(Inner {
                kind: old.kind,
                message: old.message.clone(),
                status: old.status,
                request_id: old.request_id.clone(),
                retry_after: old.retry_after,
                source: old.source.clone(),
            });
        }
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner,
            None => unreachable!("a freshly allocated Arc is unique"),
        }
    }

    /// The broad category of this error.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The message, as it would appear in an assistant message's `errorMessage`.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The HTTP status the provider answered with, when there was one.
    pub fn status(&self) -> Option<u16> {
        self.inner.status
    }

    /// The provider's request id (`request-id`, `x-request-id`, …), when it sent one.
    pub fn request_id(&self) -> Option<&str> {
        self.inner.request_id.as_deref()
    }

    /// How long the provider asked the caller to wait (`Retry-After` and friends).
    pub fn retry_after(&self) -> Option<Duration> {
        self.inner.retry_after
    }

    /// True when trying the same request again later may succeed, by the error's kind:
    /// rate limits (but not an exhausted quota), overloaded or unavailable servers, statuses
    /// 408, 409 and 5xx, broken connections and timeouts. This is the rule the transport's
    /// retries follow; a session's retries also retry an error of an undecided kind whose
    /// text matches pi's pattern (see [`retry_verdict`](Self::retry_verdict)).
    pub fn is_retryable(&self) -> bool {
        self.retry_verdict() == RetryVerdict::Retry
    }

    /// Whether retrying may help, by the one rule both retry layers share: the typed kind
    /// (and status) first; where they do not decide (a provider's own error, a response that
    /// could not be read, a status such as 400), [`RetryVerdict::ByText`]: pi's session
    /// retries then match the message against pi's pattern (`overloaded`, `rate limit`,
    /// `502`, `fetch failed`, …), while the transport does not retry.
    ///
    /// ```
    /// use pi_engine::{Error, ErrorKind};
    /// use pi_engine::llm::RetryVerdict;
    ///
    /// let e = Error::new(ErrorKind::Status, "503 Service Unavailable").with_status(503);
    /// assert_eq!(e.retry_verdict(), RetryVerdict::Retry);
    /// let e = Error::new(ErrorKind::QuotaExceeded, "429 insufficient_quota").with_status(429);
    /// assert_eq!(e.retry_verdict(), RetryVerdict::Never);
    /// let e = Error::new(ErrorKind::Provider, "Provider returned error");
    /// assert_eq!(e.retry_verdict(), RetryVerdict::ByText);
    /// assert!(e.matches_retry_text());
    /// ```
    pub fn retry_verdict(&self) -> RetryVerdict {
        match self.inner.kind {
            ErrorKind::RateLimited
            | ErrorKind::Overloaded
            | ErrorKind::Connection
            | ErrorKind::Timeout => RetryVerdict::Retry,
            ErrorKind::QuotaExceeded
            | ErrorKind::Auth
            | ErrorKind::Config
            | ErrorKind::Refused
            | ErrorKind::Aborted
            | ErrorKind::ContextOverflow => RetryVerdict::Never,
            ErrorKind::Status if matches!(self.inner.status, Some(408 | 409 | 500..)) => {
                RetryVerdict::Retry
            }
            _ => RetryVerdict::ByText,
        }
    }

    /// True when the message matches pi's auto-retry pattern (`agent-session.ts`
    /// `_isRetryableError`), which decides for the [`RetryVerdict::ByText`] errors.
    pub fn matches_retry_text(&self) -> bool {
        static RE: OnceLock<Option<Regex>> = OnceLock::new();
        RE.get_or_init(|| Regex::new(PI_RETRYABLE).ok())
            .as_ref()
            .is_some_and(|re| re.is_match(&self.inner.message))
    }

    /// True when the provider is rate limiting this caller.
    pub fn is_rate_limited(&self) -> bool {
        self.inner.kind == ErrorKind::RateLimited
    }

    /// True when the request did not fit the model's context window.
    pub fn is_context_overflow(&self) -> bool {
        self.inner.kind == ErrorKind::ContextOverflow
    }

    /// True when the operation was cancelled.
    pub fn is_aborted(&self) -> bool {
        self.inner.kind == ErrorKind::Aborted
    }

    /// True when the request was rejected because of its credentials.
    pub fn is_auth(&self) -> bool {
        self.inner.kind == ErrorKind::Auth
    }

    /// True when the provider stopped sending data for too long, or a deadline passed.
    pub fn is_timeout(&self) -> bool {
        self.inner.kind == ErrorKind::Timeout
    }
}

/// What [`Error::retry_verdict`] says about retrying a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetryVerdict {
    /// Retrying may succeed (rate limit, overload, 5xx, broken connection, timeout).
    Retry,
    /// Retrying cannot succeed (quota, credentials, configuration, refusal, abort, context
    /// overflow: compaction handles that one).
    Never,
    /// The kind does not decide; pi's text pattern does, for a session's retries
    /// ([`Error::matches_retry_text`]). The transport does not retry these.
    ByText,
}

/// pi's auto-retry pattern (`agent-session.ts _isRetryableError`), case-insensitive.
const PI_RETRYABLE: &str = r"(?i)overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay";

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.inner.kind)
            .field("message", &self.inner.message);
        if let Some(s) = self.inner.status {
            d.field("status", &s);
        }
        if let Some(id) = &self.inner.request_id {
            d.field("request_id", id);
        }
        if let Some(r) = self.inner.retry_after {
            d.field("retry_after", &r);
        }
        if let Some(s) = &self.inner.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.inner.message.is_empty() {
            f.write_str(self.inner.kind.label())
        } else {
            f.write_str(&self.inner.message)
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|s| &**s as &(dyn std::error::Error + 'static))
    }
}

/// pi's context-overflow patterns (`utils/overflow.ts`), case-insensitive.
const OVERFLOW_PATTERNS: &[&str] = &[
    r"prompt is too long",
    r"request_too_large",
    r"input is too long for requested model",
    r"exceeds the context window",
    r"input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    r"reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds the limit of \d+",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"too large for model with \d+ maximum context length",
    r"model_context_window_exceeded",
    r"prompt too long; exceeded (max )?context length",
    r"context[_ ]length[_ ]exceeded",
    r"too many tokens",
    r"token limit exceeded",
    r"^4(00|13)\s*(status code)?\s*\(no body\)",
];

/// Messages that look like an overflow but are throttling (pi's exclusions).
const OVERFLOW_EXCLUSIONS: &[&str] = &[
    r"^(Throttling error|Service unavailable):",
    r"rate limit",
    r"too many requests",
];

/// pi's auto-retry pattern (`agent-session.ts _isRetryableError`), split by what it means.
const RATE_LIMIT_PATTERN: &str = r"rate.?limit|too many requests|\b429\b";
const OVERLOADED_PATTERN: &str = r"overloaded|provider.?returned.?error|\b50[0234]\b|service.?unavailable|server.?error|internal.?error";
const CONNECTION_PATTERN: &str = r"network.?error|connection.?error|connection.?refused|connection.?lost|connection.?reset|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|ended before|http2 request did not get a response|terminated|retry delay";
const TIMEOUT_PATTERN: &str = r"timed? out|timeout";
const QUOTA_PATTERN: &str =
    r"insufficient_quota|exceeded your current quota|credit balance is too low";
const AUTH_PATTERN: &str = r"no api key|invalid.?api.?key|invalid x-api-key|unauthorized|authentication|\b401\b|\b403\b|permission denied";
const ABORT_PATTERN: &str = r"^request was aborted|^operation aborted|^aborted$";

struct Patterns {
    overflow: RegexSet,
    exclusions: RegexSet,
    rate_limit: Regex,
    overloaded: Regex,
    connection: Regex,
    timeout: Regex,
    quota: Regex,
    auth: Regex,
    abort: Regex,
    status: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let ci = |p: &str| format!("(?i){p}");
        let set = |ps: &[&str]| {
            RegexSet::new(ps.iter().map(|p| ci(p))).unwrap_or_else(|_| RegexSet::empty())
        };
        let re = |p: &str| Regex::new(&ci(p)).unwrap_or_else(|_| never_matches());
        Patterns {
            overflow: set(OVERFLOW_PATTERNS),
            exclusions: set(OVERFLOW_EXCLUSIONS),
            rate_limit: re(RATE_LIMIT_PATTERN),
            overloaded: re(OVERLOADED_PATTERN),
            connection: re(CONNECTION_PATTERN),
            timeout: re(TIMEOUT_PATTERN),
            quota: re(QUOTA_PATTERN),
            auth: re(AUTH_PATTERN),
            abort: re(ABORT_PATTERN),
            status: re(r"^(?:HTTP |status |error )?([1-5]\d\d)\b"),
        }
    })
}

fn never_matches() -> Regex {
    // `[^\s\S]` matches nothing; it always compiles.
    match Regex::new(r"[^\s\S]") {
        Ok(r) => r,
        Err(_) => unreachable!("constant pattern compiles"),
    }
}

/// True when `message` is one of the context-overflow errors pi recognises.
pub(crate) fn is_overflow_message(message: &str) -> bool {
    let p = patterns();
    p.overflow.is_match(message) && !p.exclusions.is_match(message)
}

fn classify_message(message: &str) -> ErrorKind {
    let p = patterns();
    if p.abort.is_match(message) {
        ErrorKind::Aborted
    } else if is_overflow_message(message) {
        ErrorKind::ContextOverflow
    } else if p.quota.is_match(message) {
        ErrorKind::QuotaExceeded
    } else if p.rate_limit.is_match(message) {
        ErrorKind::RateLimited
    } else if p.overloaded.is_match(message) {
        ErrorKind::Overloaded
    } else if p.timeout.is_match(message) {
        ErrorKind::Timeout
    } else if p.connection.is_match(message) {
        ErrorKind::Connection
    } else if p.auth.is_match(message) {
        ErrorKind::Auth
    } else {
        ErrorKind::Provider
    }
}

fn status_in_message(message: &str) -> Option<u16> {
    patterns()
        .status
        .captures(message)
        .and_then(|c| c.get(1))
        .and_then(|m| m.as_str().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changing_a_clone_keeps_the_source() {
        use std::error::Error as _;
        let io = std::io::Error::other("disk on fire");
        let original = Error::new(ErrorKind::Connection, "failed").with_source(io);
        let shared = original.clone();
        let changed = shared.with_request_id(Some("req_1".into()));
        assert_eq!(changed.request_id(), Some("req_1"));
        let source = changed.source().expect("the cause survives the copy");
        assert_eq!(source.to_string(), "disk on fire");
        assert!(original.source().is_some());
    }

    #[test]
    fn overflow_patterns_match_pi_examples() {
        for msg in [
            "prompt is too long: 213462 tokens > 200000 maximum",
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
            "Your input exceeds the context window of this model",
            "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
            "400 status code (no body)",
            "413 (no body)",
        ] {
            assert!(
                Error::from_message(msg).is_context_overflow(),
                "not overflow: {msg}"
            );
        }
    }

    #[test]
    fn throttling_is_not_overflow() {
        let e = Error::from_message("Throttling error: too many tokens, please slow down");
        assert!(!e.is_context_overflow());
        let e = Error::from_message("rate limit: too many tokens per minute");
        assert!(!e.is_context_overflow());
        assert!(e.is_rate_limited());
    }

    #[test]
    fn retryable_classification() {
        assert!(Error::from_message("529 overloaded_error: Overloaded").is_retryable());
        assert!(Error::from_message("socket hang up").is_retryable());
        assert!(Error::from_message("Request timed out").is_retryable());
        assert!(
            !Error::from_message("insufficient_quota: You exceeded your current quota")
                .is_retryable()
        );
        assert!(!Error::from_message("invalid x-api-key").is_retryable());
        assert!(Error::from_message("Request was aborted").is_aborted());
    }

    #[test]
    fn status_from_message_and_builder() {
        let e = Error::from_message("503 Service Unavailable");
        assert_eq!(e.status(), Some(503));
        let e = Error::new(ErrorKind::Status, "boom")
            .with_status(500)
            .with_request_id(Some("req_1".into()));
        assert!(e.is_retryable());
        assert_eq!(e.request_id(), Some("req_1"));
        let dbg = format!("{e:?}");
        assert!(dbg.contains("req_1"));
    }
}
