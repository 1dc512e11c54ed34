//! Compaction: when a conversation nears the model's context window, its older part is
//! replaced by a summary — pi 0.73.1's algorithm, to the token.
//!
//! * **When**: [`estimate_context_tokens`] (the usage the last successful reply reported,
//!   plus a quarter of the characters of what follows) exceeds the window minus
//!   `reserve_tokens` ([`should_compact`]).
//! * **Where**: [`find_cut_point`] keeps about `keep_recent_tokens` of the newest messages
//!   and never separates a tool result from its call; a cut inside a turn is a *split turn*.
//! * **What**: [`prepare_compaction`] collects what to summarize, the previous summary to
//!   update, and the files read and modified; [`compact`] asks a model for the summary
//!   ([`Summarizer`]) with pi's prompts ([`SUMMARIZATION_PROMPT`], …) — the turn's first part
//!   of a split turn apart, concurrently — and appends `<read-files>`/`<modified-files>`.
//!   [`SessionManager::append_compaction`](crate::session::SessionManager::append_compaction)
//!   records the result.
//! * **Branches**: [`collect_entries_for_branch_summary`] and [`generate_branch_summary`]
//!   summarize a branch being left.
//!
//! [`AgentSession`](crate::agent_session::AgentSession) does all of this automatically;
//! these functions are for applications that manage sessions themselves.
//!
//! ```
//! use pi_engine::providers::faux::{FauxProvider, FauxResponse};
//! use pi_engine::session::compaction::{compact, prepare_compaction, CompactionSettings, Summarizer};
//! use pi_engine::session::SessionManager;
//! use pi_engine::{ApiProvider, AssistantContent, AssistantMessage, UserMessage};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let mut session = SessionManager::in_memory("/project");
//! for i in 0..4 {
//!     session.append_message(UserMessage::text(format!("question {i}: {}", "x".repeat(400)))).unwrap();
//!     session.append_message(AssistantMessage::new("faux", "faux", "faux-1")
//!         .with_content(vec![AssistantContent::text("y".repeat(400))])).unwrap();
//! }
//! // Keep about 200 tokens: the last exchange.
//! let mut settings = CompactionSettings::default();
//! settings.keep_recent_tokens = 200;
//! let path = session.branch_path(None).unwrap();
//! let preparation = prepare_compaction(&path, &settings).unwrap();
//! assert_eq!(preparation.messages_to_summarize.len(), 6);
//!
//! let faux = FauxProvider::new();
//! faux.push(FauxResponse::text("## Goal\nAnswer four questions."));
//! let summarizer = Summarizer::new(faux.model()).with_stream_fn(move |m, c, o| faux.stream(m, c, o));
//! let result = compact(&preparation, &summarizer, None).await.unwrap();
//! session.append_compaction(&result.summary, &result.first_kept_entry_id, result.tokens_before,
//!     result.details.clone(), None).unwrap();
//! assert_eq!(session.build_session_context().unwrap().messages.len(), 3); // summary + 2 kept
//! # }
//! ```

mod branch;
mod cut_point;
mod estimate;
mod file_ops;
mod prepare;
mod prompts;
mod serialize;
mod summarize;

use serde::{Deserialize, Serialize};

pub use branch::{
    BranchEntries, BranchSummary, BranchSummaryOptions, PreparedBranch,
    collect_entries_for_branch_summary, generate_branch_summary, prepare_branch_entries,
};
pub use cut_point::{CutPoint, find_cut_point, find_turn_start_index};
pub use estimate::{
    ContextEstimate, IMAGE_CHARS, calculate_context_tokens, estimate_context_tokens,
    estimate_tokens, should_compact,
};
pub(crate) use estimate::{estimate_context_tokens_where, valid_usage};
pub use file_ops::{FileLists, FileOperations};
pub use prepare::{CompactionPreparation, path_context, prepare_compaction};
pub use prompts::{
    BRANCH_SUMMARY_PREAMBLE, BRANCH_SUMMARY_PROMPT, SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT, TURN_PREFIX_SUMMARIZATION_PROMPT, UPDATE_SUMMARIZATION_PROMPT,
};
pub use serialize::{TOOL_RESULT_MAX_CHARS, serialize_conversation};
pub use summarize::{CompactionResult, Summarizer, compact, generate_summary};

/// When and how much to compact (pi's `compaction` settings).
///
/// ```
/// use pi_engine::session::compaction::CompactionSettings;
///
/// let s: CompactionSettings = serde_json::from_str(r#"{"reserveTokens": 8192}"#).unwrap();
/// assert_eq!((s.enabled, s.reserve_tokens, s.keep_recent_tokens), (true, 8192, 20000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct CompactionSettings {
    /// Compact automatically. Default true.
    pub enabled: bool,
    /// Tokens of the window kept free for the next reply; compaction starts when less is
    /// left. Default 16384.
    pub reserve_tokens: u64,
    /// Tokens of the newest messages kept as they are. Default 20000.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}
