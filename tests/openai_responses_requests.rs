//! Request encoding for `openai-responses`: for each request pi 0.73.1 made in a recorded
//! session, encoding the context pi had gives the body pi sent, and the headers pi's SDK sent
//! that matter to the API.
//!
//! Inputs, as `../shared/conformance/pi/README.md` describes them: the model of `models.json`
//! (`mock-responses`/`mock-resp`), the session's messages before the assistant message that
//! answered each request, pi's system prompt (the `developer` item) and tools as recorded in
//! the body, the session id, and thinking level `high` through `stream_simple`, as pi's
//! agent calls it (`reasoningEffort: high`, `max_output_tokens` 8192).
//!
//! Differences: none in the bodies (the replayed reasoning items, `msg_` ids, `fc_` item ids
//! and tool outputs are pi's). Headers pi's SDK adds for its own telemetry
//! (`X-Stainless-*`, `User-Agent: OpenAI/JS`, `accept-language`, `sec-fetch-mode`,
//! `accept-encoding`) are not sent.
#![cfg(feature = "openai")]

mod support;

use pi_engine::providers::openai_responses::OpenAIResponsesProvider;
use pi_engine::{ApiProvider, Context, StreamOptions, ThinkingLevel, Tool, llm::RetryPolicy};
use serde_json::Value;
use support::pi::{RecordedSession, models_json_model};
use support::responses::responses_text_reply;
use support::{MockServer, Reply};

/// pi's tools, back from their Responses encoding.
fn tools_of(body: &Value) -> Vec<Tool> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["type"], "function");
            assert_eq!(t["strict"], false);
            Tool::new(
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap(),
                t["parameters"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn bodies_match_pi_for_every_request_of_the_session() {
    let session = RecordedSession::load("openai-responses");
    let recorded = &session.requests;
    let contexts = session.contexts();

    let ok = responses_text_reply(&["ok"], 1, 0, 1);
    let server = MockServer::start(vec![Reply::sse(&[&ok]); recorded.len()]).await;
    let model = models_json_model(
        "mock-responses",
        "mock-resp",
        &format!("{}/v1", server.url()),
    );
    let options = StreamOptions::new()
        .with_api_key("dummy")
        .with_session_id(session.session_id.clone())
        .with_reasoning(ThinkingLevel::High)
        .with_retry(RetryPolicy::none());

    for (k, (want, messages)) in recorded.iter().zip(&contexts).enumerate() {
        let body = &want["body"];
        let system = &body["input"][0];
        assert_eq!(system["role"], "developer");
        let mut context = Context::new()
            .with_system_prompt(system["content"].as_str().unwrap())
            .with_tools(tools_of(body));
        context.messages = messages.to_vec();
        let reply = OpenAIResponsesProvider::new()
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
        // Same keys in the same order as pi's SDK wrote them.
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&sent.json()), keys(body), "request {k}: key order");
        for (header, want_value) in [
            ("accept", want["headers"]["Accept"].as_str()),
            ("content-type", want["headers"]["content-type"].as_str()),
            ("session_id", want["headers"]["session_id"].as_str()),
            (
                "x-client-request-id",
                want["headers"]["x-client-request-id"].as_str(),
            ),
        ] {
            assert!(want_value.is_some(), "pi sent {header}");
            assert_eq!(
                sent.header(header),
                want_value,
                "request {k}: header {header}"
            );
        }
        assert_eq!(sent.header("authorization"), Some("Bearer dummy"));
        assert_eq!(reply.text(), "ok");
    }
}
