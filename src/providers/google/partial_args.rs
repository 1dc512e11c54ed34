//! Vertex's streamed function-call arguments: `functionCall.partialArgs` fragments, each a
//! value at a JSONPath (`$.recipe.ingredients[0].name`), a string possibly continued by the
//! next fragments (`willContinue`), folded into one JSON object.
//!
//! Two results are kept: the object itself (the truth, sent in `toolcall_end`), and JSON
//! text written as the fragments arrive, so that `toolcall_delta`s stream the arguments
//! like other providers' do. Google sends the leaves in document order; then the text is
//! exactly the object's JSON. A path that goes back into an object already closed would
//! make the text repeat a key; the object stays right.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::llm::json::js;

/// One `partialArgs` entry.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireArg<'a> {
    #[serde(default, borrow)]
    json_path: Cow<'a, str>,
    #[serde(default, borrow)]
    string_value: Option<Cow<'a, str>>,
    /// A JSON number; anything else (`"NaN"`) is ignored.
    #[serde(default)]
    number_value: Option<Value>,
    #[serde(default)]
    bool_value: Option<bool>,
    /// Present (with any value, usually `"NULL_VALUE"`) for a `null` leaf.
    #[serde(default, deserialize_with = "present")]
    null_value: bool,
    #[serde(default)]
    will_continue: Option<bool>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// A step of a JSONPath: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// A container whose closing bracket is not written yet.
#[derive(Debug)]
struct Frame {
    /// How the parent reaches it (`Key("")` for the root).
    segment: Segment,
    array: bool,
    /// Members written so far (a comma goes before the next one).
    children: usize,
}

/// The arguments of one streamed call.
#[derive(Debug, Default)]
pub(super) struct PartialArgs {
    root: Value,
    /// Open containers of the text written so far; `stack[0]` is the root object.
    stack: Vec<Frame>,
    /// The string leaf whose closing quote is not written yet.
    open_string: Option<Vec<Segment>>,
}

impl PartialArgs {
    /// Arguments starting from `initial` (the `args` of the call's first part, if any); the
    /// text for them is appended to `delta`.
    pub(super) fn new(initial: Map<String, Value>, delta: &mut String) -> Self {
        let mut this = PartialArgs {
            root: Value::Object(Map::new()),
            stack: Vec::new(),
            open_string: None,
        };
        if !initial.is_empty() {
            let children = initial.len();
            let start = delta.len();
            js::write_compact(delta, &Value::Object(initial.clone()));
            // Leave the object open for the fragments.
            if delta.ends_with('}') && delta.len() > start {
                delta.pop();
            }
            this.stack.push(Frame {
                segment: Segment::Key(String::new()),
                array: false,
                children,
            });
            this.root = Value::Object(initial);
        }
        this
    }

    /// Folds one fragment in; the text it adds is appended to `delta`. Fragments with an
    /// unreadable path or no value are ignored.
    pub(super) fn apply(&mut self, arg: &WireArg<'_>, delta: &mut String) {
        let Some(path) = parse_path(&arg.json_path) else {
            return;
        };
        let will_continue = arg.will_continue == Some(true);
        if let Some(more) = &arg.string_value
            && self.open_string.as_ref() == Some(&path)
        {
            // The next piece of the string being written.
            escape_into(delta, more);
            match slot(&mut self.root, &path) {
                Value::String(s) => s.push_str(more),
                other => *other = Value::String(more.to_string()),
            }
            if !will_continue {
                delta.push('"');
                self.open_string = None;
            }
            return;
        }
        let value = if let Some(s) = &arg.string_value {
            Value::String(s.to_string())
        } else if let Some(n @ Value::Number(_)) = &arg.number_value {
            n.clone()
        } else if let Some(b) = arg.bool_value {
            Value::Bool(b)
        } else if arg.null_value {
            Value::Null
        } else {
            return;
        };
        self.close_string(delta);
        self.write_leaf(
            &path,
            &value,
            arg.string_value.is_some() && will_continue,
            delta,
        );
        if arg.string_value.is_some() && will_continue {
            self.open_string = Some(path.clone());
        }
        *slot(&mut self.root, &path) = value;
    }

    /// Closes what is open (the text's last characters go to `delta`) and returns the
    /// object.
    pub(super) fn finish(mut self, delta: &mut String) -> Map<String, Value> {
        self.close_string(delta);
        if self.stack.is_empty() {
            delta.push_str("{}");
        }
        while let Some(frame) = self.stack.pop() {
            delta.push(if frame.array { ']' } else { '}' });
        }
        match self.root {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn close_string(&mut self, delta: &mut String) {
        if self.open_string.take().is_some() {
            delta.push('"');
        }
    }

    /// Writes the text that moves from the containers open now to the leaf at `path` and
    /// its value (without the closing quote of a string still to be continued).
    fn write_leaf(&mut self, path: &[Segment], value: &Value, open: bool, delta: &mut String) {
        let Some((leaf, containers)) = path.split_last() else {
            return;
        };
        if self.stack.is_empty() {
            delta.push('{');
            self.stack.push(Frame {
                segment: Segment::Key(String::new()),
                array: false,
                children: 0,
            });
        }
        // Keep the containers the new path shares with the open ones; close the rest.
        let mut common = 0;
        while common < containers.len()
            && common + 1 < self.stack.len()
            && self.stack[common + 1].segment == containers[common]
        {
            common += 1;
        }
        while self.stack.len() > common + 1 {
            if let Some(frame) = self.stack.pop() {
                delta.push(if frame.array { ']' } else { '}' });
            }
        }
        for (i, segment) in containers.iter().enumerate().skip(common) {
            self.member_prefix(segment, delta);
            let next = containers.get(i + 1).unwrap_or(leaf);
            let array = matches!(next, Segment::Index(_));
            delta.push(if array { '[' } else { '{' });
            self.stack.push(Frame {
                segment: segment.clone(),
                array,
                children: 0,
            });
        }
        self.member_prefix(leaf, delta);
        match value {
            Value::String(s) if open => {
                delta.push('"');
                escape_into(delta, s);
            }
            other => js::write_compact(delta, other),
        }
    }

    /// The comma and key before a new member of the innermost open container.
    fn member_prefix(&mut self, segment: &Segment, delta: &mut String) {
        if let Some(parent) = self.stack.last_mut() {
            if parent.children > 0 {
                delta.push(',');
            }
            parent.children += 1;
        }
        if let Segment::Key(key) = segment {
            js::write_string(delta, key);
            delta.push(':');
        }
    }
}

/// A JSON string's content, escaped, without quotes.
fn escape_into(out: &mut String, s: &str) {
    let start = out.len();
    js::write_string(out, s);
    // Drop the quotes `write_string` added.
    out.remove(start);
    out.pop();
}

/// The value at `path` under `root`, creating objects and arrays on the way (and replacing
/// values of the wrong kind).
fn slot<'v>(root: &'v mut Value, path: &[Segment]) -> &'v mut Value {
    let mut current = root;
    for segment in path {
        current = match segment {
            Segment::Key(key) => {
                if !current.is_object() {
                    *current = Value::Object(Map::new());
                }
                match current {
                    Value::Object(map) => map.entry(key.clone()).or_insert(Value::Null),
                    _ => unreachable!("made an object above"),
                }
            }
            Segment::Index(index) => {
                if !current.is_array() {
                    *current = Value::Array(Vec::new());
                }
                match current {
                    Value::Array(items) => {
                        if items.len() <= *index {
                            items.resize(index + 1, Value::Null);
                        }
                        &mut items[*index]
                    }
                    _ => unreachable!("made an array above"),
                }
            }
        };
    }
    current
}

/// `$.a.b[0]['c d']` → `[a, b, 0, "c d"]`; `None` for the root itself or a path this
/// reader does not understand.
fn parse_path(path: &str) -> Option<Vec<Segment>> {
    let mut rest = path.strip_prefix('$')?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return None;
            }
            out.push(Segment::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']')?;
            let inner = &after[..close];
            if let Some(quoted) = inner
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
            {
                out.push(Segment::Key(quoted.to_owned()));
            } else {
                out.push(Segment::Index(inner.parse().ok()?));
            }
            rest = &after[close + 1..];
        } else {
            return None;
        }
    }
    // The arguments are an object: the first step is a key.
    match out.first() {
        Some(Segment::Key(_)) => Some(out),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fold(initial: Value, fragments: &[Value]) -> (Value, String) {
        let mut text = String::new();
        let Value::Object(initial) = initial else {
            panic!()
        };
        let mut args = PartialArgs::new(initial, &mut text);
        for f in fragments {
            let json = f.to_string();
            let arg: WireArg<'_> = serde_json::from_str(&json).unwrap();
            args.apply(&arg, &mut text);
        }
        let map = args.finish(&mut text);
        (Value::Object(map), text)
    }

    #[test]
    fn nested_objects_arrays_and_continued_strings() {
        let (value, text) = fold(
            json!({}),
            &[
                json!({"jsonPath": "$.recipe.ingredients[0].amount", "stringValue": "16 oz", "willContinue": true}),
                json!({"jsonPath": "$.recipe.ingredients[0].amount", "stringValue": ""}),
                json!({"jsonPath": "$.recipe.ingredients[0].name", "stringValue": "Noodles \"fresh\""}),
                json!({"jsonPath": "$.recipe.ingredients[1].amount", "numberValue": 1.5}),
                json!({"jsonPath": "$.recipe.ingredients[1].ok", "boolValue": true}),
                json!({"jsonPath": "$.recipe.name", "stringValue": "Lasa", "willContinue": true}),
                json!({"jsonPath": "$.recipe.name", "stringValue": "gna", "willContinue": true}),
                json!({"jsonPath": "$.recipe.steps[0]", "stringValue": "Preheat to 190°C."}),
                json!({"jsonPath": "$.recipe.steps[1]", "nullValue": "NULL_VALUE"}),
                json!({"jsonPath": "$.count", "numberValue": 2}),
            ],
        );
        let want = json!({"recipe": {
            "ingredients": [{"amount": "16 oz", "name": "Noodles \"fresh\""}, {"amount": 1.5, "ok": true}],
            "name": "Lasagna",
            "steps": ["Preheat to 190°C.", null]
        }, "count": 2});
        assert_eq!(value, want);
        // The streamed text is the same object, as JavaScript writes it.
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), want);
        assert_eq!(
            text,
            r#"{"recipe":{"ingredients":[{"amount":"16 oz","name":"Noodles \"fresh\""},{"amount":1.5,"ok":true}],"name":"Lasagna","steps":["Preheat to 190°C.",null]},"count":2}"#
        );
    }

    #[test]
    fn empty_initial_and_ignored_fragments() {
        let (value, text) = fold(json!({}), &[]);
        assert_eq!((value, text.as_str()), (json!({}), "{}"));
        let (value, text) = fold(
            json!({"a": 1}),
            &[
                json!({"jsonPath": "$", "stringValue": "root"}),
                json!({"jsonPath": "$[0]", "stringValue": "array root"}),
                json!({"jsonPath": "$.b..c", "stringValue": "bad"}),
                json!({"jsonPath": "$.b[x]", "stringValue": "bad"}),
                json!({"jsonPath": "$.b", "numberValue": "NaN"}),
                json!({"jsonPath": "$['c d']", "stringValue": "quoted"}),
            ],
        );
        assert_eq!(value, json!({"a": 1, "c d": "quoted"}));
        assert_eq!(text, r#"{"a":1,"c d":"quoted"}"#);
    }

    #[test]
    fn revisited_object_keeps_the_value_right() {
        let (value, text) = fold(
            json!({}),
            &[
                json!({"jsonPath": "$.a.x", "numberValue": 1}),
                json!({"jsonPath": "$.b", "numberValue": 2}),
                json!({"jsonPath": "$.a.y", "numberValue": 3}),
            ],
        );
        assert_eq!(value, json!({"a": {"x": 1, "y": 3}, "b": 2}));
        // The text repeats "a" (valid JSON, the later member wins when read back).
        assert_eq!(text, r#"{"a":{"x":1},"b":2,"a":{"y":3}}"#);
    }

    #[test]
    fn string_left_open_is_closed_at_the_end() {
        let (value, text) = fold(
            json!({}),
            &[json!({"jsonPath": "$.s", "stringValue": "line\n", "willContinue": true})],
        );
        assert_eq!(value, json!({"s": "line\n"}));
        assert_eq!(text, r#"{"s":"line\n"}"#);
    }
}
