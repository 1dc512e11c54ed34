//! todo: a `todo` tool the model manages a list with (`list`, `add` text, `toggle` id,
//! `clear`). The list lives in the tool results' details, so it is rebuilt from the branch when
//! the session starts and when it moves in its tree. Port of pi's `examples/extensions/todo.ts`.
//!
//! Not ported: the tool's `renderCall`/`renderResult` (the crate has no tool renderers), and
//! the list component `/todos` opens with `ctx.ui.custom` (`ExtensionUi` has no custom
//! components; pi's RPC mode shows nothing there either).

use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use pi_engine::Tool;
use pi_engine::agent::{AgentMessage, AgentTool, AgentToolResult, ToolError, ToolUpdates};
use pi_engine::extensions::{Extension, ExtensionContext, NotifyKind};
use pi_engine::llm::CancellationToken;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// One todo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Todo {
    pub(crate) id: u64,
    pub(crate) text: String,
    pub(crate) done: bool,
}

/// The list, as the last `todo` result on the branch left it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TodoState {
    pub(crate) todos: Vec<Todo>,
    pub(crate) next_id: u64,
}

impl Default for TodoState {
    fn default() -> Self {
        TodoState {
            todos: Vec::new(),
            next_id: 1,
        }
    }
}

type Shared = Arc<Mutex<TodoState>>;

fn lock(state: &Shared) -> MutexGuard<'_, TodoState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `todo` tool.
pub(crate) struct TodoTool {
    definition: Tool,
    state: Shared,
}

impl TodoTool {
    fn new(state: Shared) -> Self {
        // pi's `Type.Object` with `StringEnum(["list", "add", "toggle", "clear"])`.
        let parameters = json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["list", "add", "toggle", "clear"]},
                "text": {"type": "string", "description": "Todo text (for add)"},
                "id": {"type": "number", "description": "Todo ID (for toggle)"},
            },
            "required": ["action"],
        });
        TodoTool {
            definition: Tool::new(
                "todo",
                "Manage a todo list. Actions: list, add (text), toggle (id), clear",
                parameters,
            ),
            state,
        }
    }
}

/// A result with `text` and pi's details: the action, the list after it, the next id, and
/// the error if any.
fn result(text: String, action: &str, st: &TodoState, error: Option<String>) -> AgentToolResult {
    let mut details = json!({"action": action, "todos": st.todos, "nextId": st.next_id});
    if let (Some(error), Value::Object(map)) = (error, &mut details) {
        map.insert("error".into(), Value::String(error));
    }
    AgentToolResult::text(text).with_details(details)
}

#[async_trait]
impl AgentTool for TodoTool {
    fn definition(&self) -> &Tool {
        &self.definition
    }

    fn label(&self) -> &str {
        "Todo"
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        args: Map<String, Value>,
        _cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<AgentToolResult, ToolError> {
        let action = args
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut st = lock(&self.state);
        Ok(match action {
            "list" => {
                let text = if st.todos.is_empty() {
                    "No todos".to_owned()
                } else {
                    st.todos
                        .iter()
                        .map(|t| {
                            let mark = if t.done { "x" } else { " " };
                            format!("[{mark}] #{}: {}", t.id, t.text)
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                result(text, "list", &st, None)
            }
            "add" => match args.get("text").and_then(Value::as_str) {
                Some(text) if !text.is_empty() => {
                    let todo = Todo {
                        id: st.next_id,
                        text: text.to_owned(),
                        done: false,
                    };
                    st.next_id += 1;
                    let said = format!("Added todo #{}: {}", todo.id, todo.text);
                    st.todos.push(todo);
                    result(said, "add", &st, None)
                }
                _ => result(
                    "Error: text required for add".into(),
                    "add",
                    &st,
                    Some("text required".into()),
                ),
            },
            "toggle" => {
                let Some(id) = args.get("id").and_then(Value::as_f64) else {
                    return Ok(result(
                        "Error: id required for toggle".into(),
                        "toggle",
                        &st,
                        Some("id required".into()),
                    ));
                };
                match st.todos.iter_mut().find(|t| t.id as f64 == id) {
                    Some(todo) => {
                        todo.done = !todo.done;
                        let state = if todo.done {
                            "completed"
                        } else {
                            "uncompleted"
                        };
                        let said = format!("Todo #{} {state}", todo.id);
                        result(said, "toggle", &st, None)
                    }
                    None => result(
                        format!("Todo #{id} not found"),
                        "toggle",
                        &st,
                        Some(format!("#{id} not found")),
                    ),
                }
            }
            "clear" => {
                let count = st.todos.len();
                *st = TodoState::default();
                result(format!("Cleared {count} todos"), "clear", &st, None)
            }
            other => result(
                format!("Unknown action: {other}"),
                "list",
                &st,
                Some(format!("unknown action: {other}")),
            ),
        })
    }
}

/// The list as the branch's last `todo` result left it (empty without one).
fn reconstruct(ctx: &ExtensionContext) -> Result<TodoState, pi_engine::extensions::HandlerError> {
    let branch = ctx
        .session()
        .with_session_manager(|sm| sm.branch_path(None))?;
    let mut state = TodoState::default();
    for entry in &branch {
        let Some(AgentMessage::ToolResult(result)) = entry.as_message() else {
            continue;
        };
        if result.tool_name != "todo" {
            continue;
        }
        if let Some(details) = &result.details
            && let Ok(found) = serde_json::from_value::<TodoState>(details.clone())
        {
            state = found;
        }
    }
    Ok(state)
}

/// The extension, registered as `todo`.
pub(crate) fn extension() -> Extension {
    Extension::new("todo", |pi| {
        // This session's list (rebuilt from the branch when the session starts or moves).
        let state: Shared = Arc::default();

        let rebuilt = state.clone();
        pi.on_session_start(move |_event, ctx| {
            let rebuilt = rebuilt.clone();
            async move {
                let found = reconstruct(&ctx)?;
                *lock(&rebuilt) = found;
                Ok(())
            }
        });
        let rebuilt = state.clone();
        pi.on_session_tree(move |_event, ctx| {
            let rebuilt = rebuilt.clone();
            async move {
                let found = reconstruct(&ctx)?;
                *lock(&rebuilt) = found;
                Ok(())
            }
        });

        pi.register_tool(TodoTool::new(state));

        pi.register_command(
            "todos",
            "Show all todos on the current branch",
            |_args, ctx| async move {
                if !ctx.has_ui() {
                    ctx.ui()
                        .notify("/todos requires interactive mode", NotifyKind::Error);
                }
                // With a UI pi opens its list component (ctx.ui.custom): not ported, see above.
                Ok(())
            },
        );
    })
}
