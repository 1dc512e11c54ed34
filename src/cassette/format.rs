//! The cassette file: JSON, pretty-printed, one file per test, `"version": 1`.
//!
//! ```json
//! {
//!   "version": 1,
//!   "interactions": [
//!     {
//!       "request": {
//!         "method": "POST",
//!         "url": "https://api.anthropic.com/v1/messages",
//!         "headers": { "content-type": "application/json", "x-api-key": "[SCRUBBED]" },
//!         "body": { "json": { "model": "claude-sonnet-4-5", "stream": true } }
//!       },
//!       "response": {
//!         "status": 200,
//!         "headers": { "content-type": "text/event-stream" },
//!         "chunks": [
//!           { "text": "event: message_start\ndata: {…}\n\n", "offset_ms": 412 },
//!           { "base64": "8J+Y", "offset_ms": 415 }
//!         ]
//!       }
//!     }
//!   ],
//!   "scrubbed": { "headers": 1 }
//! }
//! ```
//!
//! Keys come out in a stable order (the structs' fields in order, headers sorted by name, a
//! JSON body's members as the request had them), so a re-recorded cassette differs from the
//! old one only where the traffic did.

use std::collections::BTreeMap;

use base64::Engine as _;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// The version of the file format this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// A cassette: recorded HTTP exchanges, in the order they were made.
///
/// Read one with [`Cassette::load`](crate::cassette::Cassette::load), write one with
/// [`Cassette::save`](crate::cassette::Cassette::save); a
/// [`Recorder`](crate::cassette::Recorder) makes them and a
/// [`Player`](crate::cassette::Player) replays them.
///
/// ```
/// use pi_engine::cassette::Cassette;
///
/// let cassette: Cassette = serde_json::from_str(r#"{"version": 1, "interactions": []}"#).unwrap();
/// assert!(cassette.interactions.is_empty());
/// assert_eq!(cassette.scrubbed.total(), 0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Cassette {
    /// The format version ([`FORMAT_VERSION`]).
    pub version: u32,
    /// The exchanges, in the order their requests were sent.
    pub interactions: Vec<Interaction>,
    /// How many secrets were scrubbed at record time, per kind.
    #[serde(default)]
    pub scrubbed: ScrubCounts,
}

impl Default for Cassette {
    fn default() -> Self {
        Cassette {
            version: FORMAT_VERSION,
            interactions: Vec::new(),
            scrubbed: ScrubCounts::default(),
        }
    }
}

/// One request and what came back for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Interaction {
    /// The request, scrubbed.
    pub request: RecordedRequest,
    /// The response; `None` when the request got none (see [`failed`](Self::failed)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<RecordedResponse>,
    /// Why the request got no response (a refused connection, a timeout of the transport):
    /// replayed as an `Err` of kind [`Connection`](crate::ErrorKind::Connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// A recorded request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The method (`POST`).
    pub method: String,
    /// The URL, its secret query parameters scrubbed.
    pub url: String,
    /// The headers, by lowercase name (sorted), secrets scrubbed; repeated headers joined
    /// with `, `.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body; absent when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
}

/// A request body: JSON when it parses, else text when it is UTF-8, else base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Body {
    /// A JSON body, as a value (readable and diffable in the file).
    Json(serde_json::Value),
    /// A UTF-8 body that is not JSON.
    Text(String),
    /// Any other body, base64 (standard alphabet, padded).
    Base64(String),
}

impl Body {
    /// The body of `bytes`: [`Json`](Body::Json), [`Text`](Body::Text) or
    /// [`Base64`](Body::Base64); `None` when empty.
    pub fn from_bytes(bytes: &[u8]) -> Option<Body> {
        if bytes.is_empty() {
            return None;
        }
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) {
            return Some(Body::Json(value));
        }
        Some(match std::str::from_utf8(bytes) {
            Ok(text) => Body::Text(text.to_owned()),
            Err(_) => Body::Base64(base64::engine::general_purpose::STANDARD.encode(bytes)),
        })
    }

    /// The bytes the body stands for (a JSON body serialized compactly).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Body::Json(value) => serde_json::to_vec(value).unwrap_or_default(),
            Body::Text(text) => text.clone().into_bytes(),
            Body::Base64(data) => base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap_or_default(),
        }
    }
}

/// A recorded response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedResponse {
    /// The status code.
    pub status: u16,
    /// The headers, by lowercase name (sorted), secrets scrubbed.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body, as the chunks that arrived, with their boundaries.
    #[serde(default)]
    pub chunks: Vec<Chunk>,
    /// Set when the body broke after these chunks (the connection was lost, or it was not
    /// read to the end when recorded): replayed as an `Err` of kind
    /// [`Connection`](crate::ErrorKind::Connection) after the last chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RecordedResponse {
    /// The whole body: the chunks' bytes, in order.
    pub fn body(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(|c| c.bytes()).collect()
    }
}

/// One chunk of a response body as it arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Chunk {
    /// The bytes.
    #[serde(flatten)]
    pub data: ChunkData,
    /// When it arrived, in milliseconds after the response head (recorded on request, see
    /// [`Recorder::with_timing`](crate::cassette::Recorder::with_timing)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_ms: Option<u64>,
}

/// The bytes of a [`Chunk`]: `"text"` when they are valid UTF-8 on their own, else
/// `"base64"` (a chunk that ends inside a character, binary data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChunkData {
    /// UTF-8 text.
    Text(String),
    /// Base64 (standard alphabet, padded).
    Base64(String),
}

impl Chunk {
    /// A chunk of `bytes` (text when they are UTF-8), arrived `offset_ms` after the head.
    ///
    /// ```
    /// use pi_engine::cassette::{Chunk, ChunkData};
    ///
    /// assert_eq!(Chunk::new(b"data: hi\n\n", None).data, ChunkData::Text("data: hi\n\n".into()));
    /// // The first two bytes of "é": not text on their own.
    /// let half = Chunk::new(&"é".as_bytes()[..1], Some(5));
    /// assert!(matches!(half.data, ChunkData::Base64(_)));
    /// assert_eq!(half.bytes(), &"é".as_bytes()[..1]);
    /// ```
    pub fn new(bytes: &[u8], offset_ms: Option<u64>) -> Chunk {
        let data = match std::str::from_utf8(bytes) {
            Ok(text) => ChunkData::Text(text.to_owned()),
            Err(_) => ChunkData::Base64(base64::engine::general_purpose::STANDARD.encode(bytes)),
        };
        Chunk { data, offset_ms }
    }

    /// The chunk's bytes (empty when its base64 does not decode).
    pub fn bytes(&self) -> Bytes {
        match &self.data {
            ChunkData::Text(text) => Bytes::copy_from_slice(text.as_bytes()),
            ChunkData::Base64(data) => base64::engine::general_purpose::STANDARD
                .decode(data)
                .map(Bytes::from)
                .unwrap_or_default(),
        }
    }
}

/// How many values were scrubbed at record time, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ScrubCounts {
    /// Header values (credentials by header name: `authorization`, `x-api-key`, `cookie`, …).
    #[serde(skip_serializing_if = "is_zero")]
    pub headers: u64,
    /// Query parameters (`key=`, `api_key=`, `token=`, …).
    #[serde(skip_serializing_if = "is_zero")]
    pub query: u64,
    /// JSON body fields named like a credential (`api_key`, `apiKey`, `token`, `password`, …).
    #[serde(skip_serializing_if = "is_zero")]
    pub body_fields: u64,
    /// Tokens of the known key formats (`sk-…`, `sk-ant-…`, `AIza…`, `AKIA…`/`ASIA…`,
    /// `ya29.…`, `Bearer …`) found anywhere else.
    #[serde(skip_serializing_if = "is_zero")]
    pub key_formats: u64,
    /// Occurrences of a secret value elsewhere: a value already scrubbed from a header or the
    /// URL found again (in a body, a response), or a secret the user gave.
    #[serde(skip_serializing_if = "is_zero")]
    pub secrets: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ScrubCounts {
    /// All kinds together.
    pub fn total(&self) -> u64 {
        self.headers + self.query + self.body_fields + self.key_formats + self.secrets
    }

    pub(crate) fn add(&mut self, other: &ScrubCounts) {
        self.headers += other.headers;
        self.query += other.query;
        self.body_fields += other.body_fields;
        self.key_formats += other.key_formats;
        self.secrets += other.secrets;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_text_when_utf8_and_base64_otherwise() {
        let text = Chunk::new(b"data: {}\n\n", Some(3));
        assert_eq!(
            serde_json::to_value(&text).unwrap(),
            serde_json::json!({"text": "data: {}\n\n", "offset_ms": 3})
        );
        let binary = Chunk::new(&[0xff, 0x00, 0xc3], None);
        let json = serde_json::to_value(&binary).unwrap();
        assert_eq!(json, serde_json::json!({"base64": "/wDD"}));
        let back: Chunk = serde_json::from_value(json).unwrap();
        assert_eq!(&back.bytes()[..], &[0xff, 0x00, 0xc3]);
    }

    #[test]
    fn bodies_round_trip() {
        for bytes in [&b"{\"a\":1}"[..], b"plain text", &[0xff, 0xfe]] {
            let body = Body::from_bytes(bytes).unwrap();
            let json = serde_json::to_string(&body).unwrap();
            let back: Body = serde_json::from_str(&json).unwrap();
            assert_eq!(back.to_bytes(), bytes);
        }
        assert_eq!(Body::from_bytes(b""), None);
    }

    #[test]
    fn the_file_has_a_stable_shape() {
        let cassette = Cassette {
            version: FORMAT_VERSION,
            interactions: vec![Interaction {
                request: RecordedRequest {
                    method: "POST".into(),
                    url: "http://x/v1".into(),
                    headers: [
                        ("b".to_owned(), "2".to_owned()),
                        ("a".to_owned(), "1".to_owned()),
                    ]
                    .into_iter()
                    .collect(),
                    body: Some(Body::Json(serde_json::json!({"z": 1, "a": 2}))),
                },
                response: Some(RecordedResponse {
                    status: 200,
                    headers: BTreeMap::new(),
                    chunks: vec![Chunk::new(b"hi", None)],
                    error: None,
                }),
                failed: None,
            }],
            scrubbed: ScrubCounts {
                headers: 1,
                ..ScrubCounts::default()
            },
        };
        let text = serde_json::to_string(&cassette).unwrap();
        assert_eq!(
            text,
            r#"{"version":1,"interactions":[{"request":{"method":"POST","url":"http://x/v1","headers":{"a":"1","b":"2"},"body":{"json":{"z":1,"a":2}}},"response":{"status":200,"headers":{},"chunks":[{"text":"hi"}]}}],"scrubbed":{"headers":1}}"#
        );
        let back: Cassette = serde_json::from_str(&text).unwrap();
        assert_eq!(back, cassette);
    }
}
