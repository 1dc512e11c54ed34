//! [`ExtensionContext`]: what a handler or command can see and do (pi's
//! `ExtensionContext`, its command context, and the run-time half of `ExtensionAPI`).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::deadline::UiClock;
use super::runner::ExtensionRunner;
use super::ui::Ui;
use crate::agent::{AgentTool, PromptInput};
use crate::agent_session::{AgentSession, AgentSessionError};
use crate::session::ExtensionMessage;

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
        let tool: Arc<dyn AgentTool> = Arc::new(tool);
        let mut tools = self.session.agent().state().tools.clone();
        tools.retain(|t| t.name() != tool.name());
        tools.push(tool);
        self.session.agent().set_tools(tools);
    }

    /// The names of the tools the model can call now.
    pub fn active_tools(&self) -> Vec<String> {
        self.session
            .agent()
            .state()
            .tools
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    }
}
