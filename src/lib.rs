// The crate's front page on docs.rs is the README: its examples run as doc tests there.
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, missing_debug_implementations)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]
// Messages live in vectors; boxing the large variant would cost an allocation per message.
#![allow(clippy::large_enum_variant)]

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

// Fuzz targets as plain functions, for `fuzz/` and `tests/fuzz_replay.rs`. Not API: hidden,
// no stability promise, may change in any release (its own docs say so; an outer doc comment
// here would make rustdoc resolve the module's links from the crate root).
#[doc(hidden)]
#[path = "fuzz_targets.rs"]
pub mod __fuzz;

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
