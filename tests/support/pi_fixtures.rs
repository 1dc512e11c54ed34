//! Reading pi's recorded material of `tests/fixtures/pi/`: JSON-lines files, the custom
//! models of `models.json`, and the messages of a session file.

use pi_engine::{Message, Model};
use serde_json::{Value, json};

/// The JSON values of a JSON-lines file (blank lines skipped).
pub fn json_lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The first model of `provider` in `tests/fixtures/pi/models.json`, as pi's model registry
/// builds it (name = id, the provider's api), pointed at `base_url`.
pub fn pi_model(provider: &str, base_url: &str) -> Model {
    let models: Value =
        serde_json::from_str(&std::fs::read_to_string("tests/fixtures/pi/models.json").unwrap())
            .unwrap();
    let entry = &models["providers"][provider];
    let mut model = entry["models"][0].clone();
    model["name"] = model["id"].clone();
    model["api"] = entry["api"].clone();
    model["provider"] = json!(provider);
    model["baseUrl"] = json!(base_url);
    serde_json::from_value(model).unwrap()
}

/// A session file's id (its header's) and the messages of its `message` entries, in order.
pub fn session_messages(path: &str) -> (String, Vec<Message>) {
    let entries = json_lines(path);
    let id = entries[0]["id"].as_str().unwrap().to_owned();
    let messages = entries
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| serde_json::from_value(e["message"].clone()).unwrap())
        .collect();
    (id, messages)
}
