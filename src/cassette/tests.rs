//! The transports: recording, replaying, modes.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};

use super::*;
use crate::providers::http::{HttpTransport, TransportRequest, TransportResponse};

/// One canned reply: status, body chunks, and an error after them.
type Canned = (u16, Vec<Vec<u8>>, Option<&'static str>);

/// An inner transport answering with canned replies, pausing 10 ms (Tokio time) per chunk.
#[derive(Debug, Default)]
struct Script(Mutex<VecDeque<Canned>>);

impl Script {
    fn new(replies: Vec<Canned>) -> Arc<Script> {
        Arc::new(Script(Mutex::new(replies.into())))
    }
}

#[async_trait::async_trait]
impl HttpTransport for Script {
    async fn send(&self, _request: TransportRequest) -> Result<TransportResponse, Error> {
        let Some((status, chunks, error)) = self.0.lock().unwrap().pop_front() else {
            return Err(Error::new(ErrorKind::Connection, "connection refused"));
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            "content-type",
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(
            "set-cookie",
            HeaderValue::from_static("session=abcdefghijkl"),
        );
        let items: Vec<Result<Bytes, Error>> = chunks
            .into_iter()
            .map(|c| Ok(Bytes::from(c)))
            .chain(error.map(|e| Err(Error::new(ErrorKind::Connection, e))))
            .collect();
        let body = futures::stream::iter(items).then(|item| async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            item
        });
        Ok(TransportResponse::new(
            reqwest::StatusCode::from_u16(status).unwrap(),
            headers,
            body,
        ))
    }
}

fn request(body: &str) -> TransportRequest {
    let mut headers = HeaderMap::new();
    let mut key = HeaderValue::from_static("sk-ant-api03-secret-0123456789");
    key.set_sensitive(true);
    headers.insert("x-api-key", key);
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    TransportRequest::new(
        reqwest::Method::POST,
        "http://127.0.0.1:9/v1/messages".parse().unwrap(),
        headers,
        Bytes::from(body.to_owned()),
    )
}

/// Sends `request` and reads the whole body: the chunks, and the error that ended it.
async fn exchange(
    transport: &dyn HttpTransport,
    request: TransportRequest,
) -> Result<(u16, Vec<Vec<u8>>, Option<String>), Error> {
    let mut response = transport.send(request).await?;
    let mut chunks = Vec::new();
    let mut error = None;
    while let Some(item) = response.body.next().await {
        match item {
            Ok(bytes) => chunks.push(bytes.to_vec()),
            Err(e) => error = Some(e.message().to_owned()),
        }
    }
    Ok((response.status.as_u16(), chunks, error))
}

fn temp_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("sub/test.json")
}

#[tokio::test(start_paused = true)]
async fn chunks_are_recorded_with_their_boundaries_and_replayed_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir);
    // "é" split between two chunks: the first is not UTF-8 on its own.
    let chunks = vec![
        b"data: {\"a\":".to_vec(),
        vec![b'"', 0xc3],
        vec![0xa9, b'"', b'}', b'\n', b'\n'],
        b"data: [DONE]\n\n".to_vec(),
    ];
    let inner = Script::new(vec![(200, chunks.clone(), None)]);
    let recorder = Recorder::new(&path, inner).with_timing(true);
    let got = exchange(&recorder, request(r#"{"model":"m"}"#))
        .await
        .unwrap();
    assert_eq!(got, (200, chunks.clone(), None));
    let cassette = recorder.finish().unwrap();

    let file = std::fs::read_to_string(&path).unwrap();
    assert!(!file.contains("secret-0123456789"), "{file}");
    assert!(!file.contains("abcdefghijkl"), "{file}");
    assert_eq!(cassette.scrubbed.headers, 2, "x-api-key and set-cookie");
    let recorded = cassette.interactions[0].response.as_ref().unwrap();
    assert!(matches!(recorded.chunks[0].data, ChunkData::Text(_)));
    assert!(matches!(recorded.chunks[1].data, ChunkData::Base64(_)));
    assert!(matches!(recorded.chunks[2].data, ChunkData::Base64(_)));
    let offsets: Vec<Option<u64>> = recorded.chunks.iter().map(|c| c.offset_ms).collect();
    assert_eq!(offsets, [Some(10), Some(20), Some(30), Some(40)]);
    assert_eq!(Cassette::load(&path).unwrap(), cassette);

    // Replayed at the recorded pace, in Tokio time.
    let player = Player::open(&path).unwrap().with_timing(Timing::Recorded);
    let start = tokio::time::Instant::now();
    let replayed = exchange(&player, request(r#"{"model":"m"}"#))
        .await
        .unwrap();
    assert_eq!(replayed, (200, chunks, None));
    assert_eq!(start.elapsed(), Duration::from_millis(40));
    player.assert_all_used();
}

#[tokio::test]
async fn ordered_replay_and_a_mismatch_with_its_diff() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir);
    let inner = Script::new(vec![
        (200, vec![b"first".to_vec()], None),
        (200, vec![b"second".to_vec()], None),
    ]);
    let recorder = Recorder::new(&path, inner);
    exchange(&recorder, request(r#"{"n":1,"m":"a"}"#))
        .await
        .unwrap();
    exchange(&recorder, request(r#"{"n":2,"m":"a"}"#))
        .await
        .unwrap();
    recorder.finish().unwrap();

    // In order, whatever the key and the member order.
    let player = Player::open(&path).unwrap();
    let (_, first, _) = exchange(&player, request(r#"{"m":"a","n":1}"#))
        .await
        .unwrap();
    assert_eq!(first, [b"first".to_vec()]);
    assert_eq!(player.unused(), [1]);
    let e = player.finish().unwrap_err();
    assert!(
        e.to_string()
            .contains("#1 POST http://127.0.0.1:9/v1/messages"),
        "{e}"
    );
    let (_, second, _) = exchange(&player, request(r#"{"n":2,"m":"a"}"#))
        .await
        .unwrap();
    assert_eq!(second, [b"second".to_vec()]);
    player.assert_all_used();
    // Past the end.
    let e = exchange(&player, request(r#"{"n":3}"#)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(
        e.message()
            .contains("request 3 (POST /v1/messages) has no recorded interaction left (2 recorded"),
        "{e}"
    );
    assert!(e.message().contains("PI_CASSETTE=record"), "{e}");

    // Out of order: the first request is answered by interaction 0, which does not match.
    let player = Player::open(&path).unwrap();
    let e = exchange(&player, request(r#"{"n":2,"m":"a"}"#))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    let message = e.message();
    assert!(
        message.contains(
            "request 1 (POST /v1/messages) does not match recorded interaction 0 (in order)"
        ),
        "{message}"
    );
    let diff_text: String = message
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("The request changed"))
        .collect::<Vec<_>>()
        .join("\n");
    let diff: serde_json::Value = serde_json::from_str(&diff_text).unwrap();
    assert_eq!(
        diff,
        serde_json::json!([{"path": "/body/n", "expected": 1, "got": 2}])
    );
    assert!(
        message.contains("re-record it with PI_CASSETTE=record"),
        "{message}"
    );

    // Unordered: each request finds its own.
    let player = Player::open(&path)
        .unwrap()
        .with_match(Match::default().with_ordered(false));
    let (_, second, _) = exchange(&player, request(r#"{"n":2,"m":"a"}"#))
        .await
        .unwrap();
    assert_eq!(second, [b"second".to_vec()]);
    let (_, first, _) = exchange(&player, request(r#"{"n":1,"m":"a"}"#))
        .await
        .unwrap();
    assert_eq!(first, [b"first".to_vec()]);
    player.assert_all_used();
}

#[tokio::test]
async fn broken_bodies_and_failed_requests_are_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir);
    // A body cut after one chunk, then no reply at all (the script is empty).
    let inner = Script::new(vec![(
        200,
        vec![b"data: 1\n\n".to_vec()],
        Some("Connection lost"),
    )]);
    let recorder = Recorder::new(&path, inner);
    let got = exchange(&recorder, request("{}")).await.unwrap();
    assert_eq!(got.2.as_deref(), Some("Connection lost"));
    let e = exchange(&recorder, request("{}")).await.unwrap_err();
    assert_eq!(e.message(), "connection refused");
    // Written by the drop of the last clone.
    drop(recorder);
    let cassette = Cassette::load(&path).unwrap();
    assert_eq!(cassette.interactions.len(), 2);
    assert_eq!(
        cassette.interactions[1].failed.as_deref(),
        Some("connection refused")
    );

    let player = Player::open(&path).unwrap();
    let replayed = exchange(&player, request("{}")).await.unwrap();
    assert_eq!(
        replayed,
        (
            200,
            vec![b"data: 1\n\n".to_vec()],
            Some("Connection lost".into())
        )
    );
    let e = exchange(&player, request("{}")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection);
}

#[tokio::test]
async fn a_body_dropped_unread_is_marked() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir);
    let inner = Script::new(vec![(200, vec![b"a".to_vec(), b"b".to_vec()], None)]);
    let recorder = Recorder::new(&path, inner);
    let mut response = recorder.send(request("{}")).await.unwrap();
    assert_eq!(&response.body.next().await.unwrap().unwrap()[..], b"a");
    let open = recorder.cassette();
    assert_eq!(
        open.interactions[0]
            .response
            .as_ref()
            .unwrap()
            .error
            .as_deref(),
        Some("the body was still being read when the cassette was written")
    );
    drop(response);
    let cassette = recorder.finish().unwrap();
    let response = cassette.interactions[0].response.as_ref().unwrap();
    assert_eq!(response.chunks.len(), 1);
    assert_eq!(
        response.error.as_deref(),
        Some("the body was not read to the end when recorded")
    );
}

#[tokio::test]
async fn modes() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir);
    let inner = || -> crate::providers::http::SharedTransport {
        Script::new(vec![(200, vec![b"x".to_vec()], None)])
    };
    let e = CassetteTransport::new(Mode::Replay, &path, inner()).unwrap_err();
    assert!(matches!(e, CassetteError::Missing { .. }));
    assert!(e.to_string().contains("PI_CASSETTE=record"), "{e}");

    // Auto records when the file is missing…
    let auto = CassetteTransport::new(Mode::Auto, &path, inner()).unwrap();
    assert_eq!(auto.mode(), Mode::Record);
    exchange(&auto, request("{}")).await.unwrap();
    auto.finish().unwrap();
    // …and replays when it exists (the inner transport is not called).
    let auto = CassetteTransport::new(Mode::Auto, &path, Script::new(vec![])).unwrap();
    assert_eq!(auto.mode(), Mode::Replay);
    assert_eq!(
        exchange(&auto, request("{}")).await.unwrap().1,
        [b"x".to_vec()]
    );
    auto.finish().unwrap();
    // Record overwrites.
    let record = CassetteTransport::new(Mode::Record, &path, inner()).unwrap();
    assert!(record.recorder().is_some());
    record.finish().unwrap();
    assert!(Cassette::load(&path).unwrap().interactions.is_empty());

    assert_eq!(Mode::parse(" AUTO ").unwrap(), Mode::Auto);
    assert_eq!(Mode::parse("playback").unwrap(), Mode::Replay);
    assert!(
        Mode::parse("rec")
            .unwrap_err()
            .to_string()
            .contains("record, replay or auto")
    );
}

#[test]
fn other_versions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.json");
    std::fs::write(&path, r#"{"version": 2, "interactions": [], "new": true}"#).unwrap();
    let e = Cassette::load(&path).unwrap_err();
    assert!(matches!(e, CassetteError::Version { found: 2, .. }), "{e}");
    std::fs::write(&path, "{").unwrap();
    assert!(matches!(
        Cassette::load(&path).unwrap_err(),
        CassetteError::Parse { .. }
    ));
    let error: Error = e.into();
    assert_eq!(error.kind(), ErrorKind::Config);
}

#[tokio::test]
async fn user_secrets_are_scrubbed_and_matched() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir);
    let inner = Script::new(vec![(200, vec![b"hello tenant-7".to_vec()], None)]);
    let recorder = Recorder::new(&path, inner).with_secret("tenant-7");
    exchange(&recorder, request(r#"{"account":"tenant-7"}"#))
        .await
        .unwrap();
    let cassette = recorder.finish().unwrap();
    assert_eq!(cassette.scrubbed.secrets, 2);
    assert!(!std::fs::read_to_string(&path).unwrap().contains("tenant-7"));
    assert!(safety::check_cassette_with(&path, &["tenant-7"]).is_ok());
    // The same secret at replay makes the requests equal.
    let player = Player::open(&path).unwrap().with_secret("tenant-7");
    let (_, chunks, _) = exchange(&player, request(r#"{"account":"tenant-7"}"#))
        .await
        .unwrap();
    assert_eq!(chunks, [b"hello [SCRUBBED]".to_vec()]);
}
