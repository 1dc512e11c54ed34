//! Mistral (`mistral-conversations`, `POST {baseUrl}/v1/chat/completions`), as pi-ai 0.73.1
//! speaks it through the Mistral SDK (`@mistralai/mistralai` 2.7): the same request bodies
//! (the SDK's wire form, key order included) and headers, the same events from the same bytes.
//!
//! Options: `temperature` and `max_tokens` are sent as they are (`max_tokens: 0` too), the
//! session id is the `x-affinity` header (Mistral's KV-cache routing; a model's or the
//! caller's own `x-affinity` header wins), and these are read from [`StreamOptions::extra`]
//! by pi's names ([`MistralOptions`](crate::llm::MistralOptions) writes the last two):
//!
//! | option | type | effect |
//! |---|---|---|
//! | `toolChoice` | `"auto"` / `"none"` / `"any"` / `"required"` / `{"type":"function","function":{"name":…}}` | `tool_choice` (the typed [`ToolChoice::Required`](crate::llm::ToolChoice::Required) is sent as `"any"`) |
//! | `promptMode` | `"reasoning"` | `prompt_mode`: a Magistral model thinks |
//! | `reasoningEffort` | `none` … `xhigh` | `reasoning_effort`, for the models that take one |
//!
//! [`stream_simple`](crate::stream_simple) maps a reasoning level to `reasoningEffort`
//! (`mistral-small-2603`, `mistral-small-latest`, `mistral-medium-3.5`, through the model's
//! `thinkingLevelMap`, else `high`) or to `promptMode: "reasoning"` (the other reasoning
//! models), and refuses a call without a key with pi's `No API key for provider: <name>`.
//!
//! Tool-call ids of other providers become Mistral's nine letters and digits with pi's own
//! hash, so ids match pi's; thinking is replayed as `thinking` chunks, images as data URLs
//! (only to a model that takes images), tool errors as `[tool error] …` text.
//!
//! Kept from pi although it looks odd: Mistral opens a reply with `"content": ""`, which
//! starts a text block, so a reply of tool calls only holds an empty text block first; every
//! replayed tool call carries the SDK's default `"index": 0` and every assistant message
//! `"prefix": false`.
//!
//! Where ours differs from pi-ai on purpose:
//! * a stream that ends with neither a `finish_reason` nor `[DONE]` is an error (pi reports
//!   success);
//! * an HTTP error reads as every provider's (`<status> <provider's text> (request id: …)`),
//!   not as pi's `Mistral API error (<status>): <body>`; the request is retried before its
//!   first byte by the call's [`RetryPolicy`](crate::llm::RetryPolicy) (pi turns the SDK's
//!   retries off), and the stream has the shared idle timeout instead of the SDK's five
//!   minutes for the whole request;
//! * a chunk the SDK's schema refuses ends the reply with an error, as in pi, in our words
//!   (pi's is zod's list of issues); a chunk that is a provider error object reads as that
//!   error;
//! * `on_payload` sees the body as sent (snake_case, the SDK's defaults added); pi's
//!   `onPayload` sees the SDK's camelCase input;
//! * an invalid `toolChoice` is a configuration error before anything is sent (pi fails
//!   with a `TypeError` or the SDK's validation error), and Anthropic's
//!   `{"type":"tool","name":…}` names a tool (pi fails);
//! * blocks of unknown types are not sent, a keyless model sends no `Authorization`, and
//!   the `User-Agent` is the crate's, as for every provider.
//!
//! ```no_run
//! use pi_engine::{Context, StreamOptions, ThinkingLevel, UserMessage, get_model};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let model = get_model("mistral", "magistral-medium-latest").unwrap();
//! let context = Context::new().with_message(UserMessage::text("Why is the sky blue?"));
//! // The key comes from MISTRAL_API_KEY; the level becomes `promptMode: "reasoning"`.
//! let options = StreamOptions::new().with_reasoning(ThinkingLevel::High);
//! let reply = pi_engine::complete_simple(&model, &context, &options).await;
//! println!("{}", reply.text());
//! # }
//! ```

mod decode;
mod request;

pub(crate) use decode::MistralDecoder;

use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::{AssistantMessage, Context};
use crate::llm::model::{Model, api};
use crate::llm::options::StreamOptions;
use crate::providers::ApiProvider;
use crate::providers::http::stream_http;

/// The Mistral provider. Registered for `mistral-conversations` by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct MistralProvider;

impl MistralProvider {
    /// The provider.
    pub fn new() -> Self {
        MistralProvider
    }
}

impl ApiProvider for MistralProvider {
    fn api(&self) -> &str {
        api::MISTRAL_CONVERSATIONS
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let request = request::build_request(model, context, options);
        stream_http(model, options, request, MistralDecoder::new(model))
    }

    /// Refuses a call without a key (the options', `MISTRAL_API_KEY` for provider
    /// `mistral`, or a keyless model) with pi's `No API key for provider: <name>`, then
    /// streams with the reasoning level mapped.
    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        match crate::llm::env_keys::request_key(model, options) {
            Ok(_) => self.stream(
                model,
                context,
                &crate::llm::to_provider_options(model, options),
            ),
            Err(error) => AssistantMessageEventStream::failed(
                AssistantMessage::new(&model.api, &model.provider, &model.id),
                error,
            ),
        }
    }
}
