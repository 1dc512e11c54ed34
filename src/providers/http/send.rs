//! Request preparation, and sending through the call's [`HttpTransport`] with retries
//! before the first byte of the stream.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use futures::StreamExt;

use super::status::{not_a_stream_error, status_error};
use super::transport::{
    MAX_REDIRECTS, ResponseBody, SharedTransport, TransportRequest, TransportResponse,
    default_transport,
};
use crate::llm::error::{Error, ErrorKind};
use crate::llm::model::Model;
use crate::llm::options::{PayloadHook, ResponseHook, ResponseInfo, RetryPolicy, StreamOptions};
use crate::llm::redact::{self, Secrets};

/// Most of an error body that is read (the rest is dropped).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The error for a redirect that was not followed: to another origin (never, the request
/// carries a key), or one too many. Names the target's origin only (its path or query could
/// hold anything).
fn redirect_error(status: reqwest::StatusCode, from: &reqwest::Url, headers: &HeaderMap) -> Error {
    let target = headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|location| from.join(location).ok());
    let code = status.as_u16();
    let reason = status.canonical_reason().unwrap_or("Redirect");
    let message = match target {
        Some(to) if to.origin() != from.origin() => format!(
            "{code} {reason}: redirect to another origin ({}) not followed; a request carrying an API key is only redirected within its own origin",
            to.origin().ascii_serialization()
        ),
        Some(_) => format!("{code} {reason}: more than {MAX_REDIRECTS} redirects, not followed"),
        None => format!("{code} {reason}: redirect without a usable Location, not followed"),
    };
    Error::new(ErrorKind::Status, message).with_status(code)
}

/// A provider request before the shared steps: a URL, the provider's own headers (auth,
/// version, betas) and the JSON body.
///
/// [`stream_http`](super::stream_http) then adds the model's `headers` and the options'
/// `headers` (later wins, names compared case-insensitively) and `content-type`, marks
/// credential headers sensitive, runs `options.on_payload` on the body, serializes it and
/// sends it through the call's transport.
///
/// ```
/// use pi_engine::providers::http::HttpRequest;
///
/// let request = HttpRequest::post_json("https://api.example.com/v1/generate", serde_json::json!({"n": 1}))
///     .header("x-api-version", "2");
/// assert!(format!("{request:?}").contains("x-api-version"));
/// ```
pub struct HttpRequest {
    url: String,
    headers: Vec<(String, String)>,
    body: Body,
    signer: Option<Arc<dyn RequestSigner>>,
    secrets: Vec<String>,
}

/// Signs a request once its body is final (after `on_payload`), again for every attempt:
/// AWS Signature V4. The headers it returns are added to the request and marked sensitive.
pub(crate) trait RequestSigner: Send + Sync + std::fmt::Debug {
    /// The headers that sign a `POST` of `body` to `url` carrying the signed `headers`.
    fn sign(
        &self,
        url: &reqwest::Url,
        headers: &[(&str, &str)],
        body: &[u8],
        now: std::time::SystemTime,
    ) -> Result<Vec<(String, String)>, Error>;
}

/// A request body: a JSON tree, or bytes already serialized from borrowed data.
enum Body {
    Json(Value),
    Encoded(Vec<u8>),
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Json(value) => value.fmt(f),
            Body::Encoded(bytes) => f.write_str(&String::from_utf8_lossy(bytes)),
        }
    }
}

impl std::fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers = self.headers.iter().map(|(k, v)| (k, v));
        f.debug_struct("HttpRequest")
            .field("url", &self.url)
            .field("headers", &redact::Headers::new(headers, None))
            .field("body", &self.body)
            .field("signer", &self.signer)
            .finish()
    }
}

impl HttpRequest {
    /// A JSON `POST` to `url`.
    pub fn post_json(url: impl Into<String>, body: Value) -> Self {
        HttpRequest {
            url: url.into(),
            headers: Vec::new(),
            body: Body::Json(body),
            signer: None,
            secrets: Vec::new(),
        }
    }

    /// A JSON `POST` to `url` whose body is serialized from `body` now.
    ///
    /// Cheaper than [`post_json`](Self::post_json) when the body would borrow from the call's
    /// context (tool schemas, message text): nothing is copied into a [`Value`] tree first.
    /// When the call has an `on_payload` hook, the bytes are read back into a `Value` for it,
    /// so the hook sees the same body either way. A value serde cannot encode (a map with
    /// non-string keys, say) is an [`ErrorKind::Config`] error.
    ///
    /// ```
    /// use pi_engine::providers::http::HttpRequest;
    ///
    /// #[derive(serde::Serialize)]
    /// struct Generate<'a> {
    ///     prompt: &'a str,
    ///     n: u32,
    /// }
    ///
    /// let prompt = String::from("hello");
    /// let request = HttpRequest::post_serialized(
    ///     "https://api.example.com/v1/generate",
    ///     &Generate { prompt: &prompt, n: 1 },
    /// )?;
    /// assert!(format!("{request:?}").contains(r#"{"prompt":"hello","n":1}"#));
    /// # Ok::<(), pi_engine::Error>(())
    /// ```
    pub fn post_serialized(
        url: impl Into<String>,
        body: &impl serde::Serialize,
    ) -> Result<Self, Error> {
        Ok(HttpRequest {
            url: url.into(),
            headers: Vec::new(),
            body: Body::Encoded(encode(body)?),
            signer: None,
            secrets: Vec::new(),
        })
    }

    /// Adds a provider header (replaced by a model or options header of the same name).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Signs the request with `signer` when it is sent.
    #[cfg_attr(not(feature = "bedrock"), allow(dead_code))]
    pub(crate) fn signed_by(mut self, signer: Arc<dyn RequestSigner>) -> Self {
        self.signer = Some(signer);
        self
    }

    /// A credential that must never appear in an error or a log (a signing key).
    #[cfg_attr(not(feature = "bedrock"), allow(dead_code))]
    pub(crate) fn secret(mut self, value: impl Into<String>) -> Self {
        self.secrets.push(value.into());
        self
    }

    /// The JSON body as built by the provider (before `on_payload`).
    #[cfg(test)]
    pub(crate) fn body(&self) -> Value {
        match &self.body {
            Body::Json(value) => value.clone(),
            Body::Encoded(bytes) => serde_json::from_slice(bytes).expect("a JSON body"),
        }
    }

    /// The URL and the provider's own headers (before the model's and the options').
    #[cfg(test)]
    pub(crate) fn parts(&self) -> (&str, &[(String, String)]) {
        (&self.url, &self.headers)
    }

    /// The value of provider header `name` (case-insensitive; the last one wins, as when the
    /// request is sent).
    #[cfg(test)]
    pub(crate) fn header_value(&self, name: &str) -> Option<&str> {
        header_in(&self.headers, name)
    }

    /// Applies the shared steps; an unusable URL or header is a [`ErrorKind::Config`] error.
    pub(crate) fn prepare(self, model: &Model, options: &StreamOptions) -> Result<Prepared, Error> {
        let url = parse_url(&self.url, model)?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let key = options.api_key.as_ref().map(|k| k.expose());
        let mut secrets = Secrets::default();
        if let Some(key) = key {
            secrets.add(key);
        }
        for secret in &self.secrets {
            secrets.add(secret);
        }
        let extra = model.headers.iter().chain(options.headers.iter()).flatten();
        for (name, value) in self.headers.iter().map(|(k, v)| (k, v)).chain(extra) {
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad_header(name))?;
            let mut header_value =
                HeaderValue::from_str(value).map_err(|_| bad_header(header.as_str()))?;
            if redact::is_secret_header(name, value, key) {
                // Kept out of HTTP/2 header compression tables and reqwest's `Debug`.
                header_value.set_sensitive(true);
                secrets.add(value);
            }
            headers.insert(header, header_value);
        }
        let mut payload = None;
        let body = match (self.body, &options.on_payload) {
            (Body::Encoded(bytes), None) => bytes,
            (Body::Json(value), None) => encode(&value)?,
            (body, Some(hook)) => {
                let mut value = match body {
                    Body::Json(value) => value,
                    Body::Encoded(bytes) => serde_json::from_slice(&bytes).map_err(encode_error)?,
                };
                if hook.call_sync(&mut value) {
                    encode(&value)?
                } else {
                    // An async hook runs when the call starts sending (`send`).
                    payload = Some((value, hook.clone()));
                    Vec::new()
                }
            }
        };
        let mut retry = options.retry_policy();
        // pi's `maxRetries` option, when no policy was set in Rust.
        if options.retry.is_none()
            && let Some(n) = options.extra.get("maxRetries").and_then(Value::as_u64)
        {
            retry = retry.with_max_retries(u32::try_from(n).unwrap_or(u32::MAX));
        }
        let max_delay = match options.max_retry_delay_ms {
            Some(ms) => retry.max_delay.min(Duration::from_millis(ms)),
            None => retry.max_delay,
        };
        Ok(Prepared {
            url,
            headers,
            body: Bytes::from(body),
            payload,
            on_response: options.on_response.clone(),
            retry,
            max_delay,
            idle_timeout: options.idle_timeout_or_default(),
            error_body_timeout: options.error_body_timeout_or_default(),
            secrets,
            transport: options.transport.clone().unwrap_or_else(default_transport),
            signer: self.signer,
        })
    }
}

/// A response head as a [`ResponseHook`] sees it.
fn response_info(status: u16, headers: &HeaderMap) -> ResponseInfo {
    let mut map: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        map.entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    ResponseInfo::new(status, map)
}

/// `text` parsed, reusing this thread's last parse when `text` is its serialization: every
/// request of a conversation goes to one URL, and parsing it (the host's validation
/// included) cost as much as building a small request's headers. A URL that is not in its
/// normalized form is parsed every time.
fn parse_url(text: &str, model: &Model) -> Result<reqwest::Url, Error> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<reqwest::Url>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some(url) = last.as_ref().filter(|url| url.as_str() == text) {
            return Ok(url.clone());
        }
        let url = reqwest::Url::parse(text).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("Invalid base URL for model {}: {e}", model.id),
            )
        })?;
        *last = Some(url.clone());
        Ok(url)
    })
}

/// `body` as JSON, into a buffer large enough for a typical request at once (serde starts
/// from 128 bytes and regrows).
fn encode(body: &impl serde::Serialize) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(4096);
    serde_json::to_writer(&mut out, body).map_err(encode_error)?;
    Ok(out)
}

fn encode_error(e: serde_json::Error) -> Error {
    Error::new(ErrorKind::Config, format!("Cannot encode request: {e}"))
}

fn bad_header(name: &str) -> Error {
    // The value is not shown: it may be a key.
    Error::new(ErrorKind::Config, format!("Invalid request header: {name}"))
}

/// A request ready to send, with the retry settings of its call.
#[derive(Clone)]
pub(crate) struct Prepared {
    pub(crate) url: reqwest::Url,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// The body still to go through an async payload hook (`body` is empty until then).
    pub(crate) payload: Option<(Value, PayloadHook)>,
    /// Told of the successful response's status and headers.
    pub(crate) on_response: Option<ResponseHook>,
    pub(crate) retry: RetryPolicy,
    /// The longest wait before a retry, `Retry-After` included.
    pub(crate) max_delay: Duration,
    pub(crate) idle_timeout: Duration,
    /// The deadline for reading an error body (or a success that is not a stream).
    pub(crate) error_body_timeout: Duration,
    /// The key and credential header values, scrubbed from every error of the request.
    pub(crate) secrets: Secrets,
    /// Where the request goes: the options' transport, or the default.
    pub(crate) transport: SharedTransport,
    /// Signs each attempt (Bedrock's SigV4).
    pub(crate) signer: Option<Arc<dyn RequestSigner>>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("url", &self.url.as_str())
            .field("headers", &redact::HeaderMapShown(&self.headers))
            .field("body_len", &self.body.len())
            .field("payload_hook_pending", &self.payload.is_some())
            .field("retry", &self.retry)
            .field("max_delay", &self.max_delay)
            .field("idle_timeout", &self.idle_timeout)
            .field("error_body_timeout", &self.error_body_timeout)
            .field("secrets", &self.secrets)
            .field("transport", &self.transport)
            .finish()
    }
}

/// A success response whose body is to be streamed, with the bytes already read from it to
/// tell an event stream from a document.
pub(crate) struct Opened {
    /// The rest of the body.
    pub(crate) body: ResponseBody,
    /// The first bytes of the body (to be decoded before the rest).
    pub(crate) prefix: Vec<u8>,
}

impl Prepared {
    /// Sends the request until a success status arrives, retrying what may succeed later
    /// (rate limits, overloaded or unavailable servers, failed connections) with the call's
    /// [`RetryPolicy`]. Only the response head is awaited: once it is a success, the body
    /// belongs to the caller and is never retried.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the connection attempt or the wait; nothing is sent twice
    /// because of it.
    pub(crate) async fn send(mut self) -> Result<Opened, Error> {
        if let Some((value, hook)) = self.payload.take() {
            self.body = Bytes::from(encode(&hook.apply(value).await)?);
        }
        let mut attempt = 0u32;
        loop {
            let error = match self.attempt().await {
                Ok(response) => return Ok(response),
                Err(e) => e,
            };
            attempt += 1;
            match self.retry_delay(&error, attempt) {
                Some(delay) => {
                    tracing::debug!(attempt, ?delay, error = %error, "retrying model request");
                    tokio::time::sleep(delay).await;
                }
                None => return Err(error),
            }
        }
    }

    /// The headers of one attempt: the request's, plus a fresh signature when it is signed.
    fn attempt_headers(&self) -> Result<HeaderMap, Error> {
        let Some(signer) = &self.signer else {
            return Ok(self.headers.clone());
        };
        // Only the content type is signed beside what the signer adds (host, date): a
        // proxy that rewrites other headers does not break the signature.
        let content_type = self
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json");
        let signed = signer.sign(
            &self.url,
            &[("content-type", content_type)],
            &self.body,
            std::time::SystemTime::now(),
        )?;
        let mut headers = self.headers.clone();
        for (name, value) in signed {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad_header(&name))?;
            let mut value = HeaderValue::from_str(&value).map_err(|_| bad_header(name.as_str()))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        Ok(headers)
    }

    async fn attempt(&self) -> Result<Opened, Error> {
        let request = TransportRequest::new(
            reqwest::Method::POST,
            self.url.clone(),
            self.attempt_headers()?,
            self.body.clone(),
        );
        let response =
            match tokio::time::timeout(self.idle_timeout, self.transport.send(request)).await {
                Err(_) => return Err(idle_timeout_error(self.idle_timeout)),
                Ok(Err(e)) => return Err(e.scrubbed(&self.secrets)),
                Ok(Ok(response)) => response,
            };
        let status = response.status;
        if status.is_success() {
            if let Some(hook) = &self.on_response {
                hook.call(response_info(status.as_u16(), &response.headers))
                    .await;
            }
            return self.check_stream(response).await;
        }
        if status.is_redirection() && response.headers.contains_key(reqwest::header::LOCATION) {
            return Err(redirect_error(status, &self.url, &response.headers));
        }
        let headers = response.headers.clone();
        let body = read_bounded(
            response.body,
            Vec::new(),
            self.idle_timeout,
            self.error_body_timeout,
        )
        .await;
        Err(status_error(status.as_u16(), &headers, &body).scrubbed(&self.secrets))
    }

    /// A success response is streamed unless its body is something else: a compressed body
    /// (none is asked for, so none can be decoded), or a document (an HTML page of a proxy,
    /// a JSON error) instead of an event stream. A body labelled `text/event-stream` is
    /// streamed as it is; any other is recognised by its first byte (`<`, `{` or `[`, which
    /// no event stream starts with), so a stream with a wrong label still streams.
    async fn check_stream(&self, response: TransportResponse) -> Result<Opened, Error> {
        let TransportResponse {
            headers, mut body, ..
        } = response;
        let headers = &headers;
        if let Some(encoding) = headers
            .get(reqwest::header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"))
        {
            return Err(Error::new(
                ErrorKind::InvalidResponse,
                format!(
                    "The provider sent a body with content-encoding {encoding}, which was not \
                     asked for and cannot be decoded"
                ),
            )
            .with_request_id(super::status::request_id(headers)));
        }
        let is_stream = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                ct.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/event-stream"))
            });
        if is_stream {
            return Ok(Opened {
                body,
                prefix: Vec::new(),
            });
        }
        // Read up to the first byte that is not whitespace, within the idle timeout and the
        // error-body deadline (a stall is then the driver's idle timeout, as for a stream).
        let deadline = tokio::time::Instant::now() + self.error_body_timeout.min(self.idle_timeout);
        let mut prefix = Vec::new();
        let first = loop {
            if let Some(&b) = prefix.iter().find(|b: &&u8| !b.is_ascii_whitespace()) {
                break Some(b);
            }
            match tokio::time::timeout_at(deadline, body.next()).await {
                Ok(Some(Ok(chunk))) => prefix.extend_from_slice(&chunk),
                Ok(None) => break None,
                // A stall or a broken body: the driver reports it as it would for a stream.
                Ok(Some(Err(_))) | Err(_) => {
                    return Ok(Opened { body, prefix });
                }
            }
        };
        match first {
            Some(b'<' | b'{' | b'[') | None => {
                let body =
                    read_bounded(body, prefix, self.idle_timeout, self.error_body_timeout).await;
                Err(not_a_stream_error(headers, &body).scrubbed(&self.secrets))
            }
            Some(_) => Ok(Opened { body, prefix }),
        }
    }

    /// The wait before retry number `attempt`, or `None` to give up.
    fn retry_delay(&self, error: &Error, attempt: u32) -> Option<std::time::Duration> {
        if attempt > self.retry.max_retries {
            return None;
        }
        // The crate's one classifier; what only pi's text pattern would retry is left to
        // the session's retries.
        if !error.is_retryable() {
            return None;
        }
        match error.retry_after() {
            // The server knows best, unless it asks for longer than the caller will wait.
            Some(after) if after > self.max_delay => None,
            Some(after) => Some(after),
            None => Some(self.retry.backoff(attempt).min(self.max_delay)),
        }
    }
}

/// The body of an error response after `out` (what was read of it already), up to
/// [`MAX_ERROR_BODY`] bytes: reading stops at the end of the body, after `idle` without a
/// chunk, or `deadline` after the call, whichever comes first, and what arrived is kept.
/// (A per-chunk timeout alone lets a server that drips a byte a second hold the call for as
/// long as it likes.)
async fn read_bounded(
    mut body: ResponseBody,
    mut out: Vec<u8>,
    idle: Duration,
    deadline: Duration,
) -> Vec<u8> {
    let deadline = tokio::time::Instant::now() + deadline;
    while out.len() < MAX_ERROR_BODY {
        let chunk_deadline = deadline.min(tokio::time::Instant::now() + idle);
        match tokio::time::timeout_at(chunk_deadline, body.next()).await {
            Ok(Some(Ok(chunk))) => out.extend_from_slice(&chunk),
            _ => break,
        }
    }
    out.truncate(MAX_ERROR_BODY);
    out
}

/// The error for a body that stopped arriving for longer than the idle timeout.
pub(crate) fn idle_timeout_error(idle: Duration) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!(
            "Request timed out: no data from the provider for {} s",
            idle.as_secs_f64()
        ),
    )
}

/// The value of header `name` in `headers` (case-insensitive; the last one wins).
#[cfg(test)]
pub(crate) fn header_in<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(policy: RetryPolicy, max_delay: Duration) -> Prepared {
        Prepared {
            url: reqwest::Url::parse("http://127.0.0.1:1/").unwrap(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
            payload: None,
            on_response: None,
            retry: policy,
            max_delay,
            idle_timeout: Duration::from_secs(1),
            error_body_timeout: Duration::from_secs(1),
            secrets: Secrets::default(),
            transport: default_transport(),
            signer: None,
        }
    }

    #[test]
    fn retry_decisions() {
        let p = prepared(RetryPolicy::default(), Duration::from_secs(10));
        let rate = Error::new(ErrorKind::RateLimited, "429").with_status(429);
        assert_eq!(p.retry_delay(&rate, 1), Some(Duration::from_secs(1)));
        assert_eq!(p.retry_delay(&rate, 2), Some(Duration::from_secs(2)));
        assert_eq!(p.retry_delay(&rate, 3), None, "budget of 2 retries");
        let asked = rate.clone().with_retry_after(Some(Duration::from_secs(5)));
        assert_eq!(p.retry_delay(&asked, 1), Some(Duration::from_secs(5)));
        let too_long = rate.clone().with_retry_after(Some(Duration::from_secs(11)));
        assert_eq!(p.retry_delay(&too_long, 1), None);
        let quota = Error::new(ErrorKind::QuotaExceeded, "429 insufficient_quota").with_status(429);
        assert_eq!(p.retry_delay(&quota, 1), None);
        let bad = Error::new(ErrorKind::Status, "400").with_status(400);
        assert_eq!(p.retry_delay(&bad, 1), None);
        let none = prepared(RetryPolicy::none(), Duration::from_secs(10));
        assert_eq!(none.retry_delay(&rate, 1), None);
        // The transport follows the crate's classifier: what it decides, not pi's text.
        for error in [
            Error::new(ErrorKind::Status, "409 Conflict").with_status(409),
            Error::new(ErrorKind::Timeout, "no response head"),
            Error::new(ErrorKind::Status, "400 Provider returned error").with_status(400),
            Error::new(ErrorKind::Provider, "overloaded"),
        ] {
            assert_eq!(
                p.retry_delay(&error, 1).is_some(),
                error.is_retryable(),
                "{error}"
            );
        }
    }

    #[test]
    fn headers_merge_model_then_options() {
        let model = Model::new("m", "x", "p", "http://127.0.0.1:9/").with_header("X-A", "model");
        let options = StreamOptions::new().with_header("x-a", "options");
        let p = HttpRequest::post_json("http://127.0.0.1:9/v1", serde_json::json!({}))
            .header("x-a", "provider")
            .header("x-b", "provider")
            .prepare(&model, &options)
            .unwrap();
        assert_eq!(p.headers["x-a"], "options");
        assert_eq!(p.headers["x-b"], "provider");
        assert_eq!(p.headers["content-type"], "application/json");
        let bad = HttpRequest::post_json("http://127.0.0.1:9/v1", serde_json::json!({}))
            .header("x-key", "secret\nvalue")
            .prepare(&model, &StreamOptions::new())
            .unwrap_err();
        assert!(!bad.message().contains("secret"));
        assert_eq!(bad.kind(), ErrorKind::Config);
    }

    #[test]
    fn debug_hides_credentials() {
        let model =
            Model::new("m", "x", "p", "http://127.0.0.1:9/").with_header("x-echo", "k-0123456789");
        let options = StreamOptions::new()
            .with_api_key("k-0123456789")
            .with_header("x-visible", "shown");
        let request = HttpRequest::post_json("http://127.0.0.1:9/v1", serde_json::json!({}))
            .header("x-api-key", "k-0123456789")
            .header("authorization", "Bearer k-0123456789");
        assert!(!format!("{request:?}").contains("0123456789"));
        let p = request.prepare(&model, &options).unwrap();
        let shown = format!("{p:?}");
        assert!(!shown.contains("0123456789"), "{shown}");
        assert!(shown.contains(r#""x-visible": "shown""#), "{shown}");
        assert!(p.headers["x-echo"].is_sensitive());
        assert_eq!(
            p.secrets.scrub("bad key k-0123456789"),
            "bad key …[redacted]"
        );
    }

    #[test]
    fn pi_max_retries_option() {
        let model = Model::new("m", "x", "p", "");
        let request = || HttpRequest::post_json("http://127.0.0.1:9/v1", serde_json::json!({}));
        let options = StreamOptions::new().with_extra("maxRetries", 5.into());
        assert_eq!(
            request()
                .prepare(&model, &options)
                .unwrap()
                .retry
                .max_retries,
            5
        );
        let explicit = options.with_retry(RetryPolicy::none());
        assert_eq!(
            request()
                .prepare(&model, &explicit)
                .unwrap()
                .retry
                .max_retries,
            0
        );
    }

    #[test]
    fn on_payload_sees_the_body() {
        let model = Model::new("m", "x", "p", "");
        let options = StreamOptions::new().with_on_payload(|b| b["added"] = true.into());
        let p = HttpRequest::post_json("http://127.0.0.1:9/v1", serde_json::json!({"a": 1}))
            .prepare(&model, &options)
            .unwrap();
        assert_eq!(&p.body[..], br#"{"a":1,"added":true}"#);
        // A body serialized up front is read back for the hook, in its own key order.
        #[derive(serde::Serialize)]
        struct Body<'a> {
            z: &'a str,
            a: f64,
        }
        let p = HttpRequest::post_serialized("http://127.0.0.1:9/v1", &Body { z: "x", a: 0.7 })
            .unwrap()
            .prepare(&model, &options)
            .unwrap();
        assert_eq!(&p.body[..], br#"{"z":"x","a":0.7,"added":true}"#);
        let p = HttpRequest::post_serialized("http://127.0.0.1:9/v1", &Body { z: "x", a: 0.7 })
            .unwrap()
            .prepare(&model, &StreamOptions::new())
            .unwrap();
        assert_eq!(&p.body[..], br#"{"z":"x","a":0.7}"#);
    }

    #[test]
    fn a_parsed_url_is_reused_only_for_the_same_text() {
        let model = Model::new("m", "x", "p", "");
        let a = parse_url("http://127.0.0.1:9/v1/messages", &model).unwrap();
        assert_eq!(
            parse_url("http://127.0.0.1:9/v1/messages", &model).unwrap(),
            a
        );
        let b = parse_url("http://127.0.0.1:9/v1/other", &model).unwrap();
        assert_eq!(b.path(), "/v1/other");
        // Not in normalized form: parsed (and normalized) every time.
        let c = parse_url("HTTP://LOCALHOST:9/a/../b", &model).unwrap();
        assert_eq!(c.as_str(), "http://localhost:9/b");
        assert_eq!(parse_url("HTTP://LOCALHOST:9/a/../b", &model).unwrap(), c);
        let error = parse_url("not a url", &model).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(parse_url("http://127.0.0.1:9/v1/messages", &model).is_ok());
    }

    #[test]
    fn a_body_serde_cannot_encode_is_a_config_error() {
        let mut map = std::collections::BTreeMap::new();
        map.insert(vec![1u8], 1);
        let error = HttpRequest::post_serialized("http://127.0.0.1:9/v1", &map).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(error.message().contains("Cannot encode request"), "{error}");
    }
}
