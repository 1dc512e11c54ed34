//! pi's argument coercion: what a model commonly gets wrong, made right before validation.
//!
//! Models send `"5"` for an integer, `"true"` for a boolean, `null` for an omitted string.
//! pi converts such values by the schema's `type` before validating (for plain JSON-Schema
//! tools, which Rust tools always are, its TypeBox `Value.Convert` pass does nothing and only
//! its own JSON-Schema pass runs). This module does the same conversions:
//!
//! * string → number/integer with JavaScript's `Number()` (`" 0x1A "` is 26, `"1e3"` is
//!   1000; an integer must come out whole), string → boolean for `"true"`/`"false"` only;
//! * number/boolean → string (`12.5` → `"12.5"`), 1/0 → boolean, boolean → 1/0;
//! * `null` → the type's zero value (`""`, `0`, `false`); `""`, `0`, `false` → `null`;
//! * into `properties`, `additionalProperties` schemas and `items`, through `allOf`, and
//!   through `anyOf`/`oneOf` by taking the first branch whose coerced value is valid.
//!
//! A value that already has one of several allowed types is left alone; with one type, the
//! first conversion that changes the value wins.

use serde_json::{Map, Number, Value};

use super::cache;

/// Coerces `value` by `schema`, as pi's `coerceWithJsonSchema`.
pub(crate) fn coerce(value: Value, schema: &Value) -> Value {
    let Value::Object(schema) = schema else {
        return value;
    };
    let mut value = value;
    if let Some(Value::Array(all)) = schema.get("allOf") {
        for sub in all {
            value = coerce(value, sub);
        }
    }
    if let Some(Value::Array(any)) = schema.get("anyOf") {
        value = coerce_union(value, any);
    }
    if let Some(Value::Array(one)) = schema.get("oneOf") {
        value = coerce_union(value, one);
    }
    let types = schema_types(schema);
    let names = || types.iter().filter_map(Value::as_str);
    let matches_one_of_several = names().count() > 1 && names().any(|t| has_type(&value, t));
    if !matches_one_of_several && let Some(converted) = names().find_map(|t| convert(&value, t)) {
        value = converted;
    }
    if names().any(|t| t == "object")
        && let Value::Object(map) = &mut value
    {
        coerce_object(map, schema);
    }
    if names().any(|t| t == "array")
        && let Value::Array(items) = &mut value
    {
        coerce_array(items, schema);
    }
    value
}

/// The first branch whose coerced copy of `value` is valid wins; else `value` unchanged.
fn coerce_union(value: Value, branches: &[Value]) -> Value {
    for branch in branches {
        if !branch.is_object() {
            continue;
        }
        let candidate = coerce(value.clone(), branch);
        // A branch that does not compile alone (a `$ref` to the root) is skipped, as in pi.
        if let Ok(validator) = cache::validator(branch)
            && validator.is_valid(&candidate)
        {
            return candidate;
        }
    }
    value
}

fn coerce_object(map: &mut Map<String, Value>, schema: &Map<String, Value>) {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(properties) = properties {
        for (key, sub) in properties {
            if let Some(slot) = map.get_mut(key) {
                *slot = coerce(std::mem::take(slot), sub);
            }
        }
    }
    if let Some(additional @ Value::Object(_)) = schema.get("additionalProperties") {
        for (key, slot) in map.iter_mut() {
            if properties.is_some_and(|p| p.contains_key(key)) {
                continue;
            }
            *slot = coerce(std::mem::take(slot), additional);
        }
    }
}

fn coerce_array(items: &mut [Value], schema: &Map<String, Value>) {
    match schema.get("items") {
        Some(Value::Array(tuple)) => {
            for (slot, sub) in items.iter_mut().zip(tuple) {
                *slot = coerce(std::mem::take(slot), sub);
            }
        }
        Some(sub @ Value::Object(_)) => {
            for slot in items {
                *slot = coerce(std::mem::take(slot), sub);
            }
        }
        _ => {}
    }
}

/// The schema's `type`: a string or an array of them (its strings are the type names).
/// Borrowed, not collected: this runs for every node of every tool call's arguments.
fn schema_types(schema: &Map<String, Value>) -> &[Value] {
    match schema.get("type") {
        Some(t @ Value::String(_)) => std::slice::from_ref(t),
        Some(Value::Array(ts)) => ts,
        _ => &[],
    }
}

fn has_type(value: &Value, t: &str) -> bool {
    match t {
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(is_whole),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "null" => value.is_null(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// `value` converted to type `t`, or `None` when the conversion leaves it as it is.
fn convert(value: &Value, t: &str) -> Option<Value> {
    match (t, value) {
        ("number" | "integer", Value::Null) => Some(Value::from(0)),
        ("number" | "integer", Value::Bool(b)) => Some(Value::from(u8::from(*b))),
        ("number", Value::String(s)) if !js_trim(s).is_empty() => {
            let x = js_to_number(s);
            x.is_finite().then(|| js_number(x))
        }
        ("integer", Value::String(s)) if !js_trim(s).is_empty() => {
            let x = js_to_number(s);
            is_whole(x).then(|| js_number(x))
        }
        ("boolean", Value::Null) => Some(Value::Bool(false)),
        ("boolean", Value::String(s)) => match s.as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ("boolean", Value::Number(n)) => match n.as_f64() {
            Some(1.0) => Some(Value::Bool(true)),
            Some(0.0) => Some(Value::Bool(false)),
            _ => None,
        },
        ("string", Value::Null) => Some(Value::String(String::new())),
        ("string", Value::Number(n)) => Some(Value::String(
            crate::llm::json::js::number_to_string(n.as_f64().unwrap_or(0.0)),
        )),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("null", Value::String(s)) if s.is_empty() => Some(Value::Null),
        ("null", Value::Number(n)) if n.as_f64() == Some(0.0) => Some(Value::Null),
        ("null", Value::Bool(false)) => Some(Value::Null),
        _ => None,
    }
}

fn is_whole(x: f64) -> bool {
    x.is_finite() && x.trunc() == x
}

/// A JavaScript number as JSON: whole numbers that a double holds exactly as integers (so
/// `"5"` becomes `5`, not `5.0`).
fn js_number(x: f64) -> Value {
    const SAFE: f64 = 9_007_199_254_740_991.0;
    if is_whole(x) && x.abs() <= SAFE {
        Value::from(x as i64)
    } else {
        Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

/// Whitespace as JavaScript's `trim` and `Number()` see it.
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

fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// JavaScript's `Number(string)`: decimal with optional sign, fraction and exponent,
/// `Infinity`, or unsigned `0x`/`0o`/`0b` integers, around optional whitespace; else NaN.
pub(crate) fn js_to_number(s: &str) -> f64 {
    let s = js_trim(s);
    if s.is_empty() {
        return 0.0;
    }
    let radix = match s.get(..2) {
        Some("0x" | "0X") => Some(16),
        Some("0o" | "0O") => Some(8),
        Some("0b" | "0B") => Some(2),
        _ => None,
    };
    if let Some(radix) = radix {
        let digits = &s[2..];
        if digits.is_empty() {
            return f64::NAN;
        }
        return digits
            .chars()
            .try_fold(0.0_f64, |acc, c| {
                c.to_digit(radix)
                    .map(|d| acc * f64::from(radix) + f64::from(d))
            })
            .unwrap_or(f64::NAN);
    }
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if unsigned == "Infinity" {
        return if s.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    if is_decimal_literal(unsigned) {
        s.parse().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

/// `digits [. digits?] | . digits`, then an optional exponent.
fn is_decimal_literal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let int = count_digits(&b[i..]);
    i += int;
    let mut frac = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac = count_digits(&b[i..]);
        i += frac;
    }
    if int == 0 && frac == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp = count_digits(&b[i..]);
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

fn count_digits(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_digit()).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn number_like_javascript() {
        for (s, n) in [
            ("5", 5.0),
            (" 12 ", 12.0),
            ("\u{a0}7\n", 7.0),
            ("+5", 5.0),
            ("-5.5", -5.5),
            (".5", 0.5),
            ("5.", 5.0),
            ("1e3", 1000.0),
            ("1E-2", 0.01),
            ("0x1A", 26.0),
            ("0b101", 5.0),
            ("0o17", 15.0),
            ("", 0.0),
            ("Infinity", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
        ] {
            assert_eq!(js_to_number(s), n, "{s:?}");
        }
        for s in [
            "abc", "1_000", "-0x10", "0x", "1e", ".", "inf", "NaN", "1 2", "--1", "e5",
        ] {
            assert!(js_to_number(s).is_nan(), "{s:?}");
        }
    }

    #[test]
    fn conversions() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"},
            "s": {"type": "string"}, "z": {"type": "null"}, "u": {"type": ["string", "null"]},
            "bad": {"type": "integer"}
        }});
        let out = coerce(
            json!({"n": "1.5", "i": "4.0", "b": 0, "s": true, "z": 0, "u": null, "bad": "4.5", "x": "1"}),
            &schema,
        );
        assert_eq!(
            out,
            json!({"n": 1.5, "i": 4, "b": false, "s": "true", "z": null, "u": null, "bad": "4.5", "x": "1"})
        );
        assert_eq!(serde_json::to_string(&out["i"]).unwrap(), "4");
    }

    #[test]
    fn unions_take_the_first_branch_that_validates() {
        let schema = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        assert_eq!(coerce(json!(5), &schema), json!("5"));
        let schema = json!({"oneOf": [{"type": "integer"}, {"type": "string"}]});
        assert_eq!(coerce(json!("7"), &schema), json!(7));
        let schema = json!({"anyOf": [{"type": "integer"}, {"type": "boolean"}]});
        assert_eq!(coerce(json!("x"), &schema), json!("x"));
    }
}
