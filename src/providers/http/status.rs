//! Turning an HTTP error response into a typed [`Error`]: the provider's own error text
//! (from the JSON error bodies of Anthropic, OpenAI, Google and compatible servers), a short
//! summary of HTML error pages, the request id, `Retry-After`, and the [`ErrorKind`].

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::llm::error::{Error, ErrorKind, is_overflow_message};
use crate::llm::redact::scrub;

/// Longest provider text kept in an error message, in bytes: the provider's whole text (a
/// validation error may list many problems), bounded only against a server that sends
/// megabytes. Where the text is shown to a person it may be shortened further.
pub(crate) const MAX_TEXT: usize = 16 * 1024;

/// Headers carrying the provider's request id, most specific first.
const REQUEST_ID_HEADERS: &[&str] = &[
    "request-id",
    "x-request-id",
    "anthropic-request-id",
    "x-amzn-requestid",
    "x-amz-request-id",
    "apim-request-id",
    "x-goog-request-id",
    "cf-ray",
];

/// The error for a response with a non-success `status`, its `headers` and (the start of)
/// its `body`.
///
/// The message reads `"<status> <provider type>: <provider message> (request id: <id>)"`,
/// e.g. `429 rate_limit_error: Number of request tokens has exceeded your per-minute rate
/// limit (request id: req_011)`, so that pi's patterns (context overflow, auto-retry)
/// recognise it when it is read back from a session file.
pub(crate) fn status_error(status: u16, headers: &HeaderMap, body: &[u8]) -> Error {
    let detail = ErrorBody::parse(body, headers);
    let request_id = request_id(headers).or(detail.request_id.clone());
    let code = status.to_string();
    let what = match detail.describe() {
        Some(what) => what,
        None if body.iter().all(u8::is_ascii_whitespace) => {
            format!("{} (no body)", reason_phrase(status))
        }
        None => reason_phrase(status).to_owned(),
    };
    // A gateway page titled "502 Bad Gateway" does not need the status twice.
    let mut message = if what.starts_with(&code) {
        what
    } else {
        format!("{code} {what}")
    };
    if let Some(id) = &request_id {
        message.push_str(&format!(" (request id: {id})"));
    }
    // Servers echo keys ("Incorrect API key provided: sk-…"); the request's own key is
    // scrubbed by the caller, which knows it.
    let message = scrub(&message, &[] as &[&str]).into_owned();
    let kind = classify(status, headers, &detail, &message);
    Error::new(kind, message)
        .with_status(status)
        .with_request_id(request_id)
        .with_retry_after(retry_after(headers, SystemTime::now()))
}

/// The error for an `error` event inside a successful stream (Anthropic's `event: error`,
/// an OpenAI chunk with an `error` member): `"<type>: <message>"`, classified like a status
/// error (an `overloaded_error` is [`ErrorKind::Overloaded`], …).
pub(crate) fn stream_event_error(data: &[u8]) -> Error {
    let detail = ErrorBody::parse(data, &HeaderMap::new());
    let message = detail
        .describe()
        .unwrap_or_else(|| "The provider reported an error without details".to_owned());
    let message = scrub(&message, &[] as &[&str]).into_owned();
    let kind = match classify(0, &HeaderMap::new(), &detail, &message) {
        ErrorKind::Status => ErrorKind::Provider,
        kind => kind,
    };
    Error::new(kind, message).with_request_id(detail.request_id)
}

/// The error for a success status whose body is not an event stream (an HTML page of a
/// proxy or captive portal, a JSON document): a JSON body that is a provider error becomes
/// that error (classified as [`status_error`] would, e.g. `overloaded_error` is
/// [`ErrorKind::Overloaded`]); anything else is [`ErrorKind::InvalidResponse`], "Expected an
/// event stream, got <content type>: <summary>".
pub(crate) fn not_a_stream_error(headers: &HeaderMap, body: &[u8]) -> Error {
    let content_type = headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|ct| ct.split(';').next().unwrap_or(ct).trim().to_owned())
        .filter(|ct| !ct.is_empty())
        .unwrap_or_else(|| "a body without a content type".to_owned());
    let header_id = request_id(headers);
    if let Ok(value) = serde_json::from_slice::<Value>(body.trim_ascii()) {
        let first = match &value {
            Value::Array(items) => items.first().unwrap_or(&value),
            v => v,
        };
        let is_error = first.get("error").is_some_and(|e| !e.is_null())
            || first.get("type").and_then(Value::as_str) == Some("error");
        if is_error {
            let detail = ErrorBody::from_json(&value);
            let mut message = detail
                .describe()
                .unwrap_or_else(|| "The provider reported an error without details".to_owned());
            let request_id = header_id.or(detail.request_id.clone());
            if let Some(id) = &request_id {
                message.push_str(&format!(" (request id: {id})"));
            }
            let kind = match classify(0, headers, &detail, &message) {
                ErrorKind::Status => ErrorKind::Provider,
                kind => kind,
            };
            return Error::new(kind, message).with_request_id(request_id);
        }
    }
    let summary = ErrorBody::parse(body, headers)
        .describe()
        .map(|s| clip_short(&collapse_whitespace(&s)))
        .unwrap_or_else(|| "(empty body)".to_owned());
    let mut message = format!("Expected an event stream, got {content_type}: {summary}");
    if let Some(id) = &header_id {
        message.push_str(&format!(" (request id: {id})"));
    }
    Error::new(ErrorKind::InvalidResponse, message).with_request_id(header_id)
}

/// What a provider's error body says.
#[derive(Debug, Default)]
struct ErrorBody {
    /// The provider's error type or code (`overloaded_error`, `insufficient_quota`,
    /// `RESOURCE_EXHAUSTED`, …).
    kind: Option<String>,
    /// The human-readable text.
    text: Option<String>,
    request_id: Option<String>,
}

impl ErrorBody {
    /// `"<type>: <text>"`, or whichever of the two there is.
    fn describe(&self) -> Option<String> {
        match (&self.kind, &self.text) {
            (Some(kind), Some(text)) if !text.contains(kind.as_str()) => {
                Some(format!("{kind}: {text}"))
            }
            (_, Some(text)) => Some(text.clone()),
            (Some(kind), None) => Some(kind.clone()),
            (None, None) => None,
        }
    }

    fn parse(body: &[u8], headers: &HeaderMap) -> ErrorBody {
        let trimmed = body.trim_ascii();
        if trimmed.is_empty() {
            return ErrorBody::default();
        }
        if let Ok(value) = serde_json::from_slice::<Value>(trimmed) {
            let mut body = ErrorBody::from_json(&value);
            if body.kind.is_none() {
                body.kind = aws_error_type(headers, &value);
            }
            return body;
        }
        let text = String::from_utf8_lossy(trimmed);
        let html = headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.contains("html"))
            || text.trim_start().starts_with('<');
        let text = if html {
            summarize_html(&text)
        } else {
            clip(text.trim())
        };
        ErrorBody {
            text: (!text.is_empty()).then_some(text),
            ..ErrorBody::default()
        }
    }

    fn from_json(value: &Value) -> ErrorBody {
        // Google sometimes wraps the error in a one-element array.
        let value = match value {
            Value::Array(items) if !items.is_empty() => &items[0],
            v => v,
        };
        let mut out = ErrorBody {
            request_id: str_field(value, "request_id"),
            ..ErrorBody::default()
        };
        match value.get("error") {
            Some(Value::String(s)) => out.text = Some(clip(s)),
            Some(err @ Value::Object(_)) => {
                out.kind = str_field(err, "type")
                    .or_else(|| str_field(err, "status"))
                    .or_else(|| str_field(err, "code"));
                out.text = str_field(err, "message").map(|m| clip(&m));
                // OpenRouter puts the upstream provider's text in metadata.raw.
                if let Some(raw) = err.pointer("/metadata/raw").and_then(Value::as_str) {
                    let joined = match out.text.take() {
                        Some(t) => format!("{t}: {raw}"),
                        None => raw.to_owned(),
                    };
                    out.text = Some(clip(&joined));
                }
            }
            _ => {}
        }
        if out.text.is_none() {
            out.text = ["message", "detail", "error_message"]
                .iter()
                .find_map(|k| str_field(value, k))
                .map(|m| clip(&m));
        }
        if out.text.is_none() && out.kind.is_none() {
            out.text = Some(clip(&value.to_string()));
        }
        out
    }
}

/// AWS's error type (Bedrock): the `x-amzn-errortype` header
/// (`ValidationException:http://internal.amazon.com/…`) or the body's `__type`
/// (`com.amazon.coral.validate#ValidationException`), without its namespace.
fn aws_error_type(headers: &HeaderMap, value: &Value) -> Option<String> {
    let header = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(':').next());
    let body = value
        .get("__type")
        .and_then(Value::as_str)
        .and_then(|t| t.rsplit('#').next());
    header
        .or(body)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

fn str_field(value: &Value, key: &str) -> Option<String> {
    match value.get(key)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Cuts `text` to at most [`MAX_TEXT`] bytes, at a character boundary (with `…` when cut).
fn clip(text: &str) -> String {
    if text.len() <= MAX_TEXT {
        return text.to_owned();
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A gateway's HTML error page, as a short line: its `<title>`, else its first words of text.
fn summarize_html(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    if let Some(start) = lower.find("<title")
        && let Some(open_end) = lower[start..].find('>')
    {
        let from = start + open_end + 1;
        if let Some(len) = lower[from..].find("</title") {
            let title = collapse_whitespace(&decode_entities(&html[from..from + len]));
            if !title.is_empty() {
                return clip_short(&title);
            }
        }
    }
    // No title: the visible text, without tags, scripts and styles.
    let mut text = String::new();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        text.push_str(&rest[..lt]);
        text.push(' ');
        let after = &rest[lt..];
        let lower_after = after.to_ascii_lowercase();
        let skip_to = if lower_after.starts_with("<script") {
            lower_after.find("</script").map(|i| i + 8)
        } else if lower_after.starts_with("<style") {
            lower_after.find("</style").map(|i| i + 7)
        } else {
            Some(0)
        };
        let Some(skip_to) = skip_to else {
            rest = "";
            break;
        };
        match after[skip_to..].find('>') {
            Some(gt) => rest = &after[skip_to + gt + 1..],
            None => {
                rest = "";
                break;
            }
        }
    }
    text.push_str(rest);
    clip_short(&collapse_whitespace(&decode_entities(&text)))
}

fn clip_short(text: &str) -> String {
    match text.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn decode_entities(text: &str) -> String {
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The request id from the response headers.
pub(crate) fn request_id(headers: &HeaderMap) -> Option<String> {
    REQUEST_ID_HEADERS.iter().find_map(|name| {
        headers
            .get(*name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    })
}

/// The delay the server asked for: `retry-after-ms` (milliseconds), else `retry-after`
/// (seconds, or an HTTP date relative to `now`).
///
/// A number too large for a [`Duration`] (`Retry-After: 99999999999999999999`,
/// `retry-after-ms: 1e30`, infinity) reads as [`Duration::MAX`]: longer than any cap, so the
/// request is not retried and the caller sees the error at once.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms >= 0.0
    {
        return Some(seconds(ms / 1000.0));
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs >= 0.0).then(|| seconds(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// `secs` (not negative, not NaN) as a duration; one too long for a `Duration` is
/// [`Duration::MAX`].
fn seconds(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

/// Patterns of an exhausted quota or an unpaid account (never retried).
fn is_quota(kind: Option<&str>, message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    kind.is_some_and(|k| {
        let k = k.to_ascii_lowercase();
        k == "insufficient_quota" || k == "billing_error" || k == "quota_exceeded"
    }) || m.contains("insufficient_quota")
        || m.contains("exceeded your current quota")
        || m.contains("quota exceeded")
        || m.contains("credit balance is too low")
        || m.contains("billing")
}

fn classify(status: u16, headers: &HeaderMap, detail: &ErrorBody, message: &str) -> ErrorKind {
    let kind = detail.kind.as_deref();
    let kind_lower = kind.map(str::to_ascii_lowercase);
    let kind_is = |k: &str| kind_lower.as_deref() == Some(k);
    if is_quota(kind, message) {
        return ErrorKind::QuotaExceeded;
    }
    if status == 529 || kind_is("overloaded_error") {
        return ErrorKind::Overloaded;
    }
    if status == 429 || kind_is("rate_limit_error") || kind_is("resource_exhausted") {
        return ErrorKind::RateLimited;
    }
    if is_overflow_message(message) || (status == 413 && !kind_is("rate_limit_error")) {
        return ErrorKind::ContextOverflow;
    }
    match status {
        401 | 403 => ErrorKind::Auth,
        402 => ErrorKind::QuotaExceeded,
        408 => ErrorKind::Timeout,
        500 | 502 | 503 | 504 => ErrorKind::Overloaded,
        _ => {
            // A server that marks its own error retryable.
            let should_retry = headers
                .get("x-should-retry")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("true"));
            if should_retry {
                ErrorKind::Overloaded
            } else {
                ErrorKind::Status
            }
        }
    }
}

fn reason_phrase(status: u16) -> &'static str {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("HTTP error")
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn anthropic_error_body() {
        let body = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_body"}"#;
        let e = status_error(529, &headers(&[("request-id", "req_hdr")]), body);
        assert_eq!(
            e.message(),
            "529 overloaded_error: Overloaded (request id: req_hdr)"
        );
        assert_eq!(e.kind(), ErrorKind::Overloaded);
        assert_eq!(e.status(), Some(529));
        assert_eq!(e.request_id(), Some("req_hdr"));
        assert!(e.is_retryable());
        let e = status_error(529, &HeaderMap::new(), body);
        assert_eq!(e.request_id(), Some("req_body"));
    }

    #[test]
    fn overflow_and_quota_and_auth() {
        let body = br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}"#;
        let e = status_error(400, &HeaderMap::new(), body);
        assert!(e.is_context_overflow(), "{e:?}");
        let body = br#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        let e = status_error(429, &headers(&[("x-request-id", "abc")]), body);
        assert_eq!(e.kind(), ErrorKind::QuotaExceeded);
        assert!(!e.is_retryable());
        assert!(
            e.message()
                .starts_with("429 insufficient_quota: You exceeded")
        );
        let e = status_error(
            401,
            &HeaderMap::new(),
            br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        );
        assert!(e.is_auth());
        let e = status_error(400, &HeaderMap::new(), b"");
        assert_eq!(e.message(), "400 Bad Request (no body)");
    }

    #[test]
    fn google_and_plain_bodies() {
        let body = br#"[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]"#;
        let e = status_error(429, &HeaderMap::new(), body);
        assert!(e.is_rate_limited());
        assert!(
            e.message()
                .contains("RESOURCE_EXHAUSTED: Resource has been exhausted")
        );
        let e = status_error(503, &HeaderMap::new(), b"upstream connect error");
        assert_eq!(e.message(), "503 upstream connect error");
        assert_eq!(e.kind(), ErrorKind::Overloaded);
    }

    #[test]
    fn html_pages_are_summarized() {
        let page = b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title><style>body{}</style></head><body><h1>502 Bad Gateway</h1><hr><center>cloudflare</center></body></html>";
        let e = status_error(502, &headers(&[("content-type", "text/html")]), page);
        assert_eq!(e.message(), "502 Bad Gateway");
        assert!(!e.message().contains('<'));
        let page = b"<html><body><script>var x = '<b>';</script><p>Service   temporarily\n unavailable &amp; down</p></body></html>";
        let e = status_error(503, &HeaderMap::new(), page);
        assert_eq!(e.message(), "503 Service temporarily unavailable & down");
    }

    #[test]
    fn stream_error_events() {
        let e = stream_event_error(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(e.message(), "overloaded_error: Overloaded");
        assert_eq!(e.kind(), ErrorKind::Overloaded);
        assert_eq!(e.status(), None);
        let e = stream_event_error(
            br#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
        );
        assert_eq!(e.kind(), ErrorKind::Provider);
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")]), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]),
                now
            ),
            Some(Duration::from_millis(1500))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &date)]), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
    }

    #[test]
    fn retry_after_beyond_a_duration_is_the_longest_wait_not_a_panic() {
        let now = SystemTime::UNIX_EPOCH;
        for (name, value) in [
            ("retry-after", "99999999999999999999"),
            ("retry-after", "1e300"),
            ("retry-after", "inf"),
            ("retry-after-ms", "1e30"),
            ("retry-after-ms", "infinity"),
        ] {
            assert_eq!(
                retry_after(&headers(&[(name, value)]), now),
                Some(Duration::MAX),
                "{name}: {value}"
            );
        }
        assert_eq!(retry_after(&headers(&[("retry-after", "NaN")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")]), now), None);
        let e = status_error(
            429,
            &headers(&[("retry-after", "99999999999999999999")]),
            b"busy",
        );
        assert_eq!(e.retry_after(), Some(Duration::MAX));
    }

    #[test]
    fn a_success_that_is_not_a_stream() {
        let html = headers(&[("content-type", "text/html; charset=utf-8")]);
        let e = not_a_stream_error(
            &html,
            b"<html><head><title>Sign in to the Wi-Fi</title></head><body>...</body></html>",
        );
        assert_eq!(e.kind(), ErrorKind::InvalidResponse);
        assert_eq!(
            e.message(),
            "Expected an event stream, got text/html: Sign in to the Wi-Fi"
        );
        let json = headers(&[("content-type", "application/json"), ("request-id", "r1")]);
        let e = not_a_stream_error(
            &json,
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(e.kind(), ErrorKind::Overloaded);
        assert_eq!(e.message(), "overloaded_error: Overloaded (request id: r1)");
        let e = not_a_stream_error(&json, br#"[{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}]"#);
        assert_eq!(e.kind(), ErrorKind::RateLimited);
        let e = not_a_stream_error(&json, br#"{"id":"msg_1","content":[]}"#);
        assert_eq!(e.kind(), ErrorKind::InvalidResponse);
        assert!(
            e.message()
                .starts_with("Expected an event stream, got application/json: "),
            "{}",
            e.message()
        );
    }

    #[test]
    fn the_providers_whole_text_is_kept() {
        // A validation error listing many problems: every one of them is in the error.
        let problems: Vec<String> = (1..=7)
            .map(|i| format!("messages.{i}.content: field required ({})", "x".repeat(120)))
            .collect();
        let text = problems.join("; ");
        assert!(text.len() > 600);
        let body = serde_json::json!({"error": {"type": "invalid_request_error", "message": text}});
        let e = status_error(400, &HeaderMap::new(), body.to_string().as_bytes());
        for p in &problems {
            assert!(e.message().contains(p.as_str()), "{p} lost");
        }
        // Bounded against abuse: a megabyte of text is cut at MAX_TEXT bytes.
        let huge = "é".repeat(1 << 19);
        let body = serde_json::json!({"error": {"message": huge}});
        let e = status_error(400, &HeaderMap::new(), body.to_string().as_bytes());
        assert!(e.message().len() <= MAX_TEXT + 64, "{}", e.message().len());
        assert!(e.message().contains('…'));
        let plain = "w".repeat(3000);
        let e = status_error(500, &HeaderMap::new(), plain.as_bytes());
        assert!(e.message().contains(&plain));
    }
}
