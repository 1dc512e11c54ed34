//! Which recorded interaction answers a request: [`Match`], and the JSON diff shown when
//! none does.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::format::{Body, RecordedRequest};
use super::scrub::pointer_token;

/// The values ignored by default when requests are compared, because they change on every
/// run: [`Match::default`]'s `ignore` list.
///
/// * JSON body members (at any depth): session and cache keys (`session_id`, `sessionId`,
///   `prompt_cache_key`, `promptCacheKey`, `cache_key`, `cacheKey`, `user_id` — Anthropic's
///   `metadata.user_id` holds the session), timestamps (`timestamp`, `created`,
///   `created_at`, `createdAt`), request ids (`request_id`, `requestId`,
///   `idempotency_key`);
/// * query parameters: SigV4's `X-Amz-Date`, `X-Amz-Signature`, `X-Amz-Credential`,
///   `X-Amz-Security-Token`, `X-Amz-Expires`;
/// * headers (only compared when [`Match::header`] selects them): `date`, `x-amz-date`,
///   `x-amz-content-sha256`, `x-amz-security-token`, `authorization` (a SigV4 signature
///   changes with the date), `user-agent`, `idempotency-key`, `x-request-id`,
///   `x-client-request-id`, `session_id`, `x-session-affinity`.
pub const DEFAULT_IGNORED: &[&str] = &[
    "session_id",
    "sessionId",
    "prompt_cache_key",
    "promptCacheKey",
    "cache_key",
    "cacheKey",
    "user_id",
    "timestamp",
    "created",
    "created_at",
    "createdAt",
    "request_id",
    "requestId",
    "idempotency_key",
    "X-Amz-Date",
    "X-Amz-Signature",
    "X-Amz-Credential",
    "X-Amz-Security-Token",
    "X-Amz-Expires",
    "date",
    "x-amz-date",
    "x-amz-content-sha256",
    "x-amz-security-token",
    "authorization",
    "user-agent",
    "idempotency-key",
    "x-request-id",
    "x-client-request-id",
    "x-session-affinity",
];

/// How a replayed request is matched with a recorded one.
///
/// By default: in order (the n-th request is answered by the n-th interaction), comparing
/// the method, the URL path and the body, ignoring [`DEFAULT_IGNORED`]. Both sides are
/// scrubbed the same way before they are compared, so a key never makes a difference.
///
/// An `ignore` entry is a member name, ignored at any depth of a JSON body and as a query
/// parameter or header name (case-insensitive for those two), or a JSON pointer into the
/// body (`/metadata/user_id`, `/messages/0/content`) that removes that one member.
///
/// ```
/// use pi_engine::cassette::Match;
///
/// let strict = Match::default()
///     .with_query(true)
///     .header("anthropic-beta")
///     .ignore("/temperature")
///     .with_ordered(false);
/// assert!(strict.query && !strict.ordered);
/// assert_eq!(strict.headers, ["anthropic-beta"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Match {
    /// Compare the methods (default true).
    pub method: bool,
    /// Compare the URL paths (default true). The scheme, host and port are never compared:
    /// a recording against a local server replays against any.
    pub path: bool,
    /// Compare the query parameters (default false).
    pub query: bool,
    /// Compare the bodies (default true): JSON bodies as JSON (member order does not
    /// matter), others as text.
    pub body: bool,
    /// Headers compared, by name (default none).
    pub headers: Vec<String>,
    /// What is left out of the comparison (default [`DEFAULT_IGNORED`]).
    pub ignore: Vec<String>,
    /// Replay in order (default true); when false, a request is answered by the first
    /// interaction not used yet that matches it.
    pub ordered: bool,
}

impl Default for Match {
    fn default() -> Self {
        Match {
            method: true,
            path: true,
            query: false,
            body: true,
            headers: Vec::new(),
            ignore: DEFAULT_IGNORED.iter().map(|s| (*s).to_owned()).collect(),
            ordered: true,
        }
    }
}

impl Match {
    /// The default matching.
    pub fn new() -> Self {
        Match::default()
    }

    /// Compares the methods or not.
    #[must_use]
    pub fn with_method(mut self, on: bool) -> Self {
        self.method = on;
        self
    }

    /// Compares the URL paths or not.
    #[must_use]
    pub fn with_path(mut self, on: bool) -> Self {
        self.path = on;
        self
    }

    /// Compares the query parameters or not.
    #[must_use]
    pub fn with_query(mut self, on: bool) -> Self {
        self.query = on;
        self
    }

    /// Compares the bodies or not.
    #[must_use]
    pub fn with_body(mut self, on: bool) -> Self {
        self.body = on;
        self
    }

    /// Compares the header `name` too.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>) -> Self {
        self.headers.push(name.into().to_ascii_lowercase());
        self
    }

    /// Ignores `entry` too (a member name or a JSON pointer into the body).
    #[must_use]
    pub fn ignore(mut self, entry: impl Into<String>) -> Self {
        self.ignore.push(entry.into());
        self
    }

    /// Ignores exactly `entries` (replacing [`DEFAULT_IGNORED`]).
    #[must_use]
    pub fn ignoring<I, S>(mut self, entries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.ignore = entries.into_iter().map(Into::into).collect();
        self
    }

    /// Replays in order, or not.
    #[must_use]
    pub fn with_ordered(mut self, on: bool) -> Self {
        self.ordered = on;
        self
    }

    fn ignores_name(&self, name: &str) -> bool {
        self.ignore.iter().any(|i| i.eq_ignore_ascii_case(name))
    }

    /// What of `request` is compared, as JSON.
    pub(crate) fn view(&self, request: &RecordedRequest) -> Value {
        let mut out = Map::new();
        if self.method {
            out.insert("method".into(), Value::String(request.method.clone()));
        }
        let url = reqwest::Url::parse(&request.url).ok();
        if self.path {
            let path = url
                .as_ref()
                .map_or_else(|| request.url.clone(), |u| u.path().to_owned());
            out.insert("path".into(), Value::String(path));
        }
        if self.query {
            let mut query: BTreeMap<String, Value> = BTreeMap::new();
            if let Some(url) = &url {
                for (name, value) in url.query_pairs() {
                    if self.ignores_name(&name) {
                        continue;
                    }
                    match query.get_mut(name.as_ref()) {
                        Some(Value::Array(values)) => values.push(Value::String(value.into())),
                        _ => {
                            query.insert(name.into_owned(), json!([value]));
                        }
                    }
                }
            }
            out.insert("query".into(), json!(query));
        }
        if !self.headers.is_empty() {
            let mut headers = Map::new();
            for name in &self.headers {
                if self.ignores_name(name) {
                    continue;
                }
                let value = request
                    .headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map_or(Value::Null, |(_, v)| Value::String(v.clone()));
                headers.insert(name.clone(), value);
            }
            out.insert("headers".into(), Value::Object(headers));
        }
        if self.body {
            let body = match &request.body {
                None => Value::Null,
                Some(Body::Json(value)) => {
                    let mut value = value.clone();
                    for entry in &self.ignore {
                        match entry.strip_prefix('/') {
                            Some(_) => remove_pointer(&mut value, entry),
                            None => remove_key(&mut value, entry),
                        }
                    }
                    value
                }
                Some(Body::Text(text)) => Value::String(text.clone()),
                Some(Body::Base64(data)) => json!({ "base64": data }),
            };
            out.insert("body".into(), body);
        }
        Value::Object(out)
    }
}

fn remove_key(value: &mut Value, key: &str) {
    match value {
        Value::Object(map) => {
            map.shift_remove(key);
            map.values_mut().for_each(|v| remove_key(v, key));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| remove_key(v, key)),
        _ => {}
    }
}

fn remove_pointer(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.shift_remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < items.len()
            {
                items.remove(i);
            }
        }
        _ => {}
    }
}

/// One difference between two JSON values: where, and each side (absent when missing).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Difference {
    pub(crate) path: String,
    pub(crate) expected: Option<Value>,
    pub(crate) got: Option<Value>,
}

/// The paths where `expected` and `got` differ (objects compared member by member, whatever
/// their order; arrays item by item).
pub(crate) fn diff(expected: &Value, got: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    diff_at(&mut String::new(), Some(expected), Some(got), &mut out);
    out
}

fn diff_at(
    path: &mut String,
    expected: Option<&Value>,
    got: Option<&Value>,
    out: &mut Vec<Difference>,
) {
    match (expected, got) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().collect();
            keys.extend(b.keys().filter(|k| !a.contains_key(*k)));
            for key in keys {
                let len = path.len();
                path.push('/');
                path.push_str(&pointer_token(key));
                diff_at(path, a.get(key), b.get(key), out);
                path.truncate(len);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            for i in 0..a.len().max(b.len()) {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                diff_at(path, a.get(i), b.get(i), out);
                path.truncate(len);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Difference {
            path: if path.is_empty() {
                "/".into()
            } else {
                path.clone()
            },
            expected: a.cloned(),
            got: b.cloned(),
        }),
    }
}

/// Longest string shown whole in a diff.
const SHOWN: usize = 300;

/// The differences as pretty JSON: `[{"path", "expected", "got"}]`, at most 20, long
/// strings cut.
pub(crate) fn render_diff(differences: &[Difference]) -> String {
    let shown: Vec<Value> = differences
        .iter()
        .take(20)
        .map(|d| {
            let mut entry = Map::new();
            entry.insert("path".into(), Value::String(d.path.clone()));
            if let Some(e) = &d.expected {
                entry.insert("expected".into(), shorten(e));
            }
            if let Some(g) = &d.got {
                entry.insert("got".into(), shorten(g));
            }
            Value::Object(entry)
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&shown).unwrap_or_default();
    if differences.len() > 20 {
        text.push_str(&format!(
            "\n(and {} more differences)",
            differences.len() - 20
        ));
    }
    text
}

fn shorten(value: &Value) -> Value {
    match value {
        Value::String(s) if s.chars().count() > SHOWN => {
            let head: String = s.chars().take(SHOWN).collect();
            Value::String(format!("{head}… ({} chars)", s.chars().count()))
        }
        Value::Array(items) => Value::Array(items.iter().map(shorten).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shorten(v))).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(url: &str, body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            url: url.into(),
            headers: [("anthropic-beta".to_owned(), "x".to_owned())]
                .into_iter()
                .collect(),
            body: Some(Body::Json(body)),
        }
    }

    #[test]
    fn default_matching_ignores_host_query_order_and_volatile_values() {
        let m = Match::default();
        let a = request(
            "http://127.0.0.1:1234/v1/messages?x=1",
            json!({"model": "m", "metadata": {"user_id": "session-1"}, "prompt_cache_key": "a", "max_tokens": 5}),
        );
        let b = request(
            "https://api.anthropic.com/v1/messages?x=2",
            json!({"max_tokens": 5, "model": "m", "metadata": {"user_id": "session-2"}, "prompt_cache_key": "b"}),
        );
        assert_eq!(m.view(&a), m.view(&b));
        assert_ne!(
            m.clone().with_query(true).view(&a),
            m.with_query(true).view(&b)
        );
    }

    #[test]
    fn pointers_and_headers() {
        let a = request("http://x/v1", json!({"t": 1, "messages": [{"c": "a"}]}));
        let mut b = request("http://x/v1", json!({"t": 2, "messages": [{"c": "a"}]}));
        let m = Match::default().ignore("/t");
        assert_eq!(m.view(&a), m.view(&b));
        b.headers.insert("anthropic-beta".into(), "y".into());
        assert_eq!(m.view(&a), m.view(&b));
        let m = m.header("Anthropic-Beta");
        assert_ne!(m.view(&a), m.view(&b));
    }

    #[test]
    fn the_diff_shows_only_the_differing_paths() {
        let expected =
            json!({"body": {"model": "a", "messages": [{"content": "hi"}], "same": [1, 2]}});
        let got = json!({"body": {"same": [1, 2], "model": "b", "messages": [{"content": "hi"}, {"content": "more"}]}});
        let d = diff(&expected, &got);
        assert_eq!(
            d,
            vec![
                Difference {
                    path: "/body/model".into(),
                    expected: Some(json!("a")),
                    got: Some(json!("b"))
                },
                Difference {
                    path: "/body/messages/1".into(),
                    expected: None,
                    got: Some(json!({"content": "more"}))
                },
            ]
        );
        let text = render_diff(&d);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back[1],
            json!({"path": "/body/messages/1", "got": {"content": "more"}})
        );
    }
}
