//! The agent layer: an [`Agent`] that runs pi's two-level ReAct loop — stream a reply, run
//! the tools it calls, feed the results back, until the model stops — with steering and
//! follow-up messages, event for event like pi-agent-core 0.73.1.
//!
//! Pick the level you need:
//!
//! * [`Agent`]: a stateful handle owning the transcript. `prompt`, `continue_run`, `abort`,
//!   `steer`, `follow_up`, listeners with [`Agent::subscribe`]. This is what most
//!   applications use.
//! * [`agent_loop`] / [`agent_loop_continue`]: one run as a pull-based [`AgentEventStream`],
//!   from a context and a configuration you own.
//! * [`run_agent_loop`] / [`run_agent_loop_continue`]: the same run as an async function that
//!   awaits every event it hands to an [`AgentEventSink`].
//!
//! Tools implement [`AgentTool`] (or are a [`TypedTool`]: a `serde` + `schemars` argument
//! struct and an async function). The application takes part through [`AgentHooks`]: the
//! stream function, message conversion (custom messages live in the transcript as
//! [`AgentMessage::Custom`]; `convert_to_llm` decides what the model sees), context
//! transformation, API-key resolution, and approval and rewriting of tool calls.
//!
//! ```
//! use pi_engine::agent::{Agent, AgentToolResult, ToolContext, ToolError, TypedTool};
//! use pi_engine::providers::faux::{FauxProvider, FauxResponse};
//! use pi_engine::ApiProvider;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Weather { city: String }
//!
//! async fn weather(args: Weather, _: ToolContext) -> Result<AgentToolResult, ToolError> {
//!     Ok(AgentToolResult::text(format!("Sunny in {}", args.city)))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let faux = FauxProvider::new();
//! faux.push(FauxResponse::tool_call("call_1", "weather", json!({"city": "Oslo"})));
//! faux.push(FauxResponse::text("It is sunny in Oslo."));
//! let agent = Agent::builder(faux.model())
//!     .tool(TypedTool::new("weather", "Current weather in a city", weather))
//!     .provider(faux)
//!     .build();
//! agent.prompt("Weather in Oslo?").await.unwrap().into_result().unwrap();
//! let messages = agent.messages();
//! assert_eq!(messages.len(), 4); // user, assistant (tool call), tool result, assistant
//! assert_eq!(messages[3].as_assistant().unwrap().text(), "It is sunny in Oslo.");
//! # }
//! ```
//!
//! # Where this differs from pi, deliberately
//!
//! The conformance suite (`shared/conformance/agent`) runs 23 scenarios through pi and this
//! crate. Its README lists eight behaviours of pi that look surprising; here is what this
//! crate does about each.
//!
//! 1. **An abort during tool execution costs pi one more model call** (its loop never checks
//!    the signal; the next call fails at once because the provider sees it). Here the loop
//!    checks the token before every model call and, when it is cancelled, ends the turn with
//!    the same empty `aborted` message ("Request was aborted") *without calling the model*.
//!    The events are pi's; one request fewer is made (deviation `agent/abort-during-tool`).
//!    Likewise a tool call that has not started when the run is aborted is not started: it
//!    gets the error result "Operation aborted". And a stream function that ignores the
//!    token cannot hold an aborted run: the reply ends `aborted` with what has arrived.
//! 2. **`abort()` leaves the steering and follow-up queues as they are**, so a follow-up
//!    queued before an abort is delivered in the next run. Kept: dropping what a person
//!    typed would lose it silently. The clear methods return what they removed, so an
//!    application can put it back in its editor (what pi's TUI does on Escape).
//! 3. **In parallel mode, calls that fail before running finish first** (unknown tool,
//!    invalid arguments, blocked): their `tool_execution_end` comes during preparation,
//!    before any tool starts. Kept: it is pi's order, deterministic, and no tool runs until
//!    every call is prepared.
//! 4. **Validation errors use TypeBox's wording** (`b: must have required properties b`, …),
//!    framed as `Validation failed for tool "<name>": …`. Kept: the model reads the same text
//!    as with pi.
//! 5. **`continue` after an error fails** with "Cannot continue from message role:
//!    assistant"; a retry removes the failed message first. Kept (pi's design; its
//!    coding agent's auto-retry relies on it).
//! 6. **Failed and aborted assistant messages stay in the transcript** and are sent to the
//!    stream function; pi's providers drop them when they build a request. Kept: the
//!    transcript is a faithful record, and the provider layer decides what a given API
//!    accepts.
//! 7. **pi's `message_update.message` shares its content with later updates.** Here
//!    `message_update` carries only the streamed event; the message as it stands is read
//!    from the agent ([`Agent::with_streaming_message`]) or the stream
//!    ([`AgentEventStream::streaming_message`]), borrowed. Nothing a listener keeps changes
//!    under it, and no delta copies the message.
//! 8. **pi's faux provider runs ahead of the agent**, so aborts at an exact delta cannot be
//!    tested with it. This crate's [`FauxProvider`](crate::providers::faux::FauxProvider) is
//!    pull-based and checks the token before every event, so it can; the tests use it.
//!
//! Beyond pi: panics in tools, hooks, listeners and stream functions are caught (a tool's
//! panic is its error result; elsewhere the turn ends with an error message), and a run can
//! be limited to a number of turns ([`AgentLoopConfig::max_turns`], off by default).

mod agent_loop;
mod config;
mod event;
pub(crate) mod handle;
mod message;
mod outcome;
mod sink;
mod tool;
mod tool_exec;

pub use agent_loop::{
    AgentError, agent_loop, agent_loop_continue, run_agent_loop, run_agent_loop_continue,
};
pub use config::{
    AfterToolCallContext, AfterToolCallResult, AgentContext, AgentHooks, AgentLoopConfig,
    BeforeToolCallContext, DEFAULT_TOOL_ABORT_GRACE, StreamFn, ToolCallDecision, TurnEndContext,
};
pub use event::{AgentEvent, AgentEventStream, AgentLoopState};
pub use handle::{Agent, AgentBuilder, AgentState, PromptInput, QueueMode, Subscription};
pub use message::{AgentMessage, CustomMessage, CustomMessageType};
pub use outcome::{RunError, RunOutcome};
pub use sink::AgentEventSink;
pub use tool::{
    AgentTool, AgentToolResult, ToolContext, ToolError, ToolExecutionMode, ToolUpdates, TypedTool,
};
