//! The calls a child makes to the host (`{"type":"call","method":…}`): the UI, messages,
//! session writes, `exec`, and reading the session's state — each a method of
//! [`ExtensionContext`].

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::super::context::{Delivery, ExtensionContext};
use super::super::exec::ExecOptions;
use super::super::ui::NotifyKind;
use super::wire::{extension_message, field, flag_value};
use crate::agent::PromptInput;
use crate::llm::message::Content;
use crate::llm::thinking::ThinkingLevel;

/// Where a call is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// At once, before the next line is read (display calls, reads, queueing a prompt).
    Inline,
    /// In order, on a task of its own (session writes).
    Ordered,
    /// On a task of its own, ended with the request it was asked for.
    Dialog,
    /// On a task of its own.
    Exec,
}

/// The kind of a method; `None` for an unknown one.
pub(super) fn kind(method: &str) -> Option<Kind> {
    Some(match method {
        "ui.select" | "ui.confirm" | "ui.input" | "ui.editor" => Kind::Dialog,
        "exec" => Kind::Exec,
        "sendMessage" | "appendEntry" | "setSessionName" | "setLabel" | "setThinkingLevel"
        | "getEntries" => Kind::Ordered,
        "ui.notify" | "ui.setStatus" | "ui.setWidget" | "ui.setTitle" | "ui.setEditorText"
        | "ui.getEditorText" | "sendUserMessage" | "getSessionName" | "getState"
        | "getMessages" | "getFlag" | "getActiveTools" | "getAllTools" | "setActiveTools"
        | "getCommands" | "abort" | "shutdown" => Kind::Inline,
        _ => return None,
    })
}

type Answer = Result<Value, String>;

fn required<T: DeserializeOwned>(p: &Map<String, Value>, key: &str) -> Result<T, String> {
    field(p, key)?.ok_or_else(|| format!("missing `{key}`"))
}

fn json<T: serde::Serialize>(v: T) -> Answer {
    serde_json::to_value(v).map_err(|e| e.to_string())
}

/// pi's `deliverAs` in `options`.
fn delivery(options: &Map<String, Value>) -> Result<Option<Delivery>, String> {
    match field::<String>(options, "deliverAs")?.as_deref() {
        None => Ok(None),
        Some("steer") => Ok(Some(Delivery::Steer)),
        Some("followUp") => Ok(Some(Delivery::FollowUp)),
        Some("nextTurn") => Ok(Some(Delivery::NextTurn)),
        Some(other) => Err(format!(
            "unknown deliverAs {other:?} (expected steer, followUp or nextTurn)"
        )),
    }
}

/// pi's `sendUserMessage` content: a string, or text and image blocks.
fn prompt_input(p: &Map<String, Value>) -> Result<PromptInput, String> {
    match p.get("content") {
        Some(Value::String(s)) => Ok(PromptInput::from(s.clone())),
        Some(v @ Value::Array(_)) => {
            let blocks: Vec<Content> =
                serde_json::from_value(v.clone()).map_err(|e| format!("`content`: {e}"))?;
            let mut texts = Vec::new();
            let mut images = Vec::new();
            for b in blocks {
                match b {
                    Content::Text(t) => texts.push(t.text),
                    Content::Image(i) => images.push(i),
                    _ => {}
                }
            }
            Ok(PromptInput::with_images(texts.join("\n"), images))
        }
        _ => Err("`content` must be a string or an array of content blocks".into()),
    }
}

fn state(ctx: &ExtensionContext) -> Answer {
    let session = ctx.session();
    json(json!({
        "cwd": ctx.cwd().to_string_lossy(),
        "sessionId": session.session_id(),
        "sessionFile": session.session_file().map(|f| f.to_string_lossy().into_owned()),
        "sessionName": ctx.session_name(),
        "model": ctx.model(),
        "thinkingLevel": ctx.thinking_level(),
        "isIdle": ctx.is_idle(),
        "hasUI": ctx.has_ui(),
        "hasPendingMessages": ctx.has_pending_messages(),
        "systemPrompt": ctx.system_prompt(),
        "contextUsage": ctx.context_usage(),
    }))
}

/// A call done at once.
pub(super) fn inline(method: &str, p: &Map<String, Value>, ctx: &ExtensionContext) -> Answer {
    let ui = ctx.ui();
    match method {
        "ui.notify" => {
            let message: String = required(p, "message")?;
            let kind: Option<NotifyKind> = field(p, "type")?;
            ui.notify(&message, kind);
        }
        "ui.setStatus" => {
            let key: String = required(p, "key")?;
            let text: Option<String> = field(p, "text")?;
            ui.set_status(&key, text.as_deref());
        }
        "ui.setWidget" => {
            let key: String = required(p, "key")?;
            let lines: Option<Vec<String>> = field(p, "lines")?;
            ui.set_widget(&key, lines.as_deref());
        }
        "ui.setTitle" => ui.set_title(&required::<String>(p, "title")?),
        "ui.setEditorText" => ui.set_editor_text(&required::<String>(p, "text")?),
        "ui.getEditorText" => return Ok(Value::String(ui.editor_text())),
        "sendUserMessage" => {
            let input = prompt_input(p)?;
            let options: Map<String, Value> = field(p, "options")?.unwrap_or_default();
            let deliver = match delivery(&options)? {
                Some(Delivery::NextTurn) => {
                    return Err("sendUserMessage delivers as steer or followUp".into());
                }
                d => d,
            };
            ctx.send_user_message(input, deliver);
        }
        "getSessionName" => return json(ctx.session_name()),
        "getState" => return state(ctx),
        "getMessages" => return json(ctx.session().messages()),
        "getFlag" => return Ok(flag_value(ctx.flag(&required::<String>(p, "name")?))),
        "getActiveTools" => return json(ctx.active_tools()),
        "getAllTools" => {
            let tools: Vec<Value> = ctx
                .all_tools()
                .into_iter()
                .map(|t| {
                    json!({"name": t.name, "description": t.description,
                           "parameters": t.parameters, "active": t.active})
                })
                .collect();
            return Ok(Value::Array(tools));
        }
        "setActiveTools" => ctx.set_active_tools(&required::<Vec<String>>(p, "names")?),
        "getCommands" => {
            let commands: Vec<Value> = ctx
                .commands()
                .into_iter()
                .map(|c| {
                    json!({"name": c.name, "description": c.description,
                           "extension": c.extension})
                })
                .collect();
            return Ok(Value::Array(commands));
        }
        "abort" => ctx.abort(),
        "shutdown" => ctx.shutdown(),
        other => return Err(format!("unknown method {other:?}")),
    }
    Ok(Value::Null)
}

/// A session write, done in order with the others.
pub(super) async fn ordered(
    method: &str,
    p: &Map<String, Value>,
    ctx: &ExtensionContext,
) -> Answer {
    let failed = |e: crate::agent_session::AgentSessionError| e.to_string();
    match method {
        "sendMessage" => {
            let message = extension_message(p.get("message").unwrap_or(&Value::Null))?;
            let options: Map<String, Value> = field(p, "options")?.unwrap_or_default();
            let trigger: bool = field(&options, "triggerTurn")?.unwrap_or(false);
            ctx.send_message(message, delivery(&options)?, trigger)
                .await
                .map_err(failed)?;
            Ok(Value::Null)
        }
        "appendEntry" => {
            let custom_type: String = required(p, "customType")?;
            let data: Option<Value> = field(p, "data")?;
            let id = ctx.append_entry(custom_type, data).await.map_err(failed)?;
            Ok(Value::String(id))
        }
        "setSessionName" => {
            let name: String = required(p, "name")?;
            ctx.set_session_name(&name).await.map_err(failed)?;
            Ok(Value::Null)
        }
        "setLabel" => {
            let entry: String = required(p, "entryId")?;
            let label: Option<String> = field(p, "label")?;
            ctx.set_label(&entry, label.as_deref())
                .await
                .map_err(failed)?;
            Ok(Value::Null)
        }
        "setThinkingLevel" => {
            let level: ThinkingLevel = required(p, "level")?;
            json(ctx.set_thinking_level(level).await.map_err(failed)?)
        }
        "getEntries" => {
            let branch: bool = field(p, "branch")?.unwrap_or(false);
            let entries = ctx.session().with_session_manager(|sm| {
                if branch {
                    sm.branch_path(None)
                } else {
                    sm.entries()
                }
            });
            json(entries.map_err(|e| e.to_string())?)
        }
        other => Err(format!("unknown method {other:?}")),
    }
}

/// A dialog (its wait does not count against the deadline of the request it is for).
pub(super) async fn dialog(method: &str, p: &Map<String, Value>, ctx: &ExtensionContext) -> Answer {
    let ui = ctx.ui();
    let title: String = required(p, "title")?;
    let timeout = field::<u64>(p, "timeout")?.map(Duration::from_millis);
    let text = |t: Option<String>| t.map_or(Value::Null, Value::String);
    match method {
        "ui.select" => {
            let options: Vec<String> = required(p, "options")?;
            let options: Vec<&str> = options.iter().map(String::as_str).collect();
            let choice = match timeout {
                Some(t) => ui.select_with_timeout(&title, &options, t).await,
                None => ui.select(&title, &options).await,
            };
            Ok(text(choice))
        }
        "ui.confirm" => {
            let message: String = field(p, "message")?.unwrap_or_default();
            let yes = match timeout {
                Some(t) => ui.confirm_with_timeout(&title, &message, t).await,
                None => ui.confirm(&title, &message).await,
            };
            Ok(Value::Bool(yes))
        }
        "ui.input" | "ui.editor" => {
            let hint_key = if method == "ui.input" {
                "placeholder"
            } else {
                "prefill"
            };
            let hint: Option<String> = field(p, hint_key)?;
            let ask = async {
                if method == "ui.input" {
                    ui.input(&title, hint.as_deref()).await
                } else {
                    ui.editor(&title, hint.as_deref()).await
                }
            };
            let answer = match timeout {
                Some(t) => tokio::time::timeout(t, ask).await.ok().flatten(),
                None => ask.await,
            };
            Ok(text(answer))
        }
        other => Err(format!("unknown method {other:?}")),
    }
}

/// `exec`: a program without a shell, stopped at its timeout or the request's end.
pub(super) async fn exec(p: &Map<String, Value>, ctx: &ExtensionContext) -> Answer {
    let command: String = required(p, "command")?;
    let args: Vec<String> = field(p, "args")?.unwrap_or_default();
    let options: Map<String, Value> = field(p, "options")?.unwrap_or_default();
    let mut o = ExecOptions::new();
    if let Some(cwd) = field::<String>(&options, "cwd")? {
        o = o.with_cwd(cwd);
    }
    if let Some(ms) = field::<u64>(&options, "timeout")? {
        o = o.with_timeout(Duration::from_millis(ms));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = ctx.exec(&command, &args, o).await;
    Ok(json!({
        "stdout": r.stdout,
        "stderr": r.stderr,
        "code": r.code,
        "killed": r.killed,
        "truncated": r.truncated,
    }))
}
