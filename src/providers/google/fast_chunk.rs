//! The common chunk read without serde: one candidate whose content is one text part
//! (thinking or not, no signature), with any of `index`, `usageMetadata`, `modelVersion`,
//! `responseId` and `createTime` around it, in any JSON layout (Google writes `"key": value`
//! with spaces, Vertex and proxies without). Anything else — a finish reason, a signature, a
//! function call, a second part or candidate, an unknown member — returns `None` and goes
//! through serde.
//!
//! A long reply is millions of such chunks, and serde's derived visitors spend most of their
//! time on members this decoder does not read (the perf harness's `text-large` is 3.78 M
//! such chunks).

use std::borrow::Cow;

use crate::providers::json_scan::{Cursor, Seen};

/// What the fast path reads from a text chunk.
#[derive(Debug, PartialEq)]
pub(super) struct TextChunk<'a> {
    pub(super) text: Cow<'a, str>,
    pub(super) thought: bool,
    pub(super) response_id: Option<&'a str>,
    /// The raw `usageMetadata` object, read only when needed.
    pub(super) usage: Option<&'a [u8]>,
}

/// Reads `data` if it is a plain text chunk; `want_id`: read `responseId` (else skip it).
pub(super) fn text_chunk(data: &[u8], want_id: bool) -> Option<TextChunk<'_>> {
    let mut c = Cursor::new(data);
    c.byte(b'{')?;
    if c.key()? != b"candidates" {
        return None;
    }
    c.byte(b'[')?;
    c.byte(b'{')?;
    let mut part = None;
    // Members serde reads refuse a second one (a repeated field is a serde error): so does
    // this path.
    let mut seen = Seen::default();
    // The candidate: `content` and maybe `index`.
    loop {
        match c.key()? {
            b"content" => {
                seen.first(0)?;
                c.byte(b'{')?;
                loop {
                    match c.key()? {
                        b"parts" if part.is_none() => part = Some(single_text_part(&mut c)?),
                        b"role" => c.skip_string()?,
                        _ => return None,
                    }
                    if !c.next(b'}')? {
                        break;
                    }
                }
            }
            b"index" => {
                c.integer()?;
            }
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    c.byte(b']')?;
    let (text, thought) = part?;
    let mut chunk = TextChunk {
        text,
        thought,
        response_id: None,
        usage: None,
    };
    while c.next(b'}')? {
        match c.key()? {
            b"usageMetadata" => {
                seen.first(1)?;
                chunk.usage = Some(c.raw_object()?);
            }
            b"responseId" if seen.first(2).is_none() => return None,
            // Only the first one is kept: later ones are skipped unread.
            b"responseId" if want_id => chunk.response_id = Some(c.plain_string()?),
            b"responseId" => c.skip_string()?,
            b"modelVersion" | b"createTime" => c.skip_string()?,
            _ => return None,
        }
    }
    c.at_end().then_some(chunk)
}

/// `[{"text": "…"(, "thought": true|false)?}]`, members in any order.
fn single_text_part<'a>(c: &mut Cursor<'a>) -> Option<(Cow<'a, str>, bool)> {
    c.byte(b'[')?;
    c.byte(b'{')?;
    let mut text = None;
    let mut thought = None;
    loop {
        match c.key()? {
            b"text" if text.is_none() => text = Some(c.string()?),
            b"thought" if thought.is_none() && c.literal(b"true") => thought = Some(true),
            b"thought" if thought.is_none() && c.literal(b"false") => thought = Some(false),
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    c.byte(b']')?;
    Some((text?, thought.unwrap_or(false)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(
        text: &str,
        thought: bool,
        id: Option<&str>,
        usage: Option<&str>,
    ) -> TextChunk<'static> {
        TextChunk {
            text: Cow::Owned(text.to_owned()),
            thought,
            response_id: id.map(|s| Box::leak(s.to_owned().into_boxed_str()) as &str),
            usage: usage.map(|u| Box::leak(u.as_bytes().to_vec().into_boxed_slice()) as &[u8]),
        }
    }

    #[test]
    fn reads_the_layouts_google_and_vertex_write() {
        let compact = br#"{"candidates":[{"content":{"parts":[{"text":" hashmap"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"perf1"}"#;
        assert_eq!(
            text_chunk(compact, true),
            Some(chunk(" hashmap", false, Some("perf1"), None))
        );
        // Once the id is known, later ones are not read.
        assert_eq!(text_chunk(compact, false).unwrap().response_id, None);
        let spaced = br#"{"candidates": [{"content": {"parts": [{"text": "Hel\"lo\n"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 4,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 4}],"totalTokenCount": 4},"modelVersion": "gemini-2.0-flash"}"#;
        assert_eq!(
            text_chunk(spaced, true),
            Some(chunk(
                "Hel\"lo\n",
                false,
                None,
                Some(
                    r#"{"promptTokenCount": 4,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 4}],"totalTokenCount": 4}"#
                )
            ))
        );
        let vertex = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"**Plan**","thought":true}]}}],"usageMetadata":{"trafficType":"ON_DEMAND"},"modelVersion":"gemini-3-flash-preview","createTime":"2026-05-04T20:01:02.264968Z","responseId":"_vr4a"}"#;
        assert_eq!(
            text_chunk(vertex, true),
            Some(chunk(
                "**Plan**",
                true,
                Some("_vr4a"),
                Some(r#"{"trafficType":"ON_DEMAND"}"#)
            ))
        );
        assert_eq!(
            text_chunk("{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"caf\u{e9} \u{1f648}\"}]}}]}\r\n".as_bytes(), true),
            Some(chunk("caf\u{e9} \u{1f648}", false, None, None))
        );
    }

    #[test]
    fn anything_else_goes_to_serde() {
        for data in [
            // A finish reason, a signature, a call, two parts, two candidates.
            &br#"{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}]}"#[..],
            br#"{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"c2ln"}]}}]}"#,
            br#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]}}]}"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"a"},{"text":"b"}]}}]}"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"a"}]}},{"content":{"parts":[{"text":"b"}]}}]}"#,
            // Other members, other orders, broken text.
            br#"{"responseId":"r","candidates":[{"content":{"parts":[{"text":"a"}]}}]}"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"promptFeedback":{}}"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"error":{}}"#,
            br#"{"candidates":[{"content":{"parts":[{"thought":true}]}}]}"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}]} x"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}]"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"bad \x escape"}]}}]}"#,
            b"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\xff\"}]}}]}",
            b"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"raw\nnewline\"}]}}]}",
            br#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"usageMetadata":{"x":[}"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"usageMetadata":{"x":[}]}"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"ends in \"#,
            // A member serde reads, twice (serde: "duplicate field").
            br#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"usageMetadata":{},"usageMetadata":{}}"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"responseId":"r","responseId":"s"}"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"a","thought":true,"thought":false}]}}]}"#,
            br#"{"candidates":[{"content":{"parts":[{"text":"a"}]},"content":{"role":"model"}}]}"#,
            b"",
        ] {
            assert_eq!(text_chunk(data, true), None, "{}", String::from_utf8_lossy(data));
        }
    }
}

/// The fast path against serde on generated streams: text chunks in the layouts Google,
/// Vertex and proxies write (members in any order, spaced or not, escapes and non-ASCII
/// text, usage, ids), mixed with chunks the fast path must refuse (a signature, a call, two
/// parts, a finish reason). Each stream is decoded as it is and with every chunk padded with
/// a member the fast path does not know (so serde reads every chunk): the events and the
/// final message are the same.
#[cfg(test)]
mod props {
    use super::text_chunk;
    use crate::llm::event::AssistantMessageEvent;
    use crate::llm::model::{Model, ModelCost};
    use crate::providers::http::replay::{Wire, replay_wire};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// A JSON string literal for `text`, sometimes with escapes serde would not write
    /// (`\/`, `\u00e9`, a surrogate pair).
    fn quoted(text: &str, odd_escapes: bool) -> String {
        let q = serde_json::to_string(text).unwrap();
        if odd_escapes {
            q.replace('/', "\\/")
                .replace('\u{e9}', "\\u00e9")
                .replace('\u{1f648}', "\\ud83d\\ude48")
        } else {
            q
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z .,]{0,12}",
            "\\PC{0,8}",
            Just("a \"q\" \\ / \n\t \u{1} caf\u{e9} \u{1f648}".to_owned()),
            Just(String::new()),
        ]
    }

    #[derive(Debug, Clone)]
    struct TextChunkSpec {
        text: String,
        odd_escapes: bool,
        thought: Option<bool>,
        thought_first: bool,
        role: Option<bool>,
        index: bool,
        usage: Option<(u64, u64)>,
        trailing: Vec<u8>,
        response_id: u8,
        spaced: bool,
    }

    fn text_spec() -> impl Strategy<Value = TextChunkSpec> {
        (
            (
                text(),
                any::<bool>(),
                prop::option::of(any::<bool>()),
                any::<bool>(),
            ),
            (prop::option::of(any::<bool>()), any::<bool>()),
            prop::option::of((0u64..100_000, 0u64..100_000)),
            prop::collection::vec(0u8..4, 0..4),
            (0u8..3, any::<bool>()),
        )
            .prop_map(
                |(
                    (text, odd_escapes, thought, thought_first),
                    (role, index),
                    usage,
                    trailing,
                    (response_id, spaced),
                )| {
                    TextChunkSpec {
                        text,
                        odd_escapes,
                        thought,
                        thought_first,
                        role,
                        index,
                        usage,
                        trailing,
                        response_id,
                        spaced,
                    }
                },
            )
    }

    /// A text chunk the fast path reads.
    fn text_line(s: &TextChunkSpec) -> String {
        let (colon, comma) = if s.spaced { (": ", ", ") } else { (":", ",") };
        let mut part = vec![format!("\"text\"{colon}{}", quoted(&s.text, s.odd_escapes))];
        if let Some(t) = s.thought {
            part.push(format!("\"thought\"{colon}{t}"));
            if s.thought_first {
                part.reverse();
            }
        }
        let parts = format!("\"parts\"{colon}[{{{}}}]", part.join(comma));
        let content = match s.role {
            None => format!("{{{parts}}}"),
            Some(true) => format!("{{\"role\"{colon}\"model\"{comma}{parts}}}"),
            Some(false) => format!("{{{parts}{comma}\"role\"{colon}\"model\"}}"),
        };
        let mut candidate = format!("\"content\"{colon}{content}");
        if s.index {
            candidate.push_str(&format!("{comma}\"index\"{colon}0"));
        }
        let mut members = vec![format!("\"candidates\"{colon}[{{{candidate}}}]")];
        let mut trailing = s.trailing.clone();
        trailing.dedup();
        let mut seen = [false; 4];
        trailing.retain(|&t| !std::mem::replace(&mut seen[usize::from(t)], true));
        for t in &trailing {
            members.push(match t {
                0 => match s.usage {
                    Some((p, c)) => format!(
                        "\"usageMetadata\"{colon}{{\"promptTokenCount\"{colon}{p}{comma}\"candidatesTokenCount\"{colon}{c}{comma}\"totalTokenCount\"{colon}{}}}",
                        p + c
                    ),
                    None => format!("\"usageMetadata\"{colon}{{}}"),
                },
                1 => format!("\"modelVersion\"{colon}\"gemini-2.5-flash\""),
                2 => format!("\"responseId\"{colon}\"resp_{}\"", s.response_id),
                _ => format!("\"createTime\"{colon}\"2026-05-04T20:01:02.264968Z\""),
            });
        }
        format!("{{{}}}", members.join(comma))
    }

    /// A chunk the fast path refuses.
    fn other_line() -> impl Strategy<Value = String> {
        prop_oneof![
            text().prop_map(|t| json!({"candidates": [{"content": {"parts": [{"text": t, "thoughtSignature": "c2ln"}], "role": "model"}}]}).to_string()),
            text().prop_map(|t| json!({"candidates": [{"content": {"parts": [{"text": t}, {"text": "b"}], "role": "model"}}]}).to_string()),
            Just(json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "read", "args": {"path": "a"}}}], "role": "model"}}]}).to_string()),
            text().prop_map(|t| json!({"responseId": "first", "candidates": [{"content": {"parts": [{"text": t}]}}]}).to_string()),
        ]
    }

    fn line() -> impl Strategy<Value = (String, bool)> {
        prop_oneof![
            3 => text_spec().prop_map(|s| (text_line(&s), true)),
            1 => other_line().prop_map(|l| (l, false)),
            // A member serde reads, twice: serde refuses the chunk, so must the fast path.
            1 => (text_spec(), any::<bool>()).prop_map(|(mut s, usage)| {
                let (t, dup) = if usage { (0, r#","usageMetadata":{}"#) } else { (2, r#","responseId":"dup""#) };
                s.trailing.push(t);
                let mut line = text_line(&s);
                line.insert_str(line.len() - 1, dup);
                (line, false)
            }),
        ]
    }

    fn decode(lines: &[String]) -> Vec<AssistantMessageEvent> {
        let model = Model::new("gemini-2.5-flash", "google-generative-ai", "google", "")
            .with_cost(ModelCost::new(0.3, 2.5, 0.03, 0.0));
        let body: String = lines.iter().map(|l| format!("data: {l}\r\n\r\n")).collect();
        let mut events = replay_wire(Wire::Google, &model, [body.as_bytes()]);
        crate::__fuzz::normalize_ids(&mut events);
        events
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn fast_chunks_decode_as_serde_decodes_them(
            chunks in prop::collection::vec(line(), 1..8),
            finish in prop_oneof![Just("STOP"), Just("MAX_TOKENS")],
        ) {
            let mut lines: Vec<String> = Vec::new();
            for (line, fast) in &chunks {
                // Each generated text chunk takes the fast path, each other chunk does not.
                prop_assert_eq!(text_chunk(line.as_bytes(), true).is_some(), *fast, "{}", line);
                lines.push(line.clone());
            }
            lines.push(json!({
                "candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": finish}],
                "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}
            }).to_string());
            let padded: Vec<String> = lines.iter().map(|l| l.replacen('{', r#"{"x_pad":0,"#, 1)).collect();
            prop_assert!(padded.iter().all(|l| text_chunk(l.as_bytes(), true).is_none()));
            let fast = decode(&lines);
            let slow = decode(&padded);
            // A chunk serde refuses fails the stream in both; the message quotes the chunk (and
            // its position), which the padding changed.
            let as_json = |events: &[AssistantMessageEvent]| -> Vec<Value> {
                let mut events: Vec<Value> = events.iter().map(|e| serde_json::to_value(e).unwrap()).collect();
                for e in &mut events {
                    if let Some(Value::String(m)) = e.pointer_mut("/error/errorMessage") {
                        m.truncate(m.find(" at line ").unwrap_or(m.len()));
                    }
                }
                events
            };
            prop_assert_eq!(as_json(&fast), as_json(&slow));
            // The stream ends well unless a chunk serde refuses is in it.
            let refused = lines.iter().any(|l| serde_json::from_str::<Value>(l).is_ok() && (l.matches("usageMetadata").count() > 1 || l.matches("responseId").count() > 1));
            prop_assert_eq!(matches!(fast.last(), Some(AssistantMessageEvent::Done { .. })), !refused, "{:?}", fast.last());
        }
    }
}
