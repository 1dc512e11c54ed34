//! Where keys go: never to another origin by a redirect (every provider family's key
//! header), environment keys only to the provider they are named for, and keyless local
//! models without any credentials. Local servers on 127.0.0.1 only.
#![cfg(all(feature = "anthropic", feature = "openai", feature = "google"))]

mod support;

use pi_engine::models::ModelRegistry;
use pi_engine::{Context, ErrorKind, Model, StopReason, StreamOptions, UserMessage};
use support::{MockServer, Reply};

fn context() -> Context {
    Context::new().with_message(UserMessage::text("hi"))
}

const COMPLETION: &str = "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// A model of `api` on `url` for each family, the header its key travels in, and the options.
fn families(url: &str) -> Vec<(Model, &'static str, StreamOptions)> {
    let key = StreamOptions::new().with_api_key("sk-redirect-0123456789");
    vec![
        (
            Model::new("m", "anthropic-messages", "anthropic", url),
            "x-api-key",
            key.clone(),
        ),
        (
            Model::new("m", "openai-completions", "openai", format!("{url}/v1")),
            "authorization",
            key.clone(),
        ),
        (
            Model::new("m", "openai-responses", "openai", format!("{url}/v1")),
            "authorization",
            key.clone(),
        ),
        (
            Model::new("m", "google-generative-ai", "google", url),
            "x-goog-api-key",
            key.clone(),
        ),
        (
            Model::new(
                "m",
                "azure-openai-responses",
                "azure-openai-responses",
                format!("{url}/openai/v1"),
            ),
            "api-key",
            key,
        ),
    ]
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed_with_any_key_header() {
    for probe in 0..5 {
        // Different ports: different origins.
        let other = MockServer::start(vec![Reply::sse(&[COMPLETION])]).await;
        let to = format!("{}/elsewhere", other.url());
        let main = MockServer::start(vec![Reply::status(307, &[("location", &to)], "")]).await;
        let (model, header, options) = families(main.url()).swap_remove(probe);
        let reply = pi_engine::complete_simple(&model, &context(), &options).await;
        assert_eq!(reply.stop_reason, StopReason::Error, "{}", model.api);
        let error = reply.error().unwrap();
        assert_eq!(error.kind(), ErrorKind::Status, "{}", model.api);
        assert_eq!(error.status(), Some(307));
        assert!(
            error.message().contains("redirect to another origin"),
            "{error}"
        );
        assert!(!error.message().contains("0123456789"), "{error}");
        let sent = main.requests();
        assert_eq!(sent.len(), 1, "{}", model.api);
        assert!(
            sent[0]
                .header(header)
                .unwrap()
                .contains("sk-redirect-0123456789")
        );
        assert!(
            other.requests().is_empty(),
            "{}: {:?}",
            model.api,
            other.requests()
        );
    }
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let server = MockServer::start(vec![
        Reply::status(308, &[("location", "/v2/chat/completions")], ""),
        Reply::sse(&[COMPLETION]),
    ])
    .await;
    let model = Model::new(
        "m",
        "openai-completions",
        "openai",
        format!("{}/v1", server.url()),
    );
    let options = StreamOptions::new().with_api_key("sk-same-origin-0123456789");
    let reply = pi_engine::complete_simple(&model, &context(), &options).await;
    assert_eq!(
        reply.stop_reason,
        StopReason::Stop,
        "{:?}",
        reply.error_message
    );
    assert_eq!(reply.text(), "Hi");
    let sent = server.requests();
    assert_eq!(sent[1].path, "/v2/chat/completions");
    assert_eq!(
        sent[1].header("authorization"),
        Some("Bearer sk-same-origin-0123456789")
    );
}

#[tokio::test]
async fn a_keyless_local_model_sends_no_credentials() {
    let server = MockServer::start(vec![Reply::sse(&[COMPLETION])]).await;
    let registry = ModelRegistry::from_models_json(&format!(
        r#"{{"providers": {{"llama-cpp": {{"baseUrl": "{}/v1", "api": "openai-completions",
            "models": [{{"id": "qwen"}}]}}}}}}"#,
        server.url()
    ))
    .unwrap();
    let model = registry.find("llama-cpp", "qwen").unwrap().clone();
    assert!(model.keyless);
    assert!(registry.has_auth(&model));
    let options = registry
        .request_auth(&model)
        .await
        .unwrap()
        .apply(StreamOptions::new());
    let reply = pi_engine::complete_simple(&model, &context(), &options).await;
    assert_eq!(
        reply.stop_reason,
        StopReason::Stop,
        "{:?}",
        reply.error_message
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].header("authorization"), None);
}

#[test]
fn models_json_needs_an_api_key_for_a_remote_custom_provider() {
    let err = ModelRegistry::from_models_json(
        r#"{"providers": {"remote": {"baseUrl": "https://llm.example.com/v1",
            "api": "openai-completions", "models": [{"id": "m"}]}}}"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains(r#""apiKey" is required"#), "{err}");
}

// ---------------------------------------------------------------------------------------
// With keys in the environment: a child process of this binary.

const CHILD: &str = "PI_API_KEYS_CHILD";
const ENV_KEY: &str = "sk-env-openai-0123456789";

fn in_child_with_env(test: &str) {
    support::run_ignored_in_child(
        test,
        [
            (CHILD, "1"),
            ("OPENAI_API_KEY", ENV_KEY),
            ("ANTHROPIC_API_KEY", "sk-ant-env-0123456789"),
            ("GEMINI_API_KEY", "AIza-env-0123456789"),
        ],
    );
}

#[test]
fn environment_keys_go_only_to_their_own_provider() {
    in_child_with_env("env_keys_child");
}

#[tokio::test]
#[ignore = "run by environment_keys_go_only_to_their_own_provider, with keys in its environment"]
async fn env_keys_child() {
    // The child half of its parent test; run on its own (`--include-ignored`), it has no
    // parent environment and nothing to do.
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    for api in [
        "openai-completions",
        "openai-responses",
        "anthropic-messages",
        "google-generative-ai",
    ] {
        let server = MockServer::start(vec![]).await;
        let model = Model::new("m", api, "my-gateway", format!("{}/v1", server.url()));
        // stream_simple refuses, as pi's streamSimple does.
        let reply = pi_engine::complete_simple(&model, &context(), &StreamOptions::new()).await;
        assert_eq!(reply.stop_reason, StopReason::Error, "{api}");
        assert_eq!(
            reply.error_message.as_deref(),
            Some("No API key for provider: my-gateway"),
            "{api}"
        );
        assert!(reply.error().unwrap().is_auth());
        // The raw stream does not fall back to another provider's key either (pi's does:
        // deviation models/stream-env-key-fallback).
        let reply = pi_engine::complete(&model, &context(), &StreamOptions::new()).await;
        assert_eq!(reply.stop_reason, StopReason::Error, "{api}");
        assert!(reply.error().unwrap().is_auth(), "{api}");
        assert!(
            server.requests().is_empty(),
            "{api}: {:?}",
            server.requests()
        );
    }
    // An Agent without a stream function goes through stream_simple: refused the same way.
    let server = MockServer::start(vec![]).await;
    let model = Model::new(
        "m",
        "openai-completions",
        "my-gateway",
        format!("{}/v1", server.url()),
    );
    let agent = pi_engine::agent::Agent::new(model);
    assert!(
        agent.prompt("hi").await.unwrap().is_failed(),
        "the call is refused"
    );
    let last = agent.state().messages.last().cloned().unwrap();
    let reply = last.as_assistant().expect("the failed reply");
    assert_eq!(
        reply.error_message.as_deref(),
        Some("No API key for provider: my-gateway")
    );
    assert!(server.requests().is_empty());
    // The provider the variable is named for still gets it.
    let server = MockServer::start(vec![Reply::sse(&[COMPLETION])]).await;
    let model = Model::new(
        "m",
        "openai-completions",
        "openai",
        format!("{}/v1", server.url()),
    );
    let reply = pi_engine::complete_simple(&model, &context(), &StreamOptions::new()).await;
    assert_eq!(
        reply.stop_reason,
        StopReason::Stop,
        "{:?}",
        reply.error_message
    );
    let expected = format!("Bearer {ENV_KEY}");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(expected.as_str())
    );
    // A keyless model sends nothing even with keys in the environment.
    let server = MockServer::start(vec![Reply::sse(&[COMPLETION])]).await;
    let model = Model::new(
        "m",
        "openai-completions",
        "my-local",
        format!("{}/v1", server.url()),
    )
    .with_keyless(true);
    let reply = pi_engine::complete_simple(&model, &context(), &StreamOptions::new()).await;
    assert_eq!(
        reply.stop_reason,
        StopReason::Stop,
        "{:?}",
        reply.error_message
    );
    assert_eq!(server.requests()[0].header("authorization"), None);
}
