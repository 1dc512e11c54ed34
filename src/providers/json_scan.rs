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

/// Member names seen in one object, to refuse duplicates (serde's derived structs reject
/// a repeated field; the fast path must not accept what they reject).
#[derive(Debug, Default)]
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
