//! Server-sent events: a zero-copy, incremental decoder of `text/event-stream` bodies.
//!
//! Feed the body's network chunks to [`SseDecoder::feed`] as they arrive and take complete
//! events with [`SseDecoder::next_event`]; call [`SseDecoder::finish`] at the end of the body
//! to flush an event that was not followed by a blank line. The decoder follows the
//! [WHATWG algorithm](https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)
//! where it matters to model APIs:
//!
//! * lines end in CRLF, LF or a lone CR, including a CRLF split across two chunks;
//! * `:` lines are comments (keep-alive pings) and are skipped;
//! * several `data:` lines of one event are joined with `\n`;
//! * `event:` names the event; `id:` and `retry:` are ignored (model calls never reconnect);
//! * a single space after the colon is removed;
//! * bytes are kept as bytes until an event is complete, so a UTF-8 character split across
//!   chunks arrives whole.
//!
//! * an event (with its pending line) larger than [`SseDecoder::max_event_size`] (32 MiB by
//!   default) is refused: the decoder drops what it holds, takes no more, and reports
//!   [`SseError::EventTooLarge`], so a body of one endless line cannot take all memory.
//!
//! The common event (one `data:` line, optionally an `event:` line) is returned as slices of
//! the decoder's buffer, without a copy. Work is linear in the input: every byte is scanned
//! once with `memchr`, and consumed bytes are dropped from the buffer in amortized O(1).
//!
//! ```
//! use pi_engine::providers::sse::SseDecoder;
//!
//! let mut sse = SseDecoder::new();
//! sse.feed(b"event: ping\r\ndata: {}\r\n\r\n: keep-alive\n\ndata: hel");
//! let ev = sse.next_event().unwrap();
//! assert_eq!(ev.event(), "ping");
//! assert_eq!(ev.data(), b"{}");
//! assert!(sse.next_event().is_none()); // "data: hel" is not complete yet
//! sse.feed(b"lo\ndata: world\n\n");
//! let ev = sse.next_event().unwrap();
//! assert_eq!(ev.event(), "message");
//! assert_eq!(ev.data_str(), Some("hello\nworld"));
//! ```

use std::ops::Range;

/// One decoded event. Borrowed from the [`SseDecoder`]; handle it before feeding more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    event: &'a [u8],
    data: &'a [u8],
}

impl<'a> SseEvent<'a> {
    /// An event from its parts (for an event whose data was taken out of the decoder).
    pub(crate) fn new(event: &'a [u8], data: &'a [u8]) -> Self {
        SseEvent { event, data }
    }

    /// The event name: the `event:` field, or `"message"` when there was none (or it is not
    /// UTF-8).
    pub fn event(&self) -> &'a str {
        match std::str::from_utf8(self.event) {
            Ok(name) if !name.is_empty() => name,
            _ => "message",
        }
    }

    /// The raw `event:` field (empty when absent).
    pub fn event_bytes(&self) -> &'a [u8] {
        self.event
    }

    /// The data: every `data:` line of the event, joined with `\n`.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The data as text, when it is valid UTF-8.
    pub fn data_str(&self) -> Option<&'a str> {
        std::str::from_utf8(self.data).ok()
    }

    /// True for the `[DONE]` sentinel that OpenAI-style streams end with.
    pub fn is_done(&self) -> bool {
        self.data == b"[DONE]"
    }
}

/// The default of [`SseDecoder::max_event_size`]: 32 MiB.
pub const DEFAULT_MAX_EVENT_SIZE: usize = 32 << 20;

/// Why an [`SseDecoder`] stopped decoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// An event (its data and the line being received) grew beyond the limit.
    #[error("an event of the stream is larger than {limit} bytes")]
    EventTooLarge {
        /// The limit, [`SseDecoder::max_event_size`].
        limit: usize,
    },
}

/// Incremental SSE decoder. See the [module documentation](self).
#[derive(Debug)]
pub struct SseDecoder {
    /// Received bytes; `buf[pos..]` is not decoded yet.
    buf: Vec<u8>,
    pos: usize,
    /// The previous line ended with a CR that may be the first half of a CRLF.
    after_cr: bool,
    /// Fields of the event being assembled: ranges of `buf` while they are there, copies
    /// (`name` and `joined`) when a field has several lines or outlives a compaction.
    event: Field,
    data: Field,
    name: Vec<u8>,
    joined: Vec<u8>,
    /// The body ended: a last unterminated line and event are delivered.
    finished: bool,
    /// A CR has been fed: lines are then split on CR too (most streams use LF only, and a
    /// one-byte search is faster).
    saw_cr: bool,
    /// `buf[pos..scanned]` holds no line break: the search for the end of a long line resumes
    /// here when more of it arrives, instead of rescanning it from its start.
    scanned: usize,
    /// Where the data of the event returned last is in `buf`, until more is fed: see
    /// [`take_last_data`](Self::take_last_data).
    last_data: Field,
    /// The largest event accepted.
    max_event: usize,
    /// Set once an event exceeded `max_event`: nothing more is decoded.
    error: Option<SseError>,
    /// Bytes searched for line breaks, to test that the work is linear.
    #[cfg(test)]
    searched: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder {
            buf: Vec::new(),
            pos: 0,
            after_cr: false,
            event: Field::None,
            data: Field::None,
            name: Vec::new(),
            joined: Vec::new(),
            finished: false,
            saw_cr: false,
            scanned: 0,
            last_data: Field::None,
            max_event: DEFAULT_MAX_EVENT_SIZE,
            error: None,
            #[cfg(test)]
            searched: 0,
        }
    }
}

#[derive(Debug, Default, Clone)]
enum Field {
    #[default]
    None,
    /// Still in `buf`.
    Range(Range<usize>),
    /// Copied into the decoder's own vector for this field.
    Owned,
}

impl SseDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        SseDecoder::default()
    }

    /// An empty decoder that refuses events larger than `bytes` (see
    /// [`max_event_size`](Self::max_event_size)).
    pub fn with_max_event_size(bytes: usize) -> Self {
        SseDecoder {
            max_event: bytes,
            ..SseDecoder::default()
        }
    }

    /// The largest event accepted, in bytes: its data lines and the line being received
    /// (default [`DEFAULT_MAX_EVENT_SIZE`]). A longer one makes [`error`](Self::error)
    /// [`SseError::EventTooLarge`]; memory stays within a small multiple of the limit.
    pub fn max_event_size(&self) -> usize {
        self.max_event
    }

    /// Why decoding stopped, once it has: then [`next_event`](Self::next_event) returns
    /// `None` and [`feed`](Self::feed) drops its input.
    pub fn error(&self) -> Option<&SseError> {
        self.error.as_ref()
    }

    /// Appends a chunk of the body.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.last_data = Field::None;
        if self.error.is_some() {
            return;
        }
        // Drop consumed bytes once they are at least half of the buffer: each byte is moved
        // at most once on average.
        if self.pos > 0 && self.pos >= self.buf.len() / 2 {
            self.compact();
        }
        if !self.saw_cr && memchr::memchr(b'\r', chunk).is_some() {
            self.saw_cr = true;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// Marks the end of the body: a last line without a line break and an event without the
    /// closing blank line are delivered by the next calls to [`next_event`](Self::next_event).
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// Bytes received but not decoded into an event yet (an incomplete line or event).
    pub fn pending_bytes(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next complete event, if the bytes fed so far contain one.
    pub fn next_event(&mut self) -> Option<SseEvent<'_>> {
        self.last_data = Field::None;
        if self.error.is_some() {
            return None;
        }
        loop {
            let rest = &self.buf[self.pos..];
            if self.after_cr {
                if rest.is_empty() {
                    if !self.finished {
                        self.check_size();
                        return None;
                    }
                } else if rest[0] == b'\n' {
                    self.pos += 1;
                }
                self.after_cr = false;
                continue;
            }
            let skip = self.scanned.saturating_sub(self.pos).min(rest.len());
            let found = if self.saw_cr {
                memchr::memchr2(b'\n', b'\r', &rest[skip..])
            } else {
                memchr::memchr(b'\n', &rest[skip..])
            }
            .map(|i| i + skip);
            #[cfg(test)]
            {
                self.searched += found.map_or(rest.len() - skip, |i| i + 1 - skip);
            }
            let (line_end, next) = match found {
                Some(i) => {
                    if rest[i] == b'\r' {
                        self.after_cr = true;
                    }
                    (self.pos + i, self.pos + i + 1)
                }
                None if self.finished && !rest.is_empty() => (self.buf.len(), self.buf.len()),
                None if self.finished => {
                    // End of body: dispatch what is pending, once.
                    return if self.has_pending() {
                        Some(self.take_event())
                    } else {
                        None
                    };
                }
                None => {
                    self.scanned = self.buf.len();
                    self.check_size();
                    return None;
                }
            };
            let start = self.pos;
            self.pos = next;
            if line_end == start {
                if self.has_pending() {
                    return Some(self.take_event());
                }
                continue;
            }
            self.field(start..line_end);
        }
    }

    /// Refuses the pending event once it (with the line being received) is too large.
    fn check_size(&mut self) {
        let data = match &self.data {
            Field::None => 0,
            Field::Range(r) => r.len(),
            Field::Owned => self.joined.len(),
        };
        if (self.buf.len() - self.pos).saturating_add(data) <= self.max_event {
            return;
        }
        self.error = Some(SseError::EventTooLarge {
            limit: self.max_event,
        });
        // Release the memory: nothing more is decoded.
        self.buf = Vec::new();
        self.joined = Vec::new();
        self.name = Vec::new();
        self.pos = 0;
        self.scanned = 0;
        self.event = Field::None;
        self.data = Field::None;
        self.last_data = Field::None;
    }

    fn has_pending(&self) -> bool {
        !matches!(self.event, Field::None) || !matches!(self.data, Field::None)
    }

    fn field(&mut self, line: Range<usize>) {
        let bytes = &self.buf[line.clone()];
        if bytes[0] == b':' {
            return; // comment
        }
        // The two fields that matter are recognised by prefix, without a search.
        let colon = if bytes.starts_with(b"data:") {
            Some(4)
        } else if bytes.starts_with(b"event:") {
            Some(5)
        } else {
            memchr::memchr(b':', bytes)
        };
        let (name, value) = match colon {
            Some(i) => {
                let mut v = line.start + i + 1;
                if self.buf.get(v) == Some(&b' ') && v < line.end {
                    v += 1;
                }
                (&bytes[..i], v..line.end)
            }
            None => (bytes, line.end..line.end),
        };
        match name {
            b"data" => match std::mem::take(&mut self.data) {
                Field::None => self.data = Field::Range(value),
                Field::Range(first) => {
                    self.joined.clear();
                    self.joined.extend_from_slice(&self.buf[first]);
                    self.joined.push(b'\n');
                    self.joined.extend_from_slice(&self.buf[value]);
                    self.data = Field::Owned;
                }
                Field::Owned => {
                    self.joined.push(b'\n');
                    self.joined.extend_from_slice(&self.buf[value]);
                    self.data = Field::Owned;
                }
            },
            b"event" => self.event = Field::Range(value),
            _ => {} // id, retry and unknown fields
        }
    }

    fn take_event(&mut self) -> SseEvent<'_> {
        let event = match std::mem::take(&mut self.event) {
            Field::None => &[][..],
            Field::Range(r) => &self.buf[r],
            Field::Owned => &self.name[..],
        };
        let data = match std::mem::take(&mut self.data) {
            Field::None => &[][..],
            Field::Range(r) => {
                self.last_data = Field::Range(r.clone());
                &self.buf[r]
            }
            Field::Owned => {
                self.last_data = Field::Owned;
                &self.joined[..]
            }
        };
        SseEvent { event, data }
    }

    /// Moves the data of the event [`next_event`](Self::next_event) returned last out of
    /// the decoder without copying it (`None` when nothing was returned since the last
    /// call, or more was fed, or the event had no data). For a long event that a decoder
    /// wants to own (to unescape a long string in place rather than into a copy).
    pub(crate) fn take_last_data(&mut self) -> Option<Vec<u8>> {
        let range = match std::mem::take(&mut self.last_data) {
            Field::None => return None,
            Field::Owned => return Some(std::mem::take(&mut self.joined)),
            Field::Range(range) => range,
        };
        // The bytes after the event stay in the decoder, in a buffer as large as the one
        // given away: a stream with one long event usually has another (a Responses reply
        // is repeated by `output_item.done` and `response.completed`), and growing a
        // buffer again by doubling leaves the allocator with freed blocks it does not
        // return. Its pages are not touched until bytes arrive.
        let mut rest = Vec::with_capacity(self.buf.capacity());
        rest.extend_from_slice(&self.buf[range.end..]);
        self.buf.truncate(range.end);
        let mut data = std::mem::replace(&mut self.buf, rest);
        data.drain(..range.start);
        self.pos -= range.end;
        self.scanned = self.scanned.saturating_sub(range.end);
        Some(data)
    }

    /// Drops consumed bytes. Fields of a pending event that point into them are copied first
    /// (rare: only an event split across chunks at the moment of compaction).
    fn compact(&mut self) {
        if let Field::Range(r) = &self.event {
            self.name.clear();
            self.name.extend_from_slice(&self.buf[r.clone()]);
            self.event = Field::Owned;
        }
        if let Field::Range(r) = &self.data {
            self.joined.clear();
            self.joined.extend_from_slice(&self.buf[r.clone()]);
            self.data = Field::Owned;
        }
        self.buf.drain(..self.pos);
        self.scanned = self.scanned.saturating_sub(self.pos);
        self.pos = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed in pieces of `size` bytes; returns (event, data) pairs.
    fn decode(input: &[u8], size: usize) -> Vec<(String, String)> {
        let mut sse = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in input.chunks(size.max(1)) {
            sse.feed(chunk);
            while let Some(ev) = sse.next_event() {
                out.push((
                    ev.event().to_owned(),
                    String::from_utf8(ev.data().to_vec()).unwrap(),
                ));
            }
        }
        sse.finish();
        while let Some(ev) = sse.next_event() {
            out.push((
                ev.event().to_owned(),
                String::from_utf8(ev.data().to_vec()).unwrap(),
            ));
        }
        out
    }

    fn all_chunkings(input: &[u8]) -> Vec<(String, String)> {
        let whole = decode(input, input.len());
        for size in 1..=input.len().min(17) {
            assert_eq!(decode(input, size), whole, "chunk size {size}");
        }
        whole
    }

    fn ev(e: &str, d: &str) -> (String, String) {
        (e.to_owned(), d.to_owned())
    }

    #[test]
    fn line_endings_crlf_lf_cr() {
        let input = b"event: a\r\ndata: 1\r\n\r\nevent: b\ndata: 2\n\nevent: c\rdata: 3\r\r";
        assert_eq!(
            all_chunkings(input),
            vec![ev("a", "1"), ev("b", "2"), ev("c", "3")]
        );
    }

    #[test]
    fn comments_pings_and_unknown_fields_are_skipped() {
        let input = b": ping\n\nid: 7\nretry: 100\nfoo: bar\ndata: x\n\n:\n\n";
        assert_eq!(all_chunkings(input), vec![ev("message", "x")]);
    }

    #[test]
    fn multi_line_data_is_joined() {
        let input = b"data: {\ndata:  \"a\": 1\ndata: }\n\ndata: single\n\n";
        assert_eq!(
            all_chunkings(input),
            vec![ev("message", "{\n \"a\": 1\n}"), ev("message", "single")]
        );
    }

    #[test]
    fn utf8_split_across_chunks() {
        let input = "data: {\"t\":\"héllo 🙈 wörld\"}\n\n".as_bytes();
        assert_eq!(
            all_chunkings(input),
            vec![ev("message", "{\"t\":\"héllo 🙈 wörld\"}")]
        );
    }

    #[test]
    fn field_without_colon_and_without_space() {
        let input = b"data\n\ndata:x\n\nevent:e\ndata:\n\n";
        assert_eq!(
            all_chunkings(input),
            vec![ev("message", ""), ev("message", "x"), ev("e", "")]
        );
    }

    #[test]
    fn done_sentinel() {
        let mut sse = SseDecoder::new();
        sse.feed(b"data: [DONE]\n\n");
        assert!(sse.next_event().unwrap().is_done());
    }

    #[test]
    fn trailing_event_without_blank_line_is_flushed_at_finish() {
        assert_eq!(
            all_chunkings(b"data: a\n\ndata: b"),
            vec![ev("message", "a"), ev("message", "b")]
        );
        assert_eq!(all_chunkings(b"event: x\ndata: c\n"), vec![ev("x", "c")]);
    }

    #[test]
    fn cr_at_chunk_end_then_lf() {
        let mut sse = SseDecoder::new();
        sse.feed(b"data: a\r");
        assert!(sse.next_event().is_none());
        sse.feed(b"\n\r");
        // "\r\n" ended the data line, the lone "\r" is the blank line.
        let e = sse.next_event().unwrap();
        assert_eq!(e.data(), b"a");
        sse.feed(b"\ndata: b\n\n");
        // The "\n" after the lone CR pairs with it: no extra blank line, no extra event.
        assert_eq!(sse.next_event().unwrap().data(), b"b");
        assert!(sse.next_event().is_none());
    }

    #[test]
    fn buffer_stays_small_on_long_streams() {
        let mut sse = SseDecoder::new();
        let frame = b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\n";
        for _ in 0..10_000 {
            sse.feed(&frame[..30]);
            while sse.next_event().is_some() {}
            sse.feed(&frame[30..]);
            while sse.next_event().is_some() {}
        }
        assert!(
            sse.buf.capacity() < 4 * frame.len(),
            "{}",
            sse.buf.capacity()
        );
    }

    #[test]
    fn taking_a_long_event_keeps_room_for_the_next() {
        let mut sse = SseDecoder::new();
        let long = format!("data: {}\n\ndata: n", "x".repeat(1 << 20));
        for chunk in long.as_bytes().chunks(16 << 10) {
            sse.feed(chunk);
        }
        assert_eq!(sse.next_event().unwrap().data().len(), 1 << 20);
        let data = sse.take_last_data().unwrap();
        assert_eq!(data.len(), 1 << 20);
        assert!(sse.buf.capacity() >= 1 << 20);
        sse.feed(b"ext\n\n");
        assert_eq!(sse.next_event().unwrap().data(), b"next");
    }

    #[test]
    fn the_last_data_can_be_taken_out() {
        let mut sse = SseDecoder::new();
        sse.feed(b"event: a\ndata: first\n\ndata: x\ndata: y\n\ndata: third\n\ndata: fou");
        assert_eq!(sse.next_event().unwrap().data(), b"first");
        assert_eq!(sse.take_last_data().unwrap(), b"first");
        assert_eq!(sse.take_last_data(), None);
        // Joined lines too.
        assert_eq!(sse.next_event().unwrap().data(), b"x\ny");
        assert_eq!(sse.take_last_data().unwrap(), b"x\ny");
        assert_eq!(sse.take_last_data(), None);
        assert_eq!(sse.next_event().unwrap().data(), b"third");
        assert!(sse.next_event().is_none());
        // Only right after the event is returned.
        assert_eq!(sse.take_last_data(), None);
        sse.feed(b"rth\r\n\r\nevent: e\r");
        assert_eq!(sse.next_event().unwrap().data(), b"fourth");
        assert_eq!(sse.take_last_data().unwrap(), b"fourth");
        sse.feed(b"\ndata: 5\r\n\r\n");
        let five = sse.next_event().unwrap();
        assert_eq!((five.event(), five.data()), ("e", &b"5"[..]));
        assert!(sse.next_event().is_none());
        sse.feed(b"data: last");
        sse.finish();
        assert_eq!(sse.next_event().unwrap().data(), b"last");
        assert_eq!(sse.take_last_data().unwrap(), b"last");
        assert!(sse.next_event().is_none());
    }

    #[test]
    fn an_endless_line_is_refused_and_its_memory_released() {
        let mut sse = SseDecoder::with_max_event_size(1 << 20);
        sse.feed(b"data: ok\n\n");
        assert_eq!(sse.next_event().unwrap().data(), b"ok");
        let chunk = vec![b'x'; 64 << 10];
        sse.feed(b"data: ");
        let mut fed = 0;
        while sse.error().is_none() {
            sse.feed(&chunk);
            fed += chunk.len();
            assert!(sse.next_event().is_none());
            assert!(fed < 2 << 20, "the limit was not enforced");
        }
        assert_eq!(
            sse.error(),
            Some(&SseError::EventTooLarge { limit: 1 << 20 })
        );
        assert!(sse.buf.capacity() == 0 && sse.joined.capacity() == 0);
        // Nothing more is taken or decoded.
        sse.feed(b"\n\ndata: later\n\n");
        assert!(sse.next_event().is_none());
        sse.finish();
        assert!(sse.next_event().is_none());
        assert_eq!(sse.pending_bytes(), 0);
    }

    #[test]
    fn many_data_lines_count_towards_the_limit() {
        let mut sse = SseDecoder::with_max_event_size(1000);
        for _ in 0..200 {
            sse.feed(b"data: 0123456789\n");
            assert!(sse.next_event().is_none());
        }
        assert!(sse.error().is_some());
        // An event within the limit passes.
        let mut ok = SseDecoder::with_max_event_size(1000);
        ok.feed(format!("data: {}\n\n", "y".repeat(900)).as_bytes());
        assert_eq!(ok.next_event().unwrap().data().len(), 900);
    }

    #[test]
    fn a_long_line_fed_in_small_chunks_is_searched_once() {
        let data = "x".repeat(1 << 20);
        let input = format!("data: {data}\n\nevent: e\r\ndata: {data}\r\n\r\n");
        let mut sse = SseDecoder::new();
        let mut events = 0;
        for chunk in input.as_bytes().chunks(1024) {
            sse.feed(chunk);
            while let Some(ev) = sse.next_event() {
                assert_eq!(ev.data().len(), data.len());
                events += 1;
            }
        }
        assert_eq!(events, 2);
        // Each byte once (plus the few bytes of a line break found at a chunk's start).
        assert!(
            sse.searched <= input.len() + 8,
            "{} > {}",
            sse.searched,
            input.len()
        );
    }
}
