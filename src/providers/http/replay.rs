//! Replays response bytes through a [`Decoder`] without HTTP: the driver's decoding steps
//! (bytes → [`SseDecoder`] → decoder → events folded into a [`PartialMessage`] → the final
//! `done` or `error`), for the fuzz targets (`crate::__fuzz`, in `src/fuzz_targets.rs`) and tests.
//!
//! It calls the decoder's methods in the order [`stream_http`](super::stream_http) does for a
//! body that arrives in the given chunks and then ends; what the driver adds around that
//! (the request, retries, the idle timeout, cancellation) is not here. Keep the two in step
//! when the driver's decoding changes.

use std::collections::VecDeque;

use super::driver::{Decoder, Emit, LARGE_EVENT};
use crate::error::{Error, ErrorKind};
use crate::event::{AssistantMessageEvent, PartialMessage};
use crate::message::{AssistantMessage, StopReason};
use crate::model::{Model, ModelCost};
use crate::providers::sse::SseDecoder;

/// A built-in wire format whose decoder [`replay_wire`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    }
}

/// Feeds `chunks` (a response body, then its end) through `decoder` and returns every event
/// the consumer of [`stream_http`](super::stream_http) would see after a successful response
/// head: `start`, the decoder's events, and one `done` or `error`.
pub(crate) fn replay<'a, D: Decoder>(
    mut decoder: D,
    model: &Model,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<AssistantMessageEvent> {
    let mut initial = AssistantMessage::new(&model.api, &model.provider, &model.id);
    initial.timestamp = 0;
    let mut state = PartialMessage::new(initial);
    let mut events = Vec::new();
    let mut queue = VecDeque::from([AssistantMessageEvent::Start]);
    let mut sse = SseDecoder::new();
    let mut chunks = chunks.into_iter();
    let mut eof = false;
    let end = loop {
        deliver(&mut queue, &mut state, &mut events);
        if let Some(event) = sse.next_event() {
            let mut out = Emit::new(&mut queue, &state);
            let handled = if event.data().len() >= LARGE_EVENT
                && decoder.wants_large_event(event.event_bytes())
            {
                let name = event.event_bytes().to_vec();
                let data = sse.take_last_data().unwrap_or_default();
                decoder.on_large_event(&name, data, &mut out)
            } else {
                decoder.on_event(event, &mut out)
            };
            if let Err(error) = handled {
                break Err(error);
            }
            continue;
        }
        if eof {
            break decoder.on_end(&mut Emit::new(&mut queue, &state));
        }
        match chunks.next() {
            Some(chunk) => sse.feed(chunk),
            None => {
                sse.finish();
                eof = true;
            }
        }
    };
    deliver(&mut queue, &mut state, &mut events);
    let last = final_event(&mut decoder, end, &state);
    state.apply(&last);
    events.push(last);
    events
}

/// Hands the queued events to the consumer: folded into `state`, then kept.
fn deliver(
    queue: &mut VecDeque<AssistantMessageEvent>,
    state: &mut PartialMessage,
    events: &mut Vec<AssistantMessageEvent>,
) {
    for event in queue.drain(..) {
        state.apply(&event);
        events.push(event);
    }
}

/// The driver's final event (`Driver::final_event`).
fn final_event<D: Decoder>(
    decoder: &mut D,
    end: Result<(), Error>,
    state: &PartialMessage,
) -> AssistantMessageEvent {
    let mut message = state.message().clone();
    decoder.finish(&mut message);
    let end = match end {
        Ok(()) if message.stop_reason.is_failure() => {
            Err(Error::new(ErrorKind::Provider, "An unknown error occurred"))
        }
        other => other,
    };
    match end {
        Ok(()) => AssistantMessageEvent::Done {
            reason: message.stop_reason,
            message: Box::new(message),
        },
        Err(error) => {
            message.set_error(error);
            AssistantMessageEvent::Error {
                reason: if message.stop_reason == StopReason::Aborted {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                },
                error: Box::new(message),
            }
        }
    }
}
