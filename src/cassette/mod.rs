//! Cassettes: record a real provider once, replay it in every test (cargo feature
//! `cassette`).
//!
//! A cassette is a JSON file of HTTP exchanges recorded through the
//! [transport seam](crate::providers::http::HttpTransport) under every provider: each request
//! (method, URL, headers, JSON body) and its response (status, headers, and the body **as the
//! chunks that arrived**, optionally with their timing — streaming bugs live in chunk
//! boundaries). A test records it once against the real API with real keys, commits it, and
//! replays it in CI with no network and no key; the replayed body arrives in the same
//! chunks, so the decoders see exactly what they saw when it was recorded.
//!
//! * [`Recorder`] wraps a real transport and writes the cassette; [`Player`] replays one;
//!   [`CassetteTransport`] is either, by [`Mode`], from the environment variable
//!   `PI_CASSETTE`:
//!
//!   | `PI_CASSETTE` | |
//!   |---|---|
//!   | `replay` (or unset) | replay the file; an error if it is missing |
//!   | `record` | call the real API and (over)write the file |
//!   | `auto` | replay if the file exists, else record it |
//!
//! * Requests are matched in order, on method, path and body, ignoring values that change
//!   on every run ([`Match`], [`DEFAULT_IGNORED`]). A request that does not match is the
//!   call's `error` event (kind [`Config`](crate::ErrorKind::Config)) with a JSON diff of
//!   what was recorded and what was sent, and how to re-record.
//! * [`safety::check_dir`] fails when a committed cassette holds a key.
//!
//! # What is scrubbed
//!
//! At record time, before anything is written: credential headers (`authorization`,
//! `x-api-key`, `x-goog-api-key`, `api-key`, `cookie`, `set-cookie`,
//! `proxy-authorization`, any header whose name has a `key`, `token`, `secret`, `auth`
//! part), credential query parameters (`key=`, `api_key=`, `token=`, …), JSON body fields
//! named like credentials (`api_key`, `apiKey`, `key`, `token`, `secret`, `password`, …),
//! tokens of the known key formats anywhere (`sk-…`, `sk-ant-…`, `AIza…`, `AKIA…`/`ASIA…`,
//! `ya29.…`, `Bearer …`) except in signature fields and image data, every value so removed
//! wherever it appears again (a key echoed in an error body), and the secrets you give
//! ([`Recorder::with_secret`]). Each becomes [`SCRUBBED`]; the file counts them per kind
//! ([`ScrubCounts`], [`SecretKind`]). A response body is scrubbed as a whole (a key split
//! between two chunks is found) and its chunks keep their boundaries.
//!
//! # Example
//!
//! A test of your own that records a reply from a local server, then replays it with the
//! server gone (`examples/cassette.rs` is the same as a program):
//!
//! ```
//! use std::sync::Arc;
//! use pi_engine::cassette::{CassetteTransport, Mode};
//! use pi_engine::providers::http::ReqwestTransport;
//! use pi_engine::{Context, Model, StreamOptions, UserMessage};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! // A server that answers one request with an Anthropic event stream, in three chunks.
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let url = format!("http://{}", listener.local_addr().unwrap());
//! let server = tokio::spawn(async move {
//!     let (mut socket, _) = listener.accept().await.unwrap();
//!     let mut request = vec![0; 65536];
//!     let _ = socket.read(&mut request).await.unwrap();
//!     socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n").await.unwrap();
//!     for chunk in [
//!         "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
//!         "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\nevent: content_bl",
//!         "ock_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
//!     ] {
//!         socket.write_all(chunk.as_bytes()).await.unwrap();
//!         socket.flush().await.unwrap();
//!         tokio::time::sleep(std::time::Duration::from_millis(20)).await;
//!     }
//! });
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("hello.json");
//! let model = Model::new("claude-test", "anthropic-messages", "anthropic", url);
//! let context = Context::new().with_message(UserMessage::text("Hello"));
//!
//! // 1. Record (PI_CASSETTE=record in a real suite, with a real key).
//! let cassette = CassetteTransport::new(Mode::Record, &path, Arc::new(ReqwestTransport::default())).unwrap();
//! let options = StreamOptions::new().with_api_key("sk-ant-api03-not-a-real-key-0000").with_transport(cassette.clone());
//! assert_eq!(pi_engine::complete(&model, &context, &options).await.text(), "Hi");
//! cassette.finish().unwrap();
//! server.await.unwrap();
//! let file = std::fs::read_to_string(&path).unwrap();
//! assert!(!file.contains("not-a-real-key") && file.contains("[SCRUBBED]"));
//!
//! // 2. Replay: no server, no key.
//! let cassette = CassetteTransport::new(Mode::Replay, &path, Arc::new(ReqwestTransport::default())).unwrap();
//! let options = StreamOptions::new().with_api_key("anything").with_transport(cassette.clone());
//! assert_eq!(pi_engine::complete(&model, &context, &options).await.text(), "Hi");
//! cassette.finish().unwrap(); // every interaction was replayed
//! pi_engine::cassette::safety::check_cassette(&path).unwrap();
//! # }
//! ```

mod format;
mod matching;
pub mod safety;
mod scrub;
mod transport;

use std::path::{Path, PathBuf};

pub use format::{
    Body, Cassette, Chunk, ChunkData, FORMAT_VERSION, Interaction, RecordedRequest,
    RecordedResponse, ScrubCounts,
};
pub use matching::{DEFAULT_IGNORED, Match};
pub use scrub::{SCRUBBED, SecretKind};
pub use transport::{CassetteTransport, Player, Recorder, Timing};

use crate::llm::error::{Error, ErrorKind};

/// The environment variable that chooses the [`Mode`]: `record`, `replay` or `auto`.
pub const ENV_VAR: &str = "PI_CASSETTE";

/// Whether a [`CassetteTransport`] records or replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Mode {
    /// Call the real API through the inner transport and (over)write the cassette.
    Record,
    /// Replay the cassette; an error when the file is missing (the default).
    #[default]
    Replay,
    /// Replay when the file exists, else record it.
    Auto,
}

impl Mode {
    /// The mode named by `PI_CASSETTE` ([`ENV_VAR`]): `record`, `replay` (also `playback`)
    /// or `auto`, in any case; [`Mode::Replay`] when unset or empty. Another value is an
    /// error.
    pub fn from_env() -> Result<Mode, CassetteError> {
        match std::env::var(ENV_VAR) {
            Ok(value) => Mode::parse(&value),
            Err(_) => Ok(Mode::Replay),
        }
    }

    /// The mode named `value` (as in [`from_env`](Self::from_env)).
    ///
    /// ```
    /// use pi_engine::cassette::Mode;
    ///
    /// assert_eq!(Mode::parse("Record").unwrap(), Mode::Record);
    /// assert_eq!(Mode::parse("").unwrap(), Mode::Replay);
    /// assert!(Mode::parse("sometimes").is_err());
    /// ```
    pub fn parse(value: &str) -> Result<Mode, CassetteError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "record" => Ok(Mode::Record),
            "" | "replay" | "playback" => Ok(Mode::Replay),
            "auto" => Ok(Mode::Auto),
            _ => Err(CassetteError::Mode {
                value: value.to_owned(),
            }),
        }
    }
}

/// A cassette that cannot be read, written or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// Reading or writing the file failed.
    #[error("cassette {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a cassette.
    #[error("cassette {}: not a cassette file: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The file is of a format version this crate does not read.
    #[error("cassette {}: format version {found}, this crate reads version {FORMAT_VERSION}; re-record it with {ENV_VAR}=record", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u32,
    },
    /// Replaying a cassette that does not exist.
    #[error("no cassette at {}: record it with {ENV_VAR}=record (real keys needed), or run with {ENV_VAR}=auto", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// `PI_CASSETTE` holds an unknown mode.
    #[error("{ENV_VAR}={value:?} is not a mode: use record, replay or auto")]
    Mode {
        /// The value.
        value: String,
    },
    /// A replay did not use every recorded interaction.
    #[error("{}: {} recorded interaction(s) not replayed: {}; the code under test made fewer requests than when it was recorded (re-record with {ENV_VAR}=record)", path.as_ref().map_or_else(|| "the cassette".to_owned(), |p| format!("cassette {}", p.display())), unused.len(), unused.join(", "))]
    Unused {
        /// The file, if the cassette came from one.
        path: Option<PathBuf>,
        /// The interactions left, as `#index METHOD url`.
        unused: Vec<String>,
    },
}

impl From<CassetteError> for Error {
    /// An error of kind [`Config`](ErrorKind::Config) with the cassette error's text.
    fn from(error: CassetteError) -> Self {
        Error::new(ErrorKind::Config, error.to_string())
    }
}

impl Cassette {
    /// Reads the cassette file at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Cassette, CassetteError> {
        let path = path.as_ref();
        let text = std::fs::read(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => CassetteError::Missing {
                path: path.to_owned(),
            },
            _ => CassetteError::Io {
                path: path.to_owned(),
                source,
            },
        })?;
        // The version first, so that a newer format says so rather than failing to parse.
        #[derive(serde::Deserialize)]
        struct Version {
            version: u32,
        }
        if let Ok(Version { version }) = serde_json::from_slice::<Version>(&text)
            && version != FORMAT_VERSION
        {
            return Err(CassetteError::Version {
                path: path.to_owned(),
                found: version,
            });
        }
        serde_json::from_slice(&text).map_err(|source| CassetteError::Parse {
            path: path.to_owned(),
            source,
        })
    }

    /// Writes the cassette to `path` (pretty JSON, a final newline), creating its
    /// directory; the file is replaced at once (written beside it, then renamed).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), CassetteError> {
        let path = path.as_ref();
        let io = |source| CassetteError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut text = serde_json::to_vec_pretty(self).map_err(|source| CassetteError::Parse {
            path: path.to_owned(),
            source,
        })?;
        text.push(b'\n');
        let mut temp = path.as_os_str().to_owned();
        temp.push(".tmp");
        let temp = PathBuf::from(temp);
        std::fs::write(&temp, &text).map_err(io)?;
        std::fs::rename(&temp, path).map_err(io)
    }
}

#[cfg(test)]
mod tests;
