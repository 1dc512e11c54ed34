//! OpenAI Chat Completions (`openai-completions`, `POST {baseUrl}/chat/completions`), for
//! OpenAI and every OpenAI-compatible server (Groq, Cerebras, xAI, OpenRouter, DeepSeek,
//! Mistral, z.ai, Moonshot, Ollama, LM Studio, vLLM, llama.cpp, Cloudflare, GitHub Copilot,
//! …), as pi-ai 0.73.1 speaks it: the same request bodies and headers, the same events from
//! the same bytes.
//!
//! What a server accepts is described by [`OpenAiCompletionsCompat`], detected from the
//! model's provider and base URL and overridden by `model.compat`.
//!
//! Provider options are read from [`StreamOptions::extra`] by pi's names:
//!
//! | option | type | effect |
//! |---|---|---|
//! | `reasoningEffort` | `minimal` … `xhigh` | reasoning, in the compat's [`ThinkingFormat`] (mapped through the model's `thinkingLevelMap`); absent = reasoning off. [`stream_simple`](crate::stream_simple) sets it from `reasoning` |
//! | `toolChoice` | `"auto"` / `"none"` / `"required"` / `{"type":"function","function":{"name":…}}` | `tool_choice` |
//!
//! Prompt caching follows `cacheRetention` (default `short`, or `long` when the environment
//! sets `PI_CACHE_RETENTION=long`) and `sessionId`: `prompt_cache_key` is the session id for
//! `api.openai.com` (or with long retention where supported), with
//! `prompt_cache_retention: "24h"` for long retention; servers with
//! [`CacheControlFormat::Anthropic`] get Anthropic-style `cache_control` markers.
//!
//! Where ours differs from pi-ai on purpose: a reply of an `n > 1` request follows its
//! first choice only (pi interleaves every choice into one text); a refusal
//! (`delta.refusal`) is kept as text and ends the reply with an error of kind
//! [`Refused`](crate::ErrorKind::Refused) (pi drops the text and reports success); Mistral's
//! content parts become text and thinking (pi writes `[object Object]`); a stream that ends
//! with neither a `finish_reason` nor `[DONE]` is an error (pi reports success).
//!
//! ```no_run
//! use pi_engine::{Context, Model, StreamOptions, UserMessage};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! // A local Ollama server: no key needed, but the OpenAI SDK convention wants one.
//! let model = Model::new("qwen3:8b", "openai-completions", "ollama", "http://localhost:11434/v1")
//!     .with_reasoning(true);
//! let context = Context::new().with_message(UserMessage::text("Why is the sky blue?"));
//! let options = StreamOptions::new()
//!     .with_api_key("ollama")
//!     .with_extra("reasoningEffort", "low".into());
//! let reply = pi_engine::complete(&model, &context, &options).await;
//! println!("{}", reply.text());
//! # }
//! ```

mod compat;
mod decode;
pub(crate) use decode::CompletionsDecoder;
mod request;

pub use compat::{CacheControlFormat, MaxTokensField, OpenAiCompletionsCompat, ThinkingFormat};

use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::Context;
use crate::llm::model::{Model, api};
use crate::llm::options::StreamOptions;
use crate::providers::ApiProvider;
use crate::providers::http::stream_http;

/// The OpenAI Chat Completions provider. Registered for `openai-completions` by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiCompletionsProvider;

impl OpenAiCompletionsProvider {
    /// The provider.
    pub fn new() -> Self {
        OpenAiCompletionsProvider
    }
}

impl ApiProvider for OpenAiCompletionsProvider {
    fn api(&self) -> &str {
        api::OPENAI_COMPLETIONS
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let request = request::build_request(model, context, options);
        stream_http(
            model,
            options,
            request,
            decode::CompletionsDecoder::new(model),
        )
    }

    /// Refuses a call without a key of its own with pi's `No API key for provider: <name>`
    /// (the raw [`stream`](Self::stream) may fall back to the SDK's variable for the
    /// vendor's own endpoint), then streams with the reasoning level mapped.
    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        crate::llm::env_keys::stream_simple_with_own_key(self, model, context, options)
    }
}
