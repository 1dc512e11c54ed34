//! Response lines in pi's shape, and the few JavaScript conversions pi's wire behaviour
//! depends on (truthiness, how a value reads in a message, `JSON.parse`'s end-of-input
//! error).

use serde::Serialize;
use serde_json::Value;

/// A response line: `{"id"?, "type":"response", "command", "success", "data"?, "error"?}`,
/// in pi's key order. A field pi leaves `undefined` is no field; `Some(Value::Null)` is
/// `null` (pi's `data: null` of `cycle_model`, an `"id": null` echoed back).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Response {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<Value>,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<Value>,
    success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Response {
    /// pi's `success(id, command, data)`.
    pub(crate) fn success(id: Option<Value>, command: Option<Value>, data: Option<Value>) -> Self {
        Response {
            id,
            kind: "response",
            command,
            success: true,
            data,
            error: None,
        }
    }

    /// pi's `error(id, command, message)`.
    pub(crate) fn error(id: Option<Value>, command: Option<Value>, message: String) -> Self {
        Response {
            id,
            kind: "response",
            command,
            success: false,
            data: None,
            error: Some(message),
        }
    }

    /// The answer to a line that is not JSON (pi's `Failed to parse command: …`).
    pub(crate) fn parse_error(detail: &str) -> Self {
        Response::error(
            None,
            Some(Value::from("parse")),
            format!("Failed to parse command: {detail}"),
        )
    }
}

/// JavaScript's truthiness of a JSON value (`false`, `0`, `""` and `null` are false).
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// How a value reads in a JavaScript template string (`${value}`), for pi's
/// `Unknown command: …`.
pub(crate) fn js_display(v: Option<&Value>) -> String {
    match v {
        None => "undefined".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::Null => String::new(),
                other => js_display(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".to_owned(),
        Some(other) => other.to_string(),
    }
}

/// The reason a line is not JSON, worded as V8's `JSON.parse` words the commonest case (an
/// empty or cut line: `Unexpected end of JSON input`); other errors keep serde_json's text.
pub(crate) fn parse_error_text(e: &serde_json::Error) -> String {
    if e.is_eof() {
        "Unexpected end of JSON input".to_owned()
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(r: &Response) -> String {
        serde_json::to_string(r).unwrap()
    }

    #[test]
    fn key_order_and_absent_fields_are_pis() {
        assert_eq!(
            line(&Response::success(
                Some(json!("req-1")),
                Some(json!("prompt")),
                None
            )),
            r#"{"id":"req-1","type":"response","command":"prompt","success":true}"#
        );
        assert_eq!(
            line(&Response::success(
                None,
                Some(json!("cycle_model")),
                Some(Value::Null)
            )),
            r#"{"type":"response","command":"cycle_model","success":true,"data":null}"#
        );
        assert_eq!(
            line(&Response::error(Some(Value::Null), None, "x".into())),
            r#"{"id":null,"type":"response","success":false,"error":"x"}"#
        );
        assert_eq!(
            line(&Response::parse_error("Unexpected end of JSON input")),
            r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command: Unexpected end of JSON input"}"#
        );
    }

    #[test]
    fn javascript_conversions() {
        for (v, t) in [
            (json!(null), false),
            (json!(false), false),
            (json!(0), false),
            (json!(0.0), false),
            (json!(""), false),
            (json!("0"), true),
            (json!([]), true),
            (json!({}), true),
            (json!(-1), true),
        ] {
            assert_eq!(truthy(&v), t, "{v}");
        }
        assert_eq!(js_display(None), "undefined");
        assert_eq!(js_display(Some(&json!("x"))), "x");
        assert_eq!(js_display(Some(&json!(5))), "5");
        assert_eq!(js_display(Some(&json!(null))), "null");
        assert_eq!(js_display(Some(&json!([1, null, "a"]))), "1,,a");
        assert_eq!(js_display(Some(&json!({"a": 1}))), "[object Object]");
        let eof = serde_json::from_str::<Value>("").unwrap_err();
        assert_eq!(parse_error_text(&eof), "Unexpected end of JSON input");
        let cut = serde_json::from_str::<Value>(r#"{"type":"#).unwrap_err();
        assert_eq!(parse_error_text(&cut), "Unexpected end of JSON input");
        let bad = serde_json::from_str::<Value>("hello").unwrap_err();
        assert!(parse_error_text(&bad).starts_with("expected"), "{bad}");
    }
}
