//! The seam under every HTTP provider: send one request, get the status, the headers and the
//! body as a stream of byte chunks.
//!
//! Everything above it (building the request, retries before the first byte, the idle
//! timeout, cancellation, SSE decoding, error texts) is the crate's and the same whatever the
//! transport. The default, [`ReqwestTransport`], is a reqwest client; an application hands in
//! its own (a proxy, TLS roots, timeouts, a connection pool per runtime) with
//! [`ReqwestTransport::from_builder`], or implements [`HttpTransport`] itself (a recorded
//! transport that replays traffic chunk by chunk, a test double, another HTTP stack), and
//! sets it per call with [`StreamOptions::with_transport`](crate::StreamOptions::with_transport).

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode, Url};

use crate::llm::error::{Error, ErrorKind};

/// The `User-Agent` of every request that does not set one.
pub(crate) const USER_AGENT: &str = concat!("pi-engine/", env!("CARGO_PKG_VERSION"));

/// Most redirects [`ReqwestTransport`] follows within one origin.
pub(crate) const MAX_REDIRECTS: usize = 10;

/// A response body: the chunks as they arrive. An `Err` item ends the body (the connection
/// broke); the stream ending is the end of the body.
pub type ResponseBody = Pin<Box<dyn Stream<Item = Result<Bytes, Error>> + Send>>;

/// One HTTP request as the providers send it: a method, a URL, headers (credentials marked
/// [sensitive](reqwest::header::HeaderValue::set_sensitive)) and the whole body.
#[derive(Clone)]
#[non_exhaustive]
pub struct TransportRequest {
    /// The method (`POST` for every built-in provider).
    pub method: Method,
    /// The URL.
    pub url: Url,
    /// The headers, the provider's, the model's and the options' merged; `content-type` set.
    pub headers: HeaderMap,
    /// The body (JSON for every built-in provider).
    pub body: Bytes,
}

impl TransportRequest {
    /// A request with these parts.
    pub fn new(method: Method, url: Url, headers: HeaderMap, body: Bytes) -> Self {
        TransportRequest {
            method,
            url,
            headers,
            body,
        }
    }
}

impl fmt::Debug for TransportRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportRequest")
            .field("method", &self.method)
            .field("url", &self.url.as_str())
            .field(
                "headers",
                &crate::llm::redact::HeaderMapShown(&self.headers),
            )
            .field("body_len", &self.body.len())
            .finish()
    }
}

/// The response to a [`TransportRequest`]: its head, and its body still to be read.
#[non_exhaustive]
pub struct TransportResponse {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, read chunk by chunk as the consumer of the reply asks for events.
    pub body: ResponseBody,
}

impl TransportResponse {
    /// A response with this head and body.
    pub fn new(
        status: StatusCode,
        headers: HeaderMap,
        body: impl Stream<Item = Result<Bytes, Error>> + Send + 'static,
    ) -> Self {
        TransportResponse {
            status,
            headers,
            body: Box::pin(body),
        }
    }
}

impl fmt::Debug for TransportResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportResponse")
            .field("status", &self.status)
            .field(
                "headers",
                &crate::llm::redact::HeaderMapShown(&self.headers),
            )
            .finish_non_exhaustive()
    }
}

/// Sends HTTP requests for the providers.
///
/// `send` resolves once the response head has arrived (whatever its status: an error status
/// is a response, not an `Err`); the body is then read from
/// [`TransportResponse::body`] only as fast as the reply's consumer asks for events. An
/// `Err` is a request that got no response: a refused or broken connection
/// ([`ErrorKind::Connection`], retried before the first byte like a 503), a timeout of the
/// transport's own ([`ErrorKind::Timeout`]), a request it cannot send ([`ErrorKind::Config`]).
///
/// The caller owns every deadline: `send` and each chunk of the body are awaited within the
/// call's idle timeout, and a cancelled call drops the future or the body, so a transport
/// needs no timeout of its own and must tolerate being dropped at any `.await`.
///
/// **Redirects.** Every request carries a key. A transport must not follow a redirect to
/// another origin (scheme, host, port) with the request's headers; returning the redirect
/// response instead is always right (the provider reports it as an error). [`ReqwestTransport`]
/// follows redirects within the origin only.
///
/// # Example
///
/// A transport that answers every request with a canned event stream, chunk by chunk (what a
/// replaying test transport does):
///
/// ```
/// use bytes::Bytes;
/// use pi_engine::providers::http::{HttpTransport, TransportRequest, TransportResponse};
/// use pi_engine::{Context, Error, StreamOptions, UserMessage, get_model};
/// use reqwest::StatusCode;
/// use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
///
/// #[derive(Debug)]
/// struct Canned(Vec<&'static str>);
///
/// #[async_trait::async_trait]
/// impl HttpTransport for Canned {
///     async fn send(&self, request: TransportRequest) -> Result<TransportResponse, Error> {
///         assert!(request.url.as_str().ends_with("/v1/messages"));
///         let mut headers = HeaderMap::new();
///         headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
///         let chunks = self.0.iter().map(|c| Ok(Bytes::from_static(c.as_bytes())));
///         Ok(TransportResponse::new(StatusCode::OK, headers, futures::stream::iter(chunks.collect::<Vec<_>>())))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let transport = Canned(vec![
///     "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n",
///     "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
///     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
///     "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
///     "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
///     "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
/// ]);
/// let model = get_model("anthropic", "claude-sonnet-4-5").unwrap();
/// let context = Context::new().with_message(UserMessage::text("Hello"));
/// let options = StreamOptions::new().with_api_key("sk-ant-test").with_transport(transport);
/// let reply = pi_engine::complete(&model, &context, &options).await;
/// assert_eq!(reply.text(), "Hi");
/// # }
/// ```
#[async_trait::async_trait]
pub trait HttpTransport: Send + Sync + fmt::Debug + 'static {
    /// Sends `request` and returns the response head with its body still to be read.
    ///
    /// # Cancellation
    ///
    /// Dropping the future abandons the request (the connection is dropped or returned to a
    /// pool); nothing is sent again because of it.
    async fn send(&self, request: TransportRequest) -> Result<TransportResponse, Error>;
}

/// A handle to an [`HttpTransport`], cheap to clone, as [`StreamOptions`](crate::StreamOptions)
/// holds it.
pub type SharedTransport = Arc<dyn HttpTransport>;

/// The transport of a call whose options set none: the process-wide [`ReqwestTransport`],
/// shared, so a request costs a reference count, not an allocation.
pub(crate) fn default_transport() -> SharedTransport {
    static DEFAULT: OnceLock<SharedTransport> = OnceLock::new();
    DEFAULT
        .get_or_init(|| Arc::new(ReqwestTransport::default()))
        .clone()
}

/// The default transport: a [`reqwest::Client`] with pi-engine's rules.
///
/// * Redirects are followed only within the request's origin (scheme, host and port), at
///   most 10 times: every request carries a key (`x-api-key`, `authorization`,
///   `x-goog-api-key`, `api-key`, …) that must not reach another server. A redirect to
///   another origin is returned as the response and becomes an error.
/// * `User-Agent: pi-engine/<version>` unless the request sets one (set `user-agent` in the
///   model's or the options' headers to send another).
/// * No compression is asked for (`Accept-Encoding` is not sent), `TCP_NODELAY`, a 30 s
///   connect timeout, idle connections kept 90 s.
///
/// [`ReqwestTransport::default`] is one process-wide client, so consecutive calls to the same
/// endpoint reuse their connection and TLS session. Connections belong to the Tokio runtime
/// that opened them: a program with several runtimes, or one that wants a proxy, its own TLS
/// roots or pool settings, builds its own with [`from_builder`](Self::from_builder).
#[derive(Clone)]
pub struct ReqwestTransport {
    client: reqwest::Client,
}

impl fmt::Debug for ReqwestTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReqwestTransport").finish_non_exhaustive()
    }
}

impl Default for ReqwestTransport {
    /// The process-wide client (built on first use).
    fn default() -> Self {
        static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
        let client = CLIENT.get_or_init(|| {
            configure(reqwest::Client::builder().connect_timeout(Duration::from_secs(30)))
                .build()
                .unwrap_or_default()
        });
        ReqwestTransport {
            client: client.clone(),
        }
    }
}

/// pi-engine's rules on a client builder: the same-origin redirect policy, the user agent,
/// no decompression, `TCP_NODELAY`, the idle pool timeout.
fn configure(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    builder
        .user_agent(USER_AGENT)
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if same_origin && attempt.previous().len() <= MAX_REDIRECTS {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }))
}

impl ReqwestTransport {
    /// The process-wide default (see [`Default`]).
    pub fn new() -> Self {
        ReqwestTransport::default()
    }

    /// A transport on a client built from `builder`: its proxy, TLS, timeout and pool
    /// settings are kept; the redirect policy is replaced by the same-origin rule (a key never
    /// follows a redirect to another origin), and the user agent, `TCP_NODELAY` and the idle
    /// pool timeout are set as for the default (call the builder's own methods for anything
    /// else). The connect timeout is the builder's (none unless it sets one).
    ///
    /// An error if reqwest cannot build the client (e.g. a TLS backend that fails to load),
    /// of kind [`ErrorKind::Config`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use pi_engine::StreamOptions;
    /// use pi_engine::providers::http::ReqwestTransport;
    ///
    /// let transport = ReqwestTransport::from_builder(
    ///     reqwest::Client::builder()
    ///         .connect_timeout(Duration::from_secs(5))
    ///         .pool_max_idle_per_host(4),
    /// )
    /// .unwrap();
    /// let options = StreamOptions::new().with_transport(transport);
    /// ```
    pub fn from_builder(builder: reqwest::ClientBuilder) -> Result<Self, Error> {
        let client = configure(builder).build().map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("Cannot build the HTTP client: {}", error_chain(&e)),
            )
        })?;
        Ok(ReqwestTransport { client })
    }
}

#[async_trait::async_trait]
impl HttpTransport for ReqwestTransport {
    async fn send(&self, request: TransportRequest) -> Result<TransportResponse, Error> {
        let response = self
            .client
            .request(request.method, request.url)
            .headers(request.headers)
            .body(request.body)
            .send()
            .await
            .map_err(send_error)?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(body_error));
        Ok(TransportResponse::new(status, headers, body))
    }
}

/// A failure of the connection or of the HTTP exchange itself (no status).
fn send_error(error: reqwest::Error) -> Error {
    let error = error.without_url();
    let kind = if error.is_timeout() {
        ErrorKind::Timeout
    } else if error.is_builder() {
        // A request reqwest refused to build is not a network problem.
        ErrorKind::Config
    } else if error.is_decode() {
        ErrorKind::InvalidResponse
    } else {
        ErrorKind::Connection
    };
    Error::new(kind, format!("Connection error: {}", error_chain(&error)))
}

/// A failure while reading the body of a response.
fn body_error(error: reqwest::Error) -> Error {
    let error = error.without_url();
    Error::new(
        ErrorKind::Connection,
        format!("Connection lost while streaming: {}", error_chain(&error)),
    )
}

/// `error` and its sources, `: `-separated, without repeats.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
