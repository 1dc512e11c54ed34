//! `conformance session-context <file.jsonl> [--branch ID|null]`: what the crate's
//! `SessionManager` builds from a session file, in the format of
//! `pi/session-golden/README.md` (messages normalized as its `make.mjs` does).
//!
//! `conformance session-load <file.jsonl>`: opens a session and builds its context, timed;
//! one JSON summary line on stderr (the performance harness's contract).

use std::path::Path;
use std::time::Instant;

use pi_engine::Message;
use pi_engine::agent::AgentMessage;
use pi_engine::session::{SessionManager, to_llm};
use serde_json::{Map, Value, json};

fn norm_block(b: &Value) -> Value {
    let kind = b.get("type").and_then(Value::as_str).unwrap_or_default();
    let get = |k: &str| b.get(k).cloned().unwrap_or(Value::Null);
    match kind {
        "text" => json!({"type": "text", "text": get("text")}),
        "thinking" => {
            let mut o = json!({"type": "thinking", "thinking": get("thinking")});
            if b.get("redacted").is_some_and(|r| r.as_bool() == Some(true)) {
                o["redacted"] = Value::Bool(true);
            }
            o
        }
        "toolCall" => {
            json!({"type": "toolCall", "id": get("id"), "name": get("name"), "arguments": get("arguments")})
        }
        "image" => {
            let len = b
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, |d| d.encode_utf16().count());
            json!({"type": "image", "mimeType": get("mimeType"), "dataLength": len})
        }
        other => json!({"type": other}),
    }
}

fn norm_content(c: Option<&Value>) -> Value {
    match c {
        Some(Value::Array(blocks)) => Value::Array(blocks.iter().map(norm_block).collect()),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

fn llm_content(m: &AgentMessage) -> Value {
    match to_llm(m) {
        Some(Message::User(u)) => norm_content(serde_json::to_value(&u.content).ok().as_ref()),
        Some(other) => norm_content(
            serde_json::to_value(&other)
                .ok()
                .as_ref()
                .and_then(|v| v.get("content")),
        ),
        None => Value::Null,
    }
}

fn norm_message(m: &AgentMessage) -> Value {
    let v = serde_json::to_value(m).unwrap_or(Value::Null);
    let mut out = Map::new();
    let role = m.role().to_owned();
    out.insert("role".into(), Value::String(role.clone()));
    let copy = |out: &mut Map<String, Value>, keys: &[&str]| {
        for k in keys {
            if let Some(x) = v.get(*k) {
                out.insert((*k).into(), x.clone());
            }
        }
    };
    match role.as_str() {
        "user" => {
            out.insert("content".into(), norm_content(v.get("content")));
        }
        "assistant" => {
            out.insert("content".into(), norm_content(v.get("content")));
            copy(&mut out, &["stopReason", "errorMessage"]);
        }
        "toolResult" => {
            copy(&mut out, &["toolCallId", "toolName", "isError"]);
            out.insert("content".into(), norm_content(v.get("content")));
        }
        "bashExecution" => {
            copy(&mut out, &["command", "output"]);
            out.insert(
                "exitCode".into(),
                v.get("exitCode").cloned().unwrap_or(Value::Null),
            );
            copy(&mut out, &["cancelled", "truncated", "excludeFromContext"]);
            out.insert("llmContent".into(), llm_content(m));
        }
        "custom" => {
            copy(&mut out, &["customType", "display"]);
            out.insert("content".into(), norm_content(v.get("content")));
            out.insert("llmContent".into(), llm_content(m));
        }
        "compactionSummary" => {
            copy(&mut out, &["summary", "tokensBefore"]);
            out.insert("llmContent".into(), llm_content(m));
        }
        "branchSummary" => {
            copy(&mut out, &["summary", "fromId"]);
            out.insert("llmContent".into(), llm_content(m));
        }
        _ => {}
    }
    Value::Object(out)
}

pub(crate) fn describe(
    sm: &SessionManager,
    file: &str,
    branch: Option<&Option<String>>,
) -> Result<Value, String> {
    let ctx = sm.build_session_context().map_err(|e| e.to_string())?;
    let source_version = sm.header().version();
    let leaf = sm.leaf_id();
    let mut out = Map::new();
    out.insert("file".into(), json!(file));
    if let Some(b) = branch {
        out.insert("branch".into(), json!(b));
    }
    out.insert("sourceVersion".into(), json!(source_version));
    out.insert("migrated".into(), json!(source_version < 3));
    out.insert("sessionId".into(), json!(sm.session_id()));
    out.insert("leafId".into(), json!(leaf));
    let leaf_index = leaf.and_then(|l| sm.entry_ids().position(|id| id == l));
    out.insert("leafIndex".into(), json!(leaf_index));
    let leaf_type = match sm.leaf_entry().map_err(|e| e.to_string())? {
        Some(e) => json!(e.type_name()),
        None => Value::Null,
    };
    out.insert("leafType".into(), leaf_type);
    out.insert("entryCount".into(), json!(sm.entry_count()));
    out.insert("sessionName".into(), json!(sm.session_name()));
    out.insert(
        "model".into(),
        serde_json::to_value(&ctx.model).map_err(|e| e.to_string())?,
    );
    out.insert("thinkingLevel".into(), json!(ctx.thinking_level.as_str()));
    if source_version >= 2 {
        let labels: Map<String, Value> = sm
            .entry_ids()
            .filter_map(|id| sm.label(id).map(|l| (id.to_owned(), json!(l))))
            .collect();
        out.insert("labels".into(), Value::Object(labels));
        let tree = sm.tree();
        out.insert(
            "roots".into(),
            json!(tree.roots().map(|n| n.id.clone()).collect::<Vec<_>>()),
        );
        let mut points = Map::new();
        for node in tree.nodes() {
            if tree.children(node).len() > 1 {
                let ids: Vec<_> = tree.children(node).map(|c| c.id.clone()).collect();
                points.insert(node.id.clone(), json!(ids));
            }
        }
        out.insert("branchPoints".into(), Value::Object(points));
    }
    out.insert("messageCount".into(), json!(ctx.messages.len()));
    out.insert(
        "messages".into(),
        Value::Array(ctx.messages.iter().map(norm_message).collect()),
    );
    Ok(Value::Object(out))
}

pub(crate) fn context(args: &[String]) -> Result<(), String> {
    let path = args.first().ok_or("missing session file")?;
    let branch = match args.get(1).map(String::as_str) {
        Some("--branch") => {
            let id = args.get(2).ok_or("--branch needs an id or null")?;
            Some(if id == "null" { None } else { Some(id.clone()) })
        }
        Some(other) => return Err(format!("unexpected argument {other}")),
        None => None,
    };
    let mut sm = SessionManager::open(path).map_err(|e| e.to_string())?;
    match &branch {
        Some(Some(id)) => sm.branch(id).map_err(|e| e.to_string())?,
        Some(None) => sm.reset_leaf(),
        None => {}
    }
    let file = Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let out = describe(&sm, &file, branch.as_ref())?;
    println!(
        "{}",
        serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
    );
    Ok(())
}

pub(crate) fn load(args: &[String]) -> Result<(), String> {
    let path = args.first().ok_or("missing session file")?;
    // Open and build the context in one read of the file (the messages are decoded while it
    // is indexed); "open" is the whole of it, "context" is zero.
    let t0 = Instant::now();
    let (sm, ctx) = SessionManager::open_with_context(path).map_err(|e| e.to_string())?;
    let t1 = Instant::now();
    let t2 = t1;
    // Validate against the generator's sidecar when there is one (as the node side does).
    let meta: Option<Value> = std::fs::read_to_string(format!("{path}.meta.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let ok = meta.as_ref().map(|m| {
        m["expected_context_messages"] == json!(ctx.messages.len())
            && m["leaf"] == json!(sm.leaf_id())
            && m["entries"] == json!(sm.entry_count())
    });
    let summary = json!({
        "ok": ok,
        "impl": "pi-engine",
        "entries": sm.entry_count(),
        "leaf": sm.leaf_id(),
        "context_messages": ctx.messages.len(),
        "model": ctx.model,
        "thinking_level": ctx.thinking_level.as_str(),
        "open_s": (t1 - t0).as_secs_f64(),
        "context_s": (t2 - t1).as_secs_f64(),
        "total_s": (t2 - t0).as_secs_f64(),
    });
    eprintln!("{summary}");
    // The process exits next: like node, leave the memory to the OS instead of freeing the
    // context message by message (a tenth of the run on a 100 MB uncompacted session).
    std::mem::forget(ctx);
    std::mem::forget(sm);
    Ok(())
}
