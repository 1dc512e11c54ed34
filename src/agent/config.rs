//! How a run is configured: the [`AgentContext`] it starts from, the [`AgentLoopConfig`]
//! (model, options, limits) and the [`AgentHooks`] through which an application takes part
//! (stream function, message conversion, approval of tool calls, …).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::agent::message::AgentMessage;
use crate::agent::tool::{AgentTool, AgentToolResult, ToolExecutionMode};
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::{
    AssistantMessage, Content, Context, Message, Tool, ToolCall, ToolResultMessage,
};
use crate::llm::model::Model;
use crate::llm::options::{ApiKey, StreamOptions};
use crate::llm::thinking::ThinkingLevel;

/// What a run starts from: the system prompt, the conversation and the tools.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct AgentContext {
    /// Sent with every model call (an empty prompt is not sent).
    pub system_prompt: String,
    /// The conversation so far.
    pub messages: Vec<AgentMessage>,
    /// The tools the model may call.
    pub tools: Vec<Arc<dyn AgentTool>>,
}

impl fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentContext")
            .field("system_prompt", &self.system_prompt)
            .field("messages", &self.messages.len())
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl AgentContext {
    /// A context with `system_prompt`, no messages and no tools.
    pub fn new(system_prompt: impl Into<String>) -> Self {
        AgentContext {
            system_prompt: system_prompt.into(),
            ..AgentContext::default()
        }
    }

    /// Sets the messages.
    #[must_use]
    pub fn with_messages(mut self, messages: Vec<AgentMessage>) -> Self {
        self.messages = messages;
        self
    }

    /// Adds a tool.
    #[must_use]
    pub fn with_tool(mut self, tool: impl AgentTool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Sets the tools.
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<Arc<dyn AgentTool>>) -> Self {
        self.tools = tools;
        self
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// The tool definitions sent to the model.
    pub(crate) fn tool_definitions(&self) -> Vec<Tool> {
        self.tools.iter().map(|t| t.definition().clone()).collect()
    }
}

/// Produces the model's reply to a context: the registry's
/// [`stream_simple`](crate::stream_simple) unless replaced.
///
/// Any `Fn(&Model, &Context, &StreamOptions) -> AssistantMessageEventStream` is one. Like a
/// provider it reports failures as the stream's `error` event; if it panics anyway, the run
/// ends with an error message instead of unwinding.
pub trait StreamFn: Send + Sync + 'static {
    /// Starts a model call.
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream;
}

impl<F> StreamFn for F
where
    F: Fn(&Model, &Context, &StreamOptions) -> AssistantMessageEventStream + Send + Sync + 'static,
{
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        self(model, context, options)
    }
}

/// What `before_tool_call` decides about a call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ToolCallDecision {
    /// Run the tool.
    #[default]
    Allow,
    /// Do not run it; the model gets an error result with the reason (default
    /// "Tool execution was blocked").
    Block(Option<String>),
    /// Run the tool with these arguments instead (pi's `tool_call` handlers that patch
    /// `event.input`). They are not validated again: the hook vouches for them.
    AllowWith(Map<String, Value>),
}

impl ToolCallDecision {
    /// Blocks the call with `reason`.
    pub fn block(reason: impl Into<String>) -> Self {
        ToolCallDecision::Block(Some(reason.into()))
    }
}

/// What `before_tool_call` sees: the call, its validated arguments and the context.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct BeforeToolCallContext<'a> {
    /// The assistant message that made the call.
    pub assistant_message: &'a AssistantMessage,
    /// The call as the model sent it.
    pub tool_call: &'a ToolCall,
    /// The validated (and coerced) arguments.
    pub args: &'a Map<String, Value>,
    /// The run's context when the call is prepared.
    pub context: &'a AgentContext,
    /// Cancelled when the run is aborted; a hook that waits (e.g. for a person) should stop.
    pub cancel: &'a CancellationToken,
}

/// What `after_tool_call` sees: the call and the result the tool produced.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AfterToolCallContext<'a> {
    /// The assistant message that made the call.
    pub assistant_message: &'a AssistantMessage,
    /// The call as the model sent it.
    pub tool_call: &'a ToolCall,
    /// The validated arguments.
    pub args: &'a Map<String, Value>,
    /// The result before any replacement.
    pub result: &'a AgentToolResult,
    /// Whether the result is an error.
    pub is_error: bool,
    /// The run's context.
    pub context: &'a AgentContext,
    /// Cancelled when the run is aborted.
    pub cancel: &'a CancellationToken,
}

/// Replacements `after_tool_call` makes to a result, field by field; `None` keeps the field.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AfterToolCallResult {
    /// Replaces the content.
    pub content: Option<Vec<Content>>,
    /// Replaces the details.
    pub details: Option<Value>,
    /// Replaces the error flag.
    pub is_error: Option<bool>,
    /// Replaces the request to end the run after this batch.
    pub terminate: Option<bool>,
}

impl AfterToolCallResult {
    /// No replacement.
    pub fn new() -> Self {
        AfterToolCallResult::default()
    }

    /// Replaces the content.
    #[must_use]
    pub fn with_content(mut self, content: Vec<Content>) -> Self {
        self.content = Some(content);
        self
    }

    /// Replaces the details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Replaces the error flag.
    #[must_use]
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = Some(is_error);
        self
    }

    /// Replaces the termination request.
    #[must_use]
    pub fn with_terminate(mut self, terminate: bool) -> Self {
        self.terminate = Some(terminate);
        self
    }
}

/// What `should_stop_after_turn` sees when a turn has ended.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct TurnEndContext<'a> {
    /// The turn's assistant message.
    pub message: &'a AssistantMessage,
    /// The turn's tool results.
    pub tool_results: &'a [ToolResultMessage],
    /// The run's context, the turn's messages included.
    pub context: &'a AgentContext,
    /// The messages the run has added so far.
    pub new_messages: &'a [AgentMessage],
    /// Turns completed in this run, this one included.
    pub turns: usize,
}

pub(crate) type BeforeToolCallFn =
    dyn for<'a> Fn(BeforeToolCallContext<'a>) -> BoxFuture<'a, ToolCallDecision> + Send + Sync;
pub(crate) type AfterToolCallFn = dyn for<'a> Fn(AfterToolCallContext<'a>) -> BoxFuture<'a, Option<AfterToolCallResult>>
    + Send
    + Sync;
pub(crate) type TransformContextFn = dyn for<'a> Fn(&'a [AgentMessage], &'a CancellationToken) -> BoxFuture<'a, Cow<'a, [AgentMessage]>>
    + Send
    + Sync;
pub(crate) type ApiKeyFn = dyn Fn(&str) -> BoxFuture<'static, Option<ApiKey>> + Send + Sync;
pub(crate) type MessageEndFn =
    dyn for<'a> Fn(&'a AgentMessage) -> BoxFuture<'a, Option<AgentMessage>> + Send + Sync;
pub(crate) type MessagesFn = dyn Fn() -> Vec<AgentMessage> + Send + Sync;
pub(crate) type ConvertEachFn = dyn Fn(&AgentMessage) -> Option<Message> + Send + Sync;
pub(crate) type ConvertListFn = dyn Fn(&[AgentMessage]) -> Vec<Message> + Send + Sync;
pub(crate) type StopFn = dyn Fn(&TurnEndContext<'_>) -> bool + Send + Sync;

/// How agent messages become the messages a model sees.
#[derive(Clone, Default)]
pub(crate) enum Converter {
    /// pi's default: user, assistant and tool-result messages; custom messages left out.
    #[default]
    Default,
    /// One message at a time (so only new messages are converted each turn).
    Each(Arc<ConvertEachFn>),
    /// The whole list, every turn (pi's `convertToLlm`).
    List(Arc<ConvertListFn>),
}

/// The ways an application takes part in a run. Every hook is optional.
///
/// Hooks that wait get the run's [`CancellationToken`] and should return promptly when it is
/// cancelled. A hook that panics does not crash the run: in a tool hook the panic becomes the
/// call's error result; elsewhere the turn ends with an error message.
///
/// ```
/// use pi_engine::agent::{AgentHooks, ToolCallDecision};
///
/// let hooks = AgentHooks::new().with_before_tool_call(|cx| {
///     Box::pin(async move {
///         if cx.tool_call.name == "bash" && cx.args["command"].as_str().is_some_and(|c| c.contains("rm -rf")) {
///             ToolCallDecision::block("rm -rf is not allowed")
///         } else {
///             ToolCallDecision::Allow
///         }
///     })
/// });
/// # let _ = hooks;
/// ```
#[derive(Clone, Default)]
#[must_use]
pub struct AgentHooks {
    pub(crate) stream_fn: Option<Arc<dyn StreamFn>>,
    pub(crate) convert: Converter,
    pub(crate) transform_context: Option<Arc<TransformContextFn>>,
    pub(crate) get_api_key: Option<Arc<ApiKeyFn>>,
    pub(crate) should_stop_after_turn: Option<Arc<StopFn>>,
    pub(crate) before_tool_call: Option<Arc<BeforeToolCallFn>>,
    pub(crate) after_tool_call: Option<Arc<AfterToolCallFn>>,
    pub(crate) message_end: Option<Arc<MessageEndFn>>,
}

impl fmt::Debug for AgentHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |b: bool| if b { "set" } else { "unset" };
        f.debug_struct("AgentHooks")
            .field("stream_fn", &set(self.stream_fn.is_some()))
            .field(
                "convert_to_llm",
                &match self.convert {
                    Converter::Default => "default",
                    Converter::Each(_) => "per message",
                    Converter::List(_) => "whole list",
                },
            )
            .field("transform_context", &set(self.transform_context.is_some()))
            .field("get_api_key", &set(self.get_api_key.is_some()))
            .field(
                "should_stop_after_turn",
                &set(self.should_stop_after_turn.is_some()),
            )
            .field("before_tool_call", &set(self.before_tool_call.is_some()))
            .field("after_tool_call", &set(self.after_tool_call.is_some()))
            .field("message_end", &set(self.message_end.is_some()))
            .finish()
    }
}

impl AgentHooks {
    /// No hooks: the global registry's `stream_simple`, pi's default message conversion.
    pub fn new() -> Self {
        AgentHooks::default()
    }

    /// Replaces the stream function (default: [`stream_simple`](crate::stream_simple) of the
    /// global registry). Use it to call a registry of your own, a proxy, or a scripted model.
    pub fn with_stream_fn(
        mut self,
        f: impl Fn(&Model, &Context, &StreamOptions) -> AssistantMessageEventStream
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.stream_fn = Some(Arc::new(f));
        self
    }

    /// Replaces the stream function with a shared one.
    pub fn with_stream_fn_arc(mut self, f: Arc<dyn StreamFn>) -> Self {
        self.stream_fn = Some(f);
        self
    }

    /// Converts the whole message list before every model call (pi's `convertToLlm`). The
    /// default keeps user, assistant and tool-result messages and leaves custom ones out.
    /// Prefer [`with_convert_message`](Self::with_convert_message) when each message converts
    /// on its own: then only new messages are converted each turn.
    pub fn with_convert_to_llm(
        mut self,
        f: impl Fn(&[AgentMessage]) -> Vec<Message> + Send + Sync + 'static,
    ) -> Self {
        self.convert = Converter::List(Arc::new(f));
        self
    }

    /// Converts messages one at a time (`None` leaves a message out). A run converts each
    /// message once and reuses the result on later turns.
    pub fn with_convert_message(
        mut self,
        f: impl Fn(&AgentMessage) -> Option<Message> + Send + Sync + 'static,
    ) -> Self {
        self.convert = Converter::Each(Arc::new(f));
        self
    }

    /// Transforms the agent messages before conversion, on every model call (pruning,
    /// injecting context). Return `Cow::Borrowed(messages)` to leave them as they are.
    pub fn with_transform_context<F>(mut self, f: F) -> Self
    where
        F: for<'a> Fn(
                &'a [AgentMessage],
                &'a CancellationToken,
            ) -> BoxFuture<'a, Cow<'a, [AgentMessage]>>
            + Send
            + Sync
            + 'static,
    {
        self.transform_context = Some(Arc::new(f));
        self
    }

    /// Resolves the API key before every model call, by provider name (for short-lived
    /// OAuth tokens). `None` falls back to the options' key.
    pub fn with_get_api_key<F>(mut self, f: F) -> Self
    where
        F: Fn(&str) -> BoxFuture<'static, Option<ApiKey>> + Send + Sync + 'static,
    {
        self.get_api_key = Some(Arc::new(f));
        self
    }

    /// Called after every `turn_end`; returning true ends the run there (before steering or
    /// follow-up messages are polled).
    pub fn with_should_stop_after_turn(
        mut self,
        f: impl Fn(&TurnEndContext<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.should_stop_after_turn = Some(Arc::new(f));
        self
    }

    /// Called when a message is complete, before its `message_end` event: may return a
    /// replacement **of the same role**, which the run then uses everywhere (its events, the
    /// conversation, the tool calls of a reply) — pi's `message_end` handlers. A
    /// replacement of another role is ignored.
    pub fn with_message_end<F>(mut self, f: F) -> Self
    where
        F: for<'a> Fn(&'a AgentMessage) -> BoxFuture<'a, Option<AgentMessage>>
            + Send
            + Sync
            + 'static,
    {
        self.message_end = Some(Arc::new(f));
        self
    }

    /// Called before each tool runs, after its arguments are validated; may block the call.
    pub fn with_before_tool_call<F>(mut self, f: F) -> Self
    where
        F: for<'a> Fn(BeforeToolCallContext<'a>) -> BoxFuture<'a, ToolCallDecision>
            + Send
            + Sync
            + 'static,
    {
        self.before_tool_call = Some(Arc::new(f));
        self
    }

    /// Called after each tool ran, before its result is reported; may replace parts of it.
    pub fn with_after_tool_call<F>(mut self, f: F) -> Self
    where
        F: for<'a> Fn(AfterToolCallContext<'a>) -> BoxFuture<'a, Option<AfterToolCallResult>>
            + Send
            + Sync
            + 'static,
    {
        self.after_tool_call = Some(Arc::new(f));
        self
    }
}

/// How long, by default, tools still running when a run is aborted get to stop on their own
/// (see [`AgentLoopConfig::tool_abort_grace`]): 5 seconds.
pub const DEFAULT_TOOL_ABORT_GRACE: Duration = Duration::from_secs(5);

/// Everything a run needs besides its context: the model, options, limits and hooks.
///
/// ```
/// use pi_engine::agent::{AgentLoopConfig, ToolExecutionMode};
/// use pi_engine::{Model, ThinkingLevel};
///
/// let config = AgentLoopConfig::new(Model::new("m", "faux", "faux", ""))
///     .with_thinking_level(ThinkingLevel::High)
///     .with_tool_execution(ToolExecutionMode::Sequential)
///     .with_max_turns(20);
/// assert_eq!(config.max_turns, Some(20));
/// ```
#[derive(Clone)]
#[non_exhaustive]
#[must_use]
pub struct AgentLoopConfig {
    /// The model called.
    pub model: Model,
    /// Reasoning level; `off` sends no reasoning option.
    pub thinking_level: ThinkingLevel,
    /// Options of every model call (API key, temperature, max tokens, session id, cache
    /// retention, headers, …). The loop sets `reasoning` and `cancel` itself.
    pub options: StreamOptions,
    /// Parallel (default) or sequential tool execution.
    pub tool_execution: ToolExecutionMode,
    /// Ends the run after this many turns (a guard pi lacks). `None`, the default, is no limit.
    pub max_turns: Option<usize>,
    /// How long tools (and `before_tool_call`/`after_tool_call` hooks) still running when the
    /// run is aborted get to return after their cancellation token fires. A call still
    /// running then is dropped (its future with it) and ends with the error result
    /// `"Operation aborted"`, so a tool that ignores its token cannot keep the run alive;
    /// anything it reports afterwards is discarded with a warning. Default:
    /// [`DEFAULT_TOOL_ABORT_GRACE`] (5 s). A guard pi lacks (pi waits for the tool forever).
    pub tool_abort_grace: Duration,
    /// The application's hooks.
    pub hooks: AgentHooks,
    pub(crate) steering: Option<Arc<MessagesFn>>,
    pub(crate) follow_up: Option<Arc<MessagesFn>>,
}

impl fmt::Debug for AgentLoopConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentLoopConfig")
            .field("model", &self.model.id)
            .field("thinking_level", &self.thinking_level)
            .field("options", &self.options)
            .field("tool_execution", &self.tool_execution)
            .field("max_turns", &self.max_turns)
            .field("tool_abort_grace", &self.tool_abort_grace)
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

impl AgentLoopConfig {
    /// A configuration calling `model`, with default options and no hooks.
    pub fn new(model: Model) -> Self {
        AgentLoopConfig {
            model,
            thinking_level: ThinkingLevel::Off,
            options: StreamOptions::new(),
            tool_execution: ToolExecutionMode::Parallel,
            max_turns: None,
            tool_abort_grace: DEFAULT_TOOL_ABORT_GRACE,
            hooks: AgentHooks::new(),
            steering: None,
            follow_up: None,
        }
    }

    /// Sets the reasoning level.
    pub fn with_thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.thinking_level = level;
        self
    }

    /// Sets the options of every model call.
    pub fn with_options(mut self, options: StreamOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets the tool execution mode.
    pub fn with_tool_execution(mut self, mode: ToolExecutionMode) -> Self {
        self.tool_execution = mode;
        self
    }

    /// Ends the run after `turns` turns.
    pub fn with_max_turns(mut self, turns: usize) -> Self {
        self.max_turns = Some(turns);
        self
    }

    /// Sets how long tools still running at an abort get to stop before they are dropped
    /// (see [`tool_abort_grace`](Self::tool_abort_grace); default 5 s).
    ///
    /// ```
    /// use std::time::Duration;
    /// use pi_engine::agent::AgentLoopConfig;
    /// use pi_engine::Model;
    ///
    /// let config = AgentLoopConfig::new(Model::new("m", "faux", "faux", ""))
    ///     .with_tool_abort_grace(Duration::from_millis(500));
    /// assert_eq!(config.tool_abort_grace, Duration::from_millis(500));
    /// ```
    pub fn with_tool_abort_grace(mut self, grace: Duration) -> Self {
        self.tool_abort_grace = grace;
        self
    }

    /// Sets the hooks.
    pub fn with_hooks(mut self, hooks: AgentHooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Supplies steering messages: polled before the first turn and after every turn; what
    /// it returns is added to the conversation before the next model call.
    pub fn with_steering_messages(
        mut self,
        f: impl Fn() -> Vec<AgentMessage> + Send + Sync + 'static,
    ) -> Self {
        self.steering = Some(Arc::new(f));
        self
    }

    /// Supplies follow-up messages: polled when the agent would stop; what it returns starts
    /// another turn.
    pub fn with_follow_up_messages(
        mut self,
        f: impl Fn() -> Vec<AgentMessage> + Send + Sync + 'static,
    ) -> Self {
        self.follow_up = Some(Arc::new(f));
        self
    }
}
