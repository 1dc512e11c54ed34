//! The crate's fuzz targets, as plain functions of a byte string. **Not API**: hidden, with
//! no stability promise; it exists so that the `cargo fuzz` targets in `fuzz/` and the stable
//! replay of their corpus (`tests/fuzz_replay.rs`) run the same code.
//!
//! Each function panics only when a property is violated (the crate panicked, or gave an
//! answer that breaks what it promises); any input is valid. The properties:
//!
//! * [`sse`]: the SSE decoder gives the same events whatever the chunk boundaries (and taking
//!   an event's data out of the decoder changes nothing after it), and the events a direct
//!   reading of the documented rules gives.
//! * [`decoder`]: a provider's decoder fed a body in arbitrary chunks gives `start`, exactly
//!   one terminal event, last, and the same events and final message as the body in one chunk.
//! * [`partial_json`]: the partial-JSON parser, fed a text in arbitrary fragments, gives after
//!   each fragment what it gives for the text so far in one piece, and for a complete object
//!   serde accepts, serde's value.
//! * [`session_file`]: any file opens or is refused with an error; what opens reads
//!   consistently (context from one read equals the two-step build; every indexed entry
//!   reads), and after an append (which migrates and repairs) the file reopens with the same
//!   entries plus the new one.
//! * [`session_roundtrip`]: a message the crate appends reads back equal.
//! * [`tool_args`]: validating arbitrary arguments against an arbitrary schema never panics,
//!   and the compiled-once [`ToolValidator`](crate::llm::ToolValidator) agrees with
//!   [`validate_tool_arguments`](crate::llm::validate_tool_arguments).
//!
//! Inputs that choose a chunking start with two bytes for it (see [`Chunking`]); the rest is
//! the body.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Map, Value};

use crate::agent::AgentMessage;
#[cfg(any(
    feature = "anthropic",
    feature = "openai",
    feature = "google",
    feature = "bedrock",
    feature = "mistral"
))]
use crate::llm::event::AssistantMessageEvent;
use crate::llm::message::{AssistantContent, AssistantMessage, Tool, ToolCall, UserMessage};

// ------------------------------------------------------------------------------------------
// Chunkings

/// Chunk boundaries chosen by two input bytes: `a` picks the largest chunk (1 to 2^11
/// bytes), `a` and `b` seed the generator of the chunk sizes.
#[derive(Debug, Clone)]
pub struct Chunking {
    state: u64,
    max: usize,
}

impl Chunking {
    /// Splits `data` into its two chunking bytes and the body (missing bytes read as 0).
    pub fn split(data: &[u8]) -> (Chunking, &[u8]) {
        let a = data.first().copied().unwrap_or(0);
        let b = data.get(1).copied().unwrap_or(0);
        let rest = data.get(2..).unwrap_or(&[]);
        let chunking = Chunking {
            state: 0x9E37_79B9_7F4A_7C15 ^ ((u64::from(a) << 8) | u64::from(b)),
            max: 1 << (a % 12),
        };
        (chunking, rest)
    }

    fn next_u64(&mut self) -> u64 {
        // splitmix64
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A chunk length, 1 to the largest.
    fn next_len(&mut self) -> usize {
        1 + (self.next_u64() % self.max as u64) as usize
    }

    /// `body` cut into chunks.
    pub fn chunks<'a>(&mut self, body: &'a [u8]) -> Vec<&'a [u8]> {
        let mut out = Vec::new();
        let mut rest = body;
        while !rest.is_empty() {
            let n = self.next_len().min(rest.len());
            let (chunk, tail) = rest.split_at(n);
            out.push(chunk);
            rest = tail;
        }
        out
    }

    /// `text` cut into fragments at character boundaries.
    pub fn str_chunks<'a>(&mut self, text: &'a str) -> Vec<&'a str> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut n = self.next_len().min(rest.len());
            while !rest.is_char_boundary(n) {
                n += 1;
            }
            let (chunk, tail) = rest.split_at(n);
            out.push(chunk);
            rest = tail;
        }
        out
    }
}

// ------------------------------------------------------------------------------------------
// SSE

/// An event as owned bytes: (`event:` field, data).
type Owned = (Vec<u8>, Vec<u8>);

/// The SSE decoder: chunking independence, `take_last_data`, and the documented rules.
pub fn sse(data: &[u8]) {
    use crate::providers::sse::SseDecoder;
    let (mut chunking, body) = Chunking::split(data);

    let mut whole = Vec::new();
    let mut sse = SseDecoder::new();
    sse.feed(body);
    sse.finish();
    while let Some(event) = sse.next_event() {
        whole.push((event.event_bytes().to_vec(), event.data().to_vec()));
    }
    assert_eq!(
        sse.pending_bytes(),
        0,
        "bytes left after the end of the body"
    );

    let mut pieces = Vec::new();
    let mut sse = SseDecoder::new();
    let chunks = chunking.chunks(body);
    let mut take = chunking.clone();
    for chunk in chunks {
        sse.feed(chunk);
        drain_sse(&mut sse, &mut take, &mut pieces);
    }
    sse.finish();
    drain_sse(&mut sse, &mut take, &mut pieces);
    assert_eq!(whole, pieces, "events depend on the chunk boundaries");
    assert_eq!(
        whole,
        reference_sse(body),
        "events differ from the documented rules"
    );
}

fn drain_sse(
    sse: &mut crate::providers::sse::SseDecoder,
    rng: &mut Chunking,
    out: &mut Vec<Owned>,
) {
    while let Some(event) = sse.next_event() {
        let owned = (event.event_bytes().to_vec(), event.data().to_vec());
        // Now and then, take the data out as the driver does for a large event.
        if rng.next_u64().is_multiple_of(4)
            && let Some(taken) = sse.take_last_data()
        {
            assert_eq!(taken, owned.1, "take_last_data gave other bytes");
        }
        out.push(owned);
    }
}

/// The decoder's rules (module docs of [`sse`](crate::providers::sse)) read directly over
/// the whole body: lines end in CRLF, LF or CR; `:` lines are comments; `data` lines are
/// joined with `\n`; the last `event` wins; one space after the colon is dropped; a blank
/// line, or the end of the body, dispatches an event that has a field.
fn reference_sse(body: &[u8]) -> Vec<Owned> {
    let mut out = Vec::new();
    let mut event: Option<Vec<u8>> = None;
    let mut data: Option<Vec<u8>> = None;
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'\n' => {
                lines.push(&body[start..i]);
                start = i + 1;
            }
            b'\r' => {
                lines.push(&body[start..i]);
                if body.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < body.len() {
        lines.push(&body[start..]);
    }
    let mut dispatch = |event: &mut Option<Vec<u8>>, data: &mut Option<Vec<u8>>| {
        if event.is_some() || data.is_some() {
            out.push((
                event.take().unwrap_or_default(),
                data.take().unwrap_or_default(),
            ));
        }
    };
    for line in lines {
        if line.is_empty() {
            dispatch(&mut event, &mut data);
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        let (name, value) = match line.iter().position(|&c| c == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => match &mut data {
                Some(d) => {
                    d.push(b'\n');
                    d.extend_from_slice(value);
                }
                None => data = Some(value.to_vec()),
            },
            b"event" => event = Some(value.to_vec()),
            _ => {}
        }
    }
    dispatch(&mut event, &mut data);
    out
}

// ------------------------------------------------------------------------------------------
// Provider decoders

/// A wire format whose decoder [`decoder`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Api {
    #[cfg(feature = "anthropic")]
    Anthropic,
    #[cfg(feature = "openai")]
    OpenAiCompletions,
    /// The Responses decoder; the low bit of the second chunking byte picks Codex's
    /// reading of the stream instead of the SDK's.
    #[cfg(feature = "openai")]
    OpenAiResponses,
    #[cfg(feature = "google")]
    Google,
    /// Bedrock's Converse stream: binary event-stream frames.
    #[cfg(feature = "bedrock")]
    Bedrock,
    #[cfg(feature = "mistral")]
    Mistral,
}

#[cfg(any(
    feature = "anthropic",
    feature = "openai",
    feature = "google",
    feature = "bedrock",
    feature = "mistral"
))]
#[cfg_attr(not(feature = "openai"), allow(unused_variables))]
fn wire(api: Api, codex: bool) -> crate::providers::http::replay::Wire {
    use crate::providers::http::replay::Wire;
    match api {
        #[cfg(feature = "anthropic")]
        Api::Anthropic => Wire::Anthropic,
        #[cfg(feature = "openai")]
        Api::OpenAiCompletions => Wire::OpenAiCompletions,
        #[cfg(feature = "openai")]
        Api::OpenAiResponses if codex => Wire::OpenAiCodexResponses,
        #[cfg(feature = "openai")]
        Api::OpenAiResponses => Wire::OpenAiResponses,
        #[cfg(feature = "google")]
        Api::Google => Wire::Google,
        #[cfg(feature = "bedrock")]
        Api::Bedrock => Wire::Bedrock,
        #[cfg(feature = "mistral")]
        Api::Mistral => Wire::Mistral,
    }
}

/// The events `api`'s decoder makes of `body` (in one chunk) for `model`, as the HTTP driver
/// hands them out after a successful response head (with timestamps 0): for a test that
/// this replay and the driver agree.
#[cfg(any(
    feature = "anthropic",
    feature = "openai",
    feature = "google",
    feature = "bedrock",
    feature = "mistral"
))]
pub fn replay(api: Api, model: &crate::Model, body: &[u8]) -> Vec<AssistantMessageEvent> {
    crate::providers::http::replay::replay_wire(wire(api, false), model, [body])
}

/// Feeds the body through `api`'s decoder in one chunk and in the chosen chunks: no panic,
/// `start` first, exactly one terminal event, last, and the same events either way.
#[cfg(any(
    feature = "anthropic",
    feature = "openai",
    feature = "google",
    feature = "bedrock",
    feature = "mistral"
))]
pub fn decoder(api: Api, data: &[u8]) {
    use crate::providers::http::replay::{replay_model, replay_wire};
    let (mut chunking, body) = Chunking::split(data);
    let wire = wire(api, data.get(1).is_some_and(|b| b & 1 == 1));
    let model = replay_model(wire);
    let mut whole = replay_wire(wire, &model, [body]);
    check_protocol(&whole);
    let mut pieces = replay_wire(wire, &model, chunking.chunks(body));
    check_protocol(&pieces);
    normalize_ids(&mut whole);
    normalize_ids(&mut pieces);
    if whole != pieces {
        let first = whole
            .iter()
            .zip(&pieces)
            .position(|(a, b)| a != b)
            .unwrap_or(whole.len().min(pieces.len()));
        panic!(
            "events depend on the chunk boundaries: {} vs {} events, first difference at {first}:\n{:?}\nvs\n{:?}",
            whole.len(),
            pieces.len(),
            whole.get(first),
            pieces.get(first)
        );
    }
}

#[cfg(any(
    feature = "anthropic",
    feature = "openai",
    feature = "google",
    feature = "bedrock",
    feature = "mistral"
))]
fn check_protocol(events: &[AssistantMessageEvent]) {
    assert!(
        matches!(events.first(), Some(AssistantMessageEvent::Start)),
        "the first event is not start"
    );
    let terminals = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminals, 1, "{terminals} terminal events");
    assert!(
        events
            .last()
            .is_some_and(AssistantMessageEvent::is_terminal),
        "the terminal event is not last"
    );
}

/// Renames tool-call ids to their order of first appearance: Gemini's synthesized ids hold
/// the clock and a process-wide counter, so two replays differ in them and nothing else.
#[cfg(any(
    feature = "anthropic",
    feature = "openai",
    feature = "google",
    feature = "bedrock",
    feature = "mistral"
))]
pub fn normalize_ids(events: &mut [AssistantMessageEvent]) {
    let mut seen: Vec<String> = Vec::new();
    let mut rename = |id: &mut String| {
        let n = match seen.iter().position(|s| s == id) {
            Some(n) => n,
            None => {
                seen.push(id.clone());
                seen.len() - 1
            }
        };
        *id = format!("#{n}");
    };
    let in_message = |message: &mut AssistantMessage, rename: &mut dyn FnMut(&mut String)| {
        for block in &mut message.content {
            if let AssistantContent::ToolCall(call) = block {
                rename(&mut call.id);
            }
        }
    };
    for event in events {
        match event {
            AssistantMessageEvent::ToolcallStart { id, .. } => rename(id),
            AssistantMessageEvent::ToolcallEnd { tool_call, .. } => rename(&mut tool_call.id),
            AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } => {
                in_message(message, &mut rename);
            }
            _ => {}
        }
    }
}

// ------------------------------------------------------------------------------------------
// Partial JSON

/// The partial-JSON parser fed the text (lossy UTF-8) in the chosen fragments.
pub fn partial_json(data: &[u8]) {
    use crate::llm::json::{PartialJsonParser, parse_streaming_json};
    let (mut chunking, body) = Chunking::split(data);
    let text = String::from_utf8_lossy(body);
    let fragments = chunking.str_chunks(&text);
    // Compare with a one-piece parse at a few points only, to stay linear.
    let every = fragments.len().div_ceil(8).max(1);
    let mut parser = PartialJsonParser::new();
    let mut target = Map::new();
    let mut so_far = 0;
    for (i, fragment) in fragments.iter().enumerate() {
        parser.push(fragment, &mut target);
        so_far += fragment.len();
        assert_eq!(parser.buffer(), &text[..so_far]);
        // An unfinished number longer than the parser shows keeps its last shown value
        // (documented, to stay linear): the one-piece parse may differ there.
        let long_number = text[..so_far]
            .bytes()
            .rev()
            .take_while(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .count()
            > 64;
        if (i % every == 0 || i + 1 == fragments.len()) && !long_number {
            let mut one = PartialJsonParser::new();
            let mut alone = Map::new();
            one.push(&text[..so_far], &mut alone);
            assert_eq!(
                target,
                alone,
                "fragments give another object than the text in one piece, after {:?}",
                &text[..so_far]
            );
        }
    }
    let streamed = parse_streaming_json(&text);
    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text) {
        assert_eq!(target, map, "a complete object parses otherwise than serde");
        assert_eq!(streamed, map);
    }
}

// ------------------------------------------------------------------------------------------
// Sessions

/// A scratch directory of this process and thread, emptied.
fn scratch() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "pi-engine-fuzz-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Writes `data` as a session file and opens it every way; see the module docs.
pub fn session_file(data: &[u8]) {
    use crate::session::SessionOptions;
    let dir = scratch();
    let path = dir.join("s.jsonl");
    std::fs::write(&path, data).expect("write the session file");
    let read_only = SessionOptions::new().read_only().with_cwd("/fuzz");
    let before = match read_only.open(&path) {
        Ok(sm) => {
            let entries = sm.entries();
            let context = sm.build_session_context();
            let _ = sm.tree();
            let _ = sm.branch_path(None);
            let _ = sm.leaf_entry();
            let ids: Vec<String> = sm.entry_ids().map(str::to_owned).collect();
            for id in &ids {
                let _ = sm.entry(id);
                let _ = sm.children(id);
                let _ = sm.label(id);
            }
            if let Ok((sm2, context2)) = read_only.open_with_context(&path) {
                if let Ok(context) = &context {
                    assert_eq!(
                        context, &context2,
                        "open_with_context differs from the two steps"
                    );
                }
                assert_eq!(sm2.entry_count(), ids.len());
            }
            entries.ok()
        }
        Err(_) => None,
    };
    // Appending migrates an old file and repairs a torn end; the file then reopens with the
    // same entries and the new one.
    let writer = SessionOptions::new().with_cwd("/fuzz");
    if let Ok(mut sm) = writer.open(&path) {
        let message = UserMessage::text("appended by the fuzzer");
        if let Ok(id) = sm.append_message(message.clone()) {
            let expected = sm.entries();
            drop(sm);
            let reopened = read_only.open(&path).expect("an appended file reopens");
            let entries = reopened.entries();
            // A file whose entries read before the append reads after it, the same plus one.
            if let Some(before) = &before {
                let expected = expected.as_ref().expect("the writer reads its entries");
                assert_eq!(
                    &expected[..expected.len() - 1],
                    &before[..],
                    "the append changed the entries before it"
                );
            }
            if let Ok(expected) = &expected {
                let entries = entries.as_ref().expect("an appended file reads as it did");
                assert_eq!(
                    entries, expected,
                    "the file reads otherwise than it was written"
                );
            }
            let last = reopened.entry(&id).expect("read").expect("the new entry");
            assert_eq!(
                last.as_message(),
                Some(&message.into()),
                "the appended message reads back otherwise"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Deepest nesting of the values [`session_roundtrip`] appends: any depth reads back (lines
/// are read without a nesting limit); the bound only keeps one input's recursion in the
/// fuzzer's own code (`depth`, `PartialEq`, drop) off the edge of a small stack.
const ROUNDTRIP_DEPTH: usize = 2_000;

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Appends messages made from the input (its text, and its JSON as tool-call arguments), reopens
/// the file, and checks each reads back equal.
pub fn session_roundtrip(data: &[u8]) {
    use crate::session::SessionOptions;
    let text = String::from_utf8_lossy(data).into_owned();
    let arguments = match serde_json::from_slice::<Value>(data) {
        Ok(Value::Object(map)) => map,
        Ok(other) => Map::from_iter([("value".to_owned(), other)]),
        Err(_) => Map::from_iter([("text".to_owned(), Value::String(text.clone()))]),
    };
    if depth(&Value::Object(arguments.clone())) > ROUNDTRIP_DEPTH {
        return;
    }
    let dir = scratch();
    let mut sm = SessionOptions::new().with_session_dir(&dir).create("/fuzz");
    let user = UserMessage::text(text.clone());
    let mut assistant = AssistantMessage::new("faux", "faux", "faux-1").with_content(vec![
        AssistantContent::text(text.clone()),
        AssistantContent::ToolCall(ToolCall::new(
            text.clone(),
            text.clone(),
            Value::Object(arguments),
        )),
    ]);
    assistant.timestamp = 1;
    let mut appended = Vec::new();
    for message in [AgentMessage::from(user), AgentMessage::from(assistant)] {
        let id = sm.append_message(message.clone()).expect("append");
        appended.push((id, message));
    }
    let name = sm.append_session_info(&text).expect("append a name");
    let path = sm.session_file().expect("a file").to_owned();
    drop(sm);
    let reopened = SessionOptions::new()
        .read_only()
        .open(&path)
        .expect("a written session reopens");
    for (id, message) in &appended {
        let entry = reopened
            .entry(id)
            .expect("read")
            .expect("the entry is there");
        assert_eq!(
            entry.as_message(),
            Some(message),
            "a message reads back otherwise"
        );
    }
    assert!(reopened.entry(&name).expect("read").is_some());
    reopened
        .build_session_context()
        .expect("a written session builds its context");
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------------------------------
// Tool arguments

/// Two JSON values from the input: the schema, then the arguments (missing or broken ones
/// read as `{}`). Validates every way; see the module docs.
pub fn tool_args(data: &[u8]) {
    use crate::llm::validation::{ToolValidator, validate_tool_arguments, validate_tool_call};
    let mut values = serde_json::Deserializer::from_slice(data).into_iter::<Value>();
    let schema = values
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let arguments = values
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let tool = Tool::new("t", "fuzzed", schema);
    let call = ToolCall::new("c", "t", arguments);
    let once = validate_tool_arguments(&tool, &call);
    let validator = ToolValidator::new(&tool);
    let compiled = validator.validate(&call);
    let _ = format!("{validator:?}");
    match (&once, &compiled) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "ToolValidator coerces otherwise"),
        (Err(a), Err(b)) => {
            assert_eq!(a.kind(), b.kind());
            assert_eq!(
                a.to_string(),
                b.to_string(),
                "ToolValidator reports otherwise"
            );
        }
        _ => {
            panic!("ToolValidator disagrees with validate_tool_arguments: {once:?} vs {compiled:?}")
        }
    }
    let by_name = validate_tool_call(std::slice::from_ref(&tool), &call);
    assert_eq!(by_name.is_ok(), once.is_ok());
}
