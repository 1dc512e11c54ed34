//! Providers and the [`ApiRegistry`] that dispatches a model call to them.
//!
//! A provider implements [`ApiProvider`] for one wire api (`anthropic-messages`, …). The
//! registry maps api names to providers; [`stream`], [`complete`], [`stream_simple`] and
//! [`complete_simple`] look up `model.api` in the global registry. Built-in providers are
//! feature-gated modules of this directory; [`faux`] is the scripted provider for tests.
//!
//! A provider never fails by returning an error or panicking: every failure (no API key,
//! HTTP error, bad bytes, cancellation) is the stream's final `error` event, carrying the
//! partial message.

// Helpers shared by the provider families (Copilot and Cloudflare quirks, JSON repair, the
// fast-path scanner) are dead code when only some families are enabled; the full build
// still reports any that no provider uses.
#![cfg_attr(
    not(all(feature = "anthropic", feature = "openai", feature = "google")),
    allow(dead_code, unused_imports)
)]

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock, RwLock};

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::{AssistantMessage, Context};
use crate::llm::model::Model;
use crate::llm::options::StreamOptions;

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "openai")]
pub mod azure_openai_responses;
#[cfg(feature = "bedrock")]
pub mod bedrock;
#[cfg(any(feature = "anthropic", feature = "openai", feature = "google"))]
pub(crate) mod body;
pub mod faux;
#[cfg(feature = "google")]
pub mod google;
#[cfg(feature = "google")]
pub mod google_vertex;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
pub(crate) mod json_scan;
#[cfg(feature = "mistral")]
pub mod mistral;
#[cfg(feature = "openai")]
pub mod openai_codex_responses;
#[cfg(feature = "openai")]
pub mod openai_completions;
#[cfg(feature = "openai")]
pub mod openai_responses;
#[cfg(feature = "openai")]
mod openai_responses_shared;
pub mod sse;
pub mod transform;
pub(crate) mod wire_count;

/// A wire api: turns a model, a context and options into a stream of events.
///
/// Implement it to add a custom api, then [`register`](ApiRegistry::register) it. The
/// returned stream must follow the protocol of [`AssistantMessageEvent`](crate::AssistantMessageEvent):
/// `start`, block events, then exactly one `done` or `error`; failures are `error` events,
/// never panics.
///
/// ```
/// use std::sync::Arc;
/// use pi_engine::{ApiProvider, ApiRegistry, AssistantContent, AssistantMessage, AssistantMessageEvent, Context, Model, StopReason, StreamOptions, llm::{AssistantMessageEventStream, PartialMessage}};
///
/// /// Answers every request with "pong".
/// struct Pong;
///
/// impl ApiProvider for Pong {
///     fn api(&self) -> &str { "pong" }
///     fn stream(&self, model: &Model, _: &Context, _: &StreamOptions) -> AssistantMessageEventStream {
///         let empty = AssistantMessage::new(&model.api, &model.provider, &model.id);
///         let done = empty.clone().with_content(vec![AssistantContent::text("pong")]);
///         let events = vec![
///             AssistantMessageEvent::Start,
///             AssistantMessageEvent::TextStart { content_index: 0 },
///             AssistantMessageEvent::TextDelta { content_index: 0, delta: "pong".into() },
///             AssistantMessageEvent::TextEnd { content_index: 0, content: "pong".into() },
///             AssistantMessageEvent::Done { reason: StopReason::Stop, message: Box::new(done) },
///         ];
///         AssistantMessageEventStream::from_stream(PartialMessage::new(empty), futures::stream::iter(events))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let registry = ApiRegistry::new();
/// registry.register(Arc::new(Pong));
/// let model = Model::new("pong-1", "pong", "local", "");
/// let reply = registry.stream(&model, &Context::new(), &StreamOptions::new()).result().await;
/// assert_eq!(reply.text(), "pong");
/// # }
/// ```
///
/// # Cancellation
///
/// A provider must watch `options.cancel` (a [`CancellationToken`](crate::CancellationToken)):
/// once it is cancelled, stop producing, release the connection, and end the stream with an
/// `error` event whose message has stop reason `aborted` (an [`Error`] of kind
/// [`ErrorKind::Aborted`], pi's text "Request was aborted"), keeping
/// the content streamed so far. (The agent loop does not wait for a stream that ignores its
/// token: it ends the reply `aborted` with what has arrived, but the provider's work goes on
/// until the stream is dropped.)
///
/// ```
/// use std::time::Duration;
/// use pi_engine::llm::{AssistantMessageEventStream, PartialMessage};
/// use pi_engine::{ApiProvider, AssistantMessage, AssistantMessageEvent, CancellationToken, Context, Model, StopReason, StreamOptions};
///
/// /// Says "tick" every 10 ms until it is cancelled.
/// struct Ticker;
///
/// impl ApiProvider for Ticker {
///     fn api(&self) -> &str { "ticker" }
///     fn stream(&self, model: &Model, _: &Context, options: &StreamOptions) -> AssistantMessageEventStream {
///         let start = AssistantMessage::new(&model.api, &model.provider, &model.id);
///         let (tx, stream) = AssistantMessageEventStream::channel(PartialMessage::new(start));
///         let cancel = options.cancel.clone().unwrap_or_default();
///         tokio::spawn(async move {
///             tx.push(AssistantMessageEvent::Start);
///             tx.push(AssistantMessageEvent::TextStart { content_index: 0 });
///             let mut text = String::new();
///             loop {
///                 tokio::select! {
///                     () = cancel.cancelled() => break,
///                     () = tokio::time::sleep(Duration::from_millis(10)) => {
///                         text.push_str("tick ");
///                         tx.push(AssistantMessageEvent::TextDelta { content_index: 0, delta: "tick ".into() });
///                     }
///                 }
///             }
///             // The contract: end the open block, then `error` with an aborted message that
///             // keeps what was streamed (`aborted` builds it from the folded message).
///             tx.push(AssistantMessageEvent::TextEnd { content_index: 0, content: text });
///             tx.aborted();
///         });
///         stream
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let cancel = CancellationToken::new();
/// let options = StreamOptions::new().with_cancel(cancel.clone());
/// let model = Model::new("tick-1", "ticker", "local", "");
/// let stream = Ticker.stream(&model, &Context::new(), &options);
/// tokio::time::sleep(Duration::from_millis(35)).await;
/// cancel.cancel();
/// let reply = stream.result().await;
/// assert_eq!(reply.stop_reason, StopReason::Aborted);
/// assert!(reply.text().starts_with("tick"));
/// # }
/// ```
pub trait ApiProvider: Send + Sync + 'static {
    /// The api this provider serves.
    fn api(&self) -> &str;

    /// Streams a reply with provider-specific options only (no unified reasoning level).
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream;

    /// Streams a reply, mapping `options.reasoning` to the provider's own options. The
    /// default calls [`stream`](Self::stream) with
    /// [`to_provider_options`](crate::llm::to_provider_options), pi's mapping for its apis.
    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        self.stream(
            model,
            context,
            &crate::llm::to_provider_options(model, options),
        )
    }
}

/// Maps api names to providers. Cheap to share: every method takes `&self`.
///
/// [`ApiRegistry::global`] is the registry the free functions ([`stream`], …) use; it starts
/// with the built-in providers enabled by cargo features. Create your own with
/// [`ApiRegistry::new`] (empty) or [`ApiRegistry::with_builtins`].
///
/// ```
/// use std::sync::Arc;
/// use futures::StreamExt;
/// use pi_engine::providers::faux::{FauxProvider, FauxResponse};
/// use pi_engine::{ApiRegistry, AssistantMessageEvent, Context, StreamOptions, UserMessage};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // A scripted provider; real ones (anthropic, openai, google) are in `with_builtins()`.
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("Hello! How can I help?"));
/// let registry = ApiRegistry::new();
/// registry.register(Arc::new(faux.clone()));
///
/// let context = Context::new()
///     .with_system_prompt("You are helpful.")
///     .with_message(UserMessage::text("Hi"));
/// let mut stream = registry.stream(&faux.model(), &context, &StreamOptions::new());
/// let mut printed = String::new();
/// while let Some(event) = stream.next().await {
///     if let AssistantMessageEvent::TextDelta { delta, .. } = &event {
///         printed.push_str(delta); // print as it arrives
///     }
/// }
/// let reply = stream.result().await;
/// assert_eq!(printed, reply.text());
/// # }
/// ```
pub struct ApiRegistry {
    providers: RwLock<BTreeMap<String, Arc<dyn ApiProvider>>>,
}

impl fmt::Debug for ApiRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiRegistry")
            .field("apis", &self.list())
            .finish()
    }
}

impl Default for ApiRegistry {
    fn default() -> Self {
        ApiRegistry::new()
    }
}

impl ApiRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ApiRegistry {
            providers: RwLock::new(BTreeMap::new()),
        }
    }

    /// A registry holding the built-in providers enabled by cargo features.
    pub fn with_builtins() -> Self {
        let registry = ApiRegistry::new();
        registry.register_builtins();
        registry
    }

    /// The process-wide registry used by [`stream`], [`complete`], [`stream_simple`] and
    /// [`complete_simple`]. Starts with the built-in providers.
    pub fn global() -> &'static ApiRegistry {
        static GLOBAL: OnceLock<ApiRegistry> = OnceLock::new();
        GLOBAL.get_or_init(ApiRegistry::with_builtins)
    }

    /// Registers (or replaces) the provider for its api; returns the one it replaced.
    pub fn register(&self, provider: Arc<dyn ApiProvider>) -> Option<Arc<dyn ApiProvider>> {
        let api = provider.api().to_owned();
        self.write().insert(api, provider)
    }

    /// Registers the built-in providers enabled by cargo features (replacing any registered
    /// under the same apis).
    pub fn register_builtins(&self) {
        for provider in builtin_providers() {
            self.register(provider);
        }
    }

    /// The provider for `api`.
    pub fn get(&self, api: &str) -> Option<Arc<dyn ApiProvider>> {
        self.read().get(api).cloned()
    }

    /// The registered api names, sorted.
    pub fn list(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Removes the provider for `api`; returns it.
    pub fn unregister(&self, api: &str) -> Option<Arc<dyn ApiProvider>> {
        self.write().remove(api)
    }

    /// Removes every provider.
    pub fn clear(&self) {
        self.write().clear();
    }

    /// Streams a reply from the provider registered for `model.api`. An unknown api gives a
    /// stream whose only event is an `error` naming it.
    pub fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        match self.get(&model.api) {
            Some(p) => p.stream(model, context, options),
            None => unknown_api(model),
        }
    }

    /// Like [`stream`](Self::stream), mapping `options.reasoning` to the provider's options.
    pub fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        match self.get(&model.api) {
            Some(p) => p.stream_simple(model, context, options),
            None => unknown_api(model),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<dyn ApiProvider>>> {
        // A panic while holding the lock cannot leave the map half-updated.
        self.providers.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<dyn ApiProvider>>> {
        self.providers.write().unwrap_or_else(|e| e.into_inner())
    }
}

fn unknown_api(model: &Model) -> AssistantMessageEventStream {
    AssistantMessageEventStream::failed(
        AssistantMessage::new(&model.api, &model.provider, &model.id),
        Error::new(
            ErrorKind::Config,
            format!("No API provider registered for api: {}", model.api),
        ),
    )
}

/// The built-in providers enabled by cargo features.
fn builtin_providers() -> Vec<Arc<dyn ApiProvider>> {
    vec![
        #[cfg(feature = "anthropic")]
        Arc::new(anthropic::AnthropicProvider::new()),
        #[cfg(feature = "openai")]
        Arc::new(openai_completions::OpenAiCompletionsProvider::new()),
        #[cfg(feature = "openai")]
        Arc::new(openai_responses::OpenAIResponsesProvider::new()),
        #[cfg(feature = "openai")]
        Arc::new(azure_openai_responses::AzureOpenAIResponsesProvider::new()),
        #[cfg(feature = "openai")]
        Arc::new(openai_codex_responses::OpenAICodexResponsesProvider::new()),
        #[cfg(feature = "google")]
        Arc::new(google::GoogleProvider::new()),
        #[cfg(feature = "google")]
        Arc::new(google_vertex::VertexProvider::new()),
        #[cfg(feature = "mistral")]
        Arc::new(mistral::MistralProvider::new()),
        #[cfg(feature = "bedrock")]
        Arc::new(bedrock::BedrockProvider::new()),
    ]
}

/// Streams a reply from the provider registered for `model.api` in the global registry.
///
/// Provider-specific options only; use [`stream_simple`] for a unified reasoning level.
/// Never fails: problems end the stream with an `error` event.
pub fn stream(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessageEventStream {
    ApiRegistry::global().stream(model, context, options)
}

/// [`stream`], awaited to its final message (whose `stopReason` tells whether it failed).
///
/// # Cancel safety
///
/// Dropping the future cancels the request; nothing is returned.
pub async fn complete(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessage {
    stream(model, context, options).result().await
}

/// Streams a reply with `options.reasoning` mapped to the provider's own options.
///
/// The key is `options.api_key`, else the environment variable named for the model's
/// provider ([`env_var_names`](crate::llm::env_var_names)); a model without either ends with pi's
/// `No API key for provider: <name>` error event (nothing is sent), unless it is
/// [keyless](Model::keyless). Never another provider's key: a custom provider does not get
/// `OPENAI_API_KEY`.
///
/// ```
/// use std::sync::Arc;
/// use futures::StreamExt;
/// use pi_engine::providers::faux::{FauxProvider, FauxResponse};
/// use pi_engine::{
///     ApiRegistry, AssistantMessageEvent, Context, StreamOptions, ThinkingLevel, UserMessage,
///     stream_simple,
/// };
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // Offline: the faux provider in the global registry. A real model would be
/// // `pi_engine::get_model("anthropic", "claude-sonnet-4-5")` with ANTHROPIC_API_KEY set.
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("Four."));
/// ApiRegistry::global().register(Arc::new(faux.clone()));
/// let context = Context::new().with_message(UserMessage::text("2 + 2?"));
/// let options = StreamOptions::new().with_reasoning(ThinkingLevel::Low);
/// let mut stream = stream_simple(&faux.model(), &context, &options);
/// while let Some(event) = stream.next().await {
///     if let AssistantMessageEvent::TextDelta { delta, .. } = event {
///         print!("{delta}");
///     }
/// }
/// assert_eq!(stream.result().await.text(), "Four.");
/// # }
/// ```
pub fn stream_simple(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessageEventStream {
    ApiRegistry::global().stream_simple(model, context, options)
}

/// [`stream_simple`], awaited to its final message.
///
/// ```
/// use std::sync::Arc;
/// use pi_engine::providers::faux::{FauxProvider, FauxResponse};
/// use pi_engine::{ApiRegistry, Context, StreamOptions, UserMessage, complete_simple};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::error("429 rate_limit_error: slow down"));
/// ApiRegistry::global().register(Arc::new(faux.clone()));
/// let context = Context::new().with_message(UserMessage::text("hi"));
/// let reply = complete_simple(&faux.model(), &context, &StreamOptions::new()).await;
/// // A failure is the reply's stop reason and its typed error, never a panic.
/// let error = reply.error().expect("the call failed");
/// assert!(error.is_retryable(), "{error}");
/// # }
/// ```
///
/// # Cancel safety
///
/// Dropping the future cancels the request; nothing is returned.
pub async fn complete_simple(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessage {
    stream_simple(model, context, options).result().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::StopReason;

    #[tokio::test]
    async fn unknown_api_is_an_error_event() {
        let registry = ApiRegistry::new();
        let model = Model::new("m", "nope", "p", "");
        let msg = registry
            .stream(&model, &Context::new(), &StreamOptions::new())
            .result()
            .await;
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(
            msg.error_message.as_deref(),
            Some("No API provider registered for api: nope")
        );
    }
}
