//! The fuzz targets on stable: (a) every committed input of `fuzz/corpus/<target>/` and
//! `fuzz/artifacts/<target>/` (regressions) replayed through the target's property, and
//! (b) each property checked with `proptest` on a bounded number of generated inputs: a corpus
//! input with some bytes changed and a new chunking, or plain random bytes (a failure is
//! shrunk to a smaller input before it is reported).
//!
//! The properties are in `pi_engine::__fuzz` (`src/fuzz_targets.rs`); `scripts/fuzz.sh`
//! runs the same targets under libFuzzer (`cargo +nightly fuzz`).

mod support;

use std::path::{Path, PathBuf};

use pi_engine::__fuzz;

/// Generated inputs per target and test run (kept small: the whole file stays well under
/// 30 s in a debug build).
const ITERATIONS: usize = 150;

type Target = fn(&[u8]);

fn targets() -> Vec<(&'static str, Target)> {
    #[allow(unused_mut)] // Without any provider family.
    let mut t: Vec<(&'static str, Target)> = vec![
        ("sse", __fuzz::sse),
        ("partial_json", __fuzz::partial_json),
        ("session_file", __fuzz::session_file),
        ("session_roundtrip", __fuzz::session_roundtrip),
        ("tool_args", __fuzz::tool_args),
    ];
    #[cfg(feature = "anthropic")]
    t.push(("decoder_anthropic", |d| {
        __fuzz::decoder(__fuzz::Api::Anthropic, d)
    }));
    #[cfg(feature = "openai")]
    t.push(("decoder_openai_completions", |d| {
        __fuzz::decoder(__fuzz::Api::OpenAiCompletions, d)
    }));
    #[cfg(feature = "openai")]
    t.push(("decoder_openai_responses", |d| {
        __fuzz::decoder(__fuzz::Api::OpenAiResponses, d)
    }));
    #[cfg(feature = "google")]
    t.push(("decoder_google", |d| {
        __fuzz::decoder(__fuzz::Api::Google, d)
    }));
    #[cfg(feature = "bedrock")]
    t.push(("decoder_bedrock", |d| {
        __fuzz::decoder(__fuzz::Api::Bedrock, d)
    }));
    #[cfg(feature = "mistral")]
    t.push(("decoder_mistral", |d| {
        __fuzz::decoder(__fuzz::Api::Mistral, d)
    }));
    t
}

fn target(name: &str) -> Target {
    targets()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| f)
        .unwrap_or_else(|| panic!("no target {name}"))
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The committed inputs of `target`: corpus, then regressions.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in ["corpus", "artifacts"] {
        let Ok(entries) = std::fs::read_dir(fuzz_dir().join(dir).join(target)) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        for path in paths {
            let data = std::fs::read(&path).expect("read a corpus file");
            out.push((path, data));
        }
    }
    out
}

/// Runs every committed input of `name`; a failure names the file.
fn replay(name: &str) {
    let run = target(name);
    let inputs = inputs(name);
    let corpus_dir = fuzz_dir().join("corpus").join(name);
    assert!(
        !inputs.is_empty(),
        "no corpus for {name} in {}",
        corpus_dir.display()
    );
    for (path, data) in inputs {
        let result = std::panic::catch_unwind(|| run(&data));
        assert!(result.is_ok(), "{name} fails on {}", path.display());
    }
}

/// A generated input: which corpus input to start from (or none: random bytes), a new
/// chunking, and byte edits (position, value; an edit past the end appends).
type Mutation = (u16, [u8; 2], Vec<(u16, u8)>);

fn mutate(corpus: &[(PathBuf, Vec<u8>)], (pick, chunking, edits): &Mutation) -> Vec<u8> {
    let pick = usize::from(*pick);
    let mut data = if pick % 8 == 7 || corpus.is_empty() {
        // Plain random bytes.
        edits.iter().map(|&(_, b)| b).collect()
    } else {
        let mut data = corpus[pick % corpus.len()].1.clone();
        for &(at, byte) in edits.iter().take(8) {
            let at = usize::from(at);
            if data.is_empty() || at % 16 == 15 {
                data.push(byte);
            } else {
                let i = at % data.len();
                data[i] = byte;
            }
        }
        data
    };
    // The chunking bytes (the sessions and tool-argument targets have none: it is two more
    // edited bytes for them).
    for (i, b) in chunking.iter().enumerate() {
        if let Some(slot) = data.get_mut(i) {
            *slot = *b;
        }
    }
    data
}

fn generated(name: &str) {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let run = target(name);
    let corpus = inputs(name);
    let mutation = (
        any::<u16>(),
        any::<[u8; 2]>(),
        prop::collection::vec(any::<(u16, u8)>(), 0..64),
    );
    let mut runner = TestRunner::new(Config {
        cases: ITERATIONS as u32,
        failure_persistence: None,
        ..Config::default()
    });
    if let Err(failure) = runner.run(&mutation, |m| {
        run(&mutate(&corpus, &m));
        Ok(())
    }) {
        panic!("{name}: {failure}");
    }
}

macro_rules! targets {
    ($($replay:ident, $generated:ident, $name:literal, $($feature:literal)?;)*) => {$(
        #[test]
        $(#[cfg(feature = $feature)])?
        fn $replay() {
            replay($name);
        }

        #[test]
        $(#[cfg(feature = $feature)])?
        fn $generated() {
            generated($name);
        }
    )*};
}

targets! {
    sse_corpus, sse_generated, "sse", ;
    partial_json_corpus, partial_json_generated, "partial_json", ;
    session_file_corpus, session_file_generated, "session_file", ;
    session_roundtrip_corpus, session_roundtrip_generated, "session_roundtrip", ;
    tool_args_corpus, tool_args_generated, "tool_args", ;
    decoder_anthropic_corpus, decoder_anthropic_generated, "decoder_anthropic", "anthropic";
    decoder_openai_completions_corpus, decoder_openai_completions_generated, "decoder_openai_completions", "openai";
    decoder_openai_responses_corpus, decoder_openai_responses_generated, "decoder_openai_responses", "openai";
    decoder_google_corpus, decoder_google_generated, "decoder_google", "google";
    decoder_bedrock_corpus, decoder_bedrock_generated, "decoder_bedrock", "bedrock";
    decoder_mistral_corpus, decoder_mistral_generated, "decoder_mistral", "mistral";
}

/// Every target has a corpus, and every corpus directory a target (a renamed target must not
/// leave its corpus unreplayed).
#[test]
fn every_corpus_has_a_target() {
    let names: Vec<&str> = targets().into_iter().map(|(n, _)| n).collect();
    for entry in std::fs::read_dir(fuzz_dir().join("corpus")).expect("fuzz/corpus") {
        let entry = entry.expect("entry");
        if entry.path().is_dir() {
            let dir = entry.file_name().to_string_lossy().into_owned();
            assert!(
                names.contains(&dir.as_str())
                    || !cfg!(all(
                        feature = "anthropic",
                        feature = "openai",
                        feature = "google",
                        feature = "bedrock",
                        feature = "mistral"
                    )),
                "fuzz/corpus/{dir} has no target"
            );
        }
    }
}

/// The replay the decoder targets run (`src/providers/http/replay.rs`) makes the same events
/// of a body as the HTTP driver does when a local server sends it: the targets test what a
/// consumer of `stream` sees. Every UTF-8 corpus input of each decoder target is sent.
#[cfg(any(feature = "anthropic", feature = "openai", feature = "google"))]
#[tokio::test]
#[allow(clippy::vec_init_then_push)] // The pushes depend on the features.
async fn replay_agrees_with_the_driver() {
    use futures::StreamExt;
    use pi_engine::llm::{
        AssistantMessageEvent, Context, Model, ModelCost, StreamOptions, UserMessage,
    };
    use support::{MockServer, Reply};

    let mut apis: Vec<(&str, __fuzz::Api, &str, &str)> = Vec::new();
    #[cfg(feature = "anthropic")]
    apis.push((
        "decoder_anthropic",
        __fuzz::Api::Anthropic,
        "anthropic-messages",
        "anthropic",
    ));
    #[cfg(feature = "openai")]
    apis.push((
        "decoder_openai_completions",
        __fuzz::Api::OpenAiCompletions,
        "openai-completions",
        "openai",
    ));
    #[cfg(feature = "openai")]
    apis.push((
        "decoder_openai_responses",
        __fuzz::Api::OpenAiResponses,
        "openai-responses",
        "openai",
    ));
    #[cfg(feature = "google")]
    apis.push((
        "decoder_google",
        __fuzz::Api::Google,
        "google-generative-ai",
        "google",
    ));
    #[cfg(feature = "mistral")]
    apis.push((
        "decoder_mistral",
        __fuzz::Api::Mistral,
        "mistral-conversations",
        "mistral",
    ));

    let zero_time = |events: &mut Vec<AssistantMessageEvent>| {
        for event in events.iter_mut() {
            if let AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } = event
            {
                message.timestamp = 0;
            }
        }
        __fuzz::normalize_ids(events);
    };
    let mut compared = 0;
    for (target, api, api_name, provider) in apis {
        for (path, data) in inputs(target).into_iter().take(60) {
            let body = data.get(2..).unwrap_or_default();
            let Ok(text) = std::str::from_utf8(body) else {
                continue;
            };
            let server = MockServer::start(vec![Reply::sse(&[text])]).await;
            let model = Model::new("replay-model", api_name, provider, server.url())
                .with_cost(ModelCost::new(3.0, 15.0, 0.3, 3.75));
            let context = Context::new().with_message(UserMessage::text("replay"));
            let options = StreamOptions::new().with_api_key("replay-key");
            let mut stream = pi_engine::stream(&model, &context, &options);
            let mut driven = Vec::new();
            while let Some(event) = stream.next().await {
                driven.push(event);
            }
            let mut replayed = __fuzz::replay(api, &model, body);
            zero_time(&mut driven);
            zero_time(&mut replayed);
            assert_eq!(driven, replayed, "{target}: {}", path.display());
            compared += 1;
        }
    }
    assert!(compared >= 20, "only {compared} streams compared");
}
