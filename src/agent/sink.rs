//! What the agent loop and the tool runner share: the sink the events of a run go to, the
//! emission of a message's start and end events, and the text of a caught panic. Both use it;
//! it uses neither (the loop calls the tool runner, not the other way round).

use std::any::Any;
use std::future::Future;

use crate::agent::config::MessageEndFn;
use crate::agent::event::AgentEvent;
use crate::agent::message::AgentMessage;

/// Receives the events of a run. Each `emit` is awaited before the loop goes on.
///
/// Events are lent, not given: the loop moves a message into an event, lends the event to
/// the sink and takes the message back, so no event costs a copy of its message. A sink that
/// keeps an event clones it.
///
/// Any `FnMut(&AgentEvent) -> impl Future<Output = ()>` is a sink (its future cannot borrow
/// the event: take what it needs first):
///
/// ```
/// use pi_engine::agent::{run_agent_loop, AgentContext, AgentEvent, AgentHooks, AgentLoopConfig};
/// use pi_engine::providers::faux::{FauxProvider, FauxResponse};
/// use pi_engine::{ApiProvider, CancellationToken, UserMessage};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("Hi!"));
/// let model = faux.model();
/// let config = AgentLoopConfig::new(model).with_hooks(
///     AgentHooks::new().with_stream_fn(move |m, c, o| faux.stream(m, c, o)),
/// );
/// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
/// let messages = run_agent_loop(
///     vec![UserMessage::text("Hello").into()],
///     AgentContext::new("Be brief."),
///     &config,
///     &CancellationToken::new(),
///     |event: &AgentEvent| {
///         let _ = tx.send(event.kind());
///         std::future::ready(())
///     },
/// )
/// .await;
/// assert_eq!(messages.len(), 2);
/// assert_eq!(rx.recv().await, Some("agent_start"));
/// # }
/// ```
pub trait AgentEventSink: Send {
    /// Handles one event; the loop waits for the returned future.
    fn emit(&mut self, event: &AgentEvent) -> impl Future<Output = ()> + Send;
}

impl<F, Fut> AgentEventSink for F
where
    F: FnMut(&AgentEvent) -> Fut + Send,
    Fut: Future<Output = ()> + Send,
{
    fn emit(&mut self, event: &AgentEvent) -> impl Future<Output = ()> + Send {
        self(event)
    }
}

/// Emits `message_start` (when `start`) and `message_end` for `message`, lending it to the
/// sink, and gives it back — or the replacement of the same role the `message_end` hook
/// returned, which `message_end` then carries.
pub(crate) async fn emit_message<E: AgentEventSink>(
    emit: &mut E,
    message: AgentMessage,
    start: bool,
    hook: Option<&MessageEndFn>,
) -> AgentMessage {
    let mut message = message;
    if start {
        let event = AgentEvent::MessageStart { message };
        emit.emit(&event).await;
        message = match event {
            AgentEvent::MessageStart { message } => message,
            _ => unreachable!("built above"),
        };
    }
    if let Some(hook) = hook
        && let Some(replacement) = hook(&message).await
    {
        // The loop relies on the role (a reply stays a reply, a result a result).
        if replacement.role() == message.role() {
            message = replacement;
        } else {
            tracing::warn!(
                role = message.role(),
                replacement = replacement.role(),
                "a message_end hook returned a message of another role; ignored"
            );
        }
    }
    let event = AgentEvent::MessageEnd { message };
    emit.emit(&event).await;
    match event {
        AgentEvent::MessageEnd { message } => message,
        _ => unreachable!("built above"),
    }
}

/// The text of a caught panic.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}
