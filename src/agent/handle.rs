//! [`Agent`]: a conversation with a model and its tools, run by the agent loop — pi's `Agent`
//! class.
//!
//! An `Agent` owns the transcript and the state around it, runs one prompt at a time, and lets
//! the application take part while it runs: listeners see every event and are awaited in
//! subscription order before the loop goes on, so a listener can steer or abort at an exact
//! point; messages can be queued as steering (delivered after the current turn) or follow-up
//! (delivered when the agent would stop).
//!
//! The handle is cheap to clone (an `Arc`), `Send + Sync`, and an idle agent is small, so a
//! process can hold thousands.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::agent::agent_loop::{AgentError, ReplyFold, run_continue, run_prompts};
use crate::agent::config::{AgentContext, AgentHooks, AgentLoopConfig};
use crate::agent::event::AgentEvent;
use crate::agent::message::AgentMessage;
use crate::agent::outcome::RunOutcome;
use crate::agent::sink::{AgentEventSink, panic_message};
use crate::agent::tool::{AgentTool, ToolExecutionMode};
use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::{AssistantMessageEvent, PartialMessage};
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, Context, ImageContent, StopReason, UserMessage,
};
use crate::llm::model::Model;
use crate::llm::options::StreamOptions;
use crate::llm::thinking::ThinkingLevel;
use crate::providers::{ApiProvider, ApiRegistry};

/// How many queued messages one poll of a queue delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum QueueMode {
    /// One message per poll, so each gets its own turn (the default).
    #[default]
    #[serde(rename = "one-at-a-time")]
    OneAtATime,
    /// Everything queued, in one turn.
    #[serde(rename = "all")]
    All,
}

/// What [`Agent::prompt`] accepts: text (with optional images), or messages.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PromptInput {
    /// A user message made of this text and these images.
    Text {
        /// The text.
        text: String,
        /// Images after the text.
        images: Vec<ImageContent>,
    },
    /// These messages, as they are.
    Messages(Vec<AgentMessage>),
}

impl PromptInput {
    /// Text followed by images.
    pub fn with_images(text: impl Into<String>, images: Vec<ImageContent>) -> Self {
        PromptInput::Text {
            text: text.into(),
            images,
        }
    }

    fn into_messages(self) -> Vec<AgentMessage> {
        match self {
            PromptInput::Text { text, images } => {
                let mut content = Vec::with_capacity(1 + images.len());
                content.push(Content::text(text));
                content.extend(images.into_iter().map(Content::Image));
                vec![UserMessage::blocks(content).into()]
            }
            PromptInput::Messages(messages) => messages,
        }
    }
}

impl From<&str> for PromptInput {
    fn from(text: &str) -> Self {
        PromptInput::with_images(text, Vec::new())
    }
}

impl From<String> for PromptInput {
    fn from(text: String) -> Self {
        PromptInput::with_images(text, Vec::new())
    }
}

impl From<UserMessage> for PromptInput {
    fn from(m: UserMessage) -> Self {
        PromptInput::Messages(vec![m.into()])
    }
}

impl From<AgentMessage> for PromptInput {
    fn from(m: AgentMessage) -> Self {
        PromptInput::Messages(vec![m])
    }
}

impl From<Vec<AgentMessage>> for PromptInput {
    fn from(m: Vec<AgentMessage>) -> Self {
        PromptInput::Messages(m)
    }
}

/// An agent's state: what the next run starts from (public fields) and how the current run
/// stands (read through methods).
#[non_exhaustive]
pub struct AgentState {
    /// Sent with every model call.
    pub system_prompt: String,
    /// The model of the next call.
    pub model: Model,
    /// The reasoning level of the next call.
    pub thinking_level: ThinkingLevel,
    /// The tools.
    pub tools: Vec<Arc<dyn AgentTool>>,
    /// The transcript. A run works on a copy taken when it starts and appends each message
    /// here when it is complete (`message_end`).
    pub messages: Vec<AgentMessage>,
    run: Option<CancellationToken>,
    streaming: Option<Streaming>,
    pending_tool_calls: Vec<String>,
    error_message: Option<String>,
}

impl fmt::Debug for AgentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentState")
            .field("system_prompt", &self.system_prompt)
            .field("model", &self.model.id)
            .field("thinking_level", &self.thinking_level)
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("messages", &self.messages.len())
            .field("is_streaming", &self.is_streaming())
            .field("pending_tool_calls", &self.pending_tool_calls)
            .field("error_message", &self.error_message)
            .finish()
    }
}

impl AgentState {
    /// True while a run is active (until its `agent_end` listeners have returned).
    pub fn is_streaming(&self) -> bool {
        self.run.is_some()
    }

    /// The assistant message being streamed, as it stands.
    pub fn streaming_message(&self) -> Option<&AssistantMessage> {
        self.streaming.as_ref().map(|s| s.partial.message())
    }

    /// Parses tool-call argument fragments that arrived since the last read.
    fn flush_streaming(&mut self) {
        if let Some(s) = &mut self.streaming {
            s.flush();
        }
    }

    /// Ids of the tool calls that have started and not finished.
    pub fn pending_tool_calls(&self) -> &[String] {
        &self.pending_tool_calls
    }

    /// The error of the last failed or aborted turn of the current or last run.
    pub fn error_message(&self) -> Option<&str> {
        self.error_message.as_deref()
    }
}

/// The assistant message being streamed, folded from the run's events.
///
/// Text is appended as it arrives. Tool-call argument fragments are only collected, and
/// parsed into the message when somebody reads it: parsing partial JSON is the expensive part
/// of a fold, and most deltas are never looked at.
struct Streaming {
    partial: PartialMessage,
    /// Unparsed argument text, by content index, in arrival order.
    pending_args: Vec<(usize, String)>,
}

impl Streaming {
    fn apply(&mut self, event: &AssistantMessageEvent) {
        match event {
            AssistantMessageEvent::ToolcallDelta {
                content_index,
                delta,
            } => match self.pending_args.last_mut() {
                Some((i, text)) if i == content_index => text.push_str(delta),
                _ => self.pending_args.push((*content_index, delta.clone())),
            },
            AssistantMessageEvent::ToolcallEnd { content_index, .. } => {
                // The end carries the whole call: unparsed fragments are moot.
                self.pending_args.retain(|(i, _)| i != content_index);
                self.partial.apply(event);
            }
            _ => self.partial.apply(event),
        }
    }

    fn flush(&mut self) {
        for (content_index, delta) in self.pending_args.drain(..) {
            self.partial.apply(&AssistantMessageEvent::ToolcallDelta {
                content_index,
                delta,
            });
        }
    }
}

type SyncListener = dyn Fn(&AgentEvent, &Agent) + Send + Sync;
type AsyncListener = dyn Fn(Arc<AgentEvent>, Agent) -> BoxFuture<'static, ()> + Send + Sync;
/// A listener that is synchronous for most events and returns a future to await for the
/// others, borrowing the event (no copy of it is made).
pub(crate) type HookListener =
    dyn for<'a> Fn(&'a AgentEvent, &'a Agent) -> Option<BoxFuture<'a, ()>> + Send + Sync;

enum ListenerKind {
    Sync(Box<SyncListener>),
    Async(Box<AsyncListener>),
    Hook(Box<HookListener>),
}

struct Listener {
    id: u64,
    active: AtomicBool,
    kind: ListenerKind,
}

struct Queues {
    steering: VecDeque<AgentMessage>,
    follow_up: VecDeque<AgentMessage>,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
}

fn drain(queue: &mut VecDeque<AgentMessage>, mode: QueueMode) -> Vec<AgentMessage> {
    match mode {
        QueueMode::All => queue.drain(..).collect(),
        QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
    }
}

struct Settings {
    options: StreamOptions,
    tool_execution: ToolExecutionMode,
    max_turns: Option<usize>,
    tool_abort_grace: Duration,
    hooks: AgentHooks,
}

struct Inner {
    state: Mutex<AgentState>,
    queues: Mutex<Queues>,
    settings: Mutex<Settings>,
    listeners: Mutex<Arc<[Arc<Listener>]>>,
    next_listener: AtomicU64,
    idle: Notify,
}

/// A stateful agent: a transcript, a model, tools, and the loop that runs them.
///
/// ```
/// use pi_engine::agent::{Agent, AgentEvent};
/// use pi_engine::providers::faux::{FauxProvider, FauxResponse};
/// use pi_engine::ApiProvider;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("Hello! How can I help?"));
/// let agent = Agent::builder(faux.model())
///     .system_prompt("You are helpful.")
///     .stream_fn(move |m, c, o| faux.stream(m, c, o))
///     .build();
/// agent.subscribe(|event, _agent| {
///     if let Some(delta) = event.text_delta() {
///         print!("{delta}");
///     }
/// });
/// agent.prompt("Hi").await.unwrap().into_result().unwrap();
/// assert_eq!(agent.messages().len(), 2);
/// # }
/// ```
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Agent");
        // try_lock: formatting while the state is locked must not deadlock.
        match self.inner.state.try_lock() {
            Ok(state) => d.field("state", &*state),
            Err(_) => d.field("state", &"<locked>"),
        };
        d.finish_non_exhaustive()
    }
}

/// Configures an [`Agent`]. Every setting has a default; see each method.
#[must_use]
pub struct AgentBuilder {
    state: AgentState,
    settings: Settings,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// The system prompt. Default: empty (none sent).
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.state.system_prompt = prompt.into();
        self
    }

    /// The reasoning level. Default: `off`.
    pub fn thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.state.thinking_level = level;
        self
    }

    /// Adds a tool. Default: no tools.
    pub fn tool(mut self, tool: impl AgentTool) -> Self {
        self.state.tools.push(Arc::new(tool));
        self
    }

    /// Sets the tools.
    pub fn tools(mut self, tools: Vec<Arc<dyn AgentTool>>) -> Self {
        self.state.tools = tools;
        self
    }

    /// The transcript to start from. Default: empty.
    pub fn messages(mut self, messages: Vec<AgentMessage>) -> Self {
        self.state.messages = messages;
        self
    }

    /// The hooks. Default: none (the global registry's `stream_simple`, pi's conversion).
    pub fn hooks(mut self, hooks: AgentHooks) -> Self {
        self.settings.hooks = hooks;
        self
    }

    /// Shortcut for a stream function (see [`AgentHooks::with_stream_fn`]).
    pub fn stream_fn(
        mut self,
        f: impl Fn(&Model, &Context, &StreamOptions) -> AssistantMessageEventStream
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.settings.hooks = self.settings.hooks.with_stream_fn(f);
        self
    }

    /// Every model call goes to `provider` (its `stream_simple`), whatever the model's api:
    /// wiring a provider, the faux one in a test among them, needs no closure. Replaces any
    /// [`stream_fn`](Self::stream_fn) or [`registry`](Self::registry) set before.
    ///
    /// ```
    /// # use pi_engine::agent::Agent;
    /// # use pi_engine::providers::faux::{FauxProvider, FauxResponse};
    /// # use pi_engine::ApiProvider;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let faux = FauxProvider::new();
    /// faux.push(FauxResponse::text("Hi!"));
    /// let agent = Agent::builder(faux.model()).provider(faux.clone()).build();
    /// agent.prompt("Hello").await.unwrap().into_result().unwrap();
    /// assert_eq!(agent.last_assistant_text().as_deref(), Some("Hi!"));
    /// # }
    /// ```
    pub fn provider(self, provider: impl ApiProvider) -> Self {
        self.stream_fn(move |model, context, options| {
            provider.stream_simple(model, context, options)
        })
    }

    /// Model calls go to the provider `registry` holds for the model's api (its
    /// `stream_simple`), instead of the [global](ApiRegistry::global) registry's. Replaces any
    /// [`stream_fn`](Self::stream_fn) or [`provider`](Self::provider) set before.
    pub fn registry(self, registry: Arc<ApiRegistry>) -> Self {
        self.stream_fn(move |model, context, options| {
            registry.stream_simple(model, context, options)
        })
    }

    /// Options of every model call (API key, temperature, max tokens, session id, cache
    /// retention, headers, thinking budgets, …). Default: [`StreamOptions::new`].
    pub fn options(mut self, options: StreamOptions) -> Self {
        self.settings.options = options;
        self
    }

    /// The session id sent with every call (for prompt caching). Default: none.
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.settings.options.session_id = Some(id.into());
        self
    }

    /// Parallel (default) or sequential tool execution.
    pub fn tool_execution(mut self, mode: ToolExecutionMode) -> Self {
        self.settings.tool_execution = mode;
        self
    }

    /// Ends a run after this many turns. Default: no limit.
    pub fn max_turns(mut self, turns: usize) -> Self {
        self.settings.max_turns = Some(turns);
        self
    }

    /// How long tools still running when a run is aborted get to stop on their own before
    /// they are dropped with an `"Operation aborted"` error result (see
    /// [`AgentLoopConfig::tool_abort_grace`]). Default: [`DEFAULT_TOOL_ABORT_GRACE`] (5 s).
    ///
    /// [`DEFAULT_TOOL_ABORT_GRACE`]: crate::agent::DEFAULT_TOOL_ABORT_GRACE
    pub fn tool_abort_grace(mut self, grace: Duration) -> Self {
        self.settings.tool_abort_grace = grace;
        self
    }

    /// How steering messages are delivered. Default: one at a time.
    pub fn steering_mode(mut self, mode: QueueMode) -> Self {
        self.steering_mode = mode;
        self
    }

    /// How follow-up messages are delivered. Default: one at a time.
    pub fn follow_up_mode(mut self, mode: QueueMode) -> Self {
        self.follow_up_mode = mode;
        self
    }

    /// Builds the agent.
    pub fn build(self) -> Agent {
        Agent {
            inner: Arc::new(Inner {
                state: Mutex::new(self.state),
                queues: Mutex::new(Queues {
                    steering: VecDeque::new(),
                    follow_up: VecDeque::new(),
                    steering_mode: self.steering_mode,
                    follow_up_mode: self.follow_up_mode,
                }),
                settings: Mutex::new(self.settings),
                listeners: Mutex::new(Arc::from(Vec::new())),
                next_listener: AtomicU64::new(0),
                idle: Notify::new(),
            }),
        }
    }
}

/// Returned by [`Agent::subscribe`]; [`unsubscribe`](Self::unsubscribe) removes the listener.
/// Dropping it keeps the listener.
#[derive(Debug)]
pub struct Subscription {
    agent: Weak<Inner>,
    id: u64,
}

impl Subscription {
    /// Removes the listener. It is not called again, not even for the rest of an event being
    /// delivered.
    pub fn unsubscribe(self) {
        if let Some(inner) = self.agent.upgrade() {
            let mut listeners = lock(&inner.listeners);
            if let Some(l) = listeners.iter().find(|l| l.id == self.id) {
                l.active.store(false, Ordering::Release);
            }
            let kept: Vec<_> = listeners
                .iter()
                .filter(|l| l.id != self.id)
                .cloned()
                .collect();
            *listeners = Arc::from(kept);
        }
    }
}

/// Locks a mutex; a panic while it was held cannot leave this module's state inconsistent
/// (every update is a single assignment or push), so poisoning is ignored.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

enum RunKind {
    Prompt {
        messages: Vec<AgentMessage>,
        skip_initial_steering_poll: bool,
    },
    Continue,
}

impl Agent {
    /// An agent calling `model`, with every other setting at its default.
    pub fn new(model: Model) -> Agent {
        Agent::builder(model).build()
    }

    /// Configures an agent calling `model`.
    pub fn builder(model: Model) -> AgentBuilder {
        AgentBuilder {
            state: AgentState {
                system_prompt: String::new(),
                model,
                thinking_level: ThinkingLevel::Off,
                tools: Vec::new(),
                messages: Vec::new(),
                run: None,
                streaming: None,
                pending_tool_calls: Vec::new(),
                error_message: None,
            },
            settings: Settings {
                options: StreamOptions::new(),
                tool_execution: ToolExecutionMode::Parallel,
                max_turns: None,
                tool_abort_grace: crate::agent::DEFAULT_TOOL_ABORT_GRACE,
                hooks: AgentHooks::new(),
            },
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
        }
    }

    // ----- listeners -------------------------------------------------------------------

    /// Calls `listener` with every event and this agent. Listeners run one after another in
    /// subscription order, and the loop waits for them: what a listener does (steer, abort,
    /// read the state) happens at that exact point of the run. It receives the agent so it
    /// need not capture a clone (which would keep the agent alive).
    ///
    /// A panicking listener is logged and skipped; the run goes on.
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent, &Agent) + Send + Sync + 'static,
    ) -> Subscription {
        self.add_listener(ListenerKind::Sync(Box::new(listener)))
    }

    /// Like [`subscribe`](Self::subscribe), with an async listener; the loop awaits the future
    /// it returns.
    ///
    /// ```
    /// # use pi_engine::agent::Agent;
    /// # fn f(agent: &Agent) {
    /// agent.subscribe_async(|event, _agent| Box::pin(async move {
    ///     // e.g. write the event to a socket
    ///     let _ = event.kind();
    /// }));
    /// # }
    /// ```
    pub fn subscribe_async(
        &self,
        listener: impl Fn(Arc<AgentEvent>, Agent) -> BoxFuture<'static, ()> + Send + Sync + 'static,
    ) -> Subscription {
        self.add_listener(ListenerKind::Async(Box::new(listener)))
    }

    /// A listener of the crate's own layers (the session's persistence): called like a
    /// synchronous one, and the loop awaits the future it returns, when it returns one.
    pub(crate) fn subscribe_hook<F>(&self, hook: F) -> Subscription
    where
        F: for<'a> Fn(&'a AgentEvent, &'a Agent) -> Option<BoxFuture<'a, ()>>
            + Send
            + Sync
            + 'static,
    {
        self.add_listener(ListenerKind::Hook(Box::new(hook)))
    }

    fn add_listener(&self, kind: ListenerKind) -> Subscription {
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        let listener = Arc::new(Listener {
            id,
            active: AtomicBool::new(true),
            kind,
        });
        let mut listeners = lock(&self.inner.listeners);
        let mut all: Vec<_> = listeners.iter().cloned().collect();
        all.push(listener);
        *listeners = Arc::from(all);
        Subscription {
            agent: Arc::downgrade(&self.inner),
            id,
        }
    }

    // ----- state -----------------------------------------------------------------------

    /// The state, locked. Keep the guard short: the run waits for it, and calling other
    /// methods of this agent while holding it deadlocks.
    pub fn state(&self) -> MutexGuard<'_, AgentState> {
        let mut state = lock(&self.inner.state);
        state.flush_streaming();
        state
    }

    /// A copy of the transcript.
    pub fn messages(&self) -> Vec<AgentMessage> {
        self.state().messages.clone()
    }

    /// Replaces the transcript.
    pub fn set_messages(&self, messages: Vec<AgentMessage>) {
        self.state().messages = messages;
    }

    /// Sets the system prompt.
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        self.state().system_prompt = prompt.into();
    }

    /// Sets the model of the next call.
    pub fn set_model(&self, model: Model) {
        self.state().model = model;
    }

    /// Sets the reasoning level of the next call.
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        self.state().thinking_level = level;
    }

    /// Replaces the tools.
    pub fn set_tools(&self, tools: Vec<Arc<dyn AgentTool>>) {
        self.state().tools = tools;
    }

    /// True while a run is active.
    pub fn is_streaming(&self) -> bool {
        self.state().is_streaming()
    }

    /// A copy of the assistant message being streamed. To read it on every delta without
    /// copying, use [`with_streaming_message`](Self::with_streaming_message).
    pub fn streaming_message(&self) -> Option<AssistantMessage> {
        self.state().streaming_message().cloned()
    }

    /// Calls `f` with the assistant message being streamed (borrowed, not copied).
    pub fn with_streaming_message<R>(&self, f: impl FnOnce(Option<&AssistantMessage>) -> R) -> R {
        f(self.state().streaming_message())
    }

    /// The error of the last failed or aborted turn.
    pub fn error_message(&self) -> Option<String> {
        self.state().error_message.clone()
    }

    /// Replaces the hooks (from the next run on).
    pub fn set_hooks(&self, hooks: AgentHooks) {
        lock(&self.inner.settings).hooks = hooks;
    }

    /// Replaces the options of every model call (from the next run on).
    pub fn set_options(&self, options: StreamOptions) {
        lock(&self.inner.settings).options = options;
    }

    /// Sets the tool execution mode (from the next run on).
    pub fn set_tool_execution(&self, mode: ToolExecutionMode) {
        lock(&self.inner.settings).tool_execution = mode;
    }

    /// Sets the abort grace of running tools (from the next run on; see
    /// [`AgentBuilder::tool_abort_grace`]).
    pub fn set_tool_abort_grace(&self, grace: Duration) {
        lock(&self.inner.settings).tool_abort_grace = grace;
    }

    /// Sets or removes the turn limit (from the next run on).
    pub fn set_max_turns(&self, turns: Option<usize>) {
        lock(&self.inner.settings).max_turns = turns;
    }

    // ----- queues ----------------------------------------------------------------------

    /// Queues a message to deliver after the current turn (its tool calls all run first),
    /// before the next model call.
    pub fn steer(&self, message: impl Into<AgentMessage>) {
        lock(&self.inner.queues).steering.push_back(message.into());
    }

    /// Queues a message to deliver when the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<AgentMessage>) {
        lock(&self.inner.queues).follow_up.push_back(message.into());
    }

    /// How steering messages are delivered.
    pub fn steering_mode(&self) -> QueueMode {
        lock(&self.inner.queues).steering_mode
    }

    /// Sets how steering messages are delivered.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        lock(&self.inner.queues).steering_mode = mode;
    }

    /// How follow-up messages are delivered.
    pub fn follow_up_mode(&self) -> QueueMode {
        lock(&self.inner.queues).follow_up_mode
    }

    /// Sets how follow-up messages are delivered.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        lock(&self.inner.queues).follow_up_mode = mode;
    }

    /// Empties the steering queue and returns what it held (e.g. to put it back in an
    /// editor).
    pub fn clear_steering_queue(&self) -> Vec<AgentMessage> {
        lock(&self.inner.queues).steering.drain(..).collect()
    }

    /// Empties the follow-up queue and returns what it held.
    pub fn clear_follow_up_queue(&self) -> Vec<AgentMessage> {
        lock(&self.inner.queues).follow_up.drain(..).collect()
    }

    /// Empties both queues and returns what they held, steering first.
    pub fn clear_all_queues(&self) -> Vec<AgentMessage> {
        let mut q = lock(&self.inner.queues);
        let mut all: Vec<_> = q.steering.drain(..).collect();
        all.extend(q.follow_up.drain(..));
        all
    }

    /// True when either queue holds a message.
    pub fn has_queued_messages(&self) -> bool {
        let q = lock(&self.inner.queues);
        !q.steering.is_empty() || !q.follow_up.is_empty()
    }

    // ----- runs ------------------------------------------------------------------------

    /// The cancellation token of the active run (pi's `signal`).
    pub fn cancel_token(&self) -> Option<CancellationToken> {
        self.state().run.clone()
    }

    /// Aborts the active run, if any: the model call in flight ends `aborted` with its
    /// partial content, running tools and hooks see the token cancelled, and no tool starts
    /// and no model call is made afterwards. A tool (or `before_tool_call` hook) that has not
    /// returned within the abort grace ([`AgentBuilder::tool_abort_grace`], 5 s by default)
    /// is dropped and its call ends with an `"Operation aborted"` error result, so the run
    /// always ends (with `agent_end`). Queued messages stay queued.
    pub fn abort(&self) {
        if let Some(token) = &self.state().run {
            token.cancel();
        }
    }

    /// Clears the transcript, the run's state, the last error and both queues.
    pub fn reset(&self) {
        {
            let mut s = self.state();
            s.messages.clear();
            s.streaming = None;
            s.pending_tool_calls.clear();
            s.error_message = None;
        }
        self.clear_all_queues();
    }

    /// Waits until no run is active (and the listeners of its `agent_end` have returned).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits.
    pub async fn wait_for_idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if !self.is_streaming() {
                return;
            }
            notified.await;
        }
    }

    /// Runs a prompt: text, text with images, or messages. Returns when the run has ended,
    /// with how it ended: a failed model call is not an `Err` (it ends the run with an error
    /// message, as pi's does) but a [`RunOutcome::Failed`] carrying the typed error;
    /// [`RunOutcome::into_result`] makes it one for `?`.
    ///
    /// # Errors
    ///
    /// [`AgentError::AlreadyProcessing`] while a run is active: use
    /// [`steer`](Self::steer) or [`follow_up`](Self::follow_up) then.
    ///
    /// # Cancel safety
    ///
    /// The run executes inside this future. Dropping it stops the run where it is (without
    /// `agent_end`); completed messages stay in the transcript and the agent becomes idle.
    /// To stop a run in an orderly way, use [`abort`](Self::abort).
    pub async fn prompt(&self, input: impl Into<PromptInput>) -> Result<RunOutcome, AgentError> {
        let cancel = self
            .begin_run(|_, _| Ok(()))
            .map_err(|_| AgentError::AlreadyProcessing)?
            .0;
        let messages = input.into().into_messages();
        Ok(self
            .execute(
                cancel,
                RunKind::Prompt {
                    messages,
                    skip_initial_steering_poll: false,
                },
            )
            .await)
    }

    /// Continues from the transcript (pi's `continue`). When it ends with a user or
    /// tool-result message, the model is called again (a retry). When it ends with an
    /// assistant message, queued steering messages (else follow-ups) are run as a prompt.
    ///
    /// # Errors
    ///
    /// [`AgentError::AlreadyProcessingContinue`] while a run is active,
    /// [`AgentError::NoMessages`] for an empty transcript, and
    /// [`AgentError::CannotContinueFrom`] when it ends with an assistant message and nothing
    /// is queued (to retry after an error, remove the failed message first).
    ///
    /// # Cancel safety
    ///
    /// As for [`prompt`](Self::prompt).
    pub async fn continue_run(&self) -> Result<RunOutcome, AgentError> {
        let (cancel, kind) = self.begin_run(|state, queues| {
            let Some(last) = state.messages.last() else {
                return Err(AgentError::NoMessages);
            };
            if !matches!(last, AgentMessage::Assistant(_)) {
                return Ok(RunKind::Continue);
            }
            let steering = drain(&mut queues.steering, queues.steering_mode);
            if !steering.is_empty() {
                return Ok(RunKind::Prompt {
                    messages: steering,
                    skip_initial_steering_poll: true,
                });
            }
            let follow_ups = drain(&mut queues.follow_up, queues.follow_up_mode);
            if !follow_ups.is_empty() {
                return Ok(RunKind::Prompt {
                    messages: follow_ups,
                    skip_initial_steering_poll: false,
                });
            }
            Err(AgentError::CannotContinueFrom("assistant".into()))
        })?;
        Ok(self.execute(cancel, kind).await)
    }

    /// Atomically checks that no run is active, lets `plan` decide (under the state and queue
    /// locks), and marks the run active.
    fn begin_run<T>(
        &self,
        plan: impl FnOnce(&AgentState, &mut Queues) -> Result<T, AgentError>,
    ) -> Result<(CancellationToken, T), AgentError> {
        let mut state = self.state();
        if state.run.is_some() {
            return Err(AgentError::AlreadyProcessingContinue);
        }
        let planned = plan(&state, &mut lock(&self.inner.queues))?;
        let cancel = CancellationToken::new();
        state.run = Some(cancel.clone());
        state.streaming = None;
        state.error_message = None;
        Ok((cancel, planned))
    }

    /// The context and configuration of a run, from the current state and settings.
    fn snapshot(&self, skip_initial_steering_poll: bool) -> (AgentContext, AgentLoopConfig) {
        let (context, model, thinking_level) = {
            let s = self.state();
            (
                AgentContext {
                    system_prompt: s.system_prompt.clone(),
                    messages: s.messages.clone(),
                    tools: s.tools.clone(),
                },
                s.model.clone(),
                s.thinking_level,
            )
        };
        let settings = lock(&self.inner.settings);
        let mut config = AgentLoopConfig::new(model)
            .with_thinking_level(thinking_level)
            .with_options(settings.options.clone())
            .with_tool_execution(settings.tool_execution)
            .with_hooks(settings.hooks.clone());
        config.max_turns = settings.max_turns;
        config.tool_abort_grace = settings.tool_abort_grace;
        drop(settings);
        let agent = Arc::downgrade(&self.inner);
        let skip = AtomicBool::new(skip_initial_steering_poll);
        let config = config.with_steering_messages(move || {
            if skip.swap(false, Ordering::AcqRel) {
                return Vec::new();
            }
            agent
                .upgrade()
                .map(|inner| {
                    let mut q = lock(&inner.queues);
                    let mode = q.steering_mode;
                    drain(&mut q.steering, mode)
                })
                .unwrap_or_default()
        });
        let agent = Arc::downgrade(&self.inner);
        let config = config.with_follow_up_messages(move || {
            agent
                .upgrade()
                .map(|inner| {
                    let mut q = lock(&inner.queues);
                    let mode = q.follow_up_mode;
                    drain(&mut q.follow_up, mode)
                })
                .unwrap_or_default()
        });
        (context, config)
    }

    async fn execute(&self, cancel: CancellationToken, kind: RunKind) -> RunOutcome {
        let _idle_on_exit = RunGuard(self);
        let start = self.state().messages.len();
        let skip = matches!(
            kind,
            RunKind::Prompt {
                skip_initial_steering_poll: true,
                ..
            }
        );
        let (context, config) = self.snapshot(skip);
        let sink = AgentSink(self.clone());
        let agent = self.clone();
        let reply_fold: ReplyFold = Box::new(move || agent.state().streaming_message().cloned());
        let run = async {
            match kind {
                RunKind::Prompt { messages, .. } => {
                    run_prompts(
                        messages,
                        context,
                        &config,
                        &cancel,
                        sink,
                        false,
                        Some(reply_fold),
                    )
                    .await;
                }
                RunKind::Continue => {
                    let _ = run_continue(context, &config, &cancel, sink, false, Some(reply_fold))
                        .await;
                }
            }
        };
        if let Err(panic) = AssertUnwindSafe(run).catch_unwind().await {
            self.fail_run(panic_message(&*panic), cancel.is_cancelled())
                .await;
        }
        let state = self.state();
        let last = state.messages.get(start..).and_then(|added| {
            added.iter().rev().find_map(|m| match m {
                AgentMessage::Assistant(a) => Some(a),
                _ => None,
            })
        });
        RunOutcome::of_run(last, cancel.is_cancelled())
    }

    /// The text of the last assistant reply that has content, trimmed (pi's
    /// `getLastAssistantText`): an aborted reply without content is passed over, and a reply
    /// without text gives `None`.
    pub fn last_assistant_text(&self) -> Option<String> {
        last_assistant_text(&self.state().messages)
    }

    /// pi's `handleRunFailure`: the run itself broke (here: panicked outside every guarded
    /// hook), so it ends with a synthetic error message.
    async fn fail_run(&self, text: String, aborted: bool) {
        let model = self.state().model.clone();
        let kind = if aborted {
            ErrorKind::Aborted
        } else {
            ErrorKind::Provider
        };
        let message = AssistantMessage::new(&model.api, &model.provider, &model.id)
            .with_content(vec![AssistantContent::text("")])
            .with_error(Error::new(kind, text));
        {
            let mut s = self.state();
            s.error_message.clone_from(&message.error_message);
            s.messages.push(message.clone().into());
        }
        self.dispatch(&AgentEvent::AgentEnd {
            messages: vec![message.into()],
        })
        .await;
    }

    /// Updates the state for an event (pi's `processEvents`), then calls the listeners.
    async fn dispatch(&self, event: &AgentEvent) {
        self.reduce(event);
        let listeners = lock(&self.inner.listeners).clone();
        // Copied (once) only when an async listener needs to keep it.
        let mut shared: Option<Arc<AgentEvent>> = None;
        for listener in listeners.iter() {
            if !listener.active.load(Ordering::Acquire) {
                continue;
            }
            let outcome = match &listener.kind {
                ListenerKind::Sync(f) => {
                    std::panic::catch_unwind(AssertUnwindSafe(|| f(event, self)))
                }
                ListenerKind::Hook(f) => {
                    match std::panic::catch_unwind(AssertUnwindSafe(|| f(event, self))) {
                        Ok(Some(fut)) => AssertUnwindSafe(fut).catch_unwind().await,
                        Ok(None) => Ok(()),
                        Err(p) => Err(p),
                    }
                }
                ListenerKind::Async(f) => {
                    let owned = shared
                        .get_or_insert_with(|| Arc::new(event.clone()))
                        .clone();
                    match std::panic::catch_unwind(AssertUnwindSafe(|| f(owned, self.clone()))) {
                        Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
                        Err(p) => Err(p),
                    }
                }
            };
            if let Err(panic) = outcome {
                tracing::error!(
                    event = event.kind(),
                    panic = %panic_message(&*panic),
                    "an agent listener panicked"
                );
            }
        }
    }

    fn reduce(&self, event: &AgentEvent) {
        // Not `state()`: that would parse pending tool-call arguments on every event.
        let mut s = lock(&self.inner.state);
        match event {
            AgentEvent::MessageStart {
                message: AgentMessage::Assistant(m),
            } => {
                s.streaming = Some(Streaming {
                    partial: PartialMessage::new(m.clone()),
                    pending_args: Vec::new(),
                })
            }
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => {
                if let Some(p) = &mut s.streaming {
                    p.apply(assistant_message_event);
                }
            }
            AgentEvent::MessageEnd { message } => {
                let message = match (s.streaming.take(), message) {
                    // The streamed copy already holds (nearly) all of it: update it in place
                    // rather than copying the reply once more.
                    (Some(streaming), AgentMessage::Assistant(end)) => {
                        let mut kept = streaming.partial.into_message();
                        kept.assign_from(end);
                        AgentMessage::Assistant(kept)
                    }
                    (_, message) => message.clone(),
                };
                s.messages.push(message);
            }
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                s.pending_tool_calls.push(tool_call_id.clone());
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                // Calls mostly end in the order they started: find the first match only.
                if let Some(i) = s
                    .pending_tool_calls
                    .iter()
                    .position(|id| id == tool_call_id)
                {
                    s.pending_tool_calls.remove(i);
                }
            }
            AgentEvent::TurnEnd { message, .. } if message.error_message.is_some() => {
                s.error_message.clone_from(&message.error_message);
            }
            AgentEvent::AgentEnd { .. } => s.streaming = None,
            _ => {}
        }
    }
}

/// The sink of an agent's runs: state updates and listeners.
struct AgentSink(Agent);

impl AgentEventSink for AgentSink {
    fn emit(&mut self, event: &AgentEvent) -> impl Future<Output = ()> + Send {
        self.0.dispatch(event)
    }
}

/// Marks the agent idle when a run ends, however it ends (also when its future is dropped).
struct RunGuard<'a>(&'a Agent);

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        {
            let mut s = self.0.state();
            s.run = None;
            s.streaming = None;
            s.pending_tool_calls.clear();
        }
        self.0.inner.idle.notify_waiters();
    }
}

/// [`Agent::last_assistant_text`] of a transcript.
pub(crate) fn last_assistant_text(messages: &[AgentMessage]) -> Option<String> {
    let reply = messages.iter().rev().find_map(|m| match m {
        AgentMessage::Assistant(a)
            if !(a.stop_reason == StopReason::Aborted && a.content.is_empty()) =>
        {
            Some(a)
        }
        _ => None,
    })?;
    let text = reply.text();
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn agent_is_send_and_sync() {
        assert_send_sync::<Agent>();
    }

    #[test]
    fn prompt_future_is_send() {
        fn check<F: Future + Send>(_: F) {}
        let agent = Agent::new(Model::new("m", "faux", "faux", ""));
        check(agent.prompt("hi"));
        check(agent.continue_run());
        check(agent.wait_for_idle());
    }

    #[test]
    fn queue_modes_serialize_like_pi() {
        assert_eq!(
            serde_json::to_string(&QueueMode::OneAtATime).unwrap(),
            "\"one-at-a-time\""
        );
        assert_eq!(serde_json::to_string(&QueueMode::All).unwrap(), "\"all\"");
    }

    #[test]
    fn drain_modes() {
        let mut q: VecDeque<AgentMessage> = ["a", "b"]
            .into_iter()
            .map(|t| UserMessage::text(t).into())
            .collect();
        assert_eq!(drain(&mut q, QueueMode::OneAtATime).len(), 1);
        assert_eq!(q.len(), 1);
        q.push_back(UserMessage::text("c").into());
        assert_eq!(drain(&mut q, QueueMode::All).len(), 2);
        assert!(q.is_empty());
    }
}
