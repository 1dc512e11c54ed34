//! Migration of version 1 and 2 files to version 3, entry by entry, as pi does it:
//!
//! * v1 → v2: every entry gets an `id` and the previous entry as `parentId` (a linear
//!   chain); a compaction's `firstKeptEntryIndex` (a position in the file's entry list,
//!   header included) becomes `firstKeptEntryId`;
//! * v2 → v3: a message with role `hookMessage` gets role `custom`.
//!
//! Unlike pi, opening a file never rewrites it: entries are migrated as they are read
//! (the index already holds the migrated ids, which are deterministic — see
//! [`Index`](super::index::Index)), and the file is rewritten only before the first append,
//! after a backup copy of the original is written beside it.

use serde_json::{Map, Value};

use super::entry::CURRENT_SESSION_VERSION;
use super::index::{Index, Parent};

/// Brings one entry (the JSON object of node `idx`) from `source_version` to version 3.
pub(crate) fn migrate_entry(
    obj: &mut Map<String, Value>,
    idx: u32,
    index: &Index,
    source_version: u64,
) {
    if source_version < 2 {
        let node = index.node(idx);
        obj.insert("id".into(), Value::String(node.id.to_string()));
        let parent = match &node.parent {
            Parent::Node(p) => Value::String(index.node(*p).id.to_string()),
            _ => Value::Null,
        };
        obj.insert("parentId".into(), parent);
        if obj.get("type").and_then(Value::as_str) == Some("compaction")
            && let Some(pos) = obj.get("firstKeptEntryIndex").and_then(Value::as_f64)
        {
            obj.remove("firstKeptEntryIndex");
            // pi resolves the position while assigning ids in file order, so only an
            // earlier entry has an id yet.
            let own_pos = index.v1_positions.iter().position(|p| *p == Some(idx));
            let target = (pos >= 0.0 && pos.fract() == 0.0)
                .then(|| index.v1_positions.get(pos as usize).copied().flatten())
                .flatten()
                .filter(|_| own_pos.is_some_and(|own| (pos as usize) < own));
            if let Some(t) = target {
                obj.insert(
                    "firstKeptEntryId".into(),
                    Value::String(index.node(t).id.to_string()),
                );
            }
        }
    }
    if source_version < 3
        && obj.get("type").and_then(Value::as_str) == Some("message")
        && let Some(Value::Object(message)) = obj.get_mut("message")
        && message.get("role").and_then(Value::as_str) == Some("hookMessage")
    {
        message.insert("role".into(), Value::String("custom".into()));
    }
}

/// Brings the header to version 3.
pub(crate) fn migrate_header(obj: &mut Map<String, Value>) {
    obj.insert("version".into(), Value::from(CURRENT_SESSION_VERSION));
}
