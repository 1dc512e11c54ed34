//! Tool arguments as Rust types: the schema from a struct, the arguments back into it.
//!
//! Write the arguments once, as a struct deriving [`schemars::JsonSchema`] and
//! [`serde::Deserialize`]. [`Tool::for_args`] makes the tool definition (doc comments become
//! the descriptions the model reads), and [`parse_arguments`] turns the arguments of a call,
//! once [validated](crate::llm::validate_tool_call), into the struct.
//!
//! ```
//! use pi_engine::llm::{Tool, ToolCall, parse_arguments, validate_tool_call};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! /// Arguments of the `read` tool.
//! #[derive(Deserialize, JsonSchema)]
//! struct ReadArgs {
//!     /// Path of the file to read.
//!     path: String,
//!     /// Line to start at (1-based).
//!     offset: Option<u32>,
//! }
//!
//! let read = Tool::for_args::<ReadArgs>("read", "Read a file");
//! assert_eq!(read.parameters["properties"]["path"]["description"], "Path of the file to read.");
//! assert_eq!(read.parameters["required"], json!(["path"]));
//!
//! // The model sent the offset as a string; validation coerces it, as pi does.
//! let call = ToolCall::new("call_1", "read", json!({"path": "src/lib.rs", "offset": "10"}));
//! let args = validate_tool_call(&[read], &call).unwrap();
//! let args: ReadArgs = parse_arguments(&args).unwrap();
//! assert_eq!((args.path.as_str(), args.offset), ("src/lib.rs", Some(10)));
//! ```

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::RestrictFormats;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::llm::message::Tool;

impl Tool {
    /// A tool whose parameters are described by the Rust type `T`.
    ///
    /// The schema is self-contained JSON Schema that every provider accepts: subschemas are
    /// inlined (no `$ref`, no `$defs`; only a recursive type keeps a `$ref` to itself, as
    /// nothing else can describe it), there is no `$schema` or root `title`, formats outside
    /// the JSON Schema standard (`uint32`, …) are dropped (ranges stay as `minimum`/`maximum`),
    /// and doc comments become `description`s. An `Option` field is not required and also
    /// accepts `null`; enums of unit variants are string `enum`s; tagged enums are `oneOf`
    /// alternatives. `T` should be a struct (or a map): tool arguments are a JSON object.
    ///
    /// ```
    /// use pi_engine::Tool;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use serde_json::json;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// #[serde(rename_all = "lowercase")]
    /// enum Mode { Fast, Safe }
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Edit { old: String, new: String }
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct EditArgs {
    ///     /// The file to change.
    ///     path: String,
    ///     edits: Vec<Edit>,
    ///     mode: Mode,
    ///     dry_run: Option<bool>,
    /// }
    ///
    /// let tool = Tool::for_args::<EditArgs>("edit", "Edit a file");
    /// assert_eq!(tool.parameters, json!({
    ///     "type": "object",
    ///     "properties": {
    ///         "path": {"description": "The file to change.", "type": "string"},
    ///         "edits": {"type": "array", "items": {
    ///             "type": "object",
    ///             "properties": {"old": {"type": "string"}, "new": {"type": "string"}},
    ///             "required": ["old", "new"]
    ///         }},
    ///         "mode": {"type": "string", "enum": ["fast", "safe"]},
    ///         "dry_run": {"type": ["boolean", "null"]}
    ///     },
    ///     "required": ["path", "edits", "mode"]
    /// }));
    /// ```
    pub fn for_args<T: JsonSchema>(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Tool {
        Tool::new(name, description, parameters_schema::<T>())
    }
}

/// The parameter schema of `T`, as [`Tool::for_args`] makes it.
fn parameters_schema<T: JsonSchema>() -> Value {
    // `$schema` stays during generation so that RestrictFormats knows the standard formats.
    let settings = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .with_transform(RestrictFormats::default());
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(root) = &mut value {
        root.shift_remove("$schema");
        if root.get("title").and_then(Value::as_str) == Some(T::schema_name().as_ref()) {
            root.shift_remove("title");
        }
        // Providers want an object schema at the root; a tagged enum's `oneOf` has none.
        if !root.contains_key("type") {
            // First, where readers expect it.
            let rest = std::mem::take(root);
            root.insert("type".into(), Value::from("object"));
            root.extend(rest);
        }
    }
    value
}

/// Deserializes validated arguments into `T`.
///
/// Call it on what [`validate_tool_call`](crate::llm::validate_tool_call) or
/// [`validate_tool_arguments`](crate::llm::validate_tool_arguments) returned: the arguments are
/// then coerced and checked against the schema, so for a `T` whose schema made the tool
/// (with [`Tool::for_args`]) this only fails on what a schema cannot say.
///
/// # Errors
///
/// The arguments do not fit `T`.
///
/// ```
/// use pi_engine::llm::parse_arguments;
/// use serde::Deserialize;
/// use serde_json::{Map, json};
///
/// #[derive(Deserialize)]
/// struct Args { n: u8 }
///
/// let args: Map<_, _> = json!({"n": 3}).as_object().unwrap().clone();
/// assert_eq!(parse_arguments::<Args>(&args).unwrap().n, 3);
/// let args: Map<_, _> = json!({"n": 300}).as_object().unwrap().clone();
/// assert!(parse_arguments::<Args>(&args).is_err());
/// ```
pub fn parse_arguments<T: DeserializeOwned>(
    arguments: &Map<String, Value>,
) -> Result<T, serde_json::Error> {
    T::deserialize(arguments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::ToolCall;
    use crate::llm::validation::{ToolCallErrorKind, validate_tool_arguments};
    use serde::Deserialize;
    use serde_json::json;

    /// Edit a file.
    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct EditArgs {
        /// Path of the file.
        path: String,
        /// The replacements, in order.
        edits: Vec<Edit>,
        /// How to apply them.
        mode: Option<Mode>,
        /// Lines of context to show.
        context: Option<u32>,
        #[serde(default)]
        dry_run: bool,
        target: Target,
    }

    /// One replacement.
    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    struct Edit {
        old: String,
        new: String,
        /// Replace every occurrence.
        all: Option<bool>,
    }

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        /// Apply without checks.
        Fast,
        /// Check every edit first.
        Safe,
    }

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Target {
        File { path: String },
        Url { url: String },
    }

    fn has_key(v: &Value, key: &str) -> bool {
        match v {
            Value::Object(m) => m.contains_key(key) || m.values().any(|v| has_key(v, key)),
            Value::Array(a) => a.iter().any(|v| has_key(v, key)),
            _ => false,
        }
    }

    #[test]
    fn schema_is_self_contained_and_keeps_descriptions() {
        let tool = Tool::for_args::<EditArgs>("edit", "Edit a file");
        let p = &tool.parameters;
        for key in ["$ref", "$defs", "$schema", "definitions"] {
            assert!(!has_key(p, key), "{key} in {p:#}");
        }
        assert!(p.get("title").is_none());
        assert_eq!(p["type"], "object");
        assert_eq!(p["description"], "Edit a file.");
        assert_eq!(p["additionalProperties"], false);
        assert_eq!(p["required"], json!(["path", "edits", "target"]));
        assert_eq!(p["properties"]["path"]["description"], "Path of the file.");
        let edit = &p["properties"]["edits"]["items"];
        assert_eq!(edit["description"], "One replacement.");
        assert_eq!(
            edit["properties"]["all"]["description"],
            "Replace every occurrence."
        );
        assert_eq!(
            edit["properties"]["all"]["type"],
            json!(["boolean", "null"])
        );
        // `uint32` is not a standard format; the range stays.
        let context = &p["properties"]["context"];
        assert!(context.get("format").is_none());
        assert_eq!(context["minimum"], 0);
        assert_eq!(context["type"], json!(["integer", "null"]));
        // Documented variants keep their descriptions.
        assert!(
            p["properties"]["mode"]
                .to_string()
                .contains("Check every edit first.")
        );
        assert_eq!(
            p["properties"]["target"]["oneOf"].as_array().unwrap().len(),
            2
        );
    }

    #[test]
    fn arguments_round_trip_through_validation() {
        let tool = Tool::for_args::<EditArgs>("edit", "Edit a file");
        let call = ToolCall::new(
            "c1",
            "edit",
            json!({
                "path": "a.rs",
                "edits": [{"old": "x", "new": "y", "all": "true"}, {"old": "1", "new": 2}],
                "mode": "safe",
                "context": "3",
                "target": {"kind": "file", "path": "a.rs"}
            }),
        );
        let args = validate_tool_arguments(&tool, &call).unwrap();
        let parsed: EditArgs = parse_arguments(&args).unwrap();
        assert_eq!(
            parsed,
            EditArgs {
                path: "a.rs".into(),
                edits: vec![
                    Edit {
                        old: "x".into(),
                        new: "y".into(),
                        all: Some(true)
                    },
                    Edit {
                        old: "1".into(),
                        new: "2".into(),
                        all: None
                    },
                ],
                mode: Some(Mode::Safe),
                context: Some(3),
                dry_run: false,
                target: Target::File {
                    path: "a.rs".into()
                },
            }
        );
        // Optional fields may be null or absent.
        let call = ToolCall::new(
            "c2",
            "edit",
            json!({"path": "a", "edits": [], "mode": null, "target": {"kind": "url", "url": "u"}}),
        );
        let parsed: EditArgs =
            parse_arguments(&validate_tool_arguments(&tool, &call).unwrap()).unwrap();
        assert_eq!((parsed.mode, parsed.context), (None, None));
    }

    #[test]
    fn schema_violations_are_reported_in_pi_words() {
        let tool = Tool::for_args::<EditArgs>("edit", "Edit a file");
        let call = ToolCall::new(
            "c1",
            "edit",
            json!({"path": "a", "edits": [{"old": "x"}], "mode": "slow", "context": -1, "target": {"kind": "file"}, "extra": 1}),
        );
        let err = validate_tool_arguments(&tool, &call).unwrap_err();
        assert_eq!(err.kind(), ToolCallErrorKind::InvalidArguments);
        let listed: Vec<String> = err.violations().iter().map(ToString::to_string).collect();
        for expected in [
            "extra: schema is false",
            "root: must not have additional properties",
            "edits.0.new: must have required properties new",
            "mode: must match a schema in anyOf",
            "context: must be >= 0",
            "target.path: must have required properties path",
        ] {
            assert!(
                listed.iter().any(|l| l == expected),
                "{expected} not in {listed:#?}"
            );
        }
    }

    /// A tree of files.
    #[derive(Deserialize, JsonSchema)]
    struct Tree {
        name: String,
        children: Vec<Tree>,
    }

    #[derive(Deserialize, JsonSchema)]
    struct TreeArgs {
        root: Tree,
    }

    #[test]
    fn recursive_types_keep_a_reference_to_themselves() {
        let tool = Tool::for_args::<TreeArgs>("tree", "Make a tree");
        assert!(has_key(&tool.parameters, "$ref"));
        let ok = ToolCall::new(
            "c",
            "tree",
            json!({"root": {"name": "a", "children": [{"name": "b", "children": []}]}}),
        );
        let args: TreeArgs =
            parse_arguments(&validate_tool_arguments(&tool, &ok).unwrap()).unwrap();
        assert_eq!(args.root.name, "a");
        assert_eq!(args.root.children[0].name, "b");
        assert!(args.root.children[0].children.is_empty());
        let bad = ToolCall::new(
            "c",
            "tree",
            json!({"root": {"name": "a", "children": [{"name": "b"}]}}),
        );
        assert!(validate_tool_arguments(&tool, &bad).is_err());
    }

    #[test]
    fn a_tagged_enum_at_the_root_is_an_object_schema() {
        #[derive(Deserialize, JsonSchema)]
        #[serde(tag = "action", rename_all = "lowercase")]
        #[allow(dead_code)]
        enum Action {
            Start { name: String },
            Stop,
        }
        let tool = Tool::for_args::<Action>("act", "Act");
        assert_eq!(
            tool.parameters.as_object().unwrap().keys().next().unwrap(),
            "type"
        );
        assert_eq!(tool.parameters["type"], "object");
        let call = ToolCall::new("c", "act", json!({"action": "start", "name": "x"}));
        let args = validate_tool_arguments(&tool, &call).unwrap();
        assert!(matches!(
            parse_arguments::<Action>(&args).unwrap(),
            Action::Start { .. }
        ));
    }
}
