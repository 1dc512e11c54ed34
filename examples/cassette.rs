//! A test of your own with a cassette: record a model's reply once, replay it in every run
//! after, with no network and no key (feature `cassette`).
//!
//! ```text
//! cargo run --example cassette --features cassette
//! ```
//!
//! It runs offline: a tiny local server stands in for the provider, streaming one Anthropic
//! reply in three chunks (the middle one ends inside an event, as networks split them). The
//! first pass records it through the real HTTP stack with a made-up key; the second replays
//! the file with the server gone and gets the same events. In a real suite the mode comes
//! from `PI_CASSETTE` (`CassetteTransport::from_env`): `record` once with a real key,
//! `replay` (the default) in CI.

use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use pi_engine::cassette::{CassetteTransport, Mode, safety};
use pi_engine::providers::http::ReqwestTransport;
use pi_engine::{AssistantMessageEvent, Context, Model, StreamOptions, UserMessage};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The reply the local server streams, chunk by chunk.
const CHUNKS: [&str; 3] = [
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":12,\"output_tokens\":0}}}\n\n\
     event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Recorded \"}}\n\n\
     event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_de",
    "lta\",\"text\":\"once.\"}}\n\n\
     event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
     event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n\
     event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
];

/// A server on 127.0.0.1 that answers one request with [`CHUNKS`]; its URL.
async fn one_reply_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        // Read the request head and its body (content-length).
        let mut request = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            request.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&request);
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    })
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    break;
                }
            }
            if n == 0 {
                return;
            }
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        for chunk in CHUNKS {
            let framed = format!("{:x}\r\n{chunk}\r\n", chunk.len());
            socket.write_all(framed.as_bytes()).await.unwrap();
            socket.flush().await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        }
        socket.write_all(b"0\r\n\r\n").await.unwrap();
    });
    (url, task)
}

/// One call through `transport`: its events.
async fn call(
    model: &Model,
    transport: CassetteTransport,
    key: &str,
) -> Vec<AssistantMessageEvent> {
    let context = Context::new()
        .with_system_prompt("You are terse.")
        .with_message(UserMessage::text("Say something recorded."));
    let options = StreamOptions::new()
        .with_api_key(key)
        .with_transport(transport);
    pi_engine::stream(model, &context, &options).collect().await
}

/// Records into `dir`, then replays; returns the text of both passes.
async fn run(dir: &Path) -> (String, String) {
    let path = dir.join("say_something.json");
    let _ = std::fs::remove_file(&path);

    // 1. Record: a real HTTP exchange with the local server.
    let (url, server) = one_reply_server().await;
    let model = Model::new("claude-test", "anthropic-messages", "anthropic", url);
    let recording =
        CassetteTransport::new(Mode::Record, &path, Arc::new(ReqwestTransport::default()))
            .unwrap()
            .with_timing(true);
    let recorded = call(
        &model,
        recording.clone(),
        "sk-ant-api03-made-up-key-0123456789",
    )
    .await;
    let cassette = recording.recorder().unwrap().finish().unwrap();
    server.await.unwrap();
    println!(
        "recorded {} interaction(s) into {}; {} secret(s) scrubbed",
        cassette.interactions.len(),
        path.display(),
        cassette.scrubbed.total()
    );
    let chunks = &cassette.interactions[0].response.as_ref().unwrap().chunks;
    println!(
        "the body arrived in {} chunk(s), kept as they came",
        chunks.len()
    );

    // The committed file holds no key: the check a suite runs over its cassettes.
    safety::check_cassette(&path).unwrap();
    assert!(
        !std::fs::read_to_string(&path)
            .unwrap()
            .contains("made-up-key")
    );

    // 2. Replay: the server is gone, the key is anything.
    let replaying =
        CassetteTransport::new(Mode::Replay, &path, Arc::new(ReqwestTransport::default())).unwrap();
    let replayed = call(&model, replaying.clone(), "no-key-needed").await;
    replaying.finish().unwrap();

    let text = |events: &[AssistantMessageEvent]| match events.last() {
        Some(AssistantMessageEvent::Done { message, .. }) => message.text(),
        other => panic!("the call failed: {other:?}"),
    };
    let (a, b) = (text(&recorded), text(&replayed));
    // The same events (the final message's timestamp aside).
    assert_eq!(recorded.len(), replayed.len());
    println!("recorded: {a:?}\nreplayed: {b:?}");
    (a, b)
}

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("pi-cassette-example-{}", std::process::id()));
    let (recorded, replayed) = run(&dir).await;
    assert_eq!(recorded, replayed);
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn records_then_replays() {
        let dir = tempfile::tempdir().unwrap();
        let (recorded, replayed) = super::run(dir.path()).await;
        assert_eq!(recorded, "Recorded once.");
        assert_eq!(replayed, recorded);
    }
}
