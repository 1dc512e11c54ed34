//! What a session's events and messages look like to an ACP client: `session/update`
//! notifications (message and thought chunks, tool calls and their updates).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1 as acp;
use serde_json::{Map, Value};

use crate::agent::{AgentEvent, AgentMessage, AgentToolResult};
use crate::agent_session::AgentSessionEvent;
use crate::llm::event::AssistantMessageEvent;
use crate::llm::message::{AssistantContent, Content, ToolCall, UserContent};

/// Turns one session's events into updates; remembers the tool calls the client was told
/// of (and their arguments: an update replaces a call's content, so its last one repeats
/// the diff), so each is announced once and then only updated.
pub(super) struct Translator {
    cwd: PathBuf,
    announced: HashMap<String, Map<String, Value>>,
}

impl Translator {
    pub(super) fn new(cwd: impl Into<PathBuf>) -> Self {
        Translator {
            cwd: cwd.into(),
            announced: HashMap::new(),
        }
    }

    /// The updates one event makes (most make none).
    pub(super) fn updates(&mut self, event: &AgentSessionEvent) -> Vec<acp::SessionUpdate> {
        let AgentSessionEvent::Agent(event) = event else {
            return Vec::new();
        };
        match event {
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => match assistant_message_event {
                AssistantMessageEvent::TextDelta { delta, .. } if !delta.is_empty() => {
                    vec![acp::SessionUpdate::AgentMessageChunk(text_chunk(delta))]
                }
                AssistantMessageEvent::ThinkingDelta { delta, .. } if !delta.is_empty() => {
                    vec![acp::SessionUpdate::AgentThoughtChunk(text_chunk(delta))]
                }
                // The call is complete: the client sees it (pending) before it runs or is
                // put to the person for approval.
                AssistantMessageEvent::ToolcallEnd { tool_call, .. } => {
                    vec![self.announce(tool_call, acp::ToolCallStatus::Pending)]
                }
                _ => Vec::new(),
            },
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                if self.announced.contains_key(tool_call_id) {
                    vec![acp::SessionUpdate::ToolCallUpdate(
                        acp::ToolCallUpdate::new(
                            tool_call_id.clone(),
                            acp::ToolCallUpdateFields::new()
                                .status(acp::ToolCallStatus::InProgress),
                        ),
                    )]
                } else {
                    let call = ToolCall::new(
                        tool_call_id.clone(),
                        tool_name.clone(),
                        Value::Object(args.clone()),
                    );
                    vec![self.announce(&call, acp::ToolCallStatus::InProgress)]
                }
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => vec![acp::SessionUpdate::ToolCallUpdate(
                acp::ToolCallUpdate::new(
                    tool_call_id.clone(),
                    acp::ToolCallUpdateFields::new()
                        .content(text_contents(&partial_result.content)),
                ),
            )],
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
            } => {
                let args = self.announced.remove(tool_call_id);
                vec![acp::SessionUpdate::ToolCallUpdate(finished(
                    tool_call_id,
                    tool_name,
                    args.as_ref(),
                    result,
                    *is_error,
                    &self.cwd,
                ))]
            }
            _ => Vec::new(),
        }
    }

    fn announce(&mut self, call: &ToolCall, status: acp::ToolCallStatus) -> acp::SessionUpdate {
        self.announced
            .insert(call.id.clone(), call.arguments.clone());
        acp::SessionUpdate::ToolCall(tool_call(call, status, &self.cwd))
    }
}

fn text_chunk(text: &str) -> acp::ContentChunk {
    acp::ContentChunk::new(acp::ContentBlock::Text(acp::TextContent::new(text)))
}

/// A text or image block as ACP's (a block this crate does not know has no counterpart).
fn content_block(content: &Content) -> Option<acp::ContentBlock> {
    match content {
        Content::Text(t) => Some(acp::ContentBlock::Text(acp::TextContent::new(
            t.text.clone(),
        ))),
        Content::Image(i) => Some(acp::ContentBlock::Image(acp::ImageContent::new(
            i.data.clone(),
            i.mime_type.clone(),
        ))),
        _ => None,
    }
}

/// A tool result's blocks as ACP content.
fn text_contents(content: &[Content]) -> Vec<acp::ToolCallContent> {
    content
        .iter()
        .filter_map(content_block)
        .map(|b| acp::ToolCallContent::Content(acp::Content::new(b)))
        .collect()
}

/// What kind of tool a built-in one is, for the client's icon.
pub(super) fn tool_kind(name: &str) -> acp::ToolKind {
    match name {
        "read" | "ls" => acp::ToolKind::Read,
        "edit" | "write" => acp::ToolKind::Edit,
        "bash" => acp::ToolKind::Execute,
        "grep" | "find" => acp::ToolKind::Search,
        _ => acp::ToolKind::Other,
    }
}

fn arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// A short title: what the call does, in the words a person would use.
pub(super) fn title(name: &str, args: &Map<String, Value>) -> String {
    let path = arg(args, "path");
    match (name, path) {
        ("read", Some(p)) => format!("Read {p}"),
        ("write", Some(p)) => format!("Write {p}"),
        ("edit", Some(p)) => format!("Edit {p}"),
        ("ls", p) => format!("List {}", p.unwrap_or(".")),
        ("bash", _) => match arg(args, "command") {
            Some(c) => format!("`{}`", c.replace('`', "\\`")),
            None => "bash".to_owned(),
        },
        ("grep" | "find", _) => match arg(args, "pattern") {
            Some(pattern) => format!(
                "{name} {pattern}{}",
                path.map(|p| format!(" in {p}")).unwrap_or_default()
            ),
            None => name.to_owned(),
        },
        _ => name.to_owned(),
    }
}

fn locations(name: &str, args: &Map<String, Value>, cwd: &Path) -> Vec<acp::ToolCallLocation> {
    match (name, arg(args, "path")) {
        ("read" | "write" | "edit" | "ls" | "grep" | "find", Some(p)) => {
            let mut location = acp::ToolCallLocation::new(cwd.join(p));
            if name == "read"
                && let Some(line) = args.get("offset").and_then(Value::as_u64)
            {
                location = location.line(u32::try_from(line).ok());
            }
            vec![location]
        }
        _ => Vec::new(),
    }
}

/// The file changes of a `write` or `edit` call, as structured diffs.
fn diffs(name: &str, args: &Map<String, Value>, cwd: &Path) -> Vec<acp::ToolCallContent> {
    let Some(path) = arg(args, "path").map(|p| cwd.join(p)) else {
        return Vec::new();
    };
    let diff = |old: Option<&str>, new: &str| {
        acp::ToolCallContent::Diff(
            acp::Diff::new(path.clone(), new).old_text(old.map(str::to_owned)),
        )
    };
    match name {
        "write" => arg(args, "content")
            .map(|content| vec![diff(None, content)])
            .unwrap_or_default(),
        "edit" => {
            let pairs: Vec<(&str, &str)> = match args.get("edits").and_then(Value::as_array) {
                Some(edits) => edits
                    .iter()
                    .filter_map(|e| {
                        Some((e.get("oldText")?.as_str()?, e.get("newText")?.as_str()?))
                    })
                    .collect(),
                // The older single-edit form.
                None => arg(args, "oldText")
                    .zip(arg(args, "newText"))
                    .into_iter()
                    .collect(),
            };
            pairs
                .into_iter()
                .map(|(old, new)| diff(Some(old), new))
                .collect()
        }
        _ => Vec::new(),
    }
}

pub(super) fn tool_call(call: &ToolCall, status: acp::ToolCallStatus, cwd: &Path) -> acp::ToolCall {
    acp::ToolCall::new(call.id.clone(), title(&call.name, &call.arguments))
        .kind(tool_kind(&call.name))
        .status(status)
        .locations(locations(&call.name, &call.arguments, cwd))
        .content(diffs(&call.name, &call.arguments, cwd))
        .raw_input(Value::Object(call.arguments.clone()))
}

/// The update that ends a call: its status and its result (for a file change that went
/// through, the change as a diff, then the result's text).
fn finished(
    id: &str,
    name: &str,
    args: Option<&Map<String, Value>>,
    result: &AgentToolResult,
    is_error: bool,
    cwd: &Path,
) -> acp::ToolCallUpdate {
    let mut content = match args {
        Some(args) if !is_error => diffs(name, args, cwd),
        _ => Vec::new(),
    };
    content.extend(text_contents(&result.content));
    let status = if is_error {
        acp::ToolCallStatus::Failed
    } else {
        acp::ToolCallStatus::Completed
    };
    let raw = serde_json::to_value(result).ok();
    acp::ToolCallUpdate::new(
        id.to_owned(),
        acp::ToolCallUpdateFields::new()
            .status(status)
            .content(content)
            .raw_output(raw),
    )
}

/// A stored conversation as updates, for `session/load`: the client rebuilds the thread
/// from them.
pub(super) fn replay(messages: &[AgentMessage], cwd: &Path) -> Vec<acp::SessionUpdate> {
    let mut out = Vec::new();
    let mut calls: std::collections::HashMap<&str, &ToolCall> = std::collections::HashMap::new();
    for message in messages {
        match message {
            AgentMessage::User(user) => {
                let blocks: Vec<acp::ContentBlock> = match &user.content {
                    UserContent::Text(text) => {
                        vec![acp::ContentBlock::Text(acp::TextContent::new(text.clone()))]
                    }
                    UserContent::Blocks(blocks) => {
                        blocks.iter().filter_map(content_block).collect()
                    }
                };
                out.extend(
                    blocks
                        .into_iter()
                        .map(|b| acp::SessionUpdate::UserMessageChunk(acp::ContentChunk::new(b))),
                );
            }
            AgentMessage::Assistant(assistant) => {
                for block in &assistant.content {
                    match block {
                        AssistantContent::Text(t) if !t.text.is_empty() => {
                            out.push(acp::SessionUpdate::AgentMessageChunk(text_chunk(&t.text)));
                        }
                        AssistantContent::Thinking(t) if !t.thinking.is_empty() => {
                            out.push(acp::SessionUpdate::AgentThoughtChunk(text_chunk(
                                &t.thinking,
                            )));
                        }
                        AssistantContent::ToolCall(call) => {
                            calls.insert(&call.id, call);
                            out.push(acp::SessionUpdate::ToolCall(tool_call(
                                call,
                                acp::ToolCallStatus::Pending,
                                cwd,
                            )));
                        }
                        _ => {}
                    }
                }
            }
            AgentMessage::ToolResult(result) => {
                let call = calls.get(result.tool_call_id.as_str());
                let as_result = AgentToolResult {
                    content: result.content.clone(),
                    details: result.details.clone().unwrap_or(Value::Null),
                    terminate: None,
                };
                out.push(acp::SessionUpdate::ToolCallUpdate(finished(
                    &result.tool_call_id,
                    &result.tool_name,
                    call.map(|c| &c.arguments),
                    &as_result,
                    result.is_error,
                    cwd,
                )));
            }
            _ => {}
        }
    }
    out
}
