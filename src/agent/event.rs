//! [`AgentEvent`]: what an agent run reports, in pi-agent-core 0.73.1's order and JSON shape.
//!
//! A run is `agent_start`, then turns. A turn is `turn_start`, the messages injected before the
//! model call (`message_start` + `message_end` each), the assistant reply (`message_start`,
//! `message_update` per streamed event, `message_end`), the tool calls
//! (`tool_execution_start`, `tool_execution_update`s, `tool_execution_end`, then a
//! `message_start` + `message_end` per tool result) and `turn_end`. The run ends with
//! `agent_end`, carrying every message the run added.
//!
//! Unlike pi, `message_update` carries only the [`AssistantMessageEvent`], not a copy of the
//! message being streamed: copying the message into every event makes a streamed reply
//! quadratic. The message as it stands is kept instead by whoever folds the events — an
//! [`Agent`](crate::agent::Agent) (`Agent::with_streaming_message`) or an
//! [`AgentEventStream`](crate::agent::AgentEventStream)
//! (`streaming_message()`); fold events yourself with [`AgentLoopState`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::agent::message::AgentMessage;
use crate::agent::tool::AgentToolResult;
use crate::llm::event::{AssistantMessageEvent, PartialMessage};
use crate::llm::event_stream::{EventStream, StreamEvent};
use crate::llm::message::{AssistantMessage, Message, ToolResultMessage};

/// One event of an agent run.
///
/// Serialized, an event is pi's JSON (`{"type":"turn_end","message":{…},"toolResults":[…]}`),
/// except that `message_update` has no `message` field.
///
/// ```
/// use pi_engine::agent::AgentEvent;
///
/// let ev: AgentEvent = serde_json::from_str(
///     r#"{"type":"tool_execution_start","toolCallId":"c1","toolName":"read","args":{"path":"a"}}"#,
/// ).unwrap();
/// assert!(matches!(&ev, AgentEvent::ToolExecutionStart { tool_name, .. } if tool_name == "read"));
/// assert_eq!(ev.kind(), "tool_execution_start");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum AgentEvent {
    /// The run started.
    AgentStart,
    /// The run ended; no event follows.
    AgentEnd {
        /// Every message the run added (for a prompt, the prompt messages included).
        messages: Vec<AgentMessage>,
    },
    /// A turn (one model call and its tool calls) started.
    TurnStart,
    /// A turn ended.
    TurnEnd {
        /// The turn's assistant message.
        #[serde(with = "assistant_with_role")]
        message: AssistantMessage,
        /// The results of its tool calls, in the order of the calls.
        tool_results: Vec<ToolResultMessage>,
    },
    /// A message started: a prompt, an injected message, the assistant reply (empty when
    /// streaming begins) or a tool result.
    MessageStart {
        /// The message (for a streamed reply, as it stood at the start).
        message: AgentMessage,
    },
    /// The assistant reply being streamed changed.
    MessageUpdate {
        /// What changed.
        assistant_message_event: AssistantMessageEvent,
    },
    /// A message is complete and part of the conversation.
    MessageEnd {
        /// The complete message.
        message: AgentMessage,
    },
    /// A tool call is about to be prepared and run.
    ToolExecutionStart {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The arguments as the model sent them (before validation).
        args: Map<String, Value>,
    },
    /// A running tool reported a partial result.
    ToolExecutionUpdate {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The arguments as the model sent them.
        args: Map<String, Value>,
        /// The partial result.
        partial_result: AgentToolResult,
    },
    /// A tool call finished (in parallel mode, in the order the calls finish).
    ToolExecutionEnd {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The result.
        result: AgentToolResult,
        /// True when the call failed (unknown tool, invalid arguments, blocked, error, panic).
        is_error: bool,
    },
}

impl AgentEvent {
    /// The wire name of the event type (`"turn_end"`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
        }
    }

    /// The message of a `message_start` or `message_end` event.
    pub fn message(&self) -> Option<&AgentMessage> {
        match self {
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                Some(message)
            }
            _ => None,
        }
    }

    /// The text delta of a `message_update` carrying a `text_delta`.
    pub fn text_delta(&self) -> Option<&str> {
        match self {
            AgentEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. },
            } => Some(delta),
            _ => None,
        }
    }
}

/// An assistant message serialized with its `role`, as pi writes `turn_end.message`.
mod assistant_with_role {
    use super::*;

    // An `AssistantMessage` writes its own `role` (as pi's messages do): nothing to add.
    pub(super) fn serialize<S: Serializer>(m: &AssistantMessage, s: S) -> Result<S::Ok, S::Error> {
        m.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<AssistantMessage, D::Error> {
        match Message::deserialize(d)? {
            Message::Assistant(m) => Ok(m),
            other => Err(serde::de::Error::custom(format!(
                "turn_end carries an assistant message, not {}",
                other.role()
            ))),
        }
    }
}

/// The state folded from the events of a run: the assistant message being streamed, and at
/// the end the run's messages. Apply events with [`apply`](Self::apply).
#[derive(Debug, Clone, Default)]
pub struct AgentLoopState {
    streaming: Option<PartialMessage>,
    messages: Option<Vec<AgentMessage>>,
}

impl AgentLoopState {
    /// An empty state.
    pub fn new() -> Self {
        AgentLoopState::default()
    }

    /// Folds one event in. Work is proportional to the event (a `message_update` appends its
    /// delta), except `agent_end`, whose messages are copied.
    pub fn apply(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart {
                message: AgentMessage::Assistant(m),
            } => self.streaming = Some(PartialMessage::new(m.clone())),
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => {
                if let Some(p) = &mut self.streaming {
                    p.apply(assistant_message_event);
                }
            }
            AgentEvent::MessageEnd { .. } => self.streaming = None,
            AgentEvent::AgentEnd { messages } => {
                self.streaming = None;
                self.messages = Some(messages.clone());
            }
            _ => {}
        }
    }

    /// The assistant message being streamed, as it stands.
    pub fn streaming_message(&self) -> Option<&AssistantMessage> {
        self.streaming.as_ref().map(PartialMessage::message)
    }

    /// The run's messages, once `agent_end` has been applied.
    pub fn messages(&self) -> Option<&[AgentMessage]> {
        self.messages.as_deref()
    }
}

impl StreamEvent<Vec<AgentMessage>> for AgentEvent {
    type State = AgentLoopState;

    fn observe(&self, state: &mut AgentLoopState) {
        state.apply(self);
    }

    fn is_terminal(&self) -> bool {
        matches!(self, AgentEvent::AgentEnd { .. })
    }

    fn finish(state: AgentLoopState, _terminated: bool) -> Vec<AgentMessage> {
        state.messages.unwrap_or_default()
    }
}

/// The events of one agent run, ending in the messages it added: what
/// [`agent_loop`](crate::agent::agent_loop) returns.
pub type AgentEventStream = EventStream<AgentEvent, Vec<AgentMessage>>;

impl EventStream<AgentEvent, Vec<AgentMessage>> {
    /// The assistant message being streamed, as it stands after the events yielded so far.
    /// Borrowed, never copied.
    pub fn streaming_message(&self) -> Option<&AssistantMessage> {
        self.state().streaming_message()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shapes() {
        let msg = AssistantMessage::new("a", "p", "m").with_timestamp(1);
        let turn_end = AgentEvent::TurnEnd {
            message: msg.clone(),
            tool_results: vec![],
        };
        let v = serde_json::to_value(&turn_end).unwrap();
        assert_eq!(v["type"], "turn_end");
        assert_eq!(v["message"]["role"], "assistant");
        // `role` once: a `Value` keeps only the last of two equal keys, the text shows both.
        let text = serde_json::to_string(&turn_end).unwrap();
        assert_eq!(text.matches("\"role\"").count(), 1, "{text}");
        assert_eq!(v["toolResults"], json!([]));
        let back: AgentEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back, turn_end);

        let end = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c".into(),
            tool_name: "t".into(),
            result: AgentToolResult::text("x"),
            is_error: true,
        };
        assert_eq!(
            serde_json::to_value(&end).unwrap(),
            json!({"type": "tool_execution_end", "toolCallId": "c", "toolName": "t",
                   "result": {"content": [{"type": "text", "text": "x"}], "details": {}},
                   "isError": true})
        );
        let update = AgentEvent::MessageUpdate {
            assistant_message_event: AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "hi".into(),
            },
        };
        assert_eq!(
            serde_json::to_value(&update).unwrap(),
            json!({"type": "message_update",
                   "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": "hi"}})
        );
        assert_eq!(update.text_delta(), Some("hi"));
    }

    #[test]
    fn pi_message_update_with_message_deserializes() {
        let ev: AgentEvent = serde_json::from_value(json!({
            "type": "message_update",
            "message": {"role": "assistant", "content": []},
            "assistantMessageEvent": {"type": "text_start", "contentIndex": 0}
        }))
        .unwrap();
        assert_eq!(ev.kind(), "message_update");
    }

    #[test]
    fn state_folds_streaming_message() {
        let mut s = AgentLoopState::new();
        s.apply(&AgentEvent::MessageStart {
            message: AssistantMessage::new("a", "p", "m").into(),
        });
        for ev in [
            AssistantMessageEvent::TextStart { content_index: 0 },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "Hel".into(),
            },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "lo".into(),
            },
        ] {
            s.apply(&AgentEvent::MessageUpdate {
                assistant_message_event: ev,
            });
        }
        assert_eq!(s.streaming_message().unwrap().text(), "Hello");
        s.apply(&AgentEvent::AgentEnd { messages: vec![] });
        assert!(s.streaming_message().is_none());
        assert_eq!(s.messages(), Some(&[][..]));
    }
}
