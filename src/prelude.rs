//! The names most programs use, for a glob import.
//!
//! ```
//! use pi_engine::prelude::*;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let faux = pi_engine::providers::faux::FauxProvider::new();
//! faux.push("Hello!");
//! let agent = Agent::builder(faux.model()).provider(faux).build();
//! agent.prompt("Hi").await?.into_result()?;
//! assert_eq!(agent.last_assistant_text().as_deref(), Some("Hello!"));
//! # Ok(()) }
//! # tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap();
//! ```

pub use crate::agent::{Agent, AgentEvent, AgentMessage, AgentTool, AgentToolResult, TypedTool};
pub use crate::agent_session::{AgentSession, AgentSessionEvent};
pub use crate::llm::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, CancellationToken, Context, Error,
    ErrorKind, Message, Model, StopReason, StreamOptions, ThinkingLevel, Tool, ToolCall,
    ToolResultMessage, UserMessage, get_model,
};
pub use crate::providers::{ApiProvider, ApiRegistry, complete_simple, stream_simple};
