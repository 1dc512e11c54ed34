//! The prompt texts of pi 0.73.1's summarizers, word for word.
//!
//! They are data: `scripts/gen-compaction-golden.mjs` extracts them from pi's source into
//! `prompts/*.md` (without a final line break, as pi has them), and `--check` in CI fails
//! when they drift from pi.

/// The system prompt of every summarization request.
pub const SUMMARIZATION_SYSTEM_PROMPT: &str = include_str!("prompts/summarization-system.md");

/// The instructions of a first compaction summary.
pub const SUMMARIZATION_PROMPT: &str = include_str!("prompts/summarization.md");

/// The instructions of a compaction summary that updates the previous one (given in
/// `<previous-summary>` tags).
pub const UPDATE_SUMMARIZATION_PROMPT: &str = include_str!("prompts/update-summarization.md");

/// The instructions of the summary of a split turn's first part.
pub const TURN_PREFIX_SUMMARIZATION_PROMPT: &str =
    include_str!("prompts/turn-prefix-summarization.md");

/// The instructions of a branch summary.
pub const BRANCH_SUMMARY_PROMPT: &str = include_str!("prompts/branch-summary.md");

/// Put before a branch summary's text.
pub const BRANCH_SUMMARY_PREAMBLE: &str = include_str!("prompts/branch-summary-preamble.md");

/// Joins a split turn's two summaries (pi's text around the turn prefix summary).
pub(crate) const SPLIT_TURN_SEPARATOR: &str = "\n\n---\n\n**Turn Context (split turn):**\n\n";
