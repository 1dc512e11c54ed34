//! Moving through the session tree and between sessions: navigation with branch
//! summaries, new sessions, switching, forking (pi's `navigateTree`, `newSession`,
//! `switchSession`, `fork`).

use std::path::PathBuf;

use super::builder::{Finder, Restore, restore};
use super::error::AgentSessionError;
use super::session::{AgentSession, lock};
use crate::agent::AgentMessage;
use crate::extensions::{
    BranchSummaryText, SessionBeforeForkEvent, SessionBeforeSwitchEvent, SessionBeforeTreeEvent,
    SessionStartEvent, SessionStartReason, SessionTreeEvent, ShutdownReason, SwitchReason,
    TreePreparation,
};
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
    /// True when nothing moved: the summary was aborted, or an extension cancelled.
    pub cancelled: bool,
    /// The extension that cancelled the move (`session_before_tree`).
    pub cancelled_by: Option<String>,
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
#[must_use]
pub struct ForkResult {
    /// For [`ForkPosition::Before`]: the text of the user message forked before.
    pub selected_text: Option<String>,
    /// The extension that cancelled the fork (`session_before_fork`); nothing changed.
    pub cancelled_by: Option<String>,
}

impl ForkResult {
    /// True when an extension cancelled the fork.
    pub fn cancelled(&self) -> bool {
        self.cancelled_by.is_some()
    }
}

/// What [`AgentSession::new_session`] and [`AgentSession::switch_session`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct SwitchResult {
    /// The extension that cancelled the switch (`session_before_switch`); nothing changed.
    pub cancelled_by: Option<String>,
}

impl SwitchResult {
    /// True when an extension cancelled the switch.
    pub fn cancelled(&self) -> bool {
        self.cancelled_by.is_some()
    }
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
        let mut options = options;
        let mut provided: Option<BranchSummaryText> = None;
        if let Some(runner) = inner.extensions.clone().filter(|r| r.has_before_tree()) {
            let event = SessionBeforeTreeEvent {
                preparation: TreePreparation {
                    target_id: target_id.to_owned(),
                    old_leaf_id: old_leaf.clone(),
                    common_ancestor_id: collected.common_ancestor_id.clone(),
                    entries_to_summarize: collected.entries.clone(),
                    user_wants_summary: options.summarize,
                    custom_instructions: options.custom_instructions.clone(),
                    replace_instructions: options.replace_instructions,
                    label: options.label.clone(),
                },
            };
            let outcome = runner.session_before_tree(self, event, &op).await;
            if let Some(by) = outcome.cancelled_by {
                return Ok(NavigateResult {
                    cancelled: true,
                    cancelled_by: Some(by),
                    ..NavigateResult::default()
                });
            }
            let d = outcome.decision;
            if options.summarize {
                provided = d.summary;
            }
            if d.custom_instructions.is_some() {
                options.custom_instructions = d.custom_instructions;
            }
            if let Some(r) = d.replace_instructions {
                options.replace_instructions = r;
            }
            if d.label.is_some() {
                options.label = d.label;
            }
        }
        let from_extension = provided.is_some();
        // (summary text, details)
        let mut summary: Option<(String, Option<serde_json::Value>)> =
            provided.map(|p| (p.summary, p.details));
        if summary.is_none() && options.summarize && !collected.entries.is_empty() {
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
                Ok(s) => {
                    let details = Some(s.files.to_details());
                    summary = Some((s.summary, details));
                }
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
            Some((text, details)) => {
                let previous = inner.session().leaf_id().map(str::to_owned);
                let from = new_leaf.clone();
                let hook = from_extension.then_some(true);
                let written = inner
                    .append(move |sm| sm.branch_with_summary(from.as_deref(), text, details, hook))
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
        if let Some(runner) = inner.extensions.clone() {
            let event = SessionTreeEvent {
                new_leaf_id: inner.session().leaf_id().map(str::to_owned),
                old_leaf_id: old_leaf,
                from_extension: summary_entry.is_some().then_some(from_extension),
                summary_entry: summary_entry.clone(),
            };
            runner.session_tree(self, event).await;
        }
        Ok(NavigateResult {
            editor_text,
            cancelled: false,
            cancelled_by: None,
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
    /// thinking level (pi's `newSession`). Queues are emptied. The extensions are asked
    /// first (`session_before_switch`, reason `new`: any may cancel), then told
    /// (`session_shutdown`, then `session_start`, reason `new`).
    ///
    /// # Errors
    ///
    /// [`AgentSessionError::Busy`] while an operation runs; write errors.
    ///
    /// # Cancel safety
    ///
    /// Dropped while an extension is asked, nothing changes; dropped later, the new session
    /// may be in place without its `session_start`.
    pub async fn new_session(&self) -> Result<SwitchResult, AgentSessionError> {
        self.new_session_with(NewSession::new()).await
    }

    /// [`new_session`](Self::new_session) with `options` (pi's `newSession({parentSession})`:
    /// [`NewSession::with_parent_session`]).
    ///
    /// # Errors
    ///
    /// As [`new_session`](Self::new_session).
    ///
    /// # Cancel safety
    ///
    /// As [`new_session`](Self::new_session).
    pub async fn new_session_with(
        &self,
        options: NewSession,
    ) -> Result<SwitchResult, AgentSessionError> {
        self.check_idle()?;
        let runner = self.inner.extensions.clone();
        if let Some(runner) = &runner {
            runner.ensure_started(self).await;
            let event = SessionBeforeSwitchEvent {
                reason: SwitchReason::New,
                target_session_file: None,
            };
            if let Some(by) = runner.session_before_switch(self, event).await {
                return Ok(SwitchResult {
                    cancelled_by: Some(by),
                });
            }
        }
        let previous = self.session_file();
        self.shutdown_for(ShutdownReason::New, None).await;
        {
            let (_op, _guard) = self.inner.begin_op()?;
            let _gate = self.inner.try_write_gate()?;
            self.inner.session().new_session(options);
            self.reload()?;
        }
        self.started(SessionStartReason::New, previous).await;
        Ok(SwitchResult::default())
    }

    /// Continues in another session (pi's `switchSession`): its model (when it can be
    /// found), thinking level and context. Queues are emptied. The extensions are asked
    /// first (`session_before_switch`, reason `resume`: any may cancel), then told
    /// (`session_shutdown`, then `session_start`, reason `resume`).
    ///
    /// # Errors
    ///
    /// [`AgentSessionError::Busy`] while an operation runs; read and write errors.
    ///
    /// # Cancel safety
    ///
    /// As [`new_session`](Self::new_session).
    pub async fn switch_session(
        &self,
        session: SessionManager,
    ) -> Result<SwitchResult, AgentSessionError> {
        self.check_idle()?;
        let target = session.session_file().map(PathBuf::from);
        let runner = self.inner.extensions.clone();
        if let Some(runner) = &runner {
            runner.ensure_started(self).await;
            let event = SessionBeforeSwitchEvent {
                reason: SwitchReason::Resume,
                target_session_file: target.clone(),
            };
            if let Some(by) = runner.session_before_switch(self, event).await {
                return Ok(SwitchResult {
                    cancelled_by: Some(by),
                });
            }
        }
        let previous = self.session_file();
        self.shutdown_for(ShutdownReason::Resume, target).await;
        {
            let (_op, _guard) = self.inner.begin_op()?;
            let _gate = self.inner.try_write_gate()?;
            *self.inner.session() = session;
            self.reload()?;
        }
        self.started(SessionStartReason::Resume, previous).await;
        Ok(SwitchResult::default())
    }

    /// Continues in a new session holding this one's branch up to `entry_id` (pi's
    /// `fork`): before a user message (its text is returned), or at any entry. The new
    /// session names this one as its parent. The extensions are asked first
    /// (`session_before_fork`: any may cancel), then told (`session_shutdown`, then
    /// `session_start`, reason `fork`).
    ///
    /// # Errors
    ///
    /// [`AgentSessionError::Busy`] while an operation runs,
    /// [`AgentSessionError::InvalidEntry`] for an unknown entry (or, before, one that is not
    /// a user message); read and write errors.
    ///
    /// # Cancel safety
    ///
    /// As [`new_session`](Self::new_session).
    pub async fn fork(
        &self,
        entry_id: &str,
        position: ForkPosition,
    ) -> Result<ForkResult, AgentSessionError> {
        self.check_idle()?;
        let runner = self.inner.extensions.clone();
        if let Some(runner) = &runner {
            runner.ensure_started(self).await;
            let event = SessionBeforeForkEvent {
                entry_id: entry_id.to_owned(),
                position,
            };
            if let Some(by) = runner.session_before_fork(self, event).await {
                return Ok(ForkResult {
                    selected_text: None,
                    cancelled_by: Some(by),
                });
            }
        }
        let invalid = || AgentSessionError::InvalidEntry {
            id: entry_id.to_owned(),
            reason: "Invalid entry ID for forking",
        };
        let (target, selected_text) = {
            let sm = self.inner.session();
            let entry = sm.entry(entry_id)?.ok_or_else(invalid)?;
            match position {
                ForkPosition::At => (Some(entry_id.to_owned()), None),
                ForkPosition::Before => match &entry {
                    SessionEntry::Message(m) => match &m.message {
                        AgentMessage::User(u) => (m.parent_id.clone(), Some(u.content.text())),
                        _ => return Err(invalid()),
                    },
                    _ => return Err(invalid()),
                },
            }
        };
        let previous = self.session_file();
        self.shutdown_for(ShutdownReason::Fork, None).await;
        {
            let (_op, _guard) = self.inner.begin_op()?;
            let _gate = self.inner.try_write_gate()?;
            {
                let mut sm = self.inner.session();
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
            }
            self.reload()?;
        }
        self.started(SessionStartReason::Fork, previous).await;
        Ok(ForkResult {
            selected_text,
            cancelled_by: None,
        })
    }

    /// `session_start` after the session was replaced.
    async fn started(&self, reason: SessionStartReason, previous: Option<PathBuf>) {
        if let Some(runner) = self.inner.extensions.clone() {
            let event = SessionStartEvent {
                reason,
                previous_session_file: previous,
            };
            runner.session_start(self, event).await;
        }
    }

    /// After the session manager changed: the agent resumes from it (model, thinking level,
    /// context), with empty queues and no retry or compaction state.
    fn reload(&self) -> Result<(), AgentSessionError> {
        let inner = &self.inner;
        let current = inner.model();
        let default_level = inner.state().settings.default_thinking_level;
        let registry = inner.registry();
        let restored = {
            let mut sm = inner.session();
            restore(
                &mut sm,
                &Finder {
                    registry: &registry,
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
