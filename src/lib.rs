//! # pi-engine
//!
//! Embed an AI agent in a Rust program. A Rust implementation of the engine of the
//! [pi](https://github.com/badlogic/pi-mono) agent framework, compatible with pi 0.73.1's
//! messages, events and session files.
//!
//! The crate has four layers, each usable alone:
//!
//! 1. **LLM layer** — one message model ([`Message`], [`AssistantMessage`], …), one
//!    streaming protocol ([`AssistantMessageEvent`]) over many providers, the
//!    [`ApiRegistry`], and a scripted [faux provider](providers::faux) for tests.
//! 2. **Agent layer** — `Agent` and its ReAct loop (tools, steering, follow-ups).
//! 3. **Session layer** — pi-compatible JSONL session trees and compaction; on top of it,
//!    [`AgentSession`](agent_session::AgentSession): a persistent agent.
//! 4. **Tools** — built-in coding tools and the extension API come next (the design's
//!    `src/tools`); today tools are the application's own ([`agent::AgentTool`]).
//!
//! ## A first call
//!
//! ```
//! use std::sync::Arc;
//! use futures::StreamExt;
//! use pi_engine::providers::faux::{FauxProvider, FauxResponse};
//! use pi_engine::{ApiRegistry, AssistantMessageEvent, Context, StreamOptions, UserMessage};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! // A scripted provider; real ones (anthropic, openai, google) are registered by default.
//! let faux = FauxProvider::new();
//! faux.push(FauxResponse::text("Hello! How can I help?"));
//! let registry = ApiRegistry::new();
//! registry.register(Arc::new(faux.clone()));
//!
//! let context = Context::new()
//!     .with_system_prompt("You are helpful.")
//!     .with_message(UserMessage::text("Hi"));
//! let mut stream = registry.stream(&faux.model(), &context, &StreamOptions::new());
//! let mut printed = String::new();
//! while let Some(event) = stream.next().await {
//!     if let AssistantMessageEvent::TextDelta { delta, .. } = &event {
//!         printed.push_str(delta); // print as it arrives
//!     }
//! }
//! let reply = stream.result().await;
//! assert_eq!(printed, reply.text());
//! # }
//! ```
//!
//! ## Errors
//!
//! Model calls never return `Err` and never panic: a failure is the stream's final `error`
//! event, whose message keeps the partial output. [`AssistantMessage::error`] turns it into
//! an [`Error`] with predicates ([`Error::is_retryable`], [`Error::is_context_overflow`], …).
//!
//! ## Stability
//!
//! Wire types are `#[non_exhaustive]`: new fields and variants are not breaking changes.
//! What they read from outside loses nothing: an unknown field goes to an `extra` map, and an
//! unknown stop reason, content block, session entry type or (for [`AgentMessage`](agent::AgentMessage))
//! role to an `Unknown`/`Custom` variant holding the raw JSON, all written back unchanged.
//! Input enums the caller builds ([`ThinkingLevel`], [`CacheRetention`], …) stay closed and `Copy`.
//! The text of error messages (`Display`) is not covered by semver.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, missing_debug_implementations)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]
// Messages live in vectors; boxing the large variant would cost an allocation per message.
#![allow(clippy::large_enum_variant)]

// The README's examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod agent;
pub mod agent_session;
mod env_keys;
mod error;
mod event;
mod event_stream;
pub mod json;
mod message;
mod model;
pub mod models;
mod options;
pub mod providers;
mod redact;
pub mod session;
mod thinking;
mod tool_args;
mod validation;

pub use env_keys::{AMBIENT_CREDENTIALS, env_api_key, env_var_names, resolve_api_key};
pub use error::{Error, ErrorKind};
pub use event::{AssistantMessageEvent, PartialMessage};
pub use event_stream::{AssistantMessageEventStream, EventSender, EventStream, StreamEvent};
pub use message::{
    AssistantContent, AssistantMessage, Content, Context, Cost, Extra, ImageContent, Message,
    StopReason, TextContent, ThinkingContent, Tool, ToolCall, ToolResultMessage, Usage,
    UserContent, UserMessage, now_millis,
};
pub use model::{InputModality, Model, ModelCost, api};
pub use models::{ModelRegistry, calculate_cost, get_model, get_models, get_providers};
pub use options::{
    ApiKey, CacheRetention, DEFAULT_ERROR_BODY_TIMEOUT, DEFAULT_IDLE_TIMEOUT, PayloadHook,
    RetryPolicy, StreamOptions,
};
pub use providers::{ApiProvider, ApiRegistry, complete, complete_simple, stream, stream_simple};
pub use thinking::{
    ThinkingAdjustment, ThinkingBudgets, ThinkingLevel, UnknownThinkingLevel,
    adjust_max_tokens_for_thinking, build_base_options, clamp_thinking_level,
    supported_thinking_levels, to_provider_options,
};
pub use tool_args::parse_arguments;
pub use validation::{
    ToolCallError, ToolCallErrorKind, ToolValidator, Violation, validate_tool_arguments,
    validate_tool_call,
};

/// Re-exported so callers need not depend on `tokio-util` to cancel a call.
pub use tokio_util::sync::CancellationToken;
