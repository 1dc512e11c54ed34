//! The scripted provider: its builder, its queue, and the calls it records.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::PartialMessage;
use crate::llm::event_stream::{AssistantMessageEventStream, EventStream};
use crate::llm::message::{AssistantMessage, Context};
use crate::llm::model::{InputModality, Model, ModelCost};
use crate::llm::options::StreamOptions;
use crate::providers::ApiProvider;
use crate::providers::faux::{
    Chunking, FAUX_API, FAUX_MODEL_ID, FAUX_PROVIDER, FauxCall, FauxHandle, FauxReply, FauxRequest,
    FauxResponse, NO_MORE_RESPONSES,
};

use super::handle::drop_unknown_blocks;
use super::response::SCRIPTED_USAGE;
use super::stream::{Chunker, FauxStream, Phase, estimate_usage};

/// Configures a [`FauxProvider`].
#[derive(Debug, Clone)]
#[must_use]
pub struct FauxProviderBuilder {
    api: String,
    provider: String,
    models: Vec<Model>,
    chunking: Chunking,
    tokens_per_second: Option<f64>,
}

impl FauxProviderBuilder {
    /// The api name it registers under. Default `faux`.
    pub fn api(mut self, api: impl Into<String>) -> Self {
        self.api = api.into();
        self
    }

    /// The provider name of its models. Default `faux`.
    pub fn provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = provider.into();
        self
    }

    /// Adds a model (its `api` and `provider` are overwritten). Without any, one model
    /// `faux-1` with a 128k window, 16384 output tokens, text and image input.
    pub fn model(mut self, model: Model) -> Self {
        self.models.push(model);
        self
    }

    /// How replies are cut into deltas. Default: 3 to 5 tokens of 4 characters.
    pub fn chunking(mut self, chunking: Chunking) -> Self {
        self.chunking = chunking;
        self
    }

    /// Paces deltas in real (tokio) time at this many tokens a second. Default: no pacing.
    pub fn tokens_per_second(mut self, tps: f64) -> Self {
        self.tokens_per_second = Some(tps);
        self
    }

    /// Builds the provider.
    pub fn build(self) -> FauxProvider {
        let mut models = self.models;
        if models.is_empty() {
            models.push(
                Model::new(FAUX_MODEL_ID, FAUX_API, FAUX_PROVIDER, "http://localhost:0")
                    .with_name("Faux Model")
                    .with_input(vec![InputModality::Text, InputModality::Image])
                    .with_cost(ModelCost::default())
                    .with_context_window(128_000)
                    .with_max_tokens(16_384),
            );
        }
        for m in &mut models {
            m.api.clone_from(&self.api);
            m.provider.clone_from(&self.provider);
        }
        FauxProvider {
            inner: Arc::new(Inner {
                api: self.api,
                models,
                chunking: self.chunking,
                tokens_per_second: self.tokens_per_second,
                state: Mutex::new(State::default()),
                seed_counter: AtomicU64::new(0),
            }),
        }
    }
}

/// A scripted provider for tests. Cheap to clone; clones share the queue and the record of
/// requests. Register it in an [`ApiRegistry`](crate::ApiRegistry) (as `Arc::new(faux.clone())`),
/// hand it to an agent ([`AgentBuilder::provider`](crate::agent::AgentBuilder::provider)),
/// or call it directly through [`ApiProvider`].
///
/// ```
/// use pi_engine::agent::Agent;
/// use pi_engine::providers::faux::{FauxProvider, FauxResponse};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let faux = FauxProvider::new();
/// // A tool call the agent does not know (it answers with an error result), then text.
/// faux.push(FauxResponse::tool_call("call_1", "search", json!({"q": "rust"})));
/// faux.push(FauxResponse::text("No search tool here, sorry."));
/// let agent = Agent::builder(faux.model()).provider(faux.clone()).build();
/// agent.prompt("Find rust").await.unwrap().into_result().unwrap();
/// assert_eq!(faux.call_count(), 2);
/// // The second call saw the tool's error result.
/// assert_eq!(faux.requests()[1].context.messages.len(), 3);
/// # }
/// ```
#[derive(Clone)]
pub struct FauxProvider {
    inner: Arc<Inner>,
}

struct Inner {
    api: String,
    models: Vec<Model>,
    chunking: Chunking,
    tokens_per_second: Option<f64>,
    state: Mutex<State>,
    seed_counter: AtomicU64,
}

#[derive(Default)]
struct State {
    queue: VecDeque<FauxResponse>,
    requests: Vec<FauxRequest>,
    prompt_cache: HashMap<String, String>,
    handle: Option<mpsc::UnboundedSender<FauxCall>>,
}

impl fmt::Debug for FauxProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("FauxProvider")
            .field("api", &self.inner.api)
            .field("pending", &state.queue.len())
            .field("calls", &state.requests.len())
            .finish()
    }
}

impl Default for FauxProvider {
    fn default() -> Self {
        FauxProvider::new()
    }
}

impl FauxProvider {
    /// A provider with api `faux`, one model `faux-1`, and pi's default chunking.
    pub fn new() -> Self {
        FauxProvider::builder().build()
    }

    /// Configures a provider.
    pub fn builder() -> FauxProviderBuilder {
        FauxProviderBuilder {
            api: FAUX_API.into(),
            provider: FAUX_PROVIDER.into(),
            models: Vec::new(),
            chunking: Chunking::default(),
            tokens_per_second: None,
        }
    }

    /// A provider whose calls, once its queue is empty, go to the returned handle.
    pub fn with_handle() -> (FauxProvider, FauxHandle) {
        let faux = FauxProvider::new();
        let handle = faux.handle();
        (faux, handle)
    }

    /// Routes calls made while the queue is empty to a new handle (replacing any previous one).
    pub fn handle(&self) -> FauxHandle {
        let (tx, rx) = mpsc::unbounded_channel();
        self.state().handle = Some(tx);
        FauxHandle { rx }
    }

    /// The first model.
    pub fn model(&self) -> Model {
        self.inner.models[0].clone()
    }

    /// Every model.
    pub fn models(&self) -> &[Model] {
        &self.inner.models
    }

    /// The model with `id`.
    pub fn get_model(&self, id: &str) -> Option<Model> {
        self.inner.models.iter().find(|m| m.id == id).cloned()
    }

    /// Queues a response after those already queued.
    pub fn push(&self, response: impl Into<FauxResponse>) {
        self.state().queue.push_back(response.into());
    }

    /// Replaces the queue.
    pub fn set_responses(&self, responses: impl IntoIterator<Item = FauxResponse>) {
        self.state().queue = responses.into_iter().collect();
    }

    /// Queues several responses.
    pub fn append_responses(&self, responses: impl IntoIterator<Item = FauxResponse>) {
        self.state().queue.extend(responses);
    }

    /// How many responses are still queued.
    pub fn pending(&self) -> usize {
        self.state().queue.len()
    }

    /// How many calls have been made.
    pub fn call_count(&self) -> usize {
        self.state().requests.len()
    }

    /// Every call made so far, in order.
    pub fn requests(&self) -> Vec<FauxRequest> {
        self.state().requests.clone()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next_chunker(&self) -> Chunker {
        let n = self.inner.seed_counter.fetch_add(1, Ordering::Relaxed);
        Chunker::new(self.inner.chunking, n)
    }
}

impl ApiProvider for FauxProvider {
    fn api(&self) -> &str {
        &self.inner.api
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let base = AssistantMessage::new(&model.api, &model.provider, &model.id);
        let mut state = self.state();
        let request = FauxRequest {
            index: state.requests.len(),
            model: model.clone(),
            context: context.clone(),
            options: options.clone(),
        };
        state.requests.push(request.clone());
        let step = state.queue.pop_front();
        let handle = state.handle.clone();
        let cancel = options.cancel.clone().unwrap_or_default();

        let step = match step {
            Some(s) => s,
            None => {
                drop(state);
                if let Some(handle) = handle {
                    let (tx, stream) = EventStream::channel(PartialMessage::new(base.clone()));
                    let call = FauxCall {
                        request,
                        reply: FauxReply::new(tx, base.clone(), cancel),
                    };
                    if handle.send(call).is_ok() {
                        return stream;
                    }
                }
                return AssistantMessageEventStream::failed(
                    base,
                    Error::new(ErrorKind::Provider, NO_MORE_RESPONSES),
                );
            }
        };
        let step = match step {
            FauxResponse::Respond(f) => {
                drop(state);
                let resolved = f(&request);
                state = self.state();
                resolved
            }
            other => other,
        };
        let mut message = match step {
            FauxResponse::Message(m) => m,
            FauxResponse::Error(e) => {
                return AssistantMessageEventStream::failed(base, Error::from_message(e));
            }
            FauxResponse::Respond(_) => {
                return AssistantMessageEventStream::failed(
                    base,
                    Error::new(
                        ErrorKind::Config,
                        "A faux response function returned another function",
                    ),
                );
            }
        };
        message.api.clone_from(&model.api);
        message.provider.clone_from(&model.provider);
        message.model.clone_from(&model.id);
        drop_unknown_blocks(&mut message);
        let scripted_usage = message.extra.shift_remove(SCRIPTED_USAGE).is_some();
        if !scripted_usage {
            message.usage = estimate_usage(&message, context, options, &mut state.prompt_cache);
        }
        drop(state);

        let tps = self.inner.tokens_per_second.filter(|t| *t > 0.0);
        let driver = FauxStream {
            message,
            cancel,
            chunker: self.next_chunker(),
            tps,
            sleep: None,
            phase: Phase::Begin,
            args_text: None,
        };
        EventStream::from_stream(PartialMessage::new(base), driver)
    }
}

#[cfg(test)]
mod tests {
    use super::super::response::SCRIPTED_USAGE;
    use super::*;
    use crate::llm::event::AssistantMessageEvent;
    use crate::llm::message::AssistantContent;
    use crate::llm::message::StopReason;
    use crate::llm::message::Usage;
    use crate::llm::message::UserMessage;
    use futures::StreamExt;
    use serde_json::json;
    use std::time::Duration;
    use tokio_util::sync::CancellationToken;

    fn ctx() -> Context {
        Context::new().with_message(UserMessage::text("hello"))
    }

    #[tokio::test]
    async fn streams_blocks_in_chunks() {
        let faux = FauxProvider::builder().chunking(Chunking::Chars(3)).build();
        faux.push(FauxResponse::content(vec![
            AssistantContent::thinking("think hard"),
            AssistantContent::text("Hello world"),
            AssistantContent::tool_call("c1", "read", json!({"path": "a.txt"})),
        ]));
        let mut s = faux.stream(&faux.model(), &ctx(), &StreamOptions::new());
        let mut kinds = Vec::new();
        while let Some(ev) = s.next().await {
            kinds.push(ev.kind());
        }
        assert_eq!(kinds[0], "start");
        assert_eq!(kinds[1], "thinking_start");
        assert_eq!(kinds.iter().filter(|k| **k == "text_delta").count(), 4);
        assert_eq!(*kinds.last().unwrap(), "done");
        let msg = s.result().await;
        assert_eq!(msg.stop_reason, StopReason::ToolUse);
        assert_eq!(msg.tool_calls().next().unwrap().arguments["path"], "a.txt");
        assert!(msg.usage.input > 0 && msg.usage.output > 0);
    }

    #[tokio::test]
    async fn empty_queue_is_an_error() {
        let faux = FauxProvider::new();
        let msg = faux
            .stream(&faux.model(), &ctx(), &StreamOptions::new())
            .result()
            .await;
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(msg.error_message.as_deref(), Some(NO_MORE_RESPONSES));
        assert_eq!(faux.call_count(), 1);
    }

    #[tokio::test]
    async fn abort_between_deltas_keeps_partial() {
        let faux = FauxProvider::builder().chunking(Chunking::Chars(2)).build();
        faux.push(FauxResponse::text("abcdefgh"));
        let token = CancellationToken::new();
        let opts = StreamOptions::new().with_cancel(token.clone());
        let mut s = faux.stream(&faux.model(), &ctx(), &opts);
        let mut deltas = 0;
        while let Some(ev) = s.next().await {
            if let AssistantMessageEvent::TextDelta { .. } = ev {
                deltas += 1;
                if deltas == 2 {
                    token.cancel();
                }
            }
        }
        let msg = s.result().await;
        assert_eq!(msg.stop_reason, StopReason::Aborted);
        assert_eq!(msg.text(), "abcd");
        assert_eq!(msg.error_message.as_deref(), Some("Request was aborted"));
        assert!(msg.error().unwrap().is_aborted());
    }

    #[tokio::test]
    async fn fail_after_content() {
        let faux = FauxProvider::new();
        faux.push(FauxResponse::fail_after(
            vec![AssistantContent::text("half")],
            "overloaded_error",
        ));
        let msg = faux
            .stream(&faux.model(), &ctx(), &StreamOptions::new())
            .result()
            .await;
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(msg.text(), "half");
        assert!(msg.error().unwrap().is_retryable());
    }

    #[tokio::test]
    async fn scripted_usage_is_kept() {
        let faux = FauxProvider::new();
        faux.push(FauxResponse::text("x").with_usage(Usage::new(100, 5, 7, 0)));
        let msg = faux
            .stream(&faux.model(), &ctx(), &StreamOptions::new())
            .result()
            .await;
        assert_eq!(msg.usage.input, 100);
        assert!(!msg.extra.contains_key(SCRIPTED_USAGE));
    }

    #[tokio::test]
    async fn cache_simulation_by_session() {
        let faux = FauxProvider::new();
        faux.push("one");
        faux.push("two");
        let opts = StreamOptions::new().with_session_id("s1");
        let first = faux.stream(&faux.model(), &ctx(), &opts).result().await;
        assert_eq!(first.usage.cache_read, 0);
        assert!(first.usage.cache_write > 0);
        let second_ctx = ctx()
            .with_message(first)
            .with_message(UserMessage::text("more"));
        let second = faux
            .stream(&faux.model(), &second_ctx, &opts)
            .result()
            .await;
        assert!(second.usage.cache_read > 0);
    }

    #[tokio::test]
    async fn respond_sees_request() {
        let faux = FauxProvider::new();
        faux.push(FauxResponse::respond(|req| {
            FauxResponse::text(format!("{} messages", req.context.messages.len()))
        }));
        let msg = faux
            .stream(&faux.model(), &ctx(), &StreamOptions::new())
            .result()
            .await;
        assert_eq!(msg.text(), "1 messages");
    }

    #[tokio::test(start_paused = true)]
    async fn pacing_uses_tokio_time() {
        let faux = FauxProvider::builder()
            .chunking(Chunking::Chars(4))
            .tokens_per_second(10.0)
            .build();
        faux.push(FauxResponse::text("0123456789abcdef"));
        let start = tokio::time::Instant::now();
        let msg = faux
            .stream(&faux.model(), &ctx(), &StreamOptions::new())
            .result()
            .await;
        assert_eq!(msg.text(), "0123456789abcdef");
        assert_eq!(start.elapsed(), Duration::from_millis(400));
    }
}
