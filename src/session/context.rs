//! [`SessionContext`]: what the agent continues from — the messages on the path from the
//! root to the leaf, with compaction and branch summaries in place, and the model and
//! thinking level in force at the leaf.
//!
//! Only the entries that end up in the context are read and parsed: after a compaction
//! that is a handful of lines, whatever the size of the file.

use serde::Deserialize;
use serde_json::Value;

use super::entry::{ModelRef, SessionEntry};
use super::error::{Result, SessionError};
use super::index::Role;
use super::messages::{BranchSummaryMessage, CompactionSummaryMessage, ExtensionMessage};
use super::read::Data;
use super::scan::LStr;
use super::time::iso_to_millis;
use crate::ThinkingLevel;
use crate::agent::AgentMessage;
use crate::llm::message::Message;

/// The conversation as seen from the leaf (pi's `SessionContext`).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct SessionContext {
    /// The messages, oldest first: LLM messages plus the session roles
    /// (`compactionSummary`, `branchSummary`, `custom`, `bashExecution`).
    pub messages: Vec<AgentMessage>,
    /// The thinking level of the last `thinking_level_change` on the path (`off` without one).
    pub thinking_level: ThinkingLevel,
    /// The model of the last `model_change` or assistant message on the path.
    pub model: Option<ModelRef>,
}

impl SessionContext {
    /// The messages as the model sees them ([`convert_to_llm`](super::convert_to_llm)).
    pub fn llm_messages(&self) -> Vec<Message> {
        super::convert_to_llm(&self.messages)
    }
}

/// What a context entry turns into.
enum Item {
    Message(AgentMessage),
    Skip,
}

fn warn_skip(e: SessionError) -> Result<Item> {
    match e {
        SessionError::InvalidEntry { id, source } => {
            tracing::warn!(entry = %id, error = %source, "entry left out of the context: it does not have the shape of its type");
            Ok(Item::Skip)
        }
        SessionError::UnreadableEntry { .. } => Ok(Item::Skip),
        other => Err(other),
    }
}

fn typed(data: &Data, idx: u32, line: &[u8]) -> Result<Option<SessionEntry>> {
    match data.entry_of(idx, line) {
        Ok(e) => Ok(Some(e)),
        Err(e) => warn_skip(e).map(|_| None),
    }
}

fn to_agent<T: crate::agent::CustomMessageType>(value: &T) -> Result<AgentMessage> {
    AgentMessage::custom(value).map_err(SessionError::Serialize)
}

fn context_item(data: &Data, idx: u32, line: &[u8]) -> Result<Item> {
    let node = data.index.node(idx);
    let ms = iso_to_millis(&node.timestamp).unwrap_or(0);
    match node.entry_type {
        super::EntryType::Message => match data.message_of(idx, line) {
            Ok(m) => Ok(Item::Message(m)),
            Err(e) => warn_skip(e),
        },
        super::EntryType::CustomMessage => match typed(data, idx, line)? {
            Some(SessionEntry::CustomMessage(e)) => {
                let mut m = ExtensionMessage::new(e.custom_type, e.content, e.display);
                m.details = e.details;
                m.timestamp = ms;
                Ok(Item::Message(to_agent(&m)?))
            }
            _ => Ok(Item::Skip),
        },
        super::EntryType::BranchSummary => match typed(data, idx, line)? {
            // An empty summary is left out, as in pi.
            Some(SessionEntry::BranchSummary(e)) if !e.summary.is_empty() => Ok(Item::Message(
                to_agent(&BranchSummaryMessage::new(e.summary, e.from_id, ms))?,
            )),
            _ => Ok(Item::Skip),
        },
        _ => Ok(Item::Skip),
    }
}

/// The model an assistant message records.
fn assistant_model(line: &[u8]) -> Option<ModelRef> {
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        message: super::scan::MsgHead<'a>,
    }
    let l: Line<'_> = super::scan::from_slice_unbounded(line).ok()?;
    Some(ModelRef::new(
        l.message.provider.unwrap_or_default(),
        l.message.model.unwrap_or_default(),
    ))
}

pub(crate) fn build(data: &Data, leaf: Option<u32>) -> Result<SessionContext> {
    build_with(data, leaf, &mut [])
}

/// [`build`], taking the messages already decoded (`decoded[node]`, from the index pass)
/// instead of reading their lines again.
pub(crate) fn build_with(
    data: &Data,
    leaf: Option<u32>,
    decoded: &mut [Option<Box<AgentMessage>>],
) -> Result<SessionContext> {
    let Some(leaf) = leaf else {
        return Ok(SessionContext::default());
    };
    let index = &data.index;
    let path = index.path_to(leaf);

    let (mut thinking_pos, mut model_pos, mut compaction_pos) = (None, None, None);
    for (pos, &n) in path.iter().enumerate() {
        let node = index.node(n);
        match node.entry_type {
            super::EntryType::ThinkingLevelChange => thinking_pos = Some(pos),
            super::EntryType::ModelChange => model_pos = Some(pos),
            super::EntryType::Message if node.role == Role::Assistant => model_pos = Some(pos),
            super::EntryType::Compaction => compaction_pos = Some(pos),
            _ => {}
        }
    }

    let mut ctx = SessionContext::default();

    // Settings: read just the entries that decide them.
    let settings: Vec<usize> = thinking_pos.into_iter().chain(model_pos).collect();
    let locs: Vec<_> = settings.iter().map(|&p| index.node(path[p]).loc).collect();
    data.store.for_each_line(&locs, |k, line| {
        let idx = path[settings[k]];
        let node = index.node(idx);
        match node.entry_type {
            super::EntryType::ThinkingLevelChange => {
                #[derive(Deserialize)]
                struct Line<'a> {
                    #[serde(borrow, default, rename = "thinkingLevel")]
                    level: LStr<'a>,
                }
                let level = super::scan::from_slice_unbounded::<Line<'_>>(line)
                    .ok()
                    .and_then(|l| {
                        l.level
                            .as_deref()
                            .and_then(|s| s.parse::<ThinkingLevel>().ok())
                    });
                match level {
                    Some(l) => ctx.thinking_level = l,
                    None => tracing::warn!(entry = %node.id, "unknown thinking level ignored"),
                }
            }
            super::EntryType::ModelChange => {
                if let Some(SessionEntry::ModelChange(e)) = typed(data, idx, line)? {
                    ctx.model = Some(ModelRef::new(e.provider, e.model_id));
                }
            }
            _ => ctx.model = assistant_model(line),
        }
        Ok(())
    })?;

    // Which path positions contribute messages.
    let mut positions: Vec<usize> = Vec::new();
    let carries_message = |pos: usize| {
        matches!(
            index.node(path[pos]).entry_type,
            super::EntryType::Message
                | super::EntryType::CustomMessage
                | super::EntryType::BranchSummary
        )
    };
    if let Some(c) = compaction_pos {
        let compaction = match data.entries(&[path[c]]) {
            Ok(mut v) => v.pop(),
            Err(e) => {
                warn_skip(e)?;
                None
            }
        };
        if let Some(SessionEntry::Compaction(comp)) = compaction {
            let ms = iso_to_millis(&comp.timestamp).unwrap_or(0);
            ctx.messages.push(to_agent(&CompactionSummaryMessage::new(
                comp.summary,
                comp.tokens_before,
                ms,
            ))?);
            if let Some(first) = path[..c]
                .iter()
                .position(|&n| *index.node(n).id == *comp.first_kept_entry_id)
            {
                positions.extend((first..c).filter(|&p| carries_message(p)));
            }
        }
        positions.extend((c + 1..path.len()).filter(|&p| carries_message(p)));
    } else {
        positions.extend((0..path.len()).filter(|&p| carries_message(p)));
    }

    let idxs: Vec<u32> = positions.iter().map(|&p| path[p]).collect();
    let has = |i: u32| decoded.get(i as usize).is_some_and(Option::is_some);
    let to_read: Vec<u32> = idxs.iter().copied().filter(|&i| !has(i)).collect();
    let mut read = parse_items(data, &to_read)?.into_iter();
    ctx.messages.reserve(idxs.len());
    for &i in &idxs {
        let item = match decoded.get_mut(i as usize).and_then(Option::take) {
            Some(m) => Some(*m),
            None => read.next().flatten(),
        };
        ctx.messages.extend(item);
    }
    Ok(ctx)
}

/// Below this many bytes of messages one thread parses them all.
const PARALLEL_MIN_BYTES: u64 = 8 << 20;

/// The messages of context entries `idxs`, in order (`None` for an entry left out). A long
/// uncompacted history is parsed on several threads (each reading its own part of the file).
fn parse_items(data: &Data, idxs: &[u32]) -> Result<Vec<Option<AgentMessage>>> {
    let run = |part: &[u32]| -> Result<Vec<Option<AgentMessage>>> {
        let locs: Vec<_> = part.iter().map(|&i| data.index.node(i).loc).collect();
        let mut out = Vec::with_capacity(part.len());
        data.store.for_each_line(&locs, |k, line| {
            out.push(match context_item(data, part[k], line)? {
                Item::Message(m) => Some(m),
                Item::Skip => None,
            });
            Ok(())
        })?;
        Ok(out)
    };
    let bytes: u64 = idxs.iter().map(|&i| data.index.node(i).loc.len).sum();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let chunks = ((bytes / PARALLEL_MIN_BYTES) as usize).clamp(1, threads);
    if chunks == 1 {
        return run(idxs);
    }
    let size = idxs.len().div_ceil(chunks);
    let parts: Vec<Result<Vec<Option<AgentMessage>>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = idxs
            .chunks(size)
            .map(|part| scope.spawn(move || run(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(SessionError::io(
                        "",
                        std::io::Error::other("context thread panicked"),
                    ))
                })
            })
            .collect()
    });
    let mut out = Vec::with_capacity(idxs.len());
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// Used by the list scanner: the plain text of a user or assistant message value.
pub(crate) fn message_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}
