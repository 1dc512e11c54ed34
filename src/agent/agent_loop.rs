//! The agent loop: pi-agent-core's `runLoop`, as a library function.
//!
//! [`run_agent_loop`] is the core: an async function that awaits every event it emits, so the
//! receiver sets the pace (back-pressure) and can act at an exact point (a listener that
//! steers or aborts does so before the loop goes on). [`agent_loop`] wraps it in a pull-based
//! [`AgentEventStream`]: the loop produces event *k + 1* only after the consumer has taken
//! event *k*.
//!
//! The loop has two levels. The inner loop runs turns while the model calls tools or steering
//! messages are pending: inject the pending messages, stream the assistant reply, run its tool
//! calls, emit `turn_end`, poll steering. When the agent would stop, the outer loop polls
//! follow-up messages and, if there are any, goes round again.

use std::future::{Future, poll_fn};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use futures::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::agent::config::{AgentContext, AgentLoopConfig, Converter, TurnEndContext};
use crate::agent::event::{AgentEvent, AgentEventStream, AgentLoopState};
use crate::agent::message::AgentMessage;
use crate::agent::sink::{AgentEventSink, emit_message, panic_message};
use crate::agent::tool_exec::{ToolValidators, execute_tool_calls};
use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::AssistantMessageEvent;
use crate::llm::event_stream::{AssistantMessageEventStream, EventSender, EventStream};
use crate::llm::message::{AssistantMessage, Context, Message, ToolResultMessage};
use crate::llm::thinking::ThinkingLevel;

/// The reply being streamed as a sink rebuilds it from `message_start` and the
/// `message_update` events (`None` if it no longer has one). A run given one does not fold the
/// model stream a second time; it asks for it only when a reply ends without a final event.
pub(crate) type ReplyFold = Box<dyn Fn() -> Option<AssistantMessage> + Send + Sync>;

/// The text of an aborted model call, as pi's providers write it.
pub(crate) const ABORTED: &str = "Request was aborted";

/// Why a run cannot continue from a context.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// `prompt` was called while a run is active (pi's text).
    #[error(
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    )]
    AlreadyProcessing,
    /// `continue_run` was called while a run is active (pi's text).
    #[error("Agent is already processing. Wait for completion before continuing.")]
    AlreadyProcessingContinue,
    /// The agent has no messages to continue from.
    #[error("No messages to continue from")]
    NoMessages,
    /// The loop was asked to continue an empty context.
    #[error("Cannot continue: no messages in context")]
    EmptyContext,
    /// The conversation ends with an assistant message (and nothing is queued).
    #[error("Cannot continue from message role: {0}")]
    CannotContinueFrom(String),
}

/// Runs the loop for new `prompts`: emits `agent_start`, `turn_start` and the prompts'
/// `message_start`/`message_end`, then turns until the agent stops. Returns the messages the
/// run added (the prompts included), which are also the payload of `agent_end`.
///
/// Never fails: a failed model call ends the run with an error message and `agent_end`.
///
/// # Cancel safety
///
/// Dropping the future stops the run where it is (a model call in flight is closed, running
/// tools are dropped); no `agent_end` is emitted. Use `cancel` for an orderly abort.
pub async fn run_agent_loop<E: AgentEventSink>(
    prompts: Vec<AgentMessage>,
    context: AgentContext,
    config: &AgentLoopConfig,
    cancel: &CancellationToken,
    emit: E,
) -> Vec<AgentMessage> {
    run_prompts(prompts, context, config, cancel, emit, true, None).await
}

/// [`run_agent_loop`]; `keep` is false when the caller does not need the result (the
/// messages are then moved into `agent_end` instead of copied).
pub(crate) async fn run_prompts<E: AgentEventSink>(
    prompts: Vec<AgentMessage>,
    context: AgentContext,
    config: &AgentLoopConfig,
    cancel: &CancellationToken,
    emit: E,
    keep: bool,
    reply_fold: Option<ReplyFold>,
) -> Vec<AgentMessage> {
    let mut run = Run::new(context, config, cancel, emit, keep, reply_fold);
    run.emit(&AgentEvent::AgentStart).await;
    run.emit(&AgentEvent::TurnStart).await;
    for prompt in prompts {
        run.add_message(prompt).await;
    }
    run.run_loop().await;
    run.result
}

/// Continues from `context` without adding a message (a retry after an error, or after tool
/// results were added). Emits `agent_start` and `turn_start`, then runs like
/// [`run_agent_loop`].
///
/// # Errors
///
/// [`AgentError::EmptyContext`] for an empty context, and
/// [`AgentError::CannotContinueFrom`] when the last message is an assistant message.
///
/// # Cancel safety
///
/// As for [`run_agent_loop`].
pub async fn run_agent_loop_continue<E: AgentEventSink>(
    context: AgentContext,
    config: &AgentLoopConfig,
    cancel: &CancellationToken,
    emit: E,
) -> Result<Vec<AgentMessage>, AgentError> {
    run_continue(context, config, cancel, emit, true, None).await
}

/// [`run_agent_loop_continue`], with `keep` as for [`run_prompts`].
pub(crate) async fn run_continue<E: AgentEventSink>(
    context: AgentContext,
    config: &AgentLoopConfig,
    cancel: &CancellationToken,
    emit: E,
    keep: bool,
    reply_fold: Option<ReplyFold>,
) -> Result<Vec<AgentMessage>, AgentError> {
    check_continue(&context)?;
    let mut run = Run::new(context, config, cancel, emit, keep, reply_fold);
    run.emit(&AgentEvent::AgentStart).await;
    run.emit(&AgentEvent::TurnStart).await;
    run.run_loop().await;
    Ok(run.result)
}

/// Starts the loop for new `prompts`, returning its events as a pull-based stream that ends
/// with `agent_end` and [`result`](EventStream::result)s in the run's messages. The loop runs
/// as the stream is polled.
///
/// ```
/// use futures::StreamExt;
/// use pi_engine::agent::{agent_loop, AgentContext, AgentHooks, AgentLoopConfig};
/// use pi_engine::providers::faux::{FauxProvider, FauxResponse};
/// use pi_engine::{ApiProvider, CancellationToken, UserMessage};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("Hello there"));
/// let config = AgentLoopConfig::new(faux.model())
///     .with_hooks(AgentHooks::new().with_stream_fn(move |m, c, o| faux.stream(m, c, o)));
/// let mut events = agent_loop(
///     vec![UserMessage::text("Hi").into()],
///     AgentContext::new("Be brief."),
///     config,
///     CancellationToken::new(),
/// );
/// let mut streamed = String::new();
/// while let Some(event) = events.next().await {
///     if let Some(delta) = event.text_delta() {
///         streamed.push_str(delta);
///         // The message as it stands, borrowed:
///         assert!(events.streaming_message().unwrap().text().ends_with(delta));
///     }
/// }
/// assert_eq!(streamed, "Hello there");
/// assert_eq!(events.result().await.len(), 2);
/// # }
/// ```
pub fn agent_loop(
    prompts: Vec<AgentMessage>,
    context: AgentContext,
    config: AgentLoopConfig,
    cancel: CancellationToken,
) -> AgentEventStream {
    EventStream::from_future(AgentLoopState::new(), move |tx| async move {
        run_prompts(
            prompts,
            context,
            &config,
            &cancel,
            PullSink(tx),
            false,
            None,
        )
        .await;
    })
}

/// Like [`agent_loop`], continuing from `context` (see [`run_agent_loop_continue`]).
///
/// # Errors
///
/// As for [`run_agent_loop_continue`], checked before the stream is created.
pub fn agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    cancel: CancellationToken,
) -> Result<AgentEventStream, AgentError> {
    check_continue(&context)?;
    Ok(EventStream::from_future(
        AgentLoopState::new(),
        move |tx| async move {
            let _ = run_continue(context, &config, &cancel, PullSink(tx), false, None).await;
        },
    ))
}

fn check_continue(context: &AgentContext) -> Result<(), AgentError> {
    match context.messages.last() {
        None => Err(AgentError::EmptyContext),
        Some(AgentMessage::Assistant(_)) => Err(AgentError::CannotContinueFrom("assistant".into())),
        Some(_) => Ok(()),
    }
}

/// Pushes each event and yields once, so the loop goes on only when the consumer polls again
/// (after it has handled the event).
struct PullSink(EventSender<AgentEvent>);

impl AgentEventSink for PullSink {
    fn emit(&mut self, event: &AgentEvent) -> impl Future<Output = ()> + Send {
        let pushed = self.0.push(event.clone());
        YieldOnce(!pushed)
    }
}

/// Pending once (waking itself), then ready.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The messages sent to the model, kept between turns so that only new messages are
/// converted (unless a hook needs the whole list).
struct LlmContext {
    context: Context,
    /// How many agent messages `context.messages` reflects; `None` after a whole-list rebuild.
    converted: Option<usize>,
}

/// One run in progress.
struct Run<'c, E> {
    context: AgentContext,
    config: &'c AgentLoopConfig,
    cancel: &'c CancellationToken,
    emit: E,
    /// Index in `context.messages` of the first message this run added.
    start: usize,
    /// Whether the caller wants the run's messages back (else they move into `agent_end`).
    keep: bool,
    result: Vec<AgentMessage>,
    llm: LlmContext,
    /// The tools' argument validators, compiled on first use.
    validators: ToolValidators,
    turns: usize,
    /// The last `message_start` copy of a reply, whose buffers the next one reuses.
    spare: Option<AssistantMessage>,
    /// The sink's own fold of the streamed reply, if it keeps one.
    reply_fold: Option<ReplyFold>,
}

enum Next {
    Event(AssistantMessageEvent),
    End,
    Aborted,
    Panicked(String),
}

impl<'c, E: AgentEventSink> Run<'c, E> {
    fn new(
        context: AgentContext,
        config: &'c AgentLoopConfig,
        cancel: &'c CancellationToken,
        emit: E,
        keep: bool,
        reply_fold: Option<ReplyFold>,
    ) -> Self {
        let tools = context.tool_definitions();
        let llm = Context {
            system_prompt: Some(context.system_prompt.clone()).filter(|s| !s.is_empty()),
            messages: Vec::new(),
            tools: Some(tools).filter(|t| !t.is_empty()),
        };
        Run {
            validators: ToolValidators::new(&context),
            start: context.messages.len(),
            context,
            config,
            cancel,
            emit,
            keep,
            result: Vec::new(),
            llm: LlmContext {
                context: llm,
                converted: Some(0),
            },
            turns: 0,
            spare: None,
            reply_fold,
        }
    }

    async fn emit(&mut self, event: &AgentEvent) {
        self.emit.emit(event).await;
    }

    /// Emits `message_start` + `message_end` for a message and adds it to the conversation.
    async fn add_message(&mut self, message: AgentMessage) {
        let hook = self.config.hooks.message_end.clone();
        let message = emit_message(&mut self.emit, message, true, hook.as_deref()).await;
        self.context.messages.push(message);
    }

    /// Emits `turn_end` for the reply, which is last in the conversation, and the tool
    /// results, which are then added after it. Both are lent to the event, not copied.
    async fn turn_end(&mut self, tool_results: Vec<ToolResultMessage>) {
        let Some(AgentMessage::Assistant(message)) = self.context.messages.pop() else {
            unreachable!("the reply is the last message of the conversation")
        };
        let event = AgentEvent::TurnEnd {
            message,
            tool_results,
        };
        self.emit(&event).await;
        let AgentEvent::TurnEnd {
            message,
            tool_results,
        } = event
        else {
            unreachable!("built above")
        };
        self.context.messages.push(AgentMessage::Assistant(message));
        self.context
            .messages
            .extend(tool_results.into_iter().map(AgentMessage::ToolResult));
    }

    /// The messages this run has added so far.
    fn new_messages(&self) -> &[AgentMessage] {
        &self.context.messages[self.start..]
    }

    /// The assistant message at `index` of the conversation.
    fn assistant(&self, index: usize) -> &AssistantMessage {
        match &self.context.messages[index] {
            AgentMessage::Assistant(m) => m,
            _ => unreachable!("the index of a reply the run added"),
        }
    }

    fn poll_steering(&self) -> Vec<AgentMessage> {
        self.config
            .steering
            .as_ref()
            .map(|f| f())
            .unwrap_or_default()
    }

    async fn run_loop(&mut self) {
        let mut first_turn = true;
        let mut pending = self.poll_steering();
        loop {
            let mut has_more_tool_calls = true;
            while has_more_tool_calls || !pending.is_empty() {
                if first_turn {
                    first_turn = false;
                } else {
                    self.emit(&AgentEvent::TurnStart).await;
                }
                for message in std::mem::take(&mut pending) {
                    self.add_message(message).await;
                }

                self.stream_assistant_response().await;
                let reply = self.context.messages.len() - 1;
                if self.assistant(reply).stop_reason.is_failure() {
                    self.turn_end(Vec::new()).await;
                    self.end().await;
                    return;
                }

                let mut tool_results = Vec::new();
                has_more_tool_calls = false;
                if self.assistant(reply).tool_calls().next().is_some() {
                    let message = match &self.context.messages[reply] {
                        AgentMessage::Assistant(m) => m,
                        _ => unreachable!("the index of the reply"),
                    };
                    let batch = execute_tool_calls(
                        &self.context,
                        &self.validators,
                        message,
                        self.config,
                        self.cancel,
                        &mut self.emit,
                    )
                    .await;
                    has_more_tool_calls = !batch.terminate;
                    tool_results = batch.messages;
                }
                self.turns += 1;
                // Only the hook needs the results after the event (typed, so copied).
                let hook_results = self
                    .config
                    .hooks
                    .should_stop_after_turn
                    .as_ref()
                    .map(|_| tool_results.clone());
                self.turn_end(tool_results).await;
                if self.should_stop(reply, hook_results.as_deref().unwrap_or_default()) {
                    self.end().await;
                    return;
                }
                pending = self.poll_steering();
            }
            let follow_ups = self
                .config
                .follow_up
                .as_ref()
                .map(|f| f())
                .unwrap_or_default();
            if follow_ups.is_empty() {
                break;
            }
            pending = follow_ups;
        }
        self.end().await;
    }

    /// `should_stop_after_turn` (called after `turn_end`, as pi does) or the turn limit.
    fn should_stop(&self, reply: usize, tool_results: &[ToolResultMessage]) -> bool {
        if self.config.max_turns.is_some_and(|max| self.turns >= max) {
            return true;
        }
        let Some(hook) = &self.config.hooks.should_stop_after_turn else {
            return false;
        };
        let cx = TurnEndContext {
            message: self.assistant(reply),
            tool_results,
            context: &self.context,
            new_messages: self.new_messages(),
            turns: self.turns,
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| hook(&cx))) {
            Ok(stop) => stop,
            Err(panic) => {
                tracing::error!(
                    panic = %panic_message(&*panic),
                    "should_stop_after_turn panicked; stopping the run"
                );
                true
            }
        }
    }

    /// Emits `agent_end` with the run's messages (the run is over: they move out of the
    /// conversation).
    async fn end(&mut self) {
        // Dropping the older messages in place moves the run's down, without the new
        // allocation (and page faults) of `split_off`.
        self.context.messages.drain(..self.start);
        let messages = std::mem::take(&mut self.context.messages);
        let event = AgentEvent::AgentEnd { messages };
        self.emit(&event).await;
        if self.keep
            && let AgentEvent::AgentEnd { messages } = event
        {
            self.result = messages;
        }
    }

    fn empty_message(&self) -> AssistantMessage {
        let model = &self.config.model;
        AssistantMessage::new(&model.api, &model.provider, &model.id)
    }

    /// Emits the events of a reply that is complete and adds it to the conversation.
    async fn finish_reply(&mut self, message: AssistantMessage, started: bool) {
        let hook = self.config.hooks.message_end.clone();
        let message = emit_message(&mut self.emit, message.into(), !started, hook.as_deref()).await;
        self.context.messages.push(message);
    }

    /// The reply as far as it streamed: the sink's fold once the stream's own stopped.
    fn streamed_so_far(
        &self,
        stream: &AssistantMessageEventStream,
        unfolded: bool,
    ) -> AssistantMessage {
        // `None`: the sink dropped its copy (`reset` during the run); the stream's state is
        // what is left.
        let folded = if unfolded {
            self.reply_fold.as_ref().and_then(|f| f())
        } else {
            None
        };
        folded.unwrap_or_else(|| stream.partial().clone())
    }

    /// A failed reply produced without calling the model.
    async fn fail_reply(&mut self, error: Error) {
        let message = self.empty_message().with_error(error);
        self.finish_reply(message, false).await
    }

    /// Converts the conversation into the model's context (pi's `transformContext` then
    /// `convertToLlm`). `Err` carries the text of a hook's panic.
    async fn prepare_llm_context(&mut self) -> Result<(), String> {
        let hooks = &self.config.hooks;
        let transformed = match &hooks.transform_context {
            None => None,
            Some(transform) => {
                let fut = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    transform(&self.context.messages, self.cancel)
                }))
                .map_err(|p| panic_message(&*p))?;
                match AssertUnwindSafe(fut).catch_unwind().await {
                    Ok(std::borrow::Cow::Borrowed(_)) => None,
                    Ok(std::borrow::Cow::Owned(messages)) => Some(messages),
                    Err(p) => return Err(panic_message(&*p)),
                }
            }
        };
        let llm = &mut self.llm;
        let convert = || -> Result<(), String> {
            match (&hooks.convert, transformed) {
                (Converter::List(f), transformed) => {
                    let source = transformed.as_deref().unwrap_or(&self.context.messages);
                    llm.context.messages = f(source);
                    llm.converted = None;
                }
                (convert, Some(messages)) => {
                    llm.context.messages = messages
                        .iter()
                        .filter_map(|m| convert_one(convert, m))
                        .collect();
                    llm.converted = None;
                }
                (convert, None) => {
                    let from = match llm.converted {
                        Some(n) if n <= self.context.messages.len() => n,
                        _ => {
                            llm.context.messages.clear();
                            0
                        }
                    };
                    for m in &self.context.messages[from..] {
                        if let Some(converted) = convert_one(convert, m) {
                            llm.context.messages.push(converted);
                        }
                    }
                    llm.converted = Some(self.context.messages.len());
                }
            }
            Ok(())
        };
        match std::panic::catch_unwind(AssertUnwindSafe(convert)) {
            Ok(r) => r,
            Err(p) => {
                self.llm.converted = None;
                Err(panic_message(&*p))
            }
        }
    }

    /// pi's `streamAssistantResponse`: builds the model's context, calls the stream function
    /// and turns its events into `message_*` events. The reply ends up last in the
    /// conversation.
    async fn stream_assistant_response(&mut self) {
        // An aborted run makes no further model call (pi makes one, which fails at once).
        if self.cancel.is_cancelled() {
            return self
                .fail_reply(Error::new(ErrorKind::Aborted, ABORTED))
                .await;
        }
        if let Err(panic) = self.prepare_llm_context().await {
            return self
                .fail_reply(Error::new(
                    ErrorKind::Config,
                    format!("Preparing the model context panicked: {panic}"),
                ))
                .await;
        }
        let config = self.config;
        let mut api_key = None;
        if let Some(get_api_key) = &config.hooks.get_api_key {
            let fut =
                std::panic::catch_unwind(AssertUnwindSafe(|| get_api_key(&config.model.provider)));
            let key = match fut {
                Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
                Err(p) => Err(p),
            };
            match key {
                Ok(key) => api_key = key,
                Err(p) => {
                    let text = format!("get_api_key panicked: {}", panic_message(&*p));
                    return self.fail_reply(Error::new(ErrorKind::Config, text)).await;
                }
            }
        }
        if self.cancel.is_cancelled() {
            return self
                .fail_reply(Error::new(ErrorKind::Aborted, ABORTED))
                .await;
        }
        let mut options = config.options.clone();
        if api_key.is_some() {
            options.api_key = api_key;
        }
        options.reasoning = Some(config.thinking_level).filter(|l| *l != ThinkingLevel::Off);
        options.cancel = Some(self.cancel.clone());

        let model = &config.model;
        let llm_context = &self.llm.context;
        let stream = std::panic::catch_unwind(AssertUnwindSafe(|| match &config.hooks.stream_fn {
            Some(f) => f.stream(model, llm_context, &options),
            None => crate::providers::stream_simple(model, llm_context, &options),
        }));
        let mut stream = match stream {
            Ok(stream) => stream,
            Err(p) => {
                let text = format!("The stream function panicked: {}", panic_message(&*p));
                return self.fail_reply(Error::new(ErrorKind::Provider, text)).await;
            }
        };

        let mut started = false;
        // True once the stream stopped folding (the sink's fold stands in for it).
        let mut unfolded = false;
        loop {
            match next_event(&mut stream, self.cancel).await {
                Next::Event(event) => match event {
                    AssistantMessageEvent::Start => {
                        started = true;
                        // The event's copy of the (usually empty) start message reuses the
                        // buffers of the previous turn's.
                        let message = match self.spare.take() {
                            Some(mut spare) => {
                                spare.assign_from(stream.partial());
                                spare
                            }
                            None => stream.partial().clone(),
                        };
                        let event = AgentEvent::MessageStart {
                            message: message.into(),
                        };
                        self.emit(&event).await;
                        if let AgentEvent::MessageStart {
                            message: AgentMessage::Assistant(m),
                        } = event
                        {
                            self.spare = Some(m);
                        }
                        // From here on every event reaches the sink, which folds it.
                        if self.reply_fold.is_some() {
                            stream.stop_folding();
                            unfolded = true;
                        }
                    }
                    AssistantMessageEvent::Done { message, .. }
                    | AssistantMessageEvent::Error { error: message, .. } => {
                        return self.finish_reply(*message, started).await;
                    }
                    event => {
                        if started {
                            self.emit(&AgentEvent::MessageUpdate {
                                assistant_message_event: event,
                            })
                            .await;
                        }
                    }
                },
                Next::End => {
                    let message = if unfolded {
                        let mut message = self.streamed_so_far(&stream, true);
                        message.set_error(Error::new(
                            ErrorKind::InvalidResponse,
                            "The stream ended without a final event",
                        ));
                        message
                    } else {
                        stream.result().await
                    };
                    return self.finish_reply(message, started).await;
                }
                Next::Aborted => {
                    // The stream did not notice the abort itself: end the reply here with what
                    // arrived so far.
                    let message = self
                        .streamed_so_far(&stream, unfolded)
                        .with_error(Error::new(ErrorKind::Aborted, ABORTED));
                    return self.finish_reply(message, started).await;
                }
                Next::Panicked(panic) => {
                    let message = self
                        .streamed_so_far(&stream, unfolded)
                        .with_error(Error::new(
                            ErrorKind::Provider,
                            format!("The model stream panicked: {panic}"),
                        ));
                    return self.finish_reply(message, started).await;
                }
            }
        }
    }
}

fn convert_one(convert: &Converter, message: &AgentMessage) -> Option<Message> {
    match convert {
        Converter::Each(f) => f(message),
        _ => message.to_message(),
    }
}

/// The next event of a model stream; the stream's own events win over the abort signal, so a
/// stream that handles cancellation itself reports its own aborted message.
async fn next_event(stream: &mut AssistantMessageEventStream, cancel: &CancellationToken) -> Next {
    let mut cancelled = std::pin::pin!(cancel.cancelled());
    poll_fn(|cx| {
        match std::panic::catch_unwind(AssertUnwindSafe(|| stream.poll_next_unpin(cx))) {
            Ok(Poll::Ready(Some(event))) => return Poll::Ready(Next::Event(event)),
            Ok(Poll::Ready(None)) => return Poll::Ready(Next::End),
            Ok(Poll::Pending) => {}
            Err(p) => return Poll::Ready(Next::Panicked(panic_message(&*p))),
        }
        if cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Next::Aborted);
        }
        Poll::Pending
    })
    .await
}
