// The crate's front page on docs.rs is the README: its examples run as doc tests there.
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, missing_debug_implementations)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]
// Messages live in vectors; boxing the large variant would cost an allocation per message.
#![allow(clippy::large_enum_variant)]

pub mod agent;
pub mod agent_session;
#[cfg(feature = "cassette")]
#[cfg_attr(docsrs, doc(cfg(feature = "cassette")))]
pub mod cassette;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod cli;
pub mod extensions;
pub mod guide;
pub mod llm;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
pub mod prelude;
mod process;
pub mod providers;
pub mod session;
#[cfg(feature = "tools")]
#[cfg_attr(docsrs, doc(cfg(feature = "tools")))]
pub mod tools;
#[cfg(feature = "tui")]
#[cfg_attr(docsrs, doc(cfg(feature = "tui")))]
pub mod tui;

// Fuzz targets as plain functions, for `fuzz/` and `tests/fuzz_replay.rs`. Not API: hidden,
// no stability promise, may change in any release (its own docs say so; an outer doc comment
// here would make rustdoc resolve the module's links from the crate root).
#[doc(hidden)]
#[path = "fuzz_targets.rs"]
pub mod __fuzz;

// The first page: what a call to a model needs. Everything else of the LLM layer is in
// `llm`, the other layers in their modules; `prelude` adds the agent and the session.
pub use llm::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, CancellationToken, Content, Context,
    Error, ErrorKind, Message, Model, StopReason, StreamOptions, ThinkingLevel, Tool, ToolCall,
    ToolResultMessage, Usage, UserMessage, get_model, json, models,
};
pub use providers::{ApiProvider, ApiRegistry, complete, complete_simple, stream, stream_simple};
