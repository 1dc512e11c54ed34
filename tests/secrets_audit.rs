//! The secrets audit: a distinctive key, given every way the crate takes one (the environment,
//! `with_api_key`, an `auth.json` credential source, `models.json` `apiKey`, `authHeader` and
//! headers), must not appear in any `Debug` or `Display`, error, event (as JSON), log line at
//! TRACE (ours and reqwest's), session file, or request to another origin, whichever way the
//! request fails: a 401 or a stream error echoing the key, a 429, a 500 page with the key, a
//! cut stream, garbage instead of events, a redirect, a refused connection. All four wire
//! formats, against the misbehaving local server of `tests/support`.
//!
//! Also here: redirects carrying a key are followed only within the origin (every provider
//! family's key header), and environment keys go only to the provider they are named for
//! (`stream_simple` refuses a custom provider without a key; keyless local models send none).
#![cfg(all(feature = "anthropic", feature = "openai", feature = "google"))]

mod support;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use pi_engine::llm::{
    ApiKey, AssistantMessage, Context, Model, RetryPolicy, StopReason, StreamOptions, UserMessage,
};
use pi_engine::models::{CredentialSource, ModelRegistry};
use pi_engine::session::SessionOptions;
use support::{MockServer, Reply, Step};

// ---------------------------------------------------------------------------------------
// Capturing every log line at TRACE: tracing (the crate) and log (reqwest).

fn logs() -> &'static Mutex<String> {
    static LOGS: OnceLock<Mutex<String>> = OnceLock::new();
    LOGS.get_or_init(|| Mutex::new(String::new()))
}

struct Capture;

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut line = format!("span {}", span.metadata().name());
        span.record(&mut Fields(&mut line));
        logs().lock().unwrap().push_str(&(line + "\n"));
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut line = String::from("record");
        values.record(&mut Fields(&mut line));
        logs().lock().unwrap().push_str(&(line + "\n"));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = format!("{} {}", event.metadata().level(), event.metadata().target());
        event.record(&mut Fields(&mut line));
        logs().lock().unwrap().push_str(&(line + "\n"));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

struct LogCapture;

impl log::Log for LogCapture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        let line = format!("{} {} {}\n", record.level(), record.target(), record.args());
        logs().lock().unwrap().push_str(&line);
    }
    fn flush(&self) {}
}

fn capture_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tracing::subscriber::set_global_default(Capture).expect("one subscriber");
        log::set_logger(&LogCapture).expect("one logger");
        log::set_max_level(log::LevelFilter::Trace);
    });
}

// ---------------------------------------------------------------------------------------
// The keys.

/// The random part of every key of this process: what must never show.
fn secret() -> &'static str {
    static SECRET: OnceLock<String> = OnceLock::new();
    SECRET.get_or_init(|| {
        std::env::var(CHILD_SECRET).unwrap_or_else(|_| uuid::Uuid::new_v4().simple().to_string())
    })
}

const CHILD_SECRET: &str = "PI_AUDIT_SECRET";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Format {
    Anthropic,
    Completions,
    Responses,
    Google,
}

const FORMATS: [Format; 4] = [
    Format::Anthropic,
    Format::Completions,
    Format::Responses,
    Format::Google,
];

impl Format {
    fn api(self) -> &'static str {
        match self {
            Format::Anthropic => "anthropic-messages",
            Format::Completions => "openai-completions",
            Format::Responses => "openai-responses",
            Format::Google => "google-generative-ai",
        }
    }

    /// A key of the format's own kind, and one of no known format.
    fn keys(self) -> [String; 2] {
        let s = secret();
        let own = match self {
            Format::Anthropic => format!("sk-ant-AUDIT-{s}"),
            Format::Completions => format!("sk-proj-AUDIT{s}"),
            Format::Responses => format!("sk-AUDIT{s}"),
            Format::Google => format!("AIzaAUDIT{s}"),
        };
        [own, format!("plain-AUDIT-{s}")]
    }

    /// The built-in provider whose environment variable names the key.
    fn env_provider(self) -> (&'static str, &'static str) {
        match self {
            Format::Anthropic => ("anthropic", "ANTHROPIC_API_KEY"),
            Format::Completions | Format::Responses => ("openai", "OPENAI_API_KEY"),
            Format::Google => ("google", "GEMINI_API_KEY"),
        }
    }

    /// The first event of a good stream.
    fn first_event(self) -> String {
        match self {
            Format::Anthropic => support::anthropic_sse(&[
                r#"{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":1,"output_tokens":1}}}"#,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            ]),
            Format::Completions => "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n".into(),
            Format::Responses => "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}\n\n".into(),
            Format::Google => "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hi\"}]}}]}\n\n".into(),
        }
    }

    /// An error event inside a successful stream, echoing `key`.
    fn error_event(self, key: &str) -> String {
        match self {
            Format::Anthropic => format!(
                "event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key {key}\"}}}}\n\n"
            ),
            Format::Completions => format!(
                "data: {{\"error\":{{\"message\":\"Incorrect API key provided: {key}\",\"type\":\"invalid_request_error\"}}}}\n\n"
            ),
            Format::Responses => format!(
                "event: error\ndata: {{\"type\":\"error\",\"code\":\"invalid_api_key\",\"message\":\"Incorrect API key provided: {key}\",\"error\":{{\"message\":\"Incorrect API key provided: {key}\"}}}}\n\n"
            ),
            Format::Google => format!(
                "data: {{\"error\":{{\"code\":400,\"message\":\"API key not valid: {key}\",\"status\":\"INVALID_ARGUMENT\"}}}}\n\n"
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The ways a request fails.

#[derive(Debug, Clone, Copy)]
enum Failure {
    /// 401 whose JSON body echoes the key.
    Unauthorized,
    /// 429 (retried) whose body echoes the key.
    RateLimited,
    /// 500 HTML page with the key in its title.
    ServerError,
    /// A stream error event echoing the key.
    StreamError,
    /// A stream cut after its first event.
    Cut,
    /// Garbage with the key instead of events.
    InvalidJson,
    /// Garbage whose quoted excerpt ends in the middle of the key.
    InvalidJsonClipped,
    /// A redirect to another origin.
    Redirect,
    /// Nothing listens.
    Refused,
}

const FAILURES: [Failure; 9] = [
    Failure::Unauthorized,
    Failure::RateLimited,
    Failure::ServerError,
    Failure::StreamError,
    Failure::Cut,
    Failure::InvalidJson,
    Failure::InvalidJsonClipped,
    Failure::Redirect,
    Failure::Refused,
];

/// Servers for one run: the one the model names, and a second origin for redirects.
struct Servers {
    main: Option<MockServer>,
    other: MockServer,
    url: String,
}

async fn servers(format: Format, failure: Failure, key: &str) -> Servers {
    let other = MockServer::start(vec![Reply::sse(&[format.first_event()])]).await;
    let body = format!(
        r#"{{"error":{{"type":"authentication_error","message":"Incorrect API key provided: {key}. Header was Bearer {key}"}}}}"#
    );
    let replies = match failure {
        Failure::Unauthorized => vec![Reply::status(401, &[], &body)],
        Failure::RateLimited => vec![
            Reply::status(429, &[("retry-after-ms", "1")], &body),
            Reply::status(429, &[("retry-after-ms", "1")], &body),
            Reply::status(429, &[("retry-after-ms", "1")], &body),
        ],
        Failure::ServerError => {
            let page = format!(
                "<html><head><title>Error for {key}</title></head><body>{key}</body></html>"
            );
            let reply = Reply::status(500, &[("content-type", "text/html")], &page);
            vec![reply.clone(), reply.clone(), reply]
        }
        Failure::StreamError => vec![Reply::sse(&[format.first_event(), format.error_event(key)])],
        Failure::Cut => vec![Reply::sse_open(&[format.first_event()]).then(Step::Close)],
        Failure::InvalidJson => vec![Reply::sse(&[format!("data: {{{key} is not JSON\n\n")])],
        Failure::InvalidJsonClipped => {
            // Error texts quote the start of a bad event (300 characters).
            let pad = "a".repeat(300 - 1 - 30);
            vec![Reply::sse(&[format!("data: {{{pad}{key} is not JSON\n\n")])]
        }
        Failure::Redirect => {
            let to = format!("{}/stolen?key={key}", other.url());
            vec![Reply::status(307, &[("location", &to)], "")]
        }
        Failure::Refused => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            drop(listener);
            return Servers {
                main: None,
                other,
                url,
            };
        }
    };
    let main = MockServer::start(replies).await;
    let url = main.url().to_owned();
    Servers {
        main: Some(main),
        other,
        url,
    }
}

/// The base URL of a model of `format` on `url`.
fn base_url(format: Format, url: &str) -> String {
    match format {
        Format::Anthropic | Format::Google => url.to_owned(),
        Format::Completions | Format::Responses => format!("{url}/v1"),
    }
}

// ---------------------------------------------------------------------------------------
// The ways a key is given.

#[derive(Debug, Clone, Copy)]
enum Source {
    WithApiKey,
    AuthJson,
    ModelsJsonApiKey,
    ModelsJsonAuthHeader,
    ModelsJsonHeaders,
    Env,
}

/// pi's `auth.json` (`{"<provider>": {"type": "api_key", "key": "…"}}`) as a credential
/// source. Its `Debug` shows the path only.
#[derive(Debug)]
struct AuthJson(PathBuf);

#[async_trait::async_trait]
impl CredentialSource for AuthJson {
    fn has_auth(&self, provider: &str) -> bool {
        self.read(provider).is_some()
    }
    async fn api_key(&self, provider: &str) -> Option<ApiKey> {
        self.read(provider).map(ApiKey::new)
    }
}

impl AuthJson {
    fn read(&self, provider: &str) -> Option<String> {
        let text = std::fs::read_to_string(&self.0).ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        value[provider]["key"].as_str().map(str::to_owned)
    }
}

/// The model and options of one call, and everything printable about how they were made.
async fn configure(
    source: Source,
    format: Format,
    key: &str,
    url: &str,
    dir: &std::path::Path,
    printed: &mut String,
) -> (Model, StreamOptions) {
    let base = base_url(format, url);
    let options = StreamOptions::new().with_retry(
        RetryPolicy::default()
            .with_base_delay(Duration::from_millis(1))
            .with_max_delay(Duration::from_millis(50)),
    );
    let custom = |extra: &str| {
        format!(
            r#"{{"providers": {{"audit-p": {{"baseUrl": "{base}", "api": "{}", {extra} "models": [{{"id": "audit-model"}}]}}}}}}"#,
            format.api()
        )
    };
    let registry = match source {
        Source::WithApiKey => {
            let model = Model::new("audit-model", format.api(), "audit-p", base);
            let options = options.with_api_key(key);
            let _ = write!(printed, "{model:?} {options:?}");
            return (model, options);
        }
        Source::Env => {
            let (provider, _) = format.env_provider();
            let model = Model::new("audit-model", format.api(), provider, base);
            let _ = write!(printed, "{model:?} {options:?}");
            return (model, options);
        }
        Source::AuthJson => {
            let path = dir.join("auth.json");
            let auth = serde_json::json!({"audit-p": {"type": "api_key", "key": key}});
            std::fs::write(&path, auth.to_string()).unwrap();
            ModelRegistry::from_models_json(&custom(r#""apiKey": "UNUSED_AUDIT_VAR","#))
                .unwrap()
                .with_credentials(Arc::new(AuthJson(path)))
        }
        Source::ModelsJsonApiKey => {
            ModelRegistry::from_models_json(&custom(&format!(r#""apiKey": "{key}","#))).unwrap()
        }
        Source::ModelsJsonAuthHeader => ModelRegistry::from_models_json(&custom(&format!(
            r#""apiKey": "{key}", "authHeader": true,"#
        )))
        .unwrap(),
        Source::ModelsJsonHeaders => ModelRegistry::from_models_json(&custom(&format!(
            r#""apiKey": "{key}", "headers": {{"X-Custom-Auth": "{key}", "x-trace": "audit"}},"#
        )))
        .unwrap(),
    };
    let model = registry.find("audit-p", "audit-model").unwrap().clone();
    let auth = registry.request_auth(&model).await.unwrap();
    let _ = write!(printed, "{registry:?} {auth:?}");
    let options = auth.apply(options);
    let _ = write!(printed, "{model:?} {options:?}");
    (model, options)
}

/// Runs one failing call; returns everything it printed or stored.
async fn run(source: Source, format: Format, failure: Failure, key: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let servers = servers(format, failure, key).await;
    let mut printed = String::new();
    let (model, options) =
        configure(source, format, key, &servers.url, dir.path(), &mut printed).await;
    let context = Context::new().with_message(UserMessage::text("hi"));
    let mut stream = pi_engine::stream_simple(&model, &context, &options);
    let run = async {
        while let Some(event) = stream.next().await {
            let _ = write!(
                printed,
                "{event:?} {}",
                serde_json::to_string(&event).unwrap()
            );
        }
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap_or_else(|_| panic!("{source:?} {format:?} {failure:?}: no end"));
    let message: AssistantMessage = stream.result().await;
    assert!(
        matches!(message.stop_reason, StopReason::Error),
        "{source:?} {format:?} {failure:?}: {message:?}"
    );
    let error = message.error().expect("a typed error");
    let _ = write!(printed, "{message:?} {error} {error:?}");
    printed.push_str(&serde_json::to_string(&message).unwrap());

    // Into a session file, as an agent session writes a failed reply.
    let mut session = SessionOptions::new()
        .with_session_dir(dir.path())
        .create("/audit");
    session.append_message(UserMessage::text("hi")).unwrap();
    session.append_message(message).unwrap();
    let file = session.session_file().expect("a session file").to_owned();
    drop(session);
    printed.push_str(&std::fs::read_to_string(file).unwrap());

    assert!(
        servers.other.requests().is_empty(),
        "{source:?} {format:?} {failure:?}: the other origin got {:?}",
        servers.other.requests()
    );
    if let (Failure::Redirect, Some(main)) = (failure, &servers.main) {
        assert_eq!(main.requests().len(), 1);
        assert!(error.message().contains("redirect"), "{error}");
    }
    printed
}

/// Panics when `text` holds the secret (or a long piece of it).
fn assert_clean(what: &str, text: &str) {
    let s = secret();
    for needle in [s, &s[..12], &s[s.len() - 12..]] {
        if let Some(at) = text.find(needle) {
            let from = text[..at]
                .char_indices()
                .rev()
                .nth(120)
                .map_or(0, |(i, _)| i);
            let to = (at + 60).min(text.len());
            panic!("{what}: the key leaked: …{}…", &text[from..to]);
        }
    }
}

async fn audit(sources: &[Source]) {
    capture_logs();
    for format in FORMATS {
        for source in sources {
            let keys = match source {
                // What the variable holds (OPENAI_API_KEY serves two formats).
                Source::Env => vec![std::env::var(format.env_provider().1).unwrap()],
                _ => format.keys().to_vec(),
            };
            for key in &keys {
                for failure in FAILURES {
                    let printed = run(*source, format, failure, key).await;
                    let what = format!("{source:?} {format:?} {failure:?} {key}");
                    assert_clean(&what, &printed);
                    assert_clean(&format!("{what} (logs)"), &logs().lock().unwrap());
                }
            }
        }
    }
}

#[tokio::test]
async fn no_key_leaks_from_options_auth_json_or_models_json() {
    audit(&[
        Source::WithApiKey,
        Source::AuthJson,
        Source::ModelsJsonApiKey,
        Source::ModelsJsonAuthHeader,
        Source::ModelsJsonHeaders,
    ])
    .await;
    // The capture works: the crate's retries were logged.
    assert!(logs().lock().unwrap().contains("retrying model request"));
}

/// Runs `test` of this binary in a child process with the keys in the environment.
fn in_child_with_env(test: &str) {
    let keys = FORMATS
        .iter()
        .map(|format| (format.env_provider().1.to_owned(), format.keys()[0].clone()));
    let env: Vec<(String, String)> =
        std::iter::once((CHILD_SECRET.to_owned(), secret().to_owned()))
            .chain(keys)
            .collect();
    support::run_ignored_in_child(test, env);
}

#[test]
fn no_key_leaks_from_the_environment() {
    in_child_with_env("env_child");
}

#[tokio::test]
#[ignore = "run by no_key_leaks_from_the_environment, with the keys in its environment"]
async fn env_child() {
    // The child half of its parent test; run on its own (`--include-ignored`), it has no
    // parent environment and nothing to do.
    if std::env::var_os(CHILD_SECRET).is_none() {
        return;
    }
    audit(&[Source::Env]).await;
}
