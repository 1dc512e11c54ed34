//! Differential request encoding against pi itself: pi-ai 0.73.1's openai-completions
//! provider (run with node, `tests/support/pi_openai_payload.mjs`) and ours encode the same
//! models, contexts and options, and the bodies must be equal, key order included. The cases
//! cover what the recorded session does not: every thinking format, the compat flags,
//! cross-provider replay, images, caching, routing.
//!
//! Nothing is sent: pi's `onPayload` stops its call; ours runs with a cancelled token, so
//! the request is built (and `on_payload` sees it) but no connection is opened.
//!
//! Needs node and `@mariozechner/pi-ai@0.73.1` in `.pi-npm/` or `$PI_NPM`
//! (`scripts/install-pi-npm.sh`): ignored by a plain `cargo test`, run by `.ci/run`.
#![cfg(feature = "openai")]

#[path = "support/pi_npm.rs"]
mod pi_npm;

use std::path::Path;
use std::sync::{Arc, Mutex};

use pi_engine::providers::openai_completions::OpenAiCompletionsProvider;
use pi_engine::{ApiProvider, CancellationToken, Context, Model, StreamOptions, llm::RetryPolicy};
use serde_json::{Value, json};

/// pi's bodies for `cases`.
fn pi_bodies(modules: &Path, cases: &[Value]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cases.json");
    std::fs::write(&file, serde_json::to_vec(cases).unwrap()).unwrap();
    let out = pi_npm::stdout_of(
        pi_npm::node_script("pi_openai_payload.mjs", modules)
            .arg(&file)
            .env_remove("PI_CACHE_RETENTION"),
    );
    serde_json::from_slice(&out).unwrap()
}

/// Our body for one case.
fn our_body(case: &Value) -> Value {
    let model: Model = serde_json::from_value(case["model"].clone()).unwrap();
    let context: Context = serde_json::from_value(case["context"].clone()).unwrap();
    let options: StreamOptions = serde_json::from_value(case["options"].clone()).unwrap();
    let captured = Arc::new(Mutex::new(None));
    let sink = captured.clone();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let options = options
        .with_retry(RetryPolicy::none())
        .with_cancel(cancel)
        .with_on_payload(move |body| *sink.lock().unwrap() = Some(body.clone()));
    drop(OpenAiCompletionsProvider::new().stream(&model, &context, &options));
    let body = captured.lock().unwrap().take();
    body.unwrap_or_else(|| json!({"__error": "no body"}))
}

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

fn model(provider: &str, base_url: &str, id: &str, reasoning: bool, vision: bool) -> Value {
    json!({
        "id": id, "name": id, "api": "openai-completions", "provider": provider, "baseUrl": base_url,
        "reasoning": reasoning, "input": if vision { json!(["text", "image"]) } else { json!(["text"]) },
        "cost": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 1.25},
        "contextWindow": 128000, "maxTokens": 16384
    })
}

fn with(mut value: Value, key: &str, v: Value) -> Value {
    value[key] = v;
    value
}

const TS: u64 = 1_700_000_000_000;

fn usage() -> Value {
    json!({"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
}

fn assistant(api: &str, provider: &str, model: &str, content: Value, stop: &str) -> Value {
    json!({"role": "assistant", "content": content, "api": api, "provider": provider, "model": model,
           "usage": usage(), "stopReason": stop, "timestamp": TS})
}

fn user(content: Value) -> Value {
    json!({"role": "user", "content": content, "timestamp": TS})
}

fn result(id: &str, name: &str, content: Value, is_error: bool) -> Value {
    json!({"role": "toolResult", "toolCallId": id, "toolName": name, "content": content,
           "isError": is_error, "timestamp": TS})
}

fn tools() -> Value {
    json!([
        {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        {"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}}, "required": ["command"]}}
    ])
}

/// A conversation with replay from this model and others, images, errors and aborts.
fn long_history(model_id: &str, provider: &str) -> Vec<Value> {
    let img = |d: &str| json!({"type": "image", "data": d, "mimeType": "image/png"});
    vec![
        user(json!([{"type": "text", "text": "Look at this"}, img("AAAA"), img("BBBB")])),
        // This model: thinking replayed in its field, calls with JSON-text arguments.
        assistant(
            "openai-completions",
            provider,
            model_id,
            json!([
                {"type": "thinking", "thinking": "Plan: read it", "thinkingSignature": "reasoning_content"},
                {"type": "thinking", "thinking": "   "},
                {"type": "text", "text": "Reading "},
                {"type": "text", "text": " "},
                {"type": "text", "text": "now."},
                {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.txt", "n": 5.0, "big": 1e21, "neg": -0.5, "u": "é😀\n"}},
                {"type": "toolCall", "id": "call_2", "name": "bash", "arguments": {"command": "ls"},
                 "thoughtSignature": "{\"type\":\"reasoning.encrypted\",\"id\":\"call_2\",\"data\":\"ENC\"}"}
            ]),
            "toolUse",
        ),
        result(
            "call_1",
            "read",
            json!([{"type": "text", "text": "line 1"}, {"type": "text", "text": "line 2"}, img("CCCC")]),
            false,
        ),
        result("call_2", "bash", json!([img("DDDD")]), true),
        user(json!("Now from Anthropic")),
        // Another model: thinking becomes text, signatures dropped, ids normalized.
        assistant(
            "anthropic-messages",
            "anthropic",
            "claude-sonnet-4-5",
            json!([
                {"type": "thinking", "thinking": "secret", "thinkingSignature": "sig", "redacted": true},
                {"type": "thinking", "thinking": "visible plan", "thinkingSignature": "sig2"},
                {"type": "text", "text": "ok"},
                {"type": "toolCall", "id": "toolu_01|weird/id+x=", "name": "read", "arguments": {"path": "b"}}
            ]),
            "toolUse",
        ),
        result(
            "toolu_01|weird/id+x=",
            "read",
            json!([{"type": "text", "text": "B"}]),
            false,
        ),
        // Responses-style ids; one call never answered.
        assistant(
            "openai-responses",
            "openai",
            "gpt-5",
            json!([
                {"type": "toolCall", "id": "call_abc|fc_0123456789abcdef0123456789abcdef0123456789", "name": "bash", "arguments": {"command": "pwd"}},
                {"type": "toolCall", "id": "call_orphan|fc_x", "name": "read", "arguments": {}}
            ]),
            "toolUse",
        ),
        result(
            "call_abc|fc_0123456789abcdef0123456789abcdef0123456789",
            "bash",
            json!([{"type": "text", "text": "/"}]),
            false,
        ),
        // Failed turns are skipped.
        assistant(
            "openai-completions",
            provider,
            model_id,
            json!([{"type": "text", "text": "partial"}]),
            "error",
        ),
        assistant(
            "openai-completions",
            provider,
            model_id,
            json!([{"type": "text", "text": "cut"}]),
            "aborted",
        ),
        // Empty blocks and whitespace-only replies.
        user(json!([])),
        assistant(
            "openai-completions",
            provider,
            model_id,
            json!([{"type": "text", "text": "  "}]),
            "stop",
        ),
        user(json!("Last question")),
    ]
}

fn cases() -> Vec<Value> {
    let key = json!({"apiKey": "sk-test"});
    let mut cases = Vec::new();
    let mut push = |model: Value, messages: Vec<Value>, tools: Option<Value>, options: Value| {
        let mut context = json!({"systemPrompt": "You are helpful.", "messages": messages});
        if let Some(t) = tools {
            context["tools"] = t;
        }
        let mut opts = key.clone();
        for (k, v) in options.as_object().unwrap() {
            opts[k] = v.clone();
        }
        cases.push(json!({"model": model, "context": context, "options": opts}));
    };

    // OpenAI itself: developer role, cache key, every option.
    let gpt = model(
        "openai",
        "https://api.openai.com/v1",
        "gpt-5-mini",
        true,
        true,
    );
    push(
        gpt.clone(),
        long_history("gpt-5-mini", "openai"),
        Some(tools()),
        json!({"sessionId": "sess-1", "temperature": 0.5, "maxTokens": 4000, "reasoningEffort": "high", "toolChoice": "auto"}),
    );
    push(
        gpt.clone(),
        long_history("gpt-5-mini", "openai"),
        None,
        json!({"sessionId": "sess-1", "cacheRetention": "long", "temperature": 1}),
    );
    push(
        gpt.clone(),
        vec![user(json!("hi"))],
        None,
        json!({"sessionId": "s", "cacheRetention": "none"}),
    );
    push(
        with(
            gpt.clone(),
            "thinkingLevelMap",
            json!({"off": "minimal", "high": "max", "low": null}),
        ),
        vec![user(json!("hi"))],
        None,
        json!({}),
    );
    push(
        with(
            gpt.clone(),
            "thinkingLevelMap",
            json!({"off": "minimal", "high": "max"}),
        ),
        vec![user(json!("hi"))],
        Some(tools()),
        json!({"reasoningEffort": "high", "toolChoice": {"type": "function", "function": {"name": "read"}}}),
    );
    // A text-only, non-reasoning model: images become placeholders, system role.
    let text = model(
        "groq",
        "https://api.groq.com/openai/v1",
        "llama-3.3",
        false,
        false,
    );
    push(
        text.clone(),
        long_history("llama-3.3", "groq"),
        Some(tools()),
        json!({"maxTokens": 100}),
    );
    // Compat flags set by hand (a llama.cpp-style server).
    let picky = with(
        model("local", "http://127.0.0.1:8080/v1", "qwen3", true, true),
        "compat",
        json!({
            "supportsDeveloperRole": false, "supportsStore": false, "supportsUsageInStreaming": false,
            "maxTokensField": "max_tokens", "requiresToolResultName": true, "requiresAssistantAfterToolResult": true,
            "requiresThinkingAsText": true, "supportsStrictMode": false, "thinkingFormat": "qwen-chat-template",
            "zaiToolStream": true
        }),
    );
    push(
        picky.clone(),
        long_history("qwen3", "local"),
        Some(tools()),
        json!({"reasoningEffort": "low", "maxTokens": 50}),
    );
    push(picky, long_history("qwen3", "local"), None, json!({}));
    // DeepSeek: reasoning_content on every assistant message, thinking toggle.
    let deepseek = model(
        "deepseek",
        "https://api.deepseek.com/v1",
        "deepseek-reasoner",
        true,
        false,
    );
    push(
        deepseek.clone(),
        long_history("deepseek-reasoner", "deepseek"),
        Some(tools()),
        json!({"reasoningEffort": "medium"}),
    );
    push(deepseek, vec![user(json!("hi"))], None, json!({}));
    // z.ai, Moonshot, xAI, Cerebras, chutes, qwen.
    let zai = with(
        model(
            "zai",
            "https://api.z.ai/api/coding/paas/v4",
            "glm-4.6",
            true,
            false,
        ),
        "compat",
        json!({"zaiToolStream": true}),
    );
    push(
        zai.clone(),
        long_history("glm-4.6", "zai"),
        Some(tools()),
        json!({"reasoningEffort": "high", "maxTokens": 1000}),
    );
    push(zai, vec![user(json!("hi"))], None, json!({}));
    push(
        model(
            "moonshotai",
            "https://api.moonshot.ai/v1",
            "kimi-k2",
            true,
            false,
        ),
        long_history("kimi-k2", "moonshotai"),
        Some(tools()),
        json!({"reasoningEffort": "high", "maxTokens": 10}),
    );
    push(
        model("xai", "https://api.x.ai/v1", "grok-4", true, true),
        long_history("grok-4", "xai"),
        Some(tools()),
        json!({"reasoningEffort": "high"}),
    );
    push(
        model(
            "cerebras",
            "https://api.cerebras.ai/v1",
            "gpt-oss-120b",
            true,
            false,
        ),
        vec![user(json!("hi"))],
        Some(tools()),
        json!({"reasoningEffort": "low"}),
    );
    push(
        model(
            "chutes",
            "https://llm.chutes.ai/v1",
            "deepseek-v3",
            false,
            false,
        ),
        vec![user(json!("hi"))],
        None,
        json!({"maxTokens": 10}),
    );
    push(
        with(
            model(
                "alibaba",
                "https://dashscope.example/v1",
                "qwen3-max",
                true,
                false,
            ),
            "compat",
            json!({"thinkingFormat": "qwen"}),
        ),
        vec![user(json!("hi"))],
        None,
        json!({"reasoningEffort": "minimal"}),
    );
    // OpenRouter: reasoning object, routing, Anthropic-style cache markers for Claude.
    let router = with(
        model(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "anthropic/claude-sonnet-4.5",
            true,
            true,
        ),
        "compat",
        json!({"openRouterRouting": {"order": ["anthropic"], "allow_fallbacks": false}}),
    );
    push(
        router.clone(),
        long_history("anthropic/claude-sonnet-4.5", "openrouter"),
        Some(tools()),
        json!({"reasoningEffort": "xhigh", "cacheRetention": "long", "sessionId": "s"}),
    );
    push(
        router.clone(),
        vec![user(
            json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
        )],
        None,
        json!({}),
    );
    push(
        with(router, "thinkingLevelMap", json!({"off": null})),
        vec![user(json!("hi"))],
        None,
        json!({}),
    );
    push(
        model(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "openai/gpt-5",
            true,
            false,
        ),
        vec![user(json!("hi"))],
        Some(tools()),
        json!({"cacheRetention": "none"}),
    );
    // Vercel AI Gateway routing; a gateway without routing.
    push(
        with(
            model(
                "vercel-ai-gateway",
                "https://ai-gateway.vercel.sh/v1",
                "openai/gpt-5",
                true,
                false,
            ),
            "compat",
            json!({"vercelGatewayRouting": {"only": ["azure"], "order": ["azure", "openai"]}}),
        ),
        vec![user(json!("hi"))],
        None,
        json!({}),
    );
    push(
        with(
            model(
                "vercel-ai-gateway",
                "https://ai-gateway.vercel.sh/v1",
                "openai/gpt-5",
                true,
                false,
            ),
            "compat",
            json!({"vercelGatewayRouting": {}}),
        ),
        vec![user(json!("hi"))],
        None,
        json!({}),
    );
    // Tool history without tools; an empty system prompt; a conversation ending in tool results.
    let mut history = long_history("gpt-4o", "openai");
    history.truncate(4);
    push(
        model("openai", "https://api.openai.com/v1", "gpt-4o", false, true),
        history,
        None,
        json!({}),
    );
    cases
}

#[test]
#[ignore = "needs node and pi's npm packages (scripts/install-pi-npm.sh)"]
fn bodies_match_pi_on_every_case() {
    let modules = pi_npm::require("@mariozechner/pi-ai");
    let cases = cases();
    let theirs = pi_bodies(&modules, &cases);
    assert_eq!(theirs.len(), cases.len());
    for (i, (case, want)) in cases.iter().zip(&theirs).enumerate() {
        assert!(want.get("__error").is_none(), "case {i}: pi failed: {want}");
        let ours = our_body(case);
        let what = format!(
            "case {i} ({} / {})",
            case["model"]["provider"], case["model"]["id"]
        );
        if ours != *want {
            // The first message that differs, for a readable failure.
            if let (Some(a), Some(b)) = (ours["messages"].as_array(), want["messages"].as_array()) {
                for (k, (x, y)) in a.iter().zip(b).enumerate() {
                    assert_eq!(x, y, "{what}: message {k}");
                }
            }
            assert_eq!(ours, *want, "{what}");
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        key_order(&ours, &mut a);
        key_order(want, &mut b);
        assert_eq!(a, b, "{what}: key order");
    }
}
