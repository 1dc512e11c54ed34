//! The transport seam: every provider sends through the call's `HttpTransport`, and the
//! driver above it (retries, idle timeout, cancellation, key scrubbing) is the same whatever
//! the transport. Transports here are in-process doubles; the reqwest one is tried against
//! local servers on 127.0.0.1.
#![cfg(feature = "anthropic")]

mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use pi_engine::agent::Agent;
use pi_engine::llm::RetryPolicy;
use pi_engine::providers::http::reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use pi_engine::providers::http::reqwest::{Method, StatusCode};
use pi_engine::providers::http::{
    HttpTransport, ReqwestTransport, TransportRequest, TransportResponse,
};
use pi_engine::{
    CancellationToken, Context, Error, ErrorKind, Model, StopReason, StreamOptions, UserMessage,
};
use support::{MockServer, Reply, anthropic_sse};

const KEY: &str = "sk-ant-transport-0123456789";

fn model() -> Model {
    Model::new(
        "claude-test",
        "anthropic-messages",
        "anthropic",
        "https://api.anthropic.invalid",
    )
}

fn context() -> Context {
    Context::new().with_message(UserMessage::text("hi"))
}

fn reply_sse(text: &str) -> String {
    let delta = serde_json::json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": text}})
    .to_string();
    anthropic_sse(&[
        r#"{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3,"output_tokens":0}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        &delta,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
        r#"{"type":"message_stop"}"#,
    ])
}

/// What a scripted transport does for one request.
enum Answer {
    /// An event stream, in these chunks, then the end of the body.
    Chunks(Vec<Vec<u8>>),
    /// These chunks, then a body that never ends (nor sends anything).
    ChunksThenStall(Vec<Vec<u8>>),
    /// These chunks, then a broken body.
    ChunksThenError(Vec<Vec<u8>>, Error),
    /// No response.
    Fail(Error),
    /// A response head that never comes.
    Hang,
}

/// A transport that answers each request with the next scripted [`Answer`] and records what
/// it was asked.
#[derive(Debug, Default, Clone)]
struct Scripted {
    answers: Arc<Mutex<VecDeque<AnswerBox>>>,
    seen: Arc<Mutex<Vec<TransportRequest>>>,
}

struct AnswerBox(Answer);

impl std::fmt::Debug for AnswerBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Answer")
    }
}

impl Scripted {
    fn new(answers: Vec<Answer>) -> Self {
        Scripted {
            answers: Arc::new(Mutex::new(answers.into_iter().map(AnswerBox).collect())),
            seen: Arc::default(),
        }
    }
    fn seen(&self) -> Vec<TransportRequest> {
        self.seen.lock().unwrap().clone()
    }
}

fn stream_head() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers
}

fn chunked(text: &str, size: usize) -> Vec<Vec<u8>> {
    text.as_bytes().chunks(size).map(<[u8]>::to_vec).collect()
}

#[async_trait::async_trait]
impl HttpTransport for Scripted {
    async fn send(&self, request: TransportRequest) -> Result<TransportResponse, Error> {
        self.seen.lock().unwrap().push(request);
        let answer = self.answers.lock().unwrap().pop_front();
        let ok = |chunks: Vec<Vec<u8>>| chunks.into_iter().map(|c| Ok(Bytes::from(c)));
        match answer.map(|a| a.0) {
            Some(Answer::Chunks(chunks)) => Ok(TransportResponse::new(
                StatusCode::OK,
                stream_head(),
                futures::stream::iter(ok(chunks).collect::<Vec<_>>()),
            )),
            Some(Answer::ChunksThenStall(chunks)) => Ok(TransportResponse::new(
                StatusCode::OK,
                stream_head(),
                futures::stream::iter(ok(chunks).collect::<Vec<_>>())
                    .chain(futures::stream::pending()),
            )),
            Some(Answer::ChunksThenError(chunks, error)) => Ok(TransportResponse::new(
                StatusCode::OK,
                stream_head(),
                futures::stream::iter(ok(chunks).collect::<Vec<_>>())
                    .chain(futures::stream::iter([Err(error)])),
            )),
            Some(Answer::Fail(error)) => Err(error),
            Some(Answer::Hang) => futures::future::pending().await,
            None => Err(Error::new(ErrorKind::Connection, "no more answers")),
        }
    }
}

fn options(transport: &Scripted) -> StreamOptions {
    StreamOptions::new()
        .with_api_key(KEY)
        .with_transport(transport.clone())
}

#[tokio::test]
async fn the_transport_gets_the_prepared_request_and_chunks_split_anywhere_decode() {
    // 5-byte chunks cut lines, JSON and the two-byte characters of the text.
    let transport = Scripted::new(vec![Answer::Chunks(chunked(&reply_sse("héllo wörld"), 5))]);
    let model = model().with_header("x-model-header", "m");
    let reply = pi_engine::complete(&model, &context(), &options(&transport)).await;
    assert_eq!(
        reply.stop_reason,
        StopReason::Stop,
        "{:?}",
        reply.error_message
    );
    assert_eq!(reply.text(), "héllo wörld");
    assert_eq!(reply.usage.output, 2);

    let seen = transport.seen();
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(request.method, Method::POST);
    assert_eq!(
        request.url.as_str(),
        "https://api.anthropic.invalid/v1/messages"
    );
    assert_eq!(request.headers["content-type"], "application/json");
    assert_eq!(request.headers["x-model-header"], "m");
    assert_eq!(request.headers["x-api-key"], KEY);
    assert!(request.headers["x-api-key"].is_sensitive());
    let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["stream"], true);
    // The request's Debug (a transport may log it) hides the key.
    assert!(!format!("{request:?}").contains("0123456789"));
}

#[tokio::test(start_paused = true)]
async fn a_transport_failure_before_the_first_byte_is_retried_like_a_refused_connection() {
    let refused = || Error::new(ErrorKind::Connection, "Connection error: refused");
    let transport = Scripted::new(vec![
        Answer::Fail(refused()),
        Answer::Fail(refused()),
        Answer::Chunks(chunked(&reply_sse("third time"), 64)),
    ]);
    let reply = pi_engine::complete(&model(), &context(), &options(&transport)).await;
    assert_eq!(reply.text(), "third time", "{:?}", reply.error_message);
    assert_eq!(transport.seen().len(), 3);

    // Out of retries: the transport's error is the reply's.
    let transport = Scripted::new((0..3).map(|_| Answer::Fail(refused())).collect());
    let reply = pi_engine::complete(&model(), &context(), &options(&transport)).await;
    assert_eq!(reply.stop_reason, StopReason::Error);
    let error = reply.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Connection);
    assert!(error.message().contains("refused"), "{error}");
    assert_eq!(transport.seen().len(), 3, "two retries by default");

    // A configuration error is not retried.
    let bad = Error::new(ErrorKind::Config, "cannot send this");
    let transport = Scripted::new(vec![Answer::Fail(bad)]);
    let options = options(&transport).with_retry(RetryPolicy::default());
    let reply = pi_engine::complete(&model(), &context(), &options).await;
    assert_eq!(reply.error().unwrap().kind(), ErrorKind::Config);
    assert_eq!(transport.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_transport_that_never_answers_or_stalls_mid_body_times_out() {
    let transport = Scripted::new(vec![Answer::Hang]);
    let options = options(&transport)
        .with_idle_timeout(Duration::from_secs(3))
        .with_retry(RetryPolicy::none());
    let reply = pi_engine::complete(&model(), &context(), &options).await;
    assert_eq!(reply.error().unwrap().kind(), ErrorKind::Timeout);

    // Half a reply, then silence: the error keeps what arrived.
    let sse = reply_sse("partial text");
    let cut = sse.find("content_block_stop").unwrap() - "event: ".len();
    let transport = Scripted::new(vec![Answer::ChunksThenStall(chunked(&sse[..cut], 16))]);
    let options = self::options(&transport).with_idle_timeout(Duration::from_secs(3));
    let reply = pi_engine::complete(&model(), &context(), &options).await;
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert_eq!(reply.error().unwrap().kind(), ErrorKind::Timeout);
    assert_eq!(reply.text(), "partial text");
}

#[tokio::test]
async fn a_broken_body_ends_the_reply_with_the_transport_error_and_no_key() {
    let sse = reply_sse("cut short");
    let cut = sse.find("content_block_stop").unwrap() - "event: ".len();
    let lost = Error::new(
        ErrorKind::Connection,
        format!("Connection lost while streaming: reset (key {KEY})"),
    );
    let transport = Scripted::new(vec![Answer::ChunksThenError(
        chunked(&sse[..cut], 32),
        lost,
    )]);
    let reply = pi_engine::complete(&model(), &context(), &options(&transport)).await;
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert_eq!(reply.text(), "cut short");
    let error = reply.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Connection);
    assert!(error.message().contains("reset"), "{error}");

    // A key in a transport's error before the response is scrubbed too.
    let leaky = Error::new(ErrorKind::Config, format!("bad header value {KEY}"));
    let transport = Scripted::new(vec![Answer::Fail(leaky)]);
    let reply = pi_engine::complete(&model(), &context(), &options(&transport)).await;
    let message = reply.error().unwrap().message().to_owned();
    assert!(!message.contains("0123456789"), "{message}");
    assert!(!reply.error_message.unwrap().contains("0123456789"));
}

#[tokio::test]
async fn cancelling_while_the_transport_streams_aborts_with_the_text_so_far() {
    let sse = reply_sse("so far");
    let cut = sse.find("content_block_stop").unwrap() - "event: ".len();
    let transport = Scripted::new(vec![Answer::ChunksThenStall(chunked(&sse[..cut], 64))]);
    let token = CancellationToken::new();
    let options = options(&transport).with_cancel(token.clone());
    let mut stream = pi_engine::stream(&model(), &context(), &options);
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let pi_engine::AssistantMessageEvent::TextDelta { delta, .. } = &event {
            text.push_str(delta);
            token.cancel();
        }
    }
    let reply = stream.result().await;
    assert_eq!(text, "so far");
    assert_eq!(reply.stop_reason, StopReason::Aborted);
    assert_eq!(reply.text(), "so far");
}

#[tokio::test]
async fn an_agent_sends_through_the_transport_of_its_options() {
    let transport = Scripted::new(vec![Answer::Chunks(chunked(&reply_sse("agent reply"), 7))]);
    let agent = Agent::builder(model()).options(options(&transport)).build();
    agent.prompt("hello").await.unwrap().into_result().unwrap();
    assert_eq!(agent.last_assistant_text().as_deref(), Some("agent reply"));
    assert_eq!(transport.seen().len(), 1);
}

#[tokio::test]
async fn a_client_from_the_applications_builder_still_refuses_cross_origin_redirects() {
    let other = MockServer::start(vec![Reply::sse(&[reply_sse("elsewhere")])]).await;
    let to = format!("{}/v1/messages", other.url());
    let main = MockServer::start(vec![Reply::status(307, &[("location", &to)], "")]).await;
    // The application asks for reqwest's usual policy; the crate's rule replaces it.
    let builder = pi_engine::providers::http::reqwest::Client::builder()
        .redirect(pi_engine::providers::http::reqwest::redirect::Policy::limited(10));
    let transport = ReqwestTransport::from_builder(builder).unwrap();
    let model = Model::new("m", "anthropic-messages", "anthropic", main.url());
    let options = StreamOptions::new()
        .with_api_key(KEY)
        .with_transport(transport);
    let reply = pi_engine::complete(&model, &context(), &options).await;
    let error = reply.error().unwrap();
    assert_eq!(error.status(), Some(307));
    assert!(
        error.message().contains("redirect to another origin"),
        "{error}"
    );
    assert_eq!(main.requests().len(), 1);
    assert!(
        other.requests().is_empty(),
        "the key went to another origin"
    );

    // And it streams a normal reply, with pi-engine's user agent.
    let server = MockServer::start(vec![Reply::sse(&[reply_sse("from builder")])]).await;
    let model = Model::new("m", "anthropic-messages", "anthropic", server.url());
    let reply = pi_engine::complete(&model, &context(), &options).await;
    assert_eq!(reply.text(), "from builder", "{:?}", reply.error_message);
    let sent = server.requests();
    assert!(
        sent[0]
            .header("user-agent")
            .unwrap()
            .starts_with("pi-engine/"),
        "{:?}",
        sent[0].header("user-agent")
    );
}
