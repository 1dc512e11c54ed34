//! What an [`AgentSession`] offers its extensions' front end and the extensions
//! themselves: the commands, shortcuts, flags and renderers they registered, the tools
//! (active and all), providers added at run time, resources, shutdown — and a person's own
//! shell commands (`!cmd`).

use std::sync::Arc;

use serde_json::Value;
#[cfg(feature = "tools")]
use tokio_util::sync::CancellationToken;

use super::error::AgentSessionError;
use super::event::SessionEvent;
use super::session::{AgentSession, lock};
use crate::agent::AgentTool;
use crate::extensions::runner::ExtensionRunner;
use crate::extensions::{
    CommandInfo, Completion, DiscoveredResources, FlagInfo, FlagValue, MessageRenderOptions,
    ProviderConfig, RenderedMessage, ResourcesDiscoverEvent, ResourcesReason, SessionShutdownEvent,
    ShortcutInfo, ShutdownReason,
};
use crate::llm::models::{ModelRegistry, ModelsJsonError};
use crate::session::ExtensionMessage;

/// A tool as [`AgentSession::all_tools`] lists it (pi's `ToolInfo`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The name the model calls it by.
    pub name: String,
    /// What the model is told it does.
    pub description: String,
    /// Its JSON Schema.
    pub parameters: Value,
    /// Whether the model can call it now.
    pub active: bool,
}

impl AgentSession {
    /// Reports what an extension did (`extension_action`).
    pub(crate) fn emit_extension_action(&self, extension: &str, event: &str, action: &str) {
        self.inner.emit(SessionEvent::ExtensionAction {
            extension_path: extension.to_owned(),
            event: event.to_owned(),
            action: action.to_owned(),
        });
    }

    fn runner(&self) -> Option<&Arc<ExtensionRunner>> {
        self.inner.extensions.as_ref()
    }

    // ----- tools ------------------------------------------------------------------------

    /// Adds a tool, active from the next model call on; one of the same name is replaced
    /// (pi's `registerTool` after loading).
    pub fn register_tool(&self, tool: impl AgentTool) {
        let tool: Arc<dyn AgentTool> = Arc::new(tool);
        {
            let mut all = lock(&self.inner.all_tools);
            all.retain(|t| t.name() != tool.name());
            all.push(tool.clone());
        }
        let mut tools = self.inner.agent.state().tools.clone();
        tools.retain(|t| t.name() != tool.name());
        tools.push(tool);
        self.use_tools(tools);
    }

    /// Makes `tools` the active ones, and rebuilds the system prompt for them when the
    /// session builds it ([`AgentSessionBuilder::system_prompt_for_tools`](super::AgentSessionBuilder::system_prompt_for_tools)).
    fn use_tools(&self, tools: Vec<Arc<dyn AgentTool>>) {
        if let Some(f) = &self.inner.prompt_for_tools {
            self.inner.agent.set_system_prompt(f(&tools));
        }
        self.inner.agent.set_tools(tools);
    }

    /// The names of the tools the model can call now.
    pub fn active_tools(&self) -> Vec<String> {
        self.inner
            .agent
            .state()
            .tools
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    }

    /// Every tool the session knows, active or not, in the order they were added.
    pub fn all_tools(&self) -> Vec<ToolInfo> {
        let active = self.active_tools();
        lock(&self.inner.all_tools)
            .iter()
            .map(|t| {
                let d = t.definition();
                ToolInfo {
                    name: d.name.clone(),
                    description: d.description.clone(),
                    parameters: d.parameters.clone(),
                    active: active.contains(&d.name),
                }
            })
            .collect()
    }

    /// Makes exactly the named tools callable, in the session's order, from the next model
    /// call on (pi's `setActiveTools`); names the session does not know are ignored.
    pub fn set_active_tools<S: AsRef<str>>(&self, names: &[S]) {
        let tools: Vec<Arc<dyn AgentTool>> = lock(&self.inner.all_tools)
            .iter()
            .filter(|t| names.iter().any(|n| n.as_ref() == t.name()))
            .cloned()
            .collect();
        self.use_tools(tools);
    }

    // ----- the model registry -------------------------------------------------------------

    /// The model registry as it is now (extensions may add providers to it).
    pub fn model_registry(&self) -> Arc<ModelRegistry> {
        self.inner.registry()
    }

    pub(crate) fn register_provider(
        &self,
        runner: &ExtensionRunner,
        name: &str,
        config: ProviderConfig,
    ) -> Result<(), ModelsJsonError> {
        self.inner
            .update_registry(|r| r.register_provider(name, config.entry.clone()))?;
        runner.remove_streams(name);
        runner.install_stream(name, &config);
        Ok(())
    }

    pub(crate) fn unregister_provider(&self, runner: &ExtensionRunner, name: &str) {
        self.inner.update_registry(|r| r.unregister_provider(name));
        runner.remove_streams(name);
    }

    // ----- what extensions registered -----------------------------------------------------

    /// The commands the session's extensions registered, in order.
    pub fn commands(&self) -> Vec<CommandInfo> {
        self.runner().map_or_else(Vec::new, |r| r.commands())
    }

    /// The completions command `name` offers for the text typed after it (pi's
    /// `getArgumentCompletions`); `None` when it offers none. Bounded by the command's
    /// deadline; a failure is an `extension_error`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the extension's.
    pub async fn command_completions(&self, name: &str, prefix: &str) -> Option<Vec<Completion>> {
        let runner = self.runner()?.clone();
        runner.completions(self, name, prefix).await
    }

    /// The keyboard shortcuts the session's extensions registered.
    pub fn shortcuts(&self) -> Vec<ShortcutInfo> {
        self.runner().map_or_else(Vec::new, |r| r.shortcuts())
    }

    /// Runs the shortcut `key` (the first extension that registered it); false when none
    /// did. A failing shortcut is an `extension_error`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the shortcut's handler.
    pub async fn run_shortcut(&self, key: &str) -> bool {
        match self.runner().cloned() {
            Some(runner) => runner.run_shortcut(self, key).await,
            None => false,
        }
    }

    /// The command-line flags the session's extensions registered.
    pub fn flags(&self) -> Vec<FlagInfo> {
        self.runner().map_or_else(Vec::new, |r| r.flags())
    }

    /// Sets a flag's value (a front end that parsed its command line after building the
    /// session; see also [`AgentSessionBuilder::flag_value`](super::AgentSessionBuilder::flag_value)).
    pub fn set_flag(&self, name: &str, value: impl Into<FlagValue>) {
        if let Some(r) = self.runner() {
            r.set_flag(name, value.into());
        }
    }

    /// How to show an extension message, if an extension registered a renderer for its
    /// type; `None` leaves it to the front end. A panicking renderer is an
    /// `extension_error`.
    pub fn render_message(
        &self,
        message: &ExtensionMessage,
        options: MessageRenderOptions,
    ) -> Option<RenderedMessage> {
        let runner = self.runner()?;
        if !runner.has_renderer(&message.custom_type) {
            return None;
        }
        runner.render_message(self, message, options)
    }

    /// Asks the extensions for skills, prompt templates and themes (pi's
    /// `resources_discover`, which a front end sends when it starts or reloads).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the handler being asked.
    pub async fn discover_resources(&self, reason: ResourcesReason) -> DiscoveredResources {
        let Some(runner) = self.runner().cloned() else {
            return DiscoveredResources::default();
        };
        let event = ResourcesDiscoverEvent {
            cwd: self.with_session_manager(|sm| std::path::PathBuf::from(sm.cwd())),
            reason,
        };
        runner.resources_discover(self, event).await
    }

    /// Starts the extensions now: `session_start` (reason `startup`) unless it was sent.
    /// The first prompt or command does it otherwise; a front end calls it when it starts,
    /// as pi sends `session_start` when the session is created.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the handler being run; `session_start` counts as sent.
    pub async fn start_extensions(&self) {
        if let Some(runner) = self.runner().cloned() {
            runner.ensure_started(self).await;
        }
    }

    /// The models the session can switch to: those given to the builder, then the
    /// registry's with credentials (without credentials too when the session has its own
    /// stream function), each once.
    pub fn available_models(&self) -> Vec<crate::llm::model::Model> {
        let registry = self.inner.registry();
        let usable =
            |m: &crate::llm::model::Model| !self.inner.needs_auth() || registry.has_auth(m);
        let mut out: Vec<crate::llm::model::Model> = Vec::new();
        let registry_models: Vec<&crate::llm::model::Model> = if self.inner.needs_auth() {
            registry.available()
        } else {
            registry.all().collect()
        };
        for m in self
            .inner
            .models
            .iter()
            .filter(|m| usable(m))
            .chain(registry_models)
        {
            if !out.iter().any(|o| o.provider == m.provider && o.id == m.id) {
                out.push(m.clone());
            }
        }
        out
    }

    // ----- shutdown -------------------------------------------------------------------------

    /// True once an extension asked the program to end
    /// ([`ExtensionContext::shutdown`](crate::extensions::ExtensionContext::shutdown)).
    pub fn is_shutdown_requested(&self) -> bool {
        self.runner().is_some_and(|r| r.is_shutdown_requested())
    }

    /// Resolves when an extension asks the program to end (never, without extensions).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits.
    pub async fn shutdown_requested(&self) {
        match self.runner().cloned() {
            Some(runner) => runner.shutdown_requested().await,
            None => std::future::pending().await,
        }
    }

    /// Ends the session for its extensions (pi's `dispose`): aborts what runs, waits for
    /// it, and sends `session_shutdown` (reason `quit`). The session stays usable.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops waiting; the handlers being run are dropped.
    pub async fn shutdown(&self) {
        self.abort();
        self.wait_for_idle().await;
        if let Some(runner) = self.runner().cloned() {
            let event = SessionShutdownEvent {
                reason: ShutdownReason::Quit,
                target_session_file: None,
            };
            runner.session_shutdown(self, event).await;
        }
    }

    /// Sends `session_shutdown` before the session is replaced.
    pub(crate) async fn shutdown_for(
        &self,
        reason: ShutdownReason,
        target: Option<std::path::PathBuf>,
    ) {
        if let Some(runner) = self.runner().cloned() {
            let event = SessionShutdownEvent {
                reason,
                target_session_file: target,
            };
            runner.session_shutdown(self, event).await;
        }
    }

    /// Fails with [`AgentSessionError::Busy`] while an operation runs.
    pub(crate) fn check_idle(&self) -> Result<(), AgentSessionError> {
        if self.inner.is_busy() {
            return Err(AgentSessionError::Busy);
        }
        Ok(())
    }
}

/// How [`AgentSession::execute_bash`] runs a person's command.
#[cfg(feature = "tools")]
#[cfg_attr(docsrs, doc(cfg(feature = "tools")))]
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct BashRun {
    /// Keep the result out of the model's context (pi's `!!command`).
    pub exclude_from_context: bool,
    /// Run it here instead of on this machine (an extension's `user_bash` may choose
    /// otherwise).
    pub operations: Option<Arc<dyn crate::tools::BashOperations>>,
    /// Skip the extensions' `user_bash` handlers (pi's RPC `bash` does not ask them; its
    /// interactive `!cmd` does).
    pub skip_extensions: bool,
}

#[cfg(feature = "tools")]
impl BashRun {
    /// Runs on this machine; the result joins the context.
    pub fn new() -> Self {
        BashRun::default()
    }

    /// Keeps the result out of the model's context.
    #[must_use]
    pub fn excluded_from_context(mut self) -> Self {
        self.exclude_from_context = true;
        self
    }

    /// Does not ask the extensions' `user_bash` handlers.
    #[must_use]
    pub fn without_extensions(mut self) -> Self {
        self.skip_extensions = true;
        self
    }

    /// Runs through `operations`.
    #[must_use]
    pub fn with_operations(mut self, operations: Arc<dyn crate::tools::BashOperations>) -> Self {
        self.operations = Some(operations);
        self
    }
}

#[cfg(feature = "tools")]
#[cfg_attr(docsrs, doc(cfg(feature = "tools")))]
impl AgentSession {
    /// Runs a shell command a person typed (pi's `!command`) in the session's directory and
    /// records it as a `bashExecution` message: in the context and the session file now, or
    /// — while the agent runs — after the run, so a reply and its tool results stay
    /// together. The extensions are asked first (`user_bash`): one may run it elsewhere or
    /// answer it. The output kept is its last 2,000 lines / 50 KiB (the whole output goes
    /// to a `pi-bash-*.log` file then); [`abort_bash`](Self::abort_bash) or
    /// [`abort`](Self::abort) stops it.
    ///
    /// # Errors
    ///
    /// A command that could not be started, and session write errors.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills the command; nothing is recorded.
    pub async fn execute_bash(
        &self,
        command: &str,
        run: BashRun,
    ) -> Result<crate::session::BashExecutionMessage, AgentSessionError> {
        let cwd = self.with_session_manager(|sm| std::path::PathBuf::from(sm.cwd()));
        let mut operations = run.operations.clone();
        let mut answered = None;
        if let Some(runner) = self.runner().cloned().filter(|_| !run.skip_extensions) {
            runner.ensure_started(self).await;
            let event = crate::extensions::UserBashEvent {
                command: command.to_owned(),
                exclude_from_context: run.exclude_from_context,
                cwd: cwd.clone(),
            };
            match runner.user_bash(self, event).await {
                Some(crate::extensions::UserBashAction::RunWith(ops)) => operations = Some(ops),
                Some(crate::extensions::UserBashAction::Answer(message)) => {
                    answered = Some(message);
                }
                None => {}
            }
        }
        let mut message = match answered {
            Some(message) => message,
            None => {
                let cancel = CancellationToken::new();
                self.inner.state().bash_cancel = Some(cancel.clone());
                let ops = operations.unwrap_or_else(|| Arc::new(crate::tools::LocalBash::new()));
                let ran = crate::tools::run_user_command(&*ops, command, &cwd, cancel).await;
                self.inner.state().bash_cancel = None;
                let ran = ran.map_err(|e| AgentSessionError::Bash(e.to_string()))?;
                let mut m =
                    crate::session::BashExecutionMessage::new(command, ran.output, ran.exit_code);
                m.cancelled = ran.cancelled;
                m.truncated = ran.truncated;
                m.full_output_path = ran
                    .full_output_path
                    .map(|p| p.to_string_lossy().into_owned());
                m
            }
        };
        message.command = command.to_owned();
        if run.exclude_from_context {
            message.exclude_from_context = Some(true);
        }
        self.record_bash(message.clone()).await?;
        Ok(message)
    }

    /// Stops the command [`execute_bash`](Self::execute_bash) runs (it is recorded as
    /// cancelled).
    pub fn abort_bash(&self) {
        if let Some(t) = &self.inner.state().bash_cancel {
            t.cancel();
        }
    }

    /// True while [`execute_bash`](Self::execute_bash) runs a command.
    pub fn is_bash_running(&self) -> bool {
        self.inner.state().bash_cancel.is_some()
    }
}

impl AgentSession {
    /// Records a person's command: now, or after the run when the agent runs.
    #[cfg(feature = "tools")]
    async fn record_bash(
        &self,
        message: crate::session::BashExecutionMessage,
    ) -> Result<(), AgentSessionError> {
        let message = crate::agent::AgentMessage::custom(&message)
            .map_err(|e| AgentSessionError::Bash(e.to_string()))?;
        if self.is_streaming() {
            self.inner.state().pending_bash.push(message);
            return Ok(());
        }
        self.inner.persist_message(&message).await?;
        self.inner.agent.state().messages.push(message);
        Ok(())
    }

    /// The commands recorded while the agent ran, into the context and the file.
    #[cfg(feature = "tools")]
    pub(crate) async fn flush_pending_bash(&self) -> Result<(), AgentSessionError> {
        let pending = std::mem::take(&mut self.inner.state().pending_bash);
        for message in pending {
            self.inner.persist_message(&message).await?;
            self.inner.agent.state().messages.push(message);
        }
        Ok(())
    }
}
