//! [`ExtensionRunner`]: the registered extensions of one session, and how an event goes to
//! their handlers — in registration order, each call under its deadline and token, a
//! failure reported as an `extension_error` event and never raised into the session.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Map, Value};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::api::{Command, Extension, Registered, Registrations, Renderer, Shortcut};
use super::command::{CommandInfo, Completion, ShortcutInfo};
use super::context::ExtensionContext;
use super::deadline::{UiClock, with_deadline};
use super::events::{
    BeforeAgentStart, BeforeAgentStartEvent, Cancel, CompactDecision, ContextEvent,
    DiscoveredResources, InputAction, InputEvent, MessageEndEvent, ModelSelectEvent,
    ProviderRequestEvent, ProviderResponseEvent, Resources, ResourcesDiscoverEvent,
    SessionBeforeCompactEvent, SessionBeforeForkEvent, SessionBeforeSwitchEvent,
    SessionBeforeTreeEvent, SessionCompactEvent, SessionShutdownEvent, SessionStartEvent,
    SessionTreeEvent, ThinkingLevelSelectEvent, ToolCallEvent, ToolCallVerdict, ToolResultEvent,
    ToolResultPatch, TreeDecision,
};
#[cfg(feature = "tools")]
use super::events::{UserBashAction, UserBashEvent};
use super::flag::{FlagInfo, FlagValue};
use super::provider::ProviderConfig;
use super::render::{MessageRenderOptions, RenderedMessage};
use super::ui::ExtensionUi;
use crate::agent::{AgentMessage, AgentTool, CustomMessage, PromptInput};
use crate::agent_session::{AgentSession, AgentSessionEvent};
use crate::llm::message::ImageContent;
use crate::providers::ApiProvider;
use crate::session::ExtensionMessage;
use crate::session::compaction::CompactionResult;

/// An api implementation an extension's provider installed: the provider, the api, and
/// what it replaced.
type InstalledStream = (String, String, Option<Arc<dyn ApiProvider>>);

/// What the `tool_call` handlers decided about one call.
#[derive(Debug, Default)]
pub(crate) struct ToolCallOutcome {
    /// The extension that blocked it, and the reason.
    pub(crate) blocked: Option<(String, Option<String>)>,
    /// The arguments to run with, when a handler rewrote them.
    pub(crate) input: Option<Map<String, Value>>,
}

/// What the `session_before_compact` handlers decided.
#[derive(Debug, Default)]
pub(crate) struct CompactOutcome {
    /// The extension that cancelled the compaction.
    pub(crate) cancelled_by: Option<String>,
    /// The compaction an extension provided.
    pub(crate) compaction: Option<CompactionResult>,
}

/// What the `session_before_tree` handlers decided.
#[derive(Debug, Default)]
pub(crate) struct TreeOutcome {
    /// The extension that cancelled the move.
    pub(crate) cancelled_by: Option<String>,
    /// Every answer, merged in order (a later field wins).
    pub(crate) decision: TreeDecision,
}

/// The session's extensions and everything they registered, in registration order.
pub(crate) struct ExtensionRunner {
    names: Vec<String>,
    regs: Registrations,
    pub(crate) ui: Arc<dyn ExtensionUi>,
    started: AtomicBool,
    /// Commands being run now: a run an extension asks for while one is running starts
    /// after it, from the same call.
    in_command: AtomicUsize,
    queued_runs: Mutex<Vec<PromptInput>>,
    next_turn: Mutex<Vec<AgentMessage>>,
    observers: Option<tokio::sync::mpsc::UnboundedSender<AgentSessionEvent>>,
    observer_rx: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<AgentSessionEvent>>>,
    /// Flag values set by the front end (a flag not set has its default).
    flag_values: Mutex<HashMap<String, FlagValue>>,
    shutdown_requested: AtomicBool,
    shutdown_notify: Notify,
    /// Apis whose implementation an extension's provider registered, with what they
    /// replaced, to restore when the provider goes.
    provider_streams: Mutex<Vec<InstalledStream>>,
}

impl fmt::Debug for ExtensionRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtensionRunner")
            .field("extensions", &self.names)
            .finish_non_exhaustive()
    }
}

/// An extension message as an agent message.
pub(crate) fn to_agent_message(message: &ExtensionMessage) -> AgentMessage {
    AgentMessage::custom(message).unwrap_or_else(|_| {
        // Unreachable: the message's fields are strings and JSON values.
        let role = <ExtensionMessage as crate::agent::CustomMessageType>::ROLE;
        AgentMessage::Custom(CustomMessage::new(role, Map::new()))
    })
}

fn panic_text(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

impl ExtensionRunner {
    /// Sets up `extensions` in order; returns the runner and the tools they registered.
    pub(crate) fn new(
        extensions: &[Extension],
        ui: Arc<dyn ExtensionUi>,
    ) -> (Arc<ExtensionRunner>, Vec<Arc<dyn AgentTool>>) {
        let mut regs = Registrations::default();
        let mut names = Vec::new();
        for (i, ext) in extensions.iter().enumerate() {
            names.push(ext.name().to_owned());
            regs.extend(ext.register(i).registrations);
        }
        let tools = std::mem::take(&mut regs.tools);
        let (observers, rx) = if regs.event.is_empty() {
            (None, None)
        } else {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        };
        let runner = ExtensionRunner {
            names,
            regs,
            ui,
            started: AtomicBool::new(false),
            in_command: AtomicUsize::new(0),
            queued_runs: Mutex::new(Vec::new()),
            next_turn: Mutex::new(Vec::new()),
            observers,
            observer_rx: Mutex::new(rx),
            flag_values: Mutex::new(HashMap::new()),
            shutdown_requested: AtomicBool::new(false),
            shutdown_notify: Notify::new(),
            provider_streams: Mutex::new(Vec::new()),
        };
        (Arc::new(runner), tools)
    }

    pub(crate) fn name(&self, extension: usize) -> &str {
        self.names.get(extension).map_or("", String::as_str)
    }

    /// The extensions' names, in order.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// Runs one handler: its deadline, its token, panics caught. A failure is reported
    /// and returned as its text.
    async fn call<E, R>(
        self: &Arc<Self>,
        session: &AgentSession,
        event_name: &'static str,
        r: &Registered<E, R>,
        event: E,
        parent: Option<&CancellationToken>,
    ) -> Result<Option<R>, String> {
        let clock = Arc::new(UiClock::default());
        let token = parent.map_or_else(CancellationToken::new, CancellationToken::child_token);
        let ctx = ExtensionContext::new(
            session.clone(),
            self.clone(),
            r.extension,
            clock.clone(),
            token.clone(),
        );
        let result = self
            .guarded(r.timeout, &clock, || (r.handler)(event, ctx))
            .await;
        token.cancel();
        if let Err(error) = &result {
            self.report(session, r.extension, event_name, error);
        }
        result
    }

    /// Runs `f`'s future under `timeout` (dialog time not counted), catching panics.
    async fn guarded<T>(
        &self,
        timeout: Duration,
        clock: &UiClock,
        f: impl FnOnce() -> futures::future::BoxFuture<'static, Result<T, super::HandlerError>>,
    ) -> Result<T, String> {
        let fut = match std::panic::catch_unwind(AssertUnwindSafe(f)) {
            Ok(fut) => fut,
            Err(panic) => return Err(format!("handler panicked: {}", panic_text(&*panic))),
        };
        match with_deadline(clock, timeout, AssertUnwindSafe(fut).catch_unwind()).await {
            None => Err(format!(
                "handler did not finish within {}",
                humantime::format_duration(timeout)
            )),
            Some(Err(panic)) => Err(format!("handler panicked: {}", panic_text(&*panic))),
            Some(Ok(Err(e))) => Err(e.to_string()),
            Some(Ok(Ok(v))) => Ok(v),
        }
    }

    pub(crate) fn report(
        &self,
        session: &AgentSession,
        extension: usize,
        event: &str,
        error: &str,
    ) {
        tracing::warn!(
            target: "pi_engine::extensions",
            extension = self.name(extension),
            event,
            error,
            "extension handler failed"
        );
        session.emit_extension_error(self.name(extension), event, error);
    }

    // ----- events -------------------------------------------------------------------

    pub(crate) fn has_tool_call(&self) -> bool {
        !self.regs.tool_call.is_empty()
    }

    pub(crate) fn has_tool_result(&self) -> bool {
        !self.regs.tool_result.is_empty()
    }

    pub(crate) fn has_context(&self) -> bool {
        !self.regs.context.is_empty()
    }

    pub(crate) fn has_message_end(&self) -> bool {
        !self.regs.message_end.is_empty()
    }

    pub(crate) fn has_provider_hooks(&self) -> (bool, bool) {
        (
            !self.regs.before_provider_request.is_empty(),
            !self.regs.after_provider_response.is_empty(),
        )
    }

    /// Runs every handler of an observe-only event, in order.
    async fn notify_all<E: Clone>(
        self: &Arc<Self>,
        session: &AgentSession,
        event_name: &'static str,
        regs: &[Registered<E, ()>],
        event: E,
    ) {
        for r in regs {
            let _ = self.call(session, event_name, r, event.clone(), None).await;
        }
    }

    /// Says which extension changed what (a `tracing` event, target
    /// `pi_engine::extensions`, and the session's `extension_action` event).
    fn acted(&self, session: &AgentSession, extension: usize, event: &str, action: &str) {
        let name = self.name(extension);
        tracing::info!(target: "pi_engine::extensions", extension = name, event, action, "extension acted");
        session.emit_extension_action(name, event, action);
    }

    /// `tool_call`: the first block wins; rewrites chain; a failing handler blocks.
    pub(crate) async fn tool_call(
        self: &Arc<Self>,
        session: &AgentSession,
        mut event: ToolCallEvent,
        cancel: &CancellationToken,
    ) -> ToolCallOutcome {
        let mut outcome = ToolCallOutcome::default();
        for r in &self.regs.tool_call {
            match self
                .call(session, "tool_call", r, event.clone(), Some(cancel))
                .await
            {
                Ok(Some(v)) if v.block => {
                    self.acted(session, r.extension, "tool_call", "blocked");
                    outcome.blocked = Some((self.name(r.extension).to_owned(), v.reason));
                    return outcome;
                }
                Ok(Some(ToolCallVerdict {
                    input: Some(input), ..
                })) => {
                    self.acted(session, r.extension, "tool_call", "rewrote the arguments");
                    event.input = input.clone();
                    outcome.input = Some(input);
                }
                Ok(_) => {}
                Err(error) => {
                    outcome.blocked = Some((
                        self.name(r.extension).to_owned(),
                        Some(format!("Extension failed, blocking execution: {error}")),
                    ));
                    return outcome;
                }
            }
        }
        outcome
    }

    /// `tool_result`: patches chain; a failing handler changes nothing.
    pub(crate) async fn tool_result(
        self: &Arc<Self>,
        session: &AgentSession,
        mut event: ToolResultEvent,
        cancel: &CancellationToken,
    ) -> Option<ToolResultPatch> {
        let mut patched = false;
        for r in &self.regs.tool_result {
            if let Ok(Some(p)) = self
                .call(session, "tool_result", r, event.clone(), Some(cancel))
                .await
            {
                if p.content.is_none() && p.details.is_none() && p.is_error.is_none() {
                    continue;
                }
                if let Some(c) = p.content {
                    event.content = c;
                }
                if let Some(d) = p.details {
                    event.details = d;
                }
                if let Some(e) = p.is_error {
                    event.is_error = e;
                }
                self.acted(session, r.extension, "tool_result", "rewrote the result");
                patched = true;
            }
        }
        patched.then(|| ToolResultPatch {
            content: Some(event.content),
            details: Some(event.details),
            is_error: Some(event.is_error),
        })
    }

    /// `context`: replacements chain.
    pub(crate) async fn context(
        self: &Arc<Self>,
        session: &AgentSession,
        messages: Vec<AgentMessage>,
        cancel: &CancellationToken,
    ) -> Option<Vec<AgentMessage>> {
        // One copy for every handler: each gets the `Arc`, not the messages.
        let mut current = Arc::new(messages);
        let mut changed = false;
        for r in &self.regs.context {
            let event = ContextEvent {
                messages: current.clone(),
            };
            if let Ok(Some(m)) = self.call(session, "context", r, event, Some(cancel)).await {
                if m != *current {
                    self.acted(session, r.extension, "context", "rewrote the context");
                }
                current = Arc::new(m);
                changed = true;
            }
        }
        changed.then(|| Arc::unwrap_or_clone(current))
    }

    /// `message_end`: replacements of the same role chain; another role is refused.
    pub(crate) async fn message_end(
        self: &Arc<Self>,
        session: &AgentSession,
        message: &AgentMessage,
    ) -> Option<AgentMessage> {
        let mut current: Option<AgentMessage> = None;
        for r in &self.regs.message_end {
            let event = MessageEndEvent {
                message: current.clone().unwrap_or_else(|| message.clone()),
            };
            if let Ok(Some(m)) = self.call(session, "message_end", r, event, None).await {
                if m.role() != message.role() {
                    self.report(
                        session,
                        r.extension,
                        "message_end",
                        "message_end handlers must return a message with the same role",
                    );
                    continue;
                }
                self.acted(session, r.extension, "message_end", "rewrote the message");
                current = Some(m);
            }
        }
        current
    }

    /// `before_provider_request`: replacements chain.
    pub(crate) async fn before_provider_request(
        self: &Arc<Self>,
        session: &AgentSession,
        payload: Value,
    ) -> Value {
        let mut current = payload;
        for r in &self.regs.before_provider_request {
            let event = ProviderRequestEvent {
                payload: current.clone(),
            };
            if let Ok(Some(p)) = self
                .call(session, "before_provider_request", r, event, None)
                .await
            {
                self.acted(
                    session,
                    r.extension,
                    "before_provider_request",
                    "rewrote the request",
                );
                current = p;
            }
        }
        current
    }

    /// `after_provider_response`: every handler, in order.
    pub(crate) async fn after_provider_response(
        self: &Arc<Self>,
        session: &AgentSession,
        event: ProviderResponseEvent,
    ) {
        self.notify_all(
            session,
            "after_provider_response",
            &self.regs.after_provider_response,
            event,
        )
        .await;
    }

    /// `input`: transforms chain; `Handled` stops.
    pub(crate) async fn input(
        self: &Arc<Self>,
        session: &AgentSession,
        mut event: InputEvent,
    ) -> InputAction {
        let mut transformed = false;
        for r in &self.regs.input {
            match self.call(session, "input", r, event.clone(), None).await {
                Ok(Some(InputAction::Handled)) => {
                    self.acted(session, r.extension, "input", "handled the input");
                    return InputAction::Handled;
                }
                Ok(Some(InputAction::Transform { text, images })) => {
                    self.acted(session, r.extension, "input", "transformed the input");
                    event.text = text;
                    if let Some(images) = images {
                        event.images = images;
                    }
                    transformed = true;
                }
                _ => {}
            }
        }
        if transformed {
            InputAction::Transform {
                text: event.text,
                images: Some(event.images),
            }
        } else {
            InputAction::Continue
        }
    }

    /// `before_agent_start`: messages collected, the system prompt chained.
    pub(crate) async fn before_agent_start(
        self: &Arc<Self>,
        session: &AgentSession,
        prompt: &str,
        images: &[ImageContent],
        system_prompt: &str,
    ) -> (Vec<ExtensionMessage>, Option<String>) {
        let mut messages = Vec::new();
        let mut system = system_prompt.to_owned();
        let mut changed = false;
        for r in &self.regs.before_agent_start {
            let event = BeforeAgentStartEvent {
                prompt: prompt.to_owned(),
                images: images.to_vec(),
                system_prompt: system.clone(),
            };
            if let Ok(Some(BeforeAgentStart {
                message,
                system_prompt,
            })) = self
                .call(session, "before_agent_start", r, event, None)
                .await
            {
                messages.extend(message);
                if let Some(s) = system_prompt {
                    self.acted(
                        session,
                        r.extension,
                        "before_agent_start",
                        "set the system prompt",
                    );
                    system = s;
                    changed = true;
                }
            }
        }
        (messages, changed.then_some(system))
    }

    /// `session_start`, once per session handle (and again after a switch).
    pub(crate) async fn session_start(
        self: &Arc<Self>,
        session: &AgentSession,
        event: SessionStartEvent,
    ) {
        self.started.store(true, Ordering::Release);
        self.notify_all(session, "session_start", &self.regs.session_start, event)
            .await;
    }

    /// `session_start` (startup) unless it was sent.
    pub(crate) async fn ensure_started(self: &Arc<Self>, session: &AgentSession) {
        if !self.started.swap(true, Ordering::AcqRel) {
            self.start_observers(session);
            self.session_start(
                session,
                SessionStartEvent {
                    reason: super::SessionStartReason::Startup,
                    previous_session_file: None,
                },
            )
            .await;
        }
    }

    /// The first cancel of a `session_before_*` event: the extension that cancelled.
    async fn first_cancel<E: Clone>(
        self: &Arc<Self>,
        session: &AgentSession,
        event_name: &'static str,
        regs: &[Registered<E, Cancel>],
        event: E,
    ) -> Option<String> {
        for r in regs {
            if let Ok(Some(Cancel { cancel: true })) =
                self.call(session, event_name, r, event.clone(), None).await
            {
                self.acted(session, r.extension, event_name, "cancelled");
                return Some(self.name(r.extension).to_owned());
            }
        }
        None
    }

    /// `session_before_switch`: the first cancel wins.
    pub(crate) async fn session_before_switch(
        self: &Arc<Self>,
        session: &AgentSession,
        event: SessionBeforeSwitchEvent,
    ) -> Option<String> {
        self.first_cancel(
            session,
            "session_before_switch",
            &self.regs.session_before_switch,
            event,
        )
        .await
    }

    /// `session_before_fork`: the first cancel wins.
    pub(crate) async fn session_before_fork(
        self: &Arc<Self>,
        session: &AgentSession,
        event: SessionBeforeForkEvent,
    ) -> Option<String> {
        self.first_cancel(
            session,
            "session_before_fork",
            &self.regs.session_before_fork,
            event,
        )
        .await
    }

    /// `session_shutdown`: every handler.
    pub(crate) async fn session_shutdown(
        self: &Arc<Self>,
        session: &AgentSession,
        event: SessionShutdownEvent,
    ) {
        if !self.started.load(Ordering::Acquire) {
            return;
        }
        self.notify_all(
            session,
            "session_shutdown",
            &self.regs.session_shutdown,
            event,
        )
        .await;
    }

    pub(crate) fn has_before_compact(&self) -> bool {
        !self.regs.session_before_compact.is_empty()
    }

    /// `session_before_compact`: the first answer that cancels or brings a compaction wins.
    pub(crate) async fn session_before_compact(
        self: &Arc<Self>,
        session: &AgentSession,
        event: SessionBeforeCompactEvent,
        cancel: &CancellationToken,
    ) -> CompactOutcome {
        for r in &self.regs.session_before_compact {
            match self
                .call(
                    session,
                    "session_before_compact",
                    r,
                    event.clone(),
                    Some(cancel),
                )
                .await
            {
                Ok(Some(CompactDecision { cancel: true, .. })) => {
                    self.acted(session, r.extension, "session_before_compact", "cancelled");
                    return CompactOutcome {
                        cancelled_by: Some(self.name(r.extension).to_owned()),
                        compaction: None,
                    };
                }
                Ok(Some(CompactDecision {
                    compaction: Some(c),
                    ..
                })) => {
                    self.acted(
                        session,
                        r.extension,
                        "session_before_compact",
                        "provided the compaction",
                    );
                    return CompactOutcome {
                        cancelled_by: None,
                        compaction: Some(c),
                    };
                }
                _ => {}
            }
        }
        CompactOutcome::default()
    }

    /// `session_compact`: every handler.
    pub(crate) async fn session_compact(
        self: &Arc<Self>,
        session: &AgentSession,
        event: SessionCompactEvent,
    ) {
        self.notify_all(
            session,
            "session_compact",
            &self.regs.session_compact,
            event,
        )
        .await;
    }

    pub(crate) fn has_before_tree(&self) -> bool {
        !self.regs.session_before_tree.is_empty()
    }

    /// `session_before_tree`: the first cancel wins; other answers merge in order.
    pub(crate) async fn session_before_tree(
        self: &Arc<Self>,
        session: &AgentSession,
        event: SessionBeforeTreeEvent,
        cancel: &CancellationToken,
    ) -> TreeOutcome {
        let mut outcome = TreeOutcome::default();
        for r in &self.regs.session_before_tree {
            let Ok(Some(d)) = self
                .call(
                    session,
                    "session_before_tree",
                    r,
                    event.clone(),
                    Some(cancel),
                )
                .await
            else {
                continue;
            };
            if d.cancel {
                self.acted(session, r.extension, "session_before_tree", "cancelled");
                outcome.cancelled_by = Some(self.name(r.extension).to_owned());
                return outcome;
            }
            let merged = &mut outcome.decision;
            if d.summary.is_some() {
                self.acted(
                    session,
                    r.extension,
                    "session_before_tree",
                    "provided the summary",
                );
                merged.summary = d.summary;
            }
            if d.custom_instructions.is_some() {
                merged.custom_instructions = d.custom_instructions;
            }
            if d.replace_instructions.is_some() {
                merged.replace_instructions = d.replace_instructions;
            }
            if d.label.is_some() {
                merged.label = d.label;
            }
        }
        outcome
    }

    /// `session_tree`: every handler.
    pub(crate) async fn session_tree(
        self: &Arc<Self>,
        session: &AgentSession,
        event: SessionTreeEvent,
    ) {
        self.notify_all(session, "session_tree", &self.regs.session_tree, event)
            .await;
    }

    /// `model_select`: every handler.
    pub(crate) async fn model_select(
        self: &Arc<Self>,
        session: &AgentSession,
        event: ModelSelectEvent,
    ) {
        self.notify_all(session, "model_select", &self.regs.model_select, event)
            .await;
    }

    /// `thinking_level_select`: every handler.
    pub(crate) async fn thinking_level_select(
        self: &Arc<Self>,
        session: &AgentSession,
        event: ThinkingLevelSelectEvent,
    ) {
        self.notify_all(
            session,
            "thinking_level_select",
            &self.regs.thinking_level_select,
            event,
        )
        .await;
    }

    /// `resources_discover`: paths collected from every handler.
    pub(crate) async fn resources_discover(
        self: &Arc<Self>,
        session: &AgentSession,
        event: ResourcesDiscoverEvent,
    ) -> DiscoveredResources {
        let mut found = DiscoveredResources::default();
        for r in &self.regs.resources_discover {
            if let Ok(Some(Resources {
                skill_paths,
                prompt_paths,
                theme_paths,
            })) = self
                .call(session, "resources_discover", r, event.clone(), None)
                .await
            {
                let name = self.name(r.extension).to_owned();
                let tag = |paths: Vec<std::path::PathBuf>| {
                    paths
                        .into_iter()
                        .map(|p| (p, name.clone()))
                        .collect::<Vec<_>>()
                };
                found.skill_paths.extend(tag(skill_paths));
                found.prompt_paths.extend(tag(prompt_paths));
                found.theme_paths.extend(tag(theme_paths));
            }
        }
        found
    }

    /// `user_bash`: the first answer wins.
    #[cfg(feature = "tools")]
    pub(crate) async fn user_bash(
        self: &Arc<Self>,
        session: &AgentSession,
        event: UserBashEvent,
    ) -> Option<UserBashAction> {
        for r in &self.regs.user_bash {
            if let Ok(Some(action)) = self
                .call(session, "user_bash", r, event.clone(), None)
                .await
            {
                self.acted(session, r.extension, "user_bash", "took the command");
                return Some(action);
            }
        }
        None
    }

    /// Whether an extension observes the session's events (`on_event`).
    pub(crate) fn has_observers(&self) -> bool {
        self.observers.is_some()
    }

    /// Hands an event to the observers' task.
    pub(crate) fn observe(&self, event: &AgentSessionEvent) {
        // Not before the observers' task runs (nothing would drain the channel), and not
        // their own failures (a failing observer would report itself forever).
        let own_error = matches!(
            event,
            AgentSessionEvent::Session(crate::agent_session::SessionEvent::ExtensionError { .. })
        );
        if own_error || !self.started.load(Ordering::Acquire) {
            return;
        }
        if let Some(tx) = &self.observers {
            let _ = tx.send(event.clone());
        }
    }

    fn start_observers(self: &Arc<Self>, session: &AgentSession) {
        let Some(mut rx) = self
            .observer_rx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        // The task holds the session weakly: it ends when the session is dropped.
        let weak = session.downgrade();
        let runner = Arc::downgrade(self);
        handle.spawn(async move {
            while let Some(event) = rx.recv().await {
                let (Some(session), Some(runner)) = (weak.upgrade(), runner.upgrade()) else {
                    break;
                };
                for r in &runner.regs.event {
                    let name = event.kind();
                    let _ = runner.call(&session, name, r, event.clone(), None).await;
                }
            }
        });
    }

    // ----- commands and runs ----------------------------------------------------------

    /// The command `/name` (the first registered wins).
    pub(crate) fn command(&self, name: &str) -> Option<&Command> {
        self.regs.commands.iter().find(|c| c.name == name)
    }

    /// The registered commands, in order.
    pub(crate) fn commands(&self) -> Vec<CommandInfo> {
        self.regs
            .commands
            .iter()
            .map(|c| CommandInfo {
                name: c.name.clone(),
                description: c.description.clone(),
                extension: self.name(c.extension).to_owned(),
                has_completions: c.completions.is_some(),
            })
            .collect()
    }

    /// The argument completions of command `name` for `prefix`, under the command's
    /// deadline; `None` when it has none (or they failed, which is reported).
    pub(crate) async fn completions(
        self: &Arc<Self>,
        session: &AgentSession,
        name: &str,
        prefix: &str,
    ) -> Option<Vec<Completion>> {
        let command = self.command(name)?;
        let f = command.completions.clone()?;
        let timeout = command
            .timeout
            .unwrap_or(super::api::DEFAULT_HANDLER_TIMEOUT);
        let clock = UiClock::default();
        let prefix = prefix.to_owned();
        let extension = command.extension;
        let result = self
            .guarded(timeout, &clock, || {
                let fut = f(prefix);
                Box::pin(async move { Ok::<_, super::HandlerError>(fut.await) })
            })
            .await;
        match result {
            Ok(items) => items,
            Err(error) => {
                self.report(session, extension, "command_completions", &error);
                None
            }
        }
    }

    /// The registered shortcuts, in order.
    pub(crate) fn shortcuts(&self) -> Vec<ShortcutInfo> {
        self.regs
            .shortcuts
            .iter()
            .map(|s| ShortcutInfo {
                key: s.key.clone(),
                description: s.description.clone(),
                extension: self.name(s.extension).to_owned(),
            })
            .collect()
    }

    /// Runs the shortcut `key` (the first registered wins); false when there is none. A
    /// failure is reported.
    pub(crate) async fn run_shortcut(self: &Arc<Self>, session: &AgentSession, key: &str) -> bool {
        let Some(shortcut): Option<Shortcut> =
            self.regs.shortcuts.iter().find(|s| s.key == key).cloned()
        else {
            return false;
        };
        self.ensure_started(session).await;
        let clock = Arc::new(UiClock::default());
        let token = CancellationToken::new();
        let ctx = ExtensionContext::new(
            session.clone(),
            self.clone(),
            shortcut.extension,
            clock.clone(),
            token.clone(),
        );
        let handler = shortcut.handler.clone();
        let result = self
            .guarded(shortcut.timeout, &clock, || handler(ctx))
            .await;
        token.cancel();
        if let Err(error) = result {
            self.report(session, shortcut.extension, "shortcut", &error);
        }
        true
    }

    /// The registered flags, in order.
    pub(crate) fn flags(&self) -> Vec<FlagInfo> {
        self.regs
            .flags
            .iter()
            .map(|(e, f)| FlagInfo {
                flag: f.clone(),
                extension: self.name(*e).to_owned(),
            })
            .collect()
    }

    /// Sets a flag's value (from the front end).
    pub(crate) fn set_flag(&self, name: &str, value: FlagValue) {
        self.flag_values
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_owned(), value);
    }

    /// A flag's value: set, else its default; `None` for an unknown flag or one without a
    /// value.
    pub(crate) fn flag(&self, name: &str) -> Option<FlagValue> {
        if let Some(v) = self
            .flag_values
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
        {
            return Some(v.clone());
        }
        self.regs
            .flags
            .iter()
            .find(|(_, f)| f.name == name)
            .and_then(|(_, f)| f.default.clone())
    }

    /// How a front end shows an extension message: the first renderer of its type that
    /// answers. A panicking renderer is reported and skipped.
    pub(crate) fn render_message(
        &self,
        session: &AgentSession,
        message: &ExtensionMessage,
        options: MessageRenderOptions,
    ) -> Option<RenderedMessage> {
        let renderers: Vec<&Renderer> = self
            .regs
            .renderers
            .iter()
            .filter(|r| r.custom_type == message.custom_type)
            .collect();
        for r in renderers {
            match std::panic::catch_unwind(AssertUnwindSafe(|| (r.render)(message, options))) {
                Ok(Some(rendered)) => return Some(rendered),
                Ok(None) => {}
                Err(panic) => {
                    let error = format!("renderer panicked: {}", panic_text(&*panic));
                    self.report(session, r.extension, "message_renderer", &error);
                }
            }
        }
        None
    }

    /// The custom types that have a renderer.
    pub(crate) fn has_renderer(&self, custom_type: &str) -> bool {
        self.regs
            .renderers
            .iter()
            .any(|r| r.custom_type == custom_type)
    }

    /// The providers registered during setup.
    pub(crate) fn setup_providers(&self) -> &[(usize, String, ProviderConfig)] {
        &self.regs.providers
    }

    /// Registers `config`'s api implementation (if any) in the global registry, keeping what
    /// it replaces.
    pub(crate) fn install_stream(&self, provider: &str, config: &ProviderConfig) {
        let Some(stream) = &config.stream else {
            return;
        };
        let api = stream.api().to_owned();
        let previous = crate::providers::ApiRegistry::global().register(stream.clone());
        self.provider_streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((provider.to_owned(), api, previous));
    }

    /// Removes the api implementations `provider` registered, restoring what they replaced.
    pub(crate) fn remove_streams(&self, provider: &str) {
        let mut streams = self
            .provider_streams
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut *streams)
            .into_iter()
            .partition(|(p, _, _)| p == provider);
        *streams = kept;
        drop(streams);
        let registry = crate::providers::ApiRegistry::global();
        for (_, api, previous) in gone.into_iter().rev() {
            match previous {
                Some(p) => {
                    registry.register(p);
                }
                None => {
                    registry.unregister(&api);
                }
            }
        }
    }

    /// Sends `data` to the bus handlers of `channel`, in order, on a task of their own.
    pub(crate) fn emit_bus(self: &Arc<Self>, session: &AgentSession, channel: &str, data: Value) {
        let subscribers: Vec<_> = self
            .regs
            .bus
            .iter()
            .filter(|b| b.channel == channel)
            .cloned()
            .collect();
        if subscribers.is_empty() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(target: "pi_engine::extensions", channel, "a bus event was sent outside a tokio runtime; dropped");
            return;
        };
        let weak = session.downgrade();
        let runner = Arc::downgrade(self);
        let event_name = format!("bus:{channel}");
        handle.spawn(async move {
            for b in subscribers {
                let (Some(session), Some(runner)) = (weak.upgrade(), runner.upgrade()) else {
                    return;
                };
                let clock = Arc::new(UiClock::default());
                let token = CancellationToken::new();
                let ctx = ExtensionContext::new(
                    session.clone(),
                    runner.clone(),
                    b.extension,
                    clock.clone(),
                    token.clone(),
                );
                let data = data.clone();
                let handler = b.handler.clone();
                let result = runner
                    .guarded(b.timeout, &clock, || handler(data, ctx))
                    .await;
                token.cancel();
                if let Err(error) = result {
                    runner.report(&session, b.extension, &event_name, &error);
                }
            }
        });
    }

    /// Marks a shutdown as asked for (pi's `ctx.shutdown()`).
    pub(crate) fn request_shutdown(&self) {
        self.shutdown_requested.store(true, Ordering::Release);
        self.shutdown_notify.notify_waiters();
    }

    pub(crate) fn is_shutdown_requested(&self) -> bool {
        self.shutdown_requested.load(Ordering::Acquire)
    }

    /// Waits until an extension asks for a shutdown.
    pub(crate) async fn shutdown_requested(&self) {
        loop {
            let notified = self.shutdown_notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.is_shutdown_requested() {
                return;
            }
            notified.await;
        }
    }

    /// Runs a command's handler; a failure is reported.
    pub(crate) async fn run_command(
        self: &Arc<Self>,
        session: &AgentSession,
        command: &Command,
        args: String,
    ) {
        let clock = Arc::new(UiClock::default());
        let token = CancellationToken::new();
        let ctx = ExtensionContext::new(
            session.clone(),
            self.clone(),
            command.extension,
            clock.clone(),
            token.clone(),
        );
        self.in_command.fetch_add(1, Ordering::AcqRel);
        // The extension's deadline, as for its handlers (a dialog's wait does not count).
        let timeout = command
            .timeout
            .unwrap_or(super::api::DEFAULT_HANDLER_TIMEOUT);
        let handler = command.handler.clone();
        let result = self.guarded(timeout, &clock, || handler(args, ctx)).await;
        self.in_command.fetch_sub(1, Ordering::AcqRel);
        token.cancel();
        if let Err(error) = result {
            self.report(session, command.extension, "command", &error);
        }
    }

    /// A run an extension asked for: after the running command, or now on a task.
    pub(crate) fn start_run(&self, session: &AgentSession, input: PromptInput) {
        if self.in_command.load(Ordering::Acquire) > 0 {
            self.queued_runs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(input);
            return;
        }
        let session = session.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    let _ = session.prompt_from_extension(input).await;
                });
            }
            Err(_) => tracing::warn!(
                target: "pi_engine::extensions",
                "a run was asked for outside a tokio runtime; dropped"
            ),
        }
    }

    /// The runs asked for during a command, in order.
    pub(crate) fn take_queued_runs(&self) -> Vec<PromptInput> {
        std::mem::take(&mut *self.queued_runs.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub(crate) fn hold_for_next_turn(&self, message: AgentMessage) {
        self.next_turn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(message);
    }

    pub(crate) fn take_next_turn(&self) -> Vec<AgentMessage> {
        std::mem::take(&mut *self.next_turn.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
