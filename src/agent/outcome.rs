//! How a run ended: what [`Agent::prompt`](super::Agent::prompt) and
//! [`continue_run`](super::Agent::continue_run) return once the run is over.
//!
//! A failed model call does not make `prompt` return `Err` (pi's events and transcript
//! record it as the run's last message, and the agent stays usable); it makes the outcome
//! [`RunOutcome::Failed`], which is `#[must_use]` so it cannot be dropped unseen.
//! [`RunOutcome::into_result`] turns a failure or an abort into an `Err` for `?`.

use crate::llm::error::Error;
use crate::llm::message::{AssistantMessage, StopReason};

/// How a run ended. `#[must_use]`: a run can fail without `prompt` returning `Err`.
///
/// ```
/// # use pi_engine::agent::{Agent, RunOutcome};
/// # use pi_engine::providers::faux::{FauxProvider, FauxResponse};
/// # use pi_engine::ApiProvider;
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("Hello!"));
/// let agent = Agent::builder(faux.model())
///     .stream_fn(move |model, context, options| faux.stream(model, context, options))
///     .build();
/// // `?` on the call (refused: busy), then on the outcome (failed or aborted).
/// agent.prompt("Hi").await?.into_result()?;
/// assert_eq!(agent.last_assistant_text().as_deref(), Some("Hello!"));
/// # Ok(()) }
/// ```
#[must_use = "a run can fail or be aborted without an `Err`: check the outcome or call `into_result()`"]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RunOutcome {
    /// The model finished: its last reply's stop reason (`stop`, `length`, or `toolUse` when
    /// the turn limit ended the run).
    Completed(StopReason),
    /// The model call failed (after the provider's retries, and for an `AgentSession`
    /// after its own): the error the failed reply carries.
    Failed(Error),
    /// The run was aborted.
    Aborted,
    /// No run: an extension took the input (an `AgentSession` command such as `/plan`, or
    /// an `input` handler that answered `handled`).
    Handled,
}

impl RunOutcome {
    /// The outcome of a run whose last reply is `last` (`None`: the run made no model call),
    /// `cancelled` when its token was cancelled.
    pub(crate) fn of_run(last: Option<&AssistantMessage>, cancelled: bool) -> RunOutcome {
        match last {
            Some(m) if m.stop_reason == StopReason::Error => RunOutcome::Failed(
                m.error()
                    .unwrap_or_else(|| Error::from_message(String::new())),
            ),
            Some(m) if m.stop_reason == StopReason::Aborted => RunOutcome::Aborted,
            _ if cancelled => RunOutcome::Aborted,
            Some(m) => RunOutcome::Completed(m.stop_reason.clone()),
            None => RunOutcome::Completed(StopReason::Stop),
        }
    }

    /// True when the model finished.
    pub fn is_completed(&self) -> bool {
        matches!(self, RunOutcome::Completed(_))
    }

    /// True when the model call failed.
    pub fn is_failed(&self) -> bool {
        matches!(self, RunOutcome::Failed(_))
    }

    /// True when the run was aborted.
    pub fn is_aborted(&self) -> bool {
        matches!(self, RunOutcome::Aborted)
    }

    /// The error of a failed run.
    pub fn error(&self) -> Option<&Error> {
        match self {
            RunOutcome::Failed(error) => Some(error),
            _ => None,
        }
    }

    /// True when an extension took the input and no run was made.
    pub fn is_handled(&self) -> bool {
        matches!(self, RunOutcome::Handled)
    }

    /// `Ok` with the stop reason when the model finished (`stop` for input an extension
    /// handled); a failure or an abort as `Err`.
    pub fn into_result(self) -> Result<StopReason, RunError> {
        match self {
            RunOutcome::Completed(reason) => Ok(reason),
            RunOutcome::Failed(error) => Err(RunError::Failed(error)),
            RunOutcome::Aborted => Err(RunError::Aborted),
            RunOutcome::Handled => Ok(StopReason::Stop),
        }
    }
}

/// A run that did not complete, from [`RunOutcome::into_result`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The model call failed.
    #[error("{0}")]
    Failed(#[source] Error),
    /// The run was aborted (pi's text).
    #[error("Request was aborted")]
    Aborted,
}

impl RunError {
    /// The error of a failed run.
    pub fn error(&self) -> Option<&Error> {
        match self {
            RunError::Failed(error) => Some(error),
            RunError::Aborted => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::error::ErrorKind;

    #[test]
    fn outcome_of_a_run() {
        let done = AssistantMessage::new("a", "p", "m");
        assert!(matches!(
            RunOutcome::of_run(Some(&done), false),
            RunOutcome::Completed(StopReason::Stop)
        ));
        assert!(RunOutcome::of_run(Some(&done), true).is_aborted());
        let failed = AssistantMessage::new("a", "p", "m")
            .with_error(Error::new(ErrorKind::RateLimited, "429 slow down"));
        let outcome = RunOutcome::of_run(Some(&failed), false);
        assert_eq!(
            outcome.error().map(Error::kind),
            Some(ErrorKind::RateLimited)
        );
        let err = outcome.into_result().unwrap_err();
        assert_eq!(err.to_string(), "429 slow down");
        assert_eq!(err.error().map(Error::kind), Some(ErrorKind::RateLimited));
        let aborted = AssistantMessage::new("a", "p", "m")
            .with_error(Error::new(ErrorKind::Aborted, "Request was aborted"));
        assert!(matches!(
            RunOutcome::of_run(Some(&aborted), false).into_result(),
            Err(RunError::Aborted)
        ));
    }
}
