//! The README's "Local servers" entries against the real servers: LiteLLM's proxy (installed by
//! `scripts/install-litellm.sh` into `.litellm/`, or `PI_ENGINE_LITELLM` naming its
//! `litellm` command), started here on a free loopback port with a mocked model.
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
