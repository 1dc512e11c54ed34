//! Reading a session file line by line without holding it in memory, and parsing only the
//! few fields of each line that the index needs.
//!
//! [`LineScanner`] yields each line with its byte offset from a fixed buffer (the file is
//! never read whole). [`Head`] is a lenient, borrowing view of an entry's top-level fields:
//! every other value — the message bodies that make up almost all of a session — is skipped
//! by serde_json without being allocated. A line that is not one JSON object fails here and
//! is skipped by the caller, as pi skips it.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Read};

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::agent::AgentMessage;

/// The default bound on one line of a session file: 256 MiB, more than pi itself can read
/// (a JavaScript string holds at most 2^29 - 24 UTF-16 units, and pi reads the file whole).
pub(crate) const DEFAULT_MAX_LINE: u64 = 256 << 20;

/// Yields the lines of a reader with their offsets, reading through a reusable buffer. A
/// line longer than the bound is not kept: it is read past in buffer-sized steps and
/// yielded as [`Line::too_long`], so memory stays within about twice the bound.
pub(crate) struct LineScanner<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    max_line: u64,
}

/// One line: its offset, its bytes without the `\n`, and whether a `\n` ended it.
pub(crate) struct Line<'a> {
    pub(crate) offset: u64,
    /// Empty when the line is [`too_long`](Self::too_long).
    pub(crate) bytes: &'a [u8],
    pub(crate) terminated: bool,
    /// `Some(length)` for a line longer than the scanner's bound, whose bytes were skipped.
    pub(crate) too_long: Option<u64>,
}

#[cfg(test)]
impl Line<'_> {
    /// The line's length in the file (without the `\n`).
    fn len(&self) -> u64 {
        self.too_long.unwrap_or(self.bytes.len() as u64)
    }
}

const CHUNK: usize = 256 << 10;

impl<R: Read> LineScanner<R> {
    pub(crate) fn new(reader: R) -> Self {
        Self::at(reader, 0)
    }

    /// A scanner whose first byte is at file offset `base`.
    pub(crate) fn at(reader: R, base: u64) -> Self {
        LineScanner {
            reader,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            base,
            eof: false,
            max_line: DEFAULT_MAX_LINE,
        }
    }

    /// Sets the longest line kept (longer ones are yielded as [`Line::too_long`]).
    pub(crate) fn with_max_line(mut self, max_line: u64) -> Self {
        self.max_line = max_line;
        self
    }

    fn fill(&mut self) -> io::Result<()> {
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(n) => {
                    if n == 0 {
                        self.eof = true;
                    }
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads past the rest of a line too long to keep, which starts at file offset `offset`
    /// and of which `buf[start..end]` is the part read so far.
    fn skip_long_line(&mut self, offset: u64) -> io::Result<Line<'_>> {
        loop {
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                let line_end = self.base + (self.start + pos) as u64;
                self.start += pos + 1;
                return Ok(Line {
                    offset,
                    bytes: &[],
                    terminated: true,
                    too_long: Some(line_end - offset),
                });
            }
            self.base += self.end as u64;
            self.start = 0;
            self.end = 0;
            if self.eof {
                return Ok(Line {
                    offset,
                    bytes: &[],
                    terminated: false,
                    too_long: Some(self.base - offset),
                });
            }
            self.fill()?;
        }
    }

    /// The next line, or `None` at the end.
    pub(crate) fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        loop {
            let (s, avail) = (self.start, &self.buf[self.start..self.end]);
            let found = memchr::memchr(b'\n', avail);
            let len = found.unwrap_or(avail.len()) as u64;
            if len > self.max_line {
                return self.skip_long_line(self.base + s as u64).map(Some);
            }
            if let Some(pos) = found {
                self.start += pos + 1;
                return Ok(Some(Line {
                    offset: self.base + s as u64,
                    bytes: &self.buf[s..s + pos],
                    terminated: true,
                    too_long: None,
                }));
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                self.start = self.end;
                return Ok(Some(Line {
                    offset: self.base + s as u64,
                    bytes: &self.buf[s..self.end],
                    terminated: false,
                    too_long: None,
                }));
            }
            // Move the partial line to the front, grow when one line fills the buffer.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.base += self.start as u64;
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            self.fill()?;
        }
    }

    /// The buffer's size (for tests of the memory bound).
    #[cfg(test)]
    fn buffer_len(&self) -> usize {
        self.buf.len()
    }
}

/// A string that may be borrowed from the line; any non-string JSON value reads as `None`.
#[derive(Default)]
pub(crate) struct LStr<'a>(pub(crate) Option<Cow<'a, str>>);

impl<'a> LStr<'a> {
    pub(crate) fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

struct LStrVisitor;

impl<'de> Visitor<'de> for LStrVisitor {
    type Value = LStr<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v))))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(LStr(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(LStr(None))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LStrVisitor)
    }
}

/// A number; any other JSON value reads as `None`.
#[derive(Default, Clone, Copy)]
pub(crate) struct LNum(pub(crate) Option<f64>);

struct LNumVisitor;

impl<'de> Visitor<'de> for LNumVisitor {
    type Value = LNum;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(LNum(Some(v as f64)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(LNum(Some(v as f64)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(LNum(Some(v)))
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(LNum(None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(LNum(None))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(LNum(None))
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(LNum(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(LNum(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(LNum(None))
    }
}

impl<'de> Deserialize<'de> for LNum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LNumVisitor)
    }
}

/// The top-level fields of a message object that the index and the session list need.
#[derive(Default)]
pub(crate) struct MsgHead<'a> {
    /// `role`, when it is a string.
    pub(crate) role: Option<Cow<'a, str>>,
    /// Whether the object has a `content` key.
    pub(crate) has_content: bool,
    /// `timestamp`, when it is a number.
    pub(crate) timestamp: Option<f64>,
    /// `provider` and `model` (assistant messages).
    pub(crate) provider: Option<Cow<'a, str>>,
    pub(crate) model: Option<Cow<'a, str>>,
}

struct MsgHeadVisitor;

impl<'de> Visitor<'de> for MsgHeadVisitor {
    type Value = MsgHead<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut head = MsgHead::default();
        while let Some(key) = map.next_key::<LStr<'de>>()? {
            match key.as_deref() {
                Some("role") => head.role = map.next_value::<LStr<'de>>()?.0,
                Some("timestamp") => head.timestamp = map.next_value::<LNum>()?.0,
                Some("provider") => head.provider = map.next_value::<LStr<'de>>()?.0,
                Some("model") => head.model = map.next_value::<LStr<'de>>()?.0,
                Some("content") => {
                    head.has_content = true;
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(head)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MsgHead::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(MsgHead::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(MsgHead::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(MsgHead::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(MsgHead::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(MsgHead::default())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(MsgHead::default())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for MsgHead<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MsgHeadVisitor)
    }
}

/// The top-level fields of an entry line that the index needs. Duplicate keys: the last
/// wins, as with `JSON.parse`.
#[derive(Default)]
pub(crate) struct Head<'a> {
    pub(crate) kind: Option<Cow<'a, str>>,
    pub(crate) id: Option<Cow<'a, str>>,
    /// `parentId` as a string; `None` for null, absent or not a string.
    pub(crate) parent_id: Option<Cow<'a, str>>,
    pub(crate) timestamp: Option<Cow<'a, str>>,
    pub(crate) message: MsgHead<'a>,
    pub(crate) target_id: Option<Cow<'a, str>>,
    pub(crate) label: Option<Cow<'a, str>>,
    pub(crate) name: Option<Cow<'a, str>>,
    /// The decoded `message`, when asked for ([`parse_head_with_message`]).
    pub(crate) decoded: Option<AgentMessage>,
}

/// `decode`: read `message` as an [`AgentMessage`] (failing the line when it is not one).
struct HeadVisitor {
    decode: bool,
}

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = Head<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a session entry object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut head = Head::default();
        while let Some(key) = map.next_key::<LStr<'de>>()? {
            match key.as_deref() {
                Some("type") => head.kind = map.next_value::<LStr<'de>>()?.0,
                Some("id") => head.id = map.next_value::<LStr<'de>>()?.0,
                Some("parentId") => head.parent_id = map.next_value::<LStr<'de>>()?.0,
                Some("timestamp") => head.timestamp = map.next_value::<LStr<'de>>()?.0,
                Some("message") if self.decode => {
                    let message = map.next_value::<AgentMessage>()?;
                    head.message = MsgHead {
                        role: Some(Cow::Owned(message.role().to_owned())),
                        has_content: true,
                        ..MsgHead::default()
                    };
                    head.decoded = Some(message);
                }
                Some("message") => head.message = map.next_value::<MsgHead<'de>>()?,
                Some("targetId") => head.target_id = map.next_value::<LStr<'de>>()?.0,
                Some("label") => head.label = map.next_value::<LStr<'de>>()?.0,
                Some("name") => head.name = map.next_value::<LStr<'de>>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(head)
    }
}

impl<'de> Deserialize<'de> for Head<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(HeadVisitor { decode: false })
    }
}

/// Parses the head of one line and decodes its `message` in the same pass. `None` when the
/// line is not valid UTF-8, or its `message` is not an [`AgentMessage`] (the caller then
/// takes the lenient path, [`parse_head`]).
pub(crate) fn parse_head_with_message(bytes: &[u8]) -> Option<Head<'_>> {
    let text = simdutf8::basic::from_utf8(bytes).ok()?;
    let parse = |unbounded: bool| -> Option<Head<'_>> {
        let mut de = serde_json::Deserializer::from_str(text);
        let head = if unbounded {
            de.disable_recursion_limit();
            serde_stacker::Deserializer::new(&mut de)
                .deserialize_map(HeadVisitor { decode: true })
                .ok()?
        } else {
            de.deserialize_map(HeadVisitor { decode: true }).ok()?
        };
        de.end().ok()?;
        Some(head)
    };
    // The plain parse first (see `from_slice_unbounded`).
    parse(false).or_else(|| parse(true))
}

/// Deserializes one whole JSON text from `de` without serde_json's nesting limit (128
/// levels): the stack grows on the heap where a deeply nested value needs it
/// (`serde_stacker`), so whatever the crate writes — serialization has no depth limit —
/// reads back, and no depth overflows the stack.
fn unbounded<'de, R, T>(mut de: serde_json::Deserializer<R>) -> Result<T, serde_json::Error>
where
    R: serde_json::de::Read<'de>,
    T: Deserialize<'de>,
{
    de.disable_recursion_limit();
    let value = T::deserialize(serde_stacker::Deserializer::new(&mut de))?;
    de.end()?;
    Ok(value)
}

/// [`serde_json::from_slice`] without a depth limit (see [`unbounded`]). The plain parse
/// runs first (it is faster, and almost every line fits in its 128 levels); only a line it
/// refuses is parsed again without the limit.
pub(crate) fn from_slice_unbounded<'de, T: Deserialize<'de>>(
    bytes: &'de [u8],
) -> Result<T, serde_json::Error> {
    serde_json::from_slice(bytes)
        .or_else(|_| unbounded(serde_json::Deserializer::from_slice(bytes)))
}

/// [`serde_json::from_str`] without a depth limit (see [`from_slice_unbounded`]).
pub(crate) fn from_str_unbounded<'de, T: Deserialize<'de>>(
    text: &'de str,
) -> Result<T, serde_json::Error> {
    serde_json::from_str(text).or_else(|_| unbounded(serde_json::Deserializer::from_str(text)))
}

/// True when `value` nests more than `limit` arrays and objects deep (no recursion).
fn deeper_than(value: &serde_json::Value, limit: usize) -> bool {
    use serde_json::Value;
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    if value.is_array() || value.is_object() {
        stack.push((value, 1));
    }
    let nested = |c: &&Value| c.is_array() || c.is_object();
    while let Some((v, depth)) = stack.pop() {
        if depth > limit {
            return true;
        }
        match v {
            Value::Array(a) => stack.extend(a.iter().filter(nested).map(|c| (c, depth + 1))),
            Value::Object(o) => stack.extend(o.values().filter(nested).map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    false
}

/// [`serde_json::from_value`] without running the native stack out on a deeply nested
/// value (one of more than 128 levels, which only the unbounded parse produces).
pub(crate) fn from_value_unbounded<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
) -> Result<T, serde_json::Error> {
    if deeper_than(&value, 128) {
        T::deserialize(serde_stacker::Deserializer::new(value))
    } else {
        serde_json::from_value(value)
    }
}

/// Parses a whole line as a JSON value, accepting invalid UTF-8 the way pi does (read as
/// UTF-8 with replacement characters) — only on the rare line where strict parsing fails.
/// No depth limit (see [`unbounded`]).
pub(crate) fn parse_value(bytes: &[u8]) -> Result<serde_json::Value, serde_json::Error> {
    match from_slice_unbounded(bytes) {
        Ok(v) => Ok(v),
        Err(e) => match String::from_utf8_lossy(bytes) {
            Cow::Owned(fixed) => from_str_unbounded(&fixed),
            Cow::Borrowed(_) => Err(e),
        },
    }
}

/// True when the line is only whitespace (skipped silently, like pi's blank lines).
pub(crate) fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// Parses the head of one line.
pub(crate) fn parse_head(bytes: &[u8]) -> Result<Head<'_>, serde_json::Error> {
    from_slice_unbounded(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_offsets_across_buffer_growth() {
        let long = "x".repeat(3 * CHUNK);
        let data = format!("a\n{long}\n\nlast");
        let mut s = LineScanner::new(data.as_bytes());
        let mut got = Vec::new();
        while let Some(l) = s.next_line().unwrap() {
            got.push((l.offset, l.bytes.len(), l.terminated));
        }
        let second = 2 + long.len() as u64;
        assert_eq!(
            got,
            vec![
                (0, 1, true),
                (2, long.len(), true),
                (second + 1, 0, true),
                (second + 2, 4, false)
            ]
        );
    }

    /// A reader of `len` bytes of `x` then `\n{}\n`, produced as it is read.
    struct LongLine {
        len: u64,
        pos: u64,
    }

    impl Read for LongLine {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let tail = b"\n{}\n";
            let total = self.len + tail.len() as u64;
            let n = buf.len().min((total - self.pos) as usize);
            for b in &mut buf[..n] {
                *b = if self.pos < self.len {
                    b'x'
                } else {
                    tail[(self.pos - self.len) as usize]
                };
                self.pos += 1;
            }
            Ok(n)
        }
    }

    #[test]
    fn a_line_over_the_bound_is_skipped_without_being_held() {
        let bound = 1 << 20;
        let len = 64 << 20;
        let mut s = LineScanner::new(LongLine { len, pos: 0 }).with_max_line(bound);
        let l = s.next_line().unwrap().unwrap();
        assert_eq!(
            (l.offset, l.len(), l.too_long, l.bytes.len()),
            (0, len, Some(len), 0)
        );
        assert!(l.terminated);
        // Memory stayed within twice the bound (plus one read buffer).
        assert!(
            s.buffer_len() <= 2 * bound as usize + CHUNK,
            "{}",
            s.buffer_len()
        );
        let l = s.next_line().unwrap().unwrap();
        assert_eq!((l.offset, l.bytes), (len + 1, &b"{}"[..]));
        assert!(s.next_line().unwrap().is_none());

        // A line of exactly the bound is kept; one byte more is not.
        for (n, kept) in [(1000usize, true), (1001, false)] {
            let data = format!("{}\nab", "y".repeat(n));
            let mut s = LineScanner::new(data.as_bytes()).with_max_line(1000);
            let l = s.next_line().unwrap().unwrap();
            assert_eq!(l.too_long.is_none(), kept, "{n}");
            assert_eq!(l.len(), n as u64);
            let l = s.next_line().unwrap().unwrap();
            assert_eq!(
                (l.offset, l.bytes, l.terminated),
                (n as u64 + 1, &b"ab"[..], false)
            );
        }
        // An unterminated long last line.
        let data = "z".repeat(5000);
        let mut s = LineScanner::new(data.as_bytes()).with_max_line(100);
        let l = s.next_line().unwrap().unwrap();
        assert_eq!((l.too_long, l.terminated), (Some(5000), false));
        assert!(s.next_line().unwrap().is_none());
    }

    #[test]
    fn head_is_lenient_and_skips_bodies() {
        let line = br#"{"type":"message","id":"ab","parentId":null,"message":{"role":"assistant","content":[{"x":"\"}"}],"provider":"p","model":7},"label":5}"#;
        let h = parse_head(line).unwrap();
        assert_eq!(h.kind.as_deref(), Some("message"));
        assert_eq!(h.id.as_deref(), Some("ab"));
        assert!(h.parent_id.is_none());
        assert_eq!(h.message.role.as_deref(), Some("assistant"));
        assert!(h.message.has_content);
        assert_eq!(h.message.provider.as_deref(), Some("p"));
        assert!(h.message.model.is_none());
        assert!(h.label.is_none());
        assert!(parse_head(b"[1,2]").is_err());
        assert!(parse_head(b"{\"type\":\"message\"").is_err());
        assert!(parse_head(b"{} x").is_err());
    }

    #[test]
    fn any_depth_parses_without_overflowing_the_stack() {
        let depth = 100_000;
        let line = format!(
            r#"{{"type":"custom","id":"a","data":{}1{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        // On a thread with a small stack: the stack grows on the heap instead.
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                let head = parse_head(line.as_bytes()).unwrap();
                assert_eq!(head.id.as_deref(), Some("a"));
                let value = parse_value(line.as_bytes()).unwrap();
                // Dropped without recursion.
                let mut stack = vec![value];
                let mut levels = 0;
                while let Some(v) = stack.pop() {
                    match v {
                        serde_json::Value::Array(a) => {
                            levels += 1;
                            stack.extend(a);
                        }
                        serde_json::Value::Object(o) => stack.extend(o.into_iter().map(|(_, v)| v)),
                        _ => {}
                    }
                }
                assert_eq!(levels, depth);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn depth_of_values() {
        let nest = |n: usize| -> serde_json::Value {
            serde_json::from_str(&format!("{}{}", "[".repeat(n), "]".repeat(n))).unwrap()
        };
        assert!(!deeper_than(&serde_json::json!(1), 0));
        assert!(!deeper_than(&nest(3), 3));
        assert!(deeper_than(&nest(4), 3));
        let mixed = serde_json::json!({"a": 1, "b": [{"c": [1]}], "d": {}});
        assert!(!deeper_than(&mixed, 4));
        assert!(deeper_than(&mixed, 3));
        let v: serde_json::Value =
            from_str_unbounded(&format!("{}{}", "[".repeat(200), "]".repeat(200))).unwrap();
        assert!(deeper_than(&v, 128));
        let back: serde_json::Value = from_value_unbounded(v.clone()).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn invalid_utf8_is_read_lossily() {
        let line = b"{\"type\":\"custom\",\"id\":\"a\xff\"}";
        assert_eq!(parse_value(line).unwrap()["id"], "a\u{fffd}");
    }
}
