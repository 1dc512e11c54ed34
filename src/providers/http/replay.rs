//! Replays response bytes through a [`Decoder`] without HTTP: the driver's decoding steps
//! (bytes → [`SseDecoder`] → decoder → events folded into a [`PartialMessage`] → the final
//! `done` or `error`), for the fuzz targets (`crate::__fuzz`, in `src/fuzz_targets.rs`) and tests.
//!
//! It runs the driver's own decoding steps ([`Decoding`]) on a body that arrives in the given
//! chunks and then ends; what the driver adds around them (the request, retries, the idle
//! timeout, cancellation, scrubbing keys from errors) is not here.

use super::driver::{Decoder, Decoding};
use crate::llm::event::{AssistantMessageEvent, PartialMessage};
use crate::llm::message::AssistantMessage;
use crate::llm::model::{Model, ModelCost};

/// A built-in wire format whose decoder [`replay_wire`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// With only the `openai` feature every variant left starts with `OpenAi`: the names are the
// apis', not a stutter.
#[allow(clippy::enum_variant_names)]
pub(crate) enum Wire {
    /// `anthropic-messages`.
    #[cfg(feature = "anthropic")]
    Anthropic,
    /// `openai-completions`.
    #[cfg(feature = "openai")]
    OpenAiCompletions,
    /// `openai-responses` (the SDK's reading of the stream).
    #[cfg(feature = "openai")]
    OpenAiResponses,
    /// `openai-codex-responses` (Codex's reading of the same events).
    #[cfg(feature = "openai")]
    OpenAiCodexResponses,
    /// `google-generative-ai`.
    #[cfg(feature = "google")]
    Google,
    /// `bedrock-converse-stream` (AWS event-stream frames).
    #[cfg(feature = "bedrock")]
    Bedrock,
    /// `mistral-conversations`.
    #[cfg(feature = "mistral")]
    Mistral,
}

/// A model for [`replay_wire`]: priced (so that the cost arithmetic runs too), on loopback.
pub(crate) fn replay_model(wire: Wire) -> Model {
    let (api, provider) = match wire {
        #[cfg(feature = "anthropic")]
        Wire::Anthropic => ("anthropic-messages", "anthropic"),
        #[cfg(feature = "openai")]
        Wire::OpenAiCompletions => ("openai-completions", "openai"),
        #[cfg(feature = "openai")]
        Wire::OpenAiResponses => ("openai-responses", "openai"),
        #[cfg(feature = "openai")]
        Wire::OpenAiCodexResponses => ("openai-codex-responses", "openai-codex"),
        #[cfg(feature = "google")]
        Wire::Google => ("google-generative-ai", "google"),
        #[cfg(feature = "bedrock")]
        Wire::Bedrock => ("bedrock-converse-stream", "amazon-bedrock"),
        #[cfg(feature = "mistral")]
        Wire::Mistral => ("mistral-conversations", "mistral"),
    };
    Model::new("replay-model", api, provider, "http://127.0.0.1:1")
        .with_cost(ModelCost::new(3.0, 15.0, 0.3, 3.75))
}

/// Replays `chunks` through the decoder of `wire` that `model`'s provider would use (its
/// prices, id; no options). The messages' timestamps are 0.
pub(crate) fn replay_wire<'a>(
    wire: Wire,
    model: &Model,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<AssistantMessageEvent> {
    match wire {
        #[cfg(feature = "anthropic")]
        Wire::Anthropic => {
            let decoder = crate::providers::anthropic::AnthropicDecoder::new(model.cost, None);
            replay(decoder, model, chunks)
        }
        #[cfg(feature = "openai")]
        Wire::OpenAiCompletions => {
            let decoder = crate::providers::openai_completions::CompletionsDecoder::new(model);
            replay(decoder, model, chunks)
        }
        #[cfg(feature = "openai")]
        Wire::OpenAiResponses | Wire::OpenAiCodexResponses => {
            use crate::providers::openai_responses_shared::{ResponsesDecoder, TierPricing};
            let pricing = if wire == Wire::OpenAiResponses {
                TierPricing::OpenAi { requested: None }
            } else {
                TierPricing::Codex { requested: None }
            };
            replay(ResponsesDecoder::new(model, pricing), model, chunks)
        }
        #[cfg(feature = "google")]
        Wire::Google => {
            let decoder = crate::providers::google::stream::GoogleDecoder::new(model);
            replay(decoder, model, chunks)
        }
        #[cfg(feature = "bedrock")]
        Wire::Bedrock => {
            let decoder = crate::providers::bedrock::BedrockDecoder::new(model);
            replay(decoder, model, chunks)
        }
        #[cfg(feature = "mistral")]
        Wire::Mistral => {
            let decoder = crate::providers::mistral::MistralDecoder::new(model);
            replay(decoder, model, chunks)
        }
    }
}

/// Feeds `chunks` (a response body, then its end) through `decoder` and returns every event
/// the consumer of [`stream_http`](super::stream_http) would see after a successful response
/// head: `start`, the decoder's events, and one `done` or `error`.
pub(crate) fn replay<'a, D: Decoder>(
    decoder: D,
    model: &Model,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<AssistantMessageEvent> {
    let mut initial = AssistantMessage::new(&model.api, &model.provider, &model.id);
    initial.timestamp = 0;
    let mut state = PartialMessage::new(initial);
    let mut decoding = Decoding::new(decoder);
    decoding.queue.push_back(AssistantMessageEvent::Start);
    let mut chunks = chunks.into_iter();
    let mut events = Vec::new();
    loop {
        // Handed to the consumer: folded into the partial message, then kept.
        while let Some(event) = decoding.queue.pop_front() {
            state.apply(&event);
            events.push(event);
        }
        if let Some(end) = decoding.end.take() {
            let last = decoding.final_event(end, &state);
            state.apply(&last);
            events.push(last);
            return events;
        }
        if decoding.step(&state) {
            continue;
        }
        match chunks.next() {
            Some(chunk) => decoding.feed(chunk),
            None => decoding.finish_input(),
        }
    }
}
