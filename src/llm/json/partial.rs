//! Partial JSON: the object an incomplete JSON text stands for, built incrementally.
//!
//! pi re-parses the whole argument buffer on every fragment (`JSON.parse`, then its repair
//! pass, then the `partial-json` package), which makes a streamed tool call quadratic in its
//! size. [`PartialJsonParser`] gives the same object after each fragment but only looks at
//! the new bytes: it keeps the open containers as a stack and edits the target map in place
//! along the open path, so a whole stream costs time linear in its length.
//!
//! What "the object so far" is follows pi's `parseStreamingJson` (see the tests and the
//! golden file recorded from pi in `tests/fixtures/pi/partial-json/`):
//!
//! * complete members are there; an open object or array is there with what it holds so far;
//! * an unterminated string value is there, without an incomplete escape (`\`, `\u00`) and
//!   without trailing raw whitespace (pi trims the buffer);
//! * an unfinished literal is there in full (`t` is already `true`);
//! * an unfinished number is there when its text is a number (`-1`), or up to an unfinished
//!   lower-case exponent (`1.5e` is `1.5`); `-`, `1.` and `1E` are left out;
//! * a member whose key or value has not started is left out.
//!
//! Strings are read the way pi repairs them once complete: raw control characters are kept
//! and a backslash before a character that cannot be escaped is a plain backslash. (While
//! such a string streams, pi's `partial-json` drops it; see `tests/conformance/deviations.json`.)

use serde_json::{Map, Number, Value};

/// Deepest nesting followed; anything deeper stops the parser (as malformed input does).
const MAX_DEPTH: usize = 512;
/// Longest unfinished number whose value is shown before it ends; a longer one keeps the
/// value shown last until it ends, so an absurdly long number cannot make the parse quadratic.
const MAX_PARTIAL_NUMBER: usize = 64;

/// Parses streamed JSON argument fragments into an object.
///
/// Feed fragments with [`push`](Self::push); after each one the target map holds what pi's
/// `parseStreamingJson` gives for the text so far: every complete member plus the incomplete
/// tail (an unterminated string cut at the end of what arrived; an incomplete key left out).
/// The work per fragment is proportional to the fragment (plus the nesting depth), not to
/// the text received so far.
///
/// ```
/// use pi_engine::json::PartialJsonParser;
/// use serde_json::{Map, json};
///
/// let mut parser = PartialJsonParser::new();
/// let mut args = Map::new();
/// parser.push(r#"{"path": "src/ma"#, &mut args);
/// assert_eq!(args["path"], "src/ma");
/// parser.push(r#"in.rs", "lines": [1, 2"#, &mut args);
/// assert_eq!(args["path"], "src/main.rs");
/// assert_eq!(args["lines"], json!([1, 2]));
/// parser.push(r#"], "dry": t"#, &mut args);
/// assert_eq!(args["dry"], true);
/// ```
///
/// The target must be the map the parser has been updating (start from an empty one). If
/// something else changed it in between, the parser notices when it can no longer find its
/// place, and rebuilds the map from the text received so far.
#[derive(Debug, Clone, Default)]
pub struct PartialJsonParser {
    buffer: String,
    phase: Phase,
    /// The open containers, outermost (the root object) first.
    frames: Vec<Frame>,
    /// The scalar being read in the innermost container.
    token: Token,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Phase {
    /// Nothing but whitespace so far.
    #[default]
    Start,
    /// Inside the root object.
    Open,
    /// The root object is closed; the rest is ignored.
    Done,
    /// Malformed input, or not an object: the target keeps what it has.
    Stopped,
}

#[derive(Debug, Clone)]
struct Frame {
    array: bool,
    expect: Expect,
    /// Objects: the key of the current member.
    key: String,
    /// The current member's value is in the target (it is inserted lazily, and removed again
    /// while an unfinished number does not read as a number).
    shown: bool,
    /// Objects: the value a duplicate key had before, put back if the new value is hidden.
    shadow: Option<Value>,
}

impl Frame {
    fn new(array: bool) -> Self {
        Frame {
            array,
            expect: Expect::First,
            key: String::new(),
            shown: false,
            shadow: None,
        }
    }

    fn member_done(&mut self) {
        self.shown = false;
        self.shadow = None;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Just opened: a member or the closing bracket.
    First,
    /// After a comma: a member (a closing bracket is tolerated, as `partial-json` does).
    Next,
    /// After a key.
    Colon,
    /// After a colon (objects only).
    Value,
    /// After a value: a comma or the closing bracket.
    Comma,
}

#[derive(Debug, Clone, Default)]
enum Token {
    #[default]
    None,
    /// An object key; the text goes to the frame's `key`.
    Key(Escape),
    /// A string value; the text goes to the target, except trailing raw whitespace.
    Str(Escape, String),
    /// A number's text so far.
    Number(String),
    /// `true`, `false` or `null`, and how many of its letters arrived.
    Literal(&'static str, usize),
}

/// Where a string's decoder is within an escape sequence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Escape {
    #[default]
    None,
    /// After `\`.
    Backslash,
    /// After `\u` and `n` hex digits worth `code`; `high` is a pending high surrogate.
    Hex { n: u8, code: u16, high: Option<u16> },
    /// After a `\uD8xx` high surrogate, waiting for its low half.
    High(u16),
    /// After a high surrogate and `\`.
    HighBackslash(u16),
}

/// How a container ended its part of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Its closing bracket was read.
    Closed,
    /// The input ran out.
    End,
    /// Malformed input.
    Stop,
    /// The target does not hold what the parser put there.
    Lost,
}

/// A container in the target, where the innermost open frame writes.
enum Container<'a> {
    Object(&'a mut Map<String, Value>),
    Array(&'a mut Vec<Value>),
}

impl Container<'_> {
    /// The current member's slot, if it is shown.
    fn slot(&mut self, frame: &Frame) -> Option<&mut Value> {
        if !frame.shown {
            return None;
        }
        match self {
            Container::Object(m) => m.get_mut(&frame.key),
            Container::Array(v) => v.last_mut(),
        }
    }

    /// Shows `value` as the current member's value; returns its slot.
    fn show(&mut self, frame: &mut Frame, value: Value) -> Option<&mut Value> {
        if frame.shown {
            let slot = self.slot(frame)?;
            *slot = value;
            return Some(slot);
        }
        frame.shown = true;
        match self {
            Container::Object(m) => {
                // A duplicate key keeps its place (as in JavaScript) and its old value is kept
                // aside in case the new one is hidden again.
                frame.shadow = m.insert(frame.key.clone(), value);
                m.get_mut(&frame.key)
            }
            Container::Array(v) => {
                v.push(value);
                v.last_mut()
            }
        }
    }

    /// Takes the current member's value out of the target again.
    fn hide(&mut self, frame: &mut Frame) {
        if !frame.shown {
            return;
        }
        frame.shown = false;
        match self {
            Container::Object(m) => match frame.shadow.take() {
                Some(old) => {
                    m.insert(frame.key.clone(), old);
                }
                None => {
                    m.shift_remove(&frame.key);
                }
            },
            Container::Array(v) => {
                v.pop();
            }
        }
    }

    /// The container the current member holds, if it is one of the right kind.
    fn child(&mut self, frame: &Frame, array: bool) -> Option<Container<'_>> {
        match (self.slot(frame)?, array) {
            (Value::Object(m), false) => Some(Container::Object(m)),
            (Value::Array(v), true) => Some(Container::Array(v)),
            _ => None,
        }
    }
}

impl PartialJsonParser {
    /// A parser with an empty buffer.
    pub fn new() -> Self {
        PartialJsonParser::default()
    }

    /// The raw text received so far.
    pub fn buffer(&self) -> &str {
        &self.buffer
    }

    /// Appends `fragment` and updates `target` to the object parsed so far.
    pub fn push(&mut self, fragment: &str, target: &mut Map<String, Value>) {
        self.buffer.push_str(fragment);
        if self.feed(fragment, target) == Flow::Lost {
            self.rebuild(target);
        }
    }

    /// Parses the whole buffer again into an empty `target`, after someone else changed it.
    #[cold]
    fn rebuild(&mut self, target: &mut Map<String, Value>) {
        let buffer = std::mem::take(&mut self.buffer);
        *self = PartialJsonParser::new();
        target.clear();
        if self.feed(&buffer, target) == Flow::Lost {
            self.stop();
        }
        self.buffer = buffer;
    }

    fn stop(&mut self) {
        self.phase = Phase::Stopped;
        self.frames = Vec::new();
        self.token = Token::None;
    }

    fn feed(&mut self, input: &str, target: &mut Map<String, Value>) -> Flow {
        let mut pos = 0;
        if self.phase == Phase::Start {
            let rest = input.trim_start_matches(is_leading_space);
            if rest.is_empty() {
                return Flow::End;
            }
            if !rest.starts_with('{') {
                // pi keeps an array or a scalar; tool arguments are an object.
                self.stop();
                return Flow::Stop;
            }
            pos = input.len() - rest.len() + 1;
            self.phase = Phase::Open;
            self.frames.push(Frame::new(false));
        }
        if self.phase != Phase::Open {
            return Flow::End;
        }
        let flow = self.resume(0, Container::Object(target), input, &mut pos);
        match flow {
            Flow::Closed => {
                self.frames.clear();
                self.phase = Phase::Done;
            }
            Flow::Stop => self.stop(),
            Flow::End | Flow::Lost => {}
        }
        flow
    }

    /// Walks down the open path to the innermost container and continues there.
    fn resume(
        &mut self,
        level: usize,
        mut container: Container<'_>,
        input: &str,
        pos: &mut usize,
    ) -> Flow {
        if level + 1 < self.frames.len() {
            let array = self.frames[level + 1].array;
            let Some(child) = container.child(&self.frames[level], array) else {
                return Flow::Lost;
            };
            match self.resume(level + 1, child, input, pos) {
                Flow::Closed => {
                    self.frames.pop();
                    self.frames[level].member_done();
                }
                other => return other,
            }
        }
        self.run(container, input, pos)
    }

    /// Parses `input[*pos..]` in the innermost frame, which writes to `container`.
    fn run(&mut self, mut c: Container<'_>, input: &str, pos: &mut usize) -> Flow {
        let bytes = input.as_bytes();
        loop {
            let level = self.frames.len() - 1;
            // Finish the scalar in progress.
            match &mut self.token {
                Token::None => {}
                Token::Key(esc) => {
                    let frame = &mut self.frames[level];
                    if !scan_string(esc, None, input, pos, &mut frame.key) {
                        return Flow::End;
                    }
                    frame.expect = Expect::Colon;
                    self.token = Token::None;
                }
                Token::Str(esc, held) => {
                    let frame = &mut self.frames[level];
                    let Some(Value::String(out)) = c.slot(frame) else {
                        return Flow::Lost;
                    };
                    if !scan_string(esc, Some(held), input, pos, out) {
                        return Flow::End;
                    }
                    frame.member_done();
                    self.token = Token::None;
                }
                Token::Number(text) => {
                    let frame = &mut self.frames[level];
                    let start = *pos;
                    while *pos < bytes.len() && is_number_byte(bytes[*pos]) {
                        *pos += 1;
                    }
                    text.push_str(&input[start..*pos]);
                    if *pos == bytes.len() {
                        if text.len() <= MAX_PARTIAL_NUMBER {
                            match partial_number(text) {
                                Some(n) => {
                                    if c.show(frame, Value::Number(n)).is_none() {
                                        return Flow::Lost;
                                    }
                                }
                                None => c.hide(frame),
                            }
                        }
                        return Flow::End;
                    }
                    let Ok(n) = serde_json::from_str::<Number>(text) else {
                        // Not a number after all (`-12-`): take back what an earlier fragment
                        // showed of it, as the text parsed in one piece never shows it.
                        c.hide(frame);
                        return Flow::Stop;
                    };
                    if c.show(frame, Value::Number(n)).is_none() {
                        return Flow::Lost;
                    }
                    frame.member_done();
                    self.token = Token::None;
                }
                Token::Literal(word, seen) => {
                    let want = &word.as_bytes()[*seen..];
                    let have = &bytes[*pos..];
                    let n = want.len().min(have.len());
                    if want[..n] != have[..n] {
                        return Flow::Stop;
                    }
                    *pos += n;
                    *seen += n;
                    if *seen < word.len() {
                        return Flow::End;
                    }
                    self.frames[level].member_done();
                    self.token = Token::None;
                }
            }

            // Structure.
            while *pos < bytes.len() && is_json_space(bytes[*pos]) {
                *pos += 1;
            }
            let Some(&b) = bytes.get(*pos) else {
                return Flow::End;
            };
            *pos += 1;
            let depth = self.frames.len();
            let frame = &mut self.frames[level];
            let close = if frame.array { b']' } else { b'}' };
            match frame.expect {
                Expect::First | Expect::Next | Expect::Comma if b == close => return Flow::Closed,
                Expect::Comma if b == b',' => frame.expect = Expect::Next,
                Expect::Comma => return Flow::Stop,
                Expect::First | Expect::Next if !frame.array => {
                    if b != b'"' {
                        return Flow::Stop;
                    }
                    frame.key.clear();
                    self.token = Token::Key(Escape::None);
                }
                Expect::Colon => {
                    if b != b':' {
                        return Flow::Stop;
                    }
                    frame.expect = Expect::Value;
                }
                // A value: in an array after `[` or `,`, in an object after `:`.
                Expect::First | Expect::Next | Expect::Value => {
                    frame.expect = Expect::Comma;
                    match b {
                        b'"' => {
                            if c.show(frame, Value::String(String::new())).is_none() {
                                return Flow::Lost;
                            }
                            self.token = Token::Str(Escape::None, String::new());
                        }
                        b'{' | b'[' => {
                            if depth >= MAX_DEPTH {
                                return Flow::Stop;
                            }
                            let array = b == b'[';
                            let empty = if array {
                                Value::Array(Vec::new())
                            } else {
                                Value::Object(Map::new())
                            };
                            let child = match c.show(frame, empty) {
                                Some(Value::Object(m)) => Container::Object(m),
                                Some(Value::Array(v)) => Container::Array(v),
                                _ => return Flow::Lost,
                            };
                            self.frames.push(Frame::new(array));
                            match self.run(child, input, pos) {
                                Flow::Closed => {
                                    self.frames.pop();
                                    self.frames[level].member_done();
                                }
                                other => return other,
                            }
                        }
                        b'-' | b'0'..=b'9' => {
                            self.token = Token::Number(String::from(b as char));
                        }
                        b't' | b'f' | b'n' => {
                            let (word, value) = match b {
                                b't' => ("true", Value::Bool(true)),
                                b'f' => ("false", Value::Bool(false)),
                                _ => ("null", Value::Null),
                            };
                            // pi shows a literal from its first letter.
                            if c.show(frame, value).is_none() {
                                return Flow::Lost;
                            }
                            self.token = Token::Literal(word, 1);
                        }
                        _ => return Flow::Stop,
                    }
                }
            }
        }
    }
}

/// Parses a possibly incomplete JSON object text, as pi's `parseStreamingJson` does; always
/// returns an object (empty when nothing usable has arrived or the text is not an object).
///
/// ```
/// use pi_engine::json::parse_streaming_json;
/// use serde_json::json;
///
/// assert_eq!(parse_streaming_json(r#"{"a": [1, {"b": "x"#)["a"], json!([1, {"b": "x"}]));
/// // Raw control characters and invalid escapes are repaired, as pi does.
/// assert_eq!(parse_streaming_json("{\"s\": \"one\ntwo \\d\"}")["s"], "one\ntwo \\d");
/// assert!(parse_streaming_json("[1, 2]").is_empty());
/// ```
pub fn parse_streaming_json(text: &str) -> Map<String, Value> {
    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) {
        return map;
    }
    let mut map = Map::new();
    let mut parser = PartialJsonParser::new();
    parser.feed(text, &mut map);
    map
}

/// What pi shows for an unfinished number: the number if its text is one; the part before
/// an unfinished lower-case exponent (`partial-json` cuts at the last `e`); else nothing.
fn partial_number(text: &str) -> Option<Number> {
    if let Ok(n) = serde_json::from_str::<Number>(text) {
        return Some(n);
    }
    let e = text.rfind('e')?;
    serde_json::from_str::<Number>(&text[..e]).ok()
}

/// Decodes string text from `input[*pos..]` into `out` until the closing quote (consumed:
/// returns true) or the end of the input (returns false).
///
/// With `held`, trailing raw whitespace is held back from `out` until something else
/// follows: pi trims the buffer, so a string being streamed never ends in a raw space.
fn scan_string(
    esc: &mut Escape,
    mut held: Option<&mut String>,
    input: &str,
    pos: &mut usize,
    out: &mut String,
) -> bool {
    let bytes = input.as_bytes();
    while *pos < bytes.len() {
        if *esc != Escape::None {
            let b = bytes[*pos];
            *pos += 1;
            // Not part of the escape: read it again as plain string text.
            if let EscapeStep::Reread = decode_escape(esc, b, out) {
                *pos -= 1;
            }
            continue;
        }
        // A run of plain text.
        let start = *pos;
        while *pos < bytes.len() && STRING_CLASS[bytes[*pos] as usize] == PLAIN {
            *pos += 1;
        }
        if *pos > start {
            release(&mut held, out);
            out.push_str(&input[start..*pos]);
        }
        let Some(&b) = bytes.get(*pos) else {
            break;
        };
        match STRING_CLASS[b as usize] {
            QUOTE => {
                *pos += 1;
                release(&mut held, out);
                return true;
            }
            BACKSLASH => {
                // pi shows raw whitespace followed by a backslash: its trim stops there.
                *pos += 1;
                release(&mut held, out);
                *esc = Escape::Backslash;
            }
            _ => {
                // Possibly whitespace: one character at a time.
                let Some(ch) = input[*pos..].chars().next() else {
                    break;
                };
                *pos += ch.len_utf8();
                match &mut held {
                    Some(h) if is_js_space(ch) => h.push(ch),
                    _ => {
                        release(&mut held, out);
                        out.push(ch);
                    }
                }
            }
        }
    }
    false
}

/// Moves held-back whitespace into the string: something other than whitespace follows it.
fn release(held: &mut Option<&mut String>, out: &mut String) {
    if let Some(h) = held
        && !h.is_empty()
    {
        out.push_str(h);
        h.clear();
    }
}

/// What [`decode_escape`] did with a byte.
enum EscapeStep {
    /// Consumed it (the escape may go on).
    Consumed,
    /// The escape ended before this byte, which must be read again.
    Reread,
}

/// Advances an escape sequence by one byte (`esc` is not `None`).
fn decode_escape(esc: &mut Escape, b: u8, out: &mut String) -> EscapeStep {
    match *esc {
        Escape::None => EscapeStep::Reread,
        Escape::Backslash => {
            let ch = match b {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    *esc = Escape::Hex {
                        n: 0,
                        code: 0,
                        high: None,
                    };
                    return EscapeStep::Consumed;
                }
                _ => {
                    // Not an escape: a plain backslash (pi's repair doubles it).
                    *esc = Escape::None;
                    out.push('\\');
                    return EscapeStep::Reread;
                }
            };
            *esc = Escape::None;
            out.push(ch);
            EscapeStep::Consumed
        }
        Escape::Hex { n, code, high } => {
            let Some(digit) = (b as char).to_digit(16) else {
                // `\u` without four hex digits: kept as the text it is.
                *esc = Escape::None;
                if high.is_some() {
                    out.push(char::REPLACEMENT_CHARACTER);
                }
                out.push_str("\\u");
                for shift in (0..n).rev() {
                    let d = (code >> (4 * u16::from(shift))) & 0xf;
                    out.push(char::from_digit(u32::from(d), 16).unwrap_or('0'));
                }
                return EscapeStep::Reread;
            };
            let code = (code << 4) | digit as u16;
            if n < 3 {
                *esc = Escape::Hex {
                    n: n + 1,
                    code,
                    high,
                };
                return EscapeStep::Consumed;
            }
            *esc = Escape::None;
            match (high, code) {
                (Some(h), 0xDC00..=0xDFFF) => {
                    let c = 0x10000 + ((u32::from(h) - 0xD800) << 10) + (u32::from(code) - 0xDC00);
                    out.push(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
                    EscapeStep::Consumed
                }
                (high, 0xD800..=0xDBFF) => {
                    if high.is_some() {
                        out.push(char::REPLACEMENT_CHARACTER);
                    }
                    *esc = Escape::High(code);
                    EscapeStep::Consumed
                }
                (high, code) => {
                    if high.is_some() {
                        out.push(char::REPLACEMENT_CHARACTER);
                    }
                    // A lone low surrogate is not a character.
                    out.push(
                        char::from_u32(u32::from(code)).unwrap_or(char::REPLACEMENT_CHARACTER),
                    );
                    EscapeStep::Consumed
                }
            }
        }
        Escape::High(h) => {
            if b == b'\\' {
                *esc = Escape::HighBackslash(h);
                EscapeStep::Consumed
            } else {
                *esc = Escape::None;
                out.push(char::REPLACEMENT_CHARACTER);
                EscapeStep::Reread
            }
        }
        Escape::HighBackslash(h) => {
            if b == b'u' {
                *esc = Escape::Hex {
                    n: 0,
                    code: 0,
                    high: Some(h),
                };
                EscapeStep::Consumed
            } else {
                out.push(char::REPLACEMENT_CHARACTER);
                *esc = Escape::Backslash;
                EscapeStep::Reread
            }
        }
    }
}

const PLAIN: u8 = 0;
const QUOTE: u8 = 1;
const BACKSLASH: u8 = 2;
/// ASCII whitespace, or the first byte of a character that may be Unicode whitespace.
const MAYBE_SPACE: u8 = 3;

/// Byte classes inside a string.
static STRING_CLASS: [u8; 256] = {
    let mut t = [PLAIN; 256];
    t[b'"' as usize] = QUOTE;
    t[b'\\' as usize] = BACKSLASH;
    let spaces = [
        b' ', b'\t', b'\n', 0x0b, 0x0c, b'\r', // ASCII
        0xc2,  // U+00A0
        0xe1,  // U+1680
        0xe2,  // U+2000..U+205F
        0xe3,  // U+3000
        0xef,  // U+FEFF
    ];
    let mut i = 0;
    while i < spaces.len() {
        t[spaces[i] as usize] = MAYBE_SPACE;
        i += 1;
    }
    t
};

/// Whitespace as JavaScript's `String.prototype.trim` sees it.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// Whitespace before the root object (pi trims the buffer, which also drops a BOM).
fn is_leading_space(c: char) -> bool {
    is_js_space(c)
}

fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_number_byte(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Value {
        Value::Object(parse_streaming_json(s))
    }

    /// The parser fed one character at a time, checked against the one-shot parse at
    /// every prefix.
    fn streamed(s: &str) -> Value {
        let mut parser = PartialJsonParser::new();
        let mut target = Map::new();
        for (i, ch) in s.char_indices() {
            parser.push(ch.encode_utf8(&mut [0; 4]), &mut target);
            let prefix = &s[..i + ch.len_utf8()];
            assert_eq!(Value::Object(target.clone()), p(prefix), "after {prefix:?}");
        }
        assert_eq!(parser.buffer(), s);
        Value::Object(target)
    }

    #[test]
    fn incomplete_inputs() {
        assert_eq!(p(""), json!({}));
        assert_eq!(p("   "), json!({}));
        assert_eq!(p("{"), json!({}));
        assert_eq!(p(r#"{"a"#), json!({}));
        assert_eq!(p(r#"{"a""#), json!({}));
        assert_eq!(p(r#"{"a":"#), json!({}));
        assert_eq!(p(r#"{"a": ""#), json!({"a": ""}));
        assert_eq!(p(r#"{"a": "x"#), json!({"a": "x"}));
        assert_eq!(
            p(r#"{"a": "x", "b": [1, 2"#),
            json!({"a": "x", "b": [1, 2]})
        );
        assert_eq!(p(r#"{"a": {"#), json!({"a": {}}));
        assert_eq!(p(r#"{"a": ["#), json!({"a": []}));
        assert_eq!(p(r#"{"a": {"b": "c"}, "d"#), json!({"a": {"b": "c"}}));
        assert_eq!(p("[1,2]"), json!({}));
        assert_eq!(p(r#""text""#), json!({}));
    }

    #[test]
    fn unfinished_scalars_read_as_pi_reads_them() {
        assert_eq!(p(r#"{"a": t"#), json!({"a": true}));
        assert_eq!(p(r#"{"a": fal"#), json!({"a": false}));
        assert_eq!(p(r#"{"a": [n"#), json!({"a": [null]}));
        assert_eq!(p(r#"{"a": -"#), json!({}));
        assert_eq!(p(r#"{"a": -1"#), json!({"a": -1}));
        assert_eq!(p(r#"{"a": 1.5"#), json!({"a": 1.5}));
        assert_eq!(p(r#"{"a": 1."#), json!({}));
        assert_eq!(p(r#"{"a": 1.5e"#), json!({"a": 1.5}));
        assert_eq!(p(r#"{"a": 1e-"#), json!({"a": 1}));
        assert_eq!(p(r#"{"a": 1E"#), json!({}));
        assert_eq!(p(r#"{"a": 2, "a": 3."#), json!({"a": 2}));
        assert_eq!(p(r#"{"a": "x\"#), json!({"a": "x"}));
        assert_eq!(p(r#"{"a": "x\u00"#), json!({"a": "x"}));
        assert_eq!(p(r#"{"a": "x\u00e9"#), json!({"a": "xé"}));
        assert_eq!(p(r#"{"a": "x\ud83d"#), json!({"a": "x"}));
        assert_eq!(p(r#"{"a": "x\ud83d\ude00"#), json!({"a": "x😀"}));
        // pi trims the buffer: a streaming string never ends in raw whitespace.
        assert_eq!(p(r#"{"a": "x  "#), json!({"a": "x"}));
        assert_eq!(p(r#"{"a": "x\u0020"#), json!({"a": "x "}));
        assert_eq!(p("{\"a\": \"x \u{3000}y "), json!({"a": "x \u{3000}y"}));
    }

    #[test]
    fn repairs_like_pi() {
        assert_eq!(p("{\"a\": \"1\n2\t3\"}"), json!({"a": "1\n2\t3"}));
        assert_eq!(p(r#"{"a": "C:\Users\x"}"#), json!({"a": "C:\\Users\\x"}));
        assert_eq!(p(r#"{"a": "\q\""}"#), json!({"a": "\\q\""}));
        assert_eq!(p(r#"{"a": "\uzz"}"#), json!({"a": "\\uzz"}));
        assert_eq!(p(r#"{"a": "\ud83dx"}"#), json!({"a": "\u{fffd}x"}));
        assert_eq!(
            p(r#"{"a": "\ude00\ud83d\ud83d\ude00"}"#),
            json!({"a": "\u{fffd}\u{fffd}😀"})
        );
    }

    #[test]
    fn leniency_and_malformed_input() {
        assert_eq!(p(r#"{"a": 1,}"#), json!({"a": 1}));
        assert_eq!(p(r#"{"a": [1,]}"#), json!({"a": [1]}));
        assert_eq!(p(r#"{"a": 1} trailing"#), json!({"a": 1}));
        assert_eq!(p("\u{feff} {\"a\": 1"), json!({"a": 1}));
        // Stops at the first error, keeping what came before.
        assert_eq!(p(r#"{"a": 1, "b": x, "c": 2}"#), json!({"a": 1}));
        assert_eq!(p(r#"{"a": 1 "b": 2}"#), json!({"a": 1}));
        assert_eq!(p(r#"{"a": 01}"#), json!({}));
        assert_eq!(p(r#"{"a": tru}"#), json!({"a": true}));
        assert_eq!(p(r#"{a: 1}"#), json!({}));
    }

    #[test]
    fn every_prefix_streamed_equals_the_one_shot_parse() {
        for s in [
            r#"{"path":"src/main.rs","edits":[{"old":"a","new":"b"}],"opts":{"dry":false,"n":null}}"#,
            r#"{ "a" : [ 1 , -2.5e3 , [ ] , { } ] , "b" : "x\ny\u00e9\ud83d\ude00 z " }"#,
            r#"{"a":1,"b":2,"a":3.5,"b":"two","a":"x"}"#,
            "{\"raw\":\"a\nb\\qc\\\\\",\"n\":[true,false,null]}",
        ] {
            let end = streamed(s);
            assert_eq!(end, p(s));
        }
    }

    #[test]
    fn duplicate_keys_keep_their_first_place() {
        let v = streamed(r#"{"a":1,"b":2,"a":3}"#);
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn a_changed_target_is_rebuilt_from_the_buffer() {
        let mut parser = PartialJsonParser::new();
        let mut target = Map::new();
        parser.push(r#"{"a": {"b": "x"#, &mut target);
        target.clear();
        target.insert("junk".into(), json!(1));
        parser.push(r#"y"}, "c": 1}"#, &mut target);
        assert_eq!(Value::Object(target), json!({"a": {"b": "xy"}, "c": 1}));
    }

    #[test]
    fn deep_nesting_stops_instead_of_overflowing() {
        let deep = "{\"a\":".to_owned() + &"[".repeat(100_000);
        let mut parser = PartialJsonParser::new();
        let mut target = Map::new();
        for chunk in deep.as_bytes().chunks(8) {
            parser.push(std::str::from_utf8(chunk).unwrap(), &mut target);
        }
        assert!(target.contains_key("a"));
        assert!(parse_streaming_json(&deep).contains_key("a"));
    }

    #[test]
    fn pushes_after_the_end_are_ignored() {
        let mut parser = PartialJsonParser::new();
        let mut target = Map::new();
        parser.push(r#"{"a": 1}"#, &mut target);
        parser.push(r#"{"b": 2}"#, &mut target);
        assert_eq!(Value::Object(target), json!({"a": 1}));
        assert_eq!(parser.buffer(), r#"{"a": 1}{"b": 2}"#);
    }

    /// Found by the `partial_json` fuzz target: a number shown while it streamed (`-12`) that
    /// turns out malformed (`-12-`) stayed in the target, so the result depended on where the
    /// fragments were cut.
    #[test]
    fn a_number_that_turns_malformed_is_taken_back() {
        assert_eq!(streamed(r#"{"a":0,"b":-12-"c":3}"#), json!({"a": 0}));
        assert_eq!(streamed(r#"{"a":1,"a":2.5e+x}"#), json!({"a": 1}));
        assert_eq!(streamed("[1,2"), json!({}));
    }
}
