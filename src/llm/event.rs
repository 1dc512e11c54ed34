//! The streaming protocol of the LLM layer: [`AssistantMessageEvent`], and
//! [`PartialMessage`], which folds those events into the message as it stands.
//!
//! A stream of one model call is `start`, then for each content block a
//! `*_start`, any number of `*_delta`s and a `*_end`, and finally exactly one `done` or
//! `error`. `contentIndex` is the block's index in the message's `content`.
//!
//! Unlike pi, events do not carry a `partial` snapshot of the whole message: copying the
//! message into every event makes a streamed reply quadratic. The stream keeps the partial
//! message instead, available from
//! [`AssistantMessageEventStream::partial`](crate::llm::AssistantMessageEventStream::partial)
//! between events. Serialized, an event is exactly pi's JSON without `partial`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::llm::json::PartialJsonParser;
use crate::llm::message::{
    AssistantContent, AssistantMessage, StopReason, TextContent, ThinkingContent, ToolCall,
    identical_tool_calls,
};

/// One event of a streamed model reply.
///
/// ```
/// use pi_engine::AssistantMessageEvent;
///
/// let ev: AssistantMessageEvent =
///     serde_json::from_str(r#"{"type":"text_delta","contentIndex":0,"delta":"Hi"}"#).unwrap();
/// assert!(matches!(ev, AssistantMessageEvent::TextDelta { content_index: 0, .. }));
/// assert_eq!(serde_json::to_string(&ev).unwrap(),
///            r#"{"type":"text_delta","contentIndex":0,"delta":"Hi"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum AssistantMessageEvent {
    /// The reply started. Always the first event, unless the call failed before any output
    /// (then the only event is `error`).
    Start,
    /// A text block started at `content_index`.
    TextStart {
        /// Index of the block in the message content.
        content_index: usize,
    },
    /// More text for the block at `content_index`.
    TextDelta {
        /// Index of the block in the message content.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The text block at `content_index` is complete.
    TextEnd {
        /// Index of the block in the message content.
        content_index: usize,
        /// The block's whole text.
        content: String,
    },
    /// A thinking block started at `content_index`.
    ThinkingStart {
        /// Index of the block in the message content.
        content_index: usize,
    },
    /// More reasoning text for the block at `content_index`.
    ThinkingDelta {
        /// Index of the block in the message content.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The thinking block at `content_index` is complete.
    ThinkingEnd {
        /// Index of the block in the message content.
        content_index: usize,
        /// The block's whole text.
        content: String,
    },
    /// A tool call started at `content_index`.
    ToolcallStart {
        /// Index of the block in the message content.
        content_index: usize,
        /// The call's id, when the provider sent it with the start (pi carries it only in
        /// `partial`; its proxy protocol carries it here too).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        id: String,
        /// The tool's name, when known at the start.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        tool_name: String,
    },
    /// A fragment of the tool call's JSON arguments.
    ToolcallDelta {
        /// Index of the block in the message content.
        content_index: usize,
        /// The raw JSON fragment.
        delta: String,
    },
    /// The tool call at `content_index` is complete.
    ToolcallEnd {
        /// Index of the block in the message content.
        content_index: usize,
        /// The complete call with its parsed arguments.
        #[serde(with = "tagged::tool_call")]
        tool_call: ToolCall,
    },
    /// The reply finished; `reason` is `stop`, `length` or `toolUse`.
    Done {
        /// Why the model stopped.
        reason: StopReason,
        /// The complete message (boxed: it is far larger than every other event, and each
        /// move of an event would otherwise copy it).
        #[serde(with = "tagged::assistant")]
        message: Box<AssistantMessage>,
    },
    /// The call failed or was aborted; `reason` is `error` or `aborted`. `error` is the
    /// message with the partial content produced so far and `errorMessage`.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// The failed message (boxed, like `done`'s).
        #[serde(with = "tagged::assistant")]
        error: Box<AssistantMessage>,
    },
}

impl AssistantMessageEvent {
    /// The wire name of the event type (`"text_delta"`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            AssistantMessageEvent::Start => "start",
            AssistantMessageEvent::TextStart { .. } => "text_start",
            AssistantMessageEvent::TextDelta { .. } => "text_delta",
            AssistantMessageEvent::TextEnd { .. } => "text_end",
            AssistantMessageEvent::ThinkingStart { .. } => "thinking_start",
            AssistantMessageEvent::ThinkingDelta { .. } => "thinking_delta",
            AssistantMessageEvent::ThinkingEnd { .. } => "thinking_end",
            AssistantMessageEvent::ToolcallStart { .. } => "toolcall_start",
            AssistantMessageEvent::ToolcallDelta { .. } => "toolcall_delta",
            AssistantMessageEvent::ToolcallEnd { .. } => "toolcall_end",
            AssistantMessageEvent::Done { .. } => "done",
            AssistantMessageEvent::Error { .. } => "error",
        }
    }

    /// The content index the event refers to, for block events.
    pub fn content_index(&self) -> Option<usize> {
        match self {
            AssistantMessageEvent::TextStart { content_index }
            | AssistantMessageEvent::TextDelta { content_index, .. }
            | AssistantMessageEvent::TextEnd { content_index, .. }
            | AssistantMessageEvent::ThinkingStart { content_index }
            | AssistantMessageEvent::ThinkingDelta { content_index, .. }
            | AssistantMessageEvent::ThinkingEnd { content_index, .. }
            | AssistantMessageEvent::ToolcallStart { content_index, .. }
            | AssistantMessageEvent::ToolcallDelta { content_index, .. }
            | AssistantMessageEvent::ToolcallEnd { content_index, .. } => Some(*content_index),
            _ => None,
        }
    }

    /// True for `done` and `error`, the events that end a stream.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
        )
    }

    /// The final message carried by `done` or `error`.
    pub fn final_message(&self) -> Option<&AssistantMessage> {
        match self {
            AssistantMessageEvent::Done { message, .. } => Some(message),
            AssistantMessageEvent::Error { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// pi writes the tool call of `toolcall_end` with its `"type":"toolCall"` and the message of
/// `done`/`error` with its `"role":"assistant"`; these add the tag without copying the value,
/// and accept it (or its absence) when reading.
mod tagged {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    fn untag<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(
        d: D,
        tag: &str,
    ) -> Result<T, D::Error> {
        let mut value = Value::deserialize(d)?;
        if let Value::Object(map) = &mut value {
            map.remove(tag);
        }
        serde_json::from_value(value).map_err(D::Error::custom)
    }

    pub(super) mod tool_call {
        use super::*;
        use crate::llm::message::ToolCall;

        #[derive(Serialize)]
        #[serde(tag = "type")]
        enum Tagged<'a> {
            #[serde(rename = "toolCall")]
            ToolCall(&'a ToolCall),
        }

        pub(crate) fn serialize<S: Serializer>(call: &ToolCall, s: S) -> Result<S::Ok, S::Error> {
            Tagged::ToolCall(call).serialize(s)
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ToolCall, D::Error> {
            untag(d, "type")
        }
    }

    pub(super) mod assistant {
        use super::*;
        use crate::llm::message::AssistantMessage;

        #[derive(Serialize)]
        #[serde(tag = "role")]
        enum Tagged<'a> {
            #[serde(rename = "assistant")]
            Assistant(&'a AssistantMessage),
        }

        pub(crate) fn serialize<S: Serializer>(
            message: &AssistantMessage,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            Tagged::Assistant(message).serialize(s)
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Box<AssistantMessage>, D::Error> {
            untag(d, "role")
        }
    }
}

/// The message being streamed, rebuilt from events.
///
/// Apply each event in order with [`apply`](Self::apply); [`message`](Self::message) is then
/// the reply as it stands. The work per event is proportional to the event, not to the
/// message: text is appended in place, and tool-call arguments are parsed incrementally, so
/// they are always a JSON object holding what has arrived so far.
///
/// Content comes from the events. Metadata a provider reports only at the end (usage,
/// signatures, the response id) appears when `done` or `error` arrives, whose message
/// replaces the partial one.
///
/// ```
/// use pi_engine::llm::{AssistantMessage, AssistantMessageEvent as E, PartialMessage};
///
/// let mut p = PartialMessage::new(AssistantMessage::new("faux", "faux", "faux-1"));
/// p.apply(&E::Start);
/// p.apply(&E::ToolcallStart { content_index: 0, id: "c1".into(), tool_name: "write".into() });
/// p.apply(&E::ToolcallDelta { content_index: 0, delta: r#"{"path":"a.txt","content":"hel"#.into() });
/// let call = p.message().tool_calls().next().unwrap();
/// assert_eq!(call.name, "write");
/// assert_eq!(call.arguments["content"], "hel");
/// ```
#[derive(Debug, Clone)]
pub struct PartialMessage {
    message: AssistantMessage,
    /// One parser per tool-call block still streaming, by content index.
    parsers: Vec<Option<PartialJsonParser>>,
}

impl PartialMessage {
    /// Starts from `message` (usually empty, carrying api, provider and model).
    pub fn new(message: AssistantMessage) -> Self {
        PartialMessage {
            message,
            parsers: Vec::new(),
        }
    }

    /// The message as it stands.
    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }

    /// Mutable access, for producers that record metadata (usage, signatures) as it arrives.
    pub fn message_mut(&mut self) -> &mut AssistantMessage {
        &mut self.message
    }

    /// The message, consuming the builder.
    pub fn into_message(self) -> AssistantMessage {
        self.message
    }

    /// The raw JSON argument text received so far for the tool call at `index`.
    pub fn tool_arguments_text(&self, index: usize) -> Option<&str> {
        self.parsers
            .get(index)
            .and_then(|p| p.as_ref())
            .map(|p| p.buffer())
    }

    /// Folds one event into the message.
    pub fn apply(&mut self, event: &AssistantMessageEvent) {
        use AssistantMessageEvent as E;
        match event {
            E::Start => {}
            E::TextStart { content_index } => {
                self.put_block(*content_index, AssistantContent::Text(TextContent::new("")));
            }
            E::TextDelta {
                content_index,
                delta,
            } => match self.message.content.get_mut(*content_index) {
                Some(AssistantContent::Text(t)) => t.text.push_str(delta),
                _ => self.put_block(*content_index, AssistantContent::text(delta.clone())),
            },
            E::TextEnd {
                content_index,
                content,
            } => match self.message.content.get_mut(*content_index) {
                Some(AssistantContent::Text(t)) => {
                    if t.text != *content {
                        t.text.clone_from(content);
                    }
                }
                _ => self.put_block(*content_index, AssistantContent::text(content.clone())),
            },
            E::ThinkingStart { content_index } => {
                self.put_block(
                    *content_index,
                    AssistantContent::Thinking(ThinkingContent::new("")),
                );
            }
            E::ThinkingDelta {
                content_index,
                delta,
            } => match self.message.content.get_mut(*content_index) {
                Some(AssistantContent::Thinking(t)) => t.thinking.push_str(delta),
                _ => self.put_block(*content_index, AssistantContent::thinking(delta.clone())),
            },
            E::ThinkingEnd {
                content_index,
                content,
            } => match self.message.content.get_mut(*content_index) {
                Some(AssistantContent::Thinking(t)) => {
                    if t.thinking != *content {
                        t.thinking.clone_from(content);
                    }
                }
                _ => self.put_block(*content_index, AssistantContent::thinking(content.clone())),
            },
            E::ToolcallStart {
                content_index,
                id,
                tool_name,
            } => {
                let call = ToolCall::new(id.clone(), tool_name.clone(), Value::Object(Map::new()));
                self.put_block(*content_index, AssistantContent::ToolCall(call));
                self.set_parser(*content_index, Some(PartialJsonParser::new()));
            }
            E::ToolcallDelta {
                content_index,
                delta,
            } => {
                let index = *content_index;
                if !matches!(
                    self.message.content.get(index),
                    Some(AssistantContent::ToolCall(_))
                ) {
                    let call = ToolCall::new("", "", Value::Object(Map::new()));
                    self.put_block(index, AssistantContent::ToolCall(call));
                    self.set_parser(index, Some(PartialJsonParser::new()));
                }
                if self.parsers.get(index).is_none_or(Option::is_none) {
                    self.set_parser(index, Some(PartialJsonParser::new()));
                }
                if let (Some(Some(parser)), Some(AssistantContent::ToolCall(call))) = (
                    self.parsers.get_mut(index),
                    self.message.content.get_mut(index),
                ) {
                    parser.push(delta, &mut call.arguments);
                }
            }
            E::ToolcallEnd {
                content_index,
                tool_call,
            } => {
                // The arguments parsed from the deltas usually are the final ones already.
                let done = matches!(
                    self.message.content.get(*content_index),
                    Some(AssistantContent::ToolCall(mine)) if identical_tool_calls(mine, tool_call)
                );
                if !done {
                    self.put_block(
                        *content_index,
                        AssistantContent::ToolCall(tool_call.clone()),
                    );
                }
                self.set_parser(*content_index, None);
            }
            E::Done { message, .. } | E::Error { error: message, .. } => {
                self.message.assign_from(message);
                self.parsers.clear();
            }
        }
    }

    fn put_block(&mut self, index: usize, block: AssistantContent) {
        let content = &mut self.message.content;
        if index < content.len() {
            content[index] = block;
        } else {
            // Providers use consecutive indices; a gap is filled by appending.
            content.push(block);
        }
    }

    fn set_parser(&mut self, index: usize, parser: Option<PartialJsonParser>) {
        if self.parsers.len() <= index {
            if parser.is_none() {
                return;
            }
            self.parsers.resize_with(index + 1, || None);
        }
        self.parsers[index] = parser;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_names_match_pi() {
        let cases = [
            (AssistantMessageEvent::Start, json!({"type": "start"})),
            (
                AssistantMessageEvent::ToolcallStart {
                    content_index: 2,
                    id: String::new(),
                    tool_name: String::new(),
                },
                json!({"type": "toolcall_start", "contentIndex": 2}),
            ),
            (
                AssistantMessageEvent::ThinkingEnd {
                    content_index: 0,
                    content: "x".into(),
                },
                json!({"type": "thinking_end", "contentIndex": 0, "content": "x"}),
            ),
        ];
        for (ev, want) in cases {
            assert_eq!(serde_json::to_value(&ev).unwrap(), want);
        }
    }

    #[test]
    fn the_fold_replaces_an_unknown_block_and_keeps_one_the_final_message_carries() {
        use AssistantMessageEvent as E;
        let unknown: AssistantContent =
            serde_json::from_value(json!({"type": "citation", "q": 1})).unwrap();
        let start = AssistantMessage::new("a", "p", "m")
            .with_content(vec![unknown.clone(), unknown.clone()]);
        let mut p = PartialMessage::new(start);
        // A delta aimed at an unknown block replaces it, as for any block of another kind.
        p.apply(&E::TextDelta {
            content_index: 0,
            delta: "x".into(),
        });
        p.apply(&E::ToolcallDelta {
            content_index: 1,
            delta: "{}".into(),
        });
        assert_eq!(p.message().text(), "x");
        let done = AssistantMessage::new("a", "p", "m")
            .with_content(vec![AssistantContent::text("x"), unknown.clone()]);
        p.apply(&E::Done {
            reason: StopReason::from_wire("pauseTurn"),
            message: Box::new(done.clone()),
        });
        assert_eq!(p.message(), &done);
        assert_eq!(
            serde_json::to_value(p.message()).unwrap()["content"][1],
            json!({"type": "citation", "q": 1})
        );
    }

    #[test]
    fn final_message_reuses_streamed_blocks() {
        use AssistantMessageEvent as E;
        let mut p = PartialMessage::new(AssistantMessage::new("a", "p", "m"));
        p.apply(&E::TextStart { content_index: 0 });
        p.apply(&E::TextDelta {
            content_index: 0,
            delta: "long reply".into(),
        });
        let AssistantContent::Text(t) = &p.message().content[0] else {
            panic!()
        };
        let before = t.text.as_ptr();
        let mut done = p.message().clone().with_response_id("r1");
        done.content.push(AssistantContent::text("more"));
        p.apply(&E::Done {
            reason: StopReason::Stop,
            message: Box::new(done.clone()),
        });
        assert_eq!(p.message(), &done);
        assert_eq!(p.message().response_id.as_deref(), Some("r1"));
        let AssistantContent::Text(t) = &p.message().content[0] else {
            panic!()
        };
        assert_eq!(t.text.as_ptr(), before, "the equal block was not copied");
        // Signatures added at the end (Responses, Anthropic) do not copy the text either.
        let mut signed = done.clone();
        let mut thinking = crate::llm::message::ThinkingContent::new("plan");
        thinking.thinking_signature = Some("sig".into());
        thinking.redacted = Some(true);
        signed.content.push(AssistantContent::Thinking(thinking));
        p.apply(&E::Done {
            reason: StopReason::Stop,
            message: Box::new(signed.clone()),
        });
        let thinking_before = match &p.message().content[2] {
            AssistantContent::Thinking(t) => t.thinking.as_ptr(),
            _ => panic!(),
        };
        let AssistantContent::Text(t) = &mut signed.content[0] else {
            panic!()
        };
        t.text_signature = Some("{\"v\":1}".into());
        t.extra.insert("x".into(), json!(1));
        let AssistantContent::Thinking(t) = &mut signed.content[2] else {
            panic!()
        };
        t.thinking_signature = Some("sig2".into());
        t.redacted = None;
        p.apply(&E::Done {
            reason: StopReason::Stop,
            message: Box::new(signed.clone()),
        });
        assert_eq!(p.message(), &signed);
        let (AssistantContent::Text(t), AssistantContent::Thinking(th)) =
            (&p.message().content[0], &p.message().content[2])
        else {
            panic!()
        };
        assert_eq!(t.text.as_ptr(), before, "the signed text was not copied");
        assert_eq!(th.thinking.as_ptr(), thinking_before);
        // A final message with less or different content replaces it.
        let shorter =
            AssistantMessage::new("a", "p", "m").with_content(vec![AssistantContent::text("x")]);
        p.apply(&E::Error {
            reason: StopReason::Error,
            error: Box::new(shorter.clone()),
        });
        assert_eq!(p.message(), &shorter);
    }

    #[test]
    fn terminal_events_carry_pi_tags() {
        let call = ToolCall::new("c", "read", json!({"path": "a"}));
        let ev = AssistantMessageEvent::ToolcallEnd {
            content_index: 0,
            tool_call: call,
        };
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(v["toolCall"]["type"], "toolCall");
        let back: AssistantMessageEvent = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), v);
        let ev = AssistantMessageEvent::Done {
            reason: StopReason::Stop,
            message: Box::new(AssistantMessage::new("a", "p", "m")),
        };
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(v["message"]["role"], "assistant");
        let back: AssistantMessageEvent = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), v);
    }

    #[test]
    fn pi_events_with_partial_deserialize() {
        let ev: AssistantMessageEvent = serde_json::from_value(json!({
            "type": "toolcall_end", "contentIndex": 1,
            "toolCall": {"type": "toolCall", "id": "a", "name": "b", "arguments": {"x": 1}},
            "partial": {"role": "assistant"}
        }))
        .unwrap();
        let AssistantMessageEvent::ToolcallEnd { tool_call, .. } = ev else {
            panic!()
        };
        assert_eq!(tool_call.arguments["x"], 1);
    }

    #[test]
    fn partial_message_follows_events() {
        use AssistantMessageEvent as E;
        let mut p = PartialMessage::new(AssistantMessage::new("a", "p", "m"));
        for ev in [
            E::Start,
            E::ThinkingStart { content_index: 0 },
            E::ThinkingDelta {
                content_index: 0,
                delta: "hm".into(),
            },
            E::ThinkingEnd {
                content_index: 0,
                content: "hm".into(),
            },
            E::TextStart { content_index: 1 },
            E::TextDelta {
                content_index: 1,
                delta: "Hel".into(),
            },
            E::TextDelta {
                content_index: 1,
                delta: "lo".into(),
            },
        ] {
            p.apply(&ev);
        }
        assert_eq!(p.message().text(), "Hello");
        p.apply(&E::ToolcallStart {
            content_index: 2,
            id: "c".into(),
            tool_name: "t".into(),
        });
        p.apply(&E::ToolcallDelta {
            content_index: 2,
            delta: r#"{"a": [1, 2"#.into(),
        });
        assert_eq!(
            Value::Object(p.message().tool_calls().next().unwrap().arguments.clone()),
            json!({"a": [1, 2]})
        );
        assert_eq!(p.tool_arguments_text(2), Some(r#"{"a": [1, 2"#));
    }
}
