//! Request bodies whose tool definitions are serialized straight from the call's
//! [`Tool`](crate::Tool)s instead of being copied into a `Value` tree first.
//!
//! The tool schemas are most of a small request, the same on every call of an agent, and
//! nested maps: copying them into `Value`s, serializing the copy and dropping it was the
//! largest part of a request's cost before the bytes reached the socket. A provider builds
//! the rest of its body as a `Value` map (small, and easy to adjust the way pi does), puts a
//! placeholder at `tools`' place so that the member keeps pi's key order, and hands the
//! borrowed tool view beside it.

use std::sync::LazyLock;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// The name of the member [`WithTools`] fills.
pub(crate) const TOOLS: &str = "tools";

/// `{}`, for a schema without `properties`.
pub(crate) static EMPTY_OBJECT: LazyLock<Value> = LazyLock::new(|| Value::Object(Map::new()));
/// `[]`, for a schema without `required`.
pub(crate) static EMPTY_ARRAY: Value = Value::Array(Vec::new());

/// A body object whose `tools` member is `tools`, serialized in the place the body's own
/// `tools` placeholder holds (members keep the body's order).
#[derive(Debug)]
pub(crate) struct WithTools<T> {
    /// Every member but the tools; `tools`, if present, is a placeholder.
    pub(crate) body: Map<String, Value>,
    /// What is written for `tools` (`None`: the placeholder as it is).
    pub(crate) tools: Option<T>,
}

impl<T: Serialize> WithTools<T> {
    /// The whole body as a `Value` (tests compare it with pi's recorded bodies).
    #[cfg(test)]
    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a JSON body")
    }
}

impl<T: Serialize> Serialize for WithTools<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.body.len()))?;
        for (key, value) in &self.body {
            match &self.tools {
                Some(tools) if key == TOOLS => map.serialize_entry(key, tools)?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_keep_their_place_among_the_members() {
        let Value::Object(body) = json!({"model": "m", "tools": null, "tool_choice": "auto"})
        else {
            unreachable!()
        };
        let with = WithTools {
            body,
            tools: Some(vec!["a", "b"]),
        };
        assert_eq!(
            serde_json::to_string(&with).unwrap(),
            r#"{"model":"m","tools":["a","b"],"tool_choice":"auto"}"#
        );
        assert_eq!(with.to_value()["tools"], json!(["a", "b"]));
        let without: WithTools<Vec<&str>> = WithTools {
            body: with.body,
            tools: None,
        };
        assert_eq!(
            serde_json::to_string(&without).unwrap(),
            r#"{"model":"m","tools":null,"tool_choice":"auto"}"#
        );
    }
}
