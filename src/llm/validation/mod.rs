//! Tool-call validation: the arguments a model sent, checked against the tool's schema.
//!
//! Before a tool runs, its arguments go through [`validate_tool_call`] (find the tool by name,
//! then validate) or [`validate_tool_arguments`] (validate against a known tool). Both do
//! what pi's `validateToolCall`/`validateToolArguments` do:
//!
//! 1. **Coerce** values a model commonly gets wrong, by the schema's types: `"5"` for an
//!    integer becomes `5`, `"true"` becomes `true`, `null` becomes `""`/`0`/`false`, through
//!    nested objects, arrays and `anyOf`/`oneOf`/`allOf` (see pi's rules in the
//!    `coerce` module docs). The caller gets the **coerced** arguments back; the call itself is
//!    left untouched.
//! 2. **Validate** with a compiled JSON-Schema validator (the `jsonschema` crate). Each
//!    schema is compiled once and kept in a bounded cache keyed by its content; a
//!    [`ToolValidator`] holds one tool's compiled schema, to validate many calls without the
//!    cache lookup.
//! 3. On failure, return a [`ToolCallError`] whose text is pi's, word for word for the common
//!    kinds of error, so a model reading the tool result sees what it would see with pi:
//!
//! ```text
//! Validation failed for tool "add":
//!   - b: must have required properties b
//!   - c: schema is false
//!   - root: must not have additional properties
//!
//! Received arguments:
//! {
//!   "a": 1,
//!   "c": 3
//! }
//! ```
//!
//! ```
//! use pi_engine::llm::{Tool, ToolCall, validate_tool_call};
//! use serde_json::json;
//!
//! let add = Tool::new("add", "Add two integers", json!({
//!     "type": "object",
//!     "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
//!     "required": ["a", "b"],
//!     "additionalProperties": false
//! }));
//! let tools = [add];
//!
//! // "5" is coerced to 5, as pi does.
//! let call = ToolCall::new("call_1", "add", json!({"a": "5", "b": 2}));
//! let args = validate_tool_call(&tools, &call).unwrap();
//! assert_eq!(args["a"], 5);
//!
//! let call = ToolCall::new("call_2", "add", json!({"a": 1, "c": 3}));
//! let err = validate_tool_call(&tools, &call).unwrap_err();
//! assert_eq!(err.violations()[0].to_string(), "b: must have required properties b");
//! assert!(err.to_string().starts_with("Validation failed for tool \"add\":\n  - b: must"));
//!
//! let call = ToolCall::new("call_3", "sub", json!({}));
//! assert_eq!(validate_tool_call(&tools, &call).unwrap_err().to_string(), "Tool \"sub\" not found");
//! ```

mod cache;
mod coerce;
mod report;
mod simple;

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::llm::message::{Tool, ToolCall};

/// How many violations the error text lists (TypeBox stops collecting at eight).
const LISTED: usize = 8;

/// Finds the tool `call` names and validates the call's arguments against it.
///
/// Returns the coerced arguments (see [`validate_tool_arguments`]), or an error whose text is
/// pi's: `Tool "<name>" not found` when no tool has that name.
pub fn validate_tool_call(
    tools: &[Tool],
    call: &ToolCall,
) -> Result<Map<String, Value>, ToolCallError> {
    let Some(tool) = tools.iter().find(|t| t.name == call.name) else {
        return Err(ToolCallError {
            kind: ToolCallErrorKind::NotFound,
            text: format!("Tool \"{}\" not found", call.name),
            tool: call.name.clone(),
            violations: Vec::new(),
        });
    };
    validate_tool_arguments(tool, call)
}

/// Validates `call`'s arguments against `tool`'s parameter schema.
///
/// The arguments are first coerced as pi coerces them (`"5"` → `5` for an integer, …); the
/// coerced arguments are returned when they are valid. `call` is not changed.
///
/// ```
/// use pi_engine::llm::{Tool, ToolCall, ToolCallErrorKind, validate_tool_arguments};
/// use serde_json::json;
///
/// let tool = Tool::new("read", "Read a file", json!({
///     "type": "object",
///     "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
///     "required": ["path"]
/// }));
/// let call = ToolCall::new("c1", "read", json!({"path": "a.txt", "limit": "0"}));
/// let err = validate_tool_arguments(&tool, &call).unwrap_err();
/// assert_eq!(err.kind(), ToolCallErrorKind::InvalidArguments);
/// assert_eq!(err.tool_name(), "read");
/// assert_eq!(err.violations()[0].path(), "limit");
/// assert_eq!(err.violations()[0].message(), "must be >= 1");
/// ```
pub fn validate_tool_arguments(
    tool: &Tool,
    call: &ToolCall,
) -> Result<Map<String, Value>, ToolCallError> {
    check(&tool.parameters, &cache::validator(&tool.parameters), call)
}

/// A tool's argument validator, compiled once.
///
/// [`validate_tool_arguments`] finds the compiled schema in a cache keyed by the schema's
/// content, which costs a walk over the schema on every call. A `ToolValidator` is that
/// lookup done once: keep one per tool to validate many calls (the agent loop keeps one per
/// tool for the length of a run). It validates exactly as [`validate_tool_arguments`] does.
///
/// ```
/// use pi_engine::llm::{Tool, ToolCall, ToolValidator};
/// use serde_json::json;
///
/// let add = Tool::new("add", "Add two integers", json!({
///     "type": "object",
///     "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
///     "required": ["a", "b"]
/// }));
/// let validator = ToolValidator::new(&add);
/// let args = validator.validate(&ToolCall::new("c1", "add", json!({"a": "5", "b": 2}))).unwrap();
/// assert_eq!(args["a"], 5);
/// assert!(validator.validate(&ToolCall::new("c2", "add", json!({"a": 1}))).is_err());
/// ```
#[derive(Clone)]
pub struct ToolValidator {
    schema: Value,
    /// The schema checked directly, when it is simple enough (see the `simple` module).
    simple: Option<Arc<simple::Node>>,
    /// Compiled on first need: always, unless the schema is simple and every call valid.
    compiled: OnceLock<cache::Compiled>,
}

impl fmt::Debug for ToolValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolValidator")
            .field("schema", &self.schema)
            .field("compiles", &self.compiled().is_ok())
            .finish()
    }
}

impl ToolValidator {
    /// Prepares `tool`'s parameter schema. A schema that does not compile is reported by
    /// [`validate`](Self::validate), as [`ToolCallErrorKind::InvalidSchema`].
    ///
    /// Simple schemas (`type`, `properties`, `required`, `additionalProperties`, `items`,
    /// string `enum`s, annotations: what most tools have) are checked directly, and only
    /// compiled (or taken from the cache when an equal schema was compiled before) to
    /// report the violations of invalid arguments.
    pub fn new(tool: &Tool) -> Self {
        ToolValidator {
            simple: simple::Node::parse(&tool.parameters).map(Arc::new),
            compiled: OnceLock::new(),
            schema: tool.parameters.clone(),
        }
    }

    fn compiled(&self) -> &cache::Compiled {
        self.compiled.get_or_init(|| cache::validator(&self.schema))
    }

    /// Validates `call`'s arguments: [`validate_tool_arguments`] against the tool this
    /// validator was made for.
    pub fn validate(&self, call: &ToolCall) -> Result<Map<String, Value>, ToolCallError> {
        if let Some(simple) = &self.simple {
            let coerced = coerce::coerce(Value::Object(call.arguments.clone()), &self.schema);
            if simple.is_valid(&coerced)
                && let Value::Object(args) = coerced
            {
                return Ok(args);
            }
        }
        check(&self.schema, self.compiled(), call)
    }
}

/// Coerces and validates `call`'s arguments against `schema`, compiled as `compiled`.
fn check(
    schema: &Value,
    compiled: &cache::Compiled,
    call: &ToolCall,
) -> Result<Map<String, Value>, ToolCallError> {
    let validator = compiled.as_ref().map_err(|reason| ToolCallError {
        kind: ToolCallErrorKind::InvalidSchema,
        text: format!(
            "Invalid parameter schema for tool \"{}\": {reason}",
            call.name
        ),
        tool: call.name.clone(),
        violations: Vec::new(),
    })?;
    let coerced = coerce::coerce(Value::Object(call.arguments.clone()), schema);
    if validator.is_valid(&coerced)
        && let Value::Object(args) = coerced
    {
        return Ok(args);
    }
    let violations = report::violations(schema, validator, &coerced);
    let mut text = format!("Validation failed for tool \"{}\":\n", call.name);
    if violations.is_empty() {
        text.push_str("Unknown validation error");
    }
    for (i, v) in violations.iter().take(LISTED).enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str("  - ");
        text.push_str(&v.to_string());
    }
    text.push_str("\n\nReceived arguments:\n");
    text.push_str(&crate::llm::json::js::to_string_pretty(&Value::Object(
        call.arguments.clone(),
    )));
    Err(ToolCallError {
        kind: ToolCallErrorKind::InvalidArguments,
        text,
        tool: call.name.clone(),
        violations,
    })
}

/// Why a tool call cannot run: an unknown tool, or arguments that do not match its schema.
///
/// `Display` is pi's text, which is what the model gets back as the tool result. Inspect the
/// error with [`kind`](Self::kind), [`tool_name`](Self::tool_name) and
/// [`violations`](Self::violations).
///
/// ```
/// use pi_engine::llm::{Tool, ToolCall, ToolCallErrorKind, validate_tool_call};
/// use serde_json::json;
///
/// let err = validate_tool_call(&[], &ToolCall::new("c", "ls", json!({}))).unwrap_err();
/// assert_eq!(err.kind(), ToolCallErrorKind::NotFound);
/// assert_eq!(err.tool_name(), "ls");
/// assert!(err.violations().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct ToolCallError {
    kind: ToolCallErrorKind,
    tool: String,
    violations: Vec<Violation>,
    text: String,
}

impl ToolCallError {
    /// What went wrong.
    pub fn kind(&self) -> ToolCallErrorKind {
        self.kind
    }

    /// The tool the call named.
    pub fn tool_name(&self) -> &str {
        &self.tool
    }

    /// Every violation, in pi's order (the text lists the first eight, as pi does). Empty
    /// unless the kind is [`InvalidArguments`](ToolCallErrorKind::InvalidArguments).
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }
}

/// The kinds of [`ToolCallError`].
///
/// ```
/// use pi_engine::llm::{Tool, ToolCall, ToolCallErrorKind, validate_tool_call};
/// use serde_json::json;
///
/// let tools = [Tool::new("ls", "List files", json!({"type": "object"}))];
/// let err = validate_tool_call(&tools, &ToolCall::new("c", "cat", json!({}))).unwrap_err();
/// assert_eq!(err.kind(), ToolCallErrorKind::NotFound);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolCallErrorKind {
    /// No tool has the name the call used.
    NotFound,
    /// The arguments do not match the tool's schema.
    InvalidArguments,
    /// The tool's parameter schema is not a schema the validator can compile.
    InvalidSchema,
}

/// One way the arguments break the schema: where, and what is wrong.
///
/// `Display` is pi's line without the bullet: `<path>: <message>`, where the path is the
/// argument's location with dots (`edits.0.path`), or `root` for the arguments as a whole.
///
/// ```
/// use pi_engine::llm::{Tool, ToolCall, validate_tool_arguments};
/// use serde_json::json;
///
/// let tool = Tool::new("t", "", json!({"type": "object", "properties": {
///     "edits": {"type": "array", "items": {"type": "object", "required": ["path"]}}
/// }}));
/// let call = ToolCall::new("c", "t", json!({"edits": [{"path": "a"}, {}]}));
/// let err = validate_tool_arguments(&tool, &call).unwrap_err();
/// assert_eq!(err.violations()[0].to_string(), "edits.1.path: must have required properties path");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Violation {
    path: String,
    message: String,
}

impl Violation {
    /// Where: the argument's path with dots, or `root`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong, in pi's words for the common cases (`must be integer`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}
