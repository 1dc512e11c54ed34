//! `conformance agent-scenario <scenarios.json> <name> --requests <file>` and
//! `conformance agent-loop <turns>`: the crate's `Agent` against the scripted model, tools and
//! driver of `shared/conformance/agent/README.md`, and the per-turn overhead benchmark.
//!
//! The scripted model is a pull-based stream: it produces an event only when the agent polls
//! for it, and checks the abort signal before every event (the README's rules "without the
//! JavaScript event loop").

use std::collections::VecDeque;
use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::Stream;
use futures::future::BoxFuture;
use pi_engine::agent::{
    Agent, AgentEvent, AgentMessage, AgentTool, AgentToolResult, QueueMode, ToolContext, ToolError,
    ToolExecutionMode, ToolUpdates, TypedTool,
};
use pi_engine::llm::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream,
    CancellationToken, Content, Context, Error, ErrorKind, Model, PartialMessage, StopReason,
    StreamOptions, TextContent, ThinkingContent, ThinkingLevel, Tool, ToolCall, Usage, UserMessage,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

const ABORTED_TEXT: &str = "Request was aborted";
const EXHAUSTED_TEXT: &str = "No more faux responses queued";
const TOOL_ABORTED_TEXT: &str = "Operation aborted";

// ---------------------------------------------------------------------------------------
// Scenario file

#[derive(Deserialize)]
struct ScenarioFile {
    defaults: Defaults,
    scenarios: Vec<Scenario>,
}

#[derive(Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct Defaults {
    system_prompt: String,
    thinking_level: String,
    tool_execution: String,
    steering_mode: String,
    follow_up_mode: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Scenario {
    name: String,
    #[serde(default)]
    description: Option<IgnoredAny>,
    system_prompt: Option<String>,
    thinking_level: Option<String>,
    tool_execution: Option<String>,
    steering_mode: Option<String>,
    follow_up_mode: Option<String>,
    #[serde(default)]
    tools: Vec<ToolSpec>,
    #[serde(default)]
    script: Vec<Step>,
    #[serde(default)]
    driver: Vec<Value>,
    #[serde(default)]
    triggers: Vec<Trigger>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolSpec {
    name: String,
    description: String,
    parameters: Value,
    execution_mode: Option<String>,
    #[serde(default)]
    behaviour: Behaviour,
}

#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
struct Behaviour {
    #[serde(default)]
    updates: Vec<String>,
    delay_ms: Option<u64>,
    throws: Option<String>,
    returns: Option<String>,
    details: Option<Value>,
    #[serde(default)]
    terminate: bool,
}

/// One scripted response. A plain struct (not an enum) so that `arguments` can stay raw: the
/// `toolcall_delta` must be the arguments' JSON text in script order.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Step {
    error: Option<String>,
    #[serde(default)]
    content: Vec<ScriptBlock>,
    stop_reason: Option<StopReason>,
    error_message: Option<String>,
    usage: Option<ScriptUsage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScriptBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    thinking: Option<String>,
    chunks: Option<Vec<String>>,
    text_signature: Option<String>,
    thinking_signature: Option<String>,
    redacted: Option<bool>,
    id: Option<String>,
    name: Option<String>,
    arguments: Option<Box<RawValue>>,
}

#[derive(Deserialize, Clone, Copy, Default)]
#[serde(rename_all = "camelCase")]
struct ScriptUsage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    total_tokens: u64,
}

#[derive(Deserialize)]
struct Trigger {
    on: TriggerOn,
    #[serde(rename = "do")]
    actions: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TriggerOn {
    #[serde(rename = "type")]
    kind: String,
    tool_call_id: Option<String>,
    role: Option<String>,
    update_type: Option<String>,
    nth: Option<usize>,
}

/// JSON text without whitespace outside strings (`JSON.stringify` of parsed JSON, keeping the
/// key order of the file).
fn minify(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in raw.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Normalization (README "Golden format and normalization rules")

fn norm_block(b: &Value) -> Value {
    let get = |k: &str| b.get(k).cloned();
    let mut out = Map::new();
    let kind = b.get("type").and_then(Value::as_str).unwrap_or_default();
    out.insert("type".into(), json!(kind));
    match kind {
        "text" => {
            out.insert("text".into(), get("text").unwrap_or(Value::Null));
            if let Some(s) = get("textSignature") {
                out.insert("textSignature".into(), s);
            }
        }
        "thinking" => {
            out.insert("thinking".into(), get("thinking").unwrap_or(Value::Null));
            if let Some(s) = get("thinkingSignature") {
                out.insert("thinkingSignature".into(), s);
            }
            if let Some(r) = get("redacted") {
                out.insert("redacted".into(), r);
            }
        }
        "toolCall" => {
            for k in ["id", "name", "arguments"] {
                out.insert(k.into(), get(k).unwrap_or(Value::Null));
            }
        }
        "image" => {
            out.insert("mimeType".into(), get("mimeType").unwrap_or(Value::Null));
            let len = b.get("data").and_then(Value::as_str).map_or(0, str::len);
            out.insert("dataLength".into(), json!(len));
        }
        _ => return b.clone(),
    }
    Value::Object(out)
}

fn norm_content(c: &Value) -> Value {
    match c {
        Value::Array(blocks) => Value::Array(blocks.iter().map(norm_block).collect()),
        other => other.clone(),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Start,
    Final,
    State,
}

fn norm_message(m: &Value, mode: Mode) -> Value {
    let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
    let field = |k: &str| m.get(k).cloned().unwrap_or(Value::Null);
    match role {
        "user" => json!({"role": "user", "content": norm_content(&field("content"))}),
        "toolResult" => {
            let mut out = json!({
                "role": "toolResult", "toolCallId": field("toolCallId"),
                "toolName": field("toolName"), "isError": field("isError"),
                "content": norm_content(&field("content")),
            });
            if let Some(d) = m.get("details") {
                out["details"] = d.clone();
            }
            out
        }
        "assistant" => {
            let mut out = json!({"role": "assistant", "content": norm_content(&field("content"))});
            if mode == Mode::Start {
                return out;
            }
            out["stopReason"] = field("stopReason");
            if let Some(e) = m.get("errorMessage") {
                out["errorMessage"] = e.clone();
            }
            if mode == Mode::State {
                let u = field("usage");
                out["usage"] = json!({
                    "input": u["input"], "output": u["output"], "cacheRead": u["cacheRead"],
                    "cacheWrite": u["cacheWrite"], "totalTokens": u["totalTokens"],
                });
            }
            out
        }
        _ => {
            let mut out = m.clone();
            if let Value::Object(o) = &mut out {
                o.remove("timestamp");
            }
            out
        }
    }
}

fn norm_agent_message(m: &AgentMessage, mode: Mode) -> Value {
    norm_message(&serde_json::to_value(m).unwrap_or_default(), mode)
}

fn norm_result(r: &AgentToolResult) -> Value {
    let v = serde_json::to_value(r).unwrap_or_default();
    let mut out = json!({"content": norm_content(&v["content"]), "details": v["details"]});
    if let Some(t) = v.get("terminate") {
        out["terminate"] = t.clone();
    }
    out
}

fn norm_event(e: &AgentEvent) -> Value {
    match e {
        AgentEvent::AgentEnd { messages } => json!({
            "type": "agent_end",
            "messages": messages.iter().map(|m| norm_agent_message(m, Mode::Final)).collect::<Vec<_>>(),
        }),
        AgentEvent::TurnEnd {
            message,
            tool_results,
        } => json!({
            "type": "turn_end",
            "message": norm_agent_message(&message.clone().into(), Mode::Final),
            "toolResults": tool_results.iter()
                .map(|m| norm_agent_message(&m.clone().into(), Mode::Final)).collect::<Vec<_>>(),
        }),
        AgentEvent::MessageStart { message } => {
            json!({"type": "message_start", "message": norm_agent_message(message, Mode::Start)})
        }
        AgentEvent::MessageEnd { message } => {
            json!({"type": "message_end", "message": norm_agent_message(message, Mode::Final)})
        }
        AgentEvent::MessageUpdate {
            assistant_message_event: ev,
        } => {
            let v = serde_json::to_value(ev).unwrap_or_default();
            let mut out = json!({"type": v["type"]});
            for k in ["contentIndex", "delta"] {
                if let Some(x) = v.get(k) {
                    out[k] = x.clone();
                }
            }
            if matches!(
                ev,
                AssistantMessageEvent::TextEnd { .. } | AssistantMessageEvent::ThinkingEnd { .. }
            ) {
                out["content"] = v["content"].clone();
            }
            if let AssistantMessageEvent::ToolcallEnd { .. } = ev {
                // pi's `toolCall` is the content block, `type` included.
                let mut block = v["toolCall"].clone();
                block["type"] = json!("toolCall");
                out["toolCall"] = norm_block(&block);
            }
            json!({"type": "message_update", "assistantMessageEvent": out})
        }
        AgentEvent::ToolExecutionStart {
            tool_call_id,
            tool_name,
            args,
        } => json!({"type": "tool_execution_start", "toolCallId": tool_call_id,
                    "toolName": tool_name, "args": args}),
        AgentEvent::ToolExecutionUpdate {
            tool_call_id,
            tool_name,
            args,
            partial_result,
        } => json!({"type": "tool_execution_update", "toolCallId": tool_call_id,
                    "toolName": tool_name, "args": args,
                    "partialResult": norm_result(partial_result)}),
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            result,
            is_error,
        } => json!({"type": "tool_execution_end", "toolCallId": tool_call_id,
                    "toolName": tool_name, "isError": is_error, "result": norm_result(result)}),
        other => json!({"type": other.kind()}),
    }
}

// ---------------------------------------------------------------------------------------
// The scripted model

/// How the partial message changes when an event is sent.
enum Change {
    None,
    Push(AssistantContent),
    Append(usize, String),
    Replace(usize, AssistantContent),
}

struct Planned {
    event: AssistantMessageEvent,
    change: Change,
}

#[allow(clippy::large_enum_variant)] // one per stream, never moved while playing
enum Phase {
    Begin,
    Playing {
        partial: AssistantMessage,
        queue: VecDeque<Planned>,
        last: Option<AssistantMessageEvent>,
    },
    Ended,
}

struct ScriptedStream {
    script: Arc<Mutex<VecDeque<Step>>>,
    cancel: Option<CancellationToken>,
    base: AssistantMessage,
    phase: Phase,
}

fn usage_of(u: Option<ScriptUsage>) -> Usage {
    let u = u.unwrap_or_default();
    let mut usage = Usage::new(u.input, u.output, u.cache_read, u.cache_write);
    usage.total_tokens = Some(u.total_tokens);
    usage
}

fn clean_block(b: &ScriptBlock) -> AssistantContent {
    match b.kind.as_str() {
        "thinking" => {
            let mut t = ThinkingContent::new(b.thinking.clone().unwrap_or_default());
            t.thinking_signature.clone_from(&b.thinking_signature);
            t.redacted = b.redacted;
            AssistantContent::Thinking(t)
        }
        "toolCall" => {
            let args = b
                .arguments
                .as_ref()
                .and_then(|r| serde_json::from_str(r.get()).ok())
                .unwrap_or(Value::Object(Map::new()));
            AssistantContent::ToolCall(ToolCall::new(
                b.id.clone().unwrap_or_default(),
                b.name.clone().unwrap_or_default(),
                args,
            ))
        }
        _ => {
            let mut t = TextContent::new(b.text.clone().unwrap_or_default());
            t.text_signature.clone_from(&b.text_signature);
            AssistantContent::Text(t)
        }
    }
}

fn plan(step: &Step, base: &AssistantMessage) -> (VecDeque<Planned>, AssistantMessageEvent) {
    use AssistantMessageEvent as E;
    let mut q = VecDeque::new();
    for (i, block) in step.content.iter().enumerate() {
        let clean = clean_block(block);
        match block.kind.as_str() {
            "text" | "thinking" => {
                let thinking = block.kind == "thinking";
                let full = if thinking {
                    block.thinking.clone()
                } else {
                    block.text.clone()
                }
                .unwrap_or_default();
                let empty = if thinking {
                    let mut t = ThinkingContent::new("");
                    t.redacted = block.redacted;
                    AssistantContent::Thinking(t)
                } else {
                    AssistantContent::text("")
                };
                q.push_back(Planned {
                    event: if thinking {
                        E::ThinkingStart { content_index: i }
                    } else {
                        E::TextStart { content_index: i }
                    },
                    change: Change::Push(empty),
                });
                let chunks = block.chunks.clone().unwrap_or_else(|| vec![full.clone()]);
                for delta in chunks {
                    q.push_back(Planned {
                        event: if thinking {
                            E::ThinkingDelta {
                                content_index: i,
                                delta: delta.clone(),
                            }
                        } else {
                            E::TextDelta {
                                content_index: i,
                                delta: delta.clone(),
                            }
                        },
                        change: Change::Append(i, delta),
                    });
                }
                q.push_back(Planned {
                    event: if thinking {
                        E::ThinkingEnd {
                            content_index: i,
                            content: full,
                        }
                    } else {
                        E::TextEnd {
                            content_index: i,
                            content: full,
                        }
                    },
                    change: Change::Replace(i, clean),
                });
            }
            _ => {
                let AssistantContent::ToolCall(call) = &clean else {
                    continue;
                };
                q.push_back(Planned {
                    event: E::ToolcallStart {
                        content_index: i,
                        id: call.id.clone(),
                        tool_name: call.name.clone(),
                    },
                    change: Change::Push(AssistantContent::tool_call(
                        call.id.clone(),
                        call.name.clone(),
                        json!({}),
                    )),
                });
                let raw = block.arguments.as_ref().map_or("{}", |r| r.get());
                q.push_back(Planned {
                    event: E::ToolcallDelta {
                        content_index: i,
                        delta: minify(raw),
                    },
                    change: Change::None,
                });
                q.push_back(Planned {
                    event: E::ToolcallEnd {
                        content_index: i,
                        tool_call: call.clone(),
                    },
                    change: Change::Replace(i, clean.clone()),
                });
            }
        }
    }
    let mut final_message = base
        .clone()
        .with_content(step.content.iter().map(clean_block).collect())
        .with_stop_reason(step.stop_reason.clone().unwrap_or(StopReason::Stop));
    let last = if final_message.stop_reason.is_failure() {
        let text = step
            .error_message
            .clone()
            .unwrap_or_else(|| "Unknown error".into());
        let kind = if final_message.stop_reason == StopReason::Aborted {
            ErrorKind::Aborted
        } else {
            ErrorKind::Provider
        };
        final_message.set_error(Error::new(kind, text));
        E::Error {
            reason: final_message.stop_reason.clone(),
            error: Box::new(final_message),
        }
    } else {
        E::Done {
            reason: final_message.stop_reason.clone(),
            message: Box::new(final_message),
        }
    };
    (q, last)
}

fn failed(message: AssistantMessage, kind: ErrorKind, text: &str) -> AssistantMessageEvent {
    let message = message.with_error(Error::new(kind, text));
    AssistantMessageEvent::Error {
        reason: message.stop_reason.clone(),
        error: Box::new(message),
    }
}

impl Stream for ScriptedStream {
    type Item = AssistantMessageEvent;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let aborted = this.cancel.as_ref().is_some_and(|c| c.is_cancelled());
        match &mut this.phase {
            Phase::Ended => Poll::Ready(None),
            Phase::Begin => {
                this.phase = Phase::Ended;
                if aborted {
                    // No script step is used up.
                    return Poll::Ready(Some(failed(
                        this.base.clone(),
                        ErrorKind::Aborted,
                        ABORTED_TEXT,
                    )));
                }
                let step = this.script.lock().unwrap().pop_front();
                let Some(step) = step else {
                    return Poll::Ready(Some(failed(
                        this.base.clone(),
                        ErrorKind::Provider,
                        EXHAUSTED_TEXT,
                    )));
                };
                let mut base = this.base.clone();
                base.usage = usage_of(step.usage);
                if let Some(error) = &step.error {
                    return Poll::Ready(Some(failed(base, ErrorKind::Provider, error)));
                }
                let (queue, last) = plan(&step, &base);
                this.phase = Phase::Playing {
                    partial: base,
                    queue,
                    last: Some(last),
                };
                Poll::Ready(Some(AssistantMessageEvent::Start))
            }
            Phase::Playing {
                partial,
                queue,
                last,
            } => {
                if aborted {
                    let event = failed(partial.clone(), ErrorKind::Aborted, ABORTED_TEXT);
                    this.phase = Phase::Ended;
                    return Poll::Ready(Some(event));
                }
                match queue.pop_front() {
                    Some(Planned { event, change }) => {
                        match change {
                            Change::None => {}
                            Change::Push(block) => partial.content.push(block),
                            Change::Append(i, delta) => match partial.content.get_mut(i) {
                                Some(AssistantContent::Text(t)) => t.text.push_str(&delta),
                                Some(AssistantContent::Thinking(t)) => t.thinking.push_str(&delta),
                                _ => {}
                            },
                            Change::Replace(i, block) => {
                                if let Some(slot) = partial.content.get_mut(i) {
                                    *slot = block;
                                }
                            }
                        }
                        Poll::Ready(Some(event))
                    }
                    None => {
                        let event = last.take();
                        this.phase = Phase::Ended;
                        Poll::Ready(event)
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Scripted tools

struct ScriptTool {
    definition: Tool,
    mode: Option<ToolExecutionMode>,
    behaviour: Behaviour,
}

fn fill(template: &str, args: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end)
                if !after[..end].is_empty()
                    && after[..end]
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_') =>
            {
                let key = &after[..end];
                if key == "args" {
                    out.push_str(&serde_json::to_string(args).unwrap_or_default());
                } else {
                    match args.get(key) {
                        Some(Value::String(s)) => out.push_str(s),
                        Some(v) => out.push_str(&v.to_string()),
                        None => out.push_str("undefined"),
                    }
                }
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[async_trait]
impl AgentTool for ScriptTool {
    fn definition(&self) -> &Tool {
        &self.definition
    }

    fn execution_mode(&self) -> Option<ToolExecutionMode> {
        self.mode
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let b = &self.behaviour;
        for text in &b.updates {
            updates.update(AgentToolResult::text(text.clone())).await;
        }
        if let Some(ms) = b.delay_ms.filter(|ms| *ms > 0) {
            if cancel.is_cancelled() {
                return Err(TOOL_ABORTED_TEXT.into());
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                () = cancel.cancelled() => return Err(TOOL_ABORTED_TEXT.into()),
            }
        }
        if let Some(msg) = &b.throws {
            return Err(msg.clone().into());
        }
        let mut result = AgentToolResult::text(fill(b.returns.as_deref().unwrap_or(""), &args))
            .with_details(b.details.clone().unwrap_or_else(|| json!({})));
        if b.terminate {
            result = result.terminating();
        }
        Ok(result)
    }
}

// ---------------------------------------------------------------------------------------
// Driver

fn queue_mode(s: &str) -> QueueMode {
    if s == "all" {
        QueueMode::All
    } else {
        QueueMode::OneAtATime
    }
}

fn user_message(text: &str) -> AgentMessage {
    UserMessage::blocks(vec![Content::text(text)]).into()
}

struct Output {
    lines: Vec<String>,
}

impl Output {
    fn line(&mut self, v: &Value) {
        self.lines.push(v.to_string());
    }
}

struct TriggerState {
    on: TriggerOn,
    actions: Vec<Value>,
    seen: usize,
    fired: bool,
}

fn matches(on: &TriggerOn, e: &AgentEvent) -> bool {
    if on.kind != e.kind() {
        return false;
    }
    let tool_call_id = match e {
        AgentEvent::ToolExecutionStart { tool_call_id, .. }
        | AgentEvent::ToolExecutionUpdate { tool_call_id, .. }
        | AgentEvent::ToolExecutionEnd { tool_call_id, .. } => Some(tool_call_id.as_str()),
        _ => None,
    };
    let role = match e {
        AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
            Some(message.role())
        }
        AgentEvent::TurnEnd { .. } => Some("assistant"),
        _ => None,
    };
    let update_type = match e {
        AgentEvent::MessageUpdate {
            assistant_message_event,
        } => Some(assistant_message_event.kind()),
        _ => None,
    };
    on.tool_call_id
        .as_deref()
        .is_none_or(|id| Some(id) == tool_call_id)
        && on.role.as_deref().is_none_or(|r| Some(r) == role)
        && on
            .update_type
            .as_deref()
            .is_none_or(|t| Some(t) == update_type)
}

fn act<'a>(agent: &'a Agent, action: &'a Value, out: &'a Arc<Mutex<Output>>) -> BoxFuture<'a, ()> {
    Box::pin(async move {
        let Some((name, value)) = action.as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        let mut line = json!({"type": "__driver__", "action": name});
        if let Some(text) = value.as_str() {
            line["text"] = json!(text);
        }
        out.lock().unwrap().line(&line);
        let text = value.as_str().unwrap_or_default();
        let result: Result<(), String> = match name.as_str() {
            // How the run ended is in its events (pi's transcript); only a refusal is noted.
            "prompt" => agent
                .prompt(text)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            "continue" => agent
                .continue_run()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            "steer" => {
                agent.steer(user_message(text));
                Ok(())
            }
            "followUp" => {
                agent.follow_up(user_message(text));
                Ok(())
            }
            "abort" => {
                agent.abort();
                Ok(())
            }
            "popLastMessage" => {
                agent.state().messages.pop();
                Ok(())
            }
            other => Err(format!("unknown driver action {other}")),
        };
        if let Err(message) = result {
            out.lock().unwrap().line(&json!({
                "type": "__driver_error__", "action": name, "message": message
            }));
        }
    })
}

fn scripted_model() -> Model {
    Model::new(
        "scripted-model",
        "scripted",
        "scripted",
        "http://localhost:0",
    )
    .with_name("Scripted Model")
    .with_reasoning(true)
}

pub(crate) async fn scenario(path: &str, name: &str, requests_path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let file: ScenarioFile =
        serde_json::from_str(&text).map_err(|e| format!("bad scenarios file {path}: {e}"))?;
    let defaults = file.defaults;
    let sc = file
        .scenarios
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("no scenario named {name}"))?;
    let _ = &sc.description;

    let requests: Arc<Mutex<Vec<String>>> = Arc::default();
    let script: Arc<Mutex<VecDeque<Step>>> = Arc::new(Mutex::new(sc.script.into()));
    let calls = Arc::new(AtomicUsize::new(0));
    let stream_fn = {
        let (requests, script, calls) = (requests.clone(), script.clone(), calls.clone());
        move |model: &Model, context: &Context, options: &StreamOptions| {
            let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
            let record = json!({
                "call": call,
                "systemPrompt": context.system_prompt.clone().unwrap_or_default(),
                "reasoning": options.reasoning,
                "tools": context.tools.iter().flatten().map(|t| t.name.clone()).collect::<Vec<_>>(),
                "messages": context.messages.iter()
                    .map(|m| norm_message(&serde_json::to_value(m).unwrap_or_default(), Mode::Final))
                    .collect::<Vec<_>>(),
            });
            requests.lock().unwrap().push(record.to_string());
            let base = AssistantMessage::new(&model.api, &model.provider, &model.id);
            let stream = ScriptedStream {
                script: script.clone(),
                cancel: options.cancel.clone(),
                base: base.clone(),
                phase: Phase::Begin,
            };
            AssistantMessageEventStream::from_stream(PartialMessage::new(base), stream)
        }
    };

    let tools: Vec<Arc<dyn AgentTool>> = sc
        .tools
        .into_iter()
        .map(|t| {
            Arc::new(ScriptTool {
                definition: Tool::new(t.name, t.description, t.parameters),
                mode: match t.execution_mode.as_deref() {
                    Some("sequential") => Some(ToolExecutionMode::Sequential),
                    Some("parallel") => Some(ToolExecutionMode::Parallel),
                    _ => None,
                },
                behaviour: t.behaviour,
            }) as Arc<dyn AgentTool>
        })
        .collect();
    let thinking: ThinkingLevel = sc
        .thinking_level
        .unwrap_or(defaults.thinking_level)
        .parse()
        .map_err(|e| format!("{e}"))?;
    let tool_execution = if sc.tool_execution.unwrap_or(defaults.tool_execution) == "sequential" {
        ToolExecutionMode::Sequential
    } else {
        ToolExecutionMode::Parallel
    };
    let agent = Agent::builder(scripted_model())
        .system_prompt(sc.system_prompt.unwrap_or(defaults.system_prompt))
        .thinking_level(thinking)
        .tools(tools)
        .stream_fn(stream_fn)
        .tool_execution(tool_execution)
        .steering_mode(queue_mode(
            &sc.steering_mode.unwrap_or(defaults.steering_mode),
        ))
        .follow_up_mode(queue_mode(
            &sc.follow_up_mode.unwrap_or(defaults.follow_up_mode),
        ))
        .build();

    let out = Arc::new(Mutex::new(Output { lines: Vec::new() }));
    let triggers = Arc::new(Mutex::new(
        sc.triggers
            .into_iter()
            .map(|t| TriggerState {
                on: t.on,
                actions: t.actions,
                seen: 0,
                fired: false,
            })
            .collect::<Vec<_>>(),
    ));
    {
        let out = out.clone();
        agent.subscribe_async(move |event, agent| {
            let out = out.clone();
            let triggers = triggers.clone();
            Box::pin(async move {
                out.lock().unwrap().line(&norm_event(&event));
                let mut to_run = Vec::new();
                for t in triggers.lock().unwrap().iter_mut() {
                    if t.fired || !matches(&t.on, &event) {
                        continue;
                    }
                    t.seen += 1;
                    if t.seen < t.on.nth.unwrap_or(1) {
                        continue;
                    }
                    t.fired = true;
                    to_run.extend(t.actions.iter().cloned());
                }
                for action in &to_run {
                    act(&agent, action, &out).await;
                }
            })
        });
    }
    for action in &sc.driver {
        act(&agent, action, &out).await;
    }
    agent.wait_for_idle().await;
    let (messages, error) = {
        let state = agent.state();
        (
            state
                .messages
                .iter()
                .map(|m| norm_agent_message(m, Mode::State))
                .collect::<Vec<_>>(),
            state.error_message().map(str::to_owned),
        )
    };
    out.lock().unwrap().line(&json!({
        "type": "__final_messages__", "messages": messages, "errorMessage": error,
    }));

    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    for l in &out.lock().unwrap().lines {
        writeln!(w, "{l}").map_err(|e| format!("write: {e}"))?;
    }
    w.flush().map_err(|e| format!("write: {e}"))?;
    let mut body = requests.lock().unwrap().join("\n");
    body.push('\n');
    std::fs::write(requests_path, body).map_err(|e| format!("cannot write {requests_path}: {e}"))
}

// ---------------------------------------------------------------------------------------
// agent-loop <turns>: per-turn overhead (same shape as ../perf/node/agent-loop.mjs)

#[derive(Deserialize, JsonSchema)]
struct NoopArgs {
    #[allow(dead_code)]
    i: Option<f64>,
    #[allow(dead_code)]
    k: Option<f64>,
}

fn perf_reply(model: &Model, n: usize, turns: usize) -> AssistantMessageEventStream {
    use AssistantMessageEvent as E;
    let mut message = AssistantMessage::new(&model.api, &model.provider, &model.id);
    let base = message.clone();
    message.usage = Usage::new(100 + n as u64, 20, 0, 0);
    let tool_turn = n <= turns;
    let deltas: &[&str] = if tool_turn {
        &["Calling", " the", " tool."]
    } else {
        &["All", " done."]
    };
    let text: String = deltas.concat();
    let mut events = Vec::with_capacity(10);
    events.push(E::Start);
    events.push(E::TextStart { content_index: 0 });
    for d in deltas {
        events.push(E::TextDelta {
            content_index: 0,
            delta: (*d).to_owned(),
        });
    }
    events.push(E::TextEnd {
        content_index: 0,
        content: text.clone(),
    });
    message.content.push(AssistantContent::text(text));
    if tool_turn {
        let call = ToolCall::new(format!("call_{n}_0"), "noop", json!({"i": n, "k": 0}));
        events.push(E::ToolcallStart {
            content_index: 1,
            id: call.id.clone(),
            tool_name: call.name.clone(),
        });
        events.push(E::ToolcallDelta {
            content_index: 1,
            delta: format!(r#"{{"i":{n},"k":0}}"#),
        });
        events.push(E::ToolcallEnd {
            content_index: 1,
            tool_call: call.clone(),
        });
        message.content.push(AssistantContent::ToolCall(call));
        message.stop_reason = StopReason::ToolUse;
    }
    events.push(E::Done {
        reason: message.stop_reason.clone(),
        message: Box::new(message),
    });
    AssistantMessageEventStream::from_stream(
        PartialMessage::new(base),
        futures::stream::iter(events),
    )
}

pub(crate) async fn agent_loop(turns: &str) -> Result<(), String> {
    let turns: usize = turns
        .parse()
        .map_err(|e| format!("bad turn count {turns:?}: {e}"))?;
    let model = Model::new("faux-perf-1", "faux-perf", "faux", "http://127.0.0.1:1")
        .with_name("faux perf")
        .with_context_window(10_000_000);
    let calls = Arc::new(AtomicUsize::new(0));
    let tool_runs = Arc::new(AtomicUsize::new(0));
    let noop = {
        let tool_runs = tool_runs.clone();
        TypedTool::new(
            "noop",
            "Does nothing and returns ok.",
            move |_: NoopArgs, _: ToolContext| {
                tool_runs.fetch_add(1, Ordering::Relaxed);
                async { Ok(AgentToolResult::text("ok")) }
            },
        )
        .with_label("No-op")
    };
    let stream_calls = calls.clone();
    let agent = Agent::builder(model)
        .system_prompt("You are a test agent.")
        .tool(noop)
        .stream_fn(move |m: &Model, _: &Context, _: &StreamOptions| {
            let n = stream_calls.fetch_add(1, Ordering::Relaxed) + 1;
            perf_reply(m, n, turns)
        })
        .build();
    let events = Arc::new(AtomicUsize::new(0));
    let turn_ends = Arc::new(AtomicUsize::new(0));
    {
        let (events, turn_ends) = (events.clone(), turn_ends.clone());
        agent.subscribe(move |e, _| {
            events.fetch_add(1, Ordering::Relaxed);
            if matches!(e, AgentEvent::TurnEnd { .. }) {
                turn_ends.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    let t0 = Instant::now();
    agent
        .prompt("Run the noop tool until told otherwise.")
        .await
        .map_err(|e| e.to_string())?
        .into_result()
        .map_err(|e| e.to_string())?;
    agent.wait_for_idle().await;
    let wall = t0.elapsed().as_secs_f64();
    let turns_done = turn_ends.load(Ordering::Relaxed);
    let summary = json!({
        "impl": "pi-engine",
        "turns_requested": turns,
        "turns": turns_done,
        "tool_runs": tool_runs.load(Ordering::Relaxed),
        "llm_calls": calls.load(Ordering::Relaxed),
        "agent_events": events.load(Ordering::Relaxed),
        "messages": agent.state().messages.len(),
        "error": agent.error_message(),
        "wall_s": wall,
        "us_per_turn": wall * 1e6 / turns_done.max(1) as f64,
    });
    eprintln!("{summary}");
    Ok(())
}
