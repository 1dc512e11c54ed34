//! The protocol's JSON: the registration, each event's payload (pi's shapes) and each
//! answer read back into the crate's types.

use std::collections::HashSet;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::super::command::Completion;
use super::super::events::{
    BeforeAgentStart, BeforeAgentStartEvent, BranchSummaryText, Cancel, CompactDecision,
    ContextEvent, InputAction, InputEvent, MessageEndEvent, ModelSelectEvent, ModelSelectSource,
    ProviderRequestEvent, ProviderResponseEvent, Resources, ResourcesDiscoverEvent,
    ResourcesReason, SessionBeforeCompactEvent, SessionBeforeForkEvent, SessionBeforeSwitchEvent,
    SessionBeforeTreeEvent, SessionCompactEvent, SessionShutdownEvent, SessionStartEvent,
    SessionTreeEvent, ThinkingLevelSelectEvent, ToolCallEvent, ToolCallVerdict, ToolResultEvent,
    ToolResultPatch, TreeDecision,
};
#[cfg(feature = "tools")]
use super::super::events::{UserBashAction, UserBashEvent};
use super::super::flag::{Flag, FlagValue};
use super::PROTOCOL_VERSION;
use crate::agent::{AgentMessage, AgentToolResult, ToolExecutionMode};
use crate::agent_session::ForkPosition;
use crate::llm::message::{Content, ImageContent, Tool, now_millis};
use crate::session::ExtensionMessage;
use crate::session::compaction::CompactionResult;

/// The events a child may register whose handlers answer (or observe one by one).
pub(super) const HANDLER_EVENTS: [&str; 20] = [
    "tool_call",
    "tool_result",
    "context",
    "input",
    "before_agent_start",
    "message_end",
    "before_provider_request",
    "after_provider_response",
    "session_start",
    "session_before_switch",
    "session_before_fork",
    "session_before_compact",
    "session_compact",
    "session_before_tree",
    "session_tree",
    "session_shutdown",
    "model_select",
    "thinking_level_select",
    "resources_discover",
    "user_bash",
];

/// The session's events a child may observe (`ExtensionApi::on_event`).
pub(super) const OBSERVED_EVENTS: [&str; 17] = [
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "queue_update",
    "compaction_start",
    "compaction_end",
    "auto_retry_start",
    "auto_retry_end",
    "session_info_changed",
    "thinking_level_changed",
    "extension_action",
];

// ----- registration -------------------------------------------------------------------

/// A tool the child registered.
#[derive(Debug, Clone)]
pub(super) struct ToolSpec {
    pub(super) tool: Tool,
    pub(super) label: Option<String>,
    pub(super) prompt_snippet: Option<String>,
    pub(super) prompt_guidelines: Vec<String>,
    pub(super) execution_mode: Option<ToolExecutionMode>,
}

/// A command the child registered.
#[derive(Debug, Clone)]
pub(super) struct CommandSpec {
    pub(super) name: String,
    pub(super) description: Option<String>,
    pub(super) completions: bool,
}

/// A shortcut the child registered.
#[derive(Debug, Clone)]
pub(super) struct ShortcutSpec {
    pub(super) key: String,
    pub(super) description: Option<String>,
}

/// What the child registered.
#[derive(Debug)]
pub(super) struct Registration {
    pub(super) events: Vec<String>,
    pub(super) tools: Vec<ToolSpec>,
    pub(super) commands: Vec<CommandSpec>,
    pub(super) flags: Vec<Flag>,
    pub(super) shortcuts: Vec<ShortcutSpec>,
}

/// Why a `register` was refused.
#[derive(Debug)]
pub(super) enum RegisterError {
    /// Another protocol version (as sent).
    Version(String),
    /// Something invalid.
    Invalid(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRegister {
    events: Option<Vec<String>>,
    tools: Option<Vec<RawTool>>,
    commands: Option<Vec<RawCommand>>,
    flags: Option<Vec<RawFlag>>,
    shortcuts: Option<Vec<RawShortcut>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTool {
    name: String,
    label: Option<String>,
    description: Option<String>,
    parameters: Option<Value>,
    prompt_snippet: Option<String>,
    prompt_guidelines: Option<Vec<String>>,
    execution_mode: Option<ToolExecutionMode>,
}

#[derive(Deserialize)]
struct RawCommand {
    name: String,
    description: Option<String>,
    completions: Option<bool>,
}

#[derive(Deserialize)]
struct RawFlag {
    name: String,
    description: Option<String>,
    #[serde(rename = "type")]
    kind: String,
    default: Option<Value>,
}

#[derive(Deserialize)]
struct RawShortcut {
    shortcut: String,
    description: Option<String>,
}

impl Registration {
    /// Reads and checks a `register` message.
    pub(super) fn parse(message: &Map<String, Value>) -> Result<Registration, RegisterError> {
        match message.get("protocol") {
            Some(v) if v.as_u64() == Some(PROTOCOL_VERSION) => {}
            Some(v) => return Err(RegisterError::Version(v.to_string())),
            None => return Err(RegisterError::Version("(none given)".into())),
        }
        let raw: RawRegister = serde_json::from_value(Value::Object(message.clone()))
            .map_err(|e| RegisterError::Invalid(e.to_string()))?;
        let invalid = |s: String| RegisterError::Invalid(s);
        let mut events = Vec::new();
        for e in raw.events.unwrap_or_default() {
            if !HANDLER_EVENTS.contains(&e.as_str()) && !OBSERVED_EVENTS.contains(&e.as_str()) {
                return Err(invalid(format!("unknown event {e:?}")));
            }
            if !events.contains(&e) {
                events.push(e);
            }
        }
        let mut names = HashSet::new();
        let mut tools = Vec::new();
        for t in raw.tools.unwrap_or_default() {
            if t.name.is_empty() {
                return Err(invalid("a tool without a name".into()));
            }
            if !names.insert(t.name.clone()) {
                return Err(invalid(format!("two tools named {:?}", t.name)));
            }
            let parameters = match t.parameters {
                Some(p @ Value::Object(_)) => p,
                _ => {
                    return Err(invalid(format!(
                        "tool {:?}: `parameters` must be a JSON Schema object",
                        t.name
                    )));
                }
            };
            tools.push(ToolSpec {
                tool: Tool::new(t.name, t.description.unwrap_or_default(), parameters),
                label: t.label,
                prompt_snippet: t.prompt_snippet,
                prompt_guidelines: t.prompt_guidelines.unwrap_or_default(),
                execution_mode: t.execution_mode,
            });
        }
        let mut commands = Vec::new();
        for c in raw.commands.unwrap_or_default() {
            if c.name.is_empty() {
                return Err(invalid("a command without a name".into()));
            }
            commands.push(CommandSpec {
                name: c.name,
                description: c.description,
                completions: c.completions.unwrap_or(false),
            });
        }
        let mut flags = Vec::new();
        for f in raw.flags.unwrap_or_default() {
            let mut flag = match (f.kind.as_str(), f.default) {
                ("boolean", None | Some(Value::Null)) => Flag::boolean(&f.name),
                ("boolean", Some(Value::Bool(b))) => Flag::boolean(&f.name).with_default(b),
                ("string", None | Some(Value::Null)) => Flag::string(&f.name),
                ("string", Some(Value::String(s))) => Flag::string(&f.name).with_default(s),
                ("boolean" | "string", Some(d)) => {
                    return Err(invalid(format!(
                        "flag {:?}: a default of the wrong type ({d})",
                        f.name
                    )));
                }
                (other, _) => {
                    return Err(invalid(format!(
                        "flag {:?}: type {other:?} (expected \"boolean\" or \"string\")",
                        f.name
                    )));
                }
            };
            if let Some(d) = f.description {
                flag = flag.with_description(d);
            }
            flags.push(flag);
        }
        let shortcuts = raw
            .shortcuts
            .unwrap_or_default()
            .into_iter()
            .map(|s| ShortcutSpec {
                key: s.shortcut,
                description: s.description,
            })
            .collect();
        Ok(Registration {
            events,
            tools,
            commands,
            flags,
            shortcuts,
        })
    }
}

// ----- payloads -----------------------------------------------------------------------

/// Adds `key` when there is a value (pi leaves `undefined` fields out).
fn with(mut v: Value, key: &str, value: Option<Value>) -> Value {
    if let (Value::Object(m), Some(x)) = (&mut v, value) {
        m.insert(key.to_owned(), x);
    }
    v
}

fn path(p: &std::path::Path) -> Value {
    Value::String(p.to_string_lossy().into_owned())
}

fn images(images: &[ImageContent]) -> Option<Value> {
    (!images.is_empty()).then(|| json!(images))
}

pub(super) fn tool_call(e: &ToolCallEvent) -> Value {
    json!({"type": "tool_call", "toolCallId": e.tool_call_id, "toolName": e.tool_name, "input": e.input})
}

pub(super) fn tool_result(e: &ToolResultEvent) -> Value {
    json!({
        "type": "tool_result",
        "toolCallId": e.tool_call_id,
        "toolName": e.tool_name,
        "input": e.input,
        "content": e.content,
        "details": e.details,
        "isError": e.is_error,
    })
}

pub(super) fn context(e: &ContextEvent) -> Value {
    json!({"type": "context", "messages": e.messages})
}

pub(super) fn input(e: &InputEvent) -> Value {
    let v = json!({"type": "input", "text": e.text, "source": e.source.as_str()});
    with(v, "images", images(&e.images))
}

pub(super) fn before_agent_start(e: &BeforeAgentStartEvent) -> Value {
    let v =
        json!({"type": "before_agent_start", "prompt": e.prompt, "systemPrompt": e.system_prompt});
    with(v, "images", images(&e.images))
}

pub(super) fn message_end(e: &MessageEndEvent) -> Value {
    json!({"type": "message_end", "message": e.message})
}

pub(super) fn provider_request(e: &ProviderRequestEvent) -> Value {
    json!({"type": "before_provider_request", "payload": e.payload})
}

pub(super) fn provider_response(e: &ProviderResponseEvent) -> Value {
    json!({"type": "after_provider_response", "status": e.status, "headers": e.headers})
}

pub(super) fn session_start(e: &SessionStartEvent) -> Value {
    let v = json!({"type": "session_start", "reason": e.reason.as_str()});
    with(
        v,
        "previousSessionFile",
        e.previous_session_file.as_deref().map(path),
    )
}

pub(super) fn session_before_switch(e: &SessionBeforeSwitchEvent) -> Value {
    let v = json!({"type": "session_before_switch", "reason": e.reason.as_str()});
    with(
        v,
        "targetSessionFile",
        e.target_session_file.as_deref().map(path),
    )
}

pub(super) fn session_before_fork(e: &SessionBeforeForkEvent) -> Value {
    let position = match e.position {
        ForkPosition::At => "at",
        _ => "before",
    };
    json!({"type": "session_before_fork", "entryId": e.entry_id, "position": position})
}

pub(super) fn session_before_compact(e: &SessionBeforeCompactEvent) -> Value {
    let p = &e.preparation;
    let preparation = json!({
        "firstKeptEntryId": p.first_kept_entry_id,
        "messagesToSummarize": p.messages_to_summarize,
        "turnPrefixMessages": p.turn_prefix_messages,
        "isSplitTurn": p.is_split_turn,
        "tokensBefore": p.tokens_before,
        // pi's `Set`s, as arrays.
        "fileOps": {
            "read": p.file_ops.read,
            "written": p.file_ops.written,
            "edited": p.file_ops.edited,
        },
        "settings": p.settings,
    });
    let preparation = with(
        preparation,
        "previousSummary",
        p.previous_summary.clone().map(Value::String),
    );
    let v = json!({
        "type": "session_before_compact",
        "preparation": preparation,
        "branchEntries": e.branch_entries,
    });
    with(
        v,
        "customInstructions",
        e.custom_instructions.clone().map(Value::String),
    )
}

pub(super) fn session_compact(e: &SessionCompactEvent) -> Value {
    json!({
        "type": "session_compact",
        "compactionEntry": e.compaction_entry,
        "fromExtension": e.from_extension,
    })
}

pub(super) fn session_before_tree(e: &SessionBeforeTreeEvent) -> Value {
    let p = &e.preparation;
    let mut preparation = json!({
        "targetId": p.target_id,
        "oldLeafId": p.old_leaf_id,
        "commonAncestorId": p.common_ancestor_id,
        "entriesToSummarize": p.entries_to_summarize,
        "userWantsSummary": p.user_wants_summary,
        "replaceInstructions": p.replace_instructions,
    });
    preparation = with(
        preparation,
        "customInstructions",
        p.custom_instructions.clone().map(Value::String),
    );
    preparation = with(preparation, "label", p.label.clone().map(Value::String));
    json!({"type": "session_before_tree", "preparation": preparation})
}

pub(super) fn session_tree(e: &SessionTreeEvent) -> Value {
    let v = json!({"type": "session_tree", "newLeafId": e.new_leaf_id, "oldLeafId": e.old_leaf_id});
    let v = with(
        v,
        "summaryEntry",
        e.summary_entry.as_ref().map(|s| json!(s)),
    );
    with(v, "fromExtension", e.from_extension.map(Value::Bool))
}

pub(super) fn session_shutdown(e: &SessionShutdownEvent) -> Value {
    let v = json!({"type": "session_shutdown", "reason": e.reason.as_str()});
    with(
        v,
        "targetSessionFile",
        e.target_session_file.as_deref().map(path),
    )
}

pub(super) fn model_select(e: &ModelSelectEvent) -> Value {
    let source = match e.source {
        ModelSelectSource::Cycle => "cycle",
        _ => "set",
    };
    let v = json!({"type": "model_select", "model": e.model, "source": source});
    with(
        v,
        "previousModel",
        e.previous_model.as_ref().map(|m| json!(m)),
    )
}

pub(super) fn thinking_level_select(e: &ThinkingLevelSelectEvent) -> Value {
    json!({"type": "thinking_level_select", "level": e.level, "previousLevel": e.previous_level})
}

pub(super) fn resources_discover(e: &ResourcesDiscoverEvent) -> Value {
    let reason = match e.reason {
        ResourcesReason::Reload => "reload",
        _ => "startup",
    };
    json!({"type": "resources_discover", "cwd": path(&e.cwd), "reason": reason})
}

#[cfg(feature = "tools")]
pub(super) fn user_bash(e: &UserBashEvent) -> Value {
    json!({
        "type": "user_bash",
        "command": e.command,
        "excludeFromContext": e.exclude_from_context,
        "cwd": path(&e.cwd),
    })
}

// ----- answers ------------------------------------------------------------------------

/// An answer that is an object, or `None` for `null`.
fn object(v: Value) -> Result<Option<Map<String, Value>>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Object(m) => Ok(Some(m)),
        other => Err(format!("expected an object or null, got {other}")),
    }
}

/// The field `key` as a `T`; `None` when absent or `null`.
pub(super) fn field<T: DeserializeOwned>(
    m: &Map<String, Value>,
    key: &str,
) -> Result<Option<T>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => T::deserialize(v)
            .map(Some)
            .map_err(|e| format!("`{key}`: {e}")),
    }
}

pub(super) fn parse_tool_call(
    v: Value,
    _: &ToolCallEvent,
) -> Result<Option<ToolCallVerdict>, String> {
    let Some(m) = object(v)? else {
        return Ok(None);
    };
    let reason: Option<String> = field(&m, "reason")?;
    let input: Option<Map<String, Value>> = field(&m, "input")?;
    Ok(if field(&m, "block")?.unwrap_or(false) {
        Some(ToolCallVerdict {
            block: true,
            reason,
            input: None,
        })
    } else {
        input.map(ToolCallVerdict::rewrite)
    })
}

pub(super) fn parse_tool_result(
    v: Value,
    _: &ToolResultEvent,
) -> Result<Option<ToolResultPatch>, String> {
    let Some(m) = object(v)? else {
        return Ok(None);
    };
    let patch = ToolResultPatch {
        content: field::<Vec<Content>>(&m, "content")?,
        details: field(&m, "details")?,
        is_error: field(&m, "isError")?,
    };
    Ok((patch != ToolResultPatch::default()).then_some(patch))
}

pub(super) fn parse_context(
    v: Value,
    _: &ContextEvent,
) -> Result<Option<Vec<AgentMessage>>, String> {
    match object(v)? {
        Some(m) => field(&m, "messages"),
        None => Ok(None),
    }
}

pub(super) fn parse_input(v: Value, _: &InputEvent) -> Result<Option<InputAction>, String> {
    let Some(m) = object(v)? else {
        return Ok(None);
    };
    match field::<String>(&m, "action")?.as_deref() {
        None | Some("continue") => Ok(None),
        Some("handled") => Ok(Some(InputAction::Handled)),
        Some("transform") => {
            let text: String = field(&m, "text")?.ok_or("`transform` needs a `text`")?;
            Ok(Some(InputAction::Transform {
                text,
                images: field(&m, "images")?,
            }))
        }
        Some(other) => Err(format!(
            "unknown action {other:?} (expected continue, transform or handled)"
        )),
    }
}

/// An extension message from the child, stamped now when it has no time.
pub(super) fn extension_message(v: &Value) -> Result<ExtensionMessage, String> {
    let mut message = ExtensionMessage::deserialize(v).map_err(|e| format!("`message`: {e}"))?;
    if message.timestamp == 0 {
        message.timestamp = now_millis();
    }
    Ok(message)
}

pub(super) fn parse_before_agent_start(
    v: Value,
    _: &BeforeAgentStartEvent,
) -> Result<Option<BeforeAgentStart>, String> {
    let Some(m) = object(v)? else {
        return Ok(None);
    };
    let message = match m.get("message") {
        None | Some(Value::Null) => None,
        Some(v) => Some(extension_message(v)?),
    };
    let system_prompt: Option<String> = field(&m, "systemPrompt")?;
    Ok(
        (message.is_some() || system_prompt.is_some()).then_some(BeforeAgentStart {
            message,
            system_prompt,
        }),
    )
}

pub(super) fn parse_message_end(
    v: Value,
    _: &MessageEndEvent,
) -> Result<Option<AgentMessage>, String> {
    match object(v)? {
        Some(m) => field(&m, "message"),
        None => Ok(None),
    }
}

pub(super) fn parse_provider_request(
    v: Value,
    _: &ProviderRequestEvent,
) -> Result<Option<Value>, String> {
    Ok((!v.is_null()).then_some(v))
}

pub(super) fn parse_cancel<E>(v: Value, _: &E) -> Result<Option<Cancel>, String> {
    let Some(m) = object(v)? else {
        return Ok(None);
    };
    Ok(field(&m, "cancel")?.unwrap_or(false).then(Cancel::now))
}

pub(super) fn parse_compact(
    v: Value,
    _: &SessionBeforeCompactEvent,
) -> Result<Option<CompactDecision>, String> {
    let Some(m) = object(v)? else {
        return Ok(None);
    };
    let cancel = field(&m, "cancel")?.unwrap_or(false);
    let compaction: Option<CompactionResult> = field(&m, "compaction")?;
    Ok((cancel || compaction.is_some()).then_some(CompactDecision { cancel, compaction }))
}

#[derive(Deserialize)]
struct RawSummary {
    summary: String,
    details: Option<Value>,
}

pub(super) fn parse_tree(
    v: Value,
    _: &SessionBeforeTreeEvent,
) -> Result<Option<TreeDecision>, String> {
    let Some(m) = object(v)? else {
        return Ok(None);
    };
    let summary = field::<RawSummary>(&m, "summary")?.map(|s| BranchSummaryText {
        summary: s.summary,
        details: s.details,
    });
    let decision = TreeDecision {
        cancel: field(&m, "cancel")?.unwrap_or(false),
        summary,
        custom_instructions: field(&m, "customInstructions")?,
        replace_instructions: field(&m, "replaceInstructions")?,
        label: field(&m, "label")?,
    };
    Ok((decision != TreeDecision::default()).then_some(decision))
}

pub(super) fn parse_resources(
    v: Value,
    _: &ResourcesDiscoverEvent,
) -> Result<Option<Resources>, String> {
    let Some(m) = object(v)? else {
        return Ok(None);
    };
    let paths = |key| -> Result<Vec<std::path::PathBuf>, String> {
        Ok(field::<Vec<String>>(&m, key)?
            .unwrap_or_default()
            .into_iter()
            .map(Into::into)
            .collect())
    };
    let resources = Resources {
        skill_paths: paths("skillPaths")?,
        prompt_paths: paths("promptPaths")?,
        theme_paths: paths("themePaths")?,
    };
    Ok((resources != Resources::default()).then_some(resources))
}

#[cfg(feature = "tools")]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBashResult {
    output: String,
    exit_code: Option<i64>,
    cancelled: Option<bool>,
    truncated: Option<bool>,
    full_output_path: Option<String>,
}

#[cfg(feature = "tools")]
pub(super) fn parse_user_bash(
    v: Value,
    e: &UserBashEvent,
) -> Result<Option<UserBashAction>, String> {
    let Some(m) = object(v)? else {
        return Ok(None);
    };
    if m.get("operations").is_some_and(|o| !o.is_null()) {
        return Err("`operations` cannot cross a process boundary; answer with `result`".into());
    }
    let Some(r) = field::<RawBashResult>(&m, "result")? else {
        return Ok(None);
    };
    let mut message =
        crate::session::BashExecutionMessage::new(e.command.clone(), r.output, r.exit_code);
    message.cancelled = r.cancelled.unwrap_or(false);
    message.truncated = r.truncated.unwrap_or(false);
    message.full_output_path = r.full_output_path;
    message.exclude_from_context = e.exclude_from_context.then_some(true);
    Ok(Some(UserBashAction::Answer(message)))
}

#[derive(Deserialize)]
struct RawCompletion {
    value: String,
    label: Option<String>,
    description: Option<String>,
}

pub(super) fn parse_completions(v: Value) -> Result<Option<Vec<Completion>>, String> {
    if v.is_null() {
        return Ok(None);
    }
    let items = Vec::<RawCompletion>::deserialize(&v).map_err(|e| e.to_string())?;
    Ok(Some(
        items
            .into_iter()
            .map(|i| {
                let mut c = Completion::new(i.value);
                if let Some(l) = i.label {
                    c = c.with_label(l);
                }
                if let Some(d) = i.description {
                    c = c.with_description(d);
                }
                c
            })
            .collect(),
    ))
}

/// A tool's result or update (pi's `AgentToolResult`).
pub(super) fn parse_tool_output(v: Value) -> Result<AgentToolResult, String> {
    AgentToolResult::deserialize(&v).map_err(|e| e.to_string())
}

/// A flag's value as pi's JSON (`true`, `"text"`).
pub(super) fn flag_value(v: Option<FlagValue>) -> Value {
    match v {
        Some(FlagValue::Bool(b)) => Value::Bool(b),
        Some(FlagValue::String(s)) => Value::String(s),
        None => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn register(v: Value) -> Result<Registration, RegisterError> {
        match v {
            Value::Object(m) => Registration::parse(&m),
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_registration_is_read_and_checked() {
        let r = register(json!({
            "type": "register", "protocol": 1,
            "events": ["tool_call", "turn_end", "tool_call"],
            "tools": [{"name": "t", "description": "d", "parameters": {"type": "object"},
                       "executionMode": "sequential", "promptGuidelines": null}],
            "commands": [{"name": "c", "completions": true}],
            "flags": [{"name": "f", "type": "string", "default": "x"}],
            "shortcuts": [{"shortcut": "ctrl+k"}],
        }))
        .unwrap();
        assert_eq!(r.events, ["tool_call", "turn_end"]);
        assert_eq!(
            r.tools[0].execution_mode,
            Some(ToolExecutionMode::Sequential)
        );
        assert!(r.commands[0].completions);
        assert_eq!(r.flags[0].default, Some(FlagValue::String("x".into())));
        assert_eq!(r.shortcuts[0].key, "ctrl+k");

        for (bad, needle) in [(json!({"protocol": 2}), "2"), (json!({}), "none")] {
            match register(bad) {
                Err(RegisterError::Version(v)) => assert!(v.contains(needle), "{v}"),
                other => panic!("{other:?}"),
            }
        }
        for (bad, needle) in [
            (json!({"protocol": 1, "events": ["nope"]}), "unknown event"),
            (
                json!({"protocol": 1, "tools": [{"name": "t"}]}),
                "JSON Schema",
            ),
            (
                json!({"protocol": 1, "tools": [{"name": "t", "parameters": {}}, {"name": "t", "parameters": {}}]}),
                "two tools",
            ),
            (
                json!({"protocol": 1, "flags": [{"name": "f", "type": "number"}]}),
                "number",
            ),
            (
                json!({"protocol": 1, "flags": [{"name": "f", "type": "boolean", "default": "x"}]}),
                "wrong type",
            ),
            (json!({"protocol": 1, "events": "tool_call"}), "sequence"),
        ] {
            match register(bad) {
                Err(RegisterError::Invalid(v)) => assert!(v.contains(needle), "{v}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn answers_are_read_into_the_crates_types() {
        let e = ToolCallEvent {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            input: Map::new(),
        };
        assert_eq!(parse_tool_call(Value::Null, &e), Ok(None));
        assert_eq!(
            parse_tool_call(json!({"block": true}), &e),
            Ok(Some(ToolCallVerdict {
                block: true,
                reason: None,
                input: None
            }))
        );
        let rewrite = parse_tool_call(json!({"input": {"command": "ls"}}), &e).unwrap();
        assert_eq!(rewrite.unwrap().input.unwrap()["command"], "ls");
        assert!(
            parse_tool_call(json!({"block": "yes"}), &e)
                .unwrap_err()
                .contains("block")
        );
        assert!(parse_tool_call(json!([1]), &e).is_err());

        let i = InputEvent {
            text: "t".into(),
            images: vec![],
            source: Default::default(),
        };
        assert_eq!(
            parse_input(json!({"action": "transform", "text": "u"}), &i),
            Ok(Some(InputAction::transform("u")))
        );
        assert!(parse_input(json!({"action": "explode"}), &i).is_err());
        assert_eq!(parse_cancel(json!({"cancel": false}), &()), Ok(None));
        assert_eq!(
            parse_cancel(json!({"cancel": true}), &()),
            Ok(Some(Cancel::now()))
        );
        let out = parse_tool_output(json!({"content": [{"type": "text", "text": "x"}]})).unwrap();
        assert_eq!(out.text_content(), "x");
        assert!(parse_tool_output(json!({"content": "x"})).is_err());
    }
}
