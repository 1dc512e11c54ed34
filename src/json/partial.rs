//! Partial JSON: a best-effort object from an incomplete JSON text.

use serde_json::{Map, Value};

/// Parses streamed JSON argument fragments into an object.
///
/// Feed fragments with [`push`](Self::push); after each one the target map holds every
/// complete member plus the incomplete tail (an unterminated string is cut at the end of
/// what arrived; an incomplete number, literal or key is left out).
///
/// ```
/// use pi_engine::json::PartialJsonParser;
/// use serde_json::Map;
///
/// let mut parser = PartialJsonParser::new();
/// let mut args = Map::new();
/// parser.push(r#"{"path": "src/ma"#, &mut args);
/// assert_eq!(args["path"], "src/ma");
/// parser.push(r#"in.rs", "n": 4"#, &mut args);
/// assert_eq!(args["path"], "src/main.rs");
/// assert!(args.get("n").is_none() || args["n"] == 4);
/// ```
#[derive(Debug, Clone, Default)]
pub struct PartialJsonParser {
    buffer: String,
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
        *target = parse_streaming_json(&self.buffer);
    }
}

/// Parses a possibly incomplete JSON object text; always returns an object (empty when
/// nothing usable has arrived or the text is not an object).
pub fn parse_streaming_json(text: &str) -> Map<String, Value> {
    if text.trim().is_empty() {
        return Map::new();
    }
    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) {
        return map;
    }
    match serde_json::from_str::<Value>(&close_partial(text)) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Closes open strings, arrays and objects, dropping an incomplete trailing token.
fn close_partial(text: &str) -> String {
    let mut stack: Vec<char> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    // Byte offset up to which the text is a safe prefix to keep when not in a string.
    let mut out = String::with_capacity(text.len() + 8);
    for ch in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == '"' {
                in_string = false;
            }
            out.push(ch);
            continue;
        }
        match ch {
            '"' => in_string = true,
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => {
                stack.pop();
            }
            _ => {}
        }
        out.push(ch);
    }
    if in_string {
        if escaped {
            out.pop();
        }
        // Drop an incomplete \uXXXX escape.
        if let Some(pos) = out.rfind("\\u") {
            let tail = &out[pos + 2..];
            if tail.len() < 4 && tail.chars().all(|c| c.is_ascii_hexdigit()) {
                out.truncate(pos);
            }
        }
        out.push('"');
    }
    trim_incomplete_tail(&mut out, &stack);
    while let Some(close) = stack.pop() {
        out.push(close);
    }
    out
}

fn trim_incomplete_tail(out: &mut String, stack: &[char]) {
    loop {
        let trimmed_len = out.trim_end().len();
        out.truncate(trimmed_len);
        let Some(last) = out.chars().last() else {
            return;
        };
        match last {
            ',' | ':' => {
                out.pop();
                if last == ':' {
                    drop_dangling_key(out);
                }
            }
            '"' if stack.last() == Some(&'}') && is_dangling_key(out) => drop_dangling_key(out),
            c if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '+' => {
                // An unfinished number or literal: keep it only if it parses alone.
                let start = out
                    .rfind(|c: char| {
                        !(c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '+')
                    })
                    .map(|i| i + 1)
                    .unwrap_or(0);
                let token = &out[start..];
                if serde_json::from_str::<Value>(token).is_ok() && !token.ends_with('.') {
                    return;
                }
                out.truncate(start);
            }
            _ => return,
        }
    }
}

/// True when the text ends with a string that is an object key without its value.
fn is_dangling_key(out: &str) -> bool {
    let Some(start) = string_start(out) else {
        return false;
    };
    let before = out[..start].trim_end();
    before.ends_with('{') || before.ends_with(',')
}

fn drop_dangling_key(out: &mut String) {
    let len = out.trim_end().len();
    out.truncate(len);
    if out.ends_with('"')
        && let Some(start) = string_start(out)
    {
        out.truncate(start);
    }
}

/// Byte offset of the opening quote of the string that ends `out`.
fn string_start(out: &str) -> Option<usize> {
    let bytes = out.as_bytes();
    let mut i = bytes.len().checked_sub(1)?;
    if bytes[i] != b'"' {
        return None;
    }
    while i > 0 {
        i -= 1;
        if bytes[i] == b'"' {
            let mut backslashes = 0;
            let mut j = i;
            while j > 0 && bytes[j - 1] == b'\\' {
                backslashes += 1;
                j -= 1;
            }
            if backslashes % 2 == 0 {
                return Some(i);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Value {
        Value::Object(parse_streaming_json(s))
    }

    #[test]
    fn incomplete_inputs() {
        assert_eq!(p(""), json!({}));
        assert_eq!(p("{"), json!({}));
        assert_eq!(p(r#"{"a"#), json!({}));
        assert_eq!(p(r#"{"a":"#), json!({}));
        assert_eq!(p(r#"{"a": "x"#), json!({"a": "x"}));
        assert_eq!(
            p(r#"{"a": "x", "b": [1, 2"#),
            json!({"a": "x", "b": [1, 2]})
        );
        assert_eq!(p(r#"{"a": tr"#), json!({}));
        assert_eq!(p(r#"{"a": 1.5"#), json!({"a": 1.5}));
        assert_eq!(p(r#"{"a": "x\"#), json!({"a": "x"}));
        assert_eq!(p(r#"{"a": {"b": "c"}, "d"#), json!({"a": {"b": "c"}}));
        assert_eq!(p("[1,2]"), json!({}));
    }
}
