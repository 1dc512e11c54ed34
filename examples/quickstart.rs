//! An agent with a tool: the model calls `get_weather`, reads the result and answers, and the
//! reply is printed as it streams.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! Runs offline on the faux provider, which plays the model's part from a script.

use std::io::Write;

use pi_engine::agent::{Agent, AgentEvent, AgentToolResult, ToolContext, ToolError, TypedTool};
use pi_engine::providers::faux::{Chunking, FauxProvider, FauxResponse};
use pi_engine::{ApiProvider, AssistantContent, AssistantMessageEvent, Message};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Arguments of `get_weather`.
#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// The city to look up.
    city: String,
}

async fn get_weather(args: WeatherArgs, _cx: ToolContext) -> Result<AgentToolResult, ToolError> {
    // A real tool would call a weather service here.
    let report = format!("{}: 21 °C, sunny, light wind", args.city);
    Ok(AgentToolResult::text(report).with_details(json!({"celsius": 21})))
}

/// The scripted model: a tool call, then an answer that uses the tool's result.
fn scripted_model() -> FauxProvider {
    let faux = FauxProvider::builder()
        .chunking(Chunking::Tokens {
            min: 1,
            max: 2,
            seed: 7,
        })
        .tokens_per_second(80.0)
        .build();
    faux.push(FauxResponse::content(vec![
        AssistantContent::thinking("The user wants the weather in Lisbon; I have a tool for it."),
        AssistantContent::tool_call("call_1", "get_weather", json!({"city": "Lisbon"})),
    ]));
    // The answer is computed from the request, so it shows what the tool returned.
    faux.push(FauxResponse::respond(|request| {
        let report = request
            .context
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::ToolResult(r) => Some(r.text()),
                _ => None,
            })
            .unwrap_or_else(|| "no report".into());
        FauxResponse::text(format!(
            "Here is the weather: {report}. A good day for a walk."
        ))
    }));
    faux
}

/// Builds the agent, runs one prompt and returns the final answer.
async fn run(faux: FauxProvider, echo: bool) -> String {
    let model = faux.model();
    let agent = Agent::builder(model)
        .system_prompt("You are a helpful assistant. Use tools when they help.")
        .tool(TypedTool::new(
            "get_weather",
            "Current weather in a city",
            get_weather,
        ))
        .stream_fn(move |model, context, options| faux.stream(model, context, options))
        .build();
    if echo {
        agent.subscribe(|event, _agent| {
            match event {
                AgentEvent::MessageUpdate {
                    assistant_message_event,
                } => match assistant_message_event {
                    AssistantMessageEvent::ThinkingStart { .. } => print!("[thinking] "),
                    AssistantMessageEvent::ThinkingDelta { delta, .. }
                    | AssistantMessageEvent::TextDelta { delta, .. } => print!("{delta}"),
                    AssistantMessageEvent::ThinkingEnd { .. }
                    | AssistantMessageEvent::TextEnd { .. } => println!(),
                    _ => {}
                },
                AgentEvent::ToolExecutionStart {
                    tool_name, args, ..
                } => println!(
                    "[tool] {tool_name} {}",
                    serde_json::Value::Object(args.clone())
                ),
                AgentEvent::ToolExecutionEnd { result, .. } => {
                    println!("[tool result] {}", result.text_content())
                }
                _ => {}
            }
            let _ = std::io::stdout().flush();
        });
    }
    if let Err(e) = agent.prompt("What's the weather in Lisbon?").await {
        eprintln!("error: {e}");
    }
    if let Some(error) = agent.error_message() {
        eprintln!("error: {error}");
    }
    agent
        .messages()
        .last()
        .and_then(|m| m.as_assistant())
        .map(|m| m.text())
        .unwrap_or_default()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("> What's the weather in Lisbon?   (faux model, offline)");
    run(scripted_model(), true).await;
}

#[cfg(test)]
mod tests {
    #[tokio::test(start_paused = true)]
    async fn answers_with_the_tool_result() {
        let answer = super::run(super::scripted_model(), false).await;
        assert_eq!(
            answer,
            "Here is the weather: Lisbon: 21 °C, sunny, light wind. A good day for a walk."
        );
    }
}
