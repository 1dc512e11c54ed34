//! Violations worded and ordered as pi (TypeBox) reports them.
//!
//! The `jsonschema` crate finds the errors; this module says them the way pi's TypeBox
//! validator does, because the model reads the text and pi's agents are tuned to it:
//!
//! * TypeBox's messages (`must be integer`, `must have required properties a, b`,
//!   `must be >= 3`, …), and jsonschema's own for the rare kinds TypeBox words differently;
//! * TypeBox's paths: the instance pointer with dots (`a.0.b`, keys escaped as in a JSON
//!   pointer: `a~1b`), `root` for the arguments themselves, and for a missing property the
//!   path of the property;
//! * TypeBox's order: depth first through the schema, and at each schema in TypeBox's keyword
//!   order (`type`, then `required`, `additionalProperties`, `properties`, …), properties in
//!   schema order, items by index;
//! * TypeBox's extra entries: `schema is false` for each property `additionalProperties:
//!   false` rejects, then `must not have additional properties` on the object (also after the
//!   errors of an `additionalProperties` schema); the errors of each failed `anyOf`/`oneOf`
//!   branch before `must match a schema in anyOf`.

use std::collections::HashMap;

use jsonschema::error::ValidationErrorKind as Kind;
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use super::Violation;
use crate::llm::json::js::number_to_string;

/// Sorts after every other entry of the same prefix (an object's own message after its
/// properties' errors).
const LAST: u32 = u32::MAX;

/// One violation and where it sorts.
struct Entry {
    key: Vec<u32>,
    /// Instance pointer (escaped), without the leading `/`.
    path: Vec<String>,
    message: String,
}

/// Everything `instance` does wrong against `schema`, in TypeBox's order and words.
pub(crate) fn violations(
    schema: &Value,
    validator: &Validator,
    instance: &Value,
) -> Vec<Violation> {
    let mut report = Report {
        schema,
        instance,
        entries: Vec::new(),
        required: HashMap::new(),
        synthesized: HashMap::new(),
    };
    for error in validator.iter_errors(instance) {
        report.add(&error);
    }
    let mut entries = report.entries;
    // Stable: errors of one keyword keep the validator's order.
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    entries
        .into_iter()
        .map(|e| Violation {
            path: if e.path.is_empty() {
                "root".to_owned()
            } else {
                e.path.join(".")
            },
            message: e.message,
        })
        .collect()
}

struct Report<'a> {
    schema: &'a Value,
    instance: &'a Value,
    entries: Vec<Entry>,
    /// `required` errors of one object merge into one entry: (evaluation path, instance
    /// path) → index in `entries`.
    required: HashMap<(String, String), usize>,
    /// Entries made once per object or keyword (an object's `must not have additional
    /// properties`, `property names … are invalid`, `must match "then" schema`): key →
    /// index in `entries`.
    synthesized: HashMap<Vec<u32>, usize>,
}

impl<'a> Report<'a> {
    fn add(&mut self, error: &ValidationError<'_>) {
        let path = segments(error.instance_path().as_str());
        let walk = Walk::new(
            self.schema,
            self.instance,
            error.evaluation_path().as_str(),
            &path,
        );
        // Under `then`/`else` TypeBox reports the branch as a whole.
        if let Some((key_len, depth, branch)) = walk.branch {
            self.once(
                walk.key[..key_len].to_vec(),
                path[..depth.min(path.len())].to_vec(),
                format!("must match \"{branch}\" schema"),
            );
            return;
        }
        // Errors inside an `additionalProperties` schema are followed by the object's own.
        for &(key_len, depth) in &walk.additional {
            let mut key = walk.key[..key_len].to_vec();
            key.push(LAST);
            self.once(
                key,
                path[..depth.min(path.len())].to_vec(),
                "must not have additional properties".to_owned(),
            );
        }
        let owner = walk.owner;
        let key = walk.key;
        match error.kind() {
            Kind::Required { property } => {
                let name = property.as_str().unwrap_or_default().to_owned();
                if let Some(message) = dependent_required(owner, self.instance_at(&path), &name) {
                    // TypeBox repeats it for each missing property.
                    self.push(key, path, message);
                    return;
                }
                let group = (
                    error.evaluation_path().as_str().to_owned(),
                    error.instance_path().as_str().to_owned(),
                );
                if let Some(&i) = self.required.get(&group) {
                    let entry = &mut self.entries[i];
                    entry.message.push_str(", ");
                    entry.message.push_str(&name);
                } else {
                    self.required.insert(group, self.entries.len());
                    let mut at = path;
                    at.push(name.clone());
                    self.push(key, at, format!("must have required properties {name}"));
                }
            }
            Kind::AdditionalProperties { unexpected } => {
                let object = self.instance_at(&path).and_then(Value::as_object);
                for name in unexpected {
                    let index = object
                        .and_then(|o| o.keys().position(|k| k == name))
                        .unwrap_or(0);
                    let mut k = key.clone();
                    k.push(index as u32);
                    let mut at = path.clone();
                    at.push(escape(name));
                    self.push(k, at, "schema is false".to_owned());
                }
                let mut k = key;
                k.push(LAST);
                self.push(k, path, "must not have additional properties".to_owned());
            }
            Kind::AdditionalItems { limit } => {
                let len = self
                    .instance_at(&path)
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                for index in *limit..len {
                    let mut k = key.clone();
                    k.push(index as u32);
                    let mut at = path.clone();
                    at.push(index.to_string());
                    self.push(k, at, "schema is false".to_owned());
                }
            }
            Kind::AnyOf { context } | Kind::OneOfNotValid { context } => {
                for branch in context {
                    for inner in branch {
                        self.add(inner);
                    }
                }
                let message = if matches!(error.kind(), Kind::AnyOf { .. }) {
                    "must match a schema in anyOf"
                } else {
                    "must match exactly one schema in oneOf"
                };
                let mut k = key;
                k.push(LAST);
                self.push(k, path, message.to_owned());
            }
            Kind::PropertyNames { error: inner } => {
                let name = inner.instance().as_str().unwrap_or_default().to_owned();
                let index = self
                    .instance_at(&path)
                    .and_then(Value::as_object)
                    .and_then(|o| o.keys().position(|k| *k == name))
                    .unwrap_or(0);
                let mut k = key.clone();
                k.push(index as u32);
                let mut at = path.clone();
                at.push(escape(&name));
                let message = message(inner, None).unwrap_or_else(|| inner.to_string());
                self.push(k, at, message);
                let mut k = key;
                k.push(LAST);
                match self.synthesized.get(&k) {
                    Some(&i) => {
                        let entry = &mut self.entries[i];
                        if let Some(list) = entry.message.strip_suffix(" are invalid") {
                            entry.message = format!("{list}, {name} are invalid");
                        }
                    }
                    None => self.once(k, path, format!("property names {name} are invalid")),
                }
            }
            _ => {
                let message = message(error, owner).unwrap_or_else(|| error.to_string());
                self.push(key, path, message);
            }
        }
    }

    fn push(&mut self, key: Vec<u32>, path: Vec<String>, message: String) {
        self.entries.push(Entry { key, path, message });
    }

    /// Adds an entry unless one with the same key exists.
    fn once(&mut self, key: Vec<u32>, path: Vec<String>, message: String) {
        if !self.synthesized.contains_key(&key) {
            self.synthesized.insert(key.clone(), self.entries.len());
            self.push(key, path, message);
        }
    }

    fn instance_at(&self, path: &[String]) -> Option<&'a Value> {
        path.iter()
            .try_fold(self.instance, |v, seg| child(v, &unescape(seg)))
    }
}

/// TypeBox's message for the common kinds; `None` for the rare ones.
fn message(error: &ValidationError<'_>, owner: Option<&Value>) -> Option<String> {
    let limit = |keyword: &str, fallback: &Value| {
        let n = owner
            .and_then(|o| o.get(keyword))
            .and_then(Value::as_f64)
            .or_else(|| fallback.as_f64())
            .unwrap_or(0.0);
        number_to_string(n)
    };
    Some(match error.kind() {
        Kind::Type { kind } => match owner.and_then(|o| o.get("type")) {
            Some(Value::String(t)) => format!("must be {t}"),
            Some(Value::Array(ts)) if ts.len() > 1 => {
                let names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
                format!("must be either {}", names.join(" or "))
            }
            _ => match kind {
                jsonschema::error::TypeKind::Single(t) => format!("must be {t}"),
                jsonschema::error::TypeKind::Multiple(ts) => {
                    let names: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
                    format!("must be either {}", names.join(" or "))
                }
            },
        },
        Kind::Minimum { limit: l } => format!("must be >= {}", limit("minimum", l)),
        Kind::Maximum { limit: l } => format!("must be <= {}", limit("maximum", l)),
        Kind::ExclusiveMinimum { limit: l } => {
            format!("must be > {}", limit("exclusiveMinimum", l))
        }
        Kind::ExclusiveMaximum { limit: l } => {
            format!("must be < {}", limit("exclusiveMaximum", l))
        }
        Kind::MultipleOf { multiple_of } => format!(
            "must be multiple of {}",
            limit("multipleOf", &Value::from(*multiple_of))
        ),
        Kind::MinLength { limit } => format!("must not have fewer than {limit} characters"),
        Kind::MaxLength { limit } => format!("must not have more than {limit} characters"),
        Kind::MinItems { limit } => format!("must not have fewer than {limit} items"),
        Kind::MaxItems { limit } => format!("must not have more than {limit} items"),
        Kind::MinProperties { limit } => format!("must not have fewer than {limit} properties"),
        Kind::MaxProperties { limit } => format!("must not have more than {limit} properties"),
        Kind::Enum { .. } => "must be equal to one of the allowed values".to_owned(),
        Kind::Constant { .. } => "must be equal to constant".to_owned(),
        Kind::Format { format } => format!("must match format \"{format}\""),
        Kind::Pattern { pattern } => format!("must match pattern \"{pattern}\""),
        Kind::UniqueItems => "must not have duplicate items".to_owned(),
        Kind::Contains => "must contain at least 1 valid item".to_owned(),
        Kind::Not { .. } => "must not be valid".to_owned(),
        Kind::FalseSchema => "schema is false".to_owned(),
        Kind::OneOfMultipleValid { .. } => "must match exactly one schema in oneOf".to_owned(),
        Kind::UnevaluatedProperties { .. } => "must not have unevaluated properties".to_owned(),
        Kind::UnevaluatedItems { .. } => "must not have unevaluated items".to_owned(),
        _ => return None,
    })
}

/// TypeBox's wording when a `required` error comes from `dependentRequired`.
fn dependent_required(
    owner: Option<&Value>,
    object: Option<&Value>,
    missing: &str,
) -> Option<String> {
    let deps = owner?.get("dependentRequired")?.as_object()?;
    let object = object?.as_object()?;
    deps.iter().find_map(|(property, needed)| {
        let needed: Vec<&str> = needed
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        (object.contains_key(property) && needed.contains(&missing)).then(|| {
            format!(
                "must have properties {} when property {property} is present",
                needed.join(", ")
            )
        })
    })
}

/// Where an error sits in TypeBox's depth-first walk of the schema.
struct Walk<'a> {
    /// Sort key: per schema level, the keyword's rank and the member/branch/item index.
    key: Vec<u32>,
    /// The schema object holding the failing keyword.
    owner: Option<&'a Value>,
    /// Each `additionalProperties` schema the path goes through: (key length at that
    /// keyword, instance depth of the object).
    additional: Vec<(usize, usize)>,
    /// Inside `then`/`else`: (key length, instance depth, which branch).
    branch: Option<(usize, usize, &'static str)>,
}

impl<'a> Walk<'a> {
    fn new(root: &'a Value, instance: &'a Value, evaluation_path: &str, path: &[String]) -> Self {
        let mut walk = Walk {
            key: Vec::new(),
            owner: None,
            additional: Vec::new(),
            branch: None,
        };
        let keywords = segments(evaluation_path);
        let mut keywords = keywords.iter().map(|s| unescape(s));
        let mut node = Some(root);
        let mut value = Some(instance);
        let mut depth = 0;
        // The next instance member (a key or an index) the error path goes into.
        let member = |depth: usize| path.get(depth).map(|s| unescape(s));
        while let Some(keyword) = keywords.next() {
            walk.owner = node;
            walk.key.push(rank(&keyword));
            let here = node;
            node = None;
            match keyword.as_str() {
                "properties" | "patternProperties" | "dependentSchemas" => {
                    let Some(name) = keywords.next() else { break };
                    let members = here
                        .and_then(|n| n.get(keyword.as_str()))
                        .and_then(Value::as_object);
                    let index = members.and_then(|m| m.keys().position(|k| *k == name));
                    walk.key.push(index.unwrap_or(0) as u32);
                    node = members.and_then(|m| m.get(&name));
                    if keyword != "dependentSchemas" {
                        let key = if keyword == "properties" {
                            Some(name)
                        } else {
                            member(depth)
                        };
                        value = value.zip(key).and_then(|(v, k)| child(v, &k));
                        depth += 1;
                    }
                }
                "additionalProperties"
                | "unevaluatedProperties"
                | "items"
                | "additionalItems"
                | "unevaluatedItems"
                | "contains" => {
                    let sub = here.and_then(|n| n.get(keyword.as_str()));
                    if let Some(Value::Array(tuple)) = sub {
                        // Draft 7 tuple `items`: the next segment is the position.
                        let Some(i) = keywords.next().and_then(|s| s.parse::<usize>().ok()) else {
                            break;
                        };
                        walk.key.push(i as u32);
                        node = tuple.get(i);
                    } else {
                        let Some(m) = member(depth) else { break };
                        if keyword == "additionalProperties" {
                            walk.additional.push((walk.key.len(), depth));
                        }
                        let index = match value {
                            Some(Value::Object(o)) => o.keys().position(|k| *k == m),
                            _ => m.parse().ok(),
                        };
                        walk.key.push(index.unwrap_or(0) as u32);
                        node = sub;
                    }
                    value = value.zip(member(depth)).and_then(|(v, k)| child(v, &k));
                    depth += 1;
                }
                "prefixItems" | "allOf" | "anyOf" | "oneOf" => {
                    let Some(i) = keywords.next().and_then(|s| s.parse::<usize>().ok()) else {
                        break;
                    };
                    walk.key.push(i as u32);
                    node = here
                        .and_then(|n| n.get(keyword.as_str()))
                        .and_then(|b| b.get(i));
                    if keyword == "prefixItems" {
                        value = value.and_then(|v| v.get(i));
                        depth += 1;
                    }
                }
                "then" | "else" => {
                    if walk.branch.is_none() {
                        let which = if keyword == "then" { "then" } else { "else" };
                        walk.branch = Some((walk.key.len(), depth, which));
                    }
                    node = here.and_then(|n| n.get(keyword.as_str()));
                }
                "not" | "if" | "propertyNames" => node = here.and_then(|n| n.get(keyword.as_str())),
                "$ref" | "$dynamicRef" | "$recursiveRef" => {
                    node = here
                        .and_then(|n| n.get(keyword.as_str()))
                        .and_then(Value::as_str)
                        .and_then(|r| r.strip_prefix('#'))
                        .and_then(|pointer| root.pointer(pointer));
                }
                // The failing keyword.
                _ => {}
            }
        }
        walk
    }
}

/// TypeBox's keyword order at one schema (`schema/engine/schema.mjs`).
fn rank(keyword: &str) -> u32 {
    match keyword {
        "type" => 1,
        "required" => 10,
        "additionalProperties" => 11,
        "dependencies" => 12,
        "dependentRequired" => 13,
        "dependentSchemas" => 14,
        "patternProperties" => 15,
        "properties" => 16,
        "propertyNames" => 17,
        "minProperties" => 18,
        "maxProperties" => 19,
        "additionalItems" => 20,
        "contains" => 21,
        "items" => 22,
        "minContains" => 23,
        "maxContains" => 24,
        "minItems" => 25,
        "maxItems" => 26,
        "prefixItems" => 27,
        "uniqueItems" => 28,
        "minLength" => 30,
        "maxLength" => 31,
        "format" => 32,
        "pattern" => 33,
        "exclusiveMinimum" => 40,
        "exclusiveMaximum" => 41,
        "minimum" => 42,
        "maximum" => 43,
        "multipleOf" => 44,
        "$ref" => 50,
        "$recursiveRef" => 51,
        "$dynamicRef" => 52,
        "const" => 60,
        "enum" => 61,
        "if" | "then" | "else" => 62,
        "not" => 63,
        "allOf" => 64,
        "anyOf" => 65,
        "oneOf" => 66,
        "unevaluatedItems" => 67,
        "unevaluatedProperties" => 68,
        _ => 99,
    }
}

/// The segments of a JSON pointer, still escaped.
fn segments(pointer: &str) -> Vec<String> {
    pointer.split('/').skip(1).map(str::to_owned).collect()
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The member `key` of an object, or the item at index `key` of an array.
fn child<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    match value {
        Value::Object(o) => o.get(key),
        Value::Array(a) => a.get(key.parse::<usize>().ok()?),
        _ => None,
    }
}
