//! An MCP server's tool as an [`AgentTool`]: its name prefixed with the server's, its input
//! schema as the parameters (so the agent validates and coerces the arguments as for any
//! tool), its results mapped to tool results, every call bounded by a deadline and cancelled
//! when the agent aborts.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::connection::{McpCall, McpCallResult, McpProgress, McpToolInfo};
use super::manager::Server;
use crate::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};
use crate::llm::message::{Content, Tool};

/// pi's text for a call cut short by an abort.
const ABORTED: &str = "Operation aborted";

/// The longest tool name (the providers' limit: OpenAI and Anthropic take 64 characters).
pub const MAX_TOOL_NAME: usize = 64;

/// The name the model calls the tool `tool` of server `server` by: `<server>__<tool>`, each
/// character outside `[A-Za-z0-9_-]` replaced by `_`, and at most [`MAX_TOOL_NAME`]
/// characters — a longer name is cut and ends with `_` and 8 hex digits of a hash of the
/// whole name, so that two long names that share a beginning stay apart.
///
/// ```
/// use pi_engine::mcp::tool_name;
///
/// assert_eq!(tool_name("my server", "read.file"), "my_server__read_file");
/// let long = tool_name("github", &"x".repeat(100));
/// assert_eq!(long.len(), 64);
/// assert_ne!(long, tool_name("github", &"x".repeat(101)));
/// ```
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("{server}__{tool}");
    let clean: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_TOOL_NAME {
        return clean;
    }
    hashed(&clean[..MAX_TOOL_NAME - 9], &full)
}

/// `prefix` + `_` + 8 hex digits of FNV-1a of `full` (stable across runs and versions).
pub(crate) fn hashed(prefix: &str, full: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in full.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{prefix}_{:08x}", (h ^ (h >> 32)) as u32)
}

/// The definition the model sees for an MCP tool named `name`.
pub(crate) fn definition(name: String, server: &str, info: &McpToolInfo) -> Tool {
    let description = match (&info.description, &info.title) {
        (Some(d), _) if !d.trim().is_empty() => d.clone(),
        (_, Some(t)) if !t.trim().is_empty() => t.clone(),
        _ => format!("The tool \"{}\" of the MCP server \"{server}\".", info.name),
    };
    let mut parameters = info.input_schema.clone();
    // An object schema, as every provider wants: an MCP server may leave `type` out of an
    // argument-less tool's schema.
    match &mut parameters {
        Value::Object(schema) => {
            schema
                .entry("type")
                .or_insert_with(|| Value::String("object".into()));
        }
        other => *other = serde_json::json!({"type": "object", "properties": {}}),
    }
    Tool::new(name, description, parameters)
}

/// An MCP result as the tool result the model reads. A result with `isError` becomes an
/// `Err` carrying its text.
///
/// * `text` → a text block; `image` → an image block;
/// * an embedded `resource` → its text (a blob → a note naming its URI, type and size);
/// * a `resource_link` → a line naming the link; `audio` and unknown blocks → a note;
/// * `structuredContent` → its JSON as text when the result has no text of its own.
///
/// The whole MCP result goes into the tool result's `details`.
///
/// ```
/// use pi_engine::mcp::{McpCallResult, map_result};
/// use serde_json::json;
///
/// let result = McpCallResult::new(vec![]).with_structured_content(json!({"temperature": 21}));
/// assert_eq!(map_result(&result).unwrap().text_content(), r#"{"temperature":21}"#);
///
/// let failed = McpCallResult::text("no such file").into_error();
/// assert_eq!(map_result(&failed).unwrap_err().to_string(), "no such file");
/// ```
pub fn map_result(result: &McpCallResult) -> Result<AgentToolResult, ToolError> {
    let mut content = Vec::new();
    for block in &result.content {
        if let Some(c) = map_block(block) {
            content.push(c);
        }
    }
    let has_text = content.iter().any(|c| matches!(c, Content::Text(_)));
    if !has_text && let Some(structured) = &result.structured_content {
        content.push(Content::text(structured.to_string()));
    }
    if result.is_error {
        let text: String = content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n");
        return Err(if text.is_empty() {
            "The MCP tool failed without saying why".into()
        } else {
            text.into()
        });
    }
    if content.is_empty() {
        content.push(Content::text("(no output)"));
    }
    let details = serde_json::to_value(result).unwrap_or(Value::Null);
    Ok(AgentToolResult::new(content).with_details(serde_json::json!({ "mcp": details })))
}

fn map_block(block: &Value) -> Option<Content> {
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match block.get("type").and_then(Value::as_str) {
        Some("text") => Some(Content::text(str_of(block, "text").unwrap_or_default())),
        Some("image") => match (str_of(block, "data"), str_of(block, "mimeType")) {
            (Some(data), Some(mime)) => Some(Content::image(data, mime)),
            _ => Some(Content::text("[an image the server sent without data]")),
        },
        Some("resource") => {
            let r = block.get("resource").unwrap_or(&Value::Null);
            let uri = str_of(r, "uri").unwrap_or_default();
            if let Some(text) = str_of(r, "text") {
                Some(Content::text(text))
            } else {
                let mime = str_of(r, "mimeType").unwrap_or_else(|| "unknown type".into());
                let size = str_of(r, "blob").map_or(0, |b| b.len() / 4 * 3);
                Some(Content::text(format!(
                    "[binary resource {uri} ({mime}, about {size} bytes) not shown]"
                )))
            }
        }
        Some("resource_link") => {
            let uri = str_of(block, "uri").unwrap_or_default();
            let name = str_of(block, "name").unwrap_or_default();
            let desc = str_of(block, "description")
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            Some(Content::text(format!(
                "[resource link {name} <{uri}>{desc}]"
            )))
        }
        Some("audio") => {
            let mime = str_of(block, "mimeType").unwrap_or_else(|| "audio".into());
            Some(Content::text(format!("[{mime} audio not shown]")))
        }
        Some(other) => Some(Content::text(format!("[{other} content not shown]"))),
        None => None,
    }
}

/// A tool of an MCP server, for an agent.
pub(crate) struct McpTool {
    pub(crate) server: Arc<Server>,
    pub(crate) tool: String,
    pub(crate) definition: Tool,
    pub(crate) label: String,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.definition.name)
            .field("server", &self.server.name)
            .field("tool", &self.tool)
            .finish()
    }
}

fn progress_text(p: &McpProgress) -> String {
    let amount = match p.total {
        Some(total) => format!("{}/{}", p.progress, total),
        None => p.progress.to_string(),
    };
    match &p.message {
        Some(m) => format!("progress {amount}: {m}"),
        None => format!("progress {amount}"),
    }
}

fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

#[async_trait]
impl AgentTool for McpTool {
    fn definition(&self) -> &Tool {
        &self.definition
    }

    fn label(&self) -> &str {
        &self.label
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let server = &self.server;
        let aborted = || -> ToolError { ABORTED.into() };
        if cancel.is_cancelled() {
            return Err(aborted());
        }
        // Reconnecting (after the server died) is bounded by the startup deadline.
        let connection = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(aborted()),
            c = server.connection() => c.map_err(|e| e.to_string())?,
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let call = McpCall::new(self.tool.clone(), args).with_progress(Arc::new(move |p| {
            let _ = tx.send(p);
        }));
        let timeout = server.call_timeout;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let call = connection.call_tool(call);
        tokio::pin!(call);
        let mut progress_open = true;
        // Dropping `call` on abort or timeout cancels it at the server.
        let outcome = loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(aborted()),
                () = &mut deadline => {
                    return Err(format!(
                        "MCP tool \"{}\" of server \"{}\" timed out after {} (the call was cancelled)",
                        self.tool, server.name, seconds(timeout)
                    ).into());
                }
                r = &mut call => break r,
                p = rx.recv(), if progress_open => match p {
                    Some(p) => {
                        // Not waiting on listeners past the deadline or an abort.
                        tokio::select! {
                            biased;
                            () = cancel.cancelled() => return Err(aborted()),
                            () = updates.update(AgentToolResult::text(progress_text(&p))
                                .with_details(serde_json::json!({"progress": p.progress, "total": p.total}))) => {}
                        }
                    }
                    None => progress_open = false,
                },
            }
        };
        match outcome {
            Ok(result) => map_result(&result),
            Err(e) if e.is_closed() => {
                server.forget(&connection).await;
                Err(format!(
                    "{e}. The call of \"{}\" was lost; the server will be restarted on the next call.",
                    self.tool
                )
                .into())
            }
            Err(e) => Err(e.to_string().into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_sanitized_and_capped() {
        assert_eq!(tool_name("fs", "read_file"), "fs__read_file");
        assert_eq!(tool_name("a.b", "c d/é"), "a_b__c_d__");
        let long = tool_name("server", &"t".repeat(80));
        assert_eq!(long.len(), MAX_TOOL_NAME);
        assert!(long.starts_with("server__ttt"));
        assert!(long[55..].starts_with('_'));
        assert!(long[56..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(long, tool_name("server", &"t".repeat(80)), "stable");
        assert_ne!(long, tool_name("server", &"t".repeat(81)));
        assert_eq!(tool_name("s", &"x".repeat(61)).len(), 64);
        assert_eq!(
            tool_name("s", &"x".repeat(61)),
            format!("s__{}", "x".repeat(61))
        );
    }

    #[test]
    fn definitions_keep_the_schema() {
        let info = McpToolInfo::new(
            "echo",
            json!({"type": "object", "properties": {"m": {"type": "string"}}, "required": ["m"]}),
        )
        .with_description("Echoes");
        let def = definition("s__echo".into(), "s", &info);
        assert_eq!(def.description, "Echoes");
        assert_eq!(def.parameters["required"], json!(["m"]));
        let bare = McpToolInfo::new("noargs", json!({"properties": {}}));
        let def = definition("s__noargs".into(), "s", &bare);
        assert_eq!(def.parameters["type"], "object");
        assert!(def.description.contains("noargs"));
    }

    #[test]
    fn results_are_mapped() {
        let result: McpCallResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///x.txt", "text": "file body"}},
                {"type": "resource", "resource": {"uri": "file:///x.bin", "mimeType": "application/octet-stream", "blob": "AAAAAAAA"}},
                {"type": "resource_link", "uri": "file:///y", "name": "y"},
                {"type": "audio", "data": "AA", "mimeType": "audio/wav"},
                {"type": "hologram"}
            ],
            "structuredContent": {"ignored": "there is text"},
            "isError": null
        }))
        .unwrap();
        let out = map_result(&result).unwrap();
        assert_eq!(out.content.len(), 7);
        assert_eq!(out.content[0], Content::text("a"));
        assert_eq!(out.content[1], Content::image("AAAA", "image/png"));
        assert_eq!(out.content[2], Content::text("file body"));
        let texts: Vec<_> = out.content.iter().filter_map(Content::as_text).collect();
        assert!(
            texts[2].contains("file:///x.bin") && texts[2].contains("6 bytes"),
            "{texts:?}"
        );
        assert!(texts[3].contains("resource link y <file:///y>"));
        assert!(texts[4].contains("audio/wav"));
        assert!(texts[5].contains("hologram"));
        assert_eq!(out.details["mcp"]["content"][0]["text"], "a");

        let structured = McpCallResult::new(vec![
            json!({"type": "image", "data": "AA", "mimeType": "image/png"}),
        ])
        .with_structured_content(json!({"t": 1}));
        let out = map_result(&structured).unwrap();
        assert_eq!(out.text_content(), r#"{"t":1}"#);

        assert_eq!(
            map_result(&McpCallResult::default())
                .unwrap()
                .text_content(),
            "(no output)"
        );
        let err = map_result(&McpCallResult::default().into_error()).unwrap_err();
        assert!(err.to_string().contains("failed"));
        let err = map_result(
            &McpCallResult::new(vec![
                json!({"type": "text", "text": "bad"}),
                json!({"type": "text", "text": "input"}),
            ])
            .into_error(),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "bad\ninput");
    }
}
