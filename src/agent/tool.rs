//! Tools an agent can run: the [`AgentTool`] trait, its result [`AgentToolResult`], progress
//! reports through [`ToolUpdates`], and [`TypedTool`], a tool made of one argument struct and
//! one async function.
//!
//! A tool never crashes a run. Whatever goes wrong — an unknown tool name, arguments that do not
//! fit the schema, an `Err` from [`AgentTool::execute`], even a panic inside it — becomes a tool
//! result with `isError: true` that the model reads and can react to.
//!
//! ```
//! use pi_engine::agent::{AgentToolResult, ToolContext, ToolError, TypedTool};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! /// Arguments of the `add` tool (the doc comments become the schema's descriptions).
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     /// The first number.
//!     a: i64,
//!     /// The second number.
//!     b: i64,
//! }
//!
//! async fn add(args: AddArgs, _cx: ToolContext) -> Result<AgentToolResult, ToolError> {
//!     Ok(AgentToolResult::text((args.a + args.b).to_string()))
//! }
//!
//! let tool = TypedTool::new("add", "Add two integers", add);
//! assert_eq!(tool.definition().parameters["required"], serde_json::json!(["a", "b"]));
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use futures::task::AtomicWaker;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::llm::message::{Content, Tool};

/// The error a tool returns. Its `Display` text is what the model reads in the error result.
///
/// Any error converts with `?`, and so does a string: `Err("disk on fire".into())`.
pub type ToolError = Box<dyn std::error::Error + Send + Sync>;

/// Whether the calls of one assistant message may run at the same time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolExecutionMode {
    /// Prepare the calls one by one, then run them concurrently (the default). Results are
    /// reported as they finish and added to the conversation in the order of the calls.
    #[default]
    Parallel,
    /// Prepare, run and report one call after the other.
    Sequential,
}

/// What a tool produced: content the model reads, details for the application, and an
/// optional request to end the run after this batch of calls.
///
/// ```
/// use pi_engine::agent::AgentToolResult;
///
/// let result = AgentToolResult::text("done").with_details(serde_json::json!({"bytes": 42}));
/// assert_eq!(
///     serde_json::to_value(&result).unwrap(),
///     serde_json::json!({"content": [{"type": "text", "text": "done"}], "details": {"bytes": 42}})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AgentToolResult {
    /// Text and images for the model.
    pub content: Vec<Content>,
    /// Structured data for logs or a UI; not sent to the model. `{}` unless set. `null`
    /// (none) is left out when serialized, as pi leaves an undefined `details` out.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
    /// Asks the agent to stop after this batch of tool calls. The run ends only when every
    /// result of the batch asks for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminate: Option<bool>,
}

impl AgentToolResult {
    /// A result with `content` and empty details.
    pub fn new(content: Vec<Content>) -> Self {
        AgentToolResult {
            content,
            details: Value::Object(Map::new()),
            terminate: None,
        }
    }

    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        AgentToolResult::new(vec![Content::text(text)])
    }

    /// Sets the details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// Asks the agent to stop after this batch of tool calls (see [`terminate`](Self::terminate)).
    #[must_use]
    pub fn terminating(mut self) -> Self {
        self.terminate = Some(true);
        self
    }

    /// All text blocks, concatenated.
    pub fn text_content(&self) -> String {
        self.content.iter().filter_map(Content::as_text).collect()
    }

    /// True when this result asks to end the run.
    pub fn wants_terminate(&self) -> bool {
        self.terminate == Some(true)
    }
}

/// A tool the agent can run.
///
/// Implement [`definition`](Self::definition) (name, description and JSON-Schema parameters,
/// which is what the model sees) and [`execute`](Self::execute). The arguments `execute` gets
/// have been validated against the schema (and coerced, e.g. `"5"` to `5` for an integer), so
/// a well-formed call never needs to re-check them. For a tool with a typed argument struct,
/// [`TypedTool`] does all of this.
///
/// The trait is object safe; an agent holds its tools as `Arc<dyn AgentTool>`.
///
/// ```
/// use async_trait::async_trait;
/// use pi_engine::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};
/// use pi_engine::{CancellationToken, Tool};
/// use serde_json::{json, Map, Value};
///
/// struct Clock { def: Tool }
///
/// #[async_trait]
/// impl AgentTool for Clock {
///     fn definition(&self) -> &Tool { &self.def }
///     async fn execute(&self, _id: &str, _args: Map<String, Value>, _cancel: CancellationToken,
///                      _updates: ToolUpdates) -> Result<AgentToolResult, ToolError> {
///         Ok(AgentToolResult::text("12:00"))
///     }
/// }
///
/// let clock = Clock { def: Tool::new("clock", "The time", json!({"type": "object", "properties": {}})) };
/// assert_eq!(clock.name(), "clock");
/// ```
#[async_trait::async_trait]
pub trait AgentTool: Send + Sync + 'static {
    /// What the model sees: name, description, JSON Schema of the arguments.
    fn definition(&self) -> &Tool;

    /// The name the model calls the tool by.
    fn name(&self) -> &str {
        &self.definition().name
    }

    /// A human-readable name for a UI. Defaults to the name.
    fn label(&self) -> &str {
        self.name()
    }

    /// One line for the system prompt's list of tools (pi's `promptSnippet`): what the tool
    /// is for, in a few words. `None`, the default, leaves the tool out of that list.
    fn prompt_snippet(&self) -> Option<&str> {
        None
    }

    /// Rules for using the tool well, added to the system prompt's guidelines (pi's
    /// `promptGuidelines`). Empty by default.
    fn prompt_guidelines(&self) -> &[String] {
        &[]
    }

    /// Forces a batch containing a call of this tool to run sequentially. `None` (the default)
    /// follows the agent's setting.
    fn execution_mode(&self) -> Option<ToolExecutionMode> {
        None
    }

    /// A compatibility shim run on the raw arguments before validation (e.g. to accept an
    /// old argument name). `None`, the default, leaves them as they are.
    fn prepare_arguments(&self, _raw: &Map<String, Value>) -> Option<Map<String, Value>> {
        None
    }

    /// Runs the tool. Return `Err` on failure (its text becomes the error result the model
    /// reads) rather than encoding errors in the content.
    ///
    /// `cancel` is cancelled when the run is aborted: a tool that takes time should stop
    /// promptly and return an error. `updates` reports partial results
    /// (`tool_execution_update` events).
    ///
    /// # Cancel safety
    ///
    /// The agent drives the future to completion, with two exceptions: the whole run is
    /// dropped, or the run is aborted and the tool has not returned within the agent's abort
    /// grace ([`AgentLoopConfig::tool_abort_grace`](crate::agent::AgentLoopConfig::tool_abort_grace),
    /// 5 s by default) after `cancel` fired. Then the future is dropped where it waits, the call
    /// ends with the error result `"Operation aborted"`, and updates it sends afterwards (from a
    /// task it spawned) are discarded with a warning. Resources the tool holds should therefore
    /// be released on drop (e.g. a child process spawned with `kill_on_drop`).
    async fn execute(
        &self,
        tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError>;
}

impl fmt::Debug for dyn AgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// One partial result on its way to the agent's listeners.
pub(crate) struct ToolUpdate {
    /// Index of the call in its batch.
    pub(crate) index: usize,
    pub(crate) partial: AgentToolResult,
    pub(crate) delivered: oneshot::Sender<()>,
}

/// The updates of one batch of tool calls, on their way from the tools to the loop. (A
/// lighter channel than `tokio::sync::mpsc`: nothing is allocated until an update is sent.)
pub(crate) struct UpdateQueue {
    queue: Mutex<Queued>,
    waker: AtomicWaker,
    closed: AtomicBool,
}

/// The queued updates, and which calls have ended (their later updates are discarded).
#[derive(Default)]
struct Queued {
    updates: VecDeque<ToolUpdate>,
    /// A bit per call index: set once the call's `tool_execution_end` has been emitted.
    ended: Vec<u64>,
    /// A bit per call index: set when the call was cut off by the abort grace.
    cut: Vec<u64>,
}

fn bit(bits: &[u64], index: usize) -> bool {
    bits.get(index / 64)
        .is_some_and(|w| w & (1 << (index % 64)) != 0)
}

fn set_bit(bits: &mut Vec<u64>, index: usize) {
    let word = index / 64;
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << (index % 64);
}

impl UpdateQueue {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(UpdateQueue {
            queue: Mutex::new(Queued::default()),
            waker: AtomicWaker::new(),
            closed: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queued> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues an update; gives it back once its call has ended or the batch is over (a
    /// tool's late update, logged as a warning).
    fn push(&self, update: ToolUpdate) -> Result<(), ToolUpdate> {
        if self.closed.load(Ordering::Acquire) {
            tracing::warn!(
                call_index = update.index,
                "a tool sent an update after its batch of tool calls had ended; discarded"
            );
            return Err(update);
        }
        let mut q = self.lock();
        if bit(&q.ended, update.index) {
            if bit(&q.cut, update.index) {
                tracing::warn!(
                    call_index = update.index,
                    "a tool cut off by the abort grace sent an update; discarded"
                );
            } else {
                tracing::warn!(
                    call_index = update.index,
                    "a tool sent an update after its call had ended; discarded"
                );
            }
            return Err(update);
        }
        q.updates.push_back(update);
        drop(q);
        self.waker.wake();
        Ok(())
    }

    /// The next update, registering the task to be woken when one arrives.
    pub(crate) fn poll_next(&self, cx: &mut TaskContext<'_>) -> Poll<ToolUpdate> {
        self.waker.register(cx.waker());
        match self.lock().updates.pop_front() {
            Some(u) => Poll::Ready(u),
            None => Poll::Pending,
        }
    }

    /// The next update, if one is queued.
    pub(crate) fn try_next(&self) -> Option<ToolUpdate> {
        self.lock().updates.pop_front()
    }

    /// Marks call `index` as ended (`cut`: by the abort grace): its later updates are
    /// discarded.
    pub(crate) fn end_call(&self, index: usize, cut: bool) {
        let mut q = self.lock();
        set_bit(&mut q.ended, index);
        if cut {
            set_bit(&mut q.cut, index);
        }
    }

    /// Ends the batch: later updates are discarded, and waiting senders are released.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.lock().updates.clear();
    }
}

/// Reports a running tool's partial results as `tool_execution_update` events.
///
/// Cheap to clone and `'static`, so it can be moved into spawned tasks. Updates are delivered
/// in order, each to every listener before the next.
#[derive(Clone)]
pub struct ToolUpdates {
    index: usize,
    queue: Option<Arc<UpdateQueue>>,
}

impl fmt::Debug for ToolUpdates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let connected = self
            .queue
            .as_ref()
            .is_some_and(|q| !q.closed.load(Ordering::Acquire));
        f.debug_struct("ToolUpdates")
            .field("connected", &connected)
            .finish()
    }
}

impl ToolUpdates {
    pub(crate) fn new(index: usize, queue: Arc<UpdateQueue>) -> Self {
        ToolUpdates {
            index,
            queue: Some(queue),
        }
    }

    /// Updates that go nowhere, for calling a tool outside an agent (e.g. in a test).
    pub fn disconnected() -> Self {
        ToolUpdates {
            index: 0,
            queue: None,
        }
    }

    /// Sends a partial result and waits until the agent's listeners have handled it, so a
    /// listener can react (steer, abort) before the tool goes on. Once the tool call has
    /// finished, updates are discarded.
    ///
    /// # Cancel safety
    ///
    /// The update is sent when the future is first polled; dropping the future afterwards
    /// only stops waiting for its delivery.
    pub async fn update(&self, partial: AgentToolResult) {
        let Some(queue) = &self.queue else { return };
        let (delivered, rx) = oneshot::channel();
        let sent = queue.push(ToolUpdate {
            index: self.index,
            partial,
            delivered,
        });
        if sent.is_ok() {
            // An error means the batch is over and the update was dropped: nothing to wait for.
            let _ = rx.await;
        }
    }
}

/// What a [`TypedTool`] function gets besides its arguments.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The id of the call (the tool result answers it).
    pub tool_call_id: String,
    /// Cancelled when the run is aborted.
    pub cancel: CancellationToken,
    /// Reports partial results.
    pub updates: ToolUpdates,
}

/// A tool made of a `serde` + `schemars` argument struct and one async function.
///
/// The JSON Schema the model sees is generated from `T` (doc comments become descriptions);
/// the validated arguments are deserialized into `T` before the function runs.
///
/// ```
/// use pi_engine::agent::{AgentTool, AgentToolResult, ToolContext, TypedTool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Greet {
///     /// Who to greet.
///     name: String,
/// }
///
/// let greet = TypedTool::new("greet", "Greets someone", |args: Greet, _cx: ToolContext| async move {
///     Ok(AgentToolResult::text(format!("Hello, {}!", args.name)))
/// })
/// .with_label("Greeter");
/// assert_eq!(greet.label(), "Greeter");
/// assert_eq!(greet.definition().parameters["properties"]["name"]["description"], "Who to greet.");
/// ```
pub struct TypedTool<T, F> {
    definition: Tool,
    label: Option<String>,
    mode: Option<ToolExecutionMode>,
    run: F,
    _args: PhantomData<fn(T)>,
}

impl<T, F> fmt::Debug for TypedTool<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedTool")
            .field("name", &self.definition.name)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl<T, F, Fut> TypedTool<T, F>
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(T, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
{
    /// A tool `name` described by `description`, whose arguments are a `T`, run by `run`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, run: F) -> Self {
        TypedTool {
            definition: Tool::for_args::<T>(name, description),
            label: None,
            mode: None,
            run,
            _args: PhantomData,
        }
    }

    /// Sets the label shown in a UI (default: the name).
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Makes every batch containing a call of this tool run sequentially.
    #[must_use]
    pub fn sequential(mut self) -> Self {
        self.mode = Some(ToolExecutionMode::Sequential);
        self
    }

    /// The definition the model sees.
    pub fn definition(&self) -> &Tool {
        &self.definition
    }

    /// Wraps the tool for an agent's tool list.
    pub fn into_arc(self) -> Arc<dyn AgentTool> {
        Arc::new(self)
    }
}

#[async_trait::async_trait]
impl<T, F, Fut> AgentTool for TypedTool<T, F>
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(T, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
{
    fn definition(&self) -> &Tool {
        &self.definition
    }

    fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.definition.name)
    }

    fn execution_mode(&self) -> Option<ToolExecutionMode> {
        self.mode
    }

    async fn execute(
        &self,
        tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let args: T = crate::llm::tool_args::parse_arguments(&args).map_err(|e| {
            format!(
                "Invalid arguments for tool \"{}\": {e}",
                self.definition.name
            )
        })?;
        let cx = ToolContext {
            tool_call_id: tool_call_id.to_owned(),
            cancel,
            updates,
        };
        (self.run)(args, cx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    struct Args {
        /// Path to read.
        path: String,
        #[serde(default)]
        limit: Option<u32>,
    }

    #[tokio::test]
    async fn typed_tool_schema_and_execution() {
        let tool = TypedTool::new(
            "read",
            "Read a file",
            |args: Args, cx: ToolContext| async move {
                Ok(AgentToolResult::text(format!(
                    "{} {:?} {}",
                    args.path, args.limit, cx.tool_call_id
                )))
            },
        )
        .with_label("Read")
        .sequential();
        let def = tool.definition();
        assert_eq!(def.parameters["type"], "object");
        assert_eq!(def.parameters["required"], json!(["path"]));
        assert!(def.parameters.get("$schema").is_none());
        assert_eq!(tool.label(), "Read");
        assert_eq!(tool.execution_mode(), Some(ToolExecutionMode::Sequential));
        let args = json!({"path": "a.txt"}).as_object().cloned().unwrap();
        let out = tool
            .execute(
                "c1",
                args,
                CancellationToken::new(),
                ToolUpdates::disconnected(),
            )
            .await
            .unwrap();
        assert_eq!(out.text_content(), "a.txt None c1");
    }

    #[tokio::test]
    async fn typed_tool_reports_bad_arguments() {
        let tool = TypedTool::new("read", "Read", |_: Args, _| async {
            Ok(AgentToolResult::text("never"))
        });
        let err = tool
            .execute(
                "c1",
                Map::new(),
                CancellationToken::new(),
                ToolUpdates::disconnected(),
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("missing field `path`"), "{err}");
    }

    #[test]
    fn result_serializes_like_pi() {
        let r = AgentToolResult::text("x").terminating();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"content": [{"type": "text", "text": "x"}], "details": {}, "terminate": true})
        );
        assert!(r.wants_terminate());
    }

    #[tokio::test]
    async fn disconnected_updates_do_not_block() {
        ToolUpdates::disconnected()
            .update(AgentToolResult::text("1%"))
            .await;
        let queue = UpdateQueue::new();
        queue.close();
        ToolUpdates::new(0, queue)
            .update(AgentToolResult::text("2%"))
            .await;
    }
}
