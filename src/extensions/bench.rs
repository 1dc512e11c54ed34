//! **Not API**: hidden, with no stability promise. What `benches/extensions.rs` measures: one
//! event handed to a session's extensions the way the session hands it.

use std::sync::Arc;

use serde_json::Map;
use tokio_util::sync::CancellationToken;

use super::ToolCallEvent;
use super::runner::ExtensionRunner;
use crate::agent_session::AgentSession;

/// A session's extensions, ready to be handed `tool_call` events.
#[derive(Debug)]
pub struct Dispatch {
    session: AgentSession,
    runner: Arc<ExtensionRunner>,
    cancel: CancellationToken,
}

impl Dispatch {
    /// The extensions of `session`; `None` when it has none.
    pub fn new(session: AgentSession) -> Option<Self> {
        let runner = session.inner.extensions.clone()?;
        Some(Dispatch {
            session,
            runner,
            cancel: CancellationToken::new(),
        })
    }

    /// Hands one `tool_call` event to the extensions, as the session does before a tool
    /// runs (the check for handlers included); true when one blocked it.
    pub async fn tool_call(&self) -> bool {
        if !self.runner.has_tool_call() {
            return false;
        }
        let event = ToolCallEvent {
            tool_call_id: "call_1".to_owned(),
            tool_name: "noop".to_owned(),
            input: Map::new(),
        };
        self.runner
            .tool_call(&self.session, event, &self.cancel)
            .await
            .blocked
            .is_some()
    }
}
