//! The lines of a session file: the [`SessionHeader`] and the [`SessionEntry`] kinds of pi's
//! format version 3.
//!
//! Every struct keeps the fields it does not model in `extra` (an [`UnknownEntry`] keeps all
//! of them), so reading an entry loses nothing. Entries are immutable: a session only grows
//! by appending (see [`SessionManager`](super::SessionManager)).

use serde::de::Error as _;
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::scan::from_value_unbounded;

use crate::ThinkingLevel;
use crate::agent::AgentMessage;
use crate::llm::UserContent;
use crate::llm::message::Extra;

/// The session format version this crate writes.
pub const CURRENT_SESSION_VERSION: u64 = 3;

/// The first line of a session file. Not part of the entry tree.
///
/// ```
/// use pi_engine::session::SessionHeader;
///
/// let line = r#"{"type":"session","version":3,"id":"019b7a00-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp/p"}"#;
/// let header: SessionHeader = serde_json::from_str(line).unwrap();
/// assert_eq!(header.version, Some(3));
/// assert_eq!(serde_json::to_string(&header).unwrap(), line);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionHeader {
    /// Format version; absent in version 1 files.
    pub version: Option<u64>,
    /// The session id (a UUIDv7 for sessions pi or this crate created).
    pub id: String,
    /// When the session was created (ISO 8601, e.g. `2026-01-01T00:00:00.000Z`).
    pub timestamp: String,
    /// The working directory the session belongs to.
    pub cwd: String,
    /// The session file this one was forked from.
    pub parent_session: Option<String>,
    /// Fields this crate does not model (version 1 headers keep `provider`, `modelId`,
    /// `thinkingLevel`, `branchedFrom` here).
    pub extra: Extra,
}

impl<'de> Deserialize<'de> for SessionHeader {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Raw {
            #[serde(rename = "type", default)]
            _type: Option<Value>,
            #[serde(default)]
            version: Option<u64>,
            id: String,
            #[serde(default)]
            timestamp: String,
            #[serde(default)]
            cwd: String,
            #[serde(default)]
            parent_session: Option<String>,
            #[serde(flatten)]
            extra: Extra,
        }
        let r = Raw::deserialize(d)?;
        Ok(SessionHeader {
            version: r.version,
            id: r.id,
            timestamp: r.timestamp,
            cwd: r.cwd,
            parent_session: r.parent_session,
            extra: r.extra,
        })
    }
}

impl SessionHeader {
    /// A version 3 header.
    pub fn new(
        id: impl Into<String>,
        timestamp: impl Into<String>,
        cwd: impl Into<String>,
    ) -> Self {
        SessionHeader {
            version: Some(CURRENT_SESSION_VERSION),
            id: id.into(),
            timestamp: timestamp.into(),
            cwd: cwd.into(),
            parent_session: None,
            extra: Extra::new(),
        }
    }

    /// The version, 1 when absent.
    pub fn version(&self) -> u64 {
        self.version.unwrap_or(1)
    }
}

impl Serialize for SessionHeader {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", "session")?;
        if let Some(v) = self.version {
            map.serialize_entry("version", &v)?;
        }
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("timestamp", &self.timestamp)?;
        map.serialize_entry("cwd", &self.cwd)?;
        if let Some(p) = &self.parent_session {
            map.serialize_entry("parentSession", p)?;
        }
        for (k, v) in self.extra.iter().filter(|(k, _)| *k != "type") {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The kind of an entry (its `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryType {
    /// `message`: an [`AgentMessage`].
    Message,
    /// `thinking_level_change`.
    ThinkingLevelChange,
    /// `model_change`.
    ModelChange,
    /// `compaction`: a summary replacing older history.
    Compaction,
    /// `branch_summary`: a summary of a branch the conversation came back from.
    BranchSummary,
    /// `custom`: extension state, not sent to the model.
    Custom,
    /// `custom_message`: an extension's message, sent to the model.
    CustomMessage,
    /// `label`: sets or clears a bookmark on an entry.
    Label,
    /// `session_info`: the session's display name.
    SessionInfo,
    /// Any other `type` (written by a newer pi or an extension).
    Unknown,
}

impl EntryType {
    /// The wire name; `None` for [`EntryType::Unknown`].
    pub fn as_str(self) -> Option<&'static str> {
        Some(match self {
            EntryType::Message => "message",
            EntryType::ThinkingLevelChange => "thinking_level_change",
            EntryType::ModelChange => "model_change",
            EntryType::Compaction => "compaction",
            EntryType::BranchSummary => "branch_summary",
            EntryType::Custom => "custom",
            EntryType::CustomMessage => "custom_message",
            EntryType::Label => "label",
            EntryType::SessionInfo => "session_info",
            EntryType::Unknown => return None,
        })
    }

    /// The type for a wire name (anything unknown is [`EntryType::Unknown`]).
    pub fn from_wire(name: &str) -> Self {
        match name {
            "message" => EntryType::Message,
            "thinking_level_change" => EntryType::ThinkingLevelChange,
            "model_change" => EntryType::ModelChange,
            "compaction" => EntryType::Compaction,
            "branch_summary" => EntryType::BranchSummary,
            "custom" => EntryType::Custom,
            "custom_message" => EntryType::CustomMessage,
            "label" => EntryType::Label,
            "session_info" => EntryType::SessionInfo,
            _ => EntryType::Unknown,
        }
    }
}

/// A provider and model id, as a `model_change` entry or an assistant message records them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelRef {
    /// The provider (`anthropic`, `openai`, …).
    pub provider: String,
    /// The model id.
    pub model_id: String,
}

impl ModelRef {
    /// A provider and model id.
    pub fn new(provider: impl Into<String>, model_id: impl Into<String>) -> Self {
        ModelRef {
            provider: provider.into(),
            model_id: model_id.into(),
        }
    }
}

macro_rules! entry_struct {
    (
        $(#[$meta:meta])*
        $name:ident { $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[non_exhaustive]
        pub struct $name {
            /// The entry id (8 hex characters for entries pi or this crate wrote).
            pub id: String,
            /// The parent entry's id; `None` for a root.
            #[serde(default)]
            pub parent_id: Option<String>,
            /// When the entry was written (ISO 8601).
            #[serde(default)]
            pub timestamp: String,
            $( $(#[$fmeta])* pub $field: $ty, )*
            /// Fields this crate does not model.
            #[serde(flatten)]
            pub extra: Extra,
        }
    };
}

entry_struct! {
    /// A message of the conversation (user, assistant, tool result, or a custom role such as
    /// `bashExecution`).
    MessageEntry {
        /// The message.
        message: AgentMessage,
    }
}

entry_struct! {
    /// The thinking level changed.
    ThinkingLevelChangeEntry {
        /// The new level.
        thinking_level: ThinkingLevel,
    }
}

entry_struct! {
    /// The model changed.
    ModelChangeEntry {
        /// The provider.
        provider: String,
        /// The model id.
        model_id: String,
    }
}

entry_struct! {
    /// History before `first_kept_entry_id` was replaced by `summary`.
    CompactionEntry {
        /// The summary the model sees instead of the compacted history.
        summary: String,
        /// The first entry kept after the summary (empty when unknown).
        #[serde(default)]
        first_kept_entry_id: String,
        /// Estimated context tokens before compaction.
        #[serde(default)]
        tokens_before: u64,
        /// Application data (pi stores `{readFiles, modifiedFiles}`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        /// True when an extension produced the summary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_hook: Option<bool>,
    }
}

entry_struct! {
    /// A summary of a branch the conversation came back from; its parent is the branch point.
    BranchSummaryEntry {
        /// The leaf of the abandoned branch, or `"root"`.
        from_id: String,
        /// The summary (an empty one is left out of the context).
        #[serde(default)]
        summary: String,
        /// Application data (pi stores `{readFiles, modifiedFiles}`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        /// True when an extension produced the summary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_hook: Option<bool>,
    }
}

entry_struct! {
    /// Extension state; never sent to the model.
    CustomEntry {
        /// The extension's identifier.
        custom_type: String,
        /// The state.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    }
}

entry_struct! {
    /// An extension's message; sent to the model as a user message.
    CustomMessageEntry {
        /// The extension's identifier.
        custom_type: String,
        /// The content.
        content: UserContent,
        /// Application data, not sent to the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        /// Whether a UI shows it.
        #[serde(default)]
        display: bool,
    }
}

entry_struct! {
    /// Sets (or, without `label`, clears) the label of entry `target_id`.
    LabelEntry {
        /// The labelled entry.
        target_id: String,
        /// The label; `None` clears it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    }
}

entry_struct! {
    /// Sets the session's display name (the latest one wins; an empty name clears it).
    SessionInfoEntry {
        /// The name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    }
}

/// An entry of a `type` this crate does not know (written by a newer pi), kept whole: it is
/// written back exactly as read, the same keys in the same order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UnknownEntry {
    /// The whole entry as read, `type`, `id`, `parentId` and `timestamp` included; this is
    /// what is written back. Reading guarantees a string `type` and `id`.
    pub fields: Extra,
}

impl UnknownEntry {
    fn str_field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    /// The `type`.
    pub fn entry_type(&self) -> &str {
        self.str_field("type").unwrap_or_default()
    }

    /// The entry id.
    pub fn id(&self) -> &str {
        self.str_field("id").unwrap_or_default()
    }

    /// The parent entry's id (`None` when absent or not a string).
    pub fn parent_id(&self) -> Option<&str> {
        self.str_field("parentId")
    }

    /// When the entry was written (`""` when absent).
    pub fn timestamp(&self) -> &str {
        self.str_field("timestamp").unwrap_or_default()
    }
}

/// One entry of the session tree.
///
/// ```
/// use pi_engine::session::{EntryType, SessionEntry};
///
/// let line = r#"{"type":"model_change","id":"d4e5f6a7","parentId":"c3d4e5f6","timestamp":"2026-01-01T00:00:01.000Z","provider":"openai","modelId":"gpt-4o"}"#;
/// let entry: SessionEntry = serde_json::from_str(line).unwrap();
/// assert_eq!(entry.entry_type(), EntryType::ModelChange);
/// assert_eq!(entry.parent_id(), Some("c3d4e5f6"));
/// assert_eq!(serde_json::to_string(&entry).unwrap(), line);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SessionEntry {
    /// `message`.
    Message(MessageEntry),
    /// `thinking_level_change`.
    ThinkingLevelChange(ThinkingLevelChangeEntry),
    /// `model_change`.
    ModelChange(ModelChangeEntry),
    /// `compaction`.
    Compaction(CompactionEntry),
    /// `branch_summary`.
    BranchSummary(BranchSummaryEntry),
    /// `custom`.
    Custom(CustomEntry),
    /// `custom_message`.
    CustomMessage(CustomMessageEntry),
    /// `label`.
    Label(LabelEntry),
    /// `session_info`.
    SessionInfo(SessionInfoEntry),
    /// Any other `type`.
    Unknown(UnknownEntry),
}

macro_rules! each_variant {
    ($self:expr, $e:ident => $body:expr, unknown $u:ident => $ubody:expr) => {
        match $self {
            SessionEntry::Message($e) => $body,
            SessionEntry::ThinkingLevelChange($e) => $body,
            SessionEntry::ModelChange($e) => $body,
            SessionEntry::Compaction($e) => $body,
            SessionEntry::BranchSummary($e) => $body,
            SessionEntry::Custom($e) => $body,
            SessionEntry::CustomMessage($e) => $body,
            SessionEntry::Label($e) => $body,
            SessionEntry::SessionInfo($e) => $body,
            SessionEntry::Unknown($u) => $ubody,
        }
    };
}

impl SessionEntry {
    /// The entry id.
    pub fn id(&self) -> &str {
        each_variant!(self, e => &e.id, unknown u => u.id())
    }

    /// The parent's id; `None` for a root.
    pub fn parent_id(&self) -> Option<&str> {
        each_variant!(self, e => e.parent_id.as_deref(), unknown u => u.parent_id())
    }

    /// When the entry was written (ISO 8601).
    pub fn timestamp(&self) -> &str {
        each_variant!(self, e => &e.timestamp, unknown u => u.timestamp())
    }

    /// The kind of entry.
    pub fn entry_type(&self) -> EntryType {
        match self {
            SessionEntry::Message(_) => EntryType::Message,
            SessionEntry::ThinkingLevelChange(_) => EntryType::ThinkingLevelChange,
            SessionEntry::ModelChange(_) => EntryType::ModelChange,
            SessionEntry::Compaction(_) => EntryType::Compaction,
            SessionEntry::BranchSummary(_) => EntryType::BranchSummary,
            SessionEntry::Custom(_) => EntryType::Custom,
            SessionEntry::CustomMessage(_) => EntryType::CustomMessage,
            SessionEntry::Label(_) => EntryType::Label,
            SessionEntry::SessionInfo(_) => EntryType::SessionInfo,
            SessionEntry::Unknown(_) => EntryType::Unknown,
        }
    }

    /// The `type` string as written.
    pub fn type_name(&self) -> &str {
        match self {
            SessionEntry::Unknown(u) => u.entry_type(),
            other => other.entry_type().as_str().unwrap_or_default(),
        }
    }

    /// The message, for a `message` entry.
    pub fn as_message(&self) -> Option<&AgentMessage> {
        match self {
            SessionEntry::Message(m) => Some(&m.message),
            _ => None,
        }
    }

    /// Parses an entry from a JSON object.
    pub fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        let Value::Object(mut map) = value else {
            return Err(serde_json::Error::custom("an entry must be a JSON object"));
        };
        let kind = match map.get("type") {
            Some(Value::String(s)) => EntryType::from_wire(s),
            _ => return Err(serde_json::Error::custom("an entry needs a string `type`")),
        };
        if kind == EntryType::Unknown {
            if !matches!(map.get("id"), Some(Value::String(_))) {
                return Err(serde_json::Error::custom("an entry needs a string `id`"));
            }
            return Ok(SessionEntry::Unknown(UnknownEntry { fields: map }));
        }
        map.shift_remove("type");
        let value = Value::Object(map);
        Ok(match kind {
            EntryType::Message => SessionEntry::Message(from_value_unbounded(value)?),
            EntryType::ThinkingLevelChange => {
                SessionEntry::ThinkingLevelChange(from_value_unbounded(value)?)
            }
            EntryType::ModelChange => SessionEntry::ModelChange(from_value_unbounded(value)?),
            EntryType::Compaction => SessionEntry::Compaction(from_value_unbounded(value)?),
            EntryType::BranchSummary => SessionEntry::BranchSummary(from_value_unbounded(value)?),
            EntryType::Custom => SessionEntry::Custom(from_value_unbounded(value)?),
            EntryType::CustomMessage => SessionEntry::CustomMessage(from_value_unbounded(value)?),
            EntryType::Label => SessionEntry::Label(from_value_unbounded(value)?),
            EntryType::SessionInfo => SessionEntry::SessionInfo(from_value_unbounded(value)?),
            EntryType::Unknown => unreachable_unknown()?,
        })
    }
}

// `EntryType::Unknown` returns early above; kept as an error rather than a panic.
fn unreachable_unknown() -> Result<SessionEntry, serde_json::Error> {
    Err(serde_json::Error::custom("unknown entry type"))
}

impl<'de> Deserialize<'de> for SessionEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        SessionEntry::from_value(Value::deserialize(d)?).map_err(D::Error::custom)
    }
}

#[derive(Serialize)]
struct Tagged<'a, T: Serialize> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(flatten)]
    inner: &'a T,
}

impl Serialize for SessionEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let kind = self.type_name();
        match self {
            SessionEntry::Unknown(u) => {
                let mut map = s.serialize_map(Some(u.fields.len()))?;
                for (k, v) in &u.fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            SessionEntry::Message(e) => Tagged { kind, inner: e }.serialize(s),
            SessionEntry::ThinkingLevelChange(e) => Tagged { kind, inner: e }.serialize(s),
            SessionEntry::ModelChange(e) => Tagged { kind, inner: e }.serialize(s),
            SessionEntry::Compaction(e) => Tagged { kind, inner: e }.serialize(s),
            SessionEntry::BranchSummary(e) => Tagged { kind, inner: e }.serialize(s),
            SessionEntry::Custom(e) => Tagged { kind, inner: e }.serialize(s),
            SessionEntry::CustomMessage(e) => Tagged { kind, inner: e }.serialize(s),
            SessionEntry::Label(e) => Tagged { kind, inner: e }.serialize(s),
            SessionEntry::SessionInfo(e) => Tagged { kind, inner: e }.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_type_round_trips_with_unknown_fields() {
        let lines = [
            json!({"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"t","message":{"role":"user","content":"Hello","timestamp":1},"extraTop":1}),
            json!({"type":"thinking_level_change","id":"a","parentId":"b","timestamp":"t","thinkingLevel":"high"}),
            json!({"type":"model_change","id":"a","parentId":"b","timestamp":"t","provider":"openai","modelId":"gpt-4o"}),
            json!({"type":"compaction","id":"a","parentId":"b","timestamp":"t","summary":"s","firstKeptEntryId":"c","tokensBefore":5,"details":{"readFiles":[]},"fromHook":true}),
            json!({"type":"branch_summary","id":"a","parentId":"b","timestamp":"t","fromId":"root","summary":"s"}),
            json!({"type":"custom","id":"a","parentId":"b","timestamp":"t","customType":"x","data":{"count":42}}),
            json!({"type":"custom_message","id":"a","parentId":"b","timestamp":"t","customType":"x","content":[{"type":"text","text":"hi"}],"display":true}),
            json!({"type":"label","id":"a","parentId":"b","timestamp":"t","targetId":"c","label":"cp"}),
            json!({"type":"label","id":"a","parentId":"b","timestamp":"t","targetId":"c"}),
            json!({"type":"session_info","id":"a","parentId":"b","timestamp":"t","name":"n"}),
            json!({"type":"future_kind","id":"a","parentId":"b","timestamp":"t","whatever":[1,2]}),
        ];
        for line in lines {
            let entry: SessionEntry = serde_json::from_value(line.clone()).unwrap();
            assert_eq!(serde_json::to_value(&entry).unwrap(), line, "{entry:?}");
        }
    }

    #[test]
    fn unknown_entries_are_written_back_byte_for_byte() {
        // Order of keys, an absent `parentId` and `timestamp`, and a `timestamp` of another
        // type are all kept: the entry is written exactly as it was read.
        for line in [
            r#"{"type":"future_kind","z":1,"id":"a","a":{"b":[1,2]},"parentId":"p","y":null,"timestamp":"t"}"#,
            r#"{"id":"a","type":"future_kind"}"#,
            r#"{"type":"future_kind","id":"a","parentId":null,"timestamp":5}"#,
        ] {
            let entry: SessionEntry = serde_json::from_str(line).unwrap();
            assert_eq!(entry.entry_type(), EntryType::Unknown);
            assert_eq!((entry.type_name(), entry.id()), ("future_kind", "a"));
            assert_eq!(serde_json::to_string(&entry).unwrap(), line);
        }
        let entry: SessionEntry = serde_json::from_str(
            r#"{"type":"future_kind","id":"a","parentId":"p","timestamp":"t"}"#,
        )
        .unwrap();
        assert_eq!((entry.parent_id(), entry.timestamp()), (Some("p"), "t"));
    }

    #[test]
    fn wrong_shapes_are_errors() {
        assert!(serde_json::from_value::<SessionEntry>(json!([1])).is_err());
        assert!(
            serde_json::from_value::<SessionEntry>(json!({"type":"model_change","id":"a"}))
                .is_err()
        );
        assert!(serde_json::from_value::<SessionEntry>(json!({"type":"odd"})).is_err());
    }
}
