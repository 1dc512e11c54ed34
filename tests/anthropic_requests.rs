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
use pi_engine::{ApiProvider, Context, StreamOptions, ThinkingLevel, Tool, llm::RetryPolicy};
use serde_json::Value;
use support::pi::{RecordedSession, models_json_model, recorded_header};
use support::{MockServer, Reply, anthropic_sse};

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
    let session = RecordedSession::load("anthropic-messages");
    let contexts = session.contexts();
    let ok = anthropic_sse(&[
        r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":1}}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let server = MockServer::start(vec![Reply::sse(&[&ok]); contexts.len()]).await;
    let model = models_json_model("mock-anthropic", "mock-claude", server.url());
    let options = StreamOptions::new()
        .with_api_key("dummy")
        .with_session_id(session.session_id.clone())
        .with_reasoning(ThinkingLevel::High)
        .with_retry(RetryPolicy::none());

    for (k, (want, messages)) in session.requests.iter().zip(contexts).enumerate() {
        let body = &want["body"];
        let mut context = Context::new()
            .with_system_prompt(body["system"][0]["text"].as_str().unwrap())
            .with_tools(tools_of(body));
        context.messages = messages.to_vec();
        let reply = AnthropicProvider::new()
            .stream_simple(&model, &context, &options)
            .result()
            .await;
        assert!(reply.error_message.is_none(), "request {k}: {reply:?}");
        let sent = &server.requests()[k];
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.path, want["path"].as_str().unwrap());
        assert_eq!(sent.json(), *body, "request {k}: body differs from pi's");
        // The same members in the same order as pi wrote them.
        assert_eq!(
            sent.json().to_string(),
            body.to_string(),
            "request {k}: key order differs from pi's"
        );
        for header in [
            "anthropic-version",
            "anthropic-beta",
            "accept",
            "anthropic-dangerous-direct-browser-access",
            "content-type",
        ] {
            assert_eq!(
                sent.header(header),
                recorded_header(want, header),
                "request {k}: header {header}"
            );
        }
        assert_eq!(sent.header("x-api-key"), Some("dummy"));
        assert_eq!(sent.header("authorization"), None);
    }
}
