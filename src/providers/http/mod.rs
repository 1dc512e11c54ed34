//! The HTTP machinery shared by the built-in providers (cargo feature `http`).
//!
//! # How to write a provider
//!
//! A provider is two small halves around this module; [`anthropic`](super::anthropic) is the
//! reference to copy from.
//!
//! 1. **Encode**: a function `(model, context, options) -> Result<HttpRequest, Error>` that
//!    resolves the key with [`resolve_api_key`](crate::llm::resolve_api_key), runs
//!    [`transform_messages`](super::transform::transform_messages) with the provider's
//!    tool-call id rule, builds the JSON body exactly as pi does (compare with the recorded
//!    bodies in `../shared/conformance/pi/`), and returns
//!    `HttpRequest::post_json(url, body).header(..)` with the provider's own headers (auth,
//!    version, betas). Do not add the model's or the options' headers, `content-type`, or
//!    call `on_payload`: [`HttpRequest::prepare`] does that for every provider.
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
//! never retried), HTTP error statuses turned into typed [`Error`]s with the provider's text
//! and request id (HTML pages summarized; an error body read within its own deadline), a
//! success that is not an event stream (an HTML page, a JSON error), a broken connection,
//! the idle timeout between events (keep-alive comments do not count), an event too large
//! for the SSE decoder, cancellation at any point (open blocks ended, then stop reason
//! `aborted`, "Request was aborted"), all ending with an `error` event that keeps the
//! partial message; junk after the provider's final event is ignored. A decoder never sees
//! a network error and never has to think about cancellation.
//!
//! Tests: a decoder is unit-tested by feeding SSE text through [`stream_http`] against the
//! local servers of `tests/support/`; the faults are tested once, for every wire format, in
//! `tests/faults.rs` (and `tests/http_faults.rs` for retries and connection reuse).

pub(crate) mod cloudflare;
pub(crate) mod copilot;
mod driver;
mod json_repair;
// For the fuzz targets (`crate::__fuzz`): the driver's decoding without HTTP.
#[cfg(any(feature = "anthropic", feature = "openai", feature = "google"))]
pub(crate) mod replay;
mod status;
mod transport;

pub(crate) use driver::{Decoder, Emit, stream_http};
pub(crate) use json_repair::repair_json;
pub(crate) use status::stream_event_error;
pub(crate) use transport::HttpRequest;
#[cfg(test)]
pub(crate) use transport::header_in;
