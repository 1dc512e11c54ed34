//! Request encoding: for each request pi 0.73.1 made in a recorded session, encoding the
//! context pi had gives the body pi sent (compared as JSON values, and key order too), and
//! the headers pi's SDK sent that matter to the API.
//!
//! Inputs, as `../shared/conformance/pi/README.md` describes them: the model of `models.json`
//! (`mock-openai`/`mock-chat`: not a reasoning model; the provider's `compat` turns off the
//! developer role and `reasoning_effort`), the session's messages before the assistant
//! message that answered each request, pi's system prompt and tools as recorded in the body,
//! the session id, and thinking level `high`, through `stream_simple` as pi's agent calls it
//! (`maxTokens` 8192 from the model; no reasoning for a non-reasoning model).
//!
//! What the session exercises: the system prompt, user text parts, assistant replay as a
//! plain string with the thinking sent back in the field it came in
//! (`reasoning_content`), tool calls with JSON-text arguments, tool results (one of them an
//! error), `stream_options`, `store: false`, `max_completion_tokens`, and tools with
//! `strict: false`.
//!
//! Differences: none in the bodies. Headers the OpenAI SDK adds for its own telemetry
//! (`X-Stainless-*`, `User-Agent: OpenAI/JS`, `accept-language`, `sec-fetch-mode`,
//! `accept-encoding`) are not sent.
#![cfg(feature = "openai")]

mod support;

use pi_engine::providers::openai_completions::OpenAiCompletionsProvider;
use pi_engine::{ApiProvider, Context, StreamOptions, ThinkingLevel, Tool, llm::RetryPolicy};
use serde_json::Value;
use support::pi::{RecordedSession, models_json_model, recorded_header};
use support::{MockServer, Reply};

/// pi's tools, back from their Chat Completions encoding.
fn tools_of(body: &Value) -> Vec<Tool> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = &t["function"];
            Tool::new(
                f["name"].as_str().unwrap(),
                f["description"].as_str().unwrap(),
                f["parameters"].clone(),
            )
        })
        .collect()
}

/// Every object's keys, in order, depth first: the bodies must match in key order too.
fn key_order(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                key_order(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| key_order(v, out)),
        _ => {}
    }
}

const OK: &str = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

#[tokio::test]
async fn bodies_match_pi_for_every_request_of_the_session() {
    let session = RecordedSession::load("openai-completions");
    let contexts = session.contexts();
    let server = MockServer::start(vec![Reply::sse(&[OK]); contexts.len()]).await;
    let model = models_json_model("mock-openai", "mock-chat", &format!("{}/v1", server.url()));
    let options = StreamOptions::new()
        .with_api_key("dummy")
        .with_session_id(session.session_id.clone())
        .with_reasoning(ThinkingLevel::High)
        .with_retry(RetryPolicy::none());

    for (k, (want, messages)) in session.requests.iter().zip(contexts).enumerate() {
        let body = &want["body"];
        let mut context = Context::new()
            .with_system_prompt(body["messages"][0]["content"].as_str().unwrap())
            .with_tools(tools_of(body));
        context.messages = messages.to_vec();
        let reply = OpenAiCompletionsProvider::new()
            .stream_simple(&model, &context, &options)
            .result()
            .await;
        assert!(reply.error_message.is_none(), "request {k}: {reply:?}");
        assert_eq!(reply.text(), "ok");
        let sent = &server.requests()[k];
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.path, want["path"].as_str().unwrap());
        let ours = sent.json();
        assert_eq!(ours, *body, "request {k}: body differs from pi's");
        // The same members in the same order as pi wrote them.
        assert_eq!(
            ours.to_string(),
            body.to_string(),
            "request {k}: key order differs from pi's"
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        key_order(&ours, &mut a);
        key_order(body, &mut b);
        assert_eq!(a, b, "request {k}: key order differs from pi's");
        for header in ["accept", "content-type"] {
            assert_eq!(
                sent.header(header),
                recorded_header(want, header),
                "request {k}: header {header}"
            );
        }
        assert_eq!(sent.header("authorization"), Some("Bearer dummy"));
    }
}
