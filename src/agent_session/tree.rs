//! Moving through the session tree and between sessions: navigation with branch
//! summaries, new sessions, switching, forking (pi's `navigateTree`, `newSession`,
//! `switchSession`, `fork`).

use super::builder::{Finder, Restore, restore};
use super::error::AgentSessionError;
use super::session::{AgentSession, lock};
use crate::agent::AgentMessage;
use crate::session::compaction::{
    BranchSummaryOptions, collect_entries_for_branch_summary, generate_branch_summary,
};
use crate::session::{BranchSummaryEntry, EntryType, NewSession, SessionEntry, SessionManager};

/// How [`AgentSession::navigate_tree`] moves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NavigateOptions {
    /// Summarize the branch being left into a `branch_summary` entry at the new position.
    pub summarize: bool,
    /// Added to the summary's instructions ("Additional focus: …").
    pub custom_instructions: Option<String>,
    /// Use `custom_instructions` instead of pi's instructions.
    pub replace_instructions: bool,
    /// A label for the summary entry (or, without a summary, for the target).
    pub label: Option<String>,
}

impl NavigateOptions {
    /// Move without a summary.
    pub fn new() -> Self {
        NavigateOptions::default()
    }

    /// Summarize the branch being left.
    #[must_use]
    pub fn summarize(mut self) -> Self {
        self.summarize = true;
        self
    }

    /// Extra instructions for the summary.
    #[must_use]
    pub fn with_custom_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.custom_instructions = Some(instructions.into());
        self
    }

    /// Use the custom instructions instead of pi's.
    #[must_use]
    pub fn replacing_instructions(mut self) -> Self {
        self.replace_instructions = true;
        self
    }

    /// Labels the summary (or the target).
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

/// What [`AgentSession::navigate_tree`] did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct NavigateResult {
    /// When the target was a user (or custom) message: its text, for the editor (the
    /// conversation continues from before it).
    pub editor_text: Option<String>,
    /// True when nothing moved because the summary was aborted.
    pub cancelled: bool,
    /// True when the summary was aborted.
    pub aborted: bool,
    /// The branch summary written.
    pub summary_entry: Option<BranchSummaryEntry>,
}

/// Where [`AgentSession::fork`] starts the new session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ForkPosition {
    /// Before a user message, which is returned for the editor.
    #[default]
    Before,
    /// At the entry, included.
    At,
}

/// What [`AgentSession::fork`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ForkResult {
    /// For [`ForkPosition::Before`]: the text of the user message forked before.
    pub selected_text: Option<String>,
}

impl AgentSession {
    /// Moves the conversation to entry `target_id` of the tree (pi's `navigateTree`),
    /// optionally summarizing the branch being left. A user or custom message as target
    /// puts the leaf before it and returns its text (to edit and send again); any other
    /// entry becomes the leaf. The summary, if any, is a `branch_summary` entry at the new
    /// leaf. The agent's context becomes the new branch's.
    ///
    /// # Errors
    ///
    /// [`AgentSessionError::Busy`] while an operation runs,
    /// [`AgentSessionError::InvalidEntry`] for an unknown entry, and
    /// [`AgentSessionError::Summary`] when the summary request failed (nothing moved).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the summary is written leaves the session where it was.
    pub async fn navigate_tree(
        &self,
        target_id: &str,
        options: NavigateOptions,
    ) -> Result<NavigateResult, AgentSessionError> {
        let inner = &self.inner;
        let (op, _guard) = inner.begin_op()?;
        let (old_leaf, target, collected) = {
            let sm = inner.session();
            let old_leaf = sm.leaf_id().map(str::to_owned);
            if old_leaf.as_deref() == Some(target_id) {
                return Ok(NavigateResult::default());
            }
            let target = sm
                .entry(target_id)?
                .ok_or_else(|| AgentSessionError::InvalidEntry {
                    id: target_id.to_owned(),
                    reason: "not found",
                })?;
            let collected =
                collect_entries_for_branch_summary(&sm, old_leaf.as_deref(), target_id)?;
            (old_leaf, target, collected)
        };
        let _ = old_leaf;
        let mut summary = None;
        if options.summarize && !collected.entries.is_empty() {
            let cancel = op.child_token();
            inner.state().branch_summary_cancel = Some(cancel.clone());
            let generated = async {
                let summarizer = inner.summarizer(&cancel).await?;
                let mut o = BranchSummaryOptions::new();
                o.custom_instructions
                    .clone_from(&options.custom_instructions);
                o.replace_instructions = options.replace_instructions;
                o.reserve_tokens = inner.state().settings.branch_summary.reserve_tokens;
                generate_branch_summary(&collected.entries, &summarizer, &o).await
            }
            .await;
            inner.state().branch_summary_cancel = None;
            match generated {
                Ok(s) => summary = Some(s),
                Err(e) if e.is_aborted() || cancel.is_cancelled() => {
                    return Ok(NavigateResult {
                        cancelled: true,
                        aborted: true,
                        ..NavigateResult::default()
                    });
                }
                Err(source) => {
                    return Err(AgentSessionError::Summary {
                        context: "Branch summary failed",
                        source,
                    });
                }
            }
        }
        let (new_leaf, editor_text) = match &target {
            SessionEntry::Message(m) => match &m.message {
                AgentMessage::User(u) => (m.parent_id.clone(), Some(u.content.text())),
                _ => (Some(target_id.to_owned()), None),
            },
            SessionEntry::CustomMessage(c) => (c.parent_id.clone(), Some(c.content.text())),
            _ => (Some(target_id.to_owned()), None),
        };
        // Each entry is written through the session's writer (off the executor), one after
        // another; the manager's lock is held only between the writes.
        let summary_entry = match summary {
            Some(s) => {
                let previous = inner.session().leaf_id().map(str::to_owned);
                let from = new_leaf.clone();
                let details = Some(s.files.to_details());
                let written = inner
                    .append(move |sm| {
                        sm.branch_with_summary(from.as_deref(), s.summary, details, None)
                    })
                    .await;
                let id = match written {
                    Ok(id) => id,
                    Err(e) => {
                        // Nothing was written: the leaf goes back where it was.
                        let mut sm = inner.session();
                        match previous {
                            Some(p) => {
                                let _ = sm.branch(&p);
                            }
                            None => sm.reset_leaf(),
                        }
                        return Err(e.into());
                    }
                };
                let entry = match inner.session().entry(&id)? {
                    Some(SessionEntry::BranchSummary(b)) => Some(b),
                    _ => None,
                };
                if let Some(label) = options.label.clone() {
                    inner
                        .append(move |sm| sm.append_label_change(&id, Some(&label)))
                        .await?;
                }
                entry
            }
            None => {
                {
                    let mut sm = inner.session();
                    match &new_leaf {
                        Some(id) => sm.branch(id)?,
                        None => sm.reset_leaf(),
                    }
                }
                if let Some(label) = options.label.clone() {
                    let target = target_id.to_owned();
                    inner
                        .append(move |sm| sm.append_label_change(&target, Some(&label)))
                        .await?;
                }
                None
            }
        };
        // The branch now records the model and thinking level in force, so that a
        // reopened session resumes with them (pi leaves the new branch's own).
        let context = inner.session_context().await?;
        let (model, level) = {
            let agent = inner.agent.state();
            (agent.model.clone(), agent.thinking_level)
        };
        let same_model = context
            .model
            .as_ref()
            .is_some_and(|m| m.provider == model.provider && m.model_id == model.id);
        if !same_model && inner.session().leaf_id().is_some() {
            let (provider, id) = (model.provider.clone(), model.id.clone());
            inner
                .append(move |sm| sm.append_model_change(provider, id))
                .await?;
        }
        let record_level = {
            let sm = inner.session();
            let recorded = sm
                .branch_ids(None)
                .iter()
                .any(|id| sm.entry_type(id) == Some(EntryType::ThinkingLevelChange));
            (!recorded || context.thinking_level != level) && sm.leaf_id().is_some()
        };
        if record_level {
            inner
                .append(move |sm| sm.append_thinking_level_change(level))
                .await?;
        }
        inner.agent.set_messages(context.messages);
        Ok(NavigateResult {
            editor_text,
            cancelled: false,
            aborted: false,
            summary_entry,
        })
    }

    /// The user messages of the session, for choosing where to fork: `(entry id, text)`.
    pub fn user_messages_for_forking(&self) -> Result<Vec<(String, String)>, AgentSessionError> {
        let entries = self.inner.session().entries()?;
        Ok(entries
            .into_iter()
            .filter_map(|e| match e {
                SessionEntry::Message(m) => match m.message {
                    AgentMessage::User(u) => {
                        let text = u.content.text();
                        (!text.is_empty()).then_some((m.id, text))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect())
    }

    /// Starts a new, empty session in the same directory, with the current model and
    /// thinking level (pi's `newSession`). Queues are emptied.
    ///
    /// # Errors
    ///
    /// [`AgentSessionError::Busy`] while an operation runs; write errors.
    pub fn new_session(&self) -> Result<(), AgentSessionError> {
        let (_op, _guard) = self.inner.begin_op()?;
        let _gate = self.inner.try_write_gate()?;
        self.inner.session().new_session(NewSession::new());
        self.reload()
    }

    /// Continues in another session (pi's `switchSession`): its model (when it can be
    /// found), thinking level and context. Queues are emptied.
    ///
    /// # Errors
    ///
    /// [`AgentSessionError::Busy`] while an operation runs; read and write errors.
    pub fn switch_session(&self, session: SessionManager) -> Result<(), AgentSessionError> {
        let (_op, _guard) = self.inner.begin_op()?;
        let _gate = self.inner.try_write_gate()?;
        *self.inner.session() = session;
        self.reload()
    }

    /// Continues in a new session holding this one's branch up to `entry_id` (pi's
    /// `fork`): before a user message (its text is returned), or at any entry. The new
    /// session names this one as its parent.
    ///
    /// # Errors
    ///
    /// [`AgentSessionError::Busy`] while an operation runs,
    /// [`AgentSessionError::InvalidEntry`] for an unknown entry (or, before, one that is not
    /// a user message); read and write errors.
    pub fn fork(
        &self,
        entry_id: &str,
        position: ForkPosition,
    ) -> Result<ForkResult, AgentSessionError> {
        let (_op, _guard) = self.inner.begin_op()?;
        let _gate = self.inner.try_write_gate()?;
        let invalid = || AgentSessionError::InvalidEntry {
            id: entry_id.to_owned(),
            reason: "Invalid entry ID for forking",
        };
        {
            let mut sm = self.inner.session();
            let entry = sm.entry(entry_id)?.ok_or_else(invalid)?;
            let (target, selected_text) = match position {
                ForkPosition::At => (Some(entry_id.to_owned()), None),
                ForkPosition::Before => match &entry {
                    SessionEntry::Message(m) => match &m.message {
                        AgentMessage::User(u) => (m.parent_id.clone(), Some(u.content.text())),
                        _ => return Err(invalid()),
                    },
                    _ => return Err(invalid()),
                },
            };
            match target {
                Some(leaf) => {
                    sm.create_branched_session(&leaf)?;
                }
                None => {
                    let mut new = NewSession::new();
                    if let Some(file) = sm.session_file() {
                        new = new.with_parent_session(file.display().to_string());
                    }
                    sm.new_session(new);
                }
            }
            drop(sm);
            self.reload()?;
            Ok(ForkResult { selected_text })
        }
    }

    /// After the session manager changed: the agent resumes from it (model, thinking level,
    /// context), with empty queues and no retry or compaction state.
    fn reload(&self) -> Result<(), AgentSessionError> {
        let inner = &self.inner;
        let current = inner.model();
        let default_level = inner.state().settings.default_thinking_level;
        let restored = {
            let mut sm = inner.session();
            restore(
                &mut sm,
                &Finder {
                    registry: &inner.registry,
                    models: &inner.models,
                    needs_auth: inner.needs_auth(),
                },
                Restore {
                    explicit: None,
                    fallback: Some(current),
                    level: None,
                    default_level,
                },
            )?
        };
        inner.agent.clear_all_queues();
        {
            let mut agent = inner.agent.state();
            agent.model = restored.model;
            agent.thinking_level = restored.thinking_level;
            agent.messages = restored.messages;
        }
        {
            let mut st = inner.state();
            st.model_fallback_message = restored.fallback_message;
            st.retry_attempt = 0;
            st.overflow_attempted = false;
            st.steering_texts.clear();
            st.follow_up_texts.clear();
            st.overlay = None;
            st.last_assistant = None;
            st.last_assistant_entry = None;
        }
        *lock(&inner.auth) = None;
        inner.apply_agent_options();
        Ok(())
    }
}
