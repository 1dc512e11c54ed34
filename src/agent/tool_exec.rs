//! Running the tool calls of one assistant message: pi's `executeToolCalls`.
//!
//! Each call is prepared in order — `tool_execution_start`, tool lookup, `prepare_arguments`,
//! validation, `before_tool_call` — and a call that fails there ends at once with an error
//! result (in parallel mode that `tool_execution_end` comes before any tool has started,
//! as in pi). Then the prepared calls run: concurrently, reporting `tool_execution_end` as
//! they finish and the tool-result messages afterwards in the order of the calls; or, in
//! sequential mode, one after the other, each with its result message.
//!
//! Tools run inside the loop's task. While a listener handles an event the tools wait, so a
//! listener is a barrier for tools as for the model stream.
//!
//! After an abort, calls still running (and a `before_tool_call` hook still deciding) get the
//! configured grace (`AgentLoopConfig::tool_abort_grace`, 5 s by default) to return; then they
//! are dropped and end with the error result [`TOOL_ABORTED`], so a tool that ignores its
//! token cannot keep the run streaming. Their later updates are discarded with a warning.

use std::future::{Future, poll_fn};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::Poll;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::agent::config::{
    AfterToolCallContext, AgentContext, AgentLoopConfig, BeforeToolCallContext, MessageEndFn,
    ToolCallDecision,
};
use crate::agent::event::AgentEvent;
use crate::agent::message::AgentMessage;
use crate::agent::sink::{AgentEventSink, emit_message, panic_message};
use crate::agent::tool::{
    AgentTool, AgentToolResult, ToolExecutionMode, ToolUpdate, ToolUpdates, UpdateQueue,
};
use crate::llm::message::{AssistantMessage, ToolCall, ToolResultMessage};
use crate::llm::validation::ToolValidator;

/// The text of the error result of a call that was not started because the run was aborted.
pub(crate) const TOOL_ABORTED: &str = "Operation aborted";

/// The results of one batch of tool calls.
pub(crate) struct ToolBatch {
    /// One result message per call, in the order of the calls.
    pub(crate) messages: Vec<ToolResultMessage>,
    /// Every result asked to end the run.
    pub(crate) terminate: bool,
}

/// A call's outcome.
struct Finalized {
    result: AgentToolResult,
    is_error: bool,
}

impl Finalized {
    fn error(text: impl Into<String>) -> Self {
        Finalized {
            result: AgentToolResult::text(text),
            is_error: true,
        }
    }
}

/// A call that passed preparation and may run.
struct Prepared<'a> {
    tool: &'a Arc<dyn AgentTool>,
    args: Map<String, Value>,
}

/// The compiled argument validators of a run's tools, by position in the run's tool list,
/// each compiled when its tool is first called. A run's tools do not change, so a call
/// never pays for looking its schema up again.
pub(crate) struct ToolValidators(Vec<OnceLock<ToolValidator>>);

impl ToolValidators {
    /// Empty slots for `context`'s tools.
    pub(crate) fn new(context: &AgentContext) -> Self {
        ToolValidators(context.tools.iter().map(|_| OnceLock::new()).collect())
    }

    /// The validator of tool `index` of `context`, `tool`.
    fn get(&self, index: usize, tool: &Arc<dyn AgentTool>) -> std::borrow::Cow<'_, ToolValidator> {
        match self.0.get(index) {
            Some(slot) => std::borrow::Cow::Borrowed(
                slot.get_or_init(|| ToolValidator::new(tool.definition())),
            ),
            None => std::borrow::Cow::Owned(ToolValidator::new(tool.definition())),
        }
    }
}

/// What the calls of a batch share.
struct Batch<'a> {
    context: &'a AgentContext,
    validators: &'a ToolValidators,
    message: &'a AssistantMessage,
    config: &'a AgentLoopConfig,
    cancel: &'a CancellationToken,
    calls: Vec<&'a ToolCall>,
}

pub(crate) async fn execute_tool_calls<E: AgentEventSink>(
    context: &AgentContext,
    validators: &ToolValidators,
    message: &AssistantMessage,
    config: &AgentLoopConfig,
    cancel: &CancellationToken,
    emit: &mut E,
) -> ToolBatch {
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    let sequential = config.tool_execution == ToolExecutionMode::Sequential
        || calls.iter().any(|c| {
            context
                .tool(&c.name)
                .is_some_and(|t| t.execution_mode() == Some(ToolExecutionMode::Sequential))
        });
    let batch = Batch {
        context,
        validators,
        message,
        config,
        cancel,
        calls,
    };
    let updates = UpdateQueue::new();
    let result = if sequential {
        batch.run_sequential(emit, &updates).await
    } else {
        let finalized = batch.run_parallel(emit, &updates).await;
        let terminate = all_terminate(&finalized);
        let mut messages = Vec::with_capacity(finalized.len());
        for (f, call) in finalized.into_iter().zip(&batch.calls) {
            let m = result_message(call, f);
            messages.push(emit_result_message(emit, m, config.hooks.message_end.as_deref()).await);
        }
        ToolBatch {
            messages,
            terminate,
        }
    };
    updates.close();
    result
}

fn all_terminate(finalized: &[Finalized]) -> bool {
    !finalized.is_empty() && finalized.iter().all(|f| f.result.wants_terminate())
}

fn result_message(call: &ToolCall, f: Finalized) -> ToolResultMessage {
    let AgentToolResult {
        content, details, ..
    } = f.result;
    let mut m = ToolResultMessage::new(call.id.clone(), call.name.clone(), content, f.is_error);
    if !details.is_null() {
        m.details = Some(details);
    }
    m
}

/// Emits a tool result's `message_start` and `message_end`, lending it to the sink.
async fn emit_result_message<E: AgentEventSink>(
    emit: &mut E,
    m: ToolResultMessage,
    hook: Option<&MessageEndFn>,
) -> ToolResultMessage {
    match emit_message(emit, AgentMessage::ToolResult(m), true, hook).await {
        AgentMessage::ToolResult(m) => m,
        _ => unreachable!("emit_message keeps the role"),
    }
}

impl<'a> Batch<'a> {
    async fn emit_start<E: AgentEventSink>(&self, emit: &mut E, index: usize) {
        let call = self.calls[index];
        emit.emit(&AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
        })
        .await;
    }

    /// Emits `tool_execution_end`, lending the result to the sink.
    async fn emit_end<E: AgentEventSink>(
        &self,
        emit: &mut E,
        index: usize,
        f: Finalized,
    ) -> Finalized {
        let call = self.calls[index];
        let event = AgentEvent::ToolExecutionEnd {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: f.result,
            is_error: f.is_error,
        };
        emit.emit(&event).await;
        match event {
            AgentEvent::ToolExecutionEnd {
                result, is_error, ..
            } => Finalized { result, is_error },
            _ => unreachable!("built above"),
        }
    }

    async fn emit_update<E: AgentEventSink>(&self, emit: &mut E, update: ToolUpdate) {
        let Some(call) = self.calls.get(update.index) else {
            return;
        };
        emit.emit(&AgentEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            partial_result: update.partial,
        })
        .await;
        let _ = update.delivered.send(());
    }

    async fn run_sequential<E: AgentEventSink>(
        &self,
        emit: &mut E,
        updates: &Arc<UpdateQueue>,
    ) -> ToolBatch {
        let mut messages = Vec::with_capacity(self.calls.len());
        let mut terminate = !self.calls.is_empty();
        for index in 0..self.calls.len() {
            self.emit_start(emit, index).await;
            let finalized = match self.prepare(index).await {
                Err(f) => self.emit_end(emit, index, f).await,
                Ok(p) => {
                    let handle = ToolUpdates::new(index, updates.clone());
                    let running = vec![(index, Box::pin(self.run_prepared(index, p, handle)))];
                    // `drive` emits the call's updates and its tool_execution_end.
                    match self.drive(emit, running, updates).await.pop() {
                        Some((_, f)) => f,
                        None => Finalized::error("The tool call did not finish"),
                    }
                }
            };
            terminate &= finalized.result.wants_terminate();
            let m = result_message(self.calls[index], finalized);
            messages
                .push(emit_result_message(emit, m, self.config.hooks.message_end.as_deref()).await);
        }
        ToolBatch {
            messages,
            terminate,
        }
    }

    async fn run_parallel<E: AgentEventSink>(
        &self,
        emit: &mut E,
        updates: &Arc<UpdateQueue>,
    ) -> Vec<Finalized> {
        let n = self.calls.len();
        let mut slots: Vec<Option<Finalized>> = (0..n).map(|_| None).collect();
        let mut running = Vec::new();
        for (index, slot) in slots.iter_mut().enumerate() {
            self.emit_start(emit, index).await;
            match self.prepare(index).await {
                Err(f) => *slot = Some(self.emit_end(emit, index, f).await),
                Ok(p) => {
                    let handle = ToolUpdates::new(index, updates.clone());
                    running.push((index, Box::pin(self.run_prepared(index, p, handle))));
                }
            }
        }
        for (index, f) in self.drive(emit, running, updates).await {
            slots[index] = Some(f);
        }
        slots
            .into_iter()
            .map(|s| s.unwrap_or_else(|| Finalized::error("The tool call did not finish")))
            .collect()
    }

    /// Polls the running calls and the update channel until every call has finished:
    /// updates are emitted as they come, `tool_execution_end` as each call finishes (after
    /// the updates it sent). Calls that finish in the same poll are reported in call order.
    ///
    /// Once the run is aborted, the calls still running get the abort grace to return; then
    /// they are dropped and end with the error result [`TOOL_ABORTED`].
    async fn drive<E, F>(
        &self,
        emit: &mut E,
        running: Vec<(usize, Pin<Box<F>>)>,
        updates: &UpdateQueue,
    ) -> Vec<(usize, Finalized)>
    where
        E: AgentEventSink,
        F: Future<Output = Finalized>,
    {
        enum Step {
            Update(ToolUpdate),
            Done,
            GraceOver,
        }
        let mut done = Vec::with_capacity(running.len());
        // Which calls are still running (by call index), for the ones the grace cuts off.
        let mut open = vec![false; self.calls.len()];
        for (index, _) in &running {
            open[*index] = true;
        }
        let mut pending = Running::new(running);
        let mut cancelled = std::pin::pin!(self.cancel.cancelled());
        let mut grace: Option<Pin<Box<tokio::time::Sleep>>> = None;
        let mut finished = Vec::new();
        while !pending.is_empty() {
            let step = poll_fn(|cx| {
                if let Poll::Ready(u) = updates.poll_next(cx) {
                    return Poll::Ready(Step::Update(u));
                }
                while let Poll::Ready(Some(f)) = pending.poll_next(cx) {
                    finished.push(f);
                }
                if !finished.is_empty() {
                    return Poll::Ready(Step::Done);
                }
                if grace.is_none() && cancelled.as_mut().poll(cx).is_ready() {
                    grace = Some(Box::pin(tokio::time::sleep(self.config.tool_abort_grace)));
                }
                if let Some(sleep) = &mut grace
                    && sleep.as_mut().poll(cx).is_ready()
                {
                    return Poll::Ready(Step::GraceOver);
                }
                Poll::Pending
            })
            .await;
            match step {
                Step::Update(u) => self.emit_update(emit, u).await,
                Step::Done => {
                    finished.sort_unstable_by_key(|(index, _)| *index);
                    for (index, f) in std::mem::take(&mut finished) {
                        while let Some(u) = updates.try_next() {
                            self.emit_update(emit, u).await;
                        }
                        updates.end_call(index, false);
                        open[index] = false;
                        let f = self.emit_end(emit, index, f).await;
                        done.push((index, f));
                    }
                }
                Step::GraceOver => {
                    // Dropping the futures stops the tools where they wait.
                    drop(pending);
                    while let Some(u) = updates.try_next() {
                        self.emit_update(emit, u).await;
                    }
                    let cut = (0..open.len()).filter(|&i| open[i]);
                    for index in cut.collect::<Vec<_>>() {
                        let call = self.calls[index];
                        tracing::warn!(
                            tool = %call.name,
                            tool_call_id = %call.id,
                            grace = ?self.config.tool_abort_grace,
                            "the tool did not return within the abort grace; it was dropped"
                        );
                        updates.end_call(index, true);
                        let f = self
                            .emit_end(emit, index, Finalized::error(TOOL_ABORTED))
                            .await;
                        done.push((index, f));
                    }
                    break;
                }
            }
        }
        done
    }

    /// Runs `fut` (a hook) to its end, or, when the run is aborted, for at most the abort
    /// grace after the abort. `None` when it was cut off.
    async fn within_abort_grace<T>(&self, fut: impl Future<Output = T>) -> Option<T> {
        let mut fut = std::pin::pin!(fut);
        tokio::select! {
            biased;
            v = &mut fut => return Some(v),
            () = self.cancel.cancelled() => {}
        }
        tokio::select! {
            biased;
            v = fut => Some(v),
            () = tokio::time::sleep(self.config.tool_abort_grace) => None,
        }
    }

    /// Tool lookup, `prepare_arguments`, validation and `before_tool_call`. `Err` is the
    /// call's immediate (error) outcome.
    async fn prepare(&self, index: usize) -> Result<Prepared<'a>, Finalized> {
        let call = self.calls[index];
        let tools = &self.context.tools;
        let Some(index) = tools.iter().position(|t| t.name() == call.name) else {
            return Err(Finalized::error(format!("Tool {} not found", call.name)));
        };
        let tool = &tools[index];
        let prepared =
            std::panic::catch_unwind(AssertUnwindSafe(|| tool.prepare_arguments(&call.arguments)))
                .map_err(|p| Finalized::error(panic_message(&*p)))?;
        let validator = self.validators.get(index, tool);
        let validated = match prepared {
            None => validator.validate(call),
            Some(args) => {
                let mut call = call.clone();
                call.arguments = args;
                validator.validate(&call)
            }
        };
        // The error is pi's text (TypeBox's wording), which the model reads.
        let mut args = validated.map_err(|e| Finalized::error(e.to_string()))?;
        if let Some(hook) = &self.config.hooks.before_tool_call {
            let cx = BeforeToolCallContext {
                assistant_message: self.message,
                tool_call: call,
                args: &args,
                context: self.context,
                cancel: self.cancel,
            };
            let decision = match std::panic::catch_unwind(AssertUnwindSafe(|| hook(cx))) {
                Ok(fut) => {
                    match self
                        .within_abort_grace(AssertUnwindSafe(fut).catch_unwind())
                        .await
                    {
                        Some(decision) => decision,
                        None => {
                            tracing::warn!(
                                tool = %call.name,
                                tool_call_id = %call.id,
                                "before_tool_call did not return within the abort grace; \
                                 it was dropped"
                            );
                            return Err(Finalized::error(TOOL_ABORTED));
                        }
                    }
                }
                Err(p) => Err(p),
            };
            match decision {
                Ok(ToolCallDecision::Allow) => {}
                Ok(ToolCallDecision::AllowWith(rewritten)) => args = rewritten,
                Ok(ToolCallDecision::Block(reason)) => {
                    return Err(Finalized::error(
                        reason.unwrap_or_else(|| "Tool execution was blocked".to_owned()),
                    ));
                }
                Err(p) => return Err(Finalized::error(panic_message(&*p))),
            }
        }
        Ok(Prepared { tool, args })
    }

    /// Executes a prepared call and applies `after_tool_call`.
    async fn run_prepared(&self, index: usize, p: Prepared<'a>, updates: ToolUpdates) -> Finalized {
        let call = self.calls[index];
        // A call that has not started when the run is aborted is not started at all.
        if self.cancel.is_cancelled() {
            return Finalized::error(TOOL_ABORTED);
        }
        let after = self.config.hooks.after_tool_call.as_ref();
        let kept_args = after.map(|_| p.args.clone());
        let executed = execute_tool(p.tool, call, p.args, self.cancel.child_token(), updates).await;
        let (Some(hook), Some(args)) = (after, kept_args) else {
            return executed;
        };
        let cx = AfterToolCallContext {
            assistant_message: self.message,
            tool_call: call,
            args: &args,
            result: &executed.result,
            is_error: executed.is_error,
            context: self.context,
            cancel: self.cancel,
        };
        let replaced = match std::panic::catch_unwind(AssertUnwindSafe(|| hook(cx))) {
            Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
            Err(p) => Err(p),
        };
        match replaced {
            Ok(None) => executed,
            Ok(Some(r)) => {
                let Finalized {
                    mut result,
                    is_error,
                } = executed;
                if let Some(content) = r.content {
                    result.content = content;
                }
                if let Some(details) = r.details {
                    result.details = details;
                }
                if r.terminate.is_some() {
                    result.terminate = r.terminate;
                }
                Finalized {
                    result,
                    is_error: r.is_error.unwrap_or(is_error),
                }
            }
            Err(p) => Finalized::error(panic_message(&*p)),
        }
    }
}

/// Runs a tool, turning an `Err` or a panic into an error result.
async fn execute_tool(
    tool: &Arc<dyn AgentTool>,
    call: &ToolCall,
    args: Map<String, Value>,
    cancel: CancellationToken,
    updates: ToolUpdates,
) -> Finalized {
    let panicked = |p: Box<dyn std::any::Any + Send>| {
        Finalized::error(format!(
            "Tool {} panicked: {}",
            call.name,
            panic_message(&*p)
        ))
    };
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| {
        tool.execute(&call.id, args, cancel, updates)
    })) {
        Ok(fut) => fut,
        Err(p) => return panicked(p),
    };
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(Ok(result)) => Finalized {
            result,
            is_error: false,
        },
        Ok(Err(e)) => Finalized::error(e.to_string()),
        Err(p) => panicked(p),
    }
}

/// The tool calls of a batch still running. One call (the common case) is polled directly;
/// more are polled only when woken ([`FuturesUnordered`]), so a batch of many calls costs
/// O(1) per wake-up, not O(calls).
enum Running<F> {
    One(Option<(usize, Pin<Box<F>>)>),
    Many(FuturesUnordered<futures::future::Map<Pin<Box<F>>, IndexedDone>>),
}

/// Pairs a finished call with its index (a named fn type, so `Running` can name the map).
type IndexedDone = Box<dyn FnOnce(Finalized) -> (usize, Finalized) + Send>;

impl<F: Future<Output = Finalized>> Running<F> {
    fn new(mut running: Vec<(usize, Pin<Box<F>>)>) -> Self {
        if running.len() == 1 {
            return Running::One(running.pop());
        }
        Running::Many(
            running
                .into_iter()
                .map(|(index, fut)| {
                    let pair: IndexedDone = Box::new(move |f| (index, f));
                    fut.map(pair)
                })
                .collect(),
        )
    }

    fn is_empty(&self) -> bool {
        match self {
            Running::One(one) => one.is_none(),
            Running::Many(many) => many.is_empty(),
        }
    }

    fn poll_next(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Option<(usize, Finalized)>> {
        match self {
            Running::One(slot) => match slot {
                None => Poll::Ready(None),
                Some((index, fut)) => match fut.as_mut().poll(cx) {
                    Poll::Ready(f) => {
                        let index = *index;
                        *slot = None;
                        Poll::Ready(Some((index, f)))
                    }
                    Poll::Pending => Poll::Pending,
                },
            },
            Running::Many(many) => many.poll_next_unpin(cx),
        }
    }
}
