//! JSON text exactly as JavaScript writes it, for messages that quote JSON the way pi does.
//!
//! `JSON.stringify` differs from serde_json in three ways that show in text a model reads:
//! numbers are doubles written in JavaScript's shortest form (`1e+21`, `0.000001`, `5` for
//! `5.0`), object keys that are array indices come first in ascending order, and the pretty
//! form puts `[]`/`{}` on one line.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// `JSON.stringify(value, null, 2)`.
pub(crate) fn to_string_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some(0));
    out
}

/// `JSON.stringify(value)`.
pub(crate) fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, None);
    out
}

/// Appends `JSON.stringify(value)` to `out`.
#[cfg_attr(not(feature = "google"), allow(dead_code))]
pub(crate) fn write_compact(out: &mut String, value: &Value) {
    write_value(out, value, None);
}

/// `JSON.stringify(value).length`: the length in UTF-16 units of the compact form, computed
/// without writing it.
pub(crate) fn stringified_len(value: &Value) -> u64 {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number_to_string(n.as_f64().unwrap_or(0.0)).len() as u64,
        Value::String(s) => string_len(s),
        Value::Array(items) => {
            2 + items.iter().map(stringified_len).sum::<u64>()
                + items.len().saturating_sub(1) as u64
        }
        Value::Object(map) => stringified_map_len(map),
    }
}

/// [`stringified_len`] of an object.
pub(crate) fn stringified_map_len(map: &Map<String, Value>) -> u64 {
    2 + map
        .iter()
        .map(|(k, v)| string_len(k) + 1 + stringified_len(v))
        .sum::<u64>()
        + map.len().saturating_sub(1) as u64
}

fn string_len(s: &str) -> u64 {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf16() as u64,
        })
        .sum::<u64>()
}

/// `Object.entries(map)`: the members in JavaScript's key order.
pub(crate) fn entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    js_key_order(map)
}

/// `String(number)`: how JavaScript writes a double.
pub(crate) fn number_to_string(x: f64) -> String {
    if x == 0.0 {
        return "0".to_owned();
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN"
        } else if x > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .to_owned();
    }
    // Rust's `{:e}` gives the shortest digits that read back as `x`, as JavaScript does.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    // The decimal point sits after `n` digits.
    let n = exp.parse::<i32>().unwrap_or(0) + 1;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = n - 1;
        let _ = write!(out, "e{}{}", if e >= 0 { "+" } else { "-" }, e.abs());
    }
    out
}

/// Writes `value`; `indent` is the pretty form's depth, `None` for the compact form.
fn write_value(out: &mut String, value: &Value, indent: Option<usize>) {
    let inner = indent.map(|i| i + 1);
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_to_string(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, inner);
                write_value(out, item, inner);
            }
            newline(out, indent);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (key, item)) in js_key_order(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, inner);
                write_string(out, key);
                out.push_str(if indent.is_some() { ": " } else { ":" });
                write_value(out, item, inner);
            }
            newline(out, indent);
            out.push('}');
        }
    }
}

fn newline(out: &mut String, indent: Option<usize>) {
    if let Some(indent) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', indent * 2));
    }
}

/// A JavaScript object lists array-index keys first, ascending, then the others in the order
/// they were added.
fn js_key_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    if entries.iter().any(|(k, _)| array_index(k).is_some()) {
        // Stable: non-index keys keep their order.
        entries.sort_by_key(|(k, _)| array_index(k).map_or((1, 0), |i| (0, i)));
    }
    entries
}

/// The key as an array index (`"0"`, `"42"`; not `"01"` or `"-1"`).
fn array_index(key: &str) -> Option<u32> {
    let i: u32 = key.parse().ok()?;
    (i < u32::MAX && i.to_string() == key).then_some(i)
}

/// Appends `s` as a JSON string literal, escaped as `JSON.stringify` does.
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_as_javascript_writes_them() {
        for (x, js) in [
            (0.0, "0"),
            (-0.0, "0"),
            (5.0, "5"),
            (-12.0, "-12"),
            (1.5, "1.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (1.5e21, "1.5e+21"),
            (-0.000001, "-0.000001"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (0.00001234, "0.00001234"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (12345678901234567890.0, "12345678901234567000"),
        ] {
            assert_eq!(number_to_string(x), js, "{x}");
        }
    }

    #[test]
    fn pretty_like_json_stringify() {
        let v = json!({"b": [1, [], {}, {"c": null}], "a": "q\"\\\n\u{1}é", "2": true, "10": 1, "01": 0});
        assert_eq!(
            to_string_pretty(&v),
            "{\n  \"2\": true,\n  \"10\": 1,\n  \"b\": [\n    1,\n    [],\n    {},\n    {\n      \"c\": null\n    }\n  ],\n  \"a\": \"q\\\"\\\\\\n\\u0001é\",\n  \"01\": 0\n}"
        );
        assert_eq!(to_string_pretty(&json!({})), "{}");
        assert_eq!(
            to_string(&v),
            r#"{"2":true,"10":1,"b":[1,[],{},{"c":null}],"a":"q\"\\\n\u0001é","01":0}"#
        );
        assert_eq!(
            to_string(&json!({"x": 5.0, "y": [1e21]})),
            r#"{"x":5,"y":[1e+21]}"#
        );
    }

    #[test]
    fn compact_like_json_stringify() {
        let v =
            json!({"b": [1.0, [], {}, {"c": null}], "a": "q\"\\\n\u{1}é", "2": true, "x": 1e21});
        assert_eq!(
            to_string(&v),
            r#"{"2":true,"b":[1,[],{},{"c":null}],"a":"q\"\\\n\u0001é","x":1e+21}"#
        );
    }

    #[test]
    fn compact_form_of_scalars_and_index_keys() {
        let v = json!({"b": [1, 2.5, [], {}], "a": "é\"", "1": null, "x": 5.0});
        assert_eq!(
            to_string(&v),
            r#"{"1":null,"b":[1,2.5,[],{}],"a":"é\"","x":5}"#
        );
        assert_eq!(to_string(&json!("s")), r#""s""#);
    }

    #[test]
    fn stringified_length_without_stringifying() {
        for v in [
            json!({"b": [1, 2.5, [], {}], "a": "é\"\u{1}\n😀", "1": null, "x": 5.0, "t": true, "f": false}),
            json!([]),
            json!("plain"),
            json!({"path": "src/main.rs", "oldText": "fn main() {\n\t}\n", "n": 1e21}),
        ] {
            assert_eq!(
                stringified_len(&v),
                to_string(&v).encode_utf16().count() as u64,
                "{v}"
            );
        }
    }
}
