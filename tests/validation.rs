//! Tool-call validation against pi.
//!
//! `tests/fixtures/pi/validation/golden.json` holds, for each case, what pi-ai 0.73.1's
//! `validateToolArguments` returned (the coerced arguments) or the error text it threw
//! (`gen.mjs` beside it regenerates the file). Ours must give the same, byte for byte.

use pi_engine::llm::{
    Tool, ToolCall, ToolCallErrorKind, ToolValidator, validate_tool_arguments, validate_tool_call,
};
use serde_json::{Value, json};

fn golden() -> Vec<Value> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pi/validation/golden.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Same JSON, numbers compared by value (pi's are doubles) and keys in the same order.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same(vx, vy))
        }
        _ => a == b,
    }
}

#[test]
fn results_and_error_texts_match_pi() {
    let cases = golden();
    assert!(cases.len() >= 30);
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let Some(schema) = case.get("schema") else {
            continue;
        };
        let tool = Tool::new("t", "", schema.clone());
        let call = ToolCall::new("call_1", "t", case["arguments"].clone());
        let ours = validate_tool_arguments(&tool, &call);
        match (ours, case.get("ok"), case.get("error")) {
            (Ok(args), Some(want), None) => {
                if !same(&Value::Object(args.clone()), want) {
                    failures.push(format!("{name}: ok {args:?}\n want {want}"));
                }
            }
            (Err(e), None, Some(want)) => {
                if e.to_string() != want.as_str().unwrap() {
                    failures.push(format!(
                        "{name}:\n--- ours\n{e}\n--- pi\n{}",
                        want.as_str().unwrap()
                    ));
                }
            }
            (ours, _, _) => failures.push(format!("{name}: ours {ours:?}, pi {case}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A compiled `ToolValidator` gives exactly what `validate_tool_arguments` gives, however
/// many calls it validates, including for schemas that do not compile.
#[test]
fn tool_validator_matches_validate_tool_arguments() {
    let mut cases: Vec<(Value, Value)> = golden()
        .into_iter()
        .filter_map(|c| Some((c.get("schema")?.clone(), c["arguments"].clone())))
        .collect();
    cases.push((json!({"type": 5}), json!({"a": 1})));
    for (schema, arguments) in cases {
        let tool = Tool::new("t", "", schema);
        let validator = ToolValidator::new(&tool);
        for id in ["c1", "c2"] {
            let call = ToolCall::new(id, "t", arguments.clone());
            assert_eq!(
                validator.validate(&call),
                validate_tool_arguments(&tool, &call),
                "{:?}",
                tool.parameters
            );
        }
    }
    let bad = ToolValidator::new(&Tool::new("t", "", json!({"type": 5})));
    let err = bad
        .validate(&ToolCall::new("c", "t", json!({})))
        .unwrap_err();
    assert_eq!(err.kind(), ToolCallErrorKind::InvalidSchema);
}

#[test]
fn unknown_tool_matches_pi() {
    let case = golden()
        .into_iter()
        .find(|c| c["name"] == "unknown-tool")
        .unwrap();
    let tools = [Tool::new("t", "", json!({"type": "object"}))];
    let err = validate_tool_call(&tools, &ToolCall::new("c", "nope", json!({}))).unwrap_err();
    assert_eq!(err.to_string(), case["error"].as_str().unwrap());
    assert_eq!(err.kind(), ToolCallErrorKind::NotFound);
}

#[test]
fn the_agent_conformance_case() {
    // agent/golden/invalid-arguments.events.jsonl of the shared conformance suite.
    let tool = Tool::new(
        "add",
        "Add two integers",
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
               "required": ["a", "b"], "additionalProperties": false}),
    );
    let tools = [tool];
    let ok = validate_tool_call(
        &tools,
        &ToolCall::new("call_ok", "add", json!({"a": "5", "b": 2})),
    )
    .unwrap();
    assert_eq!(serde_json::to_string(&ok).unwrap(), r#"{"a":5,"b":2}"#);
    let err = validate_tool_call(
        &tools,
        &ToolCall::new("call_bad", "add", json!({"a": 1, "c": 3})),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Validation failed for tool \"add\":\n  - b: must have required properties b\n  - c: schema is false\n  - root: must not have additional properties\n\nReceived arguments:\n{\n  \"a\": 1,\n  \"c\": 3\n}"
    );
    assert_eq!(err.tool_name(), "add");
    let listed: Vec<String> = err.violations().iter().map(ToString::to_string).collect();
    assert_eq!(
        listed,
        [
            "b: must have required properties b",
            "c: schema is false",
            "root: must not have additional properties"
        ]
    );
}

#[test]
fn the_text_lists_eight_violations_and_the_error_keeps_all() {
    let props: serde_json::Map<String, Value> = (0..12)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    let tool = Tool::new("t", "", json!({"type": "object", "properties": props}));
    let args: serde_json::Map<String, Value> =
        (0..12).map(|i| (format!("p{i}"), json!("x"))).collect();
    let err =
        validate_tool_arguments(&tool, &ToolCall::new("c", "t", Value::Object(args))).unwrap_err();
    assert_eq!(err.violations().len(), 12);
    assert_eq!(err.to_string().matches("\n  - ").count(), 8);
}

#[test]
fn the_call_is_left_as_it_was() {
    let tool = Tool::new(
        "t",
        "",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
    );
    let call = ToolCall::new("c", "t", json!({"n": "1"}));
    let args = validate_tool_arguments(&tool, &call).unwrap();
    assert_eq!(args["n"], 1);
    assert_eq!(call.arguments["n"], "1");
}

#[test]
fn an_invalid_schema_is_an_error_not_a_panic() {
    let tool = Tool::new(
        "t",
        "",
        json!({"type": "object", "properties": {"n": {"type": "whole"}}}),
    );
    let err =
        validate_tool_arguments(&tool, &ToolCall::new("c", "t", json!({"n": 1}))).unwrap_err();
    assert_eq!(err.kind(), ToolCallErrorKind::InvalidSchema);
    assert!(
        err.to_string()
            .starts_with("Invalid parameter schema for tool \"t\": ")
    );
}

#[test]
fn refs_to_definitions_are_followed() {
    let tool = Tool::new(
        "t",
        "",
        json!({"$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
               "type": "object", "properties": {"p": {"$ref": "#/$defs/P"}, "q": {"type": "string"}}}),
    );
    let err = validate_tool_arguments(&tool, &ToolCall::new("c", "t", json!({"q": 1, "p": {}})))
        .map(|_| ())
        .unwrap_err();
    let listed: Vec<String> = err.violations().iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["p.x: must have required properties x"]);
}
