//! What a compaction summarizes and keeps (pi's `prepareCompaction`).

use std::borrow::Cow;

use super::CompactionSettings;
use super::cut_point::find_cut_point;
use super::estimate::estimate_context_tokens_where;
use super::file_ops::FileOperations;
use crate::agent::{AgentMessage, CustomMessageType};
use crate::session::time::iso_to_millis;
use crate::session::{
    BranchSummaryMessage, CompactionSummaryMessage, ExtensionMessage, SessionEntry,
};

/// Everything a compaction needs before the summary is written (pi's
/// `CompactionPreparation`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompactionPreparation {
    /// The first entry kept after the summary.
    pub first_kept_entry_id: String,
    /// The messages the summary replaces (up to the start of a split turn).
    pub messages_to_summarize: Vec<AgentMessage>,
    /// For a split turn: the turn's messages before the cut, summarized apart.
    pub turn_prefix_messages: Vec<AgentMessage>,
    /// True when the cut falls inside a turn.
    pub is_split_turn: bool,
    /// The estimated context size before compaction.
    pub tokens_before: u64,
    /// The summary of the previous compaction on the branch, which the new one updates.
    pub previous_summary: Option<String>,
    /// Files read and changed in what is summarized (and in the previous summary).
    pub file_ops: FileOperations,
    /// The settings it was prepared with.
    pub settings: CompactionSettings,
}

fn millis(timestamp: &str) -> i64 {
    iso_to_millis(timestamp).unwrap_or(0)
}

fn custom<T: CustomMessageType>(value: &T) -> Option<AgentMessage> {
    AgentMessage::custom(value).ok()
}

/// The message an entry contributes to a conversation, as pi's compaction and branch
/// summarization read entries (`getMessageFromEntry`): messages, custom messages, branch
/// summaries (even empty ones), and — when `compactions` — compaction summaries.
pub(crate) fn entry_message(entry: &SessionEntry, compactions: bool) -> Option<AgentMessage> {
    match entry {
        SessionEntry::Message(m) => Some(m.message.clone()),
        SessionEntry::CustomMessage(e) => {
            let mut m = ExtensionMessage::new(e.custom_type.clone(), e.content.clone(), e.display);
            m.details.clone_from(&e.details);
            m.timestamp = millis(&e.timestamp);
            custom(&m)
        }
        SessionEntry::BranchSummary(e) => custom(&BranchSummaryMessage::new(
            e.summary.clone(),
            e.from_id.clone(),
            millis(&e.timestamp),
        )),
        SessionEntry::Compaction(e) if compactions => custom(&CompactionSummaryMessage::new(
            e.summary.clone(),
            e.tokens_before,
            millis(&e.timestamp),
        )),
        _ => None,
    }
}

/// The context of a branch given as its entries from the root (pi's `buildSessionContext`
/// on a path): the latest compaction's summary, the entries it kept, and what follows.
pub fn path_context(path: &[SessionEntry]) -> Vec<AgentMessage> {
    path_context_refs(path)
        .into_iter()
        .map(Cow::into_owned)
        .collect()
}

/// What an entry adds to a context: its message (borrowed), a custom message or a non-empty
/// branch summary.
fn context_message(entry: &SessionEntry) -> Option<Cow<'_, AgentMessage>> {
    match entry {
        SessionEntry::Message(m) => Some(Cow::Borrowed(&m.message)),
        SessionEntry::BranchSummary(b) if b.summary.is_empty() => None,
        SessionEntry::CustomMessage(_) | SessionEntry::BranchSummary(_) => {
            entry_message(entry, false).map(Cow::Owned)
        }
        _ => None,
    }
}

/// [`path_context`], borrowing the messages of message entries.
fn path_context_refs(path: &[SessionEntry]) -> Vec<Cow<'_, AgentMessage>> {
    let compaction = path
        .iter()
        .rposition(|e| matches!(e, SessionEntry::Compaction(_)));
    let Some(c) = compaction else {
        return path.iter().filter_map(context_message).collect();
    };
    let SessionEntry::Compaction(entry) = &path[c] else {
        unreachable!("found above")
    };
    let mut messages: Vec<Cow<'_, AgentMessage>> = entry_message(&path[c], true)
        .map(Cow::Owned)
        .into_iter()
        .collect();
    if let Some(first) = path[..c]
        .iter()
        .position(|e| e.id() == entry.first_kept_entry_id)
    {
        messages.extend(path[first..c].iter().filter_map(context_message));
    }
    messages.extend(path[c + 1..].iter().filter_map(context_message));
    messages
}

/// Where the part of `path` that a new compaction may summarize starts: the first entry the
/// previous compaction kept (or the entry after it), with the index of that compaction.
pub(crate) fn boundary(path: &[SessionEntry]) -> (usize, Option<usize>) {
    let Some(prev) = path
        .iter()
        .rposition(|e| matches!(e, SessionEntry::Compaction(_)))
    else {
        return (0, None);
    };
    let SessionEntry::Compaction(c) = &path[prev] else {
        unreachable!("found above")
    };
    let start = path
        .iter()
        .position(|e| e.id() == c.first_kept_entry_id)
        .unwrap_or(prev + 1);
    (start, Some(prev))
}

/// Prepares the compaction of a branch, given as its entries from the root to the leaf
/// (pi's `prepareCompaction`). `None` when the leaf already is a compaction, or when the
/// entry to keep has no id (a file that needs migration).
///
/// The part after the previous compaction's kept entries is cut with
/// [`find_cut_point`](super::find_cut_point); what precedes the cut (or the start of a split
/// turn) is summarized, a split turn's first part separately; `tokens_before` is the
/// [`estimate_context_tokens`](super::estimate_context_tokens) of the branch's context.
pub fn prepare_compaction(
    path: &[SessionEntry],
    settings: &CompactionSettings,
) -> Option<CompactionPreparation> {
    if matches!(path.last(), Some(SessionEntry::Compaction(_))) {
        return None;
    }
    let (start, previous) = boundary(path);
    let previous_summary = previous.and_then(|p| match &path[p] {
        SessionEntry::Compaction(c) => Some(c.summary.clone()),
        _ => None,
    });
    let tokens_before = estimate_context_tokens_where(&path_context_refs(path), |_| true).tokens;
    let cut = find_cut_point(path, start, path.len(), settings.keep_recent_tokens);
    let first_kept = path.get(cut.first_kept_entry_index)?;
    if first_kept.id().is_empty() {
        return None;
    }
    let history_end = match cut.turn_start_index {
        Some(turn_start) if cut.is_split_turn => turn_start,
        _ => cut.first_kept_entry_index,
    };
    let messages_to_summarize: Vec<AgentMessage> = path[start..history_end.max(start)]
        .iter()
        .filter_map(|e| entry_message(e, false))
        .collect();
    let turn_prefix_messages: Vec<AgentMessage> = match cut.turn_start_index {
        Some(turn_start) if cut.is_split_turn => path[turn_start..cut.first_kept_entry_index]
            .iter()
            .filter_map(|e| entry_message(e, false))
            .collect(),
        _ => Vec::new(),
    };
    let mut file_ops = FileOperations::new();
    if let Some(SessionEntry::Compaction(c)) = previous.map(|p| &path[p])
        && c.from_hook != Some(true)
    {
        file_ops.add_details(c.details.as_ref().filter(|d| !d.is_null()));
    }
    for m in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(m);
    }
    Some(CompactionPreparation {
        first_kept_entry_id: first_kept.id().to_owned(),
        messages_to_summarize,
        turn_prefix_messages,
        is_split_turn: cut.is_split_turn,
        tokens_before,
        previous_summary,
        file_ops,
        settings: *settings,
    })
}
