//! Request encoding: for each request pi 0.73.1 made in a recorded session, encoding the
//! context pi had gives the body pi sent, byte for byte as JSON (key order aside), and the
//! headers pi's SDK sent that matter to the API.
//!
//! Inputs, as `../shared/conformance/pi/README.md` describes them: the model of `models.json`
//! (`mock-anthropic`/`mock-claude`), the session's messages before the assistant message that
//! answered each request, pi's system prompt and tools as recorded in the body, the session
//! id, and thinking level `high`, through `stream_simple` as pi's agent calls it (the level
//! maps to `thinkingEnabled`, `thinkingBudgetTokens` 7168 and `maxTokens` 8192).
//!
//! Differences: none in the bodies. Headers pi's SDK adds for its own telemetry
//! (`X-Stainless-*`, `User-Agent: Anthropic/JS`, `accept-language`, `sec-fetch-mode`,
//! `accept-encoding`) are not sent.
#![cfg(feature = "anthropic")]

mod support;

use pi_engine::providers::anthropic::AnthropicProvider;
use pi_engine::{
    ApiProvider, Context, Message, Model, RetryPolicy, StreamOptions, ThinkingLevel, Tool,
};
use serde_json::{Value, json};
use support::{MockServer, Reply, anthropic_sse};

fn lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn mock_claude(base_url: &str) -> Model {
    let models: Value =
        serde_json::from_str(&std::fs::read_to_string("tests/fixtures/pi/models.json").unwrap())
            .unwrap();
    let provider = &models["providers"]["mock-anthropic"];
    let mut model = provider["models"][0].clone();
    model["name"] = model["id"].clone();
    model["api"] = provider["api"].clone();
    model["provider"] = json!("mock-anthropic");
    model["baseUrl"] = json!(base_url);
    serde_json::from_value(model).unwrap()
}

/// pi's tools, back from their Anthropic encoding.
fn tools_of(body: &Value) -> Vec<Tool> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            Tool::new(
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap(),
                t["input_schema"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn bodies_match_pi_for_every_request_of_the_session() {
    let session = lines("tests/fixtures/pi/pi-session-anthropic-messages.jsonl");
    let recorded = lines("tests/fixtures/pi/pi-requests-anthropic-messages.jsonl");
    let session_id = session[0]["id"].as_str().unwrap().to_owned();
    let messages: Vec<Message> = session
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| serde_json::from_value(e["message"].clone()).unwrap())
        .collect();
    let answered_at: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Assistant(_)))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        answered_at.len(),
        recorded.len(),
        "one request per assistant message"
    );

    let ok = anthropic_sse(&[
        r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":1}}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let server = MockServer::start(vec![Reply::sse(&[&ok]); recorded.len()]).await;
    let model = mock_claude(server.url());
    let options = StreamOptions::new()
        .with_api_key("dummy")
        .with_session_id(session_id)
        .with_reasoning(ThinkingLevel::High)
        .with_retry(RetryPolicy::none());

    for (k, (want, &upto)) in recorded.iter().zip(&answered_at).enumerate() {
        let body = &want["body"];
        let mut context = Context::new()
            .with_system_prompt(body["system"][0]["text"].as_str().unwrap())
            .with_tools(tools_of(body));
        context.messages = messages[..upto].to_vec();
        let reply = AnthropicProvider::new()
            .stream_simple(&model, &context, &options)
            .result()
            .await;
        assert!(reply.error_message.is_none(), "request {k}: {reply:?}");
        let sent = &server.requests()[k];
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.path, want["path"].as_str().unwrap());
        assert_eq!(sent.json(), *body, "request {k}: body differs from pi's");
        for header in [
            "anthropic-version",
            "anthropic-beta",
            "accept",
            "anthropic-dangerous-direct-browser-access",
            "content-type",
        ] {
            assert_eq!(
                sent.header(header),
                want["headers"][header].as_str(),
                "request {k}: header {header}"
            );
        }
        assert_eq!(sent.header("x-api-key"), Some("dummy"));
        assert_eq!(sent.header("authorization"), None);
    }
}
