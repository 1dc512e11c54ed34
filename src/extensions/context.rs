//! [`ExtensionContext`]: what a handler or command can see and do (pi's
//! `ExtensionContext`, its command context, and the run-time half of `ExtensionAPI`).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::command::CommandInfo;
use super::deadline::UiClock;
use super::exec::{ExecOptions, ExecResult};
use super::flag::FlagValue;
use super::provider::ProviderConfig;
use super::runner::ExtensionRunner;
use super::ui::Ui;
use crate::agent::{AgentTool, PromptInput};
use crate::agent_session::{
    AgentSession, AgentSessionError, ContextUsage, ForkPosition, ForkResult, NavigateOptions,
    NavigateResult, SwitchResult, ToolInfo,
};
use crate::llm::model::Model;
use crate::llm::models::{ModelRegistry, ModelsJsonError};
use crate::llm::thinking::ThinkingLevel;
use crate::session::compaction::CompactionResult;
use crate::session::{ExtensionMessage, SessionManager};

/// How a message sent while the agent runs is delivered (pi's `deliverAs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Delivery {
    /// After the current turn, before the next model call (pi's default while streaming).
    #[default]
    Steer,
    /// When the agent would otherwise stop.
    FollowUp,
    /// Held, and sent with the next prompt (only for [`ExtensionContext::send_message`]).
    NextTurn,
}

/// The context of one handler call. Cheap to clone; it holds the session, so keep it only
/// as long as the call (a context stored inside the session keeps the session alive).
#[derive(Clone)]
pub struct ExtensionContext {
    pub(crate) session: AgentSession,
    pub(crate) runner: Arc<ExtensionRunner>,
    pub(crate) extension: usize,
    pub(crate) ui: Ui,
    pub(crate) cancel: CancellationToken,
}

impl fmt::Debug for ExtensionContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtensionContext")
            .field("extension", &self.extension_name())
            .field("has_ui", &self.ui.has_ui())
            .finish_non_exhaustive()
    }
}

impl ExtensionContext {
    pub(crate) fn new(
        session: AgentSession,
        runner: Arc<ExtensionRunner>,
        extension: usize,
        clock: Arc<UiClock>,
        cancel: CancellationToken,
    ) -> Self {
        let ui = Ui {
            ui: runner.ui.clone(),
            clock,
        };
        ExtensionContext {
            session,
            runner,
            extension,
            ui,
            cancel,
        }
    }

    /// The name of the extension whose handler this is.
    pub fn extension_name(&self) -> &str {
        self.runner.name(self.extension)
    }

    /// The front end's UI (dialogs stop this call's deadline while they wait).
    pub fn ui(&self) -> &Ui {
        &self.ui
    }

    /// Whether a person can answer dialogs (pi's `hasUI`).
    pub fn has_ui(&self) -> bool {
        self.ui.has_ui()
    }

    /// The session: its messages, entries (`with_session_manager`), model, stats…
    pub fn session(&self) -> &AgentSession {
        &self.session
    }

    /// The session's working directory.
    pub fn cwd(&self) -> PathBuf {
        self.session
            .with_session_manager(|sm| PathBuf::from(sm.cwd()))
    }

    /// Cancelled when this call's deadline passes or the operation it belongs to is
    /// aborted; a handler that waits should stop then.
    pub fn cancelled(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the agent is idle (pi's `isIdle()`).
    pub fn is_idle(&self) -> bool {
        !self.session.is_streaming()
    }

    /// Aborts the running operation (returns at once).
    pub fn abort(&self) {
        self.session.abort();
    }

    /// Sends an extension message (pi's `sendMessage`). While the agent runs it is
    /// delivered as `deliver_as` says (default steer); `NextTurn` holds it for the next
    /// prompt. While idle, with `trigger_turn` it starts a run (after the command that
    /// sent it, when sent from one); without, it joins the context and the session file
    /// (a `custom_message` entry) and no run starts.
    ///
    /// # Errors
    ///
    /// A session write error (idle, no run).
    ///
    /// # Cancel safety
    ///
    /// The message is either queued or written; dropping the future after the write has
    /// started leaves the write to finish.
    pub async fn send_message(
        &self,
        message: ExtensionMessage,
        deliver_as: Option<Delivery>,
        trigger_turn: bool,
    ) -> Result<(), AgentSessionError> {
        let agent_message = super::runner::to_agent_message(&message);
        match deliver_as {
            Some(Delivery::NextTurn) => {
                self.runner.hold_for_next_turn(agent_message);
                Ok(())
            }
            _ if self.session.is_streaming() => {
                match deliver_as.unwrap_or_default() {
                    Delivery::FollowUp => self.session.agent().follow_up(agent_message),
                    _ => self.session.agent().steer(agent_message),
                }
                Ok(())
            }
            _ if trigger_turn => {
                self.runner
                    .start_run(&self.session, PromptInput::Messages(vec![agent_message]));
                Ok(())
            }
            _ => self.session.append_extension_message(agent_message).await,
        }
    }

    /// Sends a user message, as if typed (pi's `sendUserMessage`): always a run. While the
    /// agent runs it is queued as `deliver_as` says (default steer); while idle the run
    /// starts after the command that sent it (when sent from one) or at once on a task of
    /// its own. Its `input` event has the source `extension`.
    pub fn send_user_message(&self, input: impl Into<PromptInput>, deliver_as: Option<Delivery>) {
        let input = input.into();
        if self.session.is_streaming() {
            match deliver_as.unwrap_or_default() {
                Delivery::FollowUp => self.session.follow_up(input),
                _ => self.session.steer(input),
            }
        } else {
            self.runner.start_run(&self.session, input);
        }
    }

    /// Writes a `custom` entry (pi's `appendEntry`): the extension's own data in the
    /// session file, not sent to the model. Returns the entry's id.
    ///
    /// # Errors
    ///
    /// A session write error.
    ///
    /// # Cancel safety
    ///
    /// The write finishes even when the future is dropped.
    pub async fn append_entry(
        &self,
        custom_type: impl Into<String>,
        data: Option<Value>,
    ) -> Result<String, AgentSessionError> {
        self.session
            .append_custom_entry(custom_type.into(), data)
            .await
    }

    /// Names the session (pi's `setSessionName`).
    ///
    /// # Errors
    ///
    /// A session write error.
    ///
    /// # Cancel safety
    ///
    /// As [`append_entry`](Self::append_entry).
    pub async fn set_session_name(&self, name: &str) -> Result<(), AgentSessionError> {
        self.session.set_session_name(name).await
    }

    /// The session's name.
    pub fn session_name(&self) -> Option<String> {
        self.session.session_name()
    }

    /// Labels an entry, or with `None` removes its label (pi's `setLabel`).
    ///
    /// # Errors
    ///
    /// An unknown entry; a session write error.
    ///
    /// # Cancel safety
    ///
    /// As [`append_entry`](Self::append_entry).
    pub async fn set_label(
        &self,
        entry_id: &str,
        label: Option<&str>,
    ) -> Result<(), AgentSessionError> {
        self.session.set_label(entry_id, label).await
    }

    /// Adds a tool at run time (pi's `registerTool` after loading): the model can call it
    /// from the next model call on. A tool of the same name is replaced.
    pub fn register_tool(&self, tool: impl AgentTool) {
        self.session.register_tool(tool);
    }

    /// The names of the tools the model can call now (pi's `getActiveTools`).
    pub fn active_tools(&self) -> Vec<String> {
        self.session.active_tools()
    }

    /// Every tool the session knows, active or not (pi's `getAllTools`).
    pub fn all_tools(&self) -> Vec<ToolInfo> {
        self.session.all_tools()
    }

    /// Makes exactly the named tools callable (pi's `setActiveTools`); unknown names are
    /// ignored.
    pub fn set_active_tools<S: AsRef<str>>(&self, names: &[S]) {
        self.session.set_active_tools(names);
    }

    /// The commands the session's extensions registered (pi's `getCommands`).
    pub fn commands(&self) -> Vec<CommandInfo> {
        self.session.commands()
    }

    /// The value of a flag an extension registered (pi's `getFlag`): what the front end set,
    /// else its default.
    pub fn flag(&self, name: &str) -> Option<FlagValue> {
        self.runner.flag(name)
    }

    /// The current model (pi's `ctx.model`).
    pub fn model(&self) -> Model {
        self.session.model()
    }

    /// The session's model registry, as it is now (pi's `ctx.modelRegistry`).
    pub fn model_registry(&self) -> std::sync::Arc<ModelRegistry> {
        self.session.model_registry()
    }

    /// Switches the model (pi's `setModel`): `Ok(false)` when there are no credentials for
    /// it.
    ///
    /// # Errors
    ///
    /// A session write error.
    ///
    /// # Cancel safety
    ///
    /// As [`AgentSession::set_model`].
    pub async fn set_model(&self, model: Model) -> Result<bool, AgentSessionError> {
        match self.session.set_model(model).await {
            Ok(()) => Ok(true),
            Err(AgentSessionError::NoApiKey { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The thinking level (pi's `getThinkingLevel`).
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.session.thinking_level()
    }

    /// Sets the thinking level, clamped to what the model offers (pi's `setThinkingLevel`);
    /// returns the level in force.
    ///
    /// # Errors
    ///
    /// A session write error.
    ///
    /// # Cancel safety
    ///
    /// As [`AgentSession::set_thinking_level`].
    pub async fn set_thinking_level(
        &self,
        level: ThinkingLevel,
    ) -> Result<ThinkingLevel, AgentSessionError> {
        self.session.set_thinking_level(level).await
    }

    /// How full the model's window is (pi's `getContextUsage`).
    pub fn context_usage(&self) -> Option<ContextUsage> {
        self.session.context_usage()
    }

    /// The system prompt the model gets now (pi's `getSystemPrompt`; inside
    /// `before_agent_start`, the event's `system_prompt` is the one being built).
    pub fn system_prompt(&self) -> String {
        self.session.agent().state().system_prompt.clone()
    }

    /// Whether messages are queued for the agent (pi's `hasPendingMessages`).
    pub fn has_pending_messages(&self) -> bool {
        self.session.pending_message_count() > 0
    }

    /// Asks the front end to end the program (pi's `shutdown`): it sees
    /// [`AgentSession::is_shutdown_requested`] and
    /// [`AgentSession::shutdown_requested`], and decides when.
    pub fn shutdown(&self) {
        self.runner.request_shutdown();
    }

    /// Compacts the context (pi's `compact`): aborts what runs, then summarizes, on a task
    /// of its own — await the handle for the result (pi's `onComplete`/`onError`). Awaiting
    /// it inside a handler of the run it aborts would wait for that handler: do not, there.
    pub fn compact(
        &self,
        custom_instructions: Option<String>,
    ) -> tokio::task::JoinHandle<Result<CompactionResult, AgentSessionError>> {
        let session = self.session.clone();
        tokio::spawn(async move { session.compact(custom_instructions.as_deref()).await })
    }

    /// Runs `program` with `args` — no shell — in the session's directory, stdin closed, in
    /// its own process group (pi's `exec`). It is stopped (`SIGTERM` to the group, `SIGKILL`
    /// 5 s later) when `options.timeout` passes, `options.cancel` fires or this handler
    /// call's own token does (its deadline, an abort). At most
    /// [`MAX_EXEC_OUTPUT`](super::MAX_EXEC_OUTPUT) bytes of each stream are kept.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills the program's process group.
    pub async fn exec(&self, program: &str, args: &[&str], options: ExecOptions) -> ExecResult {
        let cwd = options.cwd.unwrap_or_else(|| self.cwd());
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        super::exec::exec(
            program,
            &args,
            cwd,
            options.timeout,
            [Some(self.cancel.clone()), options.cancel],
        )
        .await
    }

    /// Sends `data` on `channel` of the extensions' event bus (pi's `pi.events.emit`): the
    /// handlers registered with [`ExtensionApi::on_bus_event`](super::ExtensionApi::on_bus_event)
    /// run on a task of their own. Returns at once.
    pub fn emit_bus_event(&self, channel: &str, data: Value) {
        self.runner.emit_bus(&self.session, channel, data);
    }

    /// Adds or changes a provider and its models at run time (pi's `registerProvider`).
    ///
    /// # Errors
    ///
    /// An invalid provider entry (nothing changes).
    pub fn register_provider(
        &self,
        name: &str,
        config: ProviderConfig,
    ) -> Result<(), ModelsJsonError> {
        self.session.register_provider(&self.runner, name, config)
    }

    /// Removes a provider registered at run time (pi's `unregisterProvider`).
    pub fn unregister_provider(&self, name: &str) {
        self.session.unregister_provider(&self.runner, name);
    }

    /// Waits until the session is idle (pi's `waitForIdle`, for commands). Inside a handler
    /// of a run it waits for that run — and so for itself — until the deadline: do not.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits.
    pub async fn wait_for_idle(&self) {
        self.session.wait_for_idle().await;
    }

    /// Starts a new session (pi's `newSession`), as [`AgentSession::new_session`].
    ///
    /// # Errors
    ///
    /// As [`AgentSession::new_session`].
    pub async fn new_session(&self) -> Result<SwitchResult, AgentSessionError> {
        self.session.new_session().await
    }

    /// Continues in another session (pi's `switchSession`), as
    /// [`AgentSession::switch_session`].
    ///
    /// # Errors
    ///
    /// As [`AgentSession::switch_session`].
    pub async fn switch_session(
        &self,
        session: SessionManager,
    ) -> Result<SwitchResult, AgentSessionError> {
        self.session.switch_session(session).await
    }

    /// Forks the session (pi's `fork`), as [`AgentSession::fork`].
    ///
    /// # Errors
    ///
    /// As [`AgentSession::fork`].
    pub async fn fork(
        &self,
        entry_id: &str,
        position: ForkPosition,
    ) -> Result<ForkResult, AgentSessionError> {
        self.session.fork(entry_id, position).await
    }

    /// Moves in the session tree (pi's `navigateTree`), as [`AgentSession::navigate_tree`].
    ///
    /// # Errors
    ///
    /// As [`AgentSession::navigate_tree`].
    pub async fn navigate_tree(
        &self,
        target_id: &str,
        options: NavigateOptions,
    ) -> Result<NavigateResult, AgentSessionError> {
        self.session.navigate_tree(target_id, options).await
    }
}
