//! [`ExtensionRunner`]: the registered extensions of one session, and how an event goes to
//! their handlers — in registration order, each call under its deadline and token, a
//! failure reported as an `extension_error` event and never raised into the session.

use std::any::Any;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use serde_json::Map;
use tokio_util::sync::CancellationToken;

use super::api::{Command, Extension, Registered, Registrations};
use super::context::ExtensionContext;
use super::deadline::{UiClock, with_deadline};
use super::events::{
    BeforeAgentStart, BeforeAgentStartEvent, Cancel, ContextEvent, InputAction, InputEvent,
    SessionBeforeSwitchEvent, SessionStartEvent, ToolCallEvent, ToolCallVerdict, ToolResultEvent,
    ToolResultPatch,
};
use super::ui::ExtensionUi;
use crate::agent::{AgentMessage, AgentTool, CustomMessage, PromptInput};
use crate::agent_session::{AgentSession, AgentSessionEvent};
use crate::llm::message::ImageContent;
use crate::session::ExtensionMessage;

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
            let r = ext.register(i).registrations;
            regs.tool_call.extend(r.tool_call);
            regs.tool_result.extend(r.tool_result);
            regs.context.extend(r.context);
            regs.input.extend(r.input);
            regs.before_agent_start.extend(r.before_agent_start);
            regs.session_start.extend(r.session_start);
            regs.session_before_switch.extend(r.session_before_switch);
            regs.event.extend(r.event);
            regs.tools.extend(r.tools);
            regs.commands.extend(r.commands);
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

    fn report(&self, session: &AgentSession, extension: usize, event: &str, error: &str) {
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

    /// `tool_call`: the first block wins; a failing handler blocks.
    pub(crate) async fn tool_call(
        self: &Arc<Self>,
        session: &AgentSession,
        event: ToolCallEvent,
        cancel: &CancellationToken,
    ) -> Option<(String, ToolCallVerdict)> {
        for r in &self.regs.tool_call {
            match self
                .call(session, "tool_call", r, event.clone(), Some(cancel))
                .await
            {
                Ok(Some(v)) if v.block => return Some((self.name(r.extension).to_owned(), v)),
                Ok(_) => {}
                Err(error) => {
                    return Some((
                        self.name(r.extension).to_owned(),
                        ToolCallVerdict::block(format!(
                            "Extension failed, blocking execution: {error}"
                        )),
                    ));
                }
            }
        }
        None
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
                if let Some(c) = p.content {
                    event.content = c;
                }
                if let Some(d) = p.details {
                    event.details = d;
                }
                if let Some(e) = p.is_error {
                    event.is_error = e;
                }
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
        let mut current = messages;
        let mut changed = false;
        for r in &self.regs.context {
            let event = ContextEvent {
                messages: current.clone(),
            };
            if let Ok(Some(m)) = self.call(session, "context", r, event, Some(cancel)).await {
                current = m;
                changed = true;
            }
        }
        changed.then_some(current)
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
                Ok(Some(InputAction::Handled)) => return InputAction::Handled,
                Ok(Some(InputAction::Transform { text, images })) => {
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
                    system = s;
                    changed = true;
                }
            }
        }
        (messages, changed.then_some(system))
    }

    /// `session_start`, once per session handle (and again after a new session).
    pub(crate) async fn session_start(
        self: &Arc<Self>,
        session: &AgentSession,
        event: SessionStartEvent,
    ) {
        self.started.store(true, Ordering::Release);
        for r in &self.regs.session_start {
            let _ = self
                .call(session, "session_start", r, event.clone(), None)
                .await;
        }
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

    /// `session_before_switch`: the first cancel wins.
    pub(crate) async fn session_before_switch(
        self: &Arc<Self>,
        session: &AgentSession,
        event: SessionBeforeSwitchEvent,
    ) -> bool {
        for r in &self.regs.session_before_switch {
            if let Ok(Some(Cancel { cancel: true })) = self
                .call(session, "session_before_switch", r, event.clone(), None)
                .await
            {
                return true;
            }
        }
        false
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

    /// The registered commands: name and description.
    pub(crate) fn commands(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.regs
            .commands
            .iter()
            .map(|c| (c.name.as_str(), c.description.as_deref()))
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
