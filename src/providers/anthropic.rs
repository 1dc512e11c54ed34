//! Anthropic Messages (`anthropic-messages`, `POST {baseUrl}/v1/messages`), as pi-ai 0.73.1
//! speaks it: the same request bodies and headers, the same events from the same bytes.
//!
//! Provider options are read from [`StreamOptions::extra`] by pi's names:
//!
//! | option | type | effect |
//! |---|---|---|
//! | `thinkingEnabled` | bool | `thinking` on (adaptive for Opus/Sonnet 4.6+, else a budget); `false` sends `{"type":"disabled"}`; only for reasoning models |
//! | `thinkingBudgetTokens` | number | `budget_tokens` (default 1024) |
//! | `effort` | `low`…`max` | `output_config.effort` of adaptive models |
//! | `thinkingDisplay` | `summarized` / `omitted` | `thinking.display` (default `summarized`) |
//! | `interleavedThinking` | bool | the interleaved-thinking beta for non-adaptive models (default true) |
//! | `toolChoice` | `auto` / `any` / `none` / `{"type":"tool","name":…}` | `tool_choice` |
//!
//! Prompt caching follows `cacheRetention` (default `short`, or `long` when the environment
//! sets `PI_CACHE_RETENTION=long`): `cache_control` on the system prompt, the last tool and
//! the last block of the last user message; `long` adds `ttl: "1h"` unless the model's
//! `compat.supportsLongCacheRetention` is false. A subscription token (`sk-ant-oat…`) is sent
//! as a bearer token with Claude Code's identity, as pi does.
//!
//! ```no_run
//! use pi_engine::{Context, Model, StreamOptions, UserMessage};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let model = Model::new("claude-sonnet-4-5", "anthropic-messages", "anthropic", "https://api.anthropic.com")
//!     .with_reasoning(true);
//! let context = Context::new().with_message(UserMessage::text("Why is the sky blue?"));
//! let options = StreamOptions::new()
//!     .with_extra("thinkingEnabled", true.into())
//!     .with_extra("thinkingBudgetTokens", 2048.into());
//! let reply = pi_engine::complete(&model, &context, &options).await; // key from ANTHROPIC_API_KEY
//! println!("{}", reply.text());
//! # }
//! ```

mod decode;
mod request;

use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::Context;
use crate::llm::model::{Model, api};
use crate::llm::options::StreamOptions;
use crate::providers::ApiProvider;
use crate::providers::http::stream_http;

pub(crate) use decode::AnthropicDecoder;
use request::build_request;

/// The `anthropic-version` header pi's SDK sends.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Anthropic Messages provider. Registered for `anthropic-messages` by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnthropicProvider;

impl AnthropicProvider {
    /// The provider.
    pub fn new() -> Self {
        AnthropicProvider
    }
}

impl ApiProvider for AnthropicProvider {
    fn api(&self) -> &str {
        api::ANTHROPIC_MESSAGES
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let request = build_request(model, context, options);
        let oauth_tools = match &request {
            Ok((_, true)) => Some(
                context
                    .tools
                    .iter()
                    .flatten()
                    .map(|t| t.name.clone())
                    .collect(),
            ),
            _ => None,
        };
        let decoder = AnthropicDecoder::new(model.cost, oauth_tools);
        stream_http(model, options, request.map(|(r, _)| r), decoder)
    }
}
