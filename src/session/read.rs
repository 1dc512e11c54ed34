//! Reading entry bodies on demand: the index says where a line is, this parses it (and
//! migrates it when the file is older than version 3).

use serde::Deserialize;
use serde_json::Value;

use super::entry::SessionEntry;
use super::error::{Result, SessionError};
use super::index::Index;
use super::migrate::migrate_entry;
use super::scan::{LStr, from_str_unbounded, from_value_unbounded, parse_head, parse_value};
use super::store::Store;
use crate::agent::AgentMessage;

/// The index and the lines it points into.
#[derive(Debug)]
pub(crate) struct Data {
    pub(crate) index: Index,
    pub(crate) store: Store,
    /// Version of the file as stored; below 3, entries are migrated as they are read.
    pub(crate) source_version: u64,
}

impl Data {
    fn modified(&self) -> SessionError {
        SessionError::ModifiedExternally {
            path: self.store.path().map(ToOwned::to_owned).unwrap_or_default(),
        }
    }

    /// The error for a line of node `idx` that does not parse: the entry is unreadable when
    /// the line still is that entry's (its head parses and carries its id), else the file
    /// was changed under the index.
    fn unparsable(&self, idx: u32, line: &[u8], source: serde_json::Error) -> SessionError {
        let node = self.index.node(idx);
        let same = parse_head(line).is_ok_and(|h| {
            // Version 1 entries have no ids of their own (they are assigned on load).
            self.source_version < 2 || h.id.as_deref() == Some(&*node.id)
        });
        if !same {
            return self.modified();
        }
        tracing::warn!(path = %self.store.path().unwrap_or(std::path::Path::new("<memory>")).display(),
            entry = %node.id, offset = node.loc.offset, error = %source, "a session entry cannot be parsed");
        SessionError::UnreadableEntry {
            path: self.store.path().map(ToOwned::to_owned).unwrap_or_default(),
            id: node.id.to_string(),
            offset: node.loc.offset,
            source,
        }
    }

    /// The (migrated) JSON object of node `idx`, given its line.
    pub(crate) fn value_of(&self, idx: u32, line: &[u8]) -> Result<serde_json::Map<String, Value>> {
        let value = parse_value(line).map_err(|e| self.unparsable(idx, line, e))?;
        let Value::Object(mut obj) = value else {
            return Err(self.modified());
        };
        if self.source_version < 3 {
            migrate_entry(&mut obj, idx, &self.index, self.source_version);
        }
        if obj.get("id").and_then(Value::as_str) != Some(&*self.index.node(idx).id) {
            return Err(self.modified());
        }
        Ok(obj)
    }

    /// The typed entry of node `idx`, given its line.
    pub(crate) fn entry_of(&self, idx: u32, line: &[u8]) -> Result<SessionEntry> {
        let obj = self.value_of(idx, line)?;
        SessionEntry::from_value(Value::Object(obj)).map_err(|source| SessionError::InvalidEntry {
            id: self.index.node(idx).id.to_string(),
            source,
        })
    }

    /// The message of `message` entry `idx`, given its line. Fast path for version 3: the
    /// envelope is skipped and the message parsed straight from its bytes; anything unusual
    /// (invalid UTF-8, a message of the wrong shape) takes the checked path.
    pub(crate) fn message_of(&self, idx: u32, line: &[u8]) -> Result<AgentMessage> {
        // One pass over the line: the envelope's other fields are skipped, the message is
        // parsed where it stands.
        #[derive(Deserialize)]
        struct MessageLine<'a> {
            #[serde(borrow, default)]
            id: LStr<'a>,
            message: AgentMessage,
        }
        let invalid = |source| SessionError::InvalidEntry {
            id: self.index.node(idx).id.to_string(),
            source,
        };
        // The line is checked as UTF-8 once, as a whole (SIMD): serde_json then skips the
        // check of each string, a large share of the parse on text-heavy sessions.
        if self.source_version >= 3
            && let Ok(text) = simdutf8::basic::from_utf8(line)
            && let Ok(l) = from_str_unbounded::<MessageLine<'_>>(text)
        {
            if l.id.as_deref() != Some(&*self.index.node(idx).id) {
                return Err(self.modified());
            }
            return Ok(l.message);
        }
        let mut obj = self.value_of(idx, line)?;
        let message = obj.remove("message").unwrap_or(Value::Null);
        from_value_unbounded(message).map_err(invalid)
    }

    /// Typed entries for nodes `idxs`, in that order.
    pub(crate) fn entries(&self, idxs: &[u32]) -> Result<Vec<SessionEntry>> {
        let locs: Vec<_> = idxs.iter().map(|&i| self.index.node(i).loc).collect();
        let mut out = Vec::with_capacity(idxs.len());
        self.store.for_each_line(&locs, |k, line| {
            out.push(self.entry_of(idxs[k], line)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// Every entry, in file order, for display (the HTML export): an entry whose line does
    /// not parse, or whose JSON does not have the shape its `type` requires, comes back as
    /// an [`UnknownEntry`](super::entry::UnknownEntry) — its JSON as read when there is
    /// some, else its id, parent, type and timestamp from the index and an `error` field —
    /// instead of failing the whole read. Only a file changed under the index is an error.
    #[cfg(feature = "export-html")]
    pub(crate) fn entries_lenient(&self) -> Result<Vec<SessionEntry>> {
        let n = self.index.len() as u32;
        let locs: Vec<_> = (0..n).map(|i| self.index.node(i).loc).collect();
        let mut out = Vec::with_capacity(locs.len());
        self.store.for_each_line(&locs, |k, line| {
            let idx = k as u32;
            let entry = match self.value_of(idx, line) {
                Ok(obj) => match SessionEntry::from_value(Value::Object(obj)) {
                    Ok(entry) => entry,
                    // The wrong shape for its type: shown as it is, with the reason (a
                    // second parse, on this rare path only, keeps the common one move-only).
                    Err(e) => {
                        let obj = self.value_of(idx, line).ok();
                        self.placeholder(idx, obj, e.to_string())
                    }
                },
                Err(e @ SessionError::ModifiedExternally { .. }) => return Err(e),
                Err(e) => self.placeholder(idx, None, e.to_string()),
            };
            out.push(entry);
            Ok(())
        })?;
        Ok(out)
    }

    /// An [`UnknownEntry`](super::entry::UnknownEntry) standing for node `idx`, which cannot
    /// be read as its type: `obj` (its JSON) when there is one, with `error` added.
    #[cfg(feature = "export-html")]
    fn placeholder(
        &self,
        idx: u32,
        obj: Option<serde_json::Map<String, Value>>,
        error: String,
    ) -> SessionEntry {
        use super::index::Parent;
        let node = self.index.node(idx);
        let mut fields = obj.unwrap_or_default();
        let kind = fields
            .get("type")
            .and_then(Value::as_str)
            .or(node.entry_type.as_str())
            .unwrap_or("unknown")
            .to_owned();
        fields.insert("type".into(), Value::String(kind));
        fields.insert("id".into(), Value::String(node.id.to_string()));
        if !fields.contains_key("parentId") {
            let parent = match &node.parent {
                Parent::Root => Value::Null,
                Parent::Node(p) => Value::String(self.index.node(*p).id.to_string()),
                Parent::Missing(p) => Value::String(p.to_string()),
            };
            fields.insert("parentId".into(), parent);
        }
        if !fields.contains_key("timestamp") {
            fields.insert(
                "timestamp".into(),
                Value::String(node.timestamp.to_string()),
            );
        }
        fields.insert("error".into(), Value::String(error));
        SessionEntry::Unknown(super::entry::UnknownEntry { fields })
    }

    /// The raw, version 3 line of node `idx` (re-serialized only when migration changed it).
    pub(crate) fn v3_lines(&self, idxs: &[u32]) -> Result<Vec<Vec<u8>>> {
        let locs: Vec<_> = idxs.iter().map(|&i| self.index.node(i).loc).collect();
        let mut out = Vec::with_capacity(idxs.len());
        self.store.for_each_line(&locs, |k, line| {
            if self.source_version >= 3 {
                out.push(line.to_vec());
            } else {
                let obj = self.value_of(idxs[k], line)?;
                out.push(super::manager::to_line(&obj)?);
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// Parses one session line the ways the reader does — the index's lenient pass over the
/// top-level fields, the one-pass message decoding, and the checked parse into a typed
/// entry — and returns the typed entry. For fuzzing and tests; not part of the stable API.
#[doc(hidden)]
pub fn parse_line(line: &[u8]) -> std::result::Result<SessionEntry, serde_json::Error> {
    let head = parse_head(line);
    let decoded = super::scan::parse_head_with_message(line);
    let entry = SessionEntry::from_value(parse_value(line)?)?;
    // What the fast paths read must agree with the checked parse.
    if let Some(h) = decoded
        && h.id.as_deref() != Some(entry.id())
        && matches!(entry, SessionEntry::Message(_))
    {
        return Err(serde::de::Error::custom("the one-pass decoding disagrees"));
    }
    if let Ok(h) = head
        && h.id.as_deref() != Some(entry.id())
    {
        return Err(serde::de::Error::custom("the index's pass disagrees"));
    }
    Ok(entry)
}
