//! Typed per-api options: a misspelt key is reported with `tracing`, the typed options and
//! pi's JSON keys are one and the same, and a custom provider carries options of its own
//! through `stream_simple`.

use std::sync::Arc;

#[path = "support/capture.rs"]
mod capture;
use capture::Capture;

use pi_engine::llm::{
    AnthropicOptions, ApiOptions, AssistantMessageEventStream, GoogleThinking, GoogleVertexOptions,
    OpenAiCompletionsOptions, PartialMessage, to_provider_options,
};
use pi_engine::{
    ApiProvider, ApiRegistry, AssistantContent, AssistantMessage, AssistantMessageEvent, Context,
    Model, StopReason, StreamOptions, ThinkingLevel, UserMessage, get_model,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What `f` logs.
fn logged(f: impl FnOnce()) -> Vec<String> {
    let (capture, logged) = Capture::new();
    tracing::subscriber::with_default(capture, f);
    logged.lock().unwrap().clone()
}

#[test]
fn a_misspelt_option_is_reported_with_the_api_and_the_key() {
    let options = StreamOptions::new()
        .with_extra("thinkingEnabld", true.into())
        .with_extra("effort", "high".into())
        // pi's base options every api accepts: not reported.
        .with_extra("maxRetries", 2.into())
        .with_extra("timeoutMs", 1000.into());
    let mut read = None;
    let lines = logged(|| read = Some(options.api_options::<AnthropicOptions>()));
    let read = read.unwrap().unwrap();
    assert_eq!(read.effort.as_deref(), Some("high"));
    assert_eq!(read.thinking_enabled, None, "the misspelt key is not read");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert!(line.starts_with("WARN pi_engine::options "), "{line}");
    assert!(line.contains("api=\"anthropic-messages\""), "{line}");
    assert!(line.contains("key=\"thinkingEnabld\""), "{line}");
}

#[test]
fn an_option_of_another_api_is_reported_too() {
    // `thinkingEnabled` is Anthropic's: an OpenAI-compatible server never sees it.
    let options = StreamOptions::new()
        .with_api_options(&AnthropicOptions::new().with_thinking_enabled(true))
        .with_api_options(&OpenAiCompletionsOptions::new().with_reasoning_effort("low"));
    let mut read = None;
    let lines = logged(|| read = Some(options.api_options::<OpenAiCompletionsOptions>()));
    assert_eq!(
        read.unwrap().unwrap().reasoning_effort.as_deref(),
        Some("low")
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("key=\"thinkingEnabled\""), "{lines:?}");
}

#[test]
fn the_simple_mapping_writes_what_the_typed_options_read() {
    let sonnet = get_model("anthropic", "claude-sonnet-4-5").unwrap();
    let mapped = to_provider_options(
        &sonnet,
        &StreamOptions::new().with_reasoning(ThinkingLevel::Medium),
    );
    let read: AnthropicOptions = mapped.api_options().unwrap();
    assert_eq!(read.thinking_enabled, Some(true));
    assert_eq!(read.thinking_budget_tokens, Some(8192));

    let vertex = get_model("google-vertex", "gemini-2.5-pro").unwrap();
    let mapped = to_provider_options(
        &vertex,
        &StreamOptions::new()
            .with_reasoning(ThinkingLevel::Low)
            .with_extra("project", "p".into()),
    );
    // pi's mapping keeps only `thinking` (the Vertex provider copies its own keys back).
    let read: GoogleVertexOptions = mapped.api_options().unwrap();
    assert_eq!(
        read.thinking,
        Some(GoogleThinking::enabled().with_budget_tokens(2048))
    );
    assert_eq!(read.project, None);
}

#[test]
fn typed_options_are_pis_json() {
    // pi's stream-options JSON, as an RPC client or a session would send it.
    let options: StreamOptions = serde_json::from_value(json!({
        "maxTokens": 100,
        "thinkingEnabled": true,
        "thinkingBudgetTokens": 2048,
        "interleavedThinking": false
    }))
    .unwrap();
    let read: AnthropicOptions = options.api_options().unwrap();
    assert_eq!(
        read,
        AnthropicOptions::new()
            .with_thinking_enabled(true)
            .with_thinking_budget_tokens(2048)
            .with_interleaved_thinking(false)
    );
    let written = StreamOptions::new().with_api_options(&read);
    assert_eq!(written.extra, options.extra);
}

/// A custom provider's own options.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EchoOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
}

impl ApiOptions for EchoOptions {
    const API: &'static str = "echo";
    const KEYS: &'static [&'static str] = &["prefix"];
}

/// Replies with its `prefix` option and the reasoning level it was given.
struct Echo;

impl ApiProvider for Echo {
    fn api(&self) -> &str {
        "echo"
    }

    fn stream(
        &self,
        model: &Model,
        _: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let empty = AssistantMessage::new(&model.api, &model.provider, &model.id);
        let (sender, stream) = AssistantMessageEventStream::channel(PartialMessage::new(empty));
        match options.api_options::<EchoOptions>() {
            Ok(echo) => {
                let text = format!(
                    "{} {:?}",
                    echo.prefix.unwrap_or_default(),
                    options.reasoning
                );
                sender.push(AssistantMessageEvent::Start);
                sender.push(AssistantMessageEvent::TextStart { content_index: 0 });
                sender.push(AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: text,
                });
                sender.done(StopReason::Stop);
            }
            Err(error) => {
                sender.error(error);
            }
        }
        stream
    }
}

#[tokio::test]
async fn a_custom_provider_reads_its_typed_options_through_stream_simple() {
    let registry = ApiRegistry::new();
    registry.register(Arc::new(Echo));
    let model = Model::new("echo-1", "echo", "local", "");
    let context = Context::new().with_message(UserMessage::text("hi"));
    let options = StreamOptions::new()
        .with_reasoning(ThinkingLevel::High)
        .with_api_options(&EchoOptions {
            prefix: Some("echo:".into()),
        });
    let reply: AssistantMessage = registry
        .stream_simple(&model, &context, &options)
        .result()
        .await;
    assert_eq!(reply.text(), "echo: Some(High)");
    assert!(matches!(
        reply.content.first(),
        Some(AssistantContent::Text(_))
    ));

    // A value of the wrong type ends the stream with a typed error naming the option.
    let bad = StreamOptions::new().with_extra("prefix", 3.into());
    let reply = registry
        .stream_simple(&model, &context, &bad)
        .result()
        .await;
    assert_eq!(reply.stop_reason, StopReason::Error);
    let message = reply.error_message.unwrap_or_default();
    assert!(message.contains("Invalid echo option prefix"), "{message}");
}

#[test]
fn a_misspelt_compat_key_is_reported_and_kept() {
    use pi_engine::llm::compat::{MaxTokensField, OpenAiCompletionsCompatSettings};
    let model = Model::new(
        "m",
        "openai-completions",
        "local",
        "http://127.0.0.1:8080/v1",
    )
    .with_compat(json!({"supportsStor": false, "maxTokensField": "max_tokens"}));
    let mut read = None;
    let lines = logged(|| read = Some(OpenAiCompletionsCompatSettings::of(&model)));
    let read = read.unwrap();
    assert_eq!(read.max_tokens_field, Some(MaxTokensField::MaxTokens));
    assert_eq!(read.supports_store, None);
    assert_eq!(read.other["supportsStor"], false, "kept as written");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("WARN pi_engine::compat "), "{lines:?}");
    assert!(lines[0].contains("key=\"supportsStor\""), "{lines:?}");

    // Typed settings write pi's JSON.
    let typed = Model::new(
        "m",
        "openai-completions",
        "local",
        "http://127.0.0.1:8080/v1",
    )
    .with_compat(OpenAiCompletionsCompatSettings::new().with_supports_store(false));
    assert_eq!(typed.compat, Some(json!({"supportsStore": false})));
}
