//! Model catalog and option mapping costs.
//!
//! `catalog/parse_json_alternative` is what embedding the catalog as JSON would cost at first
//! use (parsing all 969 models); the static tables this crate uses cost nothing up front, and
//! a lookup costs `catalog/get_model`.

use criterion::{Criterion, criterion_group, criterion_main};
use pi_engine::llm::{Model, StreamOptions, ThinkingLevel, get_model, to_provider_options};
use pi_engine::models::{ModelRegistry, builtin_models};
use std::hint::black_box;

fn catalog(c: &mut Criterion) {
    c.bench_function("catalog/get_model", |b| {
        b.iter(|| get_model(black_box("openrouter"), black_box("openai/gpt-5.4")))
    });
    c.bench_function("catalog/builtin_models", |b| b.iter(builtin_models));
    let json = serde_json::to_string(&builtin_models()).unwrap();
    c.bench_function("catalog/parse_json_alternative", |b| {
        b.iter(|| serde_json::from_str::<Vec<Model>>(black_box(&json)).unwrap())
    });
    let config = r#"{"providers": {"ollama": {"baseUrl": "http://127.0.0.1:11434/v1",
        "api": "openai-completions", "apiKey": "ollama", "models": [{"id": "llama3.1:8b"}]}}}"#;
    c.bench_function("registry/from_models_json", |b| {
        b.iter(|| ModelRegistry::from_models_json(black_box(config)).unwrap())
    });
}

fn thinking(c: &mut Criterion) {
    let model = get_model("anthropic", "claude-sonnet-4-5").unwrap();
    let options = StreamOptions::new().with_reasoning(ThinkingLevel::High);
    c.bench_function("thinking/to_provider_options", |b| {
        b.iter(|| to_provider_options(black_box(&model), black_box(&options)))
    });
}

criterion_group!(benches, catalog, thinking);
criterion_main!(benches);
