//! The AWS event-stream framing (`application/vnd.amazon.eventstream`) of Bedrock's
//! `ConverseStream` replies, decoded incrementally.
//!
//! A frame is a 12-byte prelude (total length, headers length, CRC-32 of those 8 bytes),
//! typed headers, the payload, and a CRC-32 of everything before it. [`EventStreamDecoder`]
//! takes the body's chunks as they arrive, however the frames are split across them, and
//! hands out whole frames as [`SseEvent`]s, the shape every provider decoder reads:
//!
//! | frame (`:message-type`) | event name | data |
//! |---|---|---|
//! | `event` | its `:event-type` (`contentBlockDelta`, …) | the payload |
//! | `exception` | its `:exception-type` (`throttlingException`, …) | the payload |
//! | `error` | `error` | `{"code": <:error-code>, "message": <:error-message>}` |
//!
//! It is written here rather than taken from `aws-smithy-eventstream` because that decoder
//! checks the prelude's CRC only once the whole frame has arrived, so a corrupt length of up
//! to 4 GiB is waited for and buffered; this one checks the prelude at its twelfth byte,
//! refuses frames beyond the service's 16 MiB limit, and hands the payload out borrowed from
//! its buffer instead of copying it. The two are checked against each other in the tests.

use std::fmt;

use crate::providers::sse::SseEvent;

/// Bytes of the prelude: total length, headers length, prelude CRC.
const PRELUDE: usize = 12;
/// Bytes of a frame around its headers and payload: the prelude and the message CRC.
const OVERHEAD: usize = PRELUDE + 4;
/// The largest frame the service sends (16 MiB of payload, 128 KiB of headers).
pub const MAX_FRAME: usize = 16 * 1024 * 1024 + 128 * 1024 + OVERHEAD;

/// Why an event stream could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventStreamError {
    /// The CRC of a frame's prelude does not match: the lengths cannot be trusted.
    PreludeChecksum,
    /// The CRC of a whole frame does not match.
    MessageChecksum,
    /// A length in the prelude is impossible (shorter than a frame, headers longer than the
    /// frame) or larger than [`MAX_FRAME`].
    BadLength(u32),
    /// A header is cut short or has an unknown value type.
    BadHeader,
    /// The body ended inside a frame.
    Truncated,
}

impl fmt::Display for EventStreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventStreamError::PreludeChecksum => f.write_str("frame prelude checksum mismatch"),
            EventStreamError::MessageChecksum => f.write_str("frame checksum mismatch"),
            EventStreamError::BadLength(n) => write!(f, "impossible frame length {n}"),
            EventStreamError::BadHeader => f.write_str("malformed frame header"),
            EventStreamError::Truncated => f.write_str("the body ended inside a frame"),
        }
    }
}

impl std::error::Error for EventStreamError {}

/// An incremental decoder of AWS event-stream frames.
///
/// ```
/// use pi_engine::providers::bedrock::eventstream::{EventStreamDecoder, encode_frame};
///
/// let frame = encode_frame(
///     &[(":message-type", "event"), (":event-type", "messageStart")],
///     br#"{"role":"assistant"}"#,
/// )?;
/// let mut decoder = EventStreamDecoder::new();
/// // Split anywhere: nothing comes out until the frame is whole.
/// decoder.feed(&frame[..5]);
/// assert!(decoder.next_event().is_none());
/// decoder.feed(&frame[5..]);
/// let event = decoder.next_event().unwrap();
/// assert_eq!(event.event(), "messageStart");
/// assert_eq!(event.data(), br#"{"role":"assistant"}"#);
/// # Ok::<(), pi_engine::providers::bedrock::eventstream::EventStreamError>(())
/// ```
#[derive(Debug, Default)]
pub struct EventStreamDecoder {
    buf: Vec<u8>,
    /// Start of the first byte not yet decoded.
    pos: usize,
    /// The data of the `error` frame last returned (made from its headers).
    data: Vec<u8>,
    finished: bool,
    error: Option<EventStreamError>,
}

/// What a frame's headers say, as ranges of the decoder's buffer.
#[derive(Default)]
struct Headers {
    message_type: Option<(usize, usize)>,
    event_type: Option<(usize, usize)>,
    exception_type: Option<(usize, usize)>,
    error_code: Option<(usize, usize)>,
    error_message: Option<(usize, usize)>,
}

impl EventStreamDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a chunk of the body (dropped once decoding has failed).
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.error.is_some() {
            return;
        }
        // Drop decoded bytes once they are at least half the buffer: each byte moves at
        // most once on average, so decoding stays linear.
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The body ended: bytes of an unfinished frame are then an error.
    pub fn finish(&mut self) {
        self.finished = true;
        if self.error.is_none() && self.pos < self.buf.len() {
            self.error = Some(EventStreamError::Truncated);
        }
    }

    /// Why decoding stopped, once it has.
    pub fn error(&self) -> Option<&EventStreamError> {
        self.error.as_ref()
    }

    /// The next whole frame, or `None` until more bytes arrive (or after an error).
    pub fn next_event(&mut self) -> Option<SseEvent<'_>> {
        if self.error.is_some() {
            return None;
        }
        match self.decode() {
            Ok(Some((name, data))) => {
                let name = match name {
                    Name::Buf(start, end) => &self.buf[start..end],
                    Name::Error => b"error".as_slice(),
                };
                let data = match data {
                    Some((start, end)) => &self.buf[start..end],
                    None => &self.data[..],
                };
                Some(SseEvent::new(name, data))
            }
            Ok(None) => None,
            Err(error) => {
                self.error = Some(error);
                None
            }
        }
    }

    /// Decodes the frame at `pos`, if it is whole; returns where its name and data are.
    fn decode(&mut self) -> Result<Option<Located>, EventStreamError> {
        loop {
            let frame = &self.buf[self.pos..];
            if frame.len() < PRELUDE {
                if self.finished && !frame.is_empty() {
                    return Err(EventStreamError::Truncated);
                }
                return Ok(None);
            }
            let total = be32(&frame[0..4]);
            let headers_len = be32(&frame[4..8]) as usize;
            if crc32(&frame[..8]) != be32(&frame[8..12]) {
                return Err(EventStreamError::PreludeChecksum);
            }
            let total_len = total as usize;
            if !(OVERHEAD..=MAX_FRAME).contains(&total_len) || headers_len > total_len - OVERHEAD {
                return Err(EventStreamError::BadLength(total));
            }
            if frame.len() < total_len {
                if self.finished {
                    return Err(EventStreamError::Truncated);
                }
                // Room for the rest of the frame at once, not by doubling.
                let missing = total_len - frame.len();
                self.buf.reserve(missing);
                return Ok(None);
            }
            let frame = &frame[..total_len];
            let crc = be32(&frame[total_len - 4..]);
            if crc32(&frame[..total_len - 4]) != crc {
                return Err(EventStreamError::MessageChecksum);
            }
            let start = self.pos;
            let headers = parse_headers(&frame[PRELUDE..PRELUDE + headers_len], start + PRELUDE)?;
            let payload = (start + PRELUDE + headers_len, start + total_len - 4);
            self.pos += total_len;
            let text = |r: (usize, usize)| &self.buf[r.0..r.1];
            let kind = headers.message_type.map(text).unwrap_or(b"event");
            match kind {
                b"event" => {
                    if let Some((s, e)) = headers.event_type {
                        return Ok(Some((Name::Buf(s, e), Some(payload))));
                    }
                }
                b"exception" => {
                    if let Some((s, e)) = headers.exception_type {
                        return Ok(Some((Name::Buf(s, e), Some(payload))));
                    }
                }
                b"error" => {
                    let code = headers.error_code.map(text).unwrap_or_default();
                    let message = headers.error_message.map(text).unwrap_or_default();
                    let json = serde_json::json!({
                        "code": String::from_utf8_lossy(code),
                        "message": String::from_utf8_lossy(message),
                    });
                    self.data = json.to_string().into_bytes();
                    return Ok(Some((Name::Error, None)));
                }
                // A frame of a kind this decoder does not know is skipped.
                _ => {}
            }
        }
    }
}

enum Name {
    Buf(usize, usize),
    Error,
}

/// Where a decoded frame's event name is, and its data (a range of the buffer, or `None`
/// for the decoder's own `data`).
type Located = (Name, Option<(usize, usize)>);

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Reads the headers this decoder needs; `base` is where `bytes` start in the buffer.
fn parse_headers(bytes: &[u8], base: usize) -> Result<Headers, EventStreamError> {
    let mut headers = Headers::default();
    let mut i = 0;
    let take = |i: &mut usize, n: usize| -> Result<(usize, usize), EventStreamError> {
        let end = i.checked_add(n).filter(|&e| e <= bytes.len());
        let end = end.ok_or(EventStreamError::BadHeader)?;
        let range = (*i, end);
        *i = end;
        Ok(range)
    };
    while i < bytes.len() {
        let name_len = bytes[i] as usize;
        i += 1;
        let (ns, ne) = take(&mut i, name_len)?;
        let (ts, _) = take(&mut i, 1)?;
        let value = match bytes[ts] {
            0 | 1 => None,
            2 => take(&mut i, 1).map(|_| None)?,
            3 => take(&mut i, 2).map(|_| None)?,
            4 => take(&mut i, 4).map(|_| None)?,
            5 | 8 => take(&mut i, 8).map(|_| None)?,
            9 => take(&mut i, 16).map(|_| None)?,
            6 | 7 => {
                let (ls, _) = take(&mut i, 2)?;
                let len = u16::from_be_bytes([bytes[ls], bytes[ls + 1]]) as usize;
                Some(take(&mut i, len)?)
            }
            _ => return Err(EventStreamError::BadHeader),
        };
        let Some((vs, ve)) = value else { continue };
        let slot = match &bytes[ns..ne] {
            b":message-type" => &mut headers.message_type,
            b":event-type" => &mut headers.event_type,
            b":exception-type" => &mut headers.exception_type,
            b":error-code" => &mut headers.error_code,
            b":error-message" => &mut headers.error_message,
            _ => continue,
        };
        *slot = Some((base + vs, base + ve));
    }
    Ok(headers)
}

/// Encodes one frame with string headers: what a server (or a test's mock of Bedrock)
/// sends. Headers are `(name, value)` pairs, e.g. `(":message-type", "event")`.
///
/// # Errors
///
/// [`EventStreamError::BadHeader`] for a header name longer than 255 bytes or a value longer
/// than 65,535 (the format cannot express them), [`EventStreamError::BadLength`] for a frame
/// larger than [`MAX_FRAME`].
pub fn encode_frame(headers: &[(&str, &str)], payload: &[u8]) -> Result<Vec<u8>, EventStreamError> {
    let mut head = Vec::new();
    for (name, value) in headers {
        let name_len = u8::try_from(name.len()).map_err(|_| EventStreamError::BadHeader)?;
        let value_len = u16::try_from(value.len()).map_err(|_| EventStreamError::BadHeader)?;
        head.push(name_len);
        head.extend_from_slice(name.as_bytes());
        head.push(7);
        head.extend_from_slice(&value_len.to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = OVERHEAD + head.len() + payload.len();
    let total_len = u32::try_from(total)
        .ok()
        .filter(|_| total <= MAX_FRAME)
        .ok_or(EventStreamError::BadLength(u32::MAX))?;
    let head_len = u32::try_from(head.len()).map_err(|_| EventStreamError::BadHeader)?;
    let mut frame = Vec::with_capacity(total);
    frame.extend_from_slice(&total_len.to_be_bytes());
    frame.extend_from_slice(&head_len.to_be_bytes());
    let prelude_crc = crc32(&frame);
    frame.extend_from_slice(&prelude_crc.to_be_bytes());
    frame.extend_from_slice(&head);
    frame.extend_from_slice(payload);
    let crc = crc32(&frame);
    frame.extend_from_slice(&crc.to_be_bytes());
    Ok(frame)
}

/// Encodes a Bedrock event frame: `:event-type` `event_type`, a JSON payload.
///
/// # Errors
///
/// As [`encode_frame`].
pub fn encode_event(event_type: &str, payload: &[u8]) -> Result<Vec<u8>, EventStreamError> {
    encode_frame(
        &[
            (":event-type", event_type),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload,
    )
}

/// Encodes a Bedrock exception frame: `:exception-type` `exception_type` (e.g.
/// `throttlingException`), a JSON payload such as `{"message": "…"}`.
///
/// # Errors
///
/// As [`encode_frame`].
pub fn encode_exception(exception_type: &str, payload: &[u8]) -> Result<Vec<u8>, EventStreamError> {
    encode_frame(
        &[
            (":exception-type", exception_type),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        payload,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_events(decoder: &mut EventStreamDecoder) -> Vec<(String, String)> {
        let mut out = Vec::new();
        while let Some(e) = decoder.next_event() {
            out.push((
                e.event().to_owned(),
                String::from_utf8_lossy(e.data()).into_owned(),
            ));
        }
        out
    }

    fn stream() -> Vec<u8> {
        let mut body = encode_event("messageStart", br#"{"role":"assistant"}"#).unwrap();
        body.extend(
            encode_event(
                "contentBlockDelta",
                br#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#,
            )
            .unwrap(),
        );
        body.extend(
            encode_exception("throttlingException", br#"{"message":"slow down"}"#).unwrap(),
        );
        body.extend(
            encode_frame(
                &[
                    (":message-type", "error"),
                    (":error-code", "InternalFailure"),
                    (":error-message", "boom"),
                ],
                b"",
            )
            .unwrap(),
        );
        body
    }

    #[test]
    fn frames_split_at_every_byte_decode_the_same() {
        let body = stream();
        let mut whole = EventStreamDecoder::new();
        whole.feed(&body);
        let expected = all_events(&mut whole);
        assert_eq!(expected.len(), 4);
        assert_eq!(expected[2].0, "throttlingException");
        assert_eq!(
            expected[3],
            (
                "error".into(),
                r#"{"code":"InternalFailure","message":"boom"}"#.into()
            )
        );
        let mut bytewise = EventStreamDecoder::new();
        let mut got = Vec::new();
        for b in &body {
            bytewise.feed(std::slice::from_ref(b));
            got.extend(all_events(&mut bytewise));
        }
        bytewise.finish();
        assert_eq!(got, expected);
        assert!(bytewise.error().is_none());
    }

    #[test]
    fn a_flipped_bit_is_a_checksum_error() {
        let body = stream();
        // In the payload of the first frame: the message CRC catches it.
        let mut bad = body.clone();
        bad[40] ^= 1;
        let mut d = EventStreamDecoder::new();
        d.feed(&bad);
        assert!(d.next_event().is_none());
        assert_eq!(d.error(), Some(&EventStreamError::MessageChecksum));
        // In the length: the prelude CRC catches it before anything is waited for.
        let mut bad = body;
        bad[1] ^= 0x40;
        let mut d = EventStreamDecoder::new();
        d.feed(&bad[..12]);
        assert!(d.next_event().is_none());
        assert_eq!(d.error(), Some(&EventStreamError::PreludeChecksum));
    }

    #[test]
    fn impossible_lengths_and_cut_frames() {
        let mut frame = Vec::new();
        frame.extend_from_slice(&(u32::MAX).to_be_bytes());
        frame.extend_from_slice(&0u32.to_be_bytes());
        let crc = crc32(&frame);
        frame.extend_from_slice(&crc.to_be_bytes());
        let mut d = EventStreamDecoder::new();
        d.feed(&frame);
        assert!(d.next_event().is_none());
        assert_eq!(d.error(), Some(&EventStreamError::BadLength(u32::MAX)));

        let body = stream();
        let mut d = EventStreamDecoder::new();
        d.feed(&body[..body.len() - 3]);
        assert_eq!(all_events(&mut d).len(), 3);
        d.finish();
        assert!(d.next_event().is_none());
        assert_eq!(d.error(), Some(&EventStreamError::Truncated));
    }

    #[test]
    fn a_truncated_header_is_an_error_not_a_panic() {
        // A string header claiming more bytes than the headers hold.
        let mut head = vec![3u8];
        head.extend_from_slice(b"abc");
        head.push(7);
        head.extend_from_slice(&500u16.to_be_bytes());
        let total = OVERHEAD + head.len();
        let mut frame = Vec::new();
        frame.extend_from_slice(&(total as u32).to_be_bytes());
        frame.extend_from_slice(&(head.len() as u32).to_be_bytes());
        let crc = crc32(&frame);
        frame.extend_from_slice(&crc.to_be_bytes());
        frame.extend_from_slice(&head);
        let crc = crc32(&frame);
        frame.extend_from_slice(&crc.to_be_bytes());
        let mut d = EventStreamDecoder::new();
        d.feed(&frame);
        assert!(d.next_event().is_none());
        assert_eq!(d.error(), Some(&EventStreamError::BadHeader));
    }

    #[test]
    fn agrees_with_the_aws_sdk_decoder() {
        use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder, write_message_to};
        use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
        // Frames written by the AWS SDK's encoder, with header types this decoder skips.
        let message = Message::new(&br#"{"contentBlockIndex":1,"delta":{"text":"x"}}"#[..])
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String("event".into()),
            ))
            .add_header(Header::new(
                ":event-type",
                HeaderValue::String("contentBlockDelta".into()),
            ))
            .add_header(Header::new("flag", HeaderValue::Bool(true)))
            .add_header(Header::new("n", HeaderValue::Int64(-7)))
            .add_header(Header::new("id", HeaderValue::Uuid(42)))
            .add_header(Header::new(
                "raw",
                HeaderValue::ByteArray(vec![1u8, 2, 3].into()),
            ));
        let mut bytes = Vec::new();
        write_message_to(&message, &mut bytes).unwrap();
        let mut ours = EventStreamDecoder::new();
        ours.feed(&bytes);
        let event = ours.next_event().unwrap();
        assert_eq!(event.event(), "contentBlockDelta");
        assert_eq!(event.data(), message.payload().as_ref());
        // And frames written by ours decode in the SDK.
        let frame = encode_event("messageStop", br#"{"stopReason":"end_turn"}"#).unwrap();
        let mut buf = bytes::Bytes::from(frame);
        let DecodedFrame::Complete(decoded) =
            MessageFrameDecoder::new().decode_frame(&mut buf).unwrap()
        else {
            panic!("incomplete")
        };
        assert_eq!(decoded.payload().as_ref(), br#"{"stopReason":"end_turn"}"#);
        assert!(
            decoded
                .headers()
                .iter()
                .any(|h| h.name().as_str() == ":event-type"
                    && h.value() == &HeaderValue::String("messageStop".into()))
        );
    }
}
