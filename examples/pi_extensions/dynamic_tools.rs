//! dynamic-tools: tools registered after loading. `echo_session` is added when the session
//! starts; `/add-echo-tool <name>` adds an echo tool of that name at run time. Each echoes its
//! `message` after a prefix (`[session] `, `[<name>] `). Port of pi's
//! `examples/extensions/dynamic-tools.ts`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use pi_engine::Tool;
use pi_engine::agent::{AgentTool, AgentToolResult, ToolError, ToolUpdates};
use pi_engine::extensions::{Extension, ExtensionContext, NotifyKind};
use pi_engine::llm::CancellationToken;
use serde_json::{Map, Value, json};

/// An echo tool: its `message` after a prefix.
pub(crate) struct EchoTool {
    definition: Tool,
    label: String,
    prefix: String,
    snippet: String,
    guidelines: Vec<String>,
}

impl EchoTool {
    pub(crate) fn new(name: &str, label: &str, prefix: &str) -> Self {
        // pi's `Type.Object({ message: Type.String({ description: "Message to echo" }) })`.
        let parameters = json!({
            "type": "object",
            "properties": {"message": {"type": "string", "description": "Message to echo"}},
            "required": ["message"],
        });
        EchoTool {
            definition: Tool::new(
                name,
                format!("Echo a message with prefix: {prefix}"),
                parameters,
            ),
            label: label.to_owned(),
            prefix: prefix.to_owned(),
            snippet: format!("Echo back user-provided text with {} prefix", prefix.trim()),
            guidelines: vec!["Use echo_session when the user asks for exact echo output.".into()],
        }
    }
}

#[async_trait]
impl AgentTool for EchoTool {
    fn definition(&self) -> &Tool {
        &self.definition
    }

    fn label(&self) -> &str {
        &self.label
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some(&self.snippet)
    }

    fn prompt_guidelines(&self) -> &[String] {
        &self.guidelines
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        _cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let message = args
            .get("message")
            .and_then(Value::as_str)
            .ok_or("message must be a string")?;
        Ok(AgentToolResult::text(format!("{}{message}", self.prefix))
            .with_details(json!({ "tool": self.definition.name, "prefix": self.prefix })))
    }
}

/// A tool name as pi accepts it: trimmed, lower case, only `[a-z0-9_]`.
pub(crate) fn normalize_tool_name(input: &str) -> Option<String> {
    let name = input.trim().to_lowercase();
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    valid.then_some(name)
}

/// Registers an echo tool unless one of that name was registered; true when it was added.
fn register_echo_tool(
    registered: &Mutex<HashSet<String>>,
    ctx: &ExtensionContext,
    name: &str,
    label: &str,
    prefix: &str,
) -> bool {
    if !registered
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.to_owned())
    {
        return false;
    }
    ctx.register_tool(EchoTool::new(name, label, prefix));
    true
}

/// The extension, registered as `dynamic-tools`.
pub(crate) fn extension() -> Extension {
    Extension::new("dynamic-tools", |pi| {
        // The names this session's instance registered.
        let registered = Arc::new(Mutex::new(HashSet::new()));

        let names = registered.clone();
        pi.on_session_start(move |_event, ctx| {
            let names = names.clone();
            async move {
                register_echo_tool(&names, &ctx, "echo_session", "Echo Session", "[session] ");
                ctx.ui()
                    .notify("Registered dynamic tool: echo_session", NotifyKind::Info);
                Ok(())
            }
        });

        pi.register_command(
            "add-echo-tool",
            "Register a new echo tool dynamically: /add-echo-tool <tool_name>",
            move |args, ctx| {
                let names = registered.clone();
                async move {
                    let Some(name) = normalize_tool_name(&args) else {
                        ctx.ui().notify(
                            "Usage: /add-echo-tool <tool_name> (lowercase, numbers, underscores)",
                            NotifyKind::Warning,
                        );
                        return Ok(());
                    };
                    let label = format!("Echo {name}");
                    let prefix = format!("[{name}] ");
                    if !register_echo_tool(&names, &ctx, &name, &label, &prefix) {
                        ctx.ui().notify(
                            &format!("Tool already registered: {name}"),
                            NotifyKind::Warning,
                        );
                        return Ok(());
                    }
                    ctx.ui().notify(
                        &format!("Registered dynamic tool: {name}"),
                        NotifyKind::Info,
                    );
                    Ok(())
                }
            },
        );
    })
}
