//! The HTTP machinery every built-in provider stands on, public so that a provider of your
//! own reuses it instead of rewriting it (cargo feature `http`).
//!
//! * [`HttpTransport`]: the seam under every provider (send a request, get the status, the
//!   headers and the body as byte chunks). [`ReqwestTransport`] is the default;
//!   [`StreamOptions::with_transport`](crate::StreamOptions::with_transport) sets another per
//!   call (a configured client, a recording or replaying transport, a test double).
//! * [`stream_http`]: the shared driver (retries before the first byte, the idle timeout,
//!   cancellation, SSE decoding, typed errors) that turns an [`HttpRequest`] and a
//!   [`Decoder`] into the reply's event stream.
//!
//! # How to write a provider
//!
//! A provider is two small halves around this module; the built-in
//! `providers::anthropic` is the reference to copy from.
//!
//! 1. **Encode**: a function `(model, context, options) -> Result<HttpRequest, Error>` that
//!    resolves the key with [`resolve_api_key`](crate::llm::resolve_api_key), runs
//!    [`transform_messages`](super::transform::transform_messages) with the provider's
//!    tool-call id rule, builds the JSON body exactly as pi does (compare with the recorded
//!    bodies in `../shared/conformance/pi/`), and returns
//!    `HttpRequest::post_json(url, body).header(..)` with the provider's own headers (auth,
//!    version, betas). Do not add the model's or the options' headers, `content-type`, or
//!    call `on_payload`: [`stream_http`] does that for every provider.
//! 2. **Decode**: a struct implementing [`Decoder`]. It receives each SSE event
//!    ([`SseEvent`](super::sse::SseEvent): `event()` name, `data()` bytes) and pushes
//!    [`AssistantMessageEvent`](crate::AssistantMessageEvent)s to the [`Emit`]:
//!    * parse `data()` with `serde_json::from_slice` into a *flat* struct of borrowed fields
//!      (`&str`/`Cow<str>`, `Option`s), not into an internally tagged enum, which buffers
//!      every event into a `Value` first (it costs a third of the throughput);
//!    * keep a map from the provider's block index to the content index, and push
//!      `*_start`, `*_delta` and `*_end`; fill `*_end` from [`Emit::message`] (the message as
//!      the consumer has it) instead of keeping a second copy of the text, and parse tool
//!      arguments once at the end from [`Emit::tool_arguments_text`];
//!    * keep usage, stop reason, response id and signatures in the decoder and write them in
//!      [`Decoder::finish`], which the driver calls for the final `done` or `error` message
//!      (costs with [`calculate_cost`](crate::llm::calculate_cost), pi's exact arithmetic);
//!    * report a stream cut before its final event from [`Decoder::on_end`], and an `error`
//!      event of the wire format by returning `Err` from [`Decoder::on_event`].
//!
//! The provider's `stream` is then `stream_http(model, options, encode(..), Decoder::new(..))`.
//! [`stream_http`] returns a pull-based stream (no task, no channel): HTTP bytes are read
//! only when the consumer asks for the next event. It owns every fault: retries before the
//! first byte (429, 5xx, overloaded, failed connections; `Retry-After` honoured; quota errors
//! never retried), HTTP error statuses turned into typed [`Error`](crate::Error)s with the provider's text
//! and request id (HTML pages summarized; an error body read within its own deadline), a
//! success that is not an event stream (an HTML page, a JSON error), a broken connection,
//! the idle timeout between events (keep-alive comments do not count), an event too large
//! for the SSE decoder, cancellation at any point (open blocks ended, then stop reason
//! `aborted`, "Request was aborted"), all ending with an `error` event that keeps the
//! partial message; junk after the provider's final event is ignored. A decoder never sees
//! a network error and never has to think about cancellation.
//!
//! Tests: a decoder is tested by feeding SSE text through [`stream_http`], from a local
//! server or from a transport that returns canned chunks (below); the faults are the
//! driver's and are tested once for every wire format in the crate's `tests/faults.rs`.
//!
//! # Example
//!
//! A provider for a made-up API that streams `data: {"text": …}` events and ends with
//! `data: [DONE]`, tested offline with a transport that answers with canned chunks:
//!
//! ```
//! use std::borrow::Cow;
//!
//! use bytes::Bytes;
//! use pi_engine::llm::{AssistantMessageEventStream, resolve_api_key};
//! use pi_engine::providers::http::{
//!     Decoder, Emit, HttpRequest, HttpTransport, TransportRequest, TransportResponse, stream_http,
//! };
//! use pi_engine::providers::sse::SseEvent;
//! use pi_engine::{
//!     ApiProvider, AssistantMessage, AssistantMessageEvent, Context, Error, ErrorKind, Message,
//!     Model, StreamOptions, UserMessage,
//! };
//! use serde_json::json;
//!
//! struct EchoApi;
//!
//! impl ApiProvider for EchoApi {
//!     fn api(&self) -> &str {
//!         "echo"
//!     }
//!     fn stream(&self, model: &Model, context: &Context, options: &StreamOptions) -> AssistantMessageEventStream {
//!         // 1. Encode: the key, the body, the provider's own headers.
//!         let request = resolve_api_key(model, options).map(|key| {
//!             let prompt: Vec<String> = context.messages.iter().filter_map(|m| match m {
//!                 Message::User(u) => Some(u.content.text()),
//!                 _ => None,
//!             }).collect();
//!             HttpRequest::post_json(format!("{}/generate", model.base_url), json!({"prompt": prompt}))
//!                 .header("authorization", format!("Bearer {}", key.expose()))
//!         });
//!         // 2. Decode, driven by the shared driver.
//!         stream_http(model, options, request, EchoDecoder::default())
//!     }
//! }
//!
//! #[derive(Default)]
//! struct EchoDecoder {
//!     started: bool,
//!     done: bool,
//! }
//!
//! impl Decoder for EchoDecoder {
//!     fn on_event(&mut self, event: SseEvent<'_>, out: &mut Emit<'_>) -> Result<(), Error> {
//!         if event.data() == b"[DONE]" {
//!             if self.started {
//!                 let content = out.message().text();
//!                 out.push(AssistantMessageEvent::TextEnd { content_index: 0, content });
//!             }
//!             self.done = true;
//!             return Ok(());
//!         }
//!         #[derive(serde::Deserialize)]
//!         struct Chunk<'a> {
//!             #[serde(borrow)]
//!             text: Cow<'a, str>,
//!         }
//!         let chunk: Chunk = serde_json::from_slice(event.data())
//!             .map_err(|e| Error::new(ErrorKind::InvalidResponse, format!("bad event: {e}")))?;
//!         if !self.started {
//!             self.started = true;
//!             out.push(AssistantMessageEvent::TextStart { content_index: 0 });
//!         }
//!         out.push(AssistantMessageEvent::TextDelta { content_index: 0, delta: chunk.text.into_owned() });
//!         Ok(())
//!     }
//!     fn on_end(&mut self, _out: &mut Emit<'_>) -> Result<(), Error> {
//!         match self.done {
//!             true => Ok(()),
//!             false => Err(Error::new(ErrorKind::InvalidResponse, "The stream ended before [DONE]")),
//!         }
//!     }
//!     fn is_complete(&self) -> bool {
//!         self.done
//!     }
//!     fn finish(&mut self, _message: &mut AssistantMessage) {}
//! }
//!
//! /// Answers every request with the same chunks (split anywhere, as a network splits them).
//! #[derive(Debug)]
//! struct Canned(&'static [&'static str]);
//!
//! #[async_trait::async_trait]
//! impl HttpTransport for Canned {
//!     async fn send(&self, request: TransportRequest) -> Result<TransportResponse, Error> {
//!         assert_eq!(request.url.path(), "/generate");
//!         assert!(request.headers["authorization"].is_sensitive());
//!         let chunks: Vec<Result<Bytes, Error>> =
//!             self.0.iter().map(|c| Ok(Bytes::from_static(c.as_bytes()))).collect();
//!         Ok(TransportResponse::new(reqwest::StatusCode::OK, Default::default(), futures::stream::iter(chunks)))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let model = Model::new("echo-1", "echo", "echo", "https://echo.invalid");
//! let context = Context::new().with_message(UserMessage::text("hello"));
//! let transport = Canned(&["data: {\"text\": \"hel", "lo\"}\n\ndata: {\"text\": \"!\"}\n", "\ndata: [DONE]\n\n"]);
//! let options = StreamOptions::new().with_api_key("k").with_transport(transport);
//! let reply = EchoApi.stream(&model, &context, &options).result().await;
//! assert_eq!(reply.text(), "hello!");
//! # }
//! ```

pub(crate) mod cloudflare;
pub(crate) mod copilot;
mod driver;
mod json_repair;
// For the fuzz targets (`crate::__fuzz`): the driver's decoding without HTTP.
#[cfg(any(
    feature = "anthropic",
    feature = "openai",
    feature = "google",
    feature = "bedrock",
    feature = "mistral"
))]
pub(crate) mod replay;
mod send;
mod status;
mod transport;

pub use driver::{Decoder, Emit, Framing, LARGE_EVENT, stream_http};
pub(crate) use json_repair::repair_json;
/// The reqwest version the transport types come from (`StatusCode`, `HeaderMap`, `Url`,
/// `ClientBuilder`), so an application needs no version-matched dependency of its own.
pub use reqwest;
pub use send::HttpRequest;
#[cfg(feature = "bedrock")]
pub(crate) use send::RequestSigner;
#[cfg(test)]
pub(crate) use send::header_in;
pub(crate) use status::stream_event_error;
pub use transport::{
    HttpTransport, ReqwestTransport, ResponseBody, SharedTransport, TransportRequest,
    TransportResponse,
};
