//! The step-by-step handle: a test receives each call and answers it event by event.

use std::fmt;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::{AssistantMessageEvent, PartialMessage};
use crate::llm::event_stream::EventSender;
use crate::llm::message::{AssistantContent, AssistantMessage, StopReason, Usage};
use crate::providers::faux::{FauxRequest, FauxResponse};

/// Receives the calls a [`FauxProvider`](super::FauxProvider) makes once its queue is empty,
/// so a test can answer each one step by step (the shape of `tower_test::mock`).
///
/// ```
/// use pi_engine::providers::faux::FauxProvider;
/// use pi_engine::{ApiProvider, Context, StopReason, StreamOptions, UserMessage};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (faux, mut handle) = FauxProvider::with_handle();
/// let ctx = Context::new().with_message(UserMessage::text("ping"));
/// let stream = faux.stream(&faux.model(), &ctx, &StreamOptions::new());
///
/// let call = handle.next_call().await.unwrap();
/// assert_eq!(call.request().context.messages.len(), 1);
/// let mut reply = call.into_reply();
/// reply.text_delta("po");
/// reply.text_delta("ng");
/// reply.done(StopReason::Stop);
///
/// assert_eq!(stream.result().await.text(), "pong");
/// # }
/// ```
#[derive(Debug)]
pub struct FauxHandle {
    pub(super) rx: mpsc::UnboundedReceiver<FauxCall>,
}

impl FauxHandle {
    /// The next call, or `None` when the provider (and every clone) has been dropped.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a call not yet received stays queued.
    pub async fn next_call(&mut self) -> Option<FauxCall> {
        self.rx.recv().await
    }

    /// The next call if one is waiting.
    pub fn try_next_call(&mut self) -> Option<FauxCall> {
        self.rx.try_recv().ok()
    }
}

/// One call received through a [`FauxHandle`]: the request, and the means to answer it.
#[derive(Debug)]
pub struct FauxCall {
    pub(super) request: FauxRequest,
    pub(super) reply: FauxReply,
}

impl FauxCall {
    /// What was sent.
    pub fn request(&self) -> &FauxRequest {
        &self.request
    }

    /// The cancellation token of the call (cancelled when the caller aborts).
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.reply.cancel
    }

    /// Answers with a whole scripted response, streamed at once.
    pub fn respond(self, response: impl Into<FauxResponse>) {
        let mut reply = self.reply;
        match response.into() {
            FauxResponse::Message(m) => reply.message(m),
            FauxResponse::Error(e) => reply.error(e),
            FauxResponse::Respond(f) => {
                let r = f(&self.request);
                FauxCall {
                    request: self.request,
                    reply,
                }
                .respond(r)
            }
        }
    }

    /// Starts answering event by event.
    pub fn into_reply(self) -> FauxReply {
        self.reply
    }
}

/// Answers one call event by event. Methods open and close blocks as needed: a text delta
/// after a thinking delta closes the thinking block and opens a text block. Dropping the
/// reply without finishing it ends the stream with an error.
pub struct FauxReply {
    tx: EventSender<AssistantMessageEvent>,
    partial: PartialMessage,
    open: Option<usize>,
    started: bool,
    cancel: CancellationToken,
    finished: bool,
}

impl fmt::Debug for FauxReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FauxReply")
            .field("started", &self.started)
            .field("finished", &self.finished)
            .finish()
    }
}

impl FauxReply {
    pub(super) fn new(
        tx: EventSender<AssistantMessageEvent>,
        base: AssistantMessage,
        cancel: CancellationToken,
    ) -> Self {
        FauxReply {
            tx,
            partial: PartialMessage::new(base),
            open: None,
            started: false,
            cancel,
            finished: false,
        }
    }

    /// The cancellation token of the call.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The message sent so far.
    pub fn partial(&self) -> &AssistantMessage {
        self.partial.message()
    }

    fn send(&mut self, event: AssistantMessageEvent) {
        if self.finished {
            return;
        }
        if !self.started && !event.is_terminal() {
            self.started = true;
            self.partial.apply(&AssistantMessageEvent::Start);
            self.tx.push(AssistantMessageEvent::Start);
        }
        self.partial.apply(&event);
        if event.is_terminal() {
            self.finished = true;
        }
        self.tx.push(event);
    }

    /// Sends `start` if it has not been sent.
    pub fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.partial.apply(&AssistantMessageEvent::Start);
            self.tx.push(AssistantMessageEvent::Start);
        }
    }

    fn open_block(&mut self, kind: BlockKind) -> usize {
        if let Some(i) = self.open {
            if block_kind(&self.partial.message().content[i]) == kind {
                return i;
            }
            self.end_block();
        }
        let i = self.partial.message().content.len();
        self.send(match kind {
            BlockKind::Text => AssistantMessageEvent::TextStart { content_index: i },
            BlockKind::Thinking => AssistantMessageEvent::ThinkingStart { content_index: i },
            BlockKind::ToolCall => unreachable!("tool calls are opened by tool_call_start"),
            BlockKind::Unknown => unreachable!("blocks of unknown types are never opened"),
        });
        self.open = Some(i);
        i
    }

    /// Sends text (opening a text block if needed).
    pub fn text_delta(&mut self, delta: impl Into<String>) {
        let i = self.open_block(BlockKind::Text);
        self.send(AssistantMessageEvent::TextDelta {
            content_index: i,
            delta: delta.into(),
        });
    }

    /// Sends reasoning text (opening a thinking block if needed).
    pub fn thinking_delta(&mut self, delta: impl Into<String>) {
        let i = self.open_block(BlockKind::Thinking);
        self.send(AssistantMessageEvent::ThinkingDelta {
            content_index: i,
            delta: delta.into(),
        });
    }

    /// Opens a tool-call block.
    pub fn tool_call_start(&mut self, id: impl Into<String>, name: impl Into<String>) {
        if self.open.is_some() {
            self.end_block();
        }
        let i = self.partial.message().content.len();
        self.send(AssistantMessageEvent::ToolcallStart {
            content_index: i,
            id: id.into(),
            tool_name: name.into(),
        });
        self.open = Some(i);
    }

    /// Sends a fragment of the open tool call's JSON arguments.
    pub fn tool_call_delta(&mut self, fragment: impl Into<String>) {
        let Some(i) = self.open else { return };
        self.send(AssistantMessageEvent::ToolcallDelta {
            content_index: i,
            delta: fragment.into(),
        });
    }

    /// Sends a whole tool call (start, one delta with the JSON arguments, end).
    pub fn tool_call(&mut self, id: impl Into<String>, name: impl Into<String>, arguments: Value) {
        self.tool_call_start(id, name);
        self.tool_call_delta(serde_json::to_string(&arguments).unwrap_or_else(|_| "{}".into()));
        self.end_block();
    }

    /// Closes the open block with its `*_end` event.
    pub fn end_block(&mut self) {
        let Some(i) = self.open.take() else { return };
        let event = match &self.partial.message().content[i] {
            AssistantContent::Text(t) => AssistantMessageEvent::TextEnd {
                content_index: i,
                content: t.text.clone(),
            },
            AssistantContent::Thinking(t) => AssistantMessageEvent::ThinkingEnd {
                content_index: i,
                content: t.thinking.clone(),
            },
            AssistantContent::ToolCall(c) => {
                let mut call = c.clone();
                let text = self.partial.tool_arguments_text(i).unwrap_or("");
                call.arguments = crate::llm::json::parse_streaming_json(text);
                AssistantMessageEvent::ToolcallEnd {
                    content_index: i,
                    tool_call: call,
                }
            }
            // The partial is folded from this handle's events, which open no such block.
            AssistantContent::Unknown(_) => return,
        };
        self.send(event);
    }

    /// Sets the usage reported at the end.
    pub fn usage(&mut self, usage: Usage) {
        self.partial.message_mut().usage = usage;
    }

    /// Closes the open block and ends the reply with `done`.
    pub fn done(&mut self, reason: StopReason) {
        self.end_block();
        self.start();
        let mut message = self.partial.message().clone();
        message.stop_reason = reason.clone();
        self.send(AssistantMessageEvent::Done {
            reason,
            message: Box::new(message),
        });
    }

    /// Ends the reply with an `error` event (the partial content is kept).
    pub fn error(&mut self, message: impl Into<String>) {
        self.open = None;
        let failed = self
            .partial
            .message()
            .clone()
            .with_error(Error::from_message(message.into()));
        self.send(AssistantMessageEvent::Error {
            reason: failed.stop_reason.clone(),
            error: Box::new(failed),
        });
    }

    /// Ends the reply as aborted (the partial content is kept).
    pub fn abort(&mut self) {
        self.open = None;
        let failed = self
            .partial
            .message()
            .clone()
            .with_error(Error::new(ErrorKind::Aborted, "Request was aborted"));
        self.send(AssistantMessageEvent::Error {
            reason: StopReason::Aborted,
            error: Box::new(failed),
        });
    }

    /// Streams a whole message (each block in one delta) and finishes.
    pub fn message(&mut self, mut message: AssistantMessage) {
        drop_unknown_blocks(&mut message);
        for block in &message.content {
            match block {
                AssistantContent::Text(t) => self.text_delta(t.text.clone()),
                AssistantContent::Thinking(t) => self.thinking_delta(t.thinking.clone()),
                AssistantContent::ToolCall(c) => self.tool_call(
                    c.id.clone(),
                    c.name.clone(),
                    Value::Object(c.arguments.clone()),
                ),
                AssistantContent::Unknown(_) => {}
            }
        }
        self.end_block();
        let mut final_message = self.partial.message().clone();
        final_message.content = message.content;
        final_message.usage = message.usage;
        final_message.response_id = message.response_id;
        final_message.stop_reason = message.stop_reason.clone();
        final_message.error_message = message.error_message.clone();
        self.start();
        if message.stop_reason.is_failure() {
            let text = message.error_message.unwrap_or_else(|| "Faux error".into());
            final_message.set_error(if message.stop_reason == StopReason::Aborted {
                Error::new(ErrorKind::Aborted, text)
            } else {
                Error::from_message(text)
            });
            self.send(AssistantMessageEvent::Error {
                reason: final_message.stop_reason.clone(),
                error: Box::new(final_message),
            });
        } else {
            self.send(AssistantMessageEvent::Done {
                reason: final_message.stop_reason.clone(),
                message: Box::new(final_message),
            });
        }
    }
}

impl Drop for FauxReply {
    fn drop(&mut self) {
        if !self.finished {
            self.error("The faux reply was dropped before it finished");
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolCall,
    /// Never opened: [`drop_unknown_blocks`] removes such blocks before streaming.
    Unknown,
}

fn block_kind(block: &AssistantContent) -> BlockKind {
    match block {
        AssistantContent::Text(_) => BlockKind::Text,
        AssistantContent::Thinking(_) => BlockKind::Thinking,
        AssistantContent::ToolCall(_) => BlockKind::ToolCall,
        AssistantContent::Unknown(_) => BlockKind::Unknown,
    }
}

/// Removes the blocks of unknown types from a scripted reply (with a warning): the stream has
/// no events for them, so the faux provider never produces one.
pub(super) fn drop_unknown_blocks(message: &mut AssistantMessage) {
    message.content.retain(|block| {
        let unknown = matches!(block, AssistantContent::Unknown(_));
        if unknown {
            tracing::warn!(
                block_type = block.block_type(),
                "a faux reply's block of an unknown type is not streamed"
            );
        }
        !unknown
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::Context;
    use crate::llm::message::UserMessage;
    use crate::llm::options::StreamOptions;
    use crate::providers::ApiProvider;
    use crate::providers::faux::FauxProvider;
    use futures::StreamExt;

    fn ctx() -> Context {
        Context::new().with_message(UserMessage::text("hello"))
    }

    #[tokio::test]
    async fn handle_answers_step_by_step() {
        let (faux, mut handle) = FauxProvider::with_handle();
        let mut s = faux.stream(&faux.model(), &ctx(), &StreamOptions::new());
        let call = handle.next_call().await.unwrap();
        let mut reply = call.into_reply();
        reply.thinking_delta("hmm");
        reply.tool_call_start("t1", "write");
        reply.tool_call_delta(r#"{"path":"x","#);
        // Between events the consumer sees the partial arguments.
        for _ in 0..6 {
            s.next().await;
        }
        assert_eq!(
            s.partial().tool_calls().next().unwrap().arguments["path"],
            "x"
        );
        reply.tool_call_delta(r#""content":"y"}"#);
        reply.done(StopReason::ToolUse);
        let msg = s.result().await;
        assert_eq!(msg.content.len(), 2);
        assert_eq!(msg.tool_calls().next().unwrap().arguments["content"], "y");
    }

    #[tokio::test]
    async fn dropped_reply_is_an_error() {
        let (faux, mut handle) = FauxProvider::with_handle();
        let s = faux.stream(&faux.model(), &ctx(), &StreamOptions::new());
        let call = handle.next_call().await.unwrap();
        let mut reply = call.into_reply();
        reply.text_delta("partial");
        drop(reply);
        let msg = s.result().await;
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(msg.text(), "partial");
    }
}
