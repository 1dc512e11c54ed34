//! Summaries of a branch being left (pi's `branch-summarization.ts`): when the conversation
//! moves to another point of the tree, what happened on the old branch can be summarized
//! into a `branch_summary` entry at the new position.

use std::collections::HashSet;

use super::estimate::estimate_tokens;
use super::file_ops::{FileLists, FileOperations};
use super::prepare::entry_message;
use super::prompts::{BRANCH_SUMMARY_PREAMBLE, BRANCH_SUMMARY_PROMPT};
use super::serialize::serialize_conversation;
use super::summarize::{Summarizer, reply_text};
use crate::agent::AgentMessage;
use crate::llm::error::{Error, ErrorKind};
use crate::llm::message::StopReason;
use crate::session::{Result, SessionEntry, SessionManager, convert_to_llm};

/// The entries between the old leaf and the point the conversation moves to.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BranchEntries {
    /// The entries from the deepest common ancestor (excluded) to the old leaf, oldest first.
    pub entries: Vec<SessionEntry>,
    /// The deepest entry on both paths; `None` when they share no entry.
    pub common_ancestor_id: Option<String>,
}

/// Collects the entries of the branch being left when moving from `old_leaf` to `target`
/// (pi's `collectEntriesForBranchSummary`): those on the old leaf's path after the deepest
/// entry it shares with the target's path. Compactions on the way are included.
///
/// # Errors
///
/// When the session file cannot be read.
pub fn collect_entries_for_branch_summary(
    session: &SessionManager,
    old_leaf: Option<&str>,
    target: &str,
) -> Result<BranchEntries> {
    let Some(old_leaf) = old_leaf else {
        return Ok(BranchEntries {
            entries: Vec::new(),
            common_ancestor_id: None,
        });
    };
    let old_path = session.branch_path(Some(old_leaf))?;
    let old_ids: HashSet<&str> = old_path.iter().map(SessionEntry::id).collect();
    let target_path = session.branch_path(Some(target))?;
    let common = target_path
        .iter()
        .rev()
        .find(|e| old_ids.contains(e.id()))
        .map(|e| e.id().to_owned());
    let from = match &common {
        Some(id) => old_path
            .iter()
            .position(|e| e.id() == id)
            .map_or(0, |p| p + 1),
        None => 0,
    };
    let mut old_path = old_path;
    Ok(BranchEntries {
        entries: old_path.split_off(from.min(old_path.len())),
        common_ancestor_id: common,
    })
}

/// What a branch summary is written from (pi's `prepareBranchEntries`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PreparedBranch {
    /// The messages, oldest first: the newest ones that fit the budget.
    pub messages: Vec<AgentMessage>,
    /// Files read and changed on the branch (all of it, and earlier summaries' lists).
    pub file_ops: FileOperations,
    /// The estimated tokens of `messages`.
    pub total_tokens: u64,
}

/// Picks the messages of `entries` to summarize, newest first until `token_budget` (0: no
/// limit) is reached; tool results are left out (their calls say enough), and a compaction
/// or branch summary that does not fit is still taken while less than 90 % of the budget is
/// used. File operations come from every entry, including the lists earlier branch
/// summaries recorded.
pub fn prepare_branch_entries(entries: &[SessionEntry], token_budget: u64) -> PreparedBranch {
    let mut file_ops = FileOperations::new();
    for entry in entries {
        if let SessionEntry::BranchSummary(b) = entry
            && b.from_hook != Some(true)
        {
            file_ops.add_details(b.details.as_ref().filter(|d| !d.is_null()));
        }
    }
    let mut picked: Vec<AgentMessage> = Vec::new();
    let mut total = 0u64;
    for entry in entries.iter().rev() {
        let message = match entry {
            SessionEntry::Message(m) if matches!(m.message, AgentMessage::ToolResult(_)) => None,
            entry => entry_message(entry, true),
        };
        let Some(message) = message else { continue };
        file_ops.add_message(&message);
        let tokens = estimate_tokens(&message);
        if token_budget > 0 && total.saturating_add(tokens) > token_budget {
            let summary = matches!(
                entry,
                SessionEntry::Compaction(_) | SessionEntry::BranchSummary(_)
            );
            // 0.9 × budget, compared as pi compares it (in floating point).
            if summary && (total as f64) < token_budget as f64 * 0.9 {
                picked.push(message);
                total += tokens;
            }
            break;
        }
        picked.push(message);
        total += tokens;
    }
    picked.reverse();
    PreparedBranch {
        messages: picked,
        file_ops,
        total_tokens: total,
    }
}

/// How a branch summary is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BranchSummaryOptions {
    /// Added to the instructions as "Additional focus: …".
    pub custom_instructions: Option<String>,
    /// With `custom_instructions`: use them instead of pi's instructions.
    pub replace_instructions: bool,
    /// Tokens of the model's window left for the prompt and the reply. Default 16384.
    pub reserve_tokens: u64,
}

impl BranchSummaryOptions {
    /// pi's defaults: no custom instructions, 16384 reserved tokens.
    pub fn new() -> Self {
        BranchSummaryOptions {
            custom_instructions: None,
            replace_instructions: false,
            reserve_tokens: 16_384,
        }
    }
}

/// A branch summary and the file lists it records.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BranchSummary {
    /// The summary: pi's preamble, the model's text, the file lists.
    pub summary: String,
    /// The file lists (the entry's `details`).
    pub files: FileLists,
}

/// Summarizes the entries of a branch being left (pi's `generateBranchSummary`): the
/// newest messages that fit the model's window minus `reserve_tokens`, serialized, under
/// pi's branch summary instructions, at most 2048 output tokens; the preamble and the file
/// lists are added to the reply. Without messages the summary is "No content to summarize"
/// and no request is made.
///
/// # Errors
///
/// The request's error (its message as pi reports it); kind [`ErrorKind::Aborted`] when it
/// was cancelled.
///
/// # Cancel safety
///
/// Dropping the future drops the request; nothing else happens.
pub async fn generate_branch_summary(
    entries: &[SessionEntry],
    summarizer: &Summarizer,
    options: &BranchSummaryOptions,
) -> std::result::Result<BranchSummary, Error> {
    let window = match summarizer.model().context_window {
        0 => 128_000,
        w => w,
    };
    let budget = window.saturating_sub(options.reserve_tokens);
    let prepared = prepare_branch_entries(entries, budget);
    if prepared.messages.is_empty() {
        return Ok(BranchSummary {
            summary: "No content to summarize".to_owned(),
            files: FileLists::default(),
        });
    }
    let conversation = serialize_conversation(&convert_to_llm(&prepared.messages));
    let custom = options
        .custom_instructions
        .as_deref()
        .filter(|c| !c.is_empty());
    let instructions = match custom {
        Some(c) if options.replace_instructions => c.to_owned(),
        Some(c) => format!("{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {c}"),
        None => BRANCH_SUMMARY_PROMPT.to_owned(),
    };
    let prompt = format!("<conversation>\n{conversation}\n</conversation>\n\n{instructions}");
    let reply = summarizer.complete(prompt, 2048, false).await;
    match reply.stop_reason {
        StopReason::Aborted => {
            return Err(Error::new(ErrorKind::Aborted, "Branch summary cancelled"));
        }
        StopReason::Error => {
            let kind = reply.error().map_or(ErrorKind::Provider, |e| e.kind());
            let text = reply
                .error_message
                .clone()
                .unwrap_or_else(|| "Summarization failed".to_owned());
            return Err(Error::new(kind, text));
        }
        _ => {}
    }
    let files = prepared.file_ops.file_lists();
    let summary = format!(
        "{BRANCH_SUMMARY_PREAMBLE}{}{}",
        reply_text(&reply),
        files.to_summary_text()
    );
    Ok(BranchSummary { summary, files })
}
