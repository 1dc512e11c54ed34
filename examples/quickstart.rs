//! Streams a reply and prints it as it arrives.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! Runs offline on the faux provider.

use std::io::Write;
use std::sync::Arc;

use futures::StreamExt;
use pi_engine::providers::faux::{Chunking, FauxProvider, FauxResponse};
use pi_engine::{
    ApiRegistry, AssistantContent, AssistantMessageEvent, Context, StreamOptions, UserMessage,
};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let prompt = "In one sentence: what is pi-engine?";
    let faux = FauxProvider::builder()
        .chunking(Chunking::Tokens {
            min: 1,
            max: 2,
            seed: 7,
        })
        .tokens_per_second(60.0)
        .build();
    faux.push(FauxResponse::content(vec![
        AssistantContent::thinking("The user asks about this crate. Answer briefly."),
        AssistantContent::text(
            "pi-engine is a Rust library that embeds an AI agent: one streaming protocol \
             over many LLM providers, a ReAct agent loop with tools, and pi-compatible sessions.",
        ),
    ]));
    let registry = ApiRegistry::new();
    registry.register(Arc::new(faux.clone()));
    let model = faux.model();

    println!("model: {}/{} (faux, offline)", model.provider, model.id);
    println!("> {prompt}");
    let context = Context::new()
        .with_system_prompt("You are a helpful assistant.")
        .with_message(UserMessage::text(prompt));
    let mut stream = registry.stream(&model, &context, &StreamOptions::new());
    let mut stdout = std::io::stdout();
    while let Some(event) = stream.next().await {
        match event {
            AssistantMessageEvent::ThinkingStart { .. } => print!("[thinking] "),
            AssistantMessageEvent::ThinkingDelta { delta, .. }
            | AssistantMessageEvent::TextDelta { delta, .. } => print!("{delta}"),
            AssistantMessageEvent::ThinkingEnd { .. } | AssistantMessageEvent::TextEnd { .. } => {
                println!()
            }
            _ => {}
        }
        let _ = stdout.flush();
    }
    let reply = stream.result().await;
    match reply.error() {
        Some(e) => eprintln!("error: {e}"),
        None => println!(
            "[{} input + {} output tokens, stop reason {}]",
            reply.usage.input,
            reply.usage.output,
            reply.stop_reason.as_str()
        ),
    }
}
