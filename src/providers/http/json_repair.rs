//! pi's `repairJson`: the second chance for a streamed JSON event that does not parse, for
//! servers that put raw control characters or invalid escapes inside strings.

use std::borrow::Cow;

/// Escapes raw control characters inside strings and doubles a backslash that does not start
/// a valid escape. Returns the input unchanged (borrowed) when there is nothing to repair.
///
/// Linear: one pass over the text, only when the first parse failed.
pub(crate) fn repair_json(json: &str) -> Cow<'_, str> {
    let bytes = json.as_bytes();
    let mut out: Option<String> = None;
    let mut in_string = false;
    let mut i = 0;
    // Copies `json[..upto]` into `out` the first time a change is needed.
    let start = |out: &mut Option<String>, upto: usize| -> String {
        out.take().unwrap_or_else(|| {
            let mut s = String::with_capacity(json.len() + 16);
            s.push_str(&json[..upto]);
            s
        })
    };
    while i < bytes.len() {
        let b = bytes[i];
        if !in_string {
            if b == b'"' {
                in_string = true;
            }
            if let Some(o) = out.as_mut() {
                o.push(b as char);
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = false;
                if let Some(o) = out.as_mut() {
                    o.push('"');
                }
                i += 1;
            }
            b'\\' => {
                let next = bytes.get(i + 1).copied();
                let valid = match next {
                    Some(b'u') => {
                        bytes.len() >= i + 6
                            && bytes[i + 2..i + 6].iter().all(u8::is_ascii_hexdigit)
                    }
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => true,
                    _ => false,
                };
                if valid {
                    let len = if next == Some(b'u') { 6 } else { 2 };
                    if let Some(o) = out.as_mut() {
                        o.push_str(&json[i..i + len]);
                    }
                    i += len;
                } else {
                    let mut o = start(&mut out, i);
                    o.push_str("\\\\");
                    out = Some(o);
                    i += 1;
                }
            }
            0x00..=0x1f => {
                let mut o = start(&mut out, i);
                match b {
                    0x08 => o.push_str("\\b"),
                    0x0c => o.push_str("\\f"),
                    b'\n' => o.push_str("\\n"),
                    b'\r' => o.push_str("\\r"),
                    b'\t' => o.push_str("\\t"),
                    _ => o.push_str(&format!("\\u{b:04x}")),
                }
                out = Some(o);
                i += 1;
            }
            _ => {
                // Copy a whole UTF-8 character.
                let len = utf8_len(b);
                if let Some(o) = out.as_mut() {
                    o.push_str(&json[i..(i + len).min(json.len())]);
                }
                i += len;
            }
        }
    }
    match out {
        Some(s) => Cow::Owned(s),
        None => Cow::Borrowed(json),
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_control_characters_and_bad_escapes() {
        assert!(matches!(
            repair_json(r#"{"a":"ok \n \u00e9"}"#),
            Cow::Borrowed(_)
        ));
        let fixed = repair_json("{\"a\":\"line\nnext\ttab \\d é\"}");
        assert_eq!(fixed, "{\"a\":\"line\\nnext\\ttab \\\\d é\"}");
        let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["a"], "line\nnext\ttab \\d é");
        // Control characters outside strings are left alone (they are whitespace or errors).
        assert_eq!(repair_json("{\n\"a\": 1}"), "{\n\"a\": 1}");
    }
}
