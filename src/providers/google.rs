//! Google Gemini API (`google-generative-ai`,
//! `POST {baseUrl}/models/{model}:streamGenerateContent?alt=sse`), as pi-ai 0.73.1 speaks it
//! through `@google/genai`: the same request bodies, the same events from the same bytes.
//! [`google_vertex`](super::google_vertex) is the Vertex AI variant.
//!
//! The key (`x-goog-api-key`) is `options.api_key`, else `GEMINI_API_KEY`. Provider options
//! are read from [`StreamOptions::extra`] by pi's names:
//!
//! | option | type | effect |
//! |---|---|---|
//! | `toolChoice` | `auto` / `none` / `any` | `toolConfig.functionCallingConfig.mode` (only with tools) |
//! | `thinking` | `{enabled, budgetTokens?, level?}` | `generationConfig.thinkingConfig` of reasoning models: `includeThoughts` with `thinkingLevel` (Gemini 3, Gemma 4) or `thinkingBudget`; `enabled: false` sends the lowest setting the model accepts (`thinkingBudget: 0` for Gemini 2.x, `thinkingLevel` `LOW` / `MINIMAL` for Gemini 3 Pro / Flash and Gemma 4) |
//!
//! [`stream_simple`](crate::stream_simple) fills `thinking` from the reasoning level (Gemini
//! 2.5 budgets, Gemini 3 levels), as pi does.
//!
//! Replay follows pi: thinking, text and tool-call thought signatures are sent back only to
//! the same provider and model, and only when they are valid base64; another model's
//! thinking becomes plain text; all function responses of a turn go in one user content,
//! with their images inside it for Gemini 3 and later (a separate user turn for older
//! Gemini); tool-call ids are sent only to `claude-*` and `gpt-oss-*` models. One addition:
//! Gemini 3 rejects a model turn whose first function call has no signature (a call made by
//! another model), so that call carries Google's `skip_thought_signature_validator`.
//!
//! Tool calls without an id (Gemini never sends one) get `<name>_<ms>_<n>`, as in pi. Where
//! this provider does better than pi on the same bytes: Vertex's streamed arguments
//! (`partialArgs` / `willContinue`) make one tool call with its arguments streamed, not one
//! call per fragment; a blocked prompt (`promptFeedback.blockReason`) and a blocking finish
//! reason (`SAFETY`, `RECITATION`, …) are errors that say so; a stream cut before its finish
//! reason is an error, not a short reply.
//!
//! ```no_run
//! use pi_engine::{Context, Model, StreamOptions, UserMessage};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let model = pi_engine::get_model("google", "gemini-2.5-flash").unwrap();
//! let context = Context::new().with_message(UserMessage::text("Why is the sky blue?"));
//! let options = StreamOptions::new().with_reasoning(pi_engine::ThinkingLevel::Low);
//! let reply = pi_engine::complete_simple(&model, &context, &options).await; // GEMINI_API_KEY
//! println!("{}", reply.text());
//! # }
//! ```

mod fast_chunk;
mod partial_args;
pub(crate) mod request;
pub(crate) mod stream;

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::Context;
use crate::llm::model::{Model, api};
use crate::llm::options::StreamOptions;
use crate::providers::ApiProvider;
use crate::providers::http::{HttpRequest, stream_http};

use request::{Flavour, build_body};
use stream::GoogleDecoder;

/// The Gemini API endpoint `@google/genai` uses when the model has no base URL.
const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The Gemini API provider. Registered for `google-generative-ai` by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct GoogleProvider;

impl GoogleProvider {
    /// The provider.
    pub fn new() -> Self {
        GoogleProvider
    }
}

impl ApiProvider for GoogleProvider {
    fn api(&self) -> &str {
        api::GOOGLE_GENERATIVE_AI
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let request = build_request(model, context, options);
        stream_http(model, options, request, GoogleDecoder::new(model))
    }
}

fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<HttpRequest, Error> {
    // `None`: a keyless model (a local server), sent without credentials.
    let key = crate::llm::env_keys::request_key(model, options)?;
    let body = build_body(model, context, options, Flavour::GenerativeAi)?;
    let base = match model.base_url.trim() {
        "" => DEFAULT_BASE_URL,
        base => base,
    };
    let url = format!(
        "{}/{}:streamGenerateContent?alt=sse",
        base.strip_suffix('/').unwrap_or(base),
        model_path(&model.id)?
    );
    let request = HttpRequest::post_serialized(url, &body)?;
    Ok(match key {
        Some(key) => request.header("x-goog-api-key", key.expose()),
        None => request,
    })
}

/// The model's resource name on the Gemini API (`models/<id>`, or the id when it already
/// is one).
fn model_path(id: &str) -> Result<String, Error> {
    check_model_id(id)?;
    Ok(
        if id.starts_with("models/") || id.starts_with("tunedModels/") {
            id.to_owned()
        } else {
            format!("models/{id}")
        },
    )
}

/// `@google/genai` refuses ids that would change the URL's meaning.
pub(crate) fn check_model_id(id: &str) -> Result<(), Error> {
    if id.is_empty() || id.contains("..") || id.contains(['?', '&', '#']) {
        return Err(Error::new(
            ErrorKind::Config,
            format!("Invalid model id for a Google api: {id:?}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::UserMessage;

    fn parts(request: &HttpRequest) -> (String, Vec<(String, String)>) {
        let (url, headers) = request.parts();
        (url.to_owned(), headers.to_vec())
    }

    #[test]
    fn url_and_key_header() {
        let ctx = Context::new().with_message(UserMessage::text("hi"));
        let key = StreamOptions::new().with_api_key("g-key");
        let catalog = Model::new(
            "gemini-2.5-flash",
            api::GOOGLE_GENERATIVE_AI,
            "google",
            "https://generativelanguage.googleapis.com/v1beta",
        );
        let (url, headers) = parts(&build_request(&catalog, &ctx, &key).unwrap());
        assert_eq!(
            url,
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            headers,
            vec![("x-goog-api-key".to_owned(), "g-key".to_owned())]
        );

        let bare = Model::new("tunedModels/mine", api::GOOGLE_GENERATIVE_AI, "google", "");
        let (url, _) = parts(&build_request(&bare, &ctx, &key).unwrap());
        assert_eq!(
            url,
            "https://generativelanguage.googleapis.com/v1beta/tunedModels/mine:streamGenerateContent?alt=sse"
        );
        let proxy = Model::new(
            "m",
            api::GOOGLE_GENERATIVE_AI,
            "google",
            "http://127.0.0.1:9/v1beta/",
        );
        let (url, _) = parts(&build_request(&proxy, &ctx, &key).unwrap());
        assert_eq!(
            url,
            "http://127.0.0.1:9/v1beta/models/m:streamGenerateContent?alt=sse"
        );

        let bad = Model::new("a?b", api::GOOGLE_GENERATIVE_AI, "google", "");
        assert_eq!(
            build_request(&bad, &ctx, &key).unwrap_err().kind(),
            ErrorKind::Config
        );
        let nokey = Model::new("m", api::GOOGLE_GENERATIVE_AI, "no-such-provider-9", "");
        let err = build_request(&nokey, &ctx, &StreamOptions::new()).unwrap_err();
        assert!(err.is_auth());
    }
}
