//! `conformance tool <request.json>`: one call of a built-in coding tool, run the way the agent
//! loop runs it — the faux model calls the tool with the request's arguments, the `Agent`
//! validates and executes the call — and its tool result printed as one JSON line.

use pi_engine::agent::Agent;
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::tools::BuiltinTools;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Request {
    tool: String,
    cwd: String,
    args: Value,
}

pub(crate) async fn run(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let req: Request = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let tools = BuiltinTools::new(&req.cwd);
    let tool = tools
        .by_name(&req.tool)
        .ok_or_else(|| format!("unknown tool {:?}", req.tool))?;
    let faux = FauxProvider::new();
    faux.push(FauxResponse::tool_call("call_1", &req.tool, req.args));
    faux.push(FauxResponse::text("done"));
    let agent = Agent::builder(faux.model())
        .tools(vec![tool])
        .provider(faux)
        .build();
    // How the run ends does not matter here: the tool result is what is printed.
    let _ = agent
        .prompt("run the tool")
        .await
        .map_err(|e| e.to_string())?;
    let result = agent
        .messages()
        .into_iter()
        .find_map(|m| m.as_tool_result().cloned())
        .ok_or("the agent produced no tool result")?;
    // A failed call's result carries `details: {}` in the transcript (as pi's agent loop
    // writes it); the contract's line, like pi's driver calling the tool directly, has none.
    let details = match result.details {
        Some(Value::Object(m)) if m.is_empty() && result.is_error => Value::Null,
        Some(d) => d,
        None => Value::Null,
    };
    let line = json!({
        "content": result.content,
        "details": details,
        "isError": result.is_error,
    });
    println!("{line}");
    Ok(())
}
