//! hello: the minimal custom tool, `hello`, which greets a name. Port of pi's
//! `examples/extensions/hello.ts`.

use pi_engine::agent::{AgentToolResult, ToolContext, ToolError, TypedTool};
use pi_engine::extensions::Extension;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

// Arguments of `hello` (a plain comment: a doc comment would become the schema's description,
// which pi's schema does not have).
#[derive(Deserialize, JsonSchema)]
pub(crate) struct HelloArgs {
    /// Name to greet
    name: String,
}

async fn greet(args: HelloArgs, _cx: ToolContext) -> Result<AgentToolResult, ToolError> {
    Ok(AgentToolResult::text(format!("Hello, {}!", args.name))
        .with_details(json!({ "greeted": args.name })))
}

/// The extension, registered as `hello`.
pub(crate) fn extension() -> Extension {
    Extension::new("hello", |pi| {
        pi.register_tool(
            TypedTool::new("hello", "A simple greeting tool", greet).with_label("Hello"),
        );
    })
}
