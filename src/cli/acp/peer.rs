//! The JSON-RPC 2.0 side of the connection: lines out (responses, notifications, requests
//! to the client) and the client's answers to our requests.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1 as acp;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::agent_session::JsonLinesWriter;

/// What a request to the client came back with: its `result`, or its `error` (or ours,
/// when the connection closed first).
pub(super) type Answer = Result<Value, acp::Error>;

/// The connection to the client.
pub(super) struct Peer {
    out: Arc<JsonLinesWriter>,
    next_id: AtomicU64,
    pending: Mutex<Option<HashMap<u64, oneshot::Sender<Answer>>>>,
}

impl Peer {
    pub(super) fn new(out: Arc<JsonLinesWriter>) -> Arc<Peer> {
        Arc::new(Peer {
            out,
            next_id: AtomicU64::new(0),
            pending: Mutex::new(Some(HashMap::new())),
        })
    }

    fn write(&self, value: &Value) {
        if let Err(e) = self.out.write_value(value) {
            tracing::debug!(error = %e, "ACP: a line was not written");
        }
    }

    pub(super) fn respond(&self, id: &Value, result: Result<Value, acp::Error>) {
        let line = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        self.write(&line);
    }

    pub(super) fn notify(&self, method: &str, params: impl Serialize) {
        match serde_json::to_value(params) {
            Ok(params) => {
                self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
            }
            Err(e) => tracing::warn!(error = %e, method, "ACP: a notification did not serialize"),
        }
    }

    /// `session/update` for `session`.
    pub(super) fn update(&self, session: &acp::SessionId, update: acp::SessionUpdate) {
        self.notify(
            "session/update",
            acp::SessionNotification::new(session.clone(), update),
        );
    }

    /// Calls `method` on the client and waits for its answer.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future forgets the request: a late answer is ignored.
    pub(super) async fn request(&self, method: &str, params: impl Serialize) -> Answer {
        let params = serde_json::to_value(params).map_err(internal)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            let Some(pending) = pending.as_mut() else {
                return Err(closed());
            };
            pending.insert(id, tx);
        }
        let forget = Forget { peer: self, id };
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = rx.await.unwrap_or_else(|_| Err(closed()));
        drop(forget);
        answer
    }

    /// A response line from the client: the answer to one of our requests.
    pub(super) fn resolve(&self, message: &Value) {
        let Some(id) = message.get("id").and_then(Value::as_u64) else {
            tracing::debug!("ACP: a response to no request of ours");
            return;
        };
        let sender = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .and_then(|p| p.remove(&id));
        let Some(sender) = sender else {
            return;
        };
        let answer = match (message.get("error"), message.get("result")) {
            (Some(error), _) => Err(serde_json::from_value(error.clone())
                .unwrap_or_else(|_| acp::Error::new(-32603, error.to_string()))),
            (None, Some(result)) => Ok(result.clone()),
            (None, None) => Ok(Value::Null),
        };
        let _ = sender.send(answer);
    }

    /// The input ended: requests waiting for an answer fail, later ones at once.
    pub(super) fn close(&self) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    pub(super) async fn finish(&self) -> Result<(), crate::agent_session::JsonLinesError> {
        self.out.finish().await
    }
}

/// Removes a request from the pending ones when its future is dropped.
struct Forget<'a> {
    peer: &'a Peer,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        if let Some(p) = self
            .peer
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            p.remove(&self.id);
        }
    }
}

pub(super) fn internal(e: impl std::fmt::Display) -> acp::Error {
    acp::Error::new(-32603, e.to_string())
}

fn closed() -> acp::Error {
    acp::Error::new(-32603, "the client closed the connection")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn requests_get_their_answers_and_fail_when_the_connection_closes() {
        let (sink, mut read) = tokio::io::duplex(1 << 16);
        let peer = Peer::new(Arc::new(JsonLinesWriter::new(sink)));
        let asking = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request("fs/read_text_file", json!({"x": 1})).await })
        };
        tokio::task::yield_now().await;
        peer.resolve(&json!({"jsonrpc": "2.0", "id": 0, "result": {"content": "hi"}}));
        assert_eq!(asking.await.unwrap().unwrap(), json!({"content": "hi"}));

        let failing = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request("x", json!({})).await })
        };
        tokio::task::yield_now().await;
        peer.resolve(
            &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}}),
        );
        assert_eq!(failing.await.unwrap().unwrap_err().message, "no");

        let waiting = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request("x", json!({})).await })
        };
        tokio::task::yield_now().await;
        peer.close();
        assert!(waiting.await.unwrap().is_err());
        assert!(peer.request("x", json!({})).await.is_err());

        peer.finish().await.unwrap();
        let mut text = String::new();
        read.read_to_string(&mut text).await.unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["method"], "fs/read_text_file");
        assert_eq!(lines[0]["jsonrpc"], "2.0");
        assert_eq!(lines[2]["id"], 2);
    }
}
