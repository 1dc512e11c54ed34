//! One-pass `Deserialize` for the message types.
//!
//! serde's derive cannot read these types in one pass: a `#[serde(flatten)]` field makes it
//! buffer the whole object into its private `Content` tree first, and an internally tagged
//! enum (`role`, `type`) buffers the object again to find its tag. Every message read from
//! a session or a provider was copied two or three times, with a map and a key allocation
//! per field on each copy. Here each struct reads its known fields straight from the input
//! and collects the others into `extra`; a tagged enum reads its tag when it is the first
//! key (as pi writes every object) and buffers the object only when it is not. Decoding a
//! 100 MB uncompacted session is about twice as fast (`cargo bench --bench session`).
//!
//! Behaviour is the derive's: same required and optional fields, `null` for an optional
//! field is `None`, a repeated known field is an error, unknown fields keep their order.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{
    AssistantContent, AssistantMessage, Content, ErrorDetail, Extra, ImageContent, Message,
    StopReason, TextContent, ThinkingContent, ToolCall, ToolResultMessage, Usage, UserContent,
    UserMessage,
};

/// An object key, borrowed from the input when it has no escapes.
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// A string, borrowed when it can be; any other JSON value reads as `None`.
struct MaybeStr<'de>(Option<Cow<'de, str>>);

impl<'de> Deserialize<'de> for MaybeStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl<'de> Visitor<'de> for StrVisitor {
            type Value = MaybeStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<MaybeStr<'de>, E> {
                Ok(MaybeStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<MaybeStr<'de>, E> {
                Ok(MaybeStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<MaybeStr<'de>, E> {
                Ok(MaybeStr(Some(Cow::Owned(v))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<MaybeStr<'de>, E> {
                Ok(MaybeStr(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<MaybeStr<'de>, E> {
                Ok(MaybeStr(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<MaybeStr<'de>, E> {
                Ok(MaybeStr(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<MaybeStr<'de>, E> {
                Ok(MaybeStr(None))
            }
            fn visit_unit<E>(self) -> Result<MaybeStr<'de>, E> {
                Ok(MaybeStr(None))
            }
            fn visit_none<E>(self) -> Result<MaybeStr<'de>, E> {
                Ok(MaybeStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeStr<'de>, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeStr<'de>, A::Error> {
                while map
                    .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(MaybeStr(None))
            }
        }
        d.deserialize_any(StrVisitor)
    }
}

/// The fields of a struct being read: known fields by name, the others into `extra`.
trait Fields: Default {
    type Out;
    /// Reads the value of `key` from `map`.
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: Key<'de>, map: &mut A)
    -> Result<(), A::Error>;
    /// The struct, or the first missing required field.
    fn finish<E: de::Error>(self) -> Result<Self::Out, E>;
}

/// Reads the rest of `map` into `F`. `tag` is the enum tag already read, which must not
/// come again.
fn read_fields<'de, F: Fields, A: MapAccess<'de>>(
    mut map: A,
    tag: Option<&'static str>,
) -> Result<F::Out, A::Error> {
    let mut fields = F::default();
    while let Some(key) = map.next_key::<Key<'de>>()? {
        if let Some(tag) = tag
            && key.0 == tag
        {
            return Err(de::Error::duplicate_field(tag));
        }
        fields.entry(key, &mut map)?;
    }
    fields.finish()
}

/// Reads `map` into `F`, a message type read on its own: its `role` key, which it writes
/// itself, may be present (once) and must be `role`.
fn read_message_fields<'de, F: Fields, A: MapAccess<'de>>(
    mut map: A,
    role: &'static str,
) -> Result<F::Out, A::Error> {
    let mut fields = F::default();
    let mut seen = false;
    while let Some(key) = map.next_key::<Key<'de>>()? {
        if key.0 == "role" {
            if std::mem::replace(&mut seen, true) {
                return Err(de::Error::duplicate_field("role"));
            }
            match map.next_value::<MaybeStr<'de>>()?.0 {
                Some(found) if found == role => continue,
                Some(found) => {
                    return Err(de::Error::invalid_value(de::Unexpected::Str(&found), &role));
                }
                None => return Err(de::Error::custom("`role` must be a string")),
            }
        }
        fields.entry(key, &mut map)?;
    }
    fields.finish()
}

/// `Deserialize` for a struct through its [`Fields`]; a message type's role, which it
/// accepts as a key.
struct StructVisitor<F>(&'static str, Option<&'static str>, PhantomData<F>);

impl<'de, F: Fields> Visitor<'de> for StructVisitor<F> {
    type Value = F::Out;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<F::Out, A::Error> {
        match self.1 {
            Some(role) => read_message_fields::<F, A>(map, role),
            None => read_fields::<F, A>(map, None),
        }
    }
}

/// A required field: an error when absent.
macro_rules! take {
    (req, $v:expr, $json:literal) => {
        $v.ok_or_else(|| E::missing_field($json))?
    };
    (opt, $v:expr, $json:literal) => {
        $v.unwrap_or_default()
    };
    (vec, $v:expr, $json:literal) => {
        $v.ok_or_else(|| E::missing_field($json))?.0
    };
}

/// A required array read without spare capacity: serde_json gives no length hint, and the
/// doubling `Vec` would keep up to half its slots empty in every message it holds.
struct ExactVec<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ExactVec<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SeqVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for SeqVisitor<T> {
            type Value = ExactVec<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ExactVec<T>, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                items.shrink_to_fit();
                Ok(ExactVec(items))
            }
        }
        d.deserialize_seq(SeqVisitor(PhantomData))
    }
}

/// Implements [`Fields`] and `Deserialize` for a struct with an `extra` map. Each field is
/// `"wireName" => field: Type, req|opt` (`opt`: absent reads as `Default`, i.e. `None`).
macro_rules! one_pass_struct {
    ($ty:ident, $fields:ident, $expecting:literal $(, role = $role:literal)?,
     { $($json:literal => $field:ident: $fty:ty, $kind:tt;)* } $(, $rest:ident: $init:expr)?) => {
        #[derive(Default)]
        struct $fields {
            $($field: Option<$fty>,)*
            extra: Extra,
        }

        impl Fields for $fields {
            type Out = $ty;
            fn entry<'de, A: MapAccess<'de>>(
                &mut self,
                key: Key<'de>,
                map: &mut A,
            ) -> Result<(), A::Error> {
                match &*key.0 {
                    $($json => {
                        if self.$field.is_some() {
                            return Err(de::Error::duplicate_field($json));
                        }
                        self.$field = Some(map.next_value()?);
                    })*
                    _ => {
                        let value = map.next_value::<Value>()?;
                        self.extra.insert(key.0.into_owned(), value);
                    }
                }
                Ok(())
            }
            fn finish<E: de::Error>(self) -> Result<$ty, E> {
                Ok($ty {
                    $($field: take!($kind, self.$field, $json),)*
                    extra: self.extra,
                    $($rest: $init,)?
                })
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let role: Option<&'static str> = None $(.or(Some($role)))?;
                d.deserialize_map(StructVisitor::<$fields>($expecting, role, PhantomData))
            }
        }
    };
}

one_pass_struct!(TextContent, TextFields, "a text block", {
    "text" => text: String, req;
    "textSignature" => text_signature: Option<String>, opt;
});

one_pass_struct!(ThinkingContent, ThinkingFields, "a thinking block", {
    "thinking" => thinking: String, req;
    "thinkingSignature" => thinking_signature: Option<String>, opt;
    "redacted" => redacted: Option<bool>, opt;
});

one_pass_struct!(ImageContent, ImageFields, "an image block", {
    "data" => data: String, req;
    "mimeType" => mime_type: String, req;
});

one_pass_struct!(ToolCall, ToolCallFields, "a tool call", {
    "id" => id: String, req;
    "name" => name: String, req;
    "arguments" => arguments: Map<String, Value>, req;
    "thoughtSignature" => thought_signature: Option<String>, opt;
});

/// `Usage` as stored: its counts read leniently ([`StoredCount`]).
struct StoredUsage {
    input: StoredCount,
    output: StoredCount,
    cache_read: StoredCount,
    cache_write: StoredCount,
    total_tokens: Option<StoredCount>,
    cost: super::Cost,
    extra: Extra,
}

one_pass_struct!(StoredUsage, UsageFields, "a usage object", {
    "input" => input: StoredCount, req;
    "output" => output: StoredCount, req;
    "cacheRead" => cache_read: StoredCount, req;
    "cacheWrite" => cache_write: StoredCount, req;
    "totalTokens" => total_tokens: Option<StoredCount>, opt;
    "cost" => cost: super::Cost, req;
});

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let u = StoredUsage::deserialize(d)?;
        Ok(Usage {
            input: u.input.0,
            output: u.output.0,
            cache_read: u.cache_read.0,
            cache_write: u.cache_write.0,
            total_tokens: u.total_tokens.map(|t| t.0),
            cost: u.cost,
            extra: u.extra,
        })
    }
}

/// A token count in a stored message, read as the providers' counts are: informational, so a
/// value some proxy reported and pi stored as it came (`-5`, `1.5`, `1e30`, `null`) never makes
/// a message unreadable. A negative number reads as 0, a fraction as its whole part, a number
/// beyond `u64::MAX` as `u64::MAX`, `null` as 0; a value of another type is an error.
#[derive(Clone, Copy, Default)]
struct StoredCount(u64);

impl<'de> Deserialize<'de> for StoredCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> de::Visitor<'de> for CountVisitor {
            type Value = StoredCount;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a token count")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<StoredCount, E> {
                Ok(StoredCount(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<StoredCount, E> {
                Ok(StoredCount(u64::try_from(v).unwrap_or(0)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<StoredCount, E> {
                // `as` cuts the fraction and saturates; NaN and negatives are 0.
                Ok(StoredCount(if v > 0.0 { v as u64 } else { 0 }))
            }
            fn visit_unit<E: de::Error>(self) -> Result<StoredCount, E> {
                Ok(StoredCount(0))
            }
        }
        d.deserialize_any(CountVisitor)
    }
}

one_pass_struct!(UserMessage, UserFields, "a user message", role = "user", {
    "content" => content: UserContent, req;
    "timestamp" => timestamp: i64, req;
});

one_pass_struct!(AssistantMessage, AssistantFields, "an assistant message", role = "assistant", {
    "content" => content: ExactVec<AssistantContent>, vec;
    "api" => api: String, req;
    "provider" => provider: String, req;
    "model" => model: String, req;
    "responseModel" => response_model: Option<String>, opt;
    "responseId" => response_id: Option<String>, opt;
    "diagnostics" => diagnostics: Option<Vec<Value>>, opt;
    "usage" => usage: Usage, req;
    "stopReason" => stop_reason: StopReason, req;
    "errorMessage" => error_message: Option<String>, opt;
    "timestamp" => timestamp: i64, req;
}, error_detail: ErrorDetail::default());

one_pass_struct!(ToolResultMessage, ToolResultFields, "a tool result message", role = "toolResult", {
    "toolCallId" => tool_call_id: String, req;
    "toolName" => tool_name: String, req;
    "content" => content: ExactVec<Content>, vec;
    "details" => details: Option<Value>, opt;
    "isError" => is_error: bool, req;
    "timestamp" => timestamp: i64, req;
});

/// An internally tagged enum (`{"<tag>": "<variant>", ...fields}`).
pub(crate) trait Tagged: Sized {
    const TAG: &'static str;
    const EXPECTING: &'static str;
    /// Reads the fields of variant `tag` (the tag itself already consumed).
    fn variant<'de, A: MapAccess<'de>>(tag: &str, map: A) -> Result<Self, A::Error>;
    /// The variant from an object buffered because its tag was not its first key (`index`:
    /// where the tag was among the keys).
    fn buffered(
        tag: String,
        fields: Map<String, Value>,
        index: usize,
    ) -> Result<Self, serde_json::Error> {
        let _ = index;
        Self::variant(&tag, MapDeserializer::new(fields.into_iter()))
    }
    /// The error for an absent or non-string tag.
    fn no_tag<E: de::Error>() -> E {
        E::missing_field(Self::TAG)
    }
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<'de, T: Tagged> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let Some(first) = map.next_key::<Key<'de>>()? else {
            return Err(T::no_tag());
        };
        if first.0 == T::TAG {
            return match map.next_value::<MaybeStr<'de>>()?.0 {
                Some(tag) => T::variant(&tag, map),
                None => Err(T::no_tag()),
            };
        }
        // The tag comes later: buffer the object (the last of repeated keys wins).
        let mut fields = Map::new();
        let value = map.next_value::<Value>()?;
        fields.insert(first.0.into_owned(), value);
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let value = map.next_value::<Value>()?;
            fields.insert(key.0.into_owned(), value);
        }
        let index = fields.keys().position(|k| k == T::TAG).unwrap_or(0);
        match fields.shift_remove(T::TAG) {
            Some(Value::String(tag)) => T::buffered(tag, fields, index).map_err(de::Error::custom),
            _ => Err(T::no_tag()),
        }
    }
}

pub(crate) fn tagged<'de, T: Tagged, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_map(TaggedVisitor::<T>(PhantomData))
}

impl Tagged for Content {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a content block";
    fn variant<'de, A: MapAccess<'de>>(tag: &str, map: A) -> Result<Self, A::Error> {
        match tag {
            "text" => read_fields::<TextFields, A>(map, Some(Self::TAG)).map(Content::Text),
            "image" => read_fields::<ImageFields, A>(map, Some(Self::TAG)).map(Content::Image),
            other => unknown_block(other, map).map(Content::Unknown),
        }
    }
    fn buffered(
        tag: String,
        mut fields: Map<String, Value>,
        index: usize,
    ) -> Result<Self, serde_json::Error> {
        match tag.as_str() {
            "text" | "image" => Self::variant(&tag, MapDeserializer::new(fields.into_iter())),
            _ => {
                fields.shift_insert(index, Self::TAG.to_owned(), Value::String(tag));
                Ok(Content::Unknown(fields))
            }
        }
    }
}

/// The raw object of a block whose `type` (already read, as its first key) is unknown.
fn unknown_block<'de, A: MapAccess<'de>>(tag: &str, mut map: A) -> Result<Extra, A::Error> {
    let mut fields = Map::new();
    fields.insert("type".to_owned(), Value::String(tag.to_owned()));
    while let Some(key) = map.next_key::<Key<'de>>()? {
        if key.0 == "type" {
            return Err(de::Error::duplicate_field("type"));
        }
        let value = map.next_value::<Value>()?;
        fields.insert(key.0.into_owned(), value);
    }
    Ok(fields)
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged(d)
    }
}

impl Tagged for AssistantContent {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "an assistant content block";
    fn variant<'de, A: MapAccess<'de>>(tag: &str, map: A) -> Result<Self, A::Error> {
        let tag_key = Some(Self::TAG);
        match tag {
            "text" => read_fields::<TextFields, A>(map, tag_key).map(AssistantContent::Text),
            "thinking" => {
                read_fields::<ThinkingFields, A>(map, tag_key).map(AssistantContent::Thinking)
            }
            "toolCall" => {
                read_fields::<ToolCallFields, A>(map, tag_key).map(AssistantContent::ToolCall)
            }
            other => unknown_block(other, map).map(AssistantContent::Unknown),
        }
    }
    fn buffered(
        tag: String,
        mut fields: Map<String, Value>,
        index: usize,
    ) -> Result<Self, serde_json::Error> {
        match tag.as_str() {
            "text" | "thinking" | "toolCall" => {
                Self::variant(&tag, MapDeserializer::new(fields.into_iter()))
            }
            _ => {
                fields.shift_insert(index, Self::TAG.to_owned(), Value::String(tag));
                Ok(AssistantContent::Unknown(fields))
            }
        }
    }
}

impl<'de> Deserialize<'de> for AssistantContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged(d)
    }
}

/// The three LLM roles, for [`Message`] and the agent layer's `AgentMessage`.
pub(crate) fn llm_variant<'de, A: MapAccess<'de>>(
    tag: &str,
    map: A,
) -> Option<Result<Message, A::Error>> {
    let role = Some("role");
    Some(match tag {
        "user" => read_fields::<UserFields, A>(map, role).map(Message::User),
        "assistant" => read_fields::<AssistantFields, A>(map, role).map(Message::Assistant),
        "toolResult" => read_fields::<ToolResultFields, A>(map, role).map(Message::ToolResult),
        _ => return None,
    })
}

pub(crate) const LLM_ROLES: &[&str] = &["user", "assistant", "toolResult"];

impl Tagged for Message {
    const TAG: &'static str = "role";
    const EXPECTING: &'static str = "a message";
    fn variant<'de, A: MapAccess<'de>>(tag: &str, map: A) -> Result<Self, A::Error> {
        llm_variant(tag, map).unwrap_or_else(|| Err(de::Error::unknown_variant(tag, LLM_ROLES)))
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged(d)
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ReasonVisitor;
        impl<'de> Visitor<'de> for ReasonVisitor {
            type Value = StopReason;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a stop reason")
            }
            fn visit_str<E>(self, v: &str) -> Result<StopReason, E> {
                Ok(StopReason::from_wire(v))
            }
        }
        d.deserialize_str(ReasonVisitor)
    }
}

impl<'de> Deserialize<'de> for UserContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = UserContent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E>(self, v: &str) -> Result<UserContent, E> {
                Ok(UserContent::Text(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<UserContent, E> {
                Ok(UserContent::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<UserContent, A::Error> {
                let blocks =
                    ExactVec::<Content>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(UserContent::Blocks(blocks.0))
            }
        }
        d.deserialize_any(ContentVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stored_usage_counts_are_read_leniently() {
        let cost = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0});
        let raw = json!({"input": -5, "output": 7.9, "cacheRead": 1e30, "cacheWrite": null,
                         "totalTokens": u64::MAX, "cost": cost, "kept": true});
        let (text, value) = both::<Usage>(&raw);
        for usage in [text.unwrap(), value.unwrap()] {
            assert_eq!(
                (
                    usage.input,
                    usage.output,
                    usage.cache_read,
                    usage.cache_write
                ),
                (0, 7, u64::MAX, 0)
            );
            assert_eq!(usage.total_tokens, Some(u64::MAX));
            assert_eq!(usage.extra["kept"], true);
        }
        let wrong =
            json!({"input": "5", "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": cost});
        assert!(both::<Usage>(&wrong).0.is_err(), "a string is not a count");
    }

    fn both<T: for<'de> Deserialize<'de>>(raw: &Value) -> (Result<T, String>, Result<T, String>) {
        (
            serde_json::from_str::<T>(&raw.to_string()).map_err(|e| e.to_string()),
            serde_json::from_value::<T>(raw.clone()).map_err(|e| e.to_string()),
        )
    }

    #[test]
    fn tag_anywhere_and_unknown_fields_round_trip() {
        for raw in [
            json!({"role": "user", "content": "hi", "timestamp": 1, "x": {"y": [1]}}),
            json!({"content": [{"text": "a", "type": "text", "z": 1}], "timestamp": 1, "role": "user"}),
            json!({"role": "toolResult", "toolCallId": "c", "toolName": "t", "isError": false,
                   "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
                   "timestamp": 3, "details": {"k": null}}),
            json!({"api": "a", "role": "assistant", "provider": "p", "model": "m",
                   "content": [{"type": "thinking", "thinking": "t", "redacted": true, "q": 1},
                               {"name": "n", "type": "toolCall", "id": "i", "arguments": {"a": 1}},
                               {"type": "text", "text": "x", "textSignature": "s"}],
                   "usage": {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4,
                             "cost": {"input": 0.5, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.5},
                             "reasoning": 7},
                   "stopReason": "toolUse", "timestamp": 4, "responseId": "r", "future": [true]}),
        ] {
            let (a, b) = both::<Message>(&raw);
            let (a, b) = (a.unwrap(), b.unwrap());
            assert_eq!(a, b);
            assert_eq!(serde_json::to_value(&a).unwrap(), raw);
        }
    }

    #[test]
    fn errors_match_the_derive() {
        let missing = json!({"role": "user", "content": "hi"});
        let (a, b) = both::<Message>(&missing);
        assert!(a.unwrap_err().contains("missing field `timestamp`"));
        assert!(b.unwrap_err().contains("missing field `timestamp`"));

        let dup = r#"{"role":"user","content":"a","content":"b","timestamp":1}"#;
        let e = serde_json::from_str::<Message>(dup)
            .unwrap_err()
            .to_string();
        assert!(e.contains("duplicate field `content`"), "{e}");
        let dup_tag = r#"{"type":"text","text":"a","type":"text"}"#;
        assert!(serde_json::from_str::<Content>(dup_tag).is_err());

        let e =
            serde_json::from_value::<Message>(json!({"role": "note", "timestamp": 1})).unwrap_err();
        assert!(e.to_string().contains("unknown variant `note`"), "{e}");
        assert!(serde_json::from_value::<Content>(json!({"text": "a"})).is_err());
        assert!(serde_json::from_value::<UserContent>(json!(5)).is_err());
        assert!(serde_json::from_value::<TextContent>(json!({"text": 5})).is_err());
    }

    #[test]
    fn null_optionals_are_none() {
        let t: TextContent = serde_json::from_str(r#"{"text":"a","textSignature":null}"#).unwrap();
        assert_eq!(t.text_signature, None);
        assert!(t.extra.is_empty());
    }

    #[test]
    fn unknown_blocks_are_kept_whole_and_written_back_unchanged() {
        for raw in [
            r#"{"type":"video","url":"u","meta":{"b":1,"a":[null]}}"#,
            r#"{"url":"u","type":"video","meta":{"b":1,"a":[null]}}"#,
            r#"{"url":"u","meta":{"b":1},"type":"video"}"#,
            r#"{"type":"video"}"#,
        ] {
            let value: Value = serde_json::from_str(raw).unwrap();
            let (a, b) = both::<Content>(&value);
            for block in [a.unwrap(), b.unwrap()] {
                assert_eq!(block.block_type(), "video");
                assert_eq!(block.as_text(), None);
                assert!(
                    matches!(&block, Content::Unknown(m) if m.len() == value.as_object().unwrap().len())
                );
                assert_eq!(serde_json::to_string(&block).unwrap(), raw);
            }
            let (a, b) = both::<AssistantContent>(&value);
            for block in [a.unwrap(), b.unwrap()] {
                assert_eq!(block.block_type(), "video");
                assert_eq!(serde_json::to_string(&block).unwrap(), raw);
            }
        }
        // In a message: known blocks stay typed around it, helpers skip it.
        let raw = json!({"role": "assistant", "content": [
                {"type": "text", "text": "a"}, {"type": "serverToolUse", "id": "s", "input": {}},
                {"type": "toolCall", "id": "c", "name": "n", "arguments": {}}],
            "api": "a", "provider": "p", "model": "m",
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "toolUse", "timestamp": 1});
        let (a, b) = both::<Message>(&raw);
        for m in [a.unwrap(), b.unwrap()] {
            let Message::Assistant(m) = &m else { panic!() };
            assert_eq!(m.text(), "a");
            assert_eq!(m.tool_calls().count(), 1);
            assert!(matches!(m.content[1], AssistantContent::Unknown(_)));
            assert_eq!(serde_json::to_value(m).unwrap()["content"], raw["content"]);
        }
        // A repeated `type` is still an error, as for a known block.
        let dup = r#"{"type":"video","x":1,"type":"video"}"#;
        assert!(serde_json::from_str::<Content>(dup).is_err());
        assert!(serde_json::from_str::<AssistantContent>(dup).is_err());
    }

    #[test]
    fn unknown_stop_reasons_are_kept_as_written() {
        for (wire, reason) in [
            ("stop", StopReason::Stop),
            ("length", StopReason::Length),
            ("toolUse", StopReason::ToolUse),
            ("error", StopReason::Error),
            ("aborted", StopReason::Aborted),
            ("pauseTurn", StopReason::Unknown("pauseTurn".into())),
            ("Stop", StopReason::Unknown("Stop".into())),
        ] {
            let raw = Value::String(wire.to_owned());
            let (a, b) = both::<StopReason>(&raw);
            assert_eq!(a.unwrap(), reason);
            assert_eq!(b.unwrap(), reason);
            assert_eq!(StopReason::from_wire(wire), reason);
            assert_eq!(serde_json::to_value(&reason).unwrap(), raw);
            assert_eq!(reason.to_string(), wire);
        }
        assert!(!StopReason::from_wire("pauseTurn").is_failure());
        assert!(StopReason::from_wire("pauseTurn").is_unknown());
        assert!(serde_json::from_value::<StopReason>(json!(5)).is_err());
    }

    #[test]
    fn unknown_llm_roles_are_an_error() {
        // The LLM layer knows three roles; session roles and newer ones are the agent layer's
        // `AgentMessage`s (tested there).
        let raw = json!({"role": "developerNote", "text": "x", "timestamp": 1});
        let (a, b) = both::<Message>(&raw);
        assert!(a.unwrap_err().contains("unknown variant `developerNote`"));
        assert!(b.is_err());
    }

    #[test]
    fn a_message_type_on_its_own_writes_and_reads_its_role() {
        let user = UserMessage {
            content: UserContent::Text("hi".into()),
            timestamp: 1,
            extra: Extra::new(),
        };
        let text = serde_json::to_string(&user).unwrap();
        assert_eq!(text, r#"{"role":"user","content":"hi","timestamp":1}"#);
        assert_eq!(
            serde_json::to_string(&Message::User(user.clone())).unwrap(),
            text
        );
        let (a, b) = both::<UserMessage>(&serde_json::from_str(&text).unwrap());
        for back in [a.unwrap(), b.unwrap()] {
            assert_eq!(back, user);
            assert!(back.extra.is_empty(), "the role is not an extra field");
        }
        // Without a role, as before; with another role or twice, an error.
        assert!(serde_json::from_str::<UserMessage>(r#"{"content":"hi","timestamp":1}"#).is_ok());
        let e = serde_json::from_str::<UserMessage>(
            r#"{"role":"assistant","content":"hi","timestamp":1}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("assistant"), "{e}");
        assert!(
            serde_json::from_str::<UserMessage>(
                r#"{"role":"user","role":"user","content":"hi","timestamp":1}"#
            )
            .is_err()
        );
        let result = r#"{"role":"toolResult","toolCallId":"c","toolName":"t","content":[],"isError":false,"timestamp":2}"#;
        let parsed: ToolResultMessage = serde_json::from_str(result).unwrap();
        assert_eq!(serde_json::to_string(&parsed).unwrap(), result);
    }

    #[test]
    fn escaped_keys_are_recognized() {
        let m: Message =
            serde_json::from_str(r#"{"role":"user","cont\u0065nt":"hi","timestamp":1}"#).unwrap();
        let Message::User(u) = m else { panic!() };
        assert_eq!(u.content, UserContent::Text("hi".into()));
        assert!(u.extra.is_empty());
    }
}
