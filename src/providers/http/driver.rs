//! The pull-based stream every HTTP provider returns: response bytes → SSE events → the
//! provider's [`Decoder`] → [`AssistantMessageEvent`]s, driven by the consumer's polls.
//!
//! Nothing is spawned and no channel carries the events: when the consumer asks for the next
//! event, the driver hands out one the decoder already produced, or decodes the next SSE
//! event, or reads the next network chunk. Faults are handled here, once for every
//! provider: the request's failure (after its retries), a broken connection, a stall longer
//! than the idle timeout (only events count as progress, not keep-alive comments), an event
//! larger than the SSE decoder takes, a cancelled token, and the decoder's own errors all
//! end the stream with an `error` event whose message keeps the content streamed so far.
//! Once the decoder has seen the provider's final event, what follows (junk, a reset) is
//! logged and ignored: the reply is complete. An abort first ends the blocks that are still
//! open (`*_end` with their content so far), then sends the `aborted` error.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::send::{HttpRequest, Opened, idle_timeout_error};
use super::transport::ResponseBody;
use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::{AssistantMessageEvent, PartialMessage};
use crate::llm::event_stream::{AssistantMessageEventStream, EventStream};
use crate::llm::message::AssistantContent;
use crate::llm::message::{AssistantMessage, StopReason};
use crate::llm::model::Model;
use crate::llm::options::StreamOptions;
use crate::llm::redact::Secrets;
use crate::providers::sse::{SseDecoder, SseEvent};

/// The wire-format half of a provider: turns the SSE events of one response into
/// [`AssistantMessageEvent`]s. Everything else (HTTP, retries, timeouts, cancellation, the
/// final message) is the driver's.
pub trait Decoder: Send + 'static {
    /// Handles one SSE event, pushing zero or more events to `out`. An `Err` ends the stream
    /// with an `error` event (the events already pushed are delivered first).
    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Emit<'_>) -> Result<(), Error>;

    /// Whether an event named `name` (the SSE `event:` field) whose data is at least
    /// [`LARGE_EVENT`] bytes goes to [`on_large_event`](Self::on_large_event), owned.
    fn wants_large_event(&self, _name: &[u8]) -> bool {
        false
    }

    /// An event whose data is at least [`LARGE_EVENT`] bytes, handed over: a decoder that
    /// reads a long string out of it can unescape it in place instead of into a copy, so
    /// that a reply repeated whole at the end of a stream (Responses' `output_item.done`)
    /// is not held three times (wire, message, copy). By default it is read as any event.
    fn on_large_event(
        &mut self,
        name: &[u8],
        data: Vec<u8>,
        out: &mut Emit<'_>,
    ) -> Result<(), Error> {
        self.on_event(SseEvent::new(name, &data), out)
    }

    /// The body ended. `Ok` ends the stream with `done`; `Err` (a stream cut before its
    /// final event, a refusal, …) with `error`. May push last events (e.g. `*_end` of open
    /// blocks) before returning.
    fn on_end(&mut self, out: &mut Emit<'_>) -> Result<(), Error>;

    /// True once the provider's final event arrived: silence after it is the end of the
    /// stream, not a timeout.
    fn is_complete(&self) -> bool;

    /// Writes what the decoder tracked outside the events into the final (or failed)
    /// message: usage and cost, stop reason, response id, signatures.
    fn finish(&mut self, message: &mut AssistantMessage);

    /// How the response body is cut into events: server-sent events (the default), or
    /// AWS's binary event stream, whose frames reach [`on_event`](Self::on_event) as
    /// events too (see [`Framing::AwsEventStream`]).
    fn framing(&self) -> Framing {
        Framing::Sse
    }
}

/// How a response body is cut into the events a [`Decoder`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Framing {
    /// Server-sent events (`text/event-stream`): every provider but Bedrock.
    #[default]
    Sse,
    /// AWS event-stream frames (`application/vnd.amazon.eventstream`), CRC-checked: an
    /// `event` frame is an event named by its `:event-type`, an `exception` frame one named
    /// by its `:exception-type`, and an `error` frame an event named `error` whose data is
    /// `{"code", "message"}` (see
    /// [`EventStreamDecoder`](crate::providers::bedrock::eventstream::EventStreamDecoder)).
    #[cfg(feature = "bedrock")]
    #[cfg_attr(docsrs, doc(cfg(feature = "bedrock")))]
    AwsEventStream,
}

/// The framing decoder of a [`Framing`].
enum Frames {
    Sse(SseDecoder),
    #[cfg(feature = "bedrock")]
    Aws(crate::providers::bedrock::eventstream::EventStreamDecoder),
}

impl Frames {
    fn new(framing: Framing) -> Self {
        match framing {
            Framing::Sse => Frames::Sse(SseDecoder::new()),
            #[cfg(feature = "bedrock")]
            Framing::AwsEventStream => {
                Frames::Aws(crate::providers::bedrock::eventstream::EventStreamDecoder::new())
            }
        }
    }

    fn next_event(&mut self) -> Option<SseEvent<'_>> {
        match self {
            Frames::Sse(d) => d.next_event(),
            #[cfg(feature = "bedrock")]
            Frames::Aws(d) => d.next_event(),
        }
    }

    fn error(&self) -> Option<String> {
        match self {
            Frames::Sse(d) => d.error().map(ToString::to_string),
            #[cfg(feature = "bedrock")]
            Frames::Aws(d) => d.error().map(ToString::to_string),
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        match self {
            Frames::Sse(d) => d.feed(chunk),
            #[cfg(feature = "bedrock")]
            Frames::Aws(d) => d.feed(chunk),
        }
    }

    fn finish(&mut self) {
        match self {
            Frames::Sse(d) => d.finish(),
            #[cfg(feature = "bedrock")]
            Frames::Aws(d) => d.finish(),
        }
    }

    fn take_last_data(&mut self) -> Option<Vec<u8>> {
        match self {
            Frames::Sse(d) => d.take_last_data(),
            #[cfg(feature = "bedrock")]
            Frames::Aws(_) => None,
        }
    }

    /// An empty decoder of the same framing (releasing the buffer).
    fn reset(&mut self) {
        *self = match self {
            Frames::Sse(_) => Frames::Sse(SseDecoder::new()),
            #[cfg(feature = "bedrock")]
            Frames::Aws(_) => {
                Frames::Aws(crate::providers::bedrock::eventstream::EventStreamDecoder::new())
            }
        };
    }
}

/// Where a [`Decoder`] pushes events; also its view of the message as the consumer sees it.
#[derive(Debug)]
pub struct Emit<'a> {
    queue: &'a mut VecDeque<AssistantMessageEvent>,
    state: &'a PartialMessage,
}

impl<'a> Emit<'a> {
    /// An `Emit` outside the driver, for decoder unit tests.
    #[cfg(test)]
    pub(crate) fn new(
        queue: &'a mut VecDeque<AssistantMessageEvent>,
        state: &'a PartialMessage,
    ) -> Self {
        Emit { queue, state }
    }

    /// Queues an event.
    pub fn push(&mut self, event: AssistantMessageEvent) {
        self.queue.push_back(event);
    }

    /// The message built from every event pushed for *earlier* SSE events (not those pushed
    /// during the current call). Use it to fill `*_end` events without keeping a copy of the
    /// content in the decoder.
    pub fn message(&self) -> &AssistantMessage {
        self.state.message()
    }

    /// The raw argument text streamed so far for the tool call at `index` (same rule as
    /// [`message`](Self::message)).
    pub fn tool_arguments_text(&self, index: usize) -> Option<&str> {
        self.state.tool_arguments_text(index)
    }
}

/// The size from which an event's data is handed to [`Decoder::on_large_event`].
pub const LARGE_EVENT: usize = 1 << 20;

/// The message text of an aborted call (pi's wording).
pub(crate) const ABORTED: &str = "Request was aborted";

/// Streams one HTTP request through `decoder`. `request` is the provider's request, or the
/// error that prevented building it (missing key, bad options): then the stream's only
/// event is that `error`.
///
/// The request is sent through `options.transport` (the default [`ReqwestTransport`]
/// otherwise) when the stream is first polled, with `options`' retry policy, idle timeout,
/// error-body deadline and cancellation token; see the [module](super) for every fault it
/// handles. Nothing is spawned: dropping the stream drops the request or the connection, and
/// a cancelled token ends it with `aborted` and the content so far.
///
/// [`ReqwestTransport`]: super::ReqwestTransport
pub fn stream_http<D: Decoder>(
    model: &Model,
    options: &StreamOptions,
    request: Result<HttpRequest, Error>,
    decoder: D,
) -> AssistantMessageEventStream {
    let initial = AssistantMessage::new(&model.api, &model.provider, &model.id);
    let prepared = match request.and_then(|r| r.prepare(model, options)) {
        Ok(prepared) => prepared,
        Err(error) => return AssistantMessageEventStream::failed(initial, error),
    };
    let idle = prepared.idle_timeout;
    let secrets = prepared.secrets.clone();
    let mut driver = Driver {
        phase: Phase::Connecting(Box::pin(prepared.send())),
        decoding: Decoding::new(decoder),
        token: options.cancel.clone(),
        cancelled: None,
        idle,
        open: Vec::new(),
        secrets,
    };
    EventStream::from_poll_fn(PartialMessage::new(initial), move |state, cx| {
        driver.poll(state, cx)
    })
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<Opened, Error>> + Send>>;

enum Phase {
    /// Sending, retrying, waiting for the response head.
    Connecting(ResponseFuture),
    /// Reading the body; `timer` fires after `idle` without an event (keep-alive comments
    /// and partial events do not count).
    Streaming {
        body: ResponseBody,
        timer: Pin<Box<Sleep>>,
    },
    /// The connection is released.
    Finished,
}

struct Driver<D> {
    phase: Phase,
    decoding: Decoding<D>,
    token: Option<CancellationToken>,
    cancelled: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    idle: Duration,
    /// Blocks started and not ended, in the events handed out: `(content index, kind)`.
    open: Vec<(usize, BlockKind)>,
    /// The request's key and credential headers, scrubbed from the final error.
    secrets: Secrets,
}

/// The kind of an open block, for the `*_end` an abort sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolCall,
}

impl<D: Decoder> Driver<D> {
    fn poll(
        &mut self,
        state: &PartialMessage,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<AssistantMessageEvent>> {
        loop {
            if let Some(event) = self.decoding.queue.pop_front() {
                self.track(&event);
                return Poll::Ready(Some(event));
            }
            if let Some(end) = self.decoding.end.take() {
                self.phase = Phase::Finished;
                let end = end.map_err(|error| error.scrubbed(&self.secrets));
                return Poll::Ready(Some(self.decoding.final_event(end, state)));
            }
            if matches!(self.phase, Phase::Finished) {
                return Poll::Ready(None);
            }
            if self.token.as_ref().is_some_and(|t| t.is_cancelled()) {
                self.abort(state);
                continue;
            }
            let waiting = match &mut self.phase {
                Phase::Connecting(response) => match response.as_mut().poll(cx) {
                    Poll::Ready(Ok(Opened { body, prefix })) => {
                        self.decoding.queue.push_back(AssistantMessageEvent::Start);
                        self.decoding.feed(&prefix);
                        let timer = Box::pin(tokio::time::sleep(self.idle));
                        self.phase = Phase::Streaming { body, timer };
                        false
                    }
                    Poll::Ready(Err(error)) => {
                        self.decoding.end = Some(Err(error));
                        self.phase = Phase::Finished;
                        false
                    }
                    Poll::Pending => true,
                },
                Phase::Streaming { body, timer } => {
                    let decoding = &mut self.decoding;
                    if decoding.step(state) {
                        continue;
                    }
                    // Only events are progress: a stream of keep-alive comments (or of one
                    // endless line) times out like a silent one. The timer is reset once
                    // per network chunk, not per event.
                    if decoding.take_progress() {
                        timer.as_mut().reset(Instant::now() + self.idle);
                    }
                    match body.as_mut().poll_next(cx) {
                        Poll::Ready(Some(Ok(chunk))) => {
                            decoding.feed(&chunk);
                            false
                        }
                        Poll::Ready(Some(Err(error))) => {
                            decoding.lost(error);
                            false
                        }
                        Poll::Ready(None) => {
                            decoding.finish_input();
                            false
                        }
                        Poll::Pending => {
                            if timer.as_mut().poll(cx).is_ready() {
                                decoding.stalled(state, idle_timeout_error(self.idle));
                                false
                            } else {
                                true
                            }
                        }
                    }
                }
                Phase::Finished => false,
            };
            if waiting {
                if self.poll_cancelled(cx) {
                    self.abort(state);
                    continue;
                }
                return Poll::Pending;
            }
        }
    }

    /// Registers for cancellation; true when the token is cancelled.
    fn poll_cancelled(&mut self, cx: &mut TaskContext<'_>) -> bool {
        let Some(token) = &self.token else {
            return false;
        };
        let cancelled = self
            .cancelled
            .get_or_insert_with(|| Box::pin(token.clone().cancelled_owned()));
        cancelled.as_mut().poll(cx).is_ready()
    }

    /// Follows which blocks the consumer has seen start and not end.
    fn track(&mut self, event: &AssistantMessageEvent) {
        use AssistantMessageEvent as E;
        let started = match event {
            E::TextStart { content_index } => Some((*content_index, BlockKind::Text)),
            E::ThinkingStart { content_index } => Some((*content_index, BlockKind::Thinking)),
            E::ToolcallStart { content_index, .. } => Some((*content_index, BlockKind::ToolCall)),
            E::TextEnd { content_index, .. }
            | E::ThinkingEnd { content_index, .. }
            | E::ToolcallEnd { content_index, .. } => {
                let index = *content_index;
                self.open.retain(|(i, _)| *i != index);
                None
            }
            _ => None,
        };
        if let Some((index, kind)) = started {
            self.open.retain(|(i, _)| *i != index);
            self.open.push((index, kind));
        }
    }

    /// Drops the connection and ends with `aborted`, keeping what was streamed: the blocks
    /// still open are ended first, with the content they have (pi sends only the `error`).
    fn abort(&mut self, state: &PartialMessage) {
        use AssistantMessageEvent as E;
        self.phase = Phase::Finished;
        self.decoding.queue.clear();
        let content = &state.message().content;
        for (index, kind) in std::mem::take(&mut self.open) {
            let end = match (kind, content.get(index)) {
                (BlockKind::Text, Some(AssistantContent::Text(t))) => E::TextEnd {
                    content_index: index,
                    content: t.text.clone(),
                },
                (BlockKind::Thinking, Some(AssistantContent::Thinking(t))) => E::ThinkingEnd {
                    content_index: index,
                    content: t.thinking.clone(),
                },
                (BlockKind::ToolCall, Some(AssistantContent::ToolCall(call))) => E::ToolcallEnd {
                    content_index: index,
                    tool_call: call.clone(),
                },
                _ => continue,
            };
            self.decoding.queue.push_back(end);
        }
        self.decoding.end = Some(Err(Error::new(ErrorKind::Aborted, ABORTED)));
    }
}

/// The decoding half of the driver, without I/O: response bytes in, events out. The driver
/// feeds it network chunks; [`replay`](super::replay) feeds it bytes (the fuzz targets and
/// tests), so both decode with exactly these steps.
pub(crate) struct Decoding<D> {
    decoder: D,
    sse: Frames,
    /// Events produced and not handed out yet.
    pub(crate) queue: VecDeque<AssistantMessageEvent>,
    /// How the stream ends, once known; delivered after `queue` drains.
    pub(crate) end: Option<Result<(), Error>>,
    /// The body ended (or is treated as ended).
    eof: bool,
    /// An event was decoded since [`take_progress`](Self::take_progress) was last called.
    progressed: bool,
}

impl<D: Decoder> Decoding<D> {
    pub(crate) fn new(decoder: D) -> Self {
        Decoding {
            sse: Frames::new(decoder.framing()),
            decoder,
            queue: VecDeque::new(),
            end: None,
            eof: false,
            progressed: false,
        }
    }

    /// Decodes what the bytes fed so far allow: the next whole SSE event, or the end of the
    /// stream (the body ended, or the SSE decoder refused it). True when it did something
    /// (look at [`queue`](Self::queue) and [`end`](Self::end) again); false when it needs
    /// more input ([`feed`](Self::feed) or [`finish_input`](Self::finish_input)).
    pub(crate) fn step(&mut self, state: &PartialMessage) -> bool {
        let Decoding {
            decoder,
            sse,
            queue,
            end,
            eof,
            progressed,
        } = self;
        // Only an SSE decoder can hand a long event's data over without a copy.
        let owned_data = matches!(sse, Frames::Sse(_));
        if let Some(event) = sse.next_event() {
            *progressed = true;
            // After the final event, what follows cannot spoil the reply.
            let complete = decoder.is_complete();
            let mut out = Emit { queue, state };
            let handled = if owned_data
                && event.data().len() >= LARGE_EVENT
                && decoder.wants_large_event(event.event_bytes())
            {
                let name = event.event_bytes().to_vec();
                let data = sse.take_last_data().unwrap_or_default();
                decoder.on_large_event(&name, data, &mut out)
            } else {
                decoder.on_event(event, &mut out)
            };
            match handled {
                Ok(()) => {}
                Err(error) if complete => {
                    tracing::warn!(
                        error = %error,
                        "ignoring an unreadable event after the provider's final event"
                    );
                }
                Err(error) => *end = Some(Err(error)),
            }
            return true;
        }
        if let Some(error) = sse.error() {
            let error = Error::new(
                ErrorKind::InvalidResponse,
                format!("Invalid event stream: {error}"),
            );
            *end = Some(if decoder.is_complete() {
                tracing::warn!(error = %error, "ignoring the rest of the stream after the provider's final event");
                decoder.on_end(&mut Emit { queue, state })
            } else {
                Err(error)
            });
            return true;
        }
        if *eof {
            *end = Some(decoder.on_end(&mut Emit { queue, state }));
            return true;
        }
        false
    }

    /// More of the body.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        self.sse.feed(chunk);
    }

    /// The body ended.
    pub(crate) fn finish_input(&mut self) {
        self.sse.finish();
        self.eof = true;
    }

    /// True (once) when an event was decoded since the last call: the idle timer's progress.
    pub(crate) fn take_progress(&mut self) -> bool {
        std::mem::take(&mut self.progressed)
    }

    /// The body broke off with `error`: the stream's end, unless the final event already
    /// arrived (then only the close failed).
    pub(crate) fn lost(&mut self, error: Error) {
        if self.decoder.is_complete() {
            tracing::warn!(error = %error, "connection lost after the provider's final event");
            self.finish_input();
        } else {
            self.end = Some(Err(error));
        }
    }

    /// The body stalled for the idle timeout: `error`, unless the final event already
    /// arrived (then only the close did not).
    pub(crate) fn stalled(&mut self, state: &PartialMessage, error: Error) {
        self.end = Some(if self.decoder.is_complete() {
            self.sse.finish();
            self.decoder.on_end(&mut Emit {
                queue: &mut self.queue,
                state,
            })
        } else {
            Err(error)
        });
    }

    /// The stream's last event, from how it ended and the message the consumer has.
    pub(crate) fn final_event(
        &mut self,
        end: Result<(), Error>,
        state: &PartialMessage,
    ) -> AssistantMessageEvent {
        // Nothing more is decoded: release the buffer before the final message is copied
        // (it may hold a long last event).
        self.sse.reset();
        let mut message = state.message().clone();
        self.decoder.finish(&mut message);
        let end = match end {
            Ok(()) if message.stop_reason.is_failure() => {
                Err(Error::new(ErrorKind::Provider, "An unknown error occurred"))
            }
            other => other,
        };
        match end {
            Ok(()) => AssistantMessageEvent::Done {
                reason: message.stop_reason.clone(),
                message: Box::new(message),
            },
            Err(error) => {
                message.set_error(error);
                AssistantMessageEvent::Error {
                    reason: if message.stop_reason == StopReason::Aborted {
                        StopReason::Aborted
                    } else {
                        StopReason::Error
                    },
                    error: Box::new(message),
                }
            }
        }
    }
}
