//! [`EventStream`]: an async stream of events that ends in a result.
//!
//! The LLM layer returns an [`AssistantMessageEventStream`] (events of one model reply,
//! ending in the final [`AssistantMessage`]); the agent layer returns an
//! `EventStream<AgentEvent, Vec<AgentMessage>>`. Both are the same type: a
//! [`Stream`] of events, plus [`result`](EventStream::result) to await the final value.
//!
//! A stream can be fed three ways:
//! * [`EventStream::from_stream`] wraps any `Stream` of events. Nothing runs until the
//!   consumer polls, so event *k + 1* is produced only after the consumer has handled
//!   event *k* (the built-in providers work this way).
//! * [`EventStream::from_future`] runs a producer future, driven by polling the stream, that
//!   pushes events through an [`EventSender`].
//! * [`EventStream::channel`] returns an [`EventSender`] for a producer running elsewhere
//!   (another task, a callback).
//!
//! Each event type says, through [`StreamEvent`], which events end the stream and how the
//! result is folded from the events. Events after the terminal one are ignored.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use crate::llm::event::{AssistantMessageEvent, PartialMessage};
use crate::llm::message::{AssistantMessage, StopReason};

/// An event type that can travel in an [`EventStream`] ending in a result of type `R`.
pub trait StreamEvent<R>: Sized + Send + 'static {
    /// What the stream folds from its events (the partial message for model replies).
    type State: Send + 'static;

    /// Folds `self` into `state`. Called for every event before the consumer sees it.
    fn observe(&self, state: &mut Self::State);

    /// True when this event ends the stream.
    fn is_terminal(&self) -> bool;

    /// The result, from the folded state. `terminated` is false when the producer stopped
    /// without sending a terminal event.
    fn finish(state: Self::State, terminated: bool) -> R;
}

type BoxStream<E> = Pin<Box<dyn Stream<Item = E> + Send>>;
type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
/// A pull source that reads the folded state (see [`EventStream::from_poll_fn`]).
type BoxPollFn<E, S> = Box<dyn FnMut(&S, &mut TaskContext<'_>) -> Poll<Option<E>> + Send + 'static>;

enum Source<E: StreamEvent<R>, R> {
    Stream(BoxStream<E>),
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // Used by the HTTP providers.
    PollFn(BoxPollFn<E, E::State>),
    Channel {
        rx: mpsc::UnboundedReceiver<Item<E>>,
        producer: Option<BoxFuture>,
    },
    Finished,
}

/// What travels from an [`EventSender`] to its stream: an event, or the terminal event to be
/// built from the state the stream has folded (the sender does not have it).
enum Item<E> {
    Event(E),
    /// Called with the stream's state (`&E::State`, as `Any`: the sender's type does not
    /// name the state's).
    FromState(BuildFromState<E>),
}

type BuildFromState<E> = Box<dyn FnOnce(&dyn Any) -> E + Send>;

/// An async stream of events `E` that ends in a result `R`.
///
/// Poll it as a [`Stream`] to see every event, or call [`result`](Self::result) to skip to the
/// end. Dropping it cancels the producer (for a model call: closes the HTTP request).
///
/// ```
/// use futures::StreamExt;
/// use pi_engine::llm::{AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream, PartialMessage, StopReason};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let initial = AssistantMessage::new("custom", "custom", "echo-1");
/// let (tx, mut stream) = AssistantMessageEventStream::channel(PartialMessage::new(initial));
/// tx.push(AssistantMessageEvent::Start);
/// tx.push(AssistantMessageEvent::TextStart { content_index: 0 });
/// tx.push(AssistantMessageEvent::TextDelta { content_index: 0, delta: "hi".into() });
/// assert!(matches!(stream.next().await, Some(AssistantMessageEvent::Start)));
/// stream.next().await;
/// stream.next().await;
/// assert_eq!(stream.partial().text(), "hi");
/// tx.done(StopReason::Stop); // the final message is the folded one
/// assert_eq!(stream.result().await.text(), "hi");
/// # }
/// ```
pub struct EventStream<E: StreamEvent<R>, R> {
    source: Source<E, R>,
    state: E::State,
    terminated: bool,
    /// False once the consumer has said it keeps its own fold (see `stop_folding`).
    fold: bool,
}

impl<E: StreamEvent<R>, R> fmt::Debug for EventStream<E, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("terminated", &self.terminated)
            .field("finished", &matches!(self.source, Source::Finished))
            .finish_non_exhaustive()
    }
}

impl<E: StreamEvent<R>, R> EventStream<E, R> {
    /// Wraps a stream of events. `state` is the initial folded state.
    pub fn from_stream(state: E::State, stream: impl Stream<Item = E> + Send + 'static) -> Self {
        EventStream {
            source: Source::Stream(Box::pin(stream)),
            state,
            terminated: false,
            fold: true,
        }
    }

    /// A pull source that sees the folded state: `poll` is called with the state as it stands
    /// after every event it produced before has been observed, so a producer can build
    /// `*_end` and final events from the state instead of keeping its own copy of the
    /// message (the built-in HTTP providers work this way: one copy of the reply, not two).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn from_poll_fn(
        state: E::State,
        poll: impl FnMut(&E::State, &mut TaskContext<'_>) -> Poll<Option<E>> + Send + 'static,
    ) -> Self {
        EventStream {
            source: Source::PollFn(Box::new(poll)),
            state,
            terminated: false,
            fold: true,
        }
    }

    /// Runs `producer` as the stream is polled; it pushes events through the sender it is
    /// given. The stream ends when the producer returns and its events are consumed, or at
    /// the terminal event.
    pub fn from_future<F, Fut>(state: E::State, producer: F) -> Self
    where
        F: FnOnce(EventSender<E>) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        let fut = producer(EventSender { tx });
        EventStream {
            source: Source::Channel {
                rx,
                producer: Some(Box::pin(fut)),
            },
            state,
            terminated: false,
            fold: true,
        }
    }

    /// A stream fed by the returned sender, from any task or thread. The stream ends at the
    /// terminal event, or when every sender is dropped.
    pub fn channel(state: E::State) -> (EventSender<E>, Self) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            EventSender { tx },
            EventStream {
                source: Source::Channel { rx, producer: None },
                state,
                terminated: false,
                fold: true,
            },
        )
    }

    /// The state folded from the events seen so far.
    pub fn state(&self) -> &E::State {
        &self.state
    }

    /// True once the terminal event has been yielded.
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Stops folding the events that follow into the state, for a consumer that rebuilds
    /// the result itself: the state (and `result`) then stay as they were. A source that
    /// reads the state keeps it folded: a pull source (the HTTP providers), and a channel,
    /// whose sender may end the stream from the state ([`EventSender::done`]).
    pub(crate) fn stop_folding(&mut self) {
        if matches!(self.source, Source::Stream(_)) {
            self.fold = false;
        }
    }

    /// Consumes the remaining events and returns the result.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the stream and with it the producer; the result is lost.
    pub async fn result(mut self) -> R {
        use futures::StreamExt;
        while self.next().await.is_some() {}
        E::finish(self.state, self.terminated)
    }

    fn poll_source(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<E>> {
        match &mut self.source {
            Source::Finished => Poll::Ready(None),
            Source::Stream(s) => s.as_mut().poll_next(cx),
            Source::PollFn(poll) => poll(&self.state, cx),
            Source::Channel { rx, producer } => {
                let state: &dyn Any = &self.state;
                let event = |item: Option<Item<E>>| {
                    item.map(|item| match item {
                        Item::Event(event) => event,
                        Item::FromState(build) => build(state),
                    })
                };
                if let Poll::Ready(item) = rx.poll_recv(cx) {
                    return Poll::Ready(event(item));
                }
                if let Some(fut) = producer {
                    if fut.as_mut().poll(cx).is_ready() {
                        *producer = None;
                    }
                    // The producer may have pushed, or finished and dropped its sender.
                    return rx.poll_recv(cx).map(event);
                }
                Poll::Pending
            }
        }
    }
}

impl<E: StreamEvent<R>, R> Unpin for EventStream<E, R> {}

impl<E: StreamEvent<R>, R> Stream for EventStream<E, R> {
    type Item = E;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<E>> {
        let this = self.get_mut();
        if this.terminated {
            return Poll::Ready(None);
        }
        match this.poll_source(cx) {
            Poll::Ready(Some(event)) => {
                if this.fold {
                    event.observe(&mut this.state);
                }
                if event.is_terminal() {
                    this.terminated = true;
                    // Release the producer (and its connection) right away.
                    this.source = Source::Finished;
                }
                Poll::Ready(Some(event))
            }
            Poll::Ready(None) => {
                this.source = Source::Finished;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The producer side of an [`EventStream`]. Cheap to clone.
pub struct EventSender<E> {
    tx: mpsc::UnboundedSender<Item<E>>,
}

impl<E> Clone for EventSender<E> {
    fn clone(&self) -> Self {
        EventSender {
            tx: self.tx.clone(),
        }
    }
}

impl<E> fmt::Debug for EventSender<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSender")
            .field("closed", &self.tx.is_closed())
            .finish()
    }
}

impl<E> EventSender<E> {
    /// Pushes an event. Returns false when the stream has been dropped (the event is
    /// discarded; a producer should stop).
    pub fn push(&self, event: E) -> bool {
        self.tx.send(Item::Event(event)).is_ok()
    }

    /// True when the consuming stream has been dropped.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Ends the stream from this sender's side (other clones may still push).
    pub fn end(self) {}
}

impl EventSender<AssistantMessageEvent> {
    /// Ends the reply with `done`: the final message is the one the stream folded from the
    /// events pushed before (their content, usage, ids), with `reason` as its stop reason.
    /// A custom provider needs no copy of the message of its own; building the `Done` by hand
    /// from the message it started with would replace the streamed content with nothing.
    /// Returns false when the stream has been dropped.
    ///
    /// ```
    /// use pi_engine::llm::{AssistantMessageEventStream, PartialMessage};
    /// use pi_engine::{AssistantMessage, AssistantMessageEvent as E, StopReason};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let (tx, stream) =
    ///     AssistantMessageEventStream::channel(PartialMessage::new(AssistantMessage::new("echo", "local", "echo-1")));
    /// tx.push(E::Start);
    /// tx.push(E::TextStart { content_index: 0 });
    /// tx.push(E::TextDelta { content_index: 0, delta: "hello".into() });
    /// tx.push(E::TextEnd { content_index: 0, content: "hello".into() });
    /// tx.done(StopReason::Stop);
    /// let reply = stream.result().await;
    /// assert_eq!((reply.text(), reply.stop_reason), ("hello".to_owned(), StopReason::Stop));
    /// # }
    /// ```
    pub fn done(&self, reason: StopReason) -> bool {
        self.end_from_state(move |partial| {
            let mut message = partial.message().clone();
            message.stop_reason = reason.clone();
            AssistantMessageEvent::Done {
                reason,
                message: Box::new(message),
            }
        })
    }

    /// Ends the reply with `error`: the final message is the one the stream folded, failed
    /// with `error` (stop reason `aborted` when `error` [is an abort](crate::Error::is_aborted),
    /// `error` otherwise), so the content streamed so far is kept. Returns false when the
    /// stream has been dropped.
    pub fn error(&self, error: crate::Error) -> bool {
        self.end_from_state(move |partial| {
            let message = partial.message().clone().with_error(error);
            AssistantMessageEvent::Error {
                reason: message.stop_reason.clone(),
                error: Box::new(message),
            }
        })
    }

    /// Ends the reply as the cancellation contract of
    /// [`ApiProvider`](crate::ApiProvider) asks: `error` with stop reason `aborted` and pi's
    /// text "Request was aborted", keeping the content streamed so far. Returns false when the
    /// stream has been dropped.
    pub fn aborted(&self) -> bool {
        self.error(crate::Error::new(
            crate::ErrorKind::Aborted,
            "Request was aborted",
        ))
    }

    fn end_from_state(
        &self,
        build: impl FnOnce(&PartialMessage) -> AssistantMessageEvent + Send + 'static,
    ) -> bool {
        let build = move |state: &dyn Any| match state.downcast_ref::<PartialMessage>() {
            Some(partial) => build(partial),
            // An assistant-message stream's state is always a `PartialMessage`.
            None => AssistantMessageEvent::Error {
                reason: StopReason::Error,
                error: Box::new(
                    AssistantMessage::new("", "", "").with_error(crate::Error::new(
                        crate::ErrorKind::Provider,
                        "internal: the stream's state is not a partial message",
                    )),
                ),
            },
        };
        self.tx.send(Item::FromState(Box::new(build))).is_ok()
    }
}

/// The stream of one model reply: [`AssistantMessageEvent`]s ending in the final
/// [`AssistantMessage`].
pub type AssistantMessageEventStream = EventStream<AssistantMessageEvent, AssistantMessage>;

impl StreamEvent<AssistantMessage> for AssistantMessageEvent {
    type State = PartialMessage;

    fn observe(&self, state: &mut PartialMessage) {
        state.apply(self);
    }

    fn is_terminal(&self) -> bool {
        AssistantMessageEvent::is_terminal(self)
    }

    fn finish(state: PartialMessage, terminated: bool) -> AssistantMessage {
        let mut message = state.into_message();
        if !terminated {
            message.set_error(crate::Error::new(
                crate::ErrorKind::InvalidResponse,
                "The stream ended without a final event",
            ));
        }
        message
    }
}

impl EventStream<AssistantMessageEvent, AssistantMessage> {
    /// The reply as it stands after the events yielded so far (after `done` or `error`:
    /// the final message). Borrowed, never copied.
    pub fn partial(&self) -> &AssistantMessage {
        self.state.message()
    }

    /// A stream whose only event is an `error` carrying `message` failed with `error`. This
    /// is how a call that fails before producing output (no API key, unknown api) reports.
    pub fn failed(message: AssistantMessage, error: crate::Error) -> Self {
        let failed = message.with_error(error);
        let reason = failed.stop_reason.clone();
        let event = AssistantMessageEvent::Error {
            reason,
            error: Box::new(failed),
        };
        let state = PartialMessage::new(match &event {
            AssistantMessageEvent::Error { error, .. } => {
                AssistantMessage::new(&error.api, &error.provider, &error.model)
            }
            _ => unreachable!("constructed above"),
        });
        EventStream::from_stream(state, futures::stream::iter([event]))
    }

    /// Awaits the final message and converts a failed one into its typed error.
    ///
    /// # Cancel safety
    ///
    /// As for [`result`](Self::result).
    pub async fn complete(self) -> Result<AssistantMessage, crate::Error> {
        self.result().await.into_result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::StopReason;
    use futures::StreamExt;

    #[tokio::test]
    async fn result_without_terminal_is_an_error() {
        let (tx, stream) = AssistantMessageEventStream::channel(PartialMessage::new(
            AssistantMessage::new("a", "p", "m"),
        ));
        tx.push(AssistantMessageEvent::Start);
        tx.push(AssistantMessageEvent::TextStart { content_index: 0 });
        tx.push(AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: "partial".into(),
        });
        drop(tx);
        let msg = stream.result().await;
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(msg.text(), "partial");
        assert!(msg.error_message.unwrap().contains("without a final event"));
    }

    #[tokio::test]
    async fn stop_folding_leaves_the_state_as_it_was() {
        use futures::StreamExt;
        let events = [
            AssistantMessageEvent::TextStart { content_index: 0 },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "seen".into(),
            },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: " unfolded".into(),
            },
        ];
        let mut stream = AssistantMessageEventStream::from_stream(
            PartialMessage::new(AssistantMessage::new("a", "p", "m")),
            futures::stream::iter(events),
        );
        stream.next().await.unwrap();
        stream.next().await.unwrap();
        stream.stop_folding();
        let event = stream.next().await.unwrap();
        assert!(matches!(event, AssistantMessageEvent::TextDelta { .. }));
        assert_eq!(stream.partial().text(), "seen");
    }

    #[tokio::test]
    async fn the_sender_ends_a_reply_from_the_folded_message() {
        let start = || PartialMessage::new(AssistantMessage::new("a", "p", "m"));
        let text = |tx: &EventSender<AssistantMessageEvent>| {
            tx.push(AssistantMessageEvent::Start);
            tx.push(AssistantMessageEvent::TextStart { content_index: 0 });
            tx.push(AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "kept".into(),
            });
        };
        let (tx, stream) = AssistantMessageEventStream::channel(start());
        text(&tx);
        assert!(tx.done(StopReason::Length));
        let events: Vec<_> = stream.collect().await;
        let Some(AssistantMessageEvent::Done { reason, message }) = events.last() else {
            panic!("{events:?}")
        };
        assert_eq!(
            (reason, message.text().as_str()),
            (&StopReason::Length, "kept")
        );
        assert_eq!(message.stop_reason, StopReason::Length);

        // The state is read when the terminal event is reached, even by a consumer that
        // stopped folding (a channel keeps its fold).
        let (tx, mut stream) = AssistantMessageEventStream::channel(start());
        text(&tx);
        tx.error(crate::Error::new(crate::ErrorKind::Overloaded, "busy"));
        stream.next().await;
        stream.stop_folding();
        let reply = stream.result().await;
        assert_eq!(reply.text(), "kept");
        assert_eq!(reply.stop_reason, StopReason::Error);
        assert_eq!(reply.error().unwrap().kind(), crate::ErrorKind::Overloaded);

        let (tx, stream) = AssistantMessageEventStream::channel(start());
        text(&tx);
        tx.aborted();
        let reply = stream.result().await;
        assert_eq!(reply.stop_reason, StopReason::Aborted);
        assert_eq!(reply.error_message.as_deref(), Some("Request was aborted"));
        assert_eq!(reply.text(), "kept");

        // After the stream is gone the helpers say so.
        let (tx, stream) = AssistantMessageEventStream::channel(start());
        drop(stream);
        assert!(!tx.done(StopReason::Stop));
    }

    #[tokio::test]
    async fn events_after_terminal_are_ignored() {
        let m = AssistantMessage::new("a", "p", "m");
        let events = vec![
            AssistantMessageEvent::Start,
            AssistantMessageEvent::Done {
                reason: StopReason::Stop,
                message: Box::new(m.clone()),
            },
            AssistantMessageEvent::Start,
        ];
        let mut s = AssistantMessageEventStream::from_stream(
            PartialMessage::new(m),
            futures::stream::iter(events),
        );
        assert_eq!(s.next().await.map(|e| e.kind()), Some("start"));
        assert_eq!(s.next().await.map(|e| e.kind()), Some("done"));
        assert!(s.next().await.is_none());
        assert!(s.is_terminated());
    }

    #[tokio::test]
    async fn from_future_is_driven_by_polling() {
        let m = AssistantMessage::new("a", "p", "m");
        let done = m.clone();
        let s = AssistantMessageEventStream::from_future(PartialMessage::new(m), |tx| async move {
            tx.push(AssistantMessageEvent::Start);
            tokio::task::yield_now().await;
            tx.push(AssistantMessageEvent::Done {
                reason: StopReason::Stop,
                message: Box::new(done),
            });
        });
        let msg = s.result().await;
        assert_eq!(msg.stop_reason, StopReason::Stop);
    }

    #[tokio::test]
    async fn failed_stream_has_one_error_event() {
        let s = AssistantMessageEventStream::failed(
            AssistantMessage::new("a", "p", "m"),
            crate::Error::new(crate::ErrorKind::Config, "No API key for provider: p"),
        );
        let events: Vec<_> = s.collect().await;
        assert_eq!(events.len(), 1);
        let AssistantMessageEvent::Error { reason, error } = &events[0] else {
            panic!()
        };
        assert_eq!(*reason, StopReason::Error);
        assert_eq!(error.error().unwrap().kind(), crate::ErrorKind::Config);
    }
}
