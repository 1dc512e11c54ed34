//! A forward-only JSON scanner for the decoders' fast paths.
//!
//! A long reply is millions of small delta events whose layout a provider never varies.
//! Reading them with serde's derived visitors costs most of the decoding time (members the
//! decoder does not read are still matched by name and skipped value by value), so each
//! decoder recognises its common delta event with this scanner and hands everything else to
//! serde. The scanner is strict: whatever it does not accept (escapes in a name, a number
//! that is not plain digits, a value of a type it does not expect, a member it does not
//! know) makes the fast path return `None`, and the event goes through the full decoder. It
//! never accepts a payload that serde would reject.

use std::borrow::Cow;

/// A position in one JSON document.
#[derive(Debug)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0 }
    }

    /// A cursor past the first `pos` bytes of `data` (a prefix read before, by a caller that
    /// keeps what reading it gave; `None` past the end).
    pub(crate) fn resume(data: &'a [u8], pos: usize) -> Option<Self> {
        (pos <= data.len()).then_some(Cursor { data, pos })
    }

    /// How many bytes have been read.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Skips JSON whitespace.
    pub(crate) fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.data.get(self.pos) {
            self.pos += 1;
        }
    }

    /// Skips whitespace, then expects `b`.
    pub(crate) fn byte(&mut self, b: u8) -> Option<()> {
        self.ws();
        (self.data.get(self.pos) == Some(&b)).then(|| self.pos += 1)
    }

    /// Skips whitespace, then returns the next byte without taking it (to choose how to
    /// read a value that may be of several types).
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.data.get(self.pos).copied()
    }

    /// True when only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.ws();
        self.pos == self.data.len()
    }

    /// After a member or an element: `true` at `,` (another one follows), `false` at
    /// `close` (`}` or `]`).
    pub(crate) fn next(&mut self, close: u8) -> Option<bool> {
        self.ws();
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        match b {
            b',' => Some(true),
            b if b == close => Some(false),
            _ => None,
        }
    }

    /// A member name without escapes, and its colon.
    pub(crate) fn key(&mut self) -> Option<&'a [u8]> {
        let (key, plain) = self.raw_string()?;
        if !plain {
            return None;
        }
        self.byte(b':')?;
        Some(key)
    }

    /// The bytes between the quotes of the next string, and whether they are plain (no
    /// escape, no control character). Strings here are a few bytes: a plain loop beats a
    /// SIMD search's set-up.
    fn raw_string(&mut self) -> Option<(&'a [u8], bool)> {
        self.byte(b'"')?;
        let start = self.pos;
        let mut plain = true;
        loop {
            let b = *self.data.get(self.pos)?;
            match b {
                b'"' => {
                    self.pos += 1;
                    return Some((&self.data[start..self.pos - 1], plain));
                }
                b'\\' => {
                    // Skip the escaped byte (enough to find the closing quote).
                    plain = false;
                    self.pos += 2;
                }
                0..0x20 => {
                    plain = false;
                    self.pos += 1;
                }
                _ => self.pos += 1,
            }
        }
    }

    /// A string value, unescaped: borrowed when it has no escapes; escapes are read by
    /// serde, which also rejects what JSON does not allow (raw control characters, bad
    /// escapes, invalid UTF-8).
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        self.ws();
        let open = self.pos;
        let (raw, plain) = self.raw_string()?;
        if !plain {
            let quoted = self.data.get(open..self.pos)?;
            return serde_json::from_slice::<String>(quoted)
                .ok()
                .map(Cow::Owned);
        }
        std::str::from_utf8(raw).ok().map(Cow::Borrowed)
    }

    /// A string value, read as [`string`](Self::string) reads it (the same text, the same
    /// refusals), for long strings with escapes (tool arguments, text deltas): found with a
    /// SIMD search and unescaped here into one allocation of the right size, where `string`
    /// has serde unescape it.
    pub(crate) fn long_string(&mut self) -> Option<Cow<'a, str>> {
        self.byte(b'"')?;
        let start = self.pos;
        let mut end = start;
        let mut escaped = false;
        // The closing quote: the first `"` that no backslash escapes.
        loop {
            end += memchr::memchr2(b'"', b'\\', self.data.get(end..)?)?;
            if self.data[end] == b'"' {
                break;
            }
            escaped = true;
            end += 2;
        }
        self.pos = end + 1;
        let raw = &self.data[start..end];
        // Escapes are ASCII: the text is UTF-8 when its bytes are.
        let text = std::str::from_utf8(raw).ok()?;
        if escaped {
            unescape(text).map(Cow::Owned)
        } else {
            (!raw.iter().any(|&b| b < 0x20)).then_some(Cow::Borrowed(text))
        }
    }

    /// A string value that needs no unescaping (else `None`).
    pub(crate) fn plain_string(&mut self) -> Option<&'a str> {
        match self.string()? {
            Cow::Borrowed(s) => Some(s),
            Cow::Owned(_) => None,
        }
    }

    /// A string value that is not read: it must be plain ASCII (anything else is left to
    /// serde, which validates it).
    pub(crate) fn skip_string(&mut self) -> Option<()> {
        let (raw, plain) = self.raw_string()?;
        (plain && raw.is_ascii()).then_some(())
    }

    /// A non-negative integer written as plain digits (at most 18 of them, no leading zero).
    pub(crate) fn integer(&mut self) -> Option<u64> {
        self.ws();
        let digits = self.data[self.pos..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        // JSON allows no leading zero.
        if digits == 0 || digits > 18 || (digits > 1 && self.data[self.pos] == b'0') {
            return None;
        }
        // A fraction or an exponent would make it another number.
        if let Some(b'.' | b'e' | b'E') = self.data.get(self.pos + digits) {
            return None;
        }
        let n = self.data[self.pos..self.pos + digits]
            .iter()
            .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
        self.pos += digits;
        Some(n)
    }

    /// Reads the literal `word` (`null`, `true`, `false`) if it comes next.
    pub(crate) fn literal(&mut self, word: &[u8]) -> bool {
        self.ws();
        if !self.data[self.pos..].starts_with(word) {
            return false;
        }
        // `nullx` is not `null`.
        if self
            .data
            .get(self.pos + word.len())
            .is_some_and(|b| b.is_ascii_alphanumeric())
        {
            return false;
        }
        self.pos += word.len();
        true
    }

    /// `null`.
    pub(crate) fn null(&mut self) -> Option<()> {
        self.literal(b"null").then_some(())
    }

    /// An empty array, `[]`.
    pub(crate) fn empty_array(&mut self) -> Option<()> {
        self.byte(b'[')?;
        self.byte(b']')
    }

    /// A whole object, returned raw: strings and brackets are checked, scalars are left to
    /// serde when the object is read.
    pub(crate) fn raw_object(&mut self) -> Option<&'a [u8]> {
        self.ws();
        let start = self.pos;
        if self.data.get(self.pos) != Some(&b'{') {
            return None;
        }
        // Open brackets, innermost last: bit set for `[`. Deeper than 64 is not usage.
        let mut arrays = 0u64;
        let mut depth = 0u32;
        while let Some(&b) = self.data.get(self.pos) {
            match b {
                b'"' => {
                    self.raw_string()?;
                    continue;
                }
                b'{' | b'[' => {
                    if depth == 64 {
                        return None;
                    }
                    arrays = (arrays << 1) | u64::from(b == b'[');
                    depth += 1;
                }
                b'}' | b']' => {
                    if depth == 0 || (arrays & 1 == 1) != (b == b']') {
                        return None;
                    }
                    arrays >>= 1;
                    depth -= 1;
                    if depth == 0 {
                        self.pos += 1;
                        return Some(&self.data[start..self.pos]);
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
        None
    }
}

/// The inside of a JSON string, its escapes read as serde reads them: `None` where serde
/// refuses the string (a raw control character, an unknown or cut escape, a UTF-16
/// surrogate that is not half of a pair).
fn unescape(raw: &str) -> Option<String> {
    let hex = |digits: &[u8]| {
        digits.iter().try_fold(0u32, |n, &d| {
            let v = char::from(d).to_digit(16)?;
            Some(n * 16 + v)
        })
    };
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    loop {
        // A run without escapes and control characters (it ends at an ASCII byte, on a
        // character boundary).
        let run = bytes[i..]
            .iter()
            .position(|&b| b == b'\\' || b < 0x20)
            .map_or(bytes.len(), |k| i + k);
        out.push_str(&raw[i..run]);
        if run == bytes.len() {
            return Some(out);
        }
        if bytes[run] != b'\\' {
            return None;
        }
        i = run + 2;
        out.push(match *bytes.get(run + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = hex(bytes.get(i..i + 4)?)?;
                i += 4;
                match unit {
                    0xD800..0xDC00 => {
                        // A leading surrogate: its trailing one follows.
                        if bytes.get(i..i + 2)? != b"\\u" {
                            return None;
                        }
                        let low = hex(bytes.get(i + 2..i + 6)?)?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return None;
                        }
                        i += 6;
                        char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    0xDC00..0xE000 => return None,
                    _ => char::from_u32(unit)?,
                }
            }
            _ => return None,
        });
    }
}

/// Member names seen in one object, to refuse duplicates (serde's derived structs reject
/// a repeated field; the fast path must not accept what they reject).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Seen(u32);

impl Seen {
    /// Marks member `bit`; `None` when it was already seen.
    pub(crate) fn first(&mut self, bit: u32) -> Option<()> {
        let mask = 1 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_plain_escaped_and_broken() {
        let mut c = Cursor::new(br#" "plain" "es\"c\n" "bad \x" "#);
        assert_eq!(c.string(), Some(Cow::Borrowed("plain")));
        assert_eq!(c.string(), Some(Cow::Owned("es\"c\n".to_owned())));
        assert_eq!(c.string(), None);
        assert_eq!(Cursor::new(b"\"raw\ncontrol\"").string(), None);
        assert_eq!(Cursor::new(b"\"\xff\"").string(), None);
        assert_eq!(Cursor::new(b"\"unterminated").string(), None);
        assert_eq!(Cursor::new(br#""ends in \"#).string(), None);
        assert_eq!(Cursor::new(br#""e\u00e9""#).plain_string(), None);
        assert_eq!(Cursor::new(br#""e\u00e9""#).skip_string(), None);
        assert_eq!(Cursor::new("\"\u{e9}\"".as_bytes()).skip_string(), None);
        assert_eq!(Cursor::new(br#" "id_1" "#).skip_string(), Some(()));
    }

    #[test]
    fn integers_and_literals() {
        assert_eq!(Cursor::new(b" 42,").integer(), Some(42));
        assert_eq!(Cursor::new(b"0}").integer(), Some(0));
        for other in [
            &b"-1"[..],
            b"1.5",
            b"1e3",
            b"",
            b"x",
            b"042",
            b"1234567890123456789",
        ] {
            assert_eq!(Cursor::new(other).integer(), None, "{other:?}");
        }
        assert!(Cursor::new(b" null}").literal(b"null"));
        assert!(!Cursor::new(b"nullx").literal(b"null"));
        assert!(Cursor::new(b"[ ]").empty_array().is_some());
        assert!(Cursor::new(b"[1]").empty_array().is_none());
        let mut c = Cursor::new(b" \n[ 1]");
        assert_eq!(c.peek(), Some(b'['));
        assert!(c.byte(b'[').is_some());
        assert_eq!(c.peek(), Some(b'1'));
        assert_eq!(c.integer(), Some(1));
        assert_eq!(Cursor::new(b" ").peek(), None);
    }

    #[test]
    fn members_and_end() {
        let mut c = Cursor::new(br#"{"a": null, "c" : 2 } "#);
        c.byte(b'{').unwrap();
        assert_eq!(c.key(), Some(&b"a"[..]));
        assert!(c.null().is_some());
        assert_eq!(c.next(b'}'), Some(true));
        assert_eq!(c.key(), Some(&b"c"[..]));
        assert_eq!(c.integer(), Some(2));
        assert_eq!(c.next(b'}'), Some(false));
        assert!(c.at_end());
        assert_eq!(Cursor::new(b"]").next(b'}'), None);
        assert_eq!(Cursor::new(br#""k\"ey":"#).key(), None);
        assert_eq!(Cursor::new(br#""key" 1"#).key(), None);
    }

    #[test]
    fn seen_refuses_duplicates() {
        let mut seen = Seen::default();
        assert!(seen.first(0).is_some());
        assert!(seen.first(3).is_some());
        assert!(seen.first(0).is_none());
    }
}

/// The scanner against serde_json on generated inputs: whatever the scanner accepts, serde
/// reads the same way; what it refuses is only what its documentation says it refuses.
#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;
    use serde::Deserialize;
    use serde_json::{Map, Value};

    fn config() -> ProptestConfig {
        ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    /// Bytes of a JSON string's inside, biased towards what is hard: quotes, backslashes,
    /// escapes (valid, invalid, surrogates), control characters, multi-byte UTF-8 and
    /// invalid UTF-8.
    fn string_body() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            4 => "[a-z ]{1,4}".prop_map(String::into_bytes),
            1 => Just(b"\\\"".to_vec()),
            1 => Just(b"\\\\".to_vec()),
            1 => Just(b"\\n".to_vec()),
            1 => Just(b"\\/".to_vec()),
            1 => Just(b"\\t\\b\\f\\r".to_vec()),
            1 => Just(b"\\u00e9".to_vec()),
            1 => Just(b"\\ud83d\\ude48".to_vec()),
            1 => Just(b"\\ud83d".to_vec()),
            1 => Just(b"\\uDE48".to_vec()),
            1 => Just(b"\\uD83D\\uDE48\\u00E9".to_vec()),
            1 => Just(b"\\ud83d\\u0041".to_vec()),
            1 => Just(b"\\ud83d\\ud83d\\ude48".to_vec()),
            1 => Just(b"\\ud83d\\n".to_vec()),
            1 => Just(b"\\u00+1".to_vec()),
            1 => Just(b"\\u0000\\u001f\\u007f".to_vec()),
            1 => Just(b"\\x".to_vec()),
            1 => Just(b"\\u12".to_vec()),
            1 => Just(b"\"".to_vec()),
            1 => Just(b"\\".to_vec()),
            1 => Just(vec![0x01]),
            1 => Just(b"\n".to_vec()),
            1 => Just("\u{e9}\u{1f648}\u{20ac}".as_bytes().to_vec()),
            1 => Just(vec![0xff]),
            1 => Just(vec![0xc3]),
            1 => any::<u8>().prop_map(|b| vec![b]),
        ];
        prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
    }

    /// JSON text: the scanner's strings and numbers in a few layouts (what follows a value
    /// matters to the scanner: `1.5`, `nullx`).
    fn leading_ws() -> impl Strategy<Value = &'static [u8]> {
        prop_oneof![Just(&b""[..]), Just(&b" "[..]), Just(&b"\n\t\r "[..])]
    }

    /// serde's reading of the string at the front of `data` (what follows is not looked at).
    fn serde_string(data: &[u8]) -> Option<String> {
        String::deserialize(&mut serde_json::Deserializer::from_slice(data)).ok()
    }

    /// Generated JSON values: nested objects and arrays, strings with escapes and
    /// non-ASCII text, numbers of every kind.
    fn json_value() -> impl Strategy<Value = Value> {
        let text = prop_oneof![
            "[a-z_]{0,6}",
            "[ -~]{0,8}",
            "\\PC{0,6}",
            Just("a \"q\" \\ / \n\t\u{8}\u{c}\r \u{1} \u{e9} \u{1f648}".to_owned()),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            (0u64..1000).prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            text.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((text.clone(), inner), 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    /// Reads a whole value with the scanner's calls, as a fast path does; `None` where the
    /// scanner refuses (escaped names, numbers other than plain non-negative integers).
    fn scan(c: &mut Cursor<'_>) -> Option<Value> {
        c.ws();
        match *c.data.get(c.pos)? {
            b'{' => {
                c.byte(b'{')?;
                let mut map = Map::new();
                c.ws();
                if c.data.get(c.pos) == Some(&b'}') {
                    c.pos += 1;
                    return Some(Value::Object(map));
                }
                loop {
                    let key = std::str::from_utf8(c.key()?).ok()?.to_owned();
                    let value = scan(c)?;
                    map.insert(key, value);
                    if !c.next(b'}')? {
                        return Some(Value::Object(map));
                    }
                }
            }
            b'[' => {
                c.ws();
                if c.empty_array().is_some() {
                    return Some(Value::Array(Vec::new()));
                }
                // `empty_array` consumed the `[`; read the elements.
                let mut items = Vec::new();
                loop {
                    items.push(scan(c)?);
                    if !c.next(b']')? {
                        return Some(Value::Array(items));
                    }
                }
            }
            b'"' => c.string().map(|s| Value::String(s.into_owned())),
            b'n' => c.null().map(|()| Value::Null),
            b't' => c.literal(b"true").then_some(Value::Bool(true)),
            b'f' => c.literal(b"false").then_some(Value::Bool(false)),
            _ => c.integer().map(Value::from),
        }
    }

    /// True when the scanner must read `v` (no escape in a name, only small non-negative
    /// integers).
    fn scannable(v: &Value) -> bool {
        match v {
            Value::Number(n) => n.as_u64().is_some_and(|n| n < 1_000_000_000_000_000_000),
            Value::Array(items) => items.iter().all(scannable),
            Value::Object(map) => map.iter().all(|(k, v)| {
                !k.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) && scannable(v)
            }),
            _ => true,
        }
    }

    /// `v` made scannable: numbers become small non-negative integers, names lose what would
    /// be escaped.
    fn scannable_form(v: &Value) -> Value {
        match v {
            Value::Number(n) => Value::from(n.as_u64().unwrap_or(7) % 1_000_000_000_000_000_000),
            Value::Array(items) => Value::Array(items.iter().map(scannable_form).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let k: String = k
                            .chars()
                            .filter(|c| !matches!(c, '"' | '\\' | '\0'..='\u{1f}'))
                            .collect();
                        (k, scannable_form(v))
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    proptest! {
        #![proptest_config(config())]

        /// A string is read exactly as serde reads it, or refused exactly when serde
        /// refuses it; `plain_string` and `skip_string` only take strings without escapes.
        #[test]
        fn strings_read_as_serde_reads_them(ws in leading_ws(), body in string_body(), tail in prop_oneof![Just(&b"\""[..]), Just(&b"\",1"[..]), Just(&b""[..])]) {
            let data = [ws, b"\"", &body, tail].concat();
            let serde = serde_string(&data);
            let scanned = Cursor::new(&data).string().map(Cow::into_owned);
            prop_assert_eq!(&scanned, &serde, "{}", String::from_utf8_lossy(&data));
            // `long_string` too, and it ends where `string` ends.
            let (mut a, mut b) = (Cursor::new(&data), Cursor::new(&data));
            let long = b.long_string();
            prop_assert_eq!(long.as_deref(), serde.as_deref(), "{}", String::from_utf8_lossy(&data));
            if let Some(short) = a.string() {
                prop_assert_eq!(a.pos, b.pos);
                prop_assert_eq!(matches!(long, Some(Cow::Borrowed(_))), matches!(short, Cow::Borrowed(_)));
            }
            if let Some(plain) = Cursor::new(&data).plain_string() {
                prop_assert_eq!(Some(plain), serde.as_deref());
                // Borrowed: the bytes between the quotes are the text.
                let inside = &data[ws.len() + 1..];
                prop_assert!(inside.starts_with(plain.as_bytes()));
                prop_assert_eq!(inside.get(plain.len()), Some(&b'"'));
            }
            if Cursor::new(&data).skip_string().is_some() {
                prop_assert!(serde.as_deref().is_some_and(str::is_ascii));
            }
            // A name is a plain string followed by a colon.
            let member = [&data[..], b":1"].concat();
            if let Some(key) = Cursor::new(&member).key() {
                let serde = serde_string(&member);
                prop_assert_eq!(std::str::from_utf8(key).ok(), serde.as_deref());
            }
        }

        /// An integer is read as serde reads a `u64`, and refused only past 18 digits.
        #[test]
        fn integers_read_as_serde_reads_them(ws in leading_ws(), text in "-?[0-9]{0,21}(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,2})?[,}\\] a]?") {
            let data = [ws, text.as_bytes()].concat();
            let serde = u64::deserialize(&mut serde_json::Deserializer::from_slice(&data)).ok();
            let scanned = Cursor::new(&data).integer();
            if let Some(n) = scanned {
                prop_assert_eq!(Some(n), serde, "{}", text);
            } else if let Some(n) = serde {
                // Refused only when long (serde reads up to u64::MAX).
                prop_assert!(n >= 1_000_000_000_000_000_000 || text.starts_with('0'), "{} {}", text, n);
            }
        }

        /// Generated JSON documents, compact and pretty: what the scanner reads equals what
        /// serde reads, it reads every document it is meant to, and `raw_object` returns
        /// exactly the object serde reads.
        #[test]
        fn documents_read_as_serde_reads_them(v in json_value(), pretty in any::<bool>(), cut in any::<prop::sample::Index>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                serde_json::to_string(&v).unwrap()
            };
            let data = text.as_bytes();
            let serde: Value = serde_json::from_slice(data).unwrap();
            let mut c = Cursor::new(data);
            match scan(&mut c) {
                Some(scanned) => {
                    prop_assert_eq!(&scanned, &serde, "{}", text);
                    prop_assert!(c.at_end());
                }
                None => prop_assert!(!scannable(&v), "refused {}", text),
            }
            // Every document of the kind the scanner reads, it reads.
            let plain = scannable_form(&v);
            let plain_text = serde_json::to_string(&plain).unwrap();
            prop_assert_eq!(scan(&mut Cursor::new(plain_text.as_bytes())), Some(plain), "{}", plain_text);
            if v.is_object() {
                let raw = Cursor::new(data).raw_object();
                prop_assert_eq!(raw, Some(data));
                // Cut short, it is never a whole object.
                let short = &data[..cut.index(data.len())];
                prop_assert_eq!(Cursor::new(short).raw_object(), None);
            }
            // Cut short, a document the scanner reads is one serde reads too.
            let short = &data[..cut.index(data.len() + 1)];
            if let Some(scanned) = scan(&mut Cursor::new(short)) {
                let serde = Value::deserialize(&mut serde_json::Deserializer::from_slice(short));
                prop_assert_eq!(Some(scanned), serde.ok(), "{}", String::from_utf8_lossy(short));
            }
        }
    }
}
