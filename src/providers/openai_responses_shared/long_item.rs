//! The long-item path: the `output_item.done` of a long message repeats the whole reply;
//! its text is found without copying it and unescaped in place.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::decode::{Current, Dialect, ResponsesDecoder, WireEvent, truthy};

/// An `output_item.done` event with a message item, read with its text left raw (the
/// same members and types as [`WireItem`], so that it accepts what that accepts).
#[derive(Debug, Deserialize)]
struct WireLongItem<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    #[allow(dead_code)]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    #[allow(dead_code)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    #[allow(dead_code)]
    arguments: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    phase: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<Vec<WireLongPart<'a>>>,
    #[serde(default)]
    #[allow(dead_code)]
    summary: Option<Vec<serde::de::IgnoredAny>>,
}

#[derive(Debug, Deserialize)]
struct WireLongPart<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<&'a RawValue>,
    #[serde(default, borrow)]
    #[allow(dead_code)]
    refusal: Option<Cow<'a, str>>,
}

/// Where the text of a long message item is in its event, and what its signature needs.
#[derive(Debug)]
pub(super) struct LongText {
    /// The quoted JSON string.
    pub(super) quoted: std::ops::Range<usize>,
    pub(super) id: Option<String>,
    pub(super) phase: Option<String>,
}

impl ResponsesDecoder {
    /// The text of `data` if it is the `output_item.done` of the open message item with one
    /// text part, as [`on_event`](Decoder::on_event) would read it; `None` for anything
    /// else.
    pub(super) fn long_message_text(&self, name: &[u8], data: &[u8]) -> Option<LongText> {
        if self.done_marker
            || (self.dialect == Dialect::Sdk && name.starts_with(b"thread."))
            || data.trim_ascii_start().first() != Some(&b'{')
            || !matches!(self.current, Current::Message { open: true, .. })
        {
            return None;
        }
        let event: WireEvent<'_> = serde_json::from_slice(data).ok()?;
        if event.kind.as_deref() != Some("response.output_item.done")
            || (self.dialect == Dialect::Sdk && event.error.is_some_and(truthy))
        {
            return None;
        }
        let item: WireLongItem<'_> = serde_json::from_str(event.item?.get()).ok()?;
        let [part] = item.content.as_deref()? else {
            return None;
        };
        if item.kind.as_deref() != Some("message")
            || part.kind.as_deref() != Some("output_text")
            || self.is_other_item(event.output_index())
        {
            return None;
        }
        let raw = part.text?.get().as_bytes();
        if raw.first() != Some(&b'"') {
            return None;
        }
        let start = (raw.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
        Some(LongText {
            quoted: start..start + raw.len(),
            id: item.id.map(Cow::into_owned),
            phase: item.phase.map(Cow::into_owned),
        })
    }
}

/// Unescapes the JSON string at `quoted` in `data` in place and makes `data` that text,
/// without a copy. `None` (and `data` untouched) when it holds an escape this does not
/// write (a UTF-16 surrogate): serde reads those. Once writing starts it cannot fail. `data` must be valid UTF-8 and the
/// string valid JSON (serde checked both when it found the string).
pub(super) fn unescape_in_place(
    data: &mut Vec<u8>,
    quoted: std::ops::Range<usize>,
) -> Option<String> {
    let hex = |digits: &[u8]| {
        digits.iter().try_fold(0u32, |n, &d| {
            let v = char::from(d).to_digit(16)?;
            Some(n * 16 + v)
        })
    };
    let body = quoted.start + 1..quoted.end.checked_sub(1)?;
    // Check every escape first, so that nothing is written unless all of it can be.
    let mut i = body.start;
    while let Some(k) = memchr::memchr(b'\\', data.get(i..body.end)?) {
        let at = i + k;
        match *data.get(at + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i = at + 2,
            b'u' => {
                let code = hex(data.get(at + 2..at + 6)?)?;
                if (0xD800..0xE000).contains(&code) {
                    return None;
                }
                i = at + 6;
            }
            _ => return None,
        }
    }
    // Write the text over the string, from its opening quote: it only gets shorter.
    let (mut read, mut write) = (body.start, quoted.start);
    loop {
        let next = memchr::memchr(b'\\', &data[read..body.end]).map_or(body.end, |k| read + k);
        data.copy_within(read..next, write);
        write += next - read;
        if next == body.end {
            break;
        }
        let mut utf8 = [0u8; 4];
        let (bytes, len): (&[u8], usize) = match data[next + 1] {
            b'u' => {
                // Checked above: four hex digits, not a surrogate.
                let c = hex(&data[next + 2..next + 6])
                    .and_then(char::from_u32)
                    .unwrap_or(char::REPLACEMENT_CHARACTER);
                (c.encode_utf8(&mut utf8).as_bytes(), 6)
            }
            e => (
                match e {
                    b'b' => b"\x08",
                    b'f' => b"\x0c",
                    b'n' => b"\n",
                    b'r' => b"\r",
                    b't' => b"\t",
                    b'"' => b"\"",
                    b'/' => b"/",
                    _ => b"\\",
                },
                2,
            ),
        };
        data[write..write + bytes.len()].copy_from_slice(bytes);
        write += bytes.len();
        read = next + len;
    }
    data.truncate(write);
    data.drain(..quoted.start);
    // The buffer grew by doubling while the event arrived: give back what the text does
    // not use (the message holds the same text; the peak is the two of them).
    data.shrink_to_fit();
    // Valid: UTF-8 text with escapes turned into whole characters.
    Some(
        String::from_utf8(std::mem::take(data))
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::AssistantMessage;
    use crate::providers::http::Decoder;
    use crate::providers::http::Emit;
    use crate::providers::sse::SseEvent;
    use serde_json::Value;

    use crate::providers::openai_responses_shared::responses_model;
    use crate::providers::openai_responses_shared::{ResponsesDecoder, TierPricing};

    #[test]
    fn unescape_in_place_agrees_with_serde() {
        for text in [
            r#""""#,
            r#""plain""#,
            r#""a \"q\" \\ \/ \b\f\n\r\t \u00e9\u0041 \u20ac end""#,
            "\"caf\u{e9} \u{1f648} \\n\"",
            r#""\\\\\"""#,
        ] {
            let want: String = serde_json::from_str(text).unwrap();
            let mut data = format!("{{\"text\":{text},\"x\":1}}").into_bytes();
            let start = 8;
            let got = unescape_in_place(&mut data, start..start + text.len());
            assert_eq!(got.as_deref(), Some(want.as_str()), "{text}");
        }
        // A surrogate pair is left to serde, and nothing is written.
        let mut data = br#"{"text":"a \n \ud83d\ude48"}"#.to_vec();
        let before = data.clone();
        let end = data.len() - 1;
        assert_eq!(unescape_in_place(&mut data, 8..end), None);
        assert_eq!(data, before);
    }

    /// Decodes `lines` (one `data:` payload each); with `large`, every event is handed over
    /// as a long one (as the driver does for events of at least `LARGE_EVENT` bytes).
    fn decode_responses(lines: &[String], large: bool) -> (Vec<Value>, Value) {
        use crate::llm::event::PartialMessage;
        use std::collections::VecDeque;

        let model = responses_model("openai", "gpt-5");
        let mut decoder = ResponsesDecoder::new(&model, TierPricing::None);
        let mut state =
            PartialMessage::new(AssistantMessage::new("openai-responses", "openai", "gpt-5"));
        let mut events = Vec::new();
        for line in lines {
            let mut queue = VecDeque::new();
            let mut out = Emit::new(&mut queue, &state);
            let name = b"response.event";
            let result = if large {
                decoder.on_large_event(name, line.as_bytes().to_vec(), &mut out)
            } else {
                decoder.on_event(SseEvent::new(name, line.as_bytes()), &mut out)
            };
            if let Err(error) = result {
                events.push(Value::String(error.message().to_owned()));
            }
            for e in queue {
                state.apply(&e);
                events.push(serde_json::to_value(&e).unwrap());
            }
        }
        let mut message = state.message().clone();
        decoder.finish(&mut message);
        let mut message = serde_json::to_value(&message).unwrap();
        message["timestamp"] = Value::Null; // differs between runs
        (events, message)
    }

    #[test]
    fn long_events_read_as_any_event() {
        let start = [
            r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}"#,
            r#"{"type":"response.content_part.added","item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}"#,
            r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}"#,
        ];
        let completed = r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}}"#;
        let done = |item: &str| {
            format!(r#"{{"type":"response.output_item.done","output_index":0,"item":{item}}}"#)
        };
        let endings = [
            // Unescaped in place: the message's text differs from the deltas, it wins.
            done(
                r#"{"id":"msg_1","type":"message","status":"completed","phase":"final_answer","content":[{"type":"output_text","annotations":[],"text":"Hi \"there\"\n\u00e9"}],"role":"assistant"}"#,
            ),
            // Read by serde: a surrogate pair, two parts, a refusal, bad member types,
            // another item, an error member, broken JSON.
            done(
                r#"{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"\ud83d\ude48"}]}"#,
            ),
            done(
                r#"{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"a"},{"type":"output_text","text":"b"}]}"#,
            ),
            done(
                r#"{"id":"msg_1","type":"message","content":[{"type":"refusal","refusal":"no"}]}"#,
            ),
            done(r#"{"id":"msg_1","type":"message","name":5,"content":[{"type":"output_text","text":"x"}]}"#),
            done(r#"{"id":"msg_1","type":"message","content":[{"type":"output_text","text":5}]}"#),
            done(r#"{"id":"msg_1","type":"message","content":[{"type":"output_text","text":null}]}"#),
            done(r#"{"id":"fc_1","type":"function_call","call_id":"c","name":"f","arguments":"{}"}"#),
            r#"{"type":"response.output_item.done","error":{"message":"boom"},"item":{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"x"}]}}"#.to_owned(),
            r#"{"type":"response.output_item.done","item":{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"x"}]"#.to_owned(),
            "[DONE]".to_owned(),
        ];
        for ending in &endings {
            let lines: Vec<String> = start
                .iter()
                .map(|l| (*l).to_owned())
                .chain([ending.clone(), completed.to_owned()])
                .collect();
            let (large_events, large_message) = decode_responses(&lines, true);
            let (events, message) = decode_responses(&lines, false);
            assert_eq!(large_events, events, "{ending}");
            assert_eq!(large_message, message, "{ending}");
        }
        let lines: Vec<String> = start
            .iter()
            .map(|l| (*l).to_owned())
            .chain([endings_first(), completed.to_owned()])
            .collect();
        // The first ending is the one read in place; the others are not (the surrogate
        // pair is found, then left to serde).
        let mut decoder =
            ResponsesDecoder::new(&responses_model("openai", "gpt-5"), TierPricing::None);
        let state = crate::llm::event::PartialMessage::new(AssistantMessage::new("a", "p", "m"));
        for line in start {
            let mut queue = std::collections::VecDeque::new();
            decoder
                .on_event(
                    SseEvent::new(b"", line.as_bytes()),
                    &mut Emit::new(&mut queue, &state),
                )
                .unwrap();
        }
        let found: Vec<bool> = endings
            .iter()
            .map(|e| decoder.long_message_text(b"", e.as_bytes()).is_some())
            .collect();
        assert_eq!(found[..3], [true, true, false]);
        // Only that event is handed over (a long `response.completed` is read in place).
        assert!(decoder.wants_large_event(b"response.output_item.done"));
        assert!(!decoder.wants_large_event(b"response.completed"));
        assert!(found[3..].iter().all(|f| !f));
        let (_, message) = decode_responses(&lines, true);
        assert_eq!(message["content"][0]["text"], "Hi \"there\"\n\u{e9}");
        assert_eq!(
            message["content"][0]["textSignature"],
            r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#
        );
    }

    fn endings_first() -> String {
        r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","phase":"final_answer","content":[{"type":"output_text","annotations":[],"text":"Hi \"there\"\n\u00e9"}],"role":"assistant"}}"#.to_owned()
    }
}

/// The in-place unescaper against serde on generated JSON strings: every escape JSON has
/// (those serde writes and those it only reads: `\/`, `\u00e9`, upper-case hex, surrogate
/// pairs), control characters, non-ASCII text, inside an event with members around it.
#[cfg(test)]
mod props {
    use super::unescape_in_place;
    use proptest::prelude::*;

    /// A piece of a JSON string's inside (valid JSON).
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "\\PC{0,6}".prop_map(|s| {
                let q = serde_json::to_string(&s).unwrap();
                q[1..q.len() - 1].to_owned()
            }),
            1 => Just("\\/".to_owned()),
            1 => Just("\\u00e9".to_owned()),
            1 => Just("\\u00E9\\u20AC".to_owned()),
            1 => Just("\\u0000\\u001f".to_owned()),
            1 => Just("\\uffff".to_owned()),
            1 => Just("\\b\\f\\n\\r\\t\\\"\\\\".to_owned()),
            1 => Just("\\ud83d\\ude48".to_owned()),
            // Any code point of the Basic Multilingual Plane but a lone surrogate (not JSON).
            1 => (0u32..0x10000)
                .prop_filter("not a surrogate", |c| !(0xD800..0xE000).contains(c))
                .prop_map(|c| format!("\\u{c:04x}")),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn unescapes_as_serde_does(pieces in prop::collection::vec(piece(), 0..12), before in "[a-z]{0,3}") {
            let quoted = format!("\"{}\"", pieces.concat());
            let want: String = serde_json::from_str(&quoted).unwrap();
            let mut data = format!("{{\"{before}\":1,\"text\":{quoted},\"x\":[1]}}").into_bytes();
            let start = before.len() + 13;
            prop_assert_eq!(&data[start..start + quoted.len()], quoted.as_bytes());
            let original = data.clone();
            match unescape_in_place(&mut data, start..start + quoted.len()) {
                Some(text) => prop_assert_eq!(text, want),
                None => {
                    // Refused only for a UTF-16 surrogate escape, and nothing was written.
                    prop_assert_eq!(&data, &original);
                    let lower = quoted.to_ascii_lowercase();
                    prop_assert!(lower.contains("\\ud8") || lower.contains("\\ud9") || lower.contains("\\uda")
                        || lower.contains("\\udb") || lower.contains("\\udc") || lower.contains("\\udd")
                        || lower.contains("\\ude") || lower.contains("\\udf"), "{}", quoted);
                }
            }
        }
    }
}
