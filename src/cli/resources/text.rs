//! JavaScript's string rules where pi's output depends on them: `trim()` and `\s` (a slightly
//! different set of spaces from Rust's), and `length` (UTF-16 code units, not bytes or chars).

/// JavaScript's WhiteSpace and LineTerminator: Unicode `White_Space` without U+0085 (NEL),
/// plus U+FEFF (the byte-order mark).
pub(crate) fn is_js_whitespace(c: char) -> bool {
    c == '\u{feff}' || (c != '\u{85}' && c.is_whitespace())
}

/// `String.prototype.trim`.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// `String.prototype.length`.
pub(crate) fn js_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// `s.slice(0, n)` in UTF-16 code units; a character that would be cut in half is left out.
pub(crate) fn js_prefix(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > n {
            return &s[..i];
        }
    }
    s
}

/// `s.replace(/[\r\n]+/g, " ").replace(/\s+/g, " ").trim()`: one line, single spaces.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_space = false;
    for c in s.chars() {
        if is_js_whitespace(c) {
            if !in_space {
                out.push(' ');
                in_space = true;
            }
        } else {
            out.push(c);
            in_space = false;
        }
    }
    js_trim(&out).to_owned()
}

/// `<`, `>`, `&`, `"` and `'` as XML entities (pi's `escapeXml`).
pub(crate) fn escape_xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_string_rules() {
        assert_eq!(js_trim("\u{feff} a \u{a0}\n"), "a");
        assert_eq!(js_trim("\u{85}a"), "\u{85}a");
        assert_eq!(js_len("a😀"), 3);
        assert_eq!(js_prefix("ab😀c", 3), "ab");
        assert_eq!(js_prefix("ab😀c", 4), "ab😀");
        assert_eq!(one_line(" a\r\n\tb  c "), "a b c");
        assert_eq!(
            escape_xml("<a & 'b'>\""),
            "&lt;a &amp; &apos;b&apos;&gt;&quot;"
        );
    }
}
