//! The README's "Local servers" entries against the real servers: LiteLLM's proxy (installed by
//! `scripts/install-litellm.sh` into `.litellm/`, or `PI_ENGINE_LITELLM` naming its
//! `litellm` command) with a mocked model, and llama-cpp-python's server (installed with a
//! tiny random-weight model by `scripts/install-llama-cpp.sh` into `.llama-cpp/`), each
//! started here on a free loopback port.
#![cfg(feature = "openai")]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pi_engine::llm::ModelRegistry;
use pi_engine::{Context, StopReason, StreamOptions, UserMessage};

const MASTER_KEY: &str = "sk-litellm-local-0123456789abcdef";
const MOCK_REPLY: &str = "Hello from LiteLLM";

/// A running LiteLLM proxy, killed on drop.
struct LiteLlm {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for LiteLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn litellm_command() -> PathBuf {
    if let Some(path) = std::env::var_os("PI_ENGINE_LITELLM") {
        return PathBuf::from(path);
    }
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".litellm/bin/litellm");
    assert!(
        local.exists(),
        "LiteLLM is not installed: run scripts/install-litellm.sh (or set PI_ENGINE_LITELLM)"
    );
    local
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the proxy with one mocked model, `fake-gpt`, behind a master key, and waits until
/// it answers (LiteLLM takes several seconds to start: a generous bound).
async fn start_litellm() -> LiteLlm {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "model_list:\n  - model_name: fake-gpt\n    litellm_params:\n      model: openai/fake-gpt\n      api_key: unused\n      mock_response: \"{MOCK_REPLY}\"\ngeneral_settings:\n  master_key: {MASTER_KEY}\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new(litellm_command())
        .arg("--config")
        .arg(&config)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .env("LITELLM_TELEMETRY", "False")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start litellm");
    let server = LiteLlm {
        child,
        port,
        _dir: dir,
    };
    let health = format!("http://127.0.0.1:{port}/health/liveliness");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(r) = client.get(&health).send().await
            && r.status().is_success()
        {
            return server;
        }
        assert!(
            Instant::now() < deadline,
            "LiteLLM did not answer on port {port} within 180 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The README's `models.json` entry for LiteLLM, on `port`.
fn models_json(port: u16) -> String {
    format!(
        r#"{{
  "providers": {{
    "litellm": {{
      "baseUrl": "http://127.0.0.1:{port}/v1",
      "api": "openai-completions",
      "apiKey": "{MASTER_KEY}",
      "models": [{{ "id": "fake-gpt", "reasoning": false, "contextWindow": 128000, "maxTokens": 4096 }}]
    }}
  }}
}}"#
    )
}

#[tokio::test]
#[ignore = "needs LiteLLM's proxy (scripts/install-litellm.sh)"]
async fn litellm_streams_a_reply_through_the_readme_entry() {
    let server = start_litellm().await;
    let registry = ModelRegistry::from_models_json(&models_json(server.port)).unwrap();
    let model = registry.find("litellm", "fake-gpt").unwrap().clone();
    let context = Context::new()
        .with_system_prompt("Be brief.")
        .with_message(UserMessage::text("Say hello."));
    let options = registry
        .request_auth(&model)
        .await
        .unwrap()
        .apply(StreamOptions::new().with_max_tokens(64));
    let reply = pi_engine::complete_simple(&model, &context, &options).await;
    assert_eq!(
        reply.stop_reason,
        StopReason::Stop,
        "{:?}",
        reply.error_message
    );
    assert_eq!(reply.text(), MOCK_REPLY);
    assert!(
        reply.usage.output > 0,
        "usage arrives in the stream: {:?}",
        reply.usage
    );
}

/// A running llama-cpp-python server, killed on drop.
struct LlamaCpp {
    child: Child,
    port: u16,
}

impl Drop for LlamaCpp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts llama-cpp-python's server (`scripts/install-llama-cpp.sh`) on the tiny random
/// model, and waits until it answers.
async fn start_llama_cpp() -> LlamaCpp {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".llama-cpp");
    let python = dir.join("bin/python");
    let model = dir.join("tiny.gguf");
    assert!(
        python.exists() && model.exists(),
        "llama-cpp-python is not installed: run scripts/install-llama-cpp.sh"
    );
    let port = free_port();
    let child = Command::new(python)
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(model)
        .args([
            "--chat_format",
            "chatml",
            "--n_ctx",
            "512",
            "--host",
            "127.0.0.1",
        ])
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llama-cpp-python");
    let server = LlamaCpp { child, port };
    let models = format!("http://127.0.0.1:{port}/v1/models");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(r) = client.get(&models).send().await
            && r.status().is_success()
        {
            return server;
        }
        assert!(
            Instant::now() < deadline,
            "llama-cpp-python did not answer on port {port} within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The README's llama-cpp-python entry on `port` (keyless: loopback and no `apiKey`), with
/// or without its `compat` flags.
fn llama_models_json(port: u16, with_flags: bool) -> String {
    let compat = if with_flags {
        r#", "compat": {"maxTokensField": "max_tokens", "supportsDeveloperRole": false, "supportsStore": false, "supportsReasoningEffort": false}"#
    } else {
        ""
    };
    format!(
        r#"{{"providers": {{"llama-cpp-python": {{"baseUrl": "http://127.0.0.1:{port}/v1", "api": "openai-completions"{compat},
            "models": [{{"id": "tiny", "contextWindow": 512, "maxTokens": 512}}]}}}}}}"#
    )
}

#[tokio::test]
#[ignore = "needs llama-cpp-python's server (scripts/install-llama-cpp.sh)"]
async fn llama_cpp_python_honours_the_token_limit_with_the_readme_flags() {
    let server = start_llama_cpp().await;
    let context = Context::new()
        .with_system_prompt("Be brief.")
        .with_message(UserMessage::text("Say hello."));
    let registry = ModelRegistry::from_models_json(&llama_models_json(server.port, true)).unwrap();
    let model = registry.find("llama-cpp-python", "tiny").unwrap().clone();
    assert!(model.keyless, "loopback without apiKey needs no key");
    let options = registry.request_auth(&model).await.unwrap().apply(
        StreamOptions::new()
            .with_max_tokens(5)
            .with_temperature(0.0),
    );
    // With the flags, `max_tokens` is sent and the model (greedy, so the reply is always the
    // same) stops after 5 tokens, each at most a few bytes of its byte-level vocabulary.
    let limited = pi_engine::complete_simple(&model, &context, &options).await;
    assert_eq!(
        limited.stop_reason,
        StopReason::Length,
        "{:?}",
        limited.error_message
    );
    assert!(limited.text().len() <= 40, "{:?}", limited.text());

    // Without the flags (OpenAI's `max_completion_tokens`), the server ignores the limit and
    // writes until its 512-token context is full: the trap the README's flags avoid.
    let registry = ModelRegistry::from_models_json(&llama_models_json(server.port, false)).unwrap();
    let model = registry.find("llama-cpp-python", "tiny").unwrap().clone();
    let unlimited = pi_engine::complete_simple(&model, &context, &options).await;
    assert!(
        unlimited.text().len() > 100,
        "{} bytes: {:?}",
        unlimited.text().len(),
        unlimited.error_message
    );
}
