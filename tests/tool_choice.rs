//! Tool choice is a typed option (`ToolChoice`) that every api maps to its own shape, or
//! refuses clearly (the Codex backend), through `stream` and `stream_simple` alike. The
//! requests are caught by an in-process transport; nothing is sent anywhere.
#![cfg(all(feature = "anthropic", feature = "openai", feature = "google"))]

use std::sync::{Arc, Mutex};

use base64::Engine as _;

use pi_engine::llm::ToolChoice;
use pi_engine::providers::http::{HttpTransport, TransportRequest, TransportResponse};
use pi_engine::{
    Context, Error, ErrorKind, Model, StreamOptions, ThinkingLevel, Tool, UserMessage,
};
use serde_json::{Value, json};

/// Keeps the body of every request and answers none (a configuration error, never retried).
#[derive(Debug, Default, Clone)]
struct Recorder(Arc<Mutex<Vec<Value>>>);

#[async_trait::async_trait]
impl HttpTransport for Recorder {
    async fn send(&self, request: TransportRequest) -> Result<TransportResponse, Error> {
        let body = serde_json::from_slice(&request.body).unwrap();
        self.0.lock().unwrap().push(body);
        Err(Error::new(ErrorKind::Config, "recorded"))
    }
}

fn context() -> Context {
    Context::new()
        .with_message(UserMessage::text("read it"))
        .with_tools(vec![Tool::new(
            "read",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )])
}

fn models() -> Vec<Model> {
    vec![
        Model::new(
            "claude-x",
            "anthropic-messages",
            "anthropic",
            "http://127.0.0.1:9",
        ),
        Model::new(
            "gpt-x",
            "openai-completions",
            "openai",
            "http://127.0.0.1:9/v1",
        ),
        Model::new(
            "gpt-x",
            "openai-responses",
            "openai",
            "http://127.0.0.1:9/v1",
        ),
        Model::new(
            "gpt-x",
            "azure-openai-responses",
            "azure-openai-responses",
            "http://127.0.0.1:9/openai/v1",
        ),
        Model::new(
            "gemini-x",
            "google-generative-ai",
            "google",
            "http://127.0.0.1:9",
        ),
    ]
}

/// The body the request for `model` carried with `options`, through `stream` or, with
/// `simple`, `stream_simple`.
async fn body(model: &Model, options: StreamOptions, simple: bool) -> Value {
    let recorder = Recorder::default();
    let options = options
        .with_api_key("k-test")
        .with_transport(recorder.clone());
    let reply = if simple {
        pi_engine::complete_simple(model, &context(), &options).await
    } else {
        pi_engine::complete(model, &context(), &options).await
    };
    assert_eq!(
        reply.error().unwrap().message(),
        "recorded",
        "{}",
        model.api
    );
    recorder.0.lock().unwrap().pop().unwrap()
}

/// Where each api puts the choice.
fn sent(api: &str, body: &Value) -> Value {
    match api {
        "google-generative-ai" => body["toolConfig"]["functionCallingConfig"].clone(),
        _ => body["tool_choice"].clone(),
    }
}

#[tokio::test]
async fn every_api_maps_each_choice_to_its_own_shape() {
    let expected = |api: &str, choice: &ToolChoice| -> Value {
        match (api, choice) {
            ("anthropic-messages", ToolChoice::Auto) => json!({"type": "auto"}),
            ("anthropic-messages", ToolChoice::None) => json!({"type": "none"}),
            ("anthropic-messages", ToolChoice::Required) => json!({"type": "any"}),
            ("anthropic-messages", _) => json!({"type": "tool", "name": "read"}),
            ("openai-completions", ToolChoice::Tool(_)) => {
                json!({"type": "function", "function": {"name": "read"}})
            }
            ("google-generative-ai", ToolChoice::Auto) => json!({"mode": "AUTO"}),
            ("google-generative-ai", ToolChoice::None) => json!({"mode": "NONE"}),
            ("google-generative-ai", ToolChoice::Required) => json!({"mode": "ANY"}),
            ("google-generative-ai", _) => {
                json!({"mode": "ANY", "allowedFunctionNames": ["read"]})
            }
            (_, ToolChoice::Auto) => json!("auto"),
            (_, ToolChoice::None) => json!("none"),
            (_, ToolChoice::Required) => json!("required"),
            (_, _) => json!({"type": "function", "name": "read"}),
        }
    };
    for model in models() {
        for choice in [
            ToolChoice::Auto,
            ToolChoice::None,
            ToolChoice::Required,
            ToolChoice::tool("read"),
        ] {
            let options = StreamOptions::new().with_tool_choice(choice.clone());
            let body = body(&model, options, false).await;
            assert_eq!(
                sent(&model.api, &body),
                expected(&model.api, &choice),
                "{} {choice:?}",
                model.api
            );
        }
        // No choice: nothing is sent (the api's default).
        let body = body(&model, StreamOptions::new(), false).await;
        assert_eq!(sent(&model.api, &body), Value::Null, "{}", model.api);
    }
}

#[tokio::test]
async fn stream_simple_keeps_the_choice() {
    // A listed deviation: pi's streamSimple drops `toolChoice`.
    for model in models() {
        let model = model.with_reasoning(true);
        let options = StreamOptions::new()
            .with_reasoning(ThinkingLevel::Low)
            .with_tool_choice(ToolChoice::Required);
        let body = body(&model, options, true).await;
        assert_ne!(sent(&model.api, &body), Value::Null, "{}", model.api);
    }
}

#[tokio::test]
async fn pi_spellings_read_from_json_and_from_the_provider_options() {
    // pi's JSON options, each api's spelling: the same choice whichever is used.
    let anthropic = &models()[0];
    let openai = &models()[1];
    for (raw, anthropic_shape, openai_shape) in [
        (json!("any"), json!({"type": "any"}), json!("required")),
        (json!("required"), json!({"type": "any"}), json!("required")),
        (
            json!({"type": "tool", "name": "read"}),
            json!({"type": "tool", "name": "read"}),
            json!({"type": "function", "function": {"name": "read"}}),
        ),
        (
            json!({"type": "function", "function": {"name": "read"}}),
            json!({"type": "tool", "name": "read"}),
            json!({"type": "function", "function": {"name": "read"}}),
        ),
        // What the crate does not know is sent as pi sends it.
        (
            json!("validated"),
            json!({"type": "validated"}),
            json!("validated"),
        ),
    ] {
        let options: StreamOptions =
            serde_json::from_value(json!({ "toolChoice": raw.clone() })).unwrap();
        assert!(options.tool_choice.is_some(), "{raw}");
        assert_eq!(
            sent(
                &anthropic.api,
                &body(anthropic, options.clone(), false).await
            ),
            anthropic_shape
        );
        assert_eq!(
            sent(&openai.api, &body(openai, options, false).await),
            openai_shape
        );
        // The same value among the provider options (pi's name) works too.
        let extra = StreamOptions::new().with_extra("toolChoice", raw.clone());
        assert_eq!(
            sent(&openai.api, &body(openai, extra, false).await),
            openai_shape
        );
    }
    // pi skips a falsy choice.
    for falsy in [json!(null), json!(false), json!("")] {
        let options: StreamOptions =
            serde_json::from_value(json!({ "toolChoice": falsy })).unwrap();
        assert_eq!(options.tool_choice, None);
    }
}

#[tokio::test]
async fn the_codex_backend_refuses_a_forced_choice_instead_of_dropping_it() {
    let model = Model::new(
        "gpt-5.1-codex",
        "openai-codex-responses",
        "openai-codex",
        "http://127.0.0.1:9",
    );
    // A Codex token is a JWT naming the account; any well-formed one will do here.
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(r#"{"https://api.openai.com/auth":{"chatgpt_account_id":"acct"}}"#);
    let token = format!("e30.{claims}.sig");
    let recorder = Recorder::default();
    let options = StreamOptions::new()
        .with_api_key(token)
        .with_transport(recorder.clone())
        .with_tool_choice(ToolChoice::tool("read"));
    let reply = pi_engine::complete(&model, &context(), &options).await;
    let error = reply.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(error.message().contains("toolChoice auto only"), "{error}");
    assert!(recorder.0.lock().unwrap().is_empty(), "nothing was sent");

    let auto = options.with_tool_choice(ToolChoice::Auto);
    let reply = pi_engine::complete(&model, &context(), &auto).await;
    assert_eq!(reply.error().unwrap().message(), "recorded");
    assert_eq!(recorder.0.lock().unwrap()[0]["tool_choice"], "auto");
}
