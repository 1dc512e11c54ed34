//! Where to cut a branch: keep about `keep_recent_tokens` of the newest messages, never
//! separating a tool result from its call (pi's `findCutPoint`).

use super::estimate::estimate_tokens;
use crate::agent::AgentMessage;
use crate::session::SessionEntry;

/// Where a branch is cut (pi's `CutPointResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CutPoint {
    /// Index of the first entry kept.
    pub first_kept_entry_index: usize,
    /// When the cut falls inside a turn: the index of the entry that started the turn (a
    /// user message, a bash execution, a custom message or a branch summary).
    #[serde(serialize_with = "js_index")]
    pub turn_start_index: Option<usize>,
    /// True when the cut falls inside a turn: its start is summarized apart.
    pub is_split_turn: bool,
}

/// pi writes "no index" as -1.
fn js_index<S: serde::Serializer>(index: &Option<usize>, s: S) -> Result<S::Ok, S::Error> {
    match index {
        Some(i) => s.serialize_u64(*i as u64),
        None => s.serialize_i64(-1),
    }
}

fn message_role(entry: &SessionEntry) -> Option<&str> {
    match entry {
        SessionEntry::Message(m) => Some(m.message.role()),
        _ => None,
    }
}

/// Entries a branch may be cut at: messages other than tool results (which stay with their
/// call), custom messages and branch summaries.
fn is_valid_cut_point(entry: &SessionEntry) -> bool {
    match entry {
        SessionEntry::Message(m) => matches!(
            m.message.role(),
            "user"
                | "assistant"
                | "bashExecution"
                | "custom"
                | "branchSummary"
                | "compactionSummary"
        ),
        SessionEntry::BranchSummary(_) | SessionEntry::CustomMessage(_) => true,
        _ => false,
    }
}

/// The index of the entry that started the turn holding entry `index`, looking back no
/// further than `start` (pi's `findTurnStartIndex`): the nearest user message, bash
/// execution, custom message or branch summary.
pub fn find_turn_start_index(
    entries: &[SessionEntry],
    index: usize,
    start: usize,
) -> Option<usize> {
    if entries.is_empty() || index < start {
        return None;
    }
    let index = index.min(entries.len() - 1);
    (start..=index).rev().find(|&i| match &entries[i] {
        SessionEntry::BranchSummary(_) | SessionEntry::CustomMessage(_) => true,
        entry => matches!(message_role(entry), Some("user" | "bashExecution")),
    })
}

/// Finds where to cut `entries[start..end]` so that about `keep_recent_tokens` of the newest
/// messages are kept (pi's `findCutPoint`): walk back from the newest message adding
/// [`estimate_tokens`]; at the message where the sum reaches the budget, cut at the nearest
/// valid cut point at or after it (a message other than a tool result, a custom message or a
/// branch summary); then move the cut back over settings entries (model or thinking changes,
/// labels) that directly precede it, so they stay with what follows. Without a valid cut
/// point everything from `start` is kept.
pub fn find_cut_point(
    entries: &[SessionEntry],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let end = end.min(entries.len());
    let cut_points: Vec<usize> = (start..end)
        .filter(|&i| is_valid_cut_point(&entries[i]))
        .collect();
    let Some(&first) = cut_points.first() else {
        return CutPoint {
            first_kept_entry_index: start,
            turn_start_index: None,
            is_split_turn: false,
        };
    };
    let mut cut = first;
    let mut accumulated = 0u64;
    for i in (start..end).rev() {
        let SessionEntry::Message(m) = &entries[i] else {
            continue;
        };
        accumulated += estimate_tokens(&m.message);
        if accumulated >= keep_recent_tokens {
            if let Some(&c) = cut_points.iter().find(|&&c| c >= i) {
                cut = c;
            }
            break;
        }
    }
    // Keep the settings entries just before the cut with what follows.
    while cut > start {
        match &entries[cut - 1] {
            SessionEntry::Compaction(_) | SessionEntry::Message(_) => break,
            _ => cut -= 1,
        }
    }
    let is_user = matches!(
        &entries[cut],
        SessionEntry::Message(m) if matches!(m.message, AgentMessage::User(_))
    );
    let turn_start_index = if is_user {
        None
    } else {
        find_turn_start_index(entries, cut, start)
    };
    CutPoint {
        first_kept_entry_index: cut,
        turn_start_index,
        is_split_turn: !is_user && turn_start_index.is_some(),
    }
}
