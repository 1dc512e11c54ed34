//! Compaction in an agent session: before every model call (the guard), after a run
//! (pi's threshold and overflow checks), on demand, and before switching to a smaller model.

use std::borrow::Cow;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::error::AgentSessionError;
use super::event::{CompactionReason, SessionEvent};
use super::retry::is_context_overflow;
use super::session::{AfterCheck, AgentSession, Inner, Overlay, compaction_time};
use crate::agent::{AgentMessage, StreamFn};
use crate::extensions::{SessionBeforeCompactEvent, SessionCompactEvent};
use crate::llm::error::Error;
use crate::llm::message::{AssistantMessage, StopReason};
use crate::session::SessionEntry;
use crate::session::compaction::{
    CompactionPreparation, CompactionResult, Summarizer, calculate_context_tokens, compact,
    estimate_context_tokens_where, prepare_compaction, should_compact,
};

/// pi's text when a second overflow follows a compaction.
const OVERFLOW_RECOVERY_FAILED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// Why a compaction did not happen.
pub(super) enum CompactFailure {
    Nothing,
    AlreadyCompacted,
    Cancelled,
    /// The summary request failed.
    Failed(Error),
    /// The session file could not be read or written.
    Session(crate::session::SessionError),
}

impl From<crate::session::SessionError> for CompactFailure {
    fn from(e: crate::session::SessionError) -> Self {
        CompactFailure::Session(e)
    }
}

impl CompactFailure {
    /// The text pi puts after "Auto-compaction failed: " / "Compaction failed: ".
    fn text(&self) -> String {
        match self {
            CompactFailure::Nothing => "Nothing to compact (session too small)".to_owned(),
            CompactFailure::AlreadyCompacted => "Already compacted".to_owned(),
            CompactFailure::Cancelled => "Compaction cancelled".to_owned(),
            CompactFailure::Failed(e) => e.to_string(),
            CompactFailure::Session(e) => e.to_string(),
        }
    }
}

/// Estimated context tokens of `messages`: a reply's reported usage counts only when it
/// came after the latest compaction (before it, the usage measured the old, longer context).
pub(super) fn estimate(messages: &[AgentMessage]) -> u64 {
    let after = compaction_time(messages);
    estimate_context_tokens_where(messages, |reply| after.is_none_or(|t| reply.timestamp > t))
        .tokens
}

/// The application's stream function, or the registry's, for summary requests.
struct RawStream(Arc<Inner>);

impl StreamFn for RawStream {
    fn stream(
        &self,
        model: &crate::Model,
        context: &crate::Context,
        options: &crate::StreamOptions,
    ) -> crate::llm::AssistantMessageEventStream {
        self.0.raw_stream(model, context, options)
    }
}

impl Inner {
    /// A summarizer with the current model and thinking level, the application's options
    /// and this call's credentials. Summary requests keep the provider-level retries: the
    /// session's own retries do not cover them.
    pub(super) async fn summarizer(
        self: &Arc<Self>,
        cancel: &CancellationToken,
    ) -> Result<Summarizer, Error> {
        let (model, level) = {
            let agent = self.agent.state();
            (agent.model.clone(), agent.thinking_level)
        };
        let auth = self.registry().request_auth(&model).await?;
        let mut options = super::session::lock(&self.options).clone();
        options.session_id = Some(self.session().session_id().to_owned());
        options.cancel = Some(cancel.clone());
        let options = auth.apply(options);
        Ok(Summarizer::new(model)
            .with_stream_fn_arc(Arc::new(RawStream(self.clone())))
            .with_options(options)
            .with_thinking_level(level))
    }

    /// What a compaction of the current branch would summarize. Unlike pi, a branch with
    /// nothing to summarize (no message before the kept ones: an empty conversation, or one
    /// that fits in `keep_recent_tokens`) is [`CompactFailure::Nothing`] — pi summarizes the
    /// empty conversation and puts that summary ahead of everything.
    pub(super) fn prepare_branch(&self) -> Result<CompactionPreparation, CompactFailure> {
        let settings = self.state().settings.compaction;
        let path = self.session().branch_path(None)?;
        let Some(preparation) = prepare_compaction(&path, &settings) else {
            return Err(match path.last() {
                Some(SessionEntry::Compaction(_)) => CompactFailure::AlreadyCompacted,
                _ => CompactFailure::Nothing,
            });
        };
        if preparation.messages_to_summarize.is_empty()
            && preparation.turn_prefix_messages.is_empty()
        {
            return Err(CompactFailure::Nothing);
        }
        Ok(preparation)
    }

    /// Warns, once per session, when the compaction reserve leaves no room in the model's
    /// context window (every context is then "over the threshold").
    pub(super) fn warn_if_reserve_too_large(&self, window: u64, reserve: u64) {
        if window == 0 || reserve < window {
            return;
        }
        let model = self.model();
        let mut st = self.state();
        if !std::mem::replace(&mut st.reserve_warned, true) {
            tracing::warn!(model = %model.id, context_window = window, reserve_tokens = reserve,
                "the compaction reserve is not smaller than the model's context window: compaction runs only when there is history to summarize");
        }
    }

    /// Compacts the session's current branch and records the compaction entry.
    pub(super) async fn compact_branch(
        self: &Arc<Self>,
        custom_instructions: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<CompactionResult, CompactFailure> {
        let preparation = self.prepare_branch()?;
        self.compact_prepared(preparation, custom_instructions, cancel)
            .await
    }

    /// Summarizes `preparation` — or takes the compaction an extension provides
    /// (`session_before_compact`, which may also cancel) — and records the compaction
    /// entry; then tells the extensions (`session_compact`).
    async fn compact_prepared(
        self: &Arc<Self>,
        preparation: CompactionPreparation,
        custom_instructions: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<CompactionResult, CompactFailure> {
        let runner = self.extensions.clone();
        let mut provided = None;
        if let Some(runner) = runner.as_ref().filter(|r| r.has_before_compact()) {
            let event = SessionBeforeCompactEvent {
                preparation: preparation.clone(),
                branch_entries: self.session().branch_path(None)?,
                custom_instructions: custom_instructions.map(str::to_owned),
            };
            let session = AgentSession {
                inner: self.clone(),
            };
            let outcome = runner.session_before_compact(&session, event, cancel).await;
            if outcome.cancelled_by.is_some() {
                return Err(CompactFailure::Cancelled);
            }
            provided = outcome.compaction;
        }
        let from_extension = provided.is_some();
        let result = match provided {
            Some(result) => result,
            None => {
                let summarizer = self
                    .summarizer(cancel)
                    .await
                    .map_err(CompactFailure::Failed)?;
                match compact(&preparation, &summarizer, custom_instructions).await {
                    Ok(r) => r,
                    Err(e) if e.is_aborted() => return Err(CompactFailure::Cancelled),
                    Err(e) => return Err(CompactFailure::Failed(e)),
                }
            }
        };
        if cancel.is_cancelled() {
            return Err(CompactFailure::Cancelled);
        }
        let (summary, first_kept, tokens_before, details) = (
            result.summary.clone(),
            result.first_kept_entry_id.clone(),
            result.tokens_before,
            result.details.clone(),
        );
        let hook = from_extension.then_some(true);
        let id = self
            .append(move |sm| {
                sm.append_compaction(summary, first_kept, tokens_before, details, hook)
            })
            .await?;
        if let Some(runner) = runner {
            let entry = match self.session().entry(&id) {
                Ok(Some(SessionEntry::Compaction(c))) => Some(c),
                _ => None,
            };
            if let Some(compaction_entry) = entry {
                let session = AgentSession {
                    inner: self.clone(),
                };
                let event = SessionCompactEvent {
                    compaction_entry,
                    from_extension,
                };
                runner.session_compact(&session, event).await;
            }
        }
        Ok(result)
    }

    /// pi's `_runAutoCompaction`: events around [`compact_branch`](Self::compact_branch),
    /// then the agent holds the compacted context. True when it compacted.
    pub(super) async fn run_auto_compaction(
        self: &Arc<Self>,
        reason: CompactionReason,
        will_retry: bool,
        op: &CancellationToken,
    ) -> bool {
        self.emit(SessionEvent::CompactionStart { reason });
        let cancel = op.child_token();
        self.state().compaction_cancel = Some(cancel.clone());
        let outcome = self.compact_branch(None, &cancel).await;
        self.state().compaction_cancel = None;
        let (result, aborted, error_message) = match outcome {
            Ok(result) => match self.session_context().await {
                Ok(context) => {
                    self.agent.set_messages(context.messages);
                    (Some(result), false, None)
                }
                Err(e) => (None, false, Some(e.to_string())),
            },
            Err(CompactFailure::Nothing | CompactFailure::AlreadyCompacted) => (None, false, None),
            Err(CompactFailure::Cancelled) => (None, true, None),
            Err(e) => (None, false, Some(e.text())),
        };
        let error_message = error_message.map(|e| match reason {
            CompactionReason::Overflow => format!("Context overflow recovery failed: {e}"),
            _ => format!("Auto-compaction failed: {e}"),
        });
        let done = result.is_some();
        self.emit(SessionEvent::CompactionEnd {
            reason,
            result,
            aborted,
            will_retry: will_retry && done,
            error_message,
        });
        if done && will_retry {
            let mut agent = self.agent.state();
            if let Some(AgentMessage::Assistant(a)) = agent.messages.last()
                && a.stop_reason == StopReason::Error
            {
                agent.messages.pop();
            }
        }
        done
    }

    /// pi's `_checkCompaction` after a run (`after_run`: the reply is the run's own, and an
    /// aborted one is skipped) and before a prompt: recover from an overflow once, or
    /// compact past the threshold.
    pub(super) async fn check_compaction(
        self: &Arc<Self>,
        reply: &AssistantMessage,
        after_run: bool,
        op: &CancellationToken,
    ) -> AfterCheck {
        let settings = self.state().settings.compaction;
        if !settings.enabled || (after_run && reply.stop_reason == StopReason::Aborted) {
            return AfterCheck::Done;
        }
        let model = self.model();
        let window = model.context_window;
        self.warn_if_reserve_too_large(window, settings.reserve_tokens);
        let same_model = reply.provider == model.provider && reply.model == model.id;
        let messages = self.agent.messages();
        let compacted_at = compaction_time(&messages);
        // Before a prompt, the last reply may be one a compaction kept, whose usage measured
        // the old context (pi's check). After a run, the reply is the run's own.
        if !after_run && compacted_at.is_some_and(|t| reply.timestamp <= t) {
            return AfterCheck::Done;
        }
        if same_model && is_context_overflow(reply, window) {
            let attempted = std::mem::replace(&mut self.state().overflow_attempted, true);
            if attempted {
                self.emit(SessionEvent::CompactionEnd {
                    reason: CompactionReason::Overflow,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(OVERFLOW_RECOVERY_FAILED.to_owned()),
                });
                return AfterCheck::Done;
            }
            self.drop_failed_reply();
            return if self
                .run_auto_compaction(CompactionReason::Overflow, true, op)
                .await
            {
                AfterCheck::Continue
            } else {
                AfterCheck::Done
            };
        }
        let tokens = if reply.stop_reason == StopReason::Error {
            let e = estimate_context_tokens_where(&messages, |_| true);
            let Some(index) = e.last_usage_index else {
                return AfterCheck::Done;
            };
            let stale = match (&messages[index], compacted_at) {
                (AgentMessage::Assistant(a), Some(t)) => a.timestamp <= t,
                _ => false,
            };
            if stale {
                return AfterCheck::Done;
            }
            e.tokens
        } else {
            calculate_context_tokens(&reply.usage)
        };
        // Nothing to summarize (unlike pi): no compaction, and no events for it.
        if should_compact(tokens, window, settings.reserve_tokens)
            && !matches!(
                self.prepare_branch(),
                Err(CompactFailure::Nothing | CompactFailure::AlreadyCompacted)
            )
            && self
                .run_auto_compaction(CompactionReason::Threshold, false, op)
                .await
            && self.agent.has_queued_messages()
        {
            return AfterCheck::Continue;
        }
        AfterCheck::Done
    }

    /// Runs before every model call of a run (the agent's `transform_context`): the
    /// context as the model sees it (compacted, if a compaction happened during this run),
    /// compacted now if it has grown past the threshold — so a long tool loop cannot
    /// overflow the window. pi checks only when a run ends.
    pub(super) async fn guard<'a>(
        self: &Arc<Self>,
        messages: &'a [AgentMessage],
        cancel: &CancellationToken,
    ) -> Cow<'a, [AgentMessage]> {
        let (settings, off, overlaid) = {
            let st = self.state();
            let overlaid = st.overlay.as_ref().and_then(|o| {
                (messages.len() >= o.base_len).then(|| {
                    let mut view = o.messages.clone();
                    view.extend_from_slice(&messages[o.base_len..]);
                    view
                })
            });
            (st.settings.compaction, st.guard_off, overlaid)
        };
        let view: Cow<'a, [AgentMessage]> = match overlaid {
            Some(v) => Cow::Owned(v),
            None => Cow::Borrowed(messages),
        };
        let window = self.model().context_window;
        if settings.enabled {
            self.warn_if_reserve_too_large(window, settings.reserve_tokens);
        }
        if !settings.enabled
            || off
            || cancel.is_cancelled()
            || !should_compact(estimate(&view), window, settings.reserve_tokens)
        {
            return view;
        }
        // Nothing to summarize (the conversation fits in what a compaction keeps): no
        // compaction, no events, and no more checks in this run.
        let preparation = match self.prepare_branch() {
            Ok(p) => p,
            Err(CompactFailure::Nothing | CompactFailure::AlreadyCompacted) => {
                self.state().guard_off = true;
                return view;
            }
            Err(e) => {
                self.state().guard_off = true;
                let reason = CompactionReason::Threshold;
                self.emit(SessionEvent::CompactionStart { reason });
                self.emit(SessionEvent::CompactionEnd {
                    reason,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(format!("Auto-compaction failed: {}", e.text())),
                });
                return view;
            }
        };
        let reason = CompactionReason::Threshold;
        self.emit(SessionEvent::CompactionStart { reason });
        let child = cancel.child_token();
        self.state().compaction_cancel = Some(child.clone());
        let outcome = self.compact_prepared(preparation, None, &child).await;
        self.state().compaction_cancel = None;
        let context = match outcome {
            Ok(result) => match self.session_context().await {
                Ok(context) => Ok((result, context.messages)),
                Err(e) => Err(CompactFailure::from(e)),
            },
            Err(e) => Err(e),
        };
        match context {
            Ok((result, compacted)) => {
                let still_over =
                    should_compact(estimate(&compacted), window, settings.reserve_tokens);
                {
                    let mut st = self.state();
                    st.overlay = Some(Overlay {
                        base_len: messages.len(),
                        messages: compacted.clone(),
                    });
                    st.guard_off = still_over;
                }
                self.emit(SessionEvent::CompactionEnd {
                    reason,
                    result: Some(result),
                    aborted: false,
                    will_retry: false,
                    error_message: None,
                });
                Cow::Owned(compacted)
            }
            Err(failure) => {
                // Whatever failed would fail again on the next call of this run.
                self.state().guard_off = true;
                let (aborted, error_message) = match failure {
                    CompactFailure::Cancelled => (true, None),
                    CompactFailure::Nothing | CompactFailure::AlreadyCompacted => (false, None),
                    e => (false, Some(format!("Auto-compaction failed: {}", e.text()))),
                };
                self.emit(SessionEvent::CompactionEnd {
                    reason,
                    result: None,
                    aborted,
                    will_retry: false,
                    error_message,
                });
                view
            }
        }
    }
}

impl AgentSession {
    /// Compacts the context now (pi's `/compact`), with optional extra instructions for the
    /// summary ("Additional focus: …"). A running operation is aborted first. Emits
    /// `compaction_start` and `compaction_end` (reason `manual`).
    ///
    /// # Errors
    ///
    /// [`AgentSessionError::NothingToCompact`], [`AgentSessionError::AlreadyCompacted`],
    /// [`AgentSessionError::Cancelled`] when aborted, and
    /// [`AgentSessionError::Summary`] when the summary request failed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the summary request; the session is unchanged unless the
    /// compaction entry was already written.
    pub async fn compact(
        &self,
        custom_instructions: Option<&str>,
    ) -> Result<CompactionResult, AgentSessionError> {
        let inner = &self.inner;
        inner.abort();
        inner.wait_for_idle().await;
        let (op, _guard) = inner.begin_op()?;
        let reason = CompactionReason::Manual;
        inner.emit(SessionEvent::CompactionStart { reason });
        let cancel = op.child_token();
        inner.state().compaction_cancel = Some(cancel.clone());
        let outcome = inner.compact_branch(custom_instructions, &cancel).await;
        inner.state().compaction_cancel = None;
        let outcome = match outcome {
            Ok(result) => match inner.session_context().await {
                Ok(context) => {
                    inner.agent.set_messages(context.messages);
                    Ok(result)
                }
                Err(e) => Err(CompactFailure::from(e)),
            },
            Err(e) => Err(e),
        };
        let aborted = matches!(outcome, Err(CompactFailure::Cancelled));
        inner.emit(SessionEvent::CompactionEnd {
            reason,
            result: outcome.as_ref().ok().cloned(),
            aborted,
            will_retry: false,
            error_message: match &outcome {
                Err(e) if !aborted => Some(format!("Compaction failed: {}", e.text())),
                _ => None,
            },
        });
        outcome.map_err(|e| match e {
            CompactFailure::Nothing => AgentSessionError::NothingToCompact,
            CompactFailure::AlreadyCompacted => AgentSessionError::AlreadyCompacted,
            CompactFailure::Cancelled => AgentSessionError::Cancelled("Compaction"),
            CompactFailure::Failed(source) => AgentSessionError::Summary {
                context: "Compaction failed",
                source,
            },
            CompactFailure::Session(e) => AgentSessionError::Session(e),
        })
    }
}
