//! The two [`HttpTransport`]s: [`Recorder`] and [`Player`], and [`CassetteTransport`], one
//! or the other by [`Mode`].

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;

use super::format::{Cassette, Chunk, Interaction, RecordedResponse, ScrubCounts};
use super::matching::{Match, diff, render_diff};
use super::scrub::Scrubber;
use super::{CassetteError, ENV_VAR, Mode};
use crate::llm::error::{Error, ErrorKind};
use crate::providers::http::reqwest::StatusCode;
use crate::providers::http::reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use crate::providers::http::{
    HttpTransport, ResponseBody, SharedTransport, TransportRequest, TransportResponse,
};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------
// Recording

/// Records the HTTP exchanges of the calls that use it into a cassette file, passing each
/// request to an inner transport (the real network) and teeing every chunk of the response
/// body as it arrives, with its boundaries (and its arrival time, with
/// [`with_timing`](Self::with_timing)).
///
/// Secrets are scrubbed when the file is written (see [the module](super#what-is-scrubbed)):
/// the raw traffic stays in memory only. The file is written by [`finish`](Self::finish),
/// which reports a failure; if it is never called, the last clone's drop writes it too,
/// best effort (a failure is only logged with `tracing`). A body still being read when the
/// file is written is recorded as far as it arrived, with an `error`.
///
/// Clones share one recording: keep one to call `finish` on, and give another to
/// [`StreamOptions::with_transport`](crate::StreamOptions::with_transport).
///
/// ```no_run
/// use std::sync::Arc;
/// use pi_engine::cassette::Recorder;
/// use pi_engine::providers::http::ReqwestTransport;
/// use pi_engine::{Context, StreamOptions, UserMessage, get_model};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let recorder = Recorder::new("tests/cassettes/hello.json", Arc::new(ReqwestTransport::default()))
///     .with_timing(true);
/// let model = get_model("anthropic", "claude-sonnet-4-5").unwrap();
/// let context = Context::new().with_message(UserMessage::text("Hello"));
/// let options = StreamOptions::new().with_transport(recorder.clone());
/// let reply = pi_engine::complete(&model, &context, &options).await;
/// let cassette = recorder.finish()?;
/// println!("{} scrubbed, reply {:?}", cassette.scrubbed.total(), reply.text());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Recorder {
    shared: Arc<RecorderState>,
}

struct RecorderState {
    path: PathBuf,
    inner: SharedTransport,
    state: Mutex<Recording>,
}

#[derive(Default)]
struct Recording {
    timing: bool,
    secrets: Vec<String>,
    drafts: Vec<Draft>,
    /// Something was recorded since the file was last written.
    dirty: bool,
}

struct Draft {
    request: TransportRequest,
    response: Option<DraftResponse>,
    failed: Option<String>,
}

struct DraftResponse {
    status: StatusCode,
    headers: HeaderMap,
    chunks: Vec<(Bytes, Option<u64>)>,
    end: BodyEnd,
}

enum BodyEnd {
    Open,
    Ended,
    Broke(String),
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.shared.state);
        f.debug_struct("Recorder")
            .field("path", &self.shared.path)
            .field("interactions", &state.drafts.len())
            .field("timing", &state.timing)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder that writes to `path` and sends the requests through `inner`.
    pub fn new(path: impl Into<PathBuf>, inner: SharedTransport) -> Self {
        Recorder {
            shared: Arc::new(RecorderState {
                path: path.into(),
                inner,
                state: Mutex::new(Recording::default()),
            }),
        }
    }

    /// Records when each chunk arrived (`offset_ms`, after the response head), for a
    /// replay at the recorded pace ([`Timing::Recorded`]). Off by default: the file then
    /// does not change with the network's pace when re-recorded.
    #[must_use]
    pub fn with_timing(self, on: bool) -> Self {
        lock(&self.shared.state).timing = on;
        self
    }

    /// Scrubs `secret` too, wherever it appears (exact value): an account or tenant id, a
    /// key of a format the crate does not know.
    #[must_use]
    pub fn with_secret(self, secret: impl Into<String>) -> Self {
        lock(&self.shared.state).secrets.push(secret.into());
        self
    }

    /// The cassette file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The cassette as it would be written now (scrubbed).
    pub fn cassette(&self) -> Cassette {
        build(&lock(&self.shared.state))
    }

    /// Writes the cassette file (creating its directory) and returns what was written. May
    /// be called again after more calls; the file then holds them all.
    pub fn finish(&self) -> Result<Cassette, CassetteError> {
        self.shared.write()
    }
}

impl RecorderState {
    fn write(&self) -> Result<Cassette, CassetteError> {
        let cassette = {
            let mut state = lock(&self.state);
            state.dirty = false;
            build(&state)
        };
        cassette.save(&self.path)?;
        Ok(cassette)
    }
}

impl Drop for RecorderState {
    fn drop(&mut self) {
        if lock(&self.state).dirty
            && let Err(e) = self.write()
        {
            tracing::warn!(error = %e, "the cassette could not be written");
        }
    }
}

/// The cassette of what was recorded so far, scrubbed.
fn build(state: &Recording) -> Cassette {
    let mut scrubber = Scrubber::new(&state.secrets);
    let mut interactions = Vec::with_capacity(state.drafts.len());
    // The requests first: the secrets they carry are then known when the responses (which
    // may echo them) are scrubbed.
    let requests: Vec<_> = state
        .drafts
        .iter()
        .map(|d| scrubber.request(&d.request))
        .collect();
    for (draft, request) in state.drafts.iter().zip(requests) {
        let response = draft.response.as_ref().map(|r| {
            let headers = scrubber.headers(&r.headers, "");
            let raw: Vec<Bytes> = r.chunks.iter().map(|(b, _)| b.clone()).collect();
            let scrubbed = scrubber.chunks(&raw, "");
            let chunks = scrubbed
                .iter()
                .zip(&r.chunks)
                .map(|(bytes, (_, offset))| Chunk::new(bytes, *offset))
                .collect();
            let error = match &r.end {
                BodyEnd::Ended => None,
                BodyEnd::Broke(e) => Some(scrubber.text(e, "")),
                BodyEnd::Open => {
                    Some("the body was still being read when the cassette was written".to_owned())
                }
            };
            RecordedResponse {
                status: r.status.as_u16(),
                headers,
                chunks,
                error,
            }
        });
        let failed = draft.failed.as_ref().map(|f| scrubber.text(f, ""));
        interactions.push(Interaction {
            request,
            response,
            failed,
        });
    }
    let mut scrubbed = ScrubCounts::default();
    scrubbed.add(&scrubber.counts);
    Cassette {
        interactions,
        scrubbed,
        ..Cassette::default()
    }
}

#[async_trait::async_trait]
impl HttpTransport for Recorder {
    async fn send(&self, request: TransportRequest) -> Result<TransportResponse, Error> {
        let index = {
            let mut state = lock(&self.shared.state);
            state.dirty = true;
            state.drafts.push(Draft {
                request: request.clone(),
                response: None,
                failed: None,
            });
            state.drafts.len() - 1
        };
        match self.shared.inner.send(request).await {
            Err(e) => {
                lock(&self.shared.state).drafts[index].failed = Some(e.message().to_owned());
                Err(e)
            }
            Ok(response) => {
                let timing = {
                    let mut state = lock(&self.shared.state);
                    state.drafts[index].response = Some(DraftResponse {
                        status: response.status,
                        headers: response.headers.clone(),
                        chunks: Vec::new(),
                        end: BodyEnd::Open,
                    });
                    state.timing
                };
                let body = Tee {
                    inner: response.body,
                    shared: self.shared.clone(),
                    index,
                    start: timing.then(tokio::time::Instant::now),
                    done: false,
                };
                Ok(TransportResponse::new(
                    response.status,
                    response.headers,
                    body,
                ))
            }
        }
    }
}

/// A response body that records each chunk as it passes.
struct Tee {
    inner: ResponseBody,
    shared: Arc<RecorderState>,
    index: usize,
    start: Option<tokio::time::Instant>,
    done: bool,
}

impl Tee {
    fn with_response(&self, f: impl FnOnce(&mut DraftResponse)) {
        let mut state = lock(&self.shared.state);
        state.dirty = true;
        if let Some(response) = state
            .drafts
            .get_mut(self.index)
            .and_then(|d| d.response.as_mut())
        {
            f(response);
        }
    }
}

impl Stream for Tee {
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let item = match self.inner.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        match &item {
            Some(Ok(bytes)) => {
                let offset = self
                    .start
                    .map(|s| u64::try_from(s.elapsed().as_millis()).unwrap_or(u64::MAX));
                let bytes = bytes.clone();
                self.with_response(|r| r.chunks.push((bytes, offset)));
            }
            Some(Err(e)) => {
                let message = e.message().to_owned();
                self.done = true;
                self.with_response(|r| r.end = BodyEnd::Broke(message));
            }
            None => {
                self.done = true;
                self.with_response(|r| r.end = BodyEnd::Ended);
            }
        }
        Poll::Ready(item)
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        if !self.done {
            self.with_response(|r| {
                r.end = BodyEnd::Broke("the body was not read to the end when recorded".into());
            });
        }
    }
}

// ---------------------------------------------------------------------------------------
// Replaying

/// The pace of a replayed body.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum Timing {
    /// Every chunk at once (default).
    #[default]
    Immediate,
    /// Each chunk at its recorded `offset_ms` after the response head (in Tokio time, so a
    /// test with paused time does not wait).
    Recorded,
    /// The recorded offsets multiplied by this factor (`0.5`: twice as fast).
    Scaled(f64),
}

/// Replays a cassette: answers each request with the recorded response, its body in the
/// recorded chunks (same boundaries), without a network and without keys.
///
/// Each request is scrubbed as the recorder would scrub it, then matched with the recorded
/// ones by [`Match`] (in order, on method, path and body, by default). A request that does
/// not match is an `Err` of kind [`Config`](ErrorKind::Config) — the call's final `error`
/// event — whose message holds a JSON diff of what was recorded and what was sent, and how
/// to re-record; so is a request past the end of the cassette.
///
/// ```
/// use pi_engine::cassette::{Cassette, Player};
/// use pi_engine::{Context, StreamOptions, UserMessage, get_model};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let cassette: Cassette = serde_json::from_value(serde_json::json!({
///     "version": 1,
///     "interactions": [{
///         "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "headers": {}},
///         "response": {"status": 200, "headers": {"content-type": "text/event-stream"}, "chunks": [
///             {"text": "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n"},
///             {"text": "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"},
///             {"text": "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"}
///         ]}
///     }]
/// })).unwrap();
/// // This cassette recorded no body: compare the method and path only.
/// let player = Player::new(cassette).with_match(pi_engine::cassette::Match::default().with_body(false));
/// let model = get_model("anthropic", "claude-sonnet-4-5").unwrap();
/// let context = Context::new().with_message(UserMessage::text("Hello"));
/// let options = StreamOptions::new().with_api_key("sk-ant-none").with_transport(player.clone());
/// let reply = pi_engine::complete(&model, &context, &options).await;
/// assert_eq!(reply.text(), "Hi");
/// player.assert_all_used();
/// # }
/// ```
#[derive(Clone)]
pub struct Player {
    shared: Arc<PlayerState>,
}

struct PlayerState {
    path: Option<PathBuf>,
    cassette: Cassette,
    state: Mutex<Playing>,
}

#[derive(Default)]
struct Playing {
    matching: Match,
    timing: Timing,
    secrets: Vec<String>,
    used: Vec<bool>,
    /// The next interaction in order.
    next: usize,
    /// Requests received.
    requests: usize,
}

impl std::fmt::Debug for Player {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.shared.state);
        f.debug_struct("Player")
            .field("path", &self.shared.path)
            .field("interactions", &self.shared.cassette.interactions.len())
            .field("used", &state.used.iter().filter(|u| **u).count())
            .finish_non_exhaustive()
    }
}

impl Player {
    /// A player of `cassette`.
    pub fn new(cassette: Cassette) -> Self {
        Player::with_path(cassette, None)
    }

    fn with_path(cassette: Cassette, path: Option<PathBuf>) -> Self {
        let used = vec![false; cassette.interactions.len()];
        Player {
            shared: Arc::new(PlayerState {
                path,
                cassette,
                state: Mutex::new(Playing {
                    used,
                    ..Playing::default()
                }),
            }),
        }
    }

    /// A player of the cassette file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CassetteError> {
        let path = path.as_ref();
        Ok(Player::with_path(
            Cassette::load(path)?,
            Some(path.to_owned()),
        ))
    }

    /// Matches requests with `matching` (default [`Match::default`]).
    #[must_use]
    pub fn with_match(self, matching: Match) -> Self {
        lock(&self.shared.state).matching = matching;
        self
    }

    /// Replays bodies at this pace (default [`Timing::Immediate`]).
    #[must_use]
    pub fn with_timing(self, timing: Timing) -> Self {
        lock(&self.shared.state).timing = timing;
        self
    }

    /// Scrubs `secret` from each request before it is matched, as
    /// [`Recorder::with_secret`] did when recording.
    #[must_use]
    pub fn with_secret(self, secret: impl Into<String>) -> Self {
        lock(&self.shared.state).secrets.push(secret.into());
        self
    }

    /// The cassette replayed.
    pub fn cassette(&self) -> &Cassette {
        &self.shared.cassette
    }

    /// The indices of the interactions not replayed yet.
    pub fn unused(&self) -> Vec<usize> {
        lock(&self.shared.state)
            .used
            .iter()
            .enumerate()
            .filter(|(_, used)| !**used)
            .map(|(i, _)| i)
            .collect()
    }

    /// `Err` ([`CassetteError::Unused`]) when some interactions were not replayed: the code
    /// under test made fewer requests than when it was recorded.
    pub fn finish(&self) -> Result<(), CassetteError> {
        let unused = self.unused();
        if unused.is_empty() {
            return Ok(());
        }
        let interactions = &self.shared.cassette.interactions;
        Err(CassetteError::Unused {
            path: self.shared.path.clone(),
            unused: unused
                .iter()
                .map(|&i| {
                    let r = &interactions[i].request;
                    format!("#{i} {} {}", r.method, r.url)
                })
                .collect(),
        })
    }

    /// Panics when some interactions were not replayed ([`finish`](Self::finish) as an
    /// assertion, for tests).
    ///
    /// # Panics
    ///
    /// When [`unused`](Self::unused) is not empty.
    #[track_caller]
    pub fn assert_all_used(&self) {
        if let Err(e) = self.finish() {
            panic!("{e}");
        }
    }

    fn name(&self) -> String {
        match &self.shared.path {
            Some(p) => format!("cassette {}", p.display()),
            None => "the cassette".to_owned(),
        }
    }

    /// The interaction answering `request`, or the error saying why there is none.
    fn pick(&self, request: &TransportRequest) -> Result<(usize, Timing), Error> {
        let mut state = lock(&self.shared.state);
        let number = state.requests;
        state.requests += 1;
        let mut scrubber = Scrubber::new(&state.secrets);
        let got = scrubber.request(request);
        let got_view = state.matching.view(&got);
        let interactions = &self.shared.cassette.interactions;
        let recorded_view = |i: usize| {
            let mut scrubber = Scrubber::new(&state.secrets);
            state
                .matching
                .view(&scrubber.recorded_request(&interactions[i].request))
        };
        let what = format!("{} {}", request.method, request.url.path());
        let candidates: Vec<usize> = if state.matching.ordered {
            (state.next < interactions.len())
                .then_some(state.next)
                .into_iter()
                .collect()
        } else {
            (0..interactions.len())
                .filter(|i| !state.used[*i])
                .collect()
        };
        if candidates.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "{}: request {} ({what}) has no recorded interaction left ({} recorded, all used). The code under test makes more requests than when the cassette was recorded: re-record it with {ENV_VAR}=record (real keys needed).",
                    self.name(),
                    number + 1,
                    interactions.len(),
                ),
            ));
        }
        let mut closest: Option<(usize, Vec<super::matching::Difference>)> = None;
        for &i in &candidates {
            let expected = recorded_view(i);
            let differences = diff(&expected, &got_view);
            if differences.is_empty() {
                state.used[i] = true;
                if state.matching.ordered {
                    state.next = i + 1;
                }
                return Ok((i, state.timing));
            }
            if closest
                .as_ref()
                .is_none_or(|(_, d)| differences.len() < d.len())
            {
                closest = Some((i, differences));
            }
        }
        let (i, differences) = closest.unwrap_or_default();
        Err(Error::new(
            ErrorKind::Config,
            format!(
                "{}: request {} ({what}) does not match recorded interaction {i} ({}); the differences (expected: recorded, got: sent):\n{}\nThe request changed since the cassette was recorded: re-record it with {ENV_VAR}=record (real keys needed), or relax the matching (cassette::Match).",
                self.name(),
                number + 1,
                if state.matching.ordered {
                    "in order"
                } else {
                    "the closest unused one"
                },
                render_diff(&differences),
            ),
        ))
    }
}

#[async_trait::async_trait]
impl HttpTransport for Player {
    async fn send(&self, request: TransportRequest) -> Result<TransportResponse, Error> {
        let (index, timing) = self.pick(&request)?;
        let interaction = &self.shared.cassette.interactions[index];
        let Some(response) = &interaction.response else {
            let message = interaction
                .failed
                .clone()
                .unwrap_or_else(|| "the recorded request got no response".to_owned());
            return Err(Error::new(ErrorKind::Connection, message));
        };
        let status = StatusCode::from_u16(response.status).map_err(|_| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "{}: recorded status {} is not valid",
                    self.name(),
                    response.status
                ),
            )
        })?;
        let mut headers = HeaderMap::new();
        for (name, value) in &response.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                headers.append(name, value);
            }
        }
        let scale = match timing {
            Timing::Immediate => None,
            Timing::Recorded => Some(1.0),
            Timing::Scaled(f) => Some(f.max(0.0)),
        };
        let chunks: Vec<(Bytes, Option<Duration>)> = response
            .chunks
            .iter()
            .map(|c| {
                let at = scale
                    .zip(c.offset_ms)
                    .map(|(scale, ms)| Duration::from_secs_f64(ms as f64 * scale / 1000.0));
                (c.bytes(), at)
            })
            .collect();
        let error = response.error.clone();
        let start = tokio::time::Instant::now();
        let body = futures::stream::unfold(
            (chunks.into_iter(), error),
            move |(mut chunks, mut error)| async move {
                match chunks.next() {
                    Some((bytes, at)) => {
                        if let Some(at) = at {
                            tokio::time::sleep_until(start + at).await;
                        }
                        Some((Ok(bytes), (chunks, error)))
                    }
                    None => error
                        .take()
                        .map(|e| (Err(Error::new(ErrorKind::Connection, e)), (chunks, None))),
                }
            },
        );
        Ok(TransportResponse::new(status, headers, body))
    }
}

// ---------------------------------------------------------------------------------------
// Either

/// A [`Recorder`] or a [`Player`], chosen by [`Mode`]: what a test uses so that it records
/// once with real keys (`PI_CASSETTE=record`) and replays everywhere else.
///
/// ```no_run
/// use std::sync::Arc;
/// use pi_engine::cassette::CassetteTransport;
/// use pi_engine::providers::http::ReqwestTransport;
/// use pi_engine::{Context, StreamOptions, UserMessage, get_model};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// // PI_CASSETTE=record|replay|auto (default replay).
/// let cassette = CassetteTransport::from_env(
///     "tests/cassettes/hello.json",
///     Arc::new(ReqwestTransport::default()),
/// )?;
/// let model = get_model("anthropic", "claude-sonnet-4-5").unwrap();
/// let context = Context::new().with_message(UserMessage::text("Hello"));
/// // Replaying needs no key: any will do.
/// let options = StreamOptions::new()
///     .with_api_key(std::env::var("ANTHROPIC_API_KEY").unwrap_or_else(|_| "replay".into()))
///     .with_transport(cassette.clone());
/// let reply = pi_engine::complete(&model, &context, &options).await;
/// assert!(reply.error().is_none(), "{:?}", reply.error());
/// cassette.finish()?; // writes the file, or checks every interaction was replayed
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CassetteTransport {
    inner: Either,
}

#[derive(Debug, Clone)]
enum Either {
    Record(Recorder),
    Replay(Player),
}

impl CassetteTransport {
    /// A transport for the cassette at `path` in `mode`: [`Mode::Record`] records through
    /// `inner`; [`Mode::Replay`] opens the file (an error when it is missing);
    /// [`Mode::Auto`] replays when the file exists and records otherwise. `inner` is not
    /// used when replaying.
    pub fn new(
        mode: Mode,
        path: impl Into<PathBuf>,
        inner: SharedTransport,
    ) -> Result<Self, CassetteError> {
        let path = path.into();
        let record = match mode {
            Mode::Record => true,
            Mode::Replay => false,
            Mode::Auto => !path.exists(),
        };
        let inner = if record {
            Either::Record(Recorder::new(path, inner))
        } else if path.exists() {
            Either::Replay(Player::open(&path)?)
        } else {
            return Err(CassetteError::Missing { path });
        };
        Ok(CassetteTransport { inner })
    }

    /// [`new`](Self::new) in the mode of the environment variable `PI_CASSETTE`
    /// ([`Mode::from_env`]).
    pub fn from_env(
        path: impl Into<PathBuf>,
        inner: SharedTransport,
    ) -> Result<Self, CassetteError> {
        CassetteTransport::new(Mode::from_env()?, path, inner)
    }

    /// [`Mode::Record`] or [`Mode::Replay`] (an `Auto` mode resolved).
    pub fn mode(&self) -> Mode {
        match self.inner {
            Either::Record(_) => Mode::Record,
            Either::Replay(_) => Mode::Replay,
        }
    }

    /// The recorder, when recording.
    pub fn recorder(&self) -> Option<&Recorder> {
        match &self.inner {
            Either::Record(r) => Some(r),
            Either::Replay(_) => None,
        }
    }

    /// The player, when replaying.
    pub fn player(&self) -> Option<&Player> {
        match &self.inner {
            Either::Replay(p) => Some(p),
            Either::Record(_) => None,
        }
    }

    /// Scrubs `secret` when recording, and from requests before matching when replaying.
    #[must_use]
    pub fn with_secret(self, secret: impl Into<String>) -> Self {
        let inner = match self.inner {
            Either::Record(r) => Either::Record(r.with_secret(secret)),
            Either::Replay(p) => Either::Replay(p.with_secret(secret)),
        };
        CassetteTransport { inner }
    }

    /// Records chunk timing ([`Recorder::with_timing`]) when recording; replays at the
    /// recorded pace ([`Timing::Recorded`]) when replaying.
    #[must_use]
    pub fn with_timing(self, on: bool) -> Self {
        let inner = match self.inner {
            Either::Record(r) => Either::Record(r.with_timing(on)),
            Either::Replay(p) => Either::Replay(p.with_timing(if on {
                Timing::Recorded
            } else {
                Timing::Immediate
            })),
        };
        CassetteTransport { inner }
    }

    /// The matching of a replay ([`Player::with_match`]); no effect when recording.
    #[must_use]
    pub fn with_match(self, matching: Match) -> Self {
        let inner = match self.inner {
            Either::Replay(p) => Either::Replay(p.with_match(matching)),
            other => other,
        };
        CassetteTransport { inner }
    }

    /// Ends the test's use of the cassette: writes the file when recording
    /// ([`Recorder::finish`]), checks that every interaction was replayed when replaying
    /// ([`Player::finish`]).
    pub fn finish(&self) -> Result<(), CassetteError> {
        match &self.inner {
            Either::Record(r) => r.finish().map(drop),
            Either::Replay(p) => p.finish(),
        }
    }

    /// This transport as a [`SharedTransport`].
    pub fn shared(&self) -> SharedTransport {
        Arc::new(self.clone())
    }
}

#[async_trait::async_trait]
impl HttpTransport for CassetteTransport {
    async fn send(&self, request: TransportRequest) -> Result<TransportResponse, Error> {
        match &self.inner {
            Either::Record(r) => r.send(request).await,
            Either::Replay(p) => p.send(request).await,
        }
    }
}
