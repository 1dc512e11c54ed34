//! [`AgentSession`] itself: the agent, the session file and the model registry held
//! together; prompting, persistence, events, retries.

use std::borrow::Cow;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::error::AgentSessionError;
use super::event::{AgentSessionEvent, SessionEvent};
use super::retry::{is_retryable, retry_delay};
use super::settings::{AgentSessionSettings, SettingsChange};
use super::stats::{self, ContextUsage, SessionStats};
use crate::agent::CustomMessageType;
use crate::agent::{
    Agent, AgentError, AgentEvent, AgentMessage, PromptInput, QueueMode, RunOutcome, StreamFn,
};
use crate::extensions::runner::ExtensionRunner;
use crate::extensions::{InputAction, InputEvent, InputSource};
use crate::llm::error::Error;
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::{AssistantMessage, Context, StopReason};
use crate::llm::model::Model;
use crate::llm::models::{ModelRegistry, RequestAuth};
use crate::llm::options::{PayloadHook, ResponseHook, ResponseInfo, RetryPolicy, StreamOptions};
use crate::llm::thinking::ThinkingLevel;
use crate::session::{
    CompactionSummaryMessage, ExtensionMessage, SessionContext, SessionError, SessionManager,
};

/// Expands a prompt's text before it is sent (a front end's prompt templates and skill
/// commands).
pub(super) type ExpandFn = dyn Fn(String) -> BoxFuture<'static, String> + Send + Sync;

/// Told of the settings a person changed (pi saves them in `settings.json`).
pub(super) type SettingsFn = dyn Fn(&super::settings::SettingsChange) + Send + Sync;

/// Builds the system prompt for the active tools (pi's `_rebuildSystemPrompt`).
pub(super) type PromptFn = dyn Fn(&[Arc<dyn crate::agent::AgentTool>]) -> String + Send + Sync;

/// A user-supplied context transformation, run after the session's own.
pub(super) type TransformFn = dyn for<'a> Fn(&'a [AgentMessage], &'a CancellationToken) -> BoxFuture<'a, Cow<'a, [AgentMessage]>>
    + Send
    + Sync;

/// A model with the thinking level to use with it when cycling (pi's `ScopedModel`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ScopedModel {
    /// The model.
    pub model: Model,
    /// The level to switch to with it; `None` keeps the current one (clamped).
    pub thinking_level: Option<ThinkingLevel>,
}

impl ScopedModel {
    /// `model`, keeping the thinking level when cycling to it.
    pub fn new(model: Model) -> Self {
        ScopedModel {
            model,
            thinking_level: None,
        }
    }

    /// `model` with the level to switch to.
    pub fn with_thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.thinking_level = Some(level);
        self
    }
}

impl From<Model> for ScopedModel {
    fn from(model: Model) -> Self {
        ScopedModel::new(model)
    }
}

/// The run's messages as the model sees them after a compaction in the middle of a run:
/// `messages` replaces the run's first `base_len` messages.
pub(super) struct Overlay {
    pub(super) base_len: usize,
    pub(super) messages: Vec<AgentMessage>,
}

/// Mutable state, behind one lock (never held across an await or a listener call).
pub(super) struct State {
    pub(super) settings: AgentSessionSettings,
    pub(super) scoped_models: Vec<ScopedModel>,
    pub(super) retry_attempt: u32,
    pub(super) overflow_attempted: bool,
    pub(super) steering_texts: Vec<String>,
    pub(super) follow_up_texts: Vec<String>,
    pub(super) overlay: Option<Overlay>,
    /// Set after a compaction during a run that left the context over the threshold: no
    /// more compactions in that run (each would cost a summary and gain nothing).
    pub(super) guard_off: bool,
    /// Whether the warning that the compaction reserve does not fit the model's window was
    /// given (it is given once).
    pub(super) reserve_warned: bool,
    /// The last assistant message of the current run, and its entry and the entry before it.
    pub(super) last_assistant: Option<AssistantMessage>,
    pub(super) last_assistant_entry: Option<(String, Option<String>)>,
    pub(super) persist_error: Option<SessionError>,
    pub(super) compaction_cancel: Option<CancellationToken>,
    pub(super) branch_summary_cancel: Option<CancellationToken>,
    pub(super) retry_cancel: Option<CancellationToken>,
    pub(super) model_fallback_message: Option<String>,
    /// Stops the person's command that runs ([`AgentSession::execute_bash`]).
    pub(super) bash_cancel: Option<CancellationToken>,
    /// Commands a person ran while the agent ran, recorded after the run.
    #[cfg_attr(not(feature = "tools"), allow(dead_code))]
    pub(super) pending_bash: Vec<AgentMessage>,
}

type Listener = dyn Fn(&AgentSessionEvent) + Send + Sync;

struct ListenerEntry {
    id: u64,
    active: AtomicBool,
    f: Box<Listener>,
}

pub(crate) struct Inner {
    pub(super) agent: Agent,
    pub(super) session: Mutex<SessionManager>,
    /// Replaced as a whole when an extension registers a provider: a call reads the
    /// registry it started with.
    registry: std::sync::RwLock<Arc<ModelRegistry>>,
    /// Every tool the session knows; the agent's are the active ones.
    pub(super) all_tools: Mutex<Vec<Arc<dyn crate::agent::AgentTool>>>,
    /// Models known beyond the registry (given to the builder).
    pub(super) models: Vec<Model>,
    /// The application's stream function; `None`: the registry's `stream_simple`.
    pub(super) stream: Option<Arc<dyn StreamFn>>,
    /// The application's options of every model call.
    pub(super) options: Mutex<StreamOptions>,
    pub(super) transform: Option<Arc<TransformFn>>,
    pub(super) expand: Option<Arc<ExpandFn>>,
    pub(super) prompt_for_tools: Option<Arc<PromptFn>>,
    pub(super) on_settings_change: Option<Arc<SettingsFn>>,
    pub(super) state: Mutex<State>,
    listeners: Mutex<Arc<[Arc<ListenerEntry>]>>,
    next_listener: AtomicU64,
    /// The operation running (a prompt with its retries, a compaction, a navigation…).
    op: Mutex<Option<CancellationToken>>,
    idle: Notify,
    /// The key and headers resolved for the next model call of the run.
    pub(super) auth: Mutex<Option<Result<RequestAuth, Error>>>,
    /// Held by each append from its start until it is recorded, so appends are written
    /// and recorded one at a time, in the order they were asked for (FIFO).
    pub(super) write_gate: Arc<tokio::sync::Mutex<()>>,
    /// The session's extensions (`None`: none were given).
    pub(crate) extensions: Option<Arc<ExtensionRunner>>,
    /// This session, weakly (for the hooks it hands to its model calls).
    weak: Weak<Inner>,
}

/// Locks a mutex; the state behind each lock stays consistent across a panic (updates are
/// single assignments), so poisoning is ignored.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An agent that lives in a session file: every message is written as it ends, and a later
/// process reopens the conversation where it stopped — with its model, thinking level and
/// context. It compacts the context before it overflows, retries failed calls, switches
/// models and moves through the session tree, as pi's `AgentSession` does.
///
/// Cheap to clone (an `Arc`); `Send + Sync`. See the [module docs](super) for an example.
#[derive(Clone)]
pub struct AgentSession {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for AgentSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("AgentSession");
        d.field("agent", &self.inner.agent);
        if let Ok(sm) = self.inner.session.try_lock() {
            d.field("session_id", &sm.session_id());
            d.field("session_file", &sm.session_file());
        }
        d.finish_non_exhaustive()
    }
}

/// A session held weakly (an extension's observer task holds one, so it ends with the
/// session).
#[derive(Debug, Clone)]
pub(crate) struct WeakSession(Weak<Inner>);

impl WeakSession {
    pub(crate) fn upgrade(&self) -> Option<AgentSession> {
        self.0.upgrade().map(|inner| AgentSession { inner })
    }
}

/// Returned by [`AgentSession::subscribe`]; [`unsubscribe`](Self::unsubscribe) removes the
/// listener. Dropping it keeps the listener.
#[derive(Debug)]
pub struct SessionSubscription {
    inner: Weak<Inner>,
    id: u64,
}

impl SessionSubscription {
    /// Removes the listener.
    pub fn unsubscribe(self) {
        if let Some(inner) = self.inner.upgrade() {
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

/// Clears the running operation when it ends, however it ends.
pub(super) struct OpGuard<'a>(&'a Inner);

impl Drop for OpGuard<'_> {
    fn drop(&mut self) {
        *lock(&self.0.op) = None;
        self.0.idle.notify_waiters();
    }
}

/// What the retry logic decided.
enum Retry {
    /// The failed reply was removed and the delay waited: continue the run.
    Continue,
    /// Retries are used up: go on to the compaction check.
    Exhausted,
    /// Cancelled: stop.
    Stop,
}

/// What an [`Inner`] is made of, besides its agent.
pub(super) struct Parts {
    pub(super) session: SessionManager,
    pub(super) registry: ModelRegistry,
    pub(super) all_tools: Vec<Arc<dyn crate::agent::AgentTool>>,
    pub(super) models: Vec<Model>,
    pub(super) stream: Option<Arc<dyn StreamFn>>,
    pub(super) options: StreamOptions,
    pub(super) transform: Option<Arc<TransformFn>>,
    pub(super) expand: Option<Arc<ExpandFn>>,
    pub(super) prompt_for_tools: Option<Arc<PromptFn>>,
    pub(super) on_settings_change: Option<Arc<SettingsFn>>,
    pub(super) state: State,
    pub(super) extensions: Option<Arc<ExtensionRunner>>,
}

/// What the compaction check decided.
pub(super) enum AfterCheck {
    Done,
    Continue,
}

impl Inner {
    pub(super) fn new(agent_for: impl FnOnce(&Weak<Inner>) -> Agent, parts: Parts) -> Arc<Inner> {
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| Inner {
            agent: agent_for(weak),
            session: Mutex::new(parts.session),
            registry: std::sync::RwLock::new(Arc::new(parts.registry)),
            all_tools: Mutex::new(parts.all_tools),
            models: parts.models,
            stream: parts.stream,
            options: Mutex::new(parts.options),
            transform: parts.transform,
            expand: parts.expand,
            prompt_for_tools: parts.prompt_for_tools,
            on_settings_change: parts.on_settings_change,
            state: Mutex::new(parts.state),
            listeners: Mutex::new(Arc::from(Vec::new())),
            next_listener: AtomicU64::new(0),
            op: Mutex::new(None),
            idle: Notify::new(),
            auth: Mutex::new(None),
            write_gate: Arc::new(tokio::sync::Mutex::new(())),
            extensions: parts.extensions,
            weak: weak.clone(),
        });
        let weak = Arc::downgrade(&inner);
        inner.agent.subscribe_hook(move |event, agent| {
            weak.upgrade()
                .and_then(|inner| Inner::on_agent_event(inner, event, agent))
        });
        inner.apply_agent_options();
        inner
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Tells the front end of a setting a person changed (a panicking callback is logged).
    pub(super) fn settings_changed(&self, change: super::settings::SettingsChange) {
        if let Some(f) = &self.on_settings_change
            && std::panic::catch_unwind(AssertUnwindSafe(|| f(&change))).is_err()
        {
            tracing::error!(?change, "a settings-change callback panicked");
        }
    }

    /// The model registry as it is now.
    pub(super) fn registry(&self) -> Arc<ModelRegistry> {
        self.registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Changes the registry (copy on write: calls under way keep the one they read).
    pub(super) fn update_registry<R>(&self, f: impl FnOnce(&mut ModelRegistry) -> R) -> R {
        let mut guard = self.registry.write().unwrap_or_else(|e| e.into_inner());
        f(Arc::make_mut(&mut guard))
    }

    pub(super) fn session(&self) -> MutexGuard<'_, SessionManager> {
        lock(&self.session)
    }

    pub(super) fn model(&self) -> Model {
        self.agent.state().model.clone()
    }

    /// The options the agent calls the model with: the application's, the session id (for
    /// prompt caching), and — while the session retries — no provider-level retries, so
    /// that one budget of attempts covers a model call.
    pub(super) fn apply_agent_options(&self) {
        let mut options = lock(&self.options).clone();
        options.session_id = Some(self.session().session_id().to_owned());
        let retry = self.state().settings.retry;
        if retry.enabled {
            options.retry = Some(RetryPolicy::none());
        }
        options.max_retry_delay_ms.get_or_insert(retry.max_delay_ms);
        self.add_provider_hooks(&mut options);
        self.agent.set_options(options);
    }

    /// The extensions' `before_provider_request` and `after_provider_response`, after the
    /// application's own hooks.
    fn add_provider_hooks(&self, options: &mut StreamOptions) {
        let Some(runner) = &self.extensions else {
            return;
        };
        let (request, response) = runner.has_provider_hooks();
        if request {
            let app = options.on_payload.take();
            let weak = self.weak.clone();
            options.on_payload = Some(PayloadHook::new_async(move |body| {
                let app = app.clone();
                let weak = weak.clone();
                async move {
                    let body = match &app {
                        Some(hook) => hook.apply(body).await,
                        None => body,
                    };
                    let Some(inner) = weak.upgrade() else {
                        return body;
                    };
                    let Some(runner) = inner.extensions.clone() else {
                        return body;
                    };
                    let session = AgentSession { inner };
                    runner.before_provider_request(&session, body).await
                }
            }));
        }
        if response {
            let app = options.on_response.take();
            let weak = self.weak.clone();
            options.on_response = Some(ResponseHook::new(move |info: ResponseInfo| {
                let app = app.clone();
                let weak = weak.clone();
                async move {
                    if let Some(hook) = &app {
                        hook.call(info.clone()).await;
                    }
                    let Some(inner) = weak.upgrade() else {
                        return;
                    };
                    let Some(runner) = inner.extensions.clone() else {
                        return;
                    };
                    let session = AgentSession { inner };
                    let event = crate::extensions::ProviderResponseEvent {
                        status: info.status,
                        headers: info.headers,
                    };
                    runner.after_provider_response(&session, event).await;
                }
            }));
        }
    }

    // ----- events -------------------------------------------------------------------

    pub(super) fn add_listener(self: &Arc<Self>, f: Box<Listener>) -> SessionSubscription {
        let id = self.next_listener.fetch_add(1, Ordering::Relaxed);
        let mut listeners = lock(&self.listeners);
        let mut all: Vec<_> = listeners.iter().cloned().collect();
        all.push(Arc::new(ListenerEntry {
            id,
            active: AtomicBool::new(true),
            f,
        }));
        *listeners = Arc::from(all);
        SessionSubscription {
            inner: Arc::downgrade(self),
            id,
        }
    }

    fn dispatch(&self, event: &AgentSessionEvent) {
        if let Some(runner) = &self.extensions {
            runner.observe(event);
        }
        let listeners = lock(&self.listeners).clone();
        for l in listeners.iter() {
            if !l.active.load(Ordering::Acquire) {
                continue;
            }
            if std::panic::catch_unwind(AssertUnwindSafe(|| (l.f)(event))).is_err() {
                tracing::error!(event = event.kind(), "an agent session listener panicked");
            }
        }
    }

    pub(super) fn emit(&self, event: SessionEvent) {
        self.dispatch(&AgentSessionEvent::Session(event));
    }

    fn emit_agent(&self, event: &AgentEvent) {
        // An event is cloned only for someone who looks at it.
        let observed = self.extensions.as_ref().is_some_and(|r| r.has_observers());
        if lock(&self.listeners).is_empty() && !observed {
            return;
        }
        self.dispatch(&AgentSessionEvent::Agent(event.clone()));
    }

    pub(super) fn queue_update(&self) -> SessionEvent {
        let st = self.state();
        SessionEvent::QueueUpdate {
            steering: st.steering_texts.clone(),
            follow_up: st.follow_up_texts.clone(),
        }
    }

    /// Every agent event passes here first (in the agent's loop, which waits for it):
    /// queues, persistence and retry bookkeeping, then the session's listeners. A
    /// `message_end` returns a future — the loop awaits it — that writes the message through
    /// the session's [`SessionWriter`](crate::session::SessionWriter) (the I/O off the
    /// executor) before the listeners see it; other events are handled at once.
    fn on_agent_event<'a>(
        self: Arc<Self>,
        event: &'a AgentEvent,
        agent: &'a Agent,
    ) -> Option<BoxFuture<'a, ()>> {
        if let AgentEvent::MessageEnd { message } = event {
            return Some(Box::pin(async move {
                if let Err(e) = self.persist(message).await {
                    tracing::error!(error = %e, "could not write a message to the session; aborting the run");
                    self.state().persist_error = Some(e);
                    agent.abort();
                }
                self.after_agent_event(event);
            }));
        }
        match event {
            // An abort that came before the run existed still stops it.
            AgentEvent::AgentStart if lock(&self.op).as_ref().is_some_and(|t| t.is_cancelled()) => {
                agent.abort();
            }
            AgentEvent::MessageStart {
                message: AgentMessage::User(user),
            } => {
                let text = user.content.text();
                let changed = {
                    let mut st = self.state();
                    st.overflow_attempted = false;
                    if let Some(i) = st.steering_texts.iter().position(|t| *t == text) {
                        st.steering_texts.remove(i);
                        true
                    } else if let Some(i) = st.follow_up_texts.iter().position(|t| *t == text) {
                        st.follow_up_texts.remove(i);
                        true
                    } else {
                        false
                    }
                };
                if changed {
                    self.emit(self.queue_update());
                }
            }
            _ => {}
        }
        self.after_agent_event(event);
        None
    }

    /// The session's listeners, then the retry bookkeeping of a reply that ended.
    fn after_agent_event(&self, event: &AgentEvent) {
        self.emit_agent(event);
        if let AgentEvent::MessageEnd {
            message: AgentMessage::Assistant(reply),
        } = event
        {
            let ended = {
                let mut st = self.state();
                st.last_assistant = Some(reply.clone());
                if reply.stop_reason != StopReason::Error {
                    st.overflow_attempted = false;
                }
                match reply.stop_reason {
                    StopReason::Error => None,
                    _ if st.retry_attempt == 0 => None,
                    StopReason::Aborted => Some((
                        false,
                        std::mem::take(&mut st.retry_attempt),
                        reply.error_message.clone(),
                    )),
                    _ => Some((true, std::mem::take(&mut st.retry_attempt), None)),
                }
            };
            if let Some((success, attempt, final_error)) = ended {
                self.emit(SessionEvent::AutoRetryEnd {
                    success,
                    attempt,
                    final_error,
                });
            }
        }
    }

    /// Writes a message that ended: user, assistant and tool results (and other roles, such
    /// as `bashExecution`) as `message` entries, extension messages (`custom`) as
    /// `custom_message` entries. Summaries are entries of their own and not written here.
    #[cfg(feature = "tools")]
    pub(super) async fn persist_message(
        self: &Arc<Self>,
        message: &AgentMessage,
    ) -> Result<(), SessionError> {
        self.persist(message).await
    }

    async fn persist(self: &Arc<Self>, message: &AgentMessage) -> Result<(), SessionError> {
        match message {
            AgentMessage::Custom(c) if c.role() == ExtensionMessage::ROLE => {
                match message.to_custom::<ExtensionMessage>() {
                    Some(Ok(m)) => {
                        self.append(move |sm| {
                            sm.append_custom_message_entry(
                                m.custom_type,
                                m.content,
                                m.display,
                                m.details,
                            )
                        })
                        .await?;
                    }
                    _ => {
                        let message = message.clone();
                        self.append(move |sm| sm.append_message(message)).await?;
                    }
                }
            }
            AgentMessage::Custom(c)
                if c.role() == CompactionSummaryMessage::ROLE || c.role() == "branchSummary" => {}
            AgentMessage::Assistant(_) => {
                let message = message.clone();
                let (id, parent) = self
                    .append(move |sm| {
                        let parent = sm.leaf_id().map(str::to_owned);
                        sm.append_message(message).map(|id| (id, parent))
                    })
                    .await?;
                self.state().last_assistant_entry = Some((id, parent));
            }
            _ => {
                let message = message.clone();
                self.append(move |sm| sm.append_message(message)).await?;
            }
        }
        Ok(())
    }

    /// Appends one entry to the session through its
    /// [`SessionWriter`](crate::session::SessionWriter): `append` (an `append_*` call on the
    /// manager, which may return more than the id) prepares it under the manager's lock, the
    /// writer writes and syncs it off the executor, then the manager records it. Appends are
    /// made one at a time, in the order they were asked for. Returns once the entry is
    /// durable (per the session's [`FsyncPolicy`](crate::session::FsyncPolicy)) and recorded.
    ///
    /// # Cancellation
    ///
    /// Dropped while waiting for an earlier append: nothing is written. Dropped later: the
    /// append completes in a task of its own — written, synced and recorded (the leaf moves
    /// to it) — and only the result is lost (a failure is logged).
    pub(super) async fn append<T, F>(self: &Arc<Self>, append: F) -> Result<T, SessionError>
    where
        T: Send + 'static,
        F: FnOnce(&mut SessionManager) -> Result<T, SessionError> + Send + 'static,
    {
        let gate = self.write_gate.clone().lock_owned().await;
        {
            let mut sm = self.session();
            if !sm.is_persisted() {
                // In memory there is no I/O to wait for: append at once.
                drop(gate);
                return append(&mut sm);
            }
        }
        let inner = self.clone();
        let task = async move {
            let _gate = gate;
            let prepare = move |sm: &mut SessionManager| {
                let mut extra = None;
                let prepared = sm.prepare(|sm| {
                    let value = append(sm)?;
                    extra = Some(value);
                    Ok(String::new())
                })?;
                Ok::<_, SessionError>((prepared, extra, sm.writer()))
            };
            let needs_rewrite = inner.session().needs_rewrite();
            let (mut prepared, value, writer) = if needs_rewrite {
                // An old-format file is rewritten before its first append: blocking work.
                let i = inner.clone();
                match tokio::task::spawn_blocking(move || prepare(&mut i.session())).await {
                    Ok(r) => r?,
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(_) => return Err(inner.writer_stopped()),
                }
            } else {
                prepare(&mut inner.session())?
            };
            let spans = writer.append(prepared.take_lines()).await?;
            {
                let mut sm = inner.session();
                if sm.session_id() == prepared.session_id() {
                    sm.commit(prepared, spans);
                } else {
                    // The session was replaced while the entry was written (to the old file).
                    tracing::debug!(
                        "an entry was written to a session that was replaced meanwhile"
                    );
                }
            }
            value.ok_or_else(|| inner.writer_stopped())
        };
        // The append runs in a task of its own, so that it completes (and is recorded) even
        // when this future is dropped; its result comes back over a channel.
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let result = AssertUnwindSafe(task).catch_unwind().await;
            if let Err(Ok(Err(e))) = tx.send(result) {
                tracing::error!(error = %e, "an entry whose caller went away could not be written to the session");
            }
        });
        match rx.await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            // The runtime shut down before the task ran (or while it ran).
            Err(_) => Err(self.writer_stopped()),
        }
    }

    /// The session's context, built on tokio's blocking pool (reading and parsing the
    /// entries is blocking work).
    ///
    /// # Cancellation
    ///
    /// Dropping the future lets the build finish on the blocking pool; its result is dropped.
    pub(super) async fn session_context(self: &Arc<Self>) -> Result<SessionContext, SessionError> {
        let inner = self.clone();
        match tokio::task::spawn_blocking(move || inner.session().build_session_context()).await {
            Ok(result) => result,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(self.writer_stopped()),
        }
    }

    /// Takes the write gate for a synchronous change of the session manager (a switch, a
    /// fork): refused while an append is under way.
    pub(super) fn try_write_gate(
        &self,
    ) -> Result<tokio::sync::MutexGuard<'_, ()>, AgentSessionError> {
        self.write_gate
            .try_lock()
            .map_err(|_| AgentSessionError::Busy)
    }

    fn writer_stopped(&self) -> SessionError {
        SessionError::Abandoned {
            path: self
                .session()
                .session_file()
                .map(PathBuf::from)
                .unwrap_or_default(),
        }
    }

    // ----- operations ------------------------------------------------------------------

    /// Marks an operation as running; fails when one is, or when the agent runs.
    pub(super) fn begin_op(&self) -> Result<(CancellationToken, OpGuard<'_>), AgentSessionError> {
        let mut op = lock(&self.op);
        if op.is_some() || self.agent.is_streaming() {
            return Err(AgentSessionError::Busy);
        }
        let token = CancellationToken::new();
        *op = Some(token.clone());
        Ok((token, OpGuard(self)))
    }

    pub(super) fn is_busy(&self) -> bool {
        lock(&self.op).is_some() || self.agent.is_streaming()
    }

    pub(super) fn abort(&self) {
        if let Some(op) = lock(&self.op).as_ref() {
            op.cancel();
        }
        let st = self.state();
        for token in [
            &st.retry_cancel,
            &st.compaction_cancel,
            &st.branch_summary_cancel,
            &st.bash_cancel,
        ]
        .into_iter()
        .flatten()
        {
            token.cancel();
        }
        drop(st);
        self.agent.abort();
    }

    pub(super) async fn wait_for_idle(&self) {
        loop {
            let notified = self.idle.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if lock(&self.op).is_none() {
                break;
            }
            notified.await;
        }
        self.agent.wait_for_idle().await;
    }

    /// The rest of a prompt after the agent's run: retries, overflow recovery and the
    /// threshold compaction, continuing the run as they decide.
    /// `outcome` is how the agent's run ended; the result is how the whole operation ended,
    /// after the session's retries and compaction continuations (the last run's outcome, or
    /// aborted when the operation was).
    pub(super) async fn after_run(
        self: &Arc<Self>,
        op: &CancellationToken,
        mut outcome: RunOutcome,
    ) -> Result<RunOutcome, AgentSessionError> {
        let end = |outcome: RunOutcome| {
            Ok(if op.is_cancelled() {
                RunOutcome::Aborted
            } else {
                outcome
            })
        };
        loop {
            self.sync_after_run().await?;
            let Some(last) = self.state().last_assistant.take() else {
                return end(outcome);
            };
            let window = self.model().context_window;
            let retry = self.state().settings.retry;
            if retry.enabled && is_retryable(&last, window) {
                match self.retry(&last, op).await {
                    Retry::Continue => {
                        if let Some(next) = self.continue_agent(op).await? {
                            outcome = next;
                        }
                        continue;
                    }
                    Retry::Stop => return end(outcome),
                    Retry::Exhausted => {}
                }
            } else if last.stop_reason == StopReason::Error {
                let attempt = std::mem::take(&mut self.state().retry_attempt);
                if attempt > 0 {
                    self.emit(SessionEvent::AutoRetryEnd {
                        success: false,
                        attempt,
                        final_error: last.error_message.clone(),
                    });
                }
            }
            if op.is_cancelled() {
                return end(outcome);
            }
            match self.check_compaction(&last, true, op).await {
                AfterCheck::Continue => {
                    if let Some(next) = self.continue_agent(op).await? {
                        outcome = next;
                    }
                }
                AfterCheck::Done => return end(outcome),
            }
        }
    }

    /// After a run: the agent holds the session's context again (a compaction during the
    /// run only changed what the model saw), and a failed write is reported.
    async fn sync_after_run(self: &Arc<Self>) -> Result<(), AgentSessionError> {
        let overlay = {
            let mut st = self.state();
            st.guard_off = false;
            st.overlay.take()
        };
        if overlay.is_some() {
            let context = self.session_context().await?;
            self.agent.set_messages(context.messages);
        }
        match self.state().persist_error.take() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Continues the agent (a retry, or the turn after a compaction); `None` when there was
    /// nothing to continue.
    async fn continue_agent(
        &self,
        op: &CancellationToken,
    ) -> Result<Option<RunOutcome>, AgentSessionError> {
        if op.is_cancelled() {
            return Ok(None);
        }
        match self.agent.continue_run().await {
            Ok(outcome) => Ok(Some(outcome)),
            Err(AgentError::CannotContinueFrom(_) | AgentError::NoMessages) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// pi's `_handleRetryableError`, with one budget of `max_retries` per model call.
    async fn retry(&self, failed: &AssistantMessage, op: &CancellationToken) -> Retry {
        let settings = self.state().settings.retry;
        let attempt = {
            let mut st = self.state();
            st.retry_attempt += 1;
            st.retry_attempt
        };
        if attempt > settings.max_retries {
            self.state().retry_attempt = 0;
            self.emit(SessionEvent::AutoRetryEnd {
                success: false,
                attempt: attempt - 1,
                final_error: failed.error_message.clone(),
            });
            return Retry::Exhausted;
        }
        let retry_after = failed.error().and_then(|e| e.retry_after());
        let delay = retry_delay(&settings, attempt, retry_after);
        self.emit(SessionEvent::AutoRetryStart {
            attempt,
            max_attempts: settings.max_retries,
            delay_ms: delay.as_millis() as u64,
            error_message: failed
                .error_message
                .clone()
                .unwrap_or_else(|| "Unknown error".to_owned()),
        });
        self.drop_failed_reply();
        let cancel = op.child_token();
        self.state().retry_cancel = Some(cancel.clone());
        let cancelled = tokio::select! {
            _ = tokio::time::sleep(delay) => false,
            _ = cancel.cancelled() => true,
        };
        self.state().retry_cancel = None;
        if cancelled {
            self.state().retry_attempt = 0;
            self.emit(SessionEvent::AutoRetryEnd {
                success: false,
                attempt,
                final_error: Some("Retry cancelled".to_owned()),
            });
            return Retry::Stop;
        }
        Retry::Continue
    }

    /// Takes a failed reply out of the context: out of the agent's messages, and off the
    /// session's branch (the leaf moves back to the entry before it, so the entry stays in
    /// the file, on a branch of its own, and the retried reply follows its parent).
    pub(super) fn drop_failed_reply(&self) {
        {
            let mut agent = self.agent.state();
            if matches!(agent.messages.last(), Some(AgentMessage::Assistant(_))) {
                agent.messages.pop();
            }
        }
        let entry = self.state().last_assistant_entry.take();
        if let Some((id, parent)) = entry {
            let mut sm = self.session();
            if sm.leaf_id() == Some(id.as_str()) {
                match parent {
                    Some(p) => {
                        let _ = sm.branch(&p);
                    }
                    None => sm.reset_leaf(),
                }
            }
        }
    }

    /// The stream function of the agent: the key and headers resolved for this call, then
    /// the application's stream function or the registry.
    pub(super) fn stream_call(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let auth = lock(&self.auth).take();
        let options = match auth {
            Some(Ok(auth)) => Cow::Owned(auth.apply(options.clone())),
            Some(Err(e)) => {
                let base = AssistantMessage::new(&model.api, &model.provider, &model.id);
                return AssistantMessageEventStream::failed(base, e);
            }
            None => Cow::Borrowed(options),
        };
        self.raw_stream(model, context, &options)
    }

    pub(super) fn raw_stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        match &self.stream {
            Some(f) => f.stream(model, context, options),
            None => crate::providers::stream_simple(model, context, options),
        }
    }

    /// Resolves the key and headers of the next call (the agent's `get_api_key` hook).
    pub(super) async fn resolve_auth(&self) -> Option<crate::llm::options::ApiKey> {
        let model = self.model();
        let auth = self.registry().request_auth(&model).await;
        let key = auth.as_ref().ok().and_then(|a| a.api_key.clone());
        *lock(&self.auth) = Some(auth);
        key
    }

    /// True when calls to `model` need credentials from the registry: not when the
    /// application brings its own stream function.
    pub(super) fn needs_auth(&self) -> bool {
        self.stream.is_none()
    }

    pub(super) fn check_auth(&self, model: &Model) -> Result<(), AgentSessionError> {
        if self.needs_auth() && !self.registry().has_auth(model) {
            return Err(AgentSessionError::NoApiKey {
                provider: model.provider.clone(),
            });
        }
        Ok(())
    }
}

/// The time of the latest compaction in a context: its summary comes first.
pub(super) fn compaction_time(messages: &[AgentMessage]) -> Option<i64> {
    match messages.first() {
        Some(m @ AgentMessage::Custom(c)) if c.role() == CompactionSummaryMessage::ROLE => {
            m.timestamp()
        }
        _ => None,
    }
}

fn last_assistant(messages: &[AgentMessage]) -> Option<&AssistantMessage> {
    messages.iter().rev().find_map(AgentMessage::as_assistant)
}

impl AgentSession {
    /// Subscribes to every event: the agent's (each after the session has handled it —
    /// a `message_end` is in the file when listeners see it) and the session's. Listeners
    /// run in subscription order on the task that produced the event; keep them quick. A
    /// panicking listener is logged and skipped.
    ///
    /// A listener that holds a clone of the session keeps it (and its file's lock) alive
    /// until it is [unsubscribed](SessionSubscription::unsubscribe).
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentSessionEvent) + Send + Sync + 'static,
    ) -> SessionSubscription {
        self.inner.add_listener(Box::new(listener))
    }

    /// The agent. Read its state and subscribe to it freely; run prompts through the
    /// session (a prompt run on the agent directly is not persisted).
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// Calls `f` with the session manager (locked: keep it short, and do not call the
    /// session from `f`).
    pub fn with_session_manager<R>(&self, f: impl FnOnce(&SessionManager) -> R) -> R {
        f(&self.inner.session())
    }

    /// The session file (`None` in memory, or before anything was written).
    pub fn session_file(&self) -> Option<PathBuf> {
        self.inner.session().session_file().map(PathBuf::from)
    }

    /// The session id.
    pub fn session_id(&self) -> String {
        self.inner.session().session_id().to_owned()
    }

    /// The session's name.
    pub fn session_name(&self) -> Option<String> {
        self.inner.session().session_name().map(str::to_owned)
    }

    /// Names the session (a `session_info` entry) and emits `session_info_changed`.
    ///
    /// # Errors
    ///
    /// When the entry cannot be written.
    ///
    /// # Cancellation
    ///
    /// Dropped before the entry is being written, nothing is; once it is, the entry is
    /// written and recorded all the same (the event is then not emitted).
    pub async fn set_session_name(&self, name: &str) -> Result<(), AgentSessionError> {
        let name = name.to_owned();
        let name = self
            .inner
            .append(move |sm| {
                sm.append_session_info(&name)?;
                Ok(())
            })
            .await
            .map(|()| self.inner.session().session_name().map(str::to_owned))?;
        self.inner.emit(SessionEvent::SessionInfoChanged { name });
        Ok(())
    }

    /// The current model.
    pub fn model(&self) -> Model {
        self.inner.model()
    }

    /// The current thinking level.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.inner.agent.state().thinking_level
    }

    /// Why the session's own model could not be restored, when a fallback was used.
    pub fn model_fallback_message(&self) -> Option<String> {
        self.inner.state().model_fallback_message.clone()
    }

    /// A copy of the context: the messages the next model call starts from.
    pub fn messages(&self) -> Vec<AgentMessage> {
        self.inner.agent.messages()
    }

    /// True while the agent runs.
    pub fn is_streaming(&self) -> bool {
        self.inner.agent.is_streaming()
    }

    /// True while any operation runs: a prompt (with its retries and compactions), a
    /// compaction, a tree navigation, a model switch.
    pub fn is_busy(&self) -> bool {
        self.inner.is_busy()
    }

    /// The error of the last failed or aborted model call.
    pub fn error_message(&self) -> Option<String> {
        self.inner.agent.error_message()
    }

    /// The settings.
    pub fn settings(&self) -> AgentSessionSettings {
        self.inner.state().settings.clone()
    }

    /// Turns automatic compaction on or off.
    pub fn set_auto_compaction_enabled(&self, enabled: bool) {
        self.inner.state().settings.compaction.enabled = enabled;
        self.inner
            .settings_changed(SettingsChange::AutoCompaction(enabled));
    }

    /// Turns automatic retries on or off (off: the provider-level retry policy applies).
    pub fn set_auto_retry_enabled(&self, enabled: bool) {
        self.inner.state().settings.retry.enabled = enabled;
        self.inner.apply_agent_options();
        self.inner
            .settings_changed(SettingsChange::AutoRetry(enabled));
    }

    /// Sets how steering messages are delivered.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.inner.state().settings.steering_mode = mode;
        self.inner.agent.set_steering_mode(mode);
        self.inner
            .settings_changed(SettingsChange::SteeringMode(mode));
    }

    /// Sets how follow-up messages are delivered.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.inner.state().settings.follow_up_mode = mode;
        self.inner.agent.set_follow_up_mode(mode);
        self.inner
            .settings_changed(SettingsChange::FollowUpMode(mode));
    }

    /// Replaces the options of every model call (from the next run on). The session sets
    /// the session id and, while it retries, turns provider-level retries off.
    pub fn set_options(&self, options: StreamOptions) {
        *lock(&self.inner.options) = options;
        self.inner.apply_agent_options();
    }

    /// The retry in progress (0 when none).
    pub fn retry_attempt(&self) -> u32 {
        self.inner.state().retry_attempt
    }

    /// True while a compaction or a branch summary is being written.
    pub fn is_compacting(&self) -> bool {
        let st = self.inner.state();
        st.compaction_cancel.is_some() || st.branch_summary_cancel.is_some()
    }

    // ----- prompting -------------------------------------------------------------------

    /// Runs a prompt (text, text with images, or messages) to the end: the agent's run,
    /// then automatic retries, overflow recovery and compaction. Every message is written
    /// to the session as it ends.
    ///
    /// # Errors
    ///
    /// [`AgentError::AlreadyProcessing`] while the agent runs (use [`steer`](Self::steer)
    /// or [`follow_up`](Self::follow_up)), [`AgentSessionError::Busy`] during another
    /// operation, [`AgentSessionError::NoApiKey`] without credentials, and
    /// [`AgentSessionError::Session`] when a message could not be written (the run is then
    /// aborted). A failed model call is not an `Err`: the [`RunOutcome`] says how the run
    /// ended after the session's retries ([`RunOutcome::Failed`] with the typed error,
    /// [`RunOutcome::Aborted`]); [`RunOutcome::into_result`] turns those into an `Err`.
    ///
    /// # Cancel safety
    ///
    /// The run executes inside this future. Dropping it stops the run where it is; what was
    /// written stays written. Use [`abort`](Self::abort) to stop in an orderly way.
    pub async fn prompt(
        &self,
        input: impl Into<PromptInput>,
    ) -> Result<RunOutcome, AgentSessionError> {
        match self.inner.extensions.clone() {
            None => {
                let input = match input.into() {
                    PromptInput::Text { text, images } => PromptInput::Text {
                        text: self.expand_input(text).await,
                        images,
                    },
                    messages => messages,
                };
                self.run_prompt(input).await
            }
            Some(runner) => {
                self.prompt_with_extensions(&runner, input.into(), InputSource::Interactive)
                    .await
            }
        }
    }

    /// A prompt's text as the session's expander makes it
    /// ([`AgentSessionBuilder::input_expander`](super::AgentSessionBuilder::input_expander):
    /// prompt templates, skill commands); unchanged without one. [`prompt`](Self::prompt)
    /// does it (after `/commands` and the extensions' `input` handlers); a front end that
    /// queues a message with [`steer`](Self::steer) or [`follow_up`](Self::follow_up) calls
    /// it first, as pi does.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the expander's.
    pub async fn expand_input(&self, text: String) -> String {
        match self.inner.expand.clone() {
            Some(expand) => expand(text).await,
            None => text,
        }
    }

    /// [`prompt`](Self::prompt), with the source the extensions' `input` handlers see (pi's
    /// `source`: a front end's RPC mode gives [`InputSource::Rpc`]).
    ///
    /// # Errors
    ///
    /// As [`prompt`](Self::prompt).
    ///
    /// # Cancel safety
    ///
    /// As [`prompt`](Self::prompt).
    pub async fn prompt_from(
        &self,
        input: impl Into<PromptInput>,
        source: InputSource,
    ) -> Result<RunOutcome, AgentSessionError> {
        match self.inner.extensions.clone() {
            None => self.prompt(input).await,
            Some(runner) => {
                self.prompt_with_extensions(&runner, input.into(), source)
                    .await
            }
        }
    }

    /// A prompt an extension sent ([`ExtensionContext::send_user_message`](crate::extensions::ExtensionContext::send_user_message)).
    pub(crate) async fn prompt_from_extension(
        &self,
        input: PromptInput,
    ) -> Result<RunOutcome, AgentSessionError> {
        match self.inner.extensions.clone() {
            None => self.run_prompt(input).await,
            Some(runner) => {
                self.prompt_with_extensions(&runner, input, InputSource::Extension)
                    .await
            }
        }
    }

    /// pi's order: a `/command`, then `input`, then `before_agent_start`, then the run.
    async fn prompt_with_extensions(
        &self,
        runner: &Arc<ExtensionRunner>,
        input: PromptInput,
        source: InputSource,
    ) -> Result<RunOutcome, AgentSessionError> {
        runner.ensure_started(self).await;
        let (mut text, mut images) = match input {
            PromptInput::Text { text, images } => (text, images),
            PromptInput::Messages(mut messages) => {
                messages.extend(runner.take_next_turn());
                return self.run_prompt(PromptInput::Messages(messages)).await;
            }
        };
        if let Some(rest) = text.strip_prefix('/') {
            let (name, args) = rest.split_once(' ').unwrap_or((rest, ""));
            if let Some(command) = runner.command(name).cloned() {
                runner.run_command(self, &command, args.to_owned()).await;
                let mut outcome = RunOutcome::Handled;
                for run in runner.take_queued_runs() {
                    outcome =
                        Box::pin(self.prompt_with_extensions(runner, run, InputSource::Extension))
                            .await?;
                }
                return Ok(outcome);
            }
        }
        let event = InputEvent {
            text: text.clone(),
            images: images.clone(),
            source,
        };
        match runner.input(self, event).await {
            InputAction::Handled => return Ok(RunOutcome::Handled),
            InputAction::Transform { text: t, images: i } => {
                text = t;
                if let Some(i) = i {
                    images = i;
                }
            }
            _ => {}
        }
        let text = self.expand_input(text).await;
        if self.inner.agent.is_streaming() {
            return Err(AgentError::AlreadyProcessing.into());
        }
        let base = self.inner.agent.state().system_prompt.clone();
        let (added, system) = runner.before_agent_start(self, &text, &images, &base).await;
        let mut messages = Self::input_messages(PromptInput::Text { text, images });
        messages.extend(runner.take_next_turn());
        messages.extend(
            added
                .iter()
                .map(crate::extensions::runner::to_agent_message),
        );
        if let Some(system) = &system {
            self.inner.agent.set_system_prompt(system.clone());
        }
        let outcome = self.run_prompt(PromptInput::Messages(messages)).await;
        if system.is_some() {
            self.inner.agent.set_system_prompt(base);
        }
        outcome
    }

    async fn run_prompt(&self, input: PromptInput) -> Result<RunOutcome, AgentSessionError> {
        let inner = &self.inner;
        if inner.agent.is_streaming() {
            return Err(AgentError::AlreadyProcessing.into());
        }
        let (op, _guard) = inner.begin_op()?;
        inner.check_auth(&inner.model())?;
        // pi's pre-prompt check, which also sees aborted replies.
        let last = last_assistant(&inner.agent.state().messages).cloned();
        if let Some(last) = last {
            inner.check_compaction(&last, false, &op).await;
        }
        if op.is_cancelled() {
            return Ok(RunOutcome::Aborted);
        }
        inner.state().last_assistant = None;
        let outcome = inner.agent.prompt(input).await?;
        let outcome = inner.after_run(&op, outcome).await;
        self.after_operation().await?;
        outcome
    }

    /// What waits for a run to end: the commands a person ran meanwhile.
    async fn after_operation(&self) -> Result<(), AgentSessionError> {
        #[cfg(feature = "tools")]
        self.flush_pending_bash().await?;
        Ok(())
    }

    // ----- extensions' calls ------------------------------------------------------------

    /// Reports a failed extension handler (`extension_error`).
    pub(crate) fn emit_extension_error(&self, extension: &str, event: &str, error: &str) {
        self.inner.emit(SessionEvent::ExtensionError {
            extension_path: extension.to_owned(),
            event: event.to_owned(),
            error: error.to_owned(),
        });
    }

    pub(crate) fn downgrade(&self) -> WeakSession {
        WeakSession(Arc::downgrade(&self.inner))
    }

    /// An extension message joins the context and the file while idle, with its
    /// `message_start` and `message_end`.
    pub(crate) async fn append_extension_message(
        &self,
        message: AgentMessage,
    ) -> Result<(), AgentSessionError> {
        self.inner.persist(&message).await?;
        self.inner.agent.state().messages.push(message.clone());
        self.inner
            .dispatch(&AgentSessionEvent::Agent(AgentEvent::MessageStart {
                message: message.clone(),
            }));
        self.inner
            .dispatch(&AgentSessionEvent::Agent(AgentEvent::MessageEnd {
                message,
            }));
        Ok(())
    }

    /// Writes a `custom` entry (an extension's data, not sent to the model); returns its
    /// id.
    ///
    /// # Errors
    ///
    /// When the entry cannot be written.
    ///
    /// # Cancellation
    ///
    /// As [`set_session_name`](Self::set_session_name).
    pub async fn append_custom_entry(
        &self,
        custom_type: String,
        data: Option<serde_json::Value>,
    ) -> Result<String, AgentSessionError> {
        Ok(self
            .inner
            .append(move |sm| sm.append_custom_entry(custom_type, data))
            .await?)
    }

    /// Labels an entry, or with `None` removes its label (a `label` entry).
    ///
    /// # Errors
    ///
    /// An unknown entry, or when the entry cannot be written.
    ///
    /// # Cancellation
    ///
    /// As [`set_session_name`](Self::set_session_name).
    pub async fn set_label(
        &self,
        entry_id: &str,
        label: Option<&str>,
    ) -> Result<(), AgentSessionError> {
        let (id, label) = (entry_id.to_owned(), label.map(str::to_owned));
        self.inner
            .append(move |sm| sm.append_label_change(&id, label.as_deref()))
            .await?;
        Ok(())
    }

    /// The names of the session's extensions, in order.
    pub fn extension_names(&self) -> Vec<String> {
        self.inner
            .extensions
            .as_ref()
            .map_or_else(Vec::new, |r| r.names().to_vec())
    }

    /// Continues the conversation without a new message (pi's `continue`): retries after a
    /// failed call whose reply was removed, or delivers queued messages.
    ///
    /// # Errors
    ///
    /// As [`prompt`](Self::prompt), and the agent's errors for a context that cannot be
    /// continued ([`AgentError::CannotContinueFrom`], [`AgentError::NoMessages`]).
    ///
    /// # Cancel safety
    ///
    /// As [`prompt`](Self::prompt).
    pub async fn continue_run(&self) -> Result<RunOutcome, AgentSessionError> {
        if let Some(runner) = self.inner.extensions.clone() {
            runner.ensure_started(self).await;
        }
        let inner = &self.inner;
        if inner.agent.is_streaming() {
            return Err(AgentError::AlreadyProcessingContinue.into());
        }
        let (op, _guard) = inner.begin_op()?;
        inner.check_auth(&inner.model())?;
        inner.state().last_assistant = None;
        let outcome = inner.agent.continue_run().await?;
        let outcome = inner.after_run(&op, outcome).await;
        self.after_operation().await?;
        outcome
    }

    fn queue_text(input: &PromptInput) -> String {
        match input {
            PromptInput::Text { text, .. } => text.clone(),
            PromptInput::Messages(messages) => messages
                .iter()
                .filter_map(|m| match m {
                    AgentMessage::User(u) => Some(u.content.text()),
                    _ => None,
                })
                .collect(),
        }
    }

    fn input_messages(input: PromptInput) -> Vec<AgentMessage> {
        match input {
            PromptInput::Messages(m) => m,
            PromptInput::Text { text, images } => {
                let mut content = vec![crate::llm::message::Content::text(text)];
                content.extend(images.into_iter().map(crate::llm::message::Content::Image));
                vec![crate::llm::message::UserMessage::blocks(content).into()]
            }
        }
    }

    /// Queues a message delivered after the current turn, before the next model call
    /// (emits `queue_update`).
    pub fn steer(&self, input: impl Into<PromptInput>) {
        let input = input.into();
        self.inner
            .state()
            .steering_texts
            .push(Self::queue_text(&input));
        self.inner.emit(self.inner.queue_update());
        for m in Self::input_messages(input) {
            self.inner.agent.steer(m);
        }
    }

    /// Queues a message delivered when the agent would stop (emits `queue_update`).
    pub fn follow_up(&self, input: impl Into<PromptInput>) {
        let input = input.into();
        self.inner
            .state()
            .follow_up_texts
            .push(Self::queue_text(&input));
        self.inner.emit(self.inner.queue_update());
        for m in Self::input_messages(input) {
            self.inner.agent.follow_up(m);
        }
    }

    /// Empties both queues and returns their texts, steering first (emits
    /// `queue_update`).
    pub fn clear_queue(&self) -> (Vec<String>, Vec<String>) {
        let taken = {
            let mut st = self.inner.state();
            (
                std::mem::take(&mut st.steering_texts),
                std::mem::take(&mut st.follow_up_texts),
            )
        };
        self.inner.agent.clear_all_queues();
        self.inner.emit(self.inner.queue_update());
        taken
    }

    /// How many messages are queued.
    pub fn pending_message_count(&self) -> usize {
        let st = self.inner.state();
        st.steering_texts.len() + st.follow_up_texts.len()
    }

    /// Aborts what is running: the model call or tools of the run, a retry's wait, a
    /// compaction, a branch summary. Returns at once; [`wait_for_idle`](Self::wait_for_idle)
    /// waits until it has stopped (pi's `abort()` is both).
    pub fn abort(&self) {
        self.inner.abort();
    }

    /// Cancels a retry's wait (the run ends with the failed reply).
    pub fn abort_retry(&self) {
        if let Some(t) = &self.inner.state().retry_cancel {
            t.cancel();
        }
    }

    /// Cancels a compaction in progress.
    pub fn abort_compaction(&self) {
        if let Some(t) = &self.inner.state().compaction_cancel {
            t.cancel();
        }
    }

    /// Cancels a branch summary in progress (the navigation is then cancelled).
    pub fn abort_branch_summary(&self) {
        if let Some(t) = &self.inner.state().branch_summary_cancel {
            t.cancel();
        }
    }

    /// Waits until no operation runs.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits.
    pub async fn wait_for_idle(&self) {
        self.inner.wait_for_idle().await;
    }

    // ----- statistics ------------------------------------------------------------------

    /// Counts, tokens and cost of the context (pi's `getSessionStats`).
    pub fn session_stats(&self) -> SessionStats {
        let messages = self.inner.agent.messages();
        let (file, id) = {
            let sm = self.inner.session();
            (
                sm.session_file().map(PathBuf::from),
                sm.session_id().to_owned(),
            )
        };
        let usage = stats::context_usage(
            &messages,
            self.inner.model().context_window,
            compaction_time(&messages),
        );
        stats::stats(&messages, file, id, usage)
    }

    /// How full the model's window is (pi's `getContextUsage`).
    pub fn context_usage(&self) -> Option<ContextUsage> {
        let messages = self.inner.agent.messages();
        stats::context_usage(
            &messages,
            self.inner.model().context_window,
            compaction_time(&messages),
        )
    }

    /// The text of the last assistant reply that has content (pi's `getLastAssistantText`).
    pub fn last_assistant_text(&self) -> Option<String> {
        crate::agent::handle::last_assistant_text(&self.inner.agent.state().messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_and_its_futures_are_send() {
        fn send_sync<T: Send + Sync>() {}
        fn send<F: std::future::Future + Send>(_: F) {}
        send_sync::<AgentSession>();
        let model = Model::new("m", "faux", "faux", "");
        let session = AgentSession::builder(SessionManager::in_memory("/p"))
            .default_model(model.clone())
            .stream_fn(|m, _, _| {
                AssistantMessageEventStream::failed(
                    AssistantMessage::new(&m.api, &m.provider, &m.id),
                    Error::from_message("unused"),
                )
            })
            .build()
            .unwrap();
        send(session.prompt("hi"));
        send(session.continue_run());
        send(session.compact(None));
        send(session.set_model(model));
        send(session.navigate_tree("x", super::super::NavigateOptions::new()));
        send(session.wait_for_idle());
    }
}
