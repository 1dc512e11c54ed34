//! What the OpenAI Responses apis (`openai-responses`, `azure-openai-responses`) share, as
//! pi's `openai-responses-shared`: the `input` items a conversation becomes, the tools, the
//! `reasoning` parameters, the tool-call id rule, and the decoder of the Responses SSE
//! events.
//!
//! The behaviour is described in [`openai_responses`](super::openai_responses).

mod decode;
mod long_item;
mod request;
mod tier;

pub(crate) use decode::ResponsesDecoder;
pub(crate) use request::{
    FunctionTool, ReasoningOptions, convert_messages, convert_tools, insert_reasoning,
};
pub(crate) use tier::TierPricing;

#[cfg(test)]
use crate::llm::model::{InputModality, Model};

/// A reasoning model of the Responses api, for the tests.
#[cfg(test)]
fn responses_model(provider: &str, id: &str) -> Model {
    Model::new(
        id,
        "openai-responses",
        provider,
        "https://api.openai.com/v1",
    )
    .with_reasoning(true)
    .with_input(vec![InputModality::Text, InputModality::Image])
}
