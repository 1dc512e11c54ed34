//! Absurd usage counts on every API: a negative, fractional, huge (1e30, 1e400, 2^64) or `u64::MAX`
//! count, or one of another type, never turns a complete reply into an error and never
//! overflows. Negative counts read as 0, fractions are cut, huge counts saturate at
//! `u64::MAX`, and totals saturate. Each case streams "Hello world" from a local server.
#![cfg(all(feature = "anthropic", feature = "openai", feature = "google"))]

#[path = "support/gemini.rs"]
mod gemini;
mod support;

use futures::StreamExt;
use pi_engine::providers::anthropic::AnthropicProvider;
use pi_engine::providers::google::GoogleProvider;
use pi_engine::providers::openai_completions::OpenAiCompletionsProvider;
use pi_engine::providers::openai_responses::OpenAIResponsesProvider;
use pi_engine::{
    ApiProvider, AssistantMessage, Context, Model, StopReason, StreamOptions, Usage, UserMessage,
    llm::{ModelCost, RetryPolicy},
};
use support::responses::responses_sse;
use support::{MockServer, Reply};

const MAX: &str = "18446744073709551615";

/// The values tried in every usage field, and what each reads as.
const VALUES: &[(&str, u64)] = &[
    ("-5", 0),
    ("-5.5", 0),
    ("1e30", u64::MAX),
    ("1e400", u64::MAX),
    (MAX, u64::MAX),
    ("18446744073709551616", u64::MAX),
    ("-9223372036854775809", 0),
    ("7.9", 7),
    ("\"12\"", 0),
    ("null", 0),
    ("12", 12),
];

fn options() -> StreamOptions {
    StreamOptions::new()
        .with_api_key("test-key")
        .with_retry(RetryPolicy::none())
}

fn cost() -> ModelCost {
    ModelCost::new(3.0, 15.0, 0.3, 3.75)
}

async fn run(
    provider: &dyn ApiProvider,
    model: impl Fn(&str) -> Model,
    sse: String,
) -> AssistantMessage {
    let server = MockServer::start(vec![Reply::sse(&[sse])]).await;
    let model = model(server.url());
    let context = Context::new().with_message(UserMessage::text("hi"));
    let mut stream = provider.stream(&model, &context, &options());
    let mut terminal = 0;
    while let Some(event) = stream.next().await {
        if matches!(event.kind(), "done" | "error") {
            terminal += 1;
        }
    }
    assert_eq!(terminal, 1);
    stream.result().await
}

fn assert_complete(message: &AssistantMessage, what: &str) {
    assert_eq!(message.stop_reason, StopReason::Stop, "{what}: {message:?}");
    assert_eq!(message.error_message, None, "{what}");
    assert_eq!(message.text(), "Hello world", "{what}");
    assert!(message.usage.cost.total.is_finite(), "{what}");
}

/// The usage every field set to `a`, `b`, `c` in turn (so each field sees each value).
fn triples() -> impl Iterator<Item = [(&'static str, u64); 3]> {
    (0..VALUES.len()).map(|i| {
        [
            VALUES[i],
            VALUES[(i + 3) % VALUES.len()],
            VALUES[(i + 7) % VALUES.len()],
        ]
    })
}

/// Frames Anthropic events as SSE, naming each by its `type` (read from the text: a count
/// like 1e400 is beyond what a JSON parser would take).
fn anthropic_sse(events: &[&str]) -> String {
    events
        .iter()
        .map(|data| {
            let kind = data
                .split_once(r#""type":""#)
                .and_then(|(_, rest)| rest.split_once('"'))
                .map_or("message", |(kind, _)| kind);
            format!("event: {kind}\ndata: {data}\n\n")
        })
        .collect()
}

fn saturating_sum(counts: &[u64]) -> u64 {
    counts.iter().fold(0u64, |a, b| a.saturating_add(*b))
}

fn check_total(usage: &Usage, what: &str) {
    assert_eq!(
        usage.total(),
        saturating_sum(&[
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write
        ]),
        "{what}"
    );
}

#[tokio::test]
async fn anthropic_messages_reads_absurd_usage_counts() {
    for [(a, va), (b, vb), (c, vc)] in triples() {
        let start = format!(
            r#"{{"type":"message_start","message":{{"id":"msg_1","usage":{{"input_tokens":{a},"output_tokens":{b},"cache_read_input_tokens":{c},"cache_creation_input_tokens":{b}}}}}}}"#
        );
        let delta = format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"end_turn"}},"usage":{{"output_tokens":{c},"cache_read_input_tokens":{a}}}}}"#
        );
        let sse = anthropic_sse(&[
            &start,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            &delta,
            r#"{"type":"message_stop"}"#,
        ]);
        let model = |url: &str| {
            Model::new("claude-test", "anthropic-messages", "anthropic", url).with_cost(cost())
        };
        let message = run(&AnthropicProvider::new(), model, sse).await;
        let what = format!("anthropic {a} {b} {c}");
        assert_complete(&message, &what);
        let u = &message.usage;
        // message_delta's counts replace message_start's; a count that is not a number
        // (null, a string) there keeps the earlier one.
        let delta_or = |raw: &str, v: u64, earlier: u64| {
            if raw == "null" || raw.starts_with('"') {
                earlier
            } else {
                v
            }
        };
        assert_eq!(u.input, va, "{what}");
        assert_eq!(u.output, delta_or(c, vc, vb), "{what}");
        assert_eq!(u.cache_read, delta_or(a, va, vc), "{what}");
        assert_eq!(u.cache_write, vb, "{what}");
        check_total(u, &what);
    }
}

#[tokio::test]
async fn openai_completions_reads_absurd_usage_counts() {
    for [(a, va), (b, vb), (c, vc)] in triples() {
        let text = |t: &str| {
            format!(
                r#"{{"id":"c1","model":"m","choices":[{{"index":0,"delta":{{"content":"{t}"}},"finish_reason":null}}]}}"#
            )
        };
        let usage = format!(
            r#"{{"id":"c1","model":"m","choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":{a},"completion_tokens":{b},"prompt_tokens_details":{{"cached_tokens":{c}}}}}}}"#
        );
        let sse = [text("Hello"), text(" world"), usage]
            .iter()
            .map(|p| format!("data: {p}\n\n"))
            .chain(["data: [DONE]\n\n".to_owned()])
            .collect::<String>();
        let model = |url: &str| {
            Model::new("m", "openai-completions", "replay", format!("{url}/v1")).with_cost(cost())
        };
        let message = run(&OpenAiCompletionsProvider::new(), model, sse).await;
        let what = format!("openai-completions {a} {b} {c}");
        assert_complete(&message, &what);
        let u = &message.usage;
        assert_eq!(u.cache_read, vc, "{what}");
        assert_eq!(u.input, va.saturating_sub(vc), "{what}");
        assert_eq!(u.output, vb, "{what}");
        check_total(u, &what);
    }
}

#[tokio::test]
async fn openai_responses_reads_absurd_usage_counts() {
    for [(a, va), (b, vb), (c, vc)] in triples() {
        let completed = format!(
            r#"{{"type":"response.completed","response":{{"id":"resp_1","status":"completed","usage":{{"input_tokens":{a},"input_tokens_details":{{"cached_tokens":{c}}},"output_tokens":{b},"total_tokens":{c}}}}}}}"#
        );
        let sse = responses_sse(&[
            r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}"#,
            r#"{"type":"response.content_part.added","item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}}"#,
            r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello"}"#,
            r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":" world"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello world"}]}}"#,
            &completed,
        ]);
        let model = |url: &str| {
            Model::new(
                "gpt-test",
                "openai-responses",
                "openai",
                format!("{url}/v1"),
            )
            .with_cost(cost())
        };
        let message = run(&OpenAIResponsesProvider::new(), model, sse).await;
        let what = format!("openai-responses {a} {b} {c}");
        assert_complete(&message, &what);
        let u = &message.usage;
        assert_eq!(u.cache_read, vc, "{what}");
        assert_eq!(u.input, va.saturating_sub(vc), "{what}");
        assert_eq!(u.output, vb, "{what}");
        assert_eq!(u.total_tokens, Some(vc), "{what}: OpenAI's own total");
    }
}

#[tokio::test]
async fn google_generative_ai_reads_absurd_usage_counts_and_keeps_the_last_text() {
    for [(a, va), (b, vb), (c, vc)] in triples() {
        let usage = format!(
            r#"{{"promptTokenCount":{a},"cachedContentTokenCount":{c},"candidatesTokenCount":{b},"thoughtsTokenCount":{c},"totalTokenCount":{b}}}"#
        );
        // The usage rides on a plain text chunk (the fast path keeps it raw) and on the
        // final chunk, whose text must not be lost.
        let chunks = [
            format!(
                r#"{{"candidates":[{{"content":{{"parts":[{{"text":"Hello"}}],"role":"model"}},"index":0}}],"usageMetadata":{usage},"modelVersion":"gemini-2.5-flash"}}"#
            ),
            format!(
                r#"{{"candidates":[{{"content":{{"parts":[{{"text":" world"}}],"role":"model"}},"finishReason":"STOP","index":0}}],"usageMetadata":{usage},"modelVersion":"gemini-2.5-flash"}}"#
            ),
        ];
        let model = |url: &str| {
            Model::new(
                "gemini-2.5-flash",
                "google-generative-ai",
                "google",
                format!("{url}/v1beta"),
            )
            .with_cost(cost())
        };
        let message = run(&GoogleProvider::new(), model, gemini::gemini_sse(&chunks)).await;
        let what = format!("google {a} {b} {c}");
        assert_complete(&message, &what);
        let u = &message.usage;
        assert_eq!(u.cache_read, vc, "{what}");
        assert_eq!(u.input, va.saturating_sub(vc), "{what}");
        assert_eq!(u.output, vb.saturating_add(vc), "{what}");
        assert_eq!(u.total_tokens, Some(vb), "{what}: Google's own total");

        // Usage only on a fast-path text chunk, none on the final one.
        let chunks = [
            chunks[0].clone(),
            r#"{"candidates":[{"content":{"parts":[{"text":" world"}],"role":"model"},"finishReason":"STOP","index":0}]}"#.to_owned(),
        ];
        let message = run(&GoogleProvider::new(), model, gemini::gemini_sse(&chunks)).await;
        assert_complete(&message, &what);
        assert_eq!(message.usage.cache_read, vc, "{what}");
    }
}

#[test]
fn usage_sums_saturate() {
    let u = Usage::new(u64::MAX, u64::MAX, 1, 1);
    assert_eq!(u.total_tokens, Some(u64::MAX));
    assert_eq!(u.total(), u64::MAX);
    let mut u = Usage::new(0, 0, 0, 0);
    u.input = u64::MAX;
    u.cache_write = 3;
    u.total_tokens = None;
    assert_eq!(u.total(), u64::MAX);
    u.recompute_total();
    assert_eq!(u.total_tokens, Some(u64::MAX));
}
