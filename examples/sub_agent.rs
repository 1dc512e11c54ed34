//! A `spawn_sub_agent` tool: the agent hands a task to a child agent with its own
//! transcript, and gets the child's last message back as the tool result.
//!
//! ```text
//! cargo run --example sub_agent
//! ```
//!
//! The child uses the parent's model, stream function and worker tools. The parent's abort
//! reaches the child, and the child's streamed text is reported as tool updates.
//! Runs offline on the faux provider.

use std::sync::Arc;

use pi_engine::agent::{
    Agent, AgentEvent, AgentHooks, AgentTool, AgentToolResult, ToolContext, ToolError, TypedTool,
};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::{ApiProvider, Model};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Arguments of `spawn_sub_agent`.
#[derive(Deserialize, JsonSchema)]
struct SpawnArgs {
    /// The task for the sub-agent.
    task: String,
}

/// What a child agent is built from.
#[derive(Clone)]
struct SubAgentKit {
    model: Model,
    hooks: AgentHooks,
    tools: Vec<Arc<dyn AgentTool>>,
}

/// The `spawn_sub_agent` tool.
fn spawn_sub_agent(kit: SubAgentKit) -> impl AgentTool {
    TypedTool::new(
        "spawn_sub_agent",
        "Create a sub-agent for a self-contained task; returns its final answer",
        move |args: SpawnArgs, cx: ToolContext| {
            let kit = kit.clone();
            async move {
                let child = Agent::builder(kit.model)
                    .system_prompt(format!("You are a sub-agent. Task: {}", args.task))
                    .tools(kit.tools)
                    .hooks(kit.hooks)
                    .build();
                // Report the child's text as it streams.
                let updates = cx.updates.clone();
                child.subscribe_async(move |event, _| {
                    let updates = updates.clone();
                    Box::pin(async move {
                        if let AgentEvent::MessageEnd { message } = &*event
                            && let Some(reply) = message.as_assistant()
                            && !reply.text().is_empty()
                        {
                            updates.update(AgentToolResult::text(reply.text())).await;
                        }
                    })
                });
                // The parent's abort aborts the child.
                let run = child.prompt(args.task.as_str());
                let answer = tokio::select! {
                    result = run => match result.map_err(|e| e.to_string())?.into_result() {
                        Ok(_) => Some(Ok(child.last_assistant_text().unwrap_or_default())),
                        Err(e) => Some(Err(format!("The sub-agent failed: {e}"))),
                    },
                    () = cx.cancel.cancelled() => {
                        child.abort();
                        child.wait_for_idle().await;
                        return Err("Operation aborted".into());
                    }
                };
                let answer =
                    answer.unwrap_or_else(|| Err("The sub-agent did not answer".into()))?;
                Ok::<_, ToolError>(
                    AgentToolResult::text(answer).with_details(json!({"task": args.task})),
                )
            }
        },
    )
    .with_label("Spawn Sub-Agent")
}

/// Arguments of the worker tool.
#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// Text whose words to count.
    text: String,
}

fn count_words() -> impl AgentTool {
    TypedTool::new(
        "count_words",
        "Count the words of a text",
        |args: CountArgs, _| async move {
            Ok(AgentToolResult::text(
                args.text.split_whitespace().count().to_string(),
            ))
        },
    )
}

/// The script: the parent delegates, the child uses a tool and answers, the parent reports.
/// (Parent and child share the faux provider's queue, so the responses are in call order.)
fn scripted_model() -> FauxProvider {
    let faux = FauxProvider::new();
    // Parent, turn 1: delegate.
    faux.push(FauxResponse::tool_call(
        "call_parent",
        "spawn_sub_agent",
        json!({"task": "Count the words in 'the quick brown fox'"}),
    ));
    // Child, turn 1: use the worker tool.
    faux.push(FauxResponse::tool_call(
        "call_child",
        "count_words",
        json!({"text": "the quick brown fox"}),
    ));
    // Child, turn 2: answer from the tool's result.
    faux.push(FauxResponse::respond(|req| {
        let count = last_tool_result(req);
        FauxResponse::text(format!("The text has {count} words."))
    }));
    // Parent, turn 2: pass the child's answer on.
    faux.push(FauxResponse::respond(|req| {
        FauxResponse::text(format!("My sub-agent says: {}", last_tool_result(req)))
    }));
    faux
}

fn last_tool_result(req: &pi_engine::providers::faux::FauxRequest) -> String {
    req.context
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            pi_engine::Message::ToolResult(r) => Some(r.text()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Runs the parent agent; returns it for inspection.
async fn run(faux: FauxProvider) -> Agent {
    let f = faux.clone();
    let hooks = AgentHooks::new().with_stream_fn(move |m, c, o| f.stream(m, c, o));
    let kit = SubAgentKit {
        model: faux.model(),
        hooks: hooks.clone(),
        tools: vec![Arc::new(count_words())],
    };
    let parent = Agent::builder(faux.model())
        .system_prompt("You are a lead agent. Delegate self-contained tasks.")
        .tool(spawn_sub_agent(kit))
        .hooks(hooks)
        .build();
    parent.subscribe(|event, _| match event {
        AgentEvent::ToolExecutionUpdate { partial_result, .. } => {
            println!("  [sub-agent] {}", partial_result.text_content())
        }
        AgentEvent::ToolExecutionEnd { result, .. } => {
            println!("[tool result] {}", result.text_content())
        }
        _ => {}
    });
    match parent
        .prompt("How many words are in 'the quick brown fox'?")
        .await
    {
        Ok(outcome) => {
            if let Err(e) = outcome.into_result() {
                eprintln!("error: {e}");
            }
        }
        Err(e) => eprintln!("error: {e}"),
    }
    parent
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let parent = run(scripted_model()).await;
    if let Some(reply) = parent.messages().last().and_then(|m| m.as_assistant()) {
        println!("{}", reply.text());
    }
}

#[cfg(test)]
mod tests {
    use pi_engine::agent::AgentMessage;

    #[tokio::test]
    async fn the_child_answer_becomes_the_tool_result() {
        let faux = super::scripted_model();
        let parent = super::run(faux.clone()).await;
        let messages = parent.messages();
        let result = messages
            .iter()
            .find_map(|m| match m {
                AgentMessage::ToolResult(r) => Some(r.clone()),
                _ => None,
            })
            .unwrap();
        assert!(!result.is_error);
        assert_eq!(result.text(), "The text has 4 words.");
        assert_eq!(
            result.details.unwrap()["task"],
            "Count the words in 'the quick brown fox'"
        );
        assert_eq!(
            messages.last().unwrap().as_assistant().unwrap().text(),
            "My sub-agent says: The text has 4 words."
        );
        // The child's conversation stayed out of the parent's: user, call, result, answer.
        assert_eq!(messages.len(), 4);
        // The child got its own system prompt.
        let child_request = &faux.requests()[1];
        assert!(
            child_request
                .context
                .system_prompt
                .as_deref()
                .unwrap()
                .starts_with("You are a sub-agent.")
        );
    }
}
