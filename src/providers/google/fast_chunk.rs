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

use crate::providers::json_scan::Cursor;

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
    // The candidate: `content` and maybe `index`.
    loop {
        match c.key()? {
            b"content" => {
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
            b"usageMetadata" => chunk.usage = Some(c.raw_object()?),
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
    let mut thought = false;
    loop {
        match c.key()? {
            b"text" if text.is_none() => text = Some(c.string()?),
            b"thought" if c.literal(b"true") => thought = true,
            b"thought" if c.literal(b"false") => {}
            _ => return None,
        }
        if !c.next(b'}')? {
            break;
        }
    }
    c.byte(b']')?;
    Some((text?, thought))
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
            b"",
        ] {
            assert_eq!(text_chunk(data, true), None, "{}", String::from_utf8_lossy(data));
        }
    }
}
