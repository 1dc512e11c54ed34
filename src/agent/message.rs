//! [`AgentMessage`]: the messages an agent keeps in its history — the three LLM roles plus
//! application-defined custom messages.
//!
//! pi lets applications add message roles by TypeScript declaration merging; here a custom
//! message is a [`CustomMessage`]: a role and its other JSON fields. Define a typed message
//! with [`CustomMessageType`] and convert with [`AgentMessage::custom`] and
//! [`AgentMessage::to_custom`]. The agent's `convert_to_llm` decides what, if anything, the
//! model sees of a custom message; the default leaves them out.
//!
//! ```
//! use pi_engine::agent::{AgentMessage, CustomMessageType};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Notification { text: String, timestamp: i64 }
//!
//! impl CustomMessageType for Notification {
//!     const ROLE: &'static str = "notification";
//! }
//!
//! let msg = AgentMessage::custom(&Notification { text: "build passed".into(), timestamp: 1 }).unwrap();
//! let json = serde_json::to_string(&msg).unwrap();
//! assert_eq!(json, r#"{"role":"notification","text":"build passed","timestamp":1}"#);
//! let back: AgentMessage = serde_json::from_str(&json).unwrap();
//! assert_eq!(back.to_custom::<Notification>().unwrap().unwrap().text, "build passed");
//! ```

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use serde::de::MapAccess;
use serde::de::value::MapDeserializer;

use crate::llm::message::de::{self as wire, Key, LLM_ROLES, llm_variant};
use crate::llm::message::{AssistantMessage, Message, ToolResultMessage, UserMessage};

/// A message in an agent's history.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentMessage {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// A tool's result.
    ToolResult(ToolResultMessage),
    /// An application-defined message (any other `role`).
    Custom(CustomMessage),
}

/// A message with an application-defined role: the role and the object's other fields.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomMessage {
    role: String,
    fields: Map<String, Value>,
}

/// A typed custom message: a serde type with a fixed role.
pub trait CustomMessageType: Serialize + DeserializeOwned {
    /// The `role` this type is stored under.
    const ROLE: &'static str;
}

impl CustomMessage {
    /// A custom message with `role` and `fields` (a `role` key in `fields` is ignored).
    pub fn new(role: impl Into<String>, mut fields: Map<String, Value>) -> Self {
        fields.shift_remove("role");
        CustomMessage {
            role: role.into(),
            fields,
        }
    }

    /// A custom message from a role and fields that do not hold `role`.
    pub(crate) fn from_parts(role: String, fields: Map<String, Value>) -> Self {
        CustomMessage { role, fields }
    }

    /// The role.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The fields other than `role`.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// Mutable access to the fields other than `role`.
    pub fn fields_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.fields
    }

    /// The field `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// The `timestamp` field, when it is a number.
    pub fn timestamp(&self) -> Option<i64> {
        self.fields.get("timestamp").and_then(Value::as_i64)
    }

    /// The message as a JSON object, `role` included.
    pub fn to_value(&self) -> Value {
        let mut map = Map::with_capacity(self.fields.len() + 1);
        map.insert("role".into(), Value::String(self.role.clone()));
        map.extend(self.fields.iter().map(|(k, v)| (k.clone(), v.clone())));
        Value::Object(map)
    }
}

impl AgentMessage {
    /// The wire role.
    pub fn role(&self) -> &str {
        match self {
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
            AgentMessage::Custom(c) => c.role(),
        }
    }

    /// The timestamp (Unix milliseconds), when the message has one.
    pub fn timestamp(&self) -> Option<i64> {
        match self {
            AgentMessage::User(m) => Some(m.timestamp),
            AgentMessage::Assistant(m) => Some(m.timestamp),
            AgentMessage::ToolResult(m) => Some(m.timestamp),
            AgentMessage::Custom(c) => c.timestamp(),
        }
    }

    /// A copy as an LLM [`Message`], or `None` for a custom message.
    pub fn to_message(&self) -> Option<Message> {
        match self {
            AgentMessage::User(m) => Some(Message::User(m.clone())),
            AgentMessage::Assistant(m) => Some(Message::Assistant(m.clone())),
            AgentMessage::ToolResult(m) => Some(Message::ToolResult(m.clone())),
            AgentMessage::Custom(_) => None,
        }
    }

    /// The LLM [`Message`], or the custom message back as `Err`.
    pub fn into_message(self) -> Result<Message, CustomMessage> {
        match self {
            AgentMessage::User(m) => Ok(Message::User(m)),
            AgentMessage::Assistant(m) => Ok(Message::Assistant(m)),
            AgentMessage::ToolResult(m) => Ok(Message::ToolResult(m)),
            AgentMessage::Custom(c) => Err(c),
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            AgentMessage::Assistant(m) => Some(m),
            _ => None,
        }
    }

    /// The tool result, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            AgentMessage::ToolResult(m) => Some(m),
            _ => None,
        }
    }

    /// The custom message, if this is one.
    pub fn as_custom(&self) -> Option<&CustomMessage> {
        match self {
            AgentMessage::Custom(m) => Some(m),
            _ => None,
        }
    }

    /// A custom message from a typed value.
    pub fn custom<T: CustomMessageType>(value: &T) -> Result<AgentMessage, serde_json::Error> {
        match serde_json::to_value(value)? {
            Value::Object(fields) => Ok(AgentMessage::Custom(CustomMessage::new(T::ROLE, fields))),
            other => Err(serde::de::Error::custom(format!(
                "a custom message must serialize to a JSON object, not {other}"
            ))),
        }
    }

    /// The typed custom message: `None` when the role is not `T::ROLE`, an error when the
    /// fields do not fit `T`.
    pub fn to_custom<T: CustomMessageType>(&self) -> Option<Result<T, serde_json::Error>> {
        match self {
            AgentMessage::Custom(c) if c.role == T::ROLE => {
                Some(serde_json::from_value(Value::Object(c.fields.clone())))
            }
            _ => None,
        }
    }
}

impl From<UserMessage> for AgentMessage {
    fn from(m: UserMessage) -> Self {
        AgentMessage::User(m)
    }
}

/// A user message with this text (what [`Agent::steer`](super::Agent::steer) and
/// [`follow_up`](super::Agent::follow_up) usually take).
impl From<&str> for AgentMessage {
    fn from(text: &str) -> Self {
        AgentMessage::User(UserMessage::text(text))
    }
}

/// A user message with this text.
impl From<String> for AgentMessage {
    fn from(text: String) -> Self {
        AgentMessage::User(UserMessage::text(text))
    }
}

impl From<AssistantMessage> for AgentMessage {
    fn from(m: AssistantMessage) -> Self {
        AgentMessage::Assistant(m)
    }
}

impl From<ToolResultMessage> for AgentMessage {
    fn from(m: ToolResultMessage) -> Self {
        AgentMessage::ToolResult(m)
    }
}

impl From<CustomMessage> for AgentMessage {
    fn from(m: CustomMessage) -> Self {
        AgentMessage::Custom(m)
    }
}

impl From<Message> for AgentMessage {
    fn from(m: Message) -> Self {
        match m {
            Message::User(m) => AgentMessage::User(m),
            Message::Assistant(m) => AgentMessage::Assistant(m),
            Message::ToolResult(m) => AgentMessage::ToolResult(m),
        }
    }
}

impl Serialize for CustomMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.fields.len() + 1))?;
        map.serialize_entry("role", &self.role)?;
        for (k, v) in &self.fields {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for CustomMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut fields = Map::<String, Value>::deserialize(d)?;
        match fields.shift_remove("role") {
            Some(Value::String(role)) => Ok(CustomMessage { role, fields }),
            _ => Err(serde::de::Error::custom("a message needs a string `role`")),
        }
    }
}

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // The LLM message types write their own `role`.
        match self {
            AgentMessage::User(m) => m.serialize(s),
            AgentMessage::Assistant(m) => m.serialize(s),
            AgentMessage::ToolResult(m) => m.serialize(s),
            AgentMessage::Custom(c) => c.serialize(s),
        }
    }
}

// One pass over the input whatever the role, with the LLM layer's reader for its three roles
// (`crate::llm::message::de`): the tag is read first when it comes first, as pi writes it.
impl wire::Tagged for AgentMessage {
    const TAG: &'static str = "role";
    const EXPECTING: &'static str = "a message";
    fn variant<'de, A: MapAccess<'de>>(tag: &str, mut map: A) -> Result<Self, A::Error> {
        if LLM_ROLES.contains(&tag) {
            return llm_variant(tag, map)
                .unwrap_or_else(|| Err(serde::de::Error::unknown_variant(tag, LLM_ROLES)))
                .map(AgentMessage::from);
        }
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            if key.0 == Self::TAG {
                return Err(serde::de::Error::duplicate_field(Self::TAG));
            }
            let value = map.next_value::<Value>()?;
            fields.insert(key.0.into_owned(), value);
        }
        Ok(AgentMessage::Custom(CustomMessage::from_parts(
            tag.to_owned(),
            fields,
        )))
    }
    fn buffered(
        tag: String,
        fields: Map<String, Value>,
        _index: usize,
    ) -> Result<Self, serde_json::Error> {
        if LLM_ROLES.contains(&tag.as_str()) {
            Self::variant(&tag, MapDeserializer::new(fields.into_iter()))
        } else {
            Ok(AgentMessage::Custom(CustomMessage::from_parts(tag, fields)))
        }
    }
    fn no_tag<E: serde::de::Error>() -> E {
        E::custom("a message needs a string `role`")
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        wire::tagged(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(raw: &Value) -> (Result<AgentMessage, String>, Result<AgentMessage, String>) {
        (
            serde_json::from_str(&raw.to_string()).map_err(|e: serde_json::Error| e.to_string()),
            serde_json::from_value(raw.clone()).map_err(|e| e.to_string()),
        )
    }

    #[test]
    fn llm_roles_and_custom_roles_round_trip() {
        for raw in [
            json!({"role": "user", "content": "hi", "timestamp": 1, "x": {"y": [1]}}),
            json!({"content": [{"text": "a", "type": "text", "z": 1}], "timestamp": 1, "role": "user"}),
            json!({"role": "toolResult", "toolCallId": "c", "toolName": "t", "isError": false,
                   "content": [], "timestamp": 3, "details": {"k": null}}),
            json!({"role": "developerNote", "text": "x", "timestamp": 1}),
            json!({"text": "x", "role": "developerNote"}),
        ] {
            let (a, b) = both(&raw);
            let (a, b) = (a.unwrap(), b.unwrap());
            assert_eq!(a, b);
            assert_eq!(serde_json::to_value(&a).unwrap(), raw);
        }
        let (a, _) = both(&json!({"role": "developerNote", "text": "x"}));
        assert_eq!(a.unwrap().as_custom().unwrap().role(), "developerNote");
    }

    #[test]
    fn a_role_must_be_a_string() {
        for raw in [json!({"role": 5}), json!({"content": "x"})] {
            let (a, b) = both(&raw);
            for e in [a.unwrap_err(), b.unwrap_err()] {
                assert!(e.contains("needs a string `role`"), "{e}");
            }
        }
        let dup = r#"{"role":"note","a":1,"role":"note"}"#;
        assert!(serde_json::from_str::<AgentMessage>(dup).is_err());
    }

    #[test]
    fn custom_roles_keep_their_fields_in_order() {
        for raw in [
            r#"{"role":"note","b":1,"a":{"c":"\u00e9"}}"#,
            r#"{"b":1,"role":"note","a":{"c":"\u00e9"}}"#,
        ] {
            let m: AgentMessage = serde_json::from_str(raw).unwrap();
            let c = m.as_custom().unwrap();
            assert_eq!(c.role(), "note");
            assert_eq!(c.fields().keys().collect::<Vec<_>>(), ["b", "a"]);
        }
    }

    #[test]
    fn text_is_a_user_message() {
        for message in [
            AgentMessage::from("steer left"),
            "steer left".to_owned().into(),
        ] {
            match message {
                AgentMessage::User(user) => assert_eq!(user.content.text(), "steer left"),
                other => panic!("{other:?}"),
            }
        }
    }
    use serde_json::json;

    #[test]
    fn llm_roles_and_custom_round_trip() {
        for raw in [
            json!({"role": "user", "content": "hi", "timestamp": 1}),
            json!({"role": "toolResult", "toolCallId": "a", "toolName": "b",
                   "content": [{"type": "text", "text": "ok"}], "isError": false, "timestamp": 2}),
            json!({"role": "bashExecution", "command": "ls", "output": "", "exitCode": 0,
                   "cancelled": false, "truncated": false, "timestamp": 3}),
        ] {
            let m: AgentMessage = serde_json::from_value(raw.clone()).unwrap();
            assert_eq!(serde_json::to_value(&m).unwrap(), raw);
        }
    }

    #[test]
    fn custom_accessors() {
        let m: AgentMessage =
            serde_json::from_value(json!({"role": "note", "text": "x", "timestamp": 9})).unwrap();
        assert_eq!(m.role(), "note");
        assert_eq!(m.timestamp(), Some(9));
        assert!(m.to_message().is_none());
        assert_eq!(m.as_custom().unwrap().get("text"), Some(&json!("x")));
    }
}
