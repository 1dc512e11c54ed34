//! The faux provider: scripted model replies for tests, with no network.
//!
//! A [`FauxProvider`] answers each call with the next queued [`FauxResponse`], streamed in
//! chunks like a real model (text, thinking and tool-call argument deltas), with usage
//! estimated from the text (four characters a token) unless the script sets it. Queue whole
//! messages, failures before any output, messages that fail half-way, or functions of the
//! request. With a [`FauxHandle`] (tower-test style) a test instead receives each call, looks
//! at its context, and answers it event by event.
//!
//! ```
//! use pi_engine::providers::faux::{FauxProvider, FauxResponse};
//! use pi_engine::{ApiRegistry, Context, StreamOptions, UserMessage};
//! use std::sync::Arc;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let faux = FauxProvider::new();
//! faux.push(FauxResponse::text("Hello from the faux model"));
//!
//! let registry = ApiRegistry::new();
//! registry.register(Arc::new(faux.clone()));
//! let ctx = Context::new().with_message(UserMessage::text("hi"));
//! let reply = registry.stream(&faux.model(), &ctx, &StreamOptions::new()).result().await;
//! assert_eq!(reply.text(), "Hello from the faux model");
//! assert_eq!(faux.requests()[0].context.messages.len(), 1);
//! # }
//! ```

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures::Stream;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::llm::error::{Error, ErrorKind};
use crate::llm::event::{AssistantMessageEvent, PartialMessage};
use crate::llm::event_stream::{AssistantMessageEventStream, EventSender, EventStream};
use crate::llm::message::{
    AssistantContent, AssistantMessage, Content, Context, Message, StopReason, ThinkingContent,
    Usage, UserContent,
};
use crate::llm::model::{InputModality, Model, ModelCost};
use crate::llm::options::StreamOptions;
use crate::providers::ApiProvider;

/// The faux provider's default api name.
pub const FAUX_API: &str = "faux";
/// The faux provider's default provider name.
pub const FAUX_PROVIDER: &str = "faux";
/// The id of the default faux model.
pub const FAUX_MODEL_ID: &str = "faux-1";

/// The error text of a call made when no response is queued (pi's wording).
pub const NO_MORE_RESPONSES: &str = "No more faux responses queued";

/// How replies are cut into deltas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Chunking {
    /// Pieces of `min..=max` "tokens" of four characters, sizes drawn from a seeded
    /// generator (pi's default is 3 to 5 tokens). Deterministic for a given seed.
    Tokens {
        /// Fewest tokens per delta.
        min: usize,
        /// Most tokens per delta.
        max: usize,
        /// Seed of the size generator.
        seed: u64,
    },
    /// Pieces of exactly this many characters (the last may be shorter).
    Chars(usize),
    /// Each block in one delta.
    Whole,
}

impl Default for Chunking {
    fn default() -> Self {
        Chunking::Tokens {
            min: 3,
            max: 5,
            seed: 0x5eed,
        }
    }
}

/// One call of the faux provider: what the agent or test sent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FauxRequest {
    /// Zero-based index of the call.
    pub index: usize,
    /// The model called.
    pub model: Model,
    /// The context sent.
    pub context: Context,
    /// The options (API keys stay redacted in `Debug`).
    pub options: StreamOptions,
}

type ResponseFn = Arc<dyn Fn(&FauxRequest) -> FauxResponse + Send + Sync>;

/// A scripted answer to one call.
#[derive(Clone)]
#[non_exhaustive]
pub enum FauxResponse {
    /// Stream this message. A `stopReason` of `error` or `aborted` streams the content and
    /// then ends with an `error` event carrying `errorMessage`: a failure mid-output.
    Message(AssistantMessage),
    /// Fail before any output: the only event is `error` with this message.
    Error(String),
    /// Compute the answer from the request.
    Respond(ResponseFn),
}

impl fmt::Debug for FauxResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FauxResponse::Message(m) => f.debug_tuple("Message").field(m).finish(),
            FauxResponse::Error(e) => f.debug_tuple("Error").field(e).finish(),
            FauxResponse::Respond(_) => f.write_str("Respond(..)"),
        }
    }
}

impl FauxResponse {
    /// A reply with one text block, stop reason `stop`.
    pub fn text(text: impl Into<String>) -> Self {
        FauxResponse::Message(faux_message(
            vec![AssistantContent::text(text)],
            StopReason::Stop,
        ))
    }

    /// A reply with `content`. The stop reason is `toolUse` when it holds a tool call, else
    /// `stop`.
    pub fn content(content: Vec<AssistantContent>) -> Self {
        let reason = if content
            .iter()
            .any(|c| matches!(c, AssistantContent::ToolCall(_)))
        {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        };
        FauxResponse::Message(faux_message(content, reason))
    }

    /// A reply that calls one tool (stop reason `toolUse`).
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        FauxResponse::content(vec![AssistantContent::tool_call(id, name, arguments)])
    }

    /// A failure before any output.
    pub fn error(message: impl Into<String>) -> Self {
        FauxResponse::Error(message.into())
    }

    /// A reply that streams `content` and then fails with `message` (stop reason `error`).
    pub fn fail_after(content: Vec<AssistantContent>, message: impl Into<String>) -> Self {
        let mut m = faux_message(content, StopReason::Error);
        m.error_message = Some(message.into());
        FauxResponse::Message(m)
    }

    /// An answer computed from the request when the call is made.
    pub fn respond(f: impl Fn(&FauxRequest) -> FauxResponse + Send + Sync + 'static) -> Self {
        FauxResponse::Respond(Arc::new(f))
    }

    /// Replaces the stop reason of a message response.
    #[must_use]
    pub fn with_stop_reason(self, reason: StopReason) -> Self {
        match self {
            FauxResponse::Message(m) => FauxResponse::Message(m.with_stop_reason(reason)),
            other => other,
        }
    }

    /// Sets the usage of a message response (otherwise it is estimated from the text).
    #[must_use]
    pub fn with_usage(self, usage: Usage) -> Self {
        match self {
            FauxResponse::Message(mut m) => {
                m.usage = usage;
                m.extra.insert(SCRIPTED_USAGE.into(), Value::Bool(true));
                FauxResponse::Message(m)
            }
            other => other,
        }
    }
}

impl From<AssistantMessage> for FauxResponse {
    fn from(m: AssistantMessage) -> Self {
        FauxResponse::Message(m)
    }
}

impl From<&str> for FauxResponse {
    fn from(s: &str) -> Self {
        FauxResponse::text(s)
    }
}

/// Marker (removed before streaming) that the script set the usage itself.
const SCRIPTED_USAGE: &str = "__fauxScriptedUsage";

fn faux_message(content: Vec<AssistantContent>, reason: StopReason) -> AssistantMessage {
    AssistantMessage::new(FAUX_API, FAUX_PROVIDER, FAUX_MODEL_ID)
        .with_content(content)
        .with_stop_reason(reason)
}

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

/// Cuts text into deltas.
#[derive(Debug, Clone)]
struct Chunker {
    chunking: Chunking,
    rng: u64,
}

impl Chunker {
    fn new(chunking: Chunking, stream_index: u64) -> Self {
        let seed = match chunking {
            Chunking::Tokens { seed, .. } => seed,
            _ => 0,
        };
        Chunker {
            chunking,
            rng: (seed ^ stream_index.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1,
        }
    }

    /// Size in characters of the next chunk.
    fn next_chars(&mut self) -> usize {
        match self.chunking {
            Chunking::Chars(n) => n.max(1),
            Chunking::Whole => usize::MAX,
            Chunking::Tokens { min, max, .. } => {
                let (min, max) = (min.max(1), max.max(min.max(1)));
                // xorshift64: deterministic and dependency-free.
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                let span = (max - min + 1) as u64;
                (min + (self.rng % span) as usize) * 4
            }
        }
    }

    /// Byte length of the next chunk of `text` (never splits a character; at least one
    /// character when `text` is not empty).
    fn next_len(&mut self, text: &str) -> usize {
        let chars = self.next_chars();
        if chars >= text.len() {
            return text.len();
        }
        text.char_indices()
            .nth(chars)
            .map(|(i, _)| i)
            .unwrap_or(text.len())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing sent yet.
    Begin,
    /// Block `index` is next to start.
    BlockStart(usize),
    /// Streaming block `index` from byte `offset` of its delta text.
    Deltas(usize, usize),
    /// Block `index` sent all its deltas.
    BlockEnd(usize),
    /// All blocks sent; the terminal event is next.
    Finish,
    /// Ended.
    Ended,
}

/// Streams a scripted message: one event per poll, checking cancellation before each.
struct FauxStream {
    message: AssistantMessage,
    cancel: CancellationToken,
    chunker: Chunker,
    tps: Option<f64>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    phase: Phase,
    /// The serialized arguments of the tool call being streamed.
    args_text: Option<String>,
}

impl FauxStream {
    /// Prepares the delta text of block `index` (tool arguments are serialized once).
    fn begin_block(&mut self, index: usize) {
        self.args_text = match &self.message.content[index] {
            AssistantContent::ToolCall(c) => {
                Some(serde_json::to_string(&c.arguments).unwrap_or_else(|_| "{}".into()))
            }
            _ => None,
        };
    }

    /// The message as streamed so far, marked aborted.
    fn aborted(&mut self) -> AssistantMessageEvent {
        let (done_blocks, partial) = match self.phase {
            Phase::Begin | Phase::BlockStart(_) | Phase::Finish | Phase::Ended => {
                let n = match self.phase {
                    Phase::BlockStart(i) => i,
                    Phase::Begin => 0,
                    _ => self.message.content.len(),
                };
                (n, None)
            }
            Phase::Deltas(i, off) => (i, Some((i, off))),
            Phase::BlockEnd(i) => (i, Some((i, usize::MAX))),
        };
        let mut content: Vec<AssistantContent> = self.message.content[..done_blocks].to_vec();
        if let Some((i, off)) = partial {
            content.push(match &self.message.content[i] {
                AssistantContent::Text(t) => {
                    AssistantContent::text(t.text[..off.min(t.text.len())].to_owned())
                }
                AssistantContent::Thinking(t) => AssistantContent::Thinking(ThinkingContent::new(
                    t.thinking[..off.min(t.thinking.len())].to_owned(),
                )),
                AssistantContent::ToolCall(c) => {
                    let mut call = c.clone();
                    if off != usize::MAX {
                        call.arguments = Map::new();
                    }
                    AssistantContent::ToolCall(call)
                }
                block @ AssistantContent::Unknown(_) => block.clone(),
            });
        }
        let mut message = std::mem::replace(&mut self.message, AssistantMessage::new("", "", ""));
        message.content = content;
        message.set_error(Error::new(ErrorKind::Aborted, "Request was aborted"));
        self.phase = Phase::Ended;
        AssistantMessageEvent::Error {
            reason: StopReason::Aborted,
            error: Box::new(message),
        }
    }

    fn finish(&mut self) -> AssistantMessageEvent {
        self.phase = Phase::Ended;
        let mut message = std::mem::replace(&mut self.message, AssistantMessage::new("", "", ""));
        match &message.stop_reason {
            StopReason::Error | StopReason::Aborted => {
                let text = message
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "Faux error".to_owned());
                let error = if message.stop_reason == StopReason::Aborted {
                    Error::new(ErrorKind::Aborted, text)
                } else {
                    Error::from_message(text)
                };
                message.set_error(error);
                AssistantMessageEvent::Error {
                    reason: message.stop_reason.clone(),
                    error: Box::new(message),
                }
            }
            _ => AssistantMessageEvent::Done {
                reason: message.stop_reason.clone(),
                message: Box::new(message),
            },
        }
    }

    fn step(&mut self) -> AssistantMessageEvent {
        use AssistantMessageEvent as E;
        match self.phase {
            Phase::Begin => {
                self.phase = if self.message.content.is_empty() {
                    Phase::Finish
                } else {
                    Phase::BlockStart(0)
                };
                E::Start
            }
            Phase::BlockStart(i) => {
                self.phase = Phase::Deltas(i, 0);
                self.begin_block(i);
                match &self.message.content[i] {
                    AssistantContent::Text(_) => E::TextStart { content_index: i },
                    AssistantContent::Thinking(_) => E::ThinkingStart { content_index: i },
                    AssistantContent::ToolCall(c) => E::ToolcallStart {
                        content_index: i,
                        id: c.id.clone(),
                        tool_name: c.name.clone(),
                    },
                    AssistantContent::Unknown(_) => {
                        unreachable!("drop_unknown_blocks removed it before streaming")
                    }
                }
            }
            Phase::Deltas(i, off) => {
                let text: &str = match (&self.message.content[i], &self.args_text) {
                    (AssistantContent::Text(t), _) => &t.text,
                    (AssistantContent::Thinking(t), _) => &t.thinking,
                    (AssistantContent::ToolCall(_), Some(args)) => args,
                    (AssistantContent::ToolCall(_), None) => "{}",
                    (AssistantContent::Unknown(_), _) => "",
                };
                let rest = &text[off..];
                let len = self.chunker.next_len(rest);
                let delta = rest[..len].to_owned();
                let end = off + len;
                let finished = end >= text.len();
                self.phase = if finished {
                    Phase::BlockEnd(i)
                } else {
                    Phase::Deltas(i, end)
                };
                match &self.message.content[i] {
                    AssistantContent::Text(_) => E::TextDelta {
                        content_index: i,
                        delta,
                    },
                    AssistantContent::Thinking(_) => E::ThinkingDelta {
                        content_index: i,
                        delta,
                    },
                    AssistantContent::ToolCall(_) => E::ToolcallDelta {
                        content_index: i,
                        delta,
                    },
                    AssistantContent::Unknown(_) => {
                        unreachable!("drop_unknown_blocks removed it before streaming")
                    }
                }
            }
            Phase::BlockEnd(i) => {
                self.phase = if i + 1 < self.message.content.len() {
                    Phase::BlockStart(i + 1)
                } else {
                    Phase::Finish
                };
                match &self.message.content[i] {
                    AssistantContent::Text(t) => E::TextEnd {
                        content_index: i,
                        content: t.text.clone(),
                    },
                    AssistantContent::Thinking(t) => E::ThinkingEnd {
                        content_index: i,
                        content: t.thinking.clone(),
                    },
                    AssistantContent::ToolCall(c) => E::ToolcallEnd {
                        content_index: i,
                        tool_call: c.clone(),
                    },
                    AssistantContent::Unknown(_) => {
                        unreachable!("drop_unknown_blocks removed it before streaming")
                    }
                }
            }
            Phase::Finish => self.finish(),
            Phase::Ended => unreachable!("step is not called after the end"),
        }
    }

    /// The pacing delay before the event the current phase produces next.
    fn pace(&self) -> Option<Duration> {
        let tps = self.tps?;
        match self.phase {
            Phase::Deltas(..) => Some(Duration::from_secs_f64(1.0 / tps)),
            _ => None,
        }
    }
}

impl Stream for FauxStream {
    type Item = AssistantMessageEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.phase == Phase::Ended {
            return Poll::Ready(None);
        }
        // pi checks the signal before every event, including the first.
        if this.cancel.is_cancelled() {
            this.sleep = None;
            return Poll::Ready(Some(this.aborted()));
        }
        if this.sleep.is_none()
            && let Some(delay) = this.pace()
        {
            this.sleep = Some(Box::pin(tokio::time::sleep(delay)));
        }
        if let Some(sleep) = &mut this.sleep {
            if sleep.as_mut().poll(cx).is_pending() {
                // Wake on cancellation too, so an abort is not delayed by pacing.
                let cancelled = {
                    let fut = this.cancel.cancelled();
                    futures::pin_mut!(fut);
                    fut.poll(cx).is_ready()
                };
                if cancelled {
                    this.sleep = None;
                    return Poll::Ready(Some(this.aborted()));
                }
                return Poll::Pending;
            }
            this.sleep = None;
        }
        Poll::Ready(Some(this.step()))
    }
}

/// pi's usage estimate: four characters a token over a text rendering of the prompt and the
/// reply, with cache reads and writes simulated per session id by common prefix.
fn estimate_usage(
    message: &AssistantMessage,
    context: &Context,
    options: &StreamOptions,
    cache: &mut HashMap<String, String>,
) -> Usage {
    let prompt = serialize_context(context);
    let prompt_tokens = estimate_tokens(&prompt);
    let output = estimate_tokens(&assistant_text(&message.content));
    let (mut input, mut cache_read, mut cache_write) = (prompt_tokens, 0, 0);
    if let Some(session) = &options.session_id
        && options.cache_retention != Some(crate::llm::options::CacheRetention::None)
    {
        if let Some(previous) = cache.get(session) {
            let common = common_prefix_chars(previous, &prompt);
            let split = prompt
                .char_indices()
                .nth(common)
                .map(|(i, _)| i)
                .unwrap_or(prompt.len());
            cache_read = estimate_tokens(&prompt[..split]);
            cache_write = estimate_tokens(&prompt[split..]);
            input = prompt_tokens.saturating_sub(cache_read);
        } else {
            cache_write = prompt_tokens;
        }
        cache.insert(session.clone(), prompt);
    }
    Usage::new(input, output, cache_read, cache_write)
}

fn estimate_tokens(text: &str) -> u64 {
    (text.encode_utf16().count() as u64).div_ceil(4)
}

fn common_prefix_chars(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

fn content_text(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            Content::Text(t) => Some(t.text.clone()),
            Content::Image(i) => Some(format!("[image:{}:{}]", i.mime_type, i.data.len())),
            Content::Unknown(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assistant_text(content: &[AssistantContent]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            AssistantContent::Text(t) => Some(t.text.clone()),
            AssistantContent::Thinking(t) => Some(t.thinking.clone()),
            AssistantContent::ToolCall(c) => Some(format!(
                "{}:{}",
                c.name,
                serde_json::to_string(&c.arguments).unwrap_or_default()
            )),
            AssistantContent::Unknown(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn serialize_context(context: &Context) -> String {
    let mut parts = Vec::new();
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        parts.push(format!("system:{system}"));
    }
    for message in &context.messages {
        let text = match message {
            Message::User(u) => match &u.content {
                UserContent::Text(s) => s.clone(),
                UserContent::Blocks(b) => content_text(b),
            },
            Message::Assistant(a) => assistant_text(&a.content),
            Message::ToolResult(r) => {
                let mut lines = vec![r.tool_name.clone()];
                lines.extend(
                    r.content
                        .iter()
                        .map(|c| content_text(std::slice::from_ref(c))),
                );
                lines.join("\n")
            }
        };
        parts.push(format!("{}:{text}", message.role()));
    }
    if let Some(tools) = context.tools.as_ref().filter(|t| !t.is_empty()) {
        parts.push(format!(
            "tools:{}",
            serde_json::to_string(tools).unwrap_or_default()
        ));
    }
    parts.join("\n\n")
}

/// Receives the calls a [`FauxProvider`] makes once its queue is empty, so a test can answer
/// each one step by step (the shape of `tower_test::mock`).
///
/// ```
/// use pi_engine::providers::faux::FauxProvider;
/// use pi_engine::{ApiProvider, Context, StopReason, StreamOptions, UserMessage};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (faux, mut handle) = FauxProvider::with_handle();
/// let ctx = Context::new().with_message(UserMessage::text("ping"));
/// let stream = faux.stream(&faux.model(), &ctx, &StreamOptions::new());
///
/// let call = handle.next_call().await.unwrap();
/// assert_eq!(call.request().context.messages.len(), 1);
/// let mut reply = call.into_reply();
/// reply.text_delta("po");
/// reply.text_delta("ng");
/// reply.done(StopReason::Stop);
///
/// assert_eq!(stream.result().await.text(), "pong");
/// # }
/// ```
#[derive(Debug)]
pub struct FauxHandle {
    rx: mpsc::UnboundedReceiver<FauxCall>,
}

impl FauxHandle {
    /// The next call, or `None` when the provider (and every clone) has been dropped.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a call not yet received stays queued.
    pub async fn next_call(&mut self) -> Option<FauxCall> {
        self.rx.recv().await
    }

    /// The next call if one is waiting.
    pub fn try_next_call(&mut self) -> Option<FauxCall> {
        self.rx.try_recv().ok()
    }
}

/// One call received through a [`FauxHandle`]: the request, and the means to answer it.
#[derive(Debug)]
pub struct FauxCall {
    request: FauxRequest,
    reply: FauxReply,
}

impl FauxCall {
    /// What was sent.
    pub fn request(&self) -> &FauxRequest {
        &self.request
    }

    /// The cancellation token of the call (cancelled when the caller aborts).
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.reply.cancel
    }

    /// Answers with a whole scripted response, streamed at once.
    pub fn respond(self, response: impl Into<FauxResponse>) {
        let mut reply = self.reply;
        match response.into() {
            FauxResponse::Message(m) => reply.message(m),
            FauxResponse::Error(e) => reply.error(e),
            FauxResponse::Respond(f) => {
                let r = f(&self.request);
                FauxCall {
                    request: self.request,
                    reply,
                }
                .respond(r)
            }
        }
    }

    /// Starts answering event by event.
    pub fn into_reply(self) -> FauxReply {
        self.reply
    }
}

/// Answers one call event by event. Methods open and close blocks as needed: a text delta
/// after a thinking delta closes the thinking block and opens a text block. Dropping the
/// reply without finishing it ends the stream with an error.
pub struct FauxReply {
    tx: EventSender<AssistantMessageEvent>,
    partial: PartialMessage,
    open: Option<usize>,
    started: bool,
    cancel: CancellationToken,
    finished: bool,
}

impl fmt::Debug for FauxReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FauxReply")
            .field("started", &self.started)
            .field("finished", &self.finished)
            .finish()
    }
}

impl FauxReply {
    fn new(
        tx: EventSender<AssistantMessageEvent>,
        base: AssistantMessage,
        cancel: CancellationToken,
    ) -> Self {
        FauxReply {
            tx,
            partial: PartialMessage::new(base),
            open: None,
            started: false,
            cancel,
            finished: false,
        }
    }

    /// The cancellation token of the call.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The message sent so far.
    pub fn partial(&self) -> &AssistantMessage {
        self.partial.message()
    }

    fn send(&mut self, event: AssistantMessageEvent) {
        if self.finished {
            return;
        }
        if !self.started && !event.is_terminal() {
            self.started = true;
            self.partial.apply(&AssistantMessageEvent::Start);
            self.tx.push(AssistantMessageEvent::Start);
        }
        self.partial.apply(&event);
        if event.is_terminal() {
            self.finished = true;
        }
        self.tx.push(event);
    }

    /// Sends `start` if it has not been sent.
    pub fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.partial.apply(&AssistantMessageEvent::Start);
            self.tx.push(AssistantMessageEvent::Start);
        }
    }

    fn open_block(&mut self, kind: BlockKind) -> usize {
        if let Some(i) = self.open {
            if block_kind(&self.partial.message().content[i]) == kind {
                return i;
            }
            self.end_block();
        }
        let i = self.partial.message().content.len();
        self.send(match kind {
            BlockKind::Text => AssistantMessageEvent::TextStart { content_index: i },
            BlockKind::Thinking => AssistantMessageEvent::ThinkingStart { content_index: i },
            BlockKind::ToolCall => unreachable!("tool calls are opened by tool_call_start"),
            BlockKind::Unknown => unreachable!("blocks of unknown types are never opened"),
        });
        self.open = Some(i);
        i
    }

    /// Sends text (opening a text block if needed).
    pub fn text_delta(&mut self, delta: impl Into<String>) {
        let i = self.open_block(BlockKind::Text);
        self.send(AssistantMessageEvent::TextDelta {
            content_index: i,
            delta: delta.into(),
        });
    }

    /// Sends reasoning text (opening a thinking block if needed).
    pub fn thinking_delta(&mut self, delta: impl Into<String>) {
        let i = self.open_block(BlockKind::Thinking);
        self.send(AssistantMessageEvent::ThinkingDelta {
            content_index: i,
            delta: delta.into(),
        });
    }

    /// Opens a tool-call block.
    pub fn tool_call_start(&mut self, id: impl Into<String>, name: impl Into<String>) {
        if self.open.is_some() {
            self.end_block();
        }
        let i = self.partial.message().content.len();
        self.send(AssistantMessageEvent::ToolcallStart {
            content_index: i,
            id: id.into(),
            tool_name: name.into(),
        });
        self.open = Some(i);
    }

    /// Sends a fragment of the open tool call's JSON arguments.
    pub fn tool_call_delta(&mut self, fragment: impl Into<String>) {
        let Some(i) = self.open else { return };
        self.send(AssistantMessageEvent::ToolcallDelta {
            content_index: i,
            delta: fragment.into(),
        });
    }

    /// Sends a whole tool call (start, one delta with the JSON arguments, end).
    pub fn tool_call(&mut self, id: impl Into<String>, name: impl Into<String>, arguments: Value) {
        self.tool_call_start(id, name);
        self.tool_call_delta(serde_json::to_string(&arguments).unwrap_or_else(|_| "{}".into()));
        self.end_block();
    }

    /// Closes the open block with its `*_end` event.
    pub fn end_block(&mut self) {
        let Some(i) = self.open.take() else { return };
        let event = match &self.partial.message().content[i] {
            AssistantContent::Text(t) => AssistantMessageEvent::TextEnd {
                content_index: i,
                content: t.text.clone(),
            },
            AssistantContent::Thinking(t) => AssistantMessageEvent::ThinkingEnd {
                content_index: i,
                content: t.thinking.clone(),
            },
            AssistantContent::ToolCall(c) => {
                let mut call = c.clone();
                let text = self.partial.tool_arguments_text(i).unwrap_or("");
                call.arguments = crate::llm::json::parse_streaming_json(text);
                AssistantMessageEvent::ToolcallEnd {
                    content_index: i,
                    tool_call: call,
                }
            }
            // The partial is folded from this handle's events, which open no such block.
            AssistantContent::Unknown(_) => return,
        };
        self.send(event);
    }

    /// Sets the usage reported at the end.
    pub fn usage(&mut self, usage: Usage) {
        self.partial.message_mut().usage = usage;
    }

    /// Closes the open block and ends the reply with `done`.
    pub fn done(&mut self, reason: StopReason) {
        self.end_block();
        self.start();
        let mut message = self.partial.message().clone();
        message.stop_reason = reason.clone();
        self.send(AssistantMessageEvent::Done {
            reason,
            message: Box::new(message),
        });
    }

    /// Ends the reply with an `error` event (the partial content is kept).
    pub fn error(&mut self, message: impl Into<String>) {
        self.open = None;
        let failed = self
            .partial
            .message()
            .clone()
            .with_error(Error::from_message(message.into()));
        self.send(AssistantMessageEvent::Error {
            reason: failed.stop_reason.clone(),
            error: Box::new(failed),
        });
    }

    /// Ends the reply as aborted (the partial content is kept).
    pub fn abort(&mut self) {
        self.open = None;
        let failed = self
            .partial
            .message()
            .clone()
            .with_error(Error::new(ErrorKind::Aborted, "Request was aborted"));
        self.send(AssistantMessageEvent::Error {
            reason: StopReason::Aborted,
            error: Box::new(failed),
        });
    }

    /// Streams a whole message (each block in one delta) and finishes.
    pub fn message(&mut self, mut message: AssistantMessage) {
        drop_unknown_blocks(&mut message);
        for block in &message.content {
            match block {
                AssistantContent::Text(t) => self.text_delta(t.text.clone()),
                AssistantContent::Thinking(t) => self.thinking_delta(t.thinking.clone()),
                AssistantContent::ToolCall(c) => self.tool_call(
                    c.id.clone(),
                    c.name.clone(),
                    Value::Object(c.arguments.clone()),
                ),
                AssistantContent::Unknown(_) => {}
            }
        }
        self.end_block();
        let mut final_message = self.partial.message().clone();
        final_message.content = message.content;
        final_message.usage = message.usage;
        final_message.response_id = message.response_id;
        final_message.stop_reason = message.stop_reason.clone();
        final_message.error_message = message.error_message.clone();
        self.start();
        if message.stop_reason.is_failure() {
            let text = message.error_message.unwrap_or_else(|| "Faux error".into());
            final_message.set_error(if message.stop_reason == StopReason::Aborted {
                Error::new(ErrorKind::Aborted, text)
            } else {
                Error::from_message(text)
            });
            self.send(AssistantMessageEvent::Error {
                reason: final_message.stop_reason.clone(),
                error: Box::new(final_message),
            });
        } else {
            self.send(AssistantMessageEvent::Done {
                reason: final_message.stop_reason.clone(),
                message: Box::new(final_message),
            });
        }
    }
}

impl Drop for FauxReply {
    fn drop(&mut self) {
        if !self.finished {
            self.error("The faux reply was dropped before it finished");
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolCall,
    /// Never opened: [`drop_unknown_blocks`] removes such blocks before streaming.
    Unknown,
}

fn block_kind(block: &AssistantContent) -> BlockKind {
    match block {
        AssistantContent::Text(_) => BlockKind::Text,
        AssistantContent::Thinking(_) => BlockKind::Thinking,
        AssistantContent::ToolCall(_) => BlockKind::ToolCall,
        AssistantContent::Unknown(_) => BlockKind::Unknown,
    }
}

/// Removes the blocks of unknown types from a scripted reply (with a warning): the stream has
/// no events for them, so the faux provider never produces one.
fn drop_unknown_blocks(message: &mut AssistantMessage) {
    message.content.retain(|block| {
        let unknown = matches!(block, AssistantContent::Unknown(_));
        if unknown {
            tracing::warn!(
                block_type = block.block_type(),
                "a faux reply's block of an unknown type is not streamed"
            );
        }
        !unknown
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::UserMessage;
    use futures::StreamExt;
    use serde_json::json;

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

    #[tokio::test]
    async fn handle_answers_step_by_step() {
        let (faux, mut handle) = FauxProvider::with_handle();
        let mut s = faux.stream(&faux.model(), &ctx(), &StreamOptions::new());
        let call = handle.next_call().await.unwrap();
        let mut reply = call.into_reply();
        reply.thinking_delta("hmm");
        reply.tool_call_start("t1", "write");
        reply.tool_call_delta(r#"{"path":"x","#);
        // Between events the consumer sees the partial arguments.
        for _ in 0..6 {
            s.next().await;
        }
        assert_eq!(
            s.partial().tool_calls().next().unwrap().arguments["path"],
            "x"
        );
        reply.tool_call_delta(r#""content":"y"}"#);
        reply.done(StopReason::ToolUse);
        let msg = s.result().await;
        assert_eq!(msg.content.len(), 2);
        assert_eq!(msg.tool_calls().next().unwrap().arguments["content"], "y");
    }

    #[tokio::test]
    async fn dropped_reply_is_an_error() {
        let (faux, mut handle) = FauxProvider::with_handle();
        let s = faux.stream(&faux.model(), &ctx(), &StreamOptions::new());
        let call = handle.next_call().await.unwrap();
        let mut reply = call.into_reply();
        reply.text_delta("partial");
        drop(reply);
        let msg = s.result().await;
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(msg.text(), "partial");
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
