//! pi's recorded sessions and requests (`tests/fixtures/pi/`, from the shared conformance
//! material), as the request-encoding tests read them.

use pi_engine::llm::{Message, Model, ModelRegistry};
use serde_json::Value;

/// The JSON objects of a JSONL file.
pub fn jsonl(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The model `id` of `provider` in the `models.json` pi was pointed at, as pi's registry
/// resolves it (provider `compat` included), served from `base_url`.
pub fn models_json_model(provider: &str, id: &str, base_url: &str) -> Model {
    let text = std::fs::read_to_string("tests/fixtures/pi/models.json").unwrap();
    let registry = ModelRegistry::from_models_json(&text).unwrap();
    let mut model = registry.find(provider, id).unwrap().clone();
    model.base_url = base_url.to_owned();
    model
}

/// A session pi wrote, with the requests pi made for it.
pub struct RecordedSession {
    /// The session header's id (pi's `sessionId` option).
    pub session_id: String,
    /// Every message of the session, in order.
    pub messages: Vec<Message>,
    /// The recorded requests (`path`, `headers`, `body`).
    pub requests: Vec<Value>,
}

impl RecordedSession {
    /// `pi-session-<api>.jsonl` and `pi-requests-<api>.jsonl`.
    pub fn load(api: &str) -> RecordedSession {
        let session = jsonl(&format!("tests/fixtures/pi/pi-session-{api}.jsonl"));
        let requests = jsonl(&format!("tests/fixtures/pi/pi-requests-{api}.jsonl"));
        let messages = session
            .iter()
            .filter(|e| e["type"] == "message")
            .map(|e| serde_json::from_value(e["message"].clone()).unwrap())
            .collect();
        RecordedSession {
            session_id: session[0]["id"].as_str().unwrap().to_owned(),
            messages,
            requests,
        }
    }

    /// For each request, the messages pi had when it made it: those before the assistant
    /// message that answered it.
    pub fn contexts(&self) -> Vec<&[Message]> {
        let contexts: Vec<&[Message]> = self
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(m, Message::Assistant(_)))
            .map(|(i, _)| &self.messages[..i])
            .collect();
        assert_eq!(
            contexts.len(),
            self.requests.len(),
            "one request per assistant message"
        );
        contexts
    }
}

/// A recorded header, by case-insensitive name.
pub fn recorded_header<'a>(request: &'a Value, name: &str) -> Option<&'a str> {
    request["headers"]
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| v.as_str())
}
