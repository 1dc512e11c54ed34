//! A direct check of the simple schemas most tools have, without compiling them.
//!
//! Compiling a schema with `jsonschema` first validates it against its meta-schema, and the
//! first compile in a process builds the 2020-12 meta-schema validator: several milliseconds
//! before a process's first tool call can run. Most tool schemas use a handful of keywords
//! (`type`, `properties`, `required`, `additionalProperties`, `items`, `enum` of strings,
//! annotations), which this module checks directly. A [`Node`] is only made from a schema
//! that is valid by construction and uses nothing else; anything else (`format`, `minimum`,
//! `anyOf`, `$ref`, numbers in `enum`, …) is left to the compiled validator.
//!
//! It only answers "valid or not": a value it rejects goes through the compiled validator,
//! which reports the violations in pi's words.

use serde_json::{Map, Value};

/// The JSON types a `type` keyword names, as bits.
const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const INTEGER: u8 = 4;
const NUMBER: u8 = 8;
const STRING: u8 = 16;
const ARRAY: u8 = 32;
const OBJECT: u8 = 64;

/// A schema this module checks directly.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// `true` (or `{}`): anything.
    Any,
    /// `false`: nothing.
    Never,
    /// An object schema.
    Schema(Box<Keywords>),
}

#[derive(Debug, Clone)]
pub(crate) struct Keywords {
    /// Allowed types as bits; `None` when there is no `type`.
    types: Option<u8>,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    additional: Node,
    items: Node,
    /// Allowed values (strings, booleans and null only: their equality is `==`).
    allowed: Option<Vec<Value>>,
}

impl Node {
    /// The node of `schema`, or `None` when the schema is not one this module handles.
    pub(crate) fn parse(schema: &Value) -> Option<Node> {
        match schema {
            Value::Bool(true) => Some(Node::Any),
            Value::Bool(false) => Some(Node::Never),
            Value::Object(map) => parse_object(map),
            _ => None,
        }
    }

    /// True when `value` is valid.
    pub(crate) fn is_valid(&self, value: &Value) -> bool {
        match self {
            Node::Any => true,
            Node::Never => false,
            Node::Schema(k) => k.is_valid(value),
        }
    }
}

fn parse_object(map: &Map<String, Value>) -> Option<Node> {
    let mut k = Keywords {
        types: None,
        properties: Vec::new(),
        required: Vec::new(),
        additional: Node::Any,
        items: Node::Any,
        allowed: None,
    };
    let mut any = true;
    for (key, value) in map {
        match key.as_str() {
            "type" => k.types = Some(parse_types(value)?),
            "properties" => {
                let Value::Object(props) = value else {
                    return None;
                };
                for (name, sub) in props {
                    k.properties.push((name.clone(), Node::parse(sub)?));
                }
            }
            "required" => {
                let Value::Array(names) = value else {
                    return None;
                };
                for name in names {
                    let name = name.as_str()?;
                    // The meta-schema wants unique names.
                    if k.required.iter().any(|n| n == name) {
                        return None;
                    }
                    k.required.push(name.to_owned());
                }
            }
            "additionalProperties" => k.additional = Node::parse(value)?,
            "items" => k.items = Node::parse(value)?,
            "enum" => {
                let Value::Array(values) = value else {
                    return None;
                };
                // Numbers compare by value in JSON Schema (`1` equals `1.0`), not by `==`.
                if !values
                    .iter()
                    .all(|v| matches!(v, Value::String(_) | Value::Bool(_) | Value::Null))
                {
                    return None;
                }
                k.allowed = Some(values.clone());
            }
            "description" | "title" | "$comment" => {
                value.as_str()?;
                continue;
            }
            "examples" => {
                value.as_array()?;
                continue;
            }
            "default" => continue,
            _ => return None,
        }
        any = false;
    }
    if any {
        return Some(Node::Any);
    }
    Some(Node::Schema(Box::new(k)))
}

fn parse_types(value: &Value) -> Option<u8> {
    let bit = |name: &str| -> Option<u8> {
        Some(match name {
            "null" => NULL,
            "boolean" => BOOLEAN,
            "integer" => INTEGER,
            "number" => NUMBER,
            "string" => STRING,
            "array" => ARRAY,
            "object" => OBJECT,
            _ => return None,
        })
    };
    match value {
        Value::String(name) => bit(name),
        // The meta-schema wants at least one type, each once.
        Value::Array(names) if !names.is_empty() => {
            let mut bits = 0;
            for name in names {
                let b = bit(name.as_str()?)?;
                if bits & b != 0 {
                    return None;
                }
                bits |= b;
            }
            Some(bits)
        }
        _ => None,
    }
}

fn type_bits(value: &Value) -> u8 {
    match value {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        // An integer is any number without a fractional part (`1.0` included).
        Value::Number(n) => {
            let whole = n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
            if whole { INTEGER | NUMBER } else { NUMBER }
        }
        Value::String(_) => STRING,
        Value::Array(_) => ARRAY,
        Value::Object(_) => OBJECT,
    }
}

impl Keywords {
    fn is_valid(&self, value: &Value) -> bool {
        if let Some(types) = self.types
            && type_bits(value) & types == 0
        {
            return false;
        }
        if let Some(allowed) = &self.allowed
            && !allowed.contains(value)
        {
            return false;
        }
        match value {
            Value::Object(map) => {
                self.required.iter().all(|name| map.contains_key(name))
                    && map.iter().all(|(name, v)| {
                        match self.properties.iter().find(|(n, _)| n == name) {
                            Some((_, node)) => node.is_valid(v),
                            None => self.additional.is_valid(v),
                        }
                    })
            }
            Value::Array(items) => items.iter().all(|v| self.items.is_valid(v)),
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every schema here must be handled, and agree with the compiled validator on every
    /// value.
    #[test]
    fn agrees_with_the_compiled_validator() {
        let schemas = [
            json!({}),
            json!(true),
            json!({"type": "object", "properties": {"i": {"type": ["number", "null"]}, "k": {"type": ["number", "null"]}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": false}),
            json!({"type": "object", "properties": {"path": {"type": "string", "description": "Path"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["path"], "title": "T", "default": {}, "examples": [{}]}),
            json!({"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]}, "x": false}, "additionalProperties": {"type": "boolean"}}),
            json!({"type": ["object", "array"], "items": {"type": "object", "properties": {"n": {"type": "null"}}}}),
            json!({"enum": ["x", true, null]}),
        ];
        let values = [
            json!({}),
            json!({"i": 1, "k": 0}),
            json!({"i": 1.5, "k": null}),
            json!({"i": "1"}),
            json!({"a": 1, "b": 2}),
            json!({"a": 1.0, "b": -2}),
            json!({"a": 1.5, "b": 2}),
            json!({"a": 1}),
            json!({"a": 1, "b": 2, "c": 3}),
            json!({"path": "p", "tags": ["a", "b"]}),
            json!({"path": "p", "tags": ["a", 1]}),
            json!({"tags": []}),
            json!({"mode": "a"}),
            json!({"mode": "c"}),
            json!({"x": 1}),
            json!({"other": true}),
            json!({"other": "true"}),
            json!([{"n": null}, {"n": 0}]),
            json!([{"n": null}]),
            json!([]),
            json!("x"),
            json!(true),
            json!(null),
            json!(1),
            json!(12345678901234567890u64),
            json!(1e300),
        ];
        for schema in &schemas {
            let node = Node::parse(schema).unwrap_or_else(|| panic!("handled: {schema}"));
            let compiled = jsonschema::validator_for(schema).unwrap();
            for value in &values {
                assert_eq!(
                    node.is_valid(value),
                    compiled.is_valid(value),
                    "{schema} on {value}"
                );
            }
        }
    }

    #[test]
    fn leaves_other_schemas_to_the_compiler() {
        for schema in [
            json!({"type": "string", "format": "uri"}),
            json!({"type": "integer", "minimum": 1}),
            json!({"anyOf": [{"type": "string"}]}),
            json!({"$ref": "#/$defs/a", "$defs": {"a": {}}}),
            json!({"enum": [1, 2]}),
            json!({"type": "strin"}),
            json!({"type": []}),
            json!({"type": ["string", "string"]}),
            json!({"required": ["a", "a"]}),
            json!({"required": "a"}),
            json!({"description": 5}),
            json!({"properties": {"a": {"type": 5}}}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
            json!(5),
        ] {
            assert!(Node::parse(&schema).is_none(), "{schema}");
        }
    }
}
