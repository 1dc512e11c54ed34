//! The LLM layer: one message model and one streaming protocol over every provider.
//!
//! Everything a provider, the agent loop and a session share lives here; the providers
//! themselves (one module per wire API) are in [`crate::providers`], and nothing in this
//! module depends on a provider, the agent or a session.
//!
//! * [`message`](Message): the conversation a model sees ([`Context`], [`Message`] and its
//!   content blocks, [`Usage`], [`Cost`], [`StopReason`]), serialized as pi's JSON.
//! * [`event`](AssistantMessageEvent): what a streaming reply emits, and
//!   [`AssistantMessageEventStream`], the stream a provider returns ([`EventSender`] feeds it).
//! * [`Model`] and the [`models`] catalog: ids, endpoints, prices, limits, `models.json`;
//!   [`compat`]: the typed `compat` settings of a model.
//! * [`StreamOptions`] and [`ThinkingLevel`]: what a call asks for; each api's typed options
//!   ([`AnthropicOptions`], [`OpenAiResponsesOptions`], … and a custom provider's own, through
//!   [`ApiOptions`]); how the simple options map onto each API ([`to_provider_options`],
//!   [`build_base_options`]).
//! * [`Error`]: the one opaque error of the crate, with [`ErrorKind`] predicates.
//! * Tool calls: [`validate_tool_call`] checks a call's arguments against its tool's JSON
//!   Schema as pi does; [`parse_arguments`] and [`json`] turn streamed argument fragments into
//!   JSON.
//! * API keys: [`ApiKey`] (never printed), [`env_api_key`] and [`resolve_api_key`].
//!
//! The names used on a first page ([`Model`], [`Context`], the messages, [`StreamOptions`],
//! [`Error`]…) are re-exported at the crate root and in [`crate::prelude`].
//!
//! ```
//! use pi_engine::llm::{Context, UserMessage, get_model};
//!
//! let model = get_model("anthropic", "claude-opus-4-7").unwrap();
//! let context = Context::new().with_message(UserMessage::text("Hello"));
//! assert_eq!(context.messages.len(), 1);
//! assert!(model.reasoning);
//! ```

pub mod compat;
pub(crate) mod env_keys;
pub(crate) mod error;
pub(crate) mod event;
pub(crate) mod event_stream;
pub mod json;
pub(crate) mod message;
pub(crate) mod model;
pub mod models;
pub(crate) mod options;
pub(crate) mod redact;
pub(crate) mod thinking;
pub(crate) mod tool_args;
pub(crate) mod validation;

pub use env_keys::{AMBIENT_CREDENTIALS, env_api_key, env_var_names, resolve_api_key};
pub use error::{Error, ErrorKind, RetryVerdict};
pub use event::{AssistantMessageEvent, PartialMessage};
pub use event_stream::{AssistantMessageEventStream, EventSender, EventStream, StreamEvent};
pub use message::{
    AssistantContent, AssistantMessage, Content, Context, Cost, Extra, ImageContent, Message,
    StopReason, TextContent, ThinkingContent, Tool, ToolCall, ToolResultMessage, Usage,
    UserContent, UserMessage, now_millis,
};
pub use model::{InputModality, Model, ModelBuilder, ModelCost, api};
pub use models::{ModelRegistry, calculate_cost, get_model, get_models, get_providers};
pub use options::{
    AnthropicOptions, ApiKey, ApiOptions, AzureOpenAiResponsesOptions, COMMON_EXTRA_KEYS,
    CacheRetention, DEFAULT_ERROR_BODY_TIMEOUT, DEFAULT_IDLE_TIMEOUT, GoogleOptions,
    GoogleThinking, GoogleVertexOptions, MistralOptions, OpenAiCodexResponsesOptions,
    OpenAiCompletionsOptions, OpenAiResponsesOptions, PayloadHook, ResponseHook, ResponseInfo,
    RetryPolicy, StreamOptions, ToolChoice, build_base_options, to_provider_options,
};
pub use thinking::{
    ThinkingAdjustment, ThinkingBudgets, ThinkingLevel, UnknownThinkingLevel,
    adjust_max_tokens_for_thinking, clamp_thinking_level, supported_thinking_levels,
};
pub use tool_args::parse_arguments;
pub use validation::{
    ToolCallError, ToolCallErrorKind, ToolValidator, Violation, validate_tool_arguments,
    validate_tool_call,
};

/// Re-exported so callers need not depend on `tokio-util` to cancel a call.
pub use tokio_util::sync::CancellationToken;
