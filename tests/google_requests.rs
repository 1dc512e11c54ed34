//! Request encoding: for each request pi 0.73.1 made in a recorded `google-generative-ai`
//! session, encoding the context pi had gives the body pi sent (as JSON, key order aside),
//! to the same path, with the key in `x-goog-api-key`.
//!
//! Inputs, as `../shared/conformance/pi/README.md` describes them: the model of `models.json`
//! (`mock-google`/`mock-gemini`), the session's messages before the assistant message that
//! answered each request, pi's system prompt and tools as recorded in the body, the session
//! id, and thinking level `high`, through `stream_simple` as pi's agent calls it (for this
//! model the level maps to `thinkingBudget` -1 and `maxOutputTokens` 8192).
//!
//! Differences: none in the bodies. Headers `@google/genai` adds for its own telemetry
//! (`x-goog-api-client`, `User-Agent: google-genai-sdk/…`) are not sent.
#![cfg(feature = "google")]

#[path = "support/gemini.rs"]
mod gemini;
mod support;

use gemini::gemini_sse;
use pi_engine::providers::google::GoogleProvider;
use pi_engine::{
    ApiProvider, Context, Message, Model, StreamOptions, ThinkingLevel, Tool, llm::RetryPolicy,
};
use serde_json::{Value, json};
use support::{MockServer, Reply};

fn lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn mock_gemini(base_url: &str) -> Model {
    let models: Value =
        serde_json::from_str(&std::fs::read_to_string("tests/fixtures/pi/models.json").unwrap())
            .unwrap();
    let provider = &models["providers"]["mock-google"];
    let mut model = provider["models"][0].clone();
    model["name"] = model["id"].clone();
    model["api"] = provider["api"].clone();
    model["provider"] = json!("mock-google");
    model["baseUrl"] = json!(format!("{base_url}/v1beta"));
    serde_json::from_value(model).unwrap()
}

/// pi's tools, back from their Gemini encoding.
fn tools_of(body: &Value) -> Vec<Tool> {
    body["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            Tool::new(
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap(),
                t["parametersJsonSchema"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn bodies_match_pi_for_every_request_of_the_session() {
    let session = lines("tests/fixtures/pi/pi-session-google-generative-ai.jsonl");
    let recorded = lines("tests/fixtures/pi/pi-requests-google-generative-ai.jsonl");
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

    let ok = gemini_sse(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}}"#,
    ]);
    let server = MockServer::start(vec![Reply::sse(&[&ok]); recorded.len()]).await;
    let model = mock_gemini(server.url());
    let options = StreamOptions::new()
        .with_api_key("dummy")
        .with_session_id(session_id)
        .with_reasoning(ThinkingLevel::High)
        .with_retry(RetryPolicy::none());

    for (k, (want, &upto)) in recorded.iter().zip(&answered_at).enumerate() {
        let body = &want["body"];
        let mut context = Context::new()
            .with_system_prompt(
                body["systemInstruction"]["parts"][0]["text"]
                    .as_str()
                    .unwrap(),
            )
            .with_tools(tools_of(body));
        context.messages = messages[..upto].to_vec();
        let reply = GoogleProvider::new()
            .stream_simple(&model, &context, &options)
            .result()
            .await;
        assert!(reply.error_message.is_none(), "request {k}: {reply:?}");
        assert_eq!(reply.text(), "ok");
        let sent = &server.requests()[k];
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.path, want["path"].as_str().unwrap());
        assert_eq!(sent.json(), *body, "request {k}: body differs from pi's");
        assert_eq!(sent.header("content-type"), Some("application/json"));
        assert_eq!(sent.header("x-goog-api-key"), Some("dummy"));
        assert_eq!(sent.header("authorization"), None);
    }
}
