//! Scrubbing secrets out of recorded traffic, at record time (and out of each request before
//! it is matched on replay, so that both sides look the same).
//!
//! What is replaced by [`SCRUBBED`]:
//!
//! * **headers** whose name is a credential's: `authorization`, `proxy-authorization`,
//!   `x-api-key`, `x-goog-api-key`, `api-key`, `cookie`, `set-cookie`; any name containing
//!   `secret`, `password` or `api-key`/`apikey`/`api_key`; any name with a `-`/`_`-separated
//!   part `key`, `token`, `auth`, `authorization`, `credential(s)` or `cookie`
//!   (`x-amz-security-token`, `ocp-apim-subscription-key`); and every header the provider
//!   marked [sensitive](reqwest::header::HeaderValue::set_sensitive). Parts, not substrings:
//!   `anthropic-ratelimit-tokens-remaining` and `x-ratelimit-remaining-tokens` stay readable.
//! * **query parameters** `key`, `api_key`/`apiKey`, `token`, `access_token`, `auth_token`,
//!   `secret`, `client_secret`, `password`, `sig`, `X-Amz-Signature`, `X-Amz-Security-Token`.
//! * **JSON body fields** named like a credential (case, `_` and `-` ignored): `api_key`,
//!   `key`, `token`, `secret`, `password`, `access_token`, `refresh_token`, `id_token`,
//!   `client_secret`, `private_key`, `secret_access_key`, … and any name ending in `apikey`,
//!   `secret`, `password`, `accesstoken`, `refreshtoken`, `authtoken` or `sessiontoken`; when
//!   the value is a string or a number.
//! * **tokens of the known key formats** anywhere else in a header value, the URL, a JSON or
//!   text body or a response body: `sk-…`, `sk-ant-…`, `AIza…`, `AKIA…`, `ASIA…`, `ya29.…`
//!   and the token after `Bearer` — except inside the fields that hold signatures or binary
//!   data, which look random but are not credentials: `signature`, `thinkingSignature`,
//!   `thoughtSignature`/`thought_signature`, `encrypted_content`/`encryptedContent`, the
//!   `data` of a `redacted_thinking` block or of an image (an object with a `type` of
//!   `base64`/`image`, or a `mimeType`/`mime_type`/`media_type`), and `data:` URLs.
//! * **every secret value** found again anywhere, signature fields included: a value
//!   scrubbed from a header, a query parameter or a body field (without its `Bearer `
//!   scheme), and the secrets the user gives ([`Recorder::with_secret`](super::Recorder::with_secret)).
//!
//! A response body is scrubbed as a whole (a key split across two chunks is found) and the
//! chunks keep their boundaries: the replacement goes in the chunk where the secret started.
//! Its SSE `data:` lines and JSON bodies are read as JSON, so the signature fields in them are
//! recognised too.

use std::collections::BTreeMap;
use std::ops::Range;

use bytes::Bytes;
use serde_json::Value;

use super::format::{Body, RecordedRequest, ScrubCounts};
use crate::providers::http::TransportRequest;
use crate::providers::http::reqwest::header::HeaderMap;

/// What replaces a secret.
pub const SCRUBBED: &str = "[SCRUBBED]";

/// Shortest value learned as a secret from a header, parameter or field: shorter ones
/// (`x`, `none`, `test`) would garble ordinary words when replaced everywhere.
const MIN_LEARNED: usize = 8;

/// The kind of a scrubbed value (or of a [`Finding`](super::safety::Finding)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SecretKind {
    /// The value of a credential header (`authorization`, `x-api-key`, `cookie`, …).
    Header,
    /// A credential query parameter (`key=`, `token=`, …).
    QueryParam,
    /// A JSON field named like a credential (`api_key`, `password`, …).
    BodyField,
    /// A token of a known key format; the format (`"sk-ant-"`, `"sk-"`, `"AIza"`, `"AKIA"`,
    /// `"ASIA"`, `"ya29."`, `"bearer"`).
    KeyFormat(&'static str),
    /// A secret value found again, or one the user gave.
    Secret,
}

/// One value scrubbed: where (a JSON pointer relative to what was scrubbed) and what.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    pub(crate) location: String,
    pub(crate) kind: SecretKind,
    /// The secret, masked (its first 4 characters and its length).
    pub(crate) excerpt: String,
}

/// True when a header named `name` carries credentials (see the module's docs).
pub(crate) fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    const NAMES: &[&str] = &[
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "cookie",
        "set-cookie",
    ];
    NAMES.contains(&name.as_str())
        || ["secret", "password", "api-key", "apikey", "api_key"]
            .iter()
            .any(|part| name.contains(part))
        || name.split(['-', '_']).any(|part| {
            matches!(
                part,
                "key"
                    | "token"
                    | "auth"
                    | "authorization"
                    | "credential"
                    | "credentials"
                    | "cookie"
            )
        })
}

/// `name` lowercased without `_` and `-`.
fn normalized(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// True when a query parameter named `name` carries credentials.
pub(crate) fn is_secret_param(name: &str) -> bool {
    matches!(
        normalized(name).as_str(),
        "key"
            | "apikey"
            | "token"
            | "accesstoken"
            | "authtoken"
            | "secret"
            | "clientsecret"
            | "password"
            | "sig"
            | "xamzsignature"
            | "xamzsecuritytoken"
    )
}

/// True when a JSON field named `name` holds a credential.
pub(crate) fn is_secret_field(name: &str) -> bool {
    let name = normalized(name);
    matches!(
        name.as_str(),
        "apikey"
            | "key"
            | "token"
            | "secret"
            | "password"
            | "passwd"
            | "accesstoken"
            | "refreshtoken"
            | "idtoken"
            | "authtoken"
            | "sessiontoken"
            | "bearertoken"
            | "clientsecret"
            | "secretkey"
            | "privatekey"
            | "accesskey"
            | "secretaccesskey"
            | "authorization"
    ) || [
        "apikey",
        "secret",
        "password",
        "accesstoken",
        "refreshtoken",
        "authtoken",
        "sessiontoken",
    ]
    .iter()
    .any(|suffix| name.ends_with(suffix))
}

/// True when a JSON field named `name` holds a signature or opaque encrypted data, which
/// look random but are not credentials.
pub(crate) fn is_signature_field(name: &str) -> bool {
    matches!(
        name,
        "signature"
            | "thinkingSignature"
            | "thinking_signature"
            | "thoughtSignature"
            | "thought_signature"
            | "encrypted_content"
            | "encryptedContent"
    )
}

/// True when the `data` member of `object` is binary data (an image, a redacted thinking
/// block) rather than text.
fn holds_binary_data(object: &serde_json::Map<String, Value>) -> bool {
    matches!(
        object.get("type").and_then(Value::as_str),
        Some("redacted_thinking" | "base64" | "image")
    ) || ["mimeType", "mime_type", "media_type", "mediaType"]
        .iter()
        .any(|k| object.contains_key(*k))
}

/// True for a `data:` URL (`data:image/png;base64,…`).
fn is_data_url(text: &str) -> bool {
    text.strip_prefix("data:")
        .and_then(|rest| rest.split_once(','))
        .is_some_and(|(media, _)| media.ends_with(";base64") && !media.contains(' '))
}

/// `secret` masked for a report: its first 4 characters and its length.
pub(crate) fn mask(secret: &str) -> String {
    let head: String = secret.chars().take(4).collect();
    format!("{head}… ({} chars)", secret.chars().count())
}

/// Escapes a JSON pointer token.
pub(crate) fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Scrubs requests, response heads and bodies, counting what it replaced and learning the
/// secrets it finds so that they are scrubbed wherever they appear again.
#[derive(Clone, Default)]
pub(crate) struct Scrubber {
    /// Exact secrets, longest first.
    secrets: Vec<String>,
    pub(crate) counts: ScrubCounts,
    pub(crate) hits: Vec<Hit>,
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrubber")
            .field("secrets", &self.secrets.len())
            .field("counts", &self.counts)
            .finish()
    }
}

impl Scrubber {
    /// A scrubber that also removes `secrets` (exact values, any length but empty).
    pub(crate) fn new(secrets: &[String]) -> Self {
        let mut scrubber = Scrubber::default();
        for s in secrets {
            if !s.is_empty() && !scrubber.secrets.contains(s) {
                scrubber.secrets.push(s.clone());
            }
        }
        scrubber.sort();
        scrubber
    }

    fn sort(&mut self) {
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// Learns `value` (and its token without an auth scheme) as a secret.
    fn learn(&mut self, value: &str) {
        let value = value.trim();
        let mut candidates = vec![value];
        for scheme in ["bearer ", "basic ", "token "] {
            if value.len() > scheme.len()
                && value.is_char_boundary(scheme.len())
                && value[..scheme.len()].eq_ignore_ascii_case(scheme)
            {
                candidates.push(value[scheme.len()..].trim_start());
            }
        }
        for c in candidates {
            if c.len() >= MIN_LEARNED
                && !c.contains(SCRUBBED)
                && !self.secrets.iter().any(|s| s == c)
            {
                self.secrets.push(c.to_owned());
            }
        }
        self.sort();
    }

    fn hit(&mut self, location: &str, kind: SecretKind, secret: &str) {
        match kind {
            SecretKind::Header => self.counts.headers += 1,
            SecretKind::QueryParam => self.counts.query += 1,
            SecretKind::BodyField => self.counts.body_fields += 1,
            SecretKind::KeyFormat(_) => self.counts.key_formats += 1,
            SecretKind::Secret => self.counts.secrets += 1,
        }
        self.hits.push(Hit {
            location: location.to_owned(),
            kind,
            excerpt: mask(secret),
        });
    }

    /// `text` without the known secrets (exact values only).
    fn exact(&mut self, text: &str, location: &str) -> String {
        let mut out = text.to_owned();
        for i in 0..self.secrets.len() {
            let secret = self.secrets[i].clone();
            let n = out.matches(secret.as_str()).count();
            if n > 0 {
                out = out.replace(secret.as_str(), SCRUBBED);
                for _ in 0..n {
                    self.hit(location, SecretKind::Secret, &secret);
                }
            }
        }
        out
    }

    /// `text` without the known secrets and without tokens of the known key formats.
    pub(crate) fn text(&mut self, text: &str, location: &str) -> String {
        let text = self.exact(text, location);
        if is_data_url(&text) {
            return text;
        }
        let tokens = crate::llm::redact::key_tokens(&text);
        if tokens.is_empty() {
            return text;
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (range, format) in tokens {
            out.push_str(&text[at..range.start]);
            out.push_str(SCRUBBED);
            self.hit(
                location,
                SecretKind::KeyFormat(format),
                &text[range.clone()],
            );
            at = range.end;
        }
        out.push_str(&text[at..]);
        out
    }

    /// Scrubs a JSON value in place; `pointer` is its location.
    pub(crate) fn json(&mut self, value: &mut Value, pointer: &mut String) {
        match value {
            Value::Object(map) => {
                let binary = holds_binary_data(map);
                for (name, child) in map.iter_mut() {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&pointer_token(name));
                    let literal = match child {
                        Value::String(s) => Some(s.clone()),
                        Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    };
                    match literal {
                        Some(text)
                            if is_secret_field(name) && !text.is_empty() && text != SCRUBBED =>
                        {
                            self.learn(&text);
                            self.hit(pointer, SecretKind::BodyField, &text);
                            *child = Value::String(SCRUBBED.to_owned());
                        }
                        _ if is_signature_field(name) || (binary && name == "data") => {
                            self.exact_json(child, pointer);
                        }
                        _ => self.json(child, pointer),
                    }
                    pointer.truncate(len);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    self.json(item, pointer);
                    pointer.truncate(len);
                }
            }
            Value::String(s) => {
                let scrubbed = self.text(s, pointer);
                if scrubbed != *s {
                    *s = scrubbed;
                }
            }
            _ => {}
        }
    }

    /// Removes only exact secrets from the strings of `value` (a signature field).
    fn exact_json(&mut self, value: &mut Value, pointer: &str) {
        match value {
            Value::String(s) => {
                let scrubbed = self.exact(s, pointer);
                if scrubbed != *s {
                    *s = scrubbed;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.exact_json(v, pointer)),
            Value::Object(map) => map.values_mut().for_each(|v| self.exact_json(v, pointer)),
            _ => {}
        }
    }

    /// The headers by lowercase name, credentials scrubbed (and learned), other values
    /// scrubbed of secrets and key tokens. `pointer` is their location.
    pub(crate) fn headers(
        &mut self,
        headers: &HeaderMap,
        pointer: &str,
    ) -> BTreeMap<String, String> {
        let mut joined: BTreeMap<String, (String, bool)> = BTreeMap::new();
        for (name, value) in headers {
            let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
            let entry = joined
                .entry(name.as_str().to_owned())
                .or_insert_with(|| (String::new(), false));
            if !entry.0.is_empty() {
                entry.0.push_str(", ");
            }
            entry.0.push_str(&text);
            entry.1 |= value.is_sensitive();
        }
        self.header_values(joined, pointer)
    }

    /// [`headers`](Self::headers) of name → (value, marked sensitive).
    pub(crate) fn header_values(
        &mut self,
        headers: BTreeMap<String, (String, bool)>,
        pointer: &str,
    ) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        // Credentials first, so that their values are known when the others are scrubbed.
        let mut rest = Vec::new();
        for (name, (value, sensitive)) in headers {
            let location = format!("{pointer}/{}", pointer_token(&name));
            if (sensitive || is_secret_header(&name)) && !value.is_empty() && value != SCRUBBED {
                self.learn(&value);
                self.hit(&location, SecretKind::Header, &value);
                out.insert(name, SCRUBBED.to_owned());
            } else if value == SCRUBBED {
                out.insert(name, value);
            } else {
                rest.push((name, value, location));
            }
        }
        for (name, value, location) in rest {
            let value = self.text(&value, &location);
            out.insert(name, value);
        }
        out
    }

    /// The URL with its credential parameters scrubbed (and learned), then scrubbed of
    /// secrets and key tokens.
    pub(crate) fn url(&mut self, url: &reqwest::Url, pointer: &str) -> String {
        let mut url = url.clone();
        if url.query().is_some() {
            let pairs: Vec<(String, String)> = url
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let mut changed = false;
            let mut kept = Vec::with_capacity(pairs.len());
            for (name, value) in pairs {
                if is_secret_param(&name) && !value.is_empty() && value != SCRUBBED {
                    self.learn(&value);
                    self.hit(pointer, SecretKind::QueryParam, &value);
                    kept.push((name, SCRUBBED.to_owned()));
                    changed = true;
                } else {
                    kept.push((name, value));
                }
            }
            if changed {
                url.query_pairs_mut().clear().extend_pairs(kept);
            }
        }
        self.text(url.as_str(), pointer)
    }

    /// A request as it is recorded: its headers, URL and body scrubbed. Headers first (their
    /// secrets are learned), then the URL, then the body.
    pub(crate) fn request(&mut self, request: &TransportRequest) -> RecordedRequest {
        let headers = self.headers(&request.headers, "/headers");
        let url = self.url(&request.url, "/url");
        let body = Body::from_bytes(&request.body).map(|body| self.body(body, "/body"));
        RecordedRequest {
            method: request.method.as_str().to_owned(),
            url,
            headers,
            body,
        }
    }

    /// A recorded request scrubbed again (its values already scrubbed stay as they are).
    pub(crate) fn recorded_request(&mut self, request: &RecordedRequest) -> RecordedRequest {
        let headers = request
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), (v.clone(), false)))
            .collect();
        let headers = self.header_values(headers, "/headers");
        let url = match reqwest::Url::parse(&request.url) {
            Ok(url) => self.url(&url, "/url"),
            Err(_) => self.text(&request.url, "/url"),
        };
        let body = request.body.clone().map(|body| self.body(body, "/body"));
        RecordedRequest {
            method: request.method.clone(),
            url,
            headers,
            body,
        }
    }

    fn body(&mut self, body: Body, pointer: &str) -> Body {
        match body {
            Body::Json(mut value) => {
                let mut pointer = format!("{pointer}/json");
                self.json(&mut value, &mut pointer);
                Body::Json(value)
            }
            Body::Text(text) => Body::Text(self.text(&text, &format!("{pointer}/text"))),
            other => other,
        }
    }

    /// A response body's chunks with secrets and key tokens replaced, each chunk keeping its
    /// place: a replacement goes in the chunk where the secret started.
    pub(crate) fn chunks(&mut self, chunks: &[Bytes], pointer: &str) -> Vec<Vec<u8>> {
        let whole: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
        let ranges = self.secret_ranges(&whole, pointer);
        if ranges.is_empty() {
            return chunks.iter().map(|c| c.to_vec()).collect();
        }
        splice(chunks, &ranges, SCRUBBED.as_bytes())
    }

    /// The byte ranges of secrets in a response body, merged and sorted.
    fn secret_ranges(&mut self, body: &[u8], pointer: &str) -> Vec<Range<usize>> {
        let mut ranges = Vec::new();
        for i in 0..self.secrets.len() {
            let secret = self.secrets[i].clone();
            for at in memchr::memmem::find_iter(body, secret.as_bytes()) {
                ranges.push(at..at + secret.len());
                self.hit(pointer, SecretKind::Secret, &secret);
            }
        }
        if let Ok(text) = std::str::from_utf8(body) {
            for (range, format) in token_ranges(text) {
                // A token inside a secret already found is not counted twice.
                if !ranges
                    .iter()
                    .any(|r| r.start < range.end && range.start < r.end)
                {
                    self.hit(pointer, SecretKind::KeyFormat(format), &text[range.clone()]);
                    ranges.push(range);
                }
            }
        }
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        merged
    }
}

/// The key tokens of a response body that are not in a signature field: a JSON body and the
/// JSON of SSE `data:` lines are read as JSON, other lines as text.
pub(crate) fn token_ranges(text: &str) -> Vec<(Range<usize>, &'static str)> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return json_token_ranges(text, 0, &value);
    }
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let data = line
            .strip_prefix("data:")
            .map(|rest| (rest.trim(), offset + line.len() - rest.len()));
        match data.and_then(|(json, _)| serde_json::from_str::<Value>(json).ok()) {
            Some(value) => out.extend(json_token_ranges(line, offset, &value)),
            None => out.extend(
                crate::llm::redact::key_tokens(line)
                    .into_iter()
                    .map(|(r, f)| (r.start + offset..r.end + offset, f)),
            ),
        }
        offset += line.len();
    }
    out
}

/// The ranges in `raw` (at `offset` in the body) of the key tokens in the strings of
/// `value` (parsed from `raw`) that are outside signature fields.
fn json_token_ranges(raw: &str, offset: usize, value: &Value) -> Vec<(Range<usize>, &'static str)> {
    let mut tokens = Vec::new();
    collect_tokens(value, &mut tokens);
    let mut out = Vec::new();
    for (token, format) in tokens {
        for (at, _) in raw.match_indices(token.as_str()) {
            let range = offset + at..offset + at + token.len();
            if !out.iter().any(|(r, _): &(Range<usize>, _)| *r == range) {
                out.push((range, format));
            }
        }
    }
    out
}

fn collect_tokens(value: &Value, out: &mut Vec<(String, &'static str)>) {
    match value {
        Value::Object(map) => {
            let binary = holds_binary_data(map);
            for (name, child) in map {
                if !(is_signature_field(name) || (binary && name == "data")) {
                    collect_tokens(child, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_tokens(v, out)),
        Value::String(s) if !is_data_url(s) => {
            for (range, format) in crate::llm::redact::key_tokens(s) {
                out.push((s[range].to_owned(), format));
            }
        }
        _ => {}
    }
}

/// `chunks` with the bytes of `ranges` (sorted, disjoint, in the concatenation) replaced by
/// `replacement`, put in the chunk where each range starts.
pub(crate) fn splice(
    chunks: &[Bytes],
    ranges: &[Range<usize>],
    replacement: &[u8],
) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(chunks.len());
    let mut start = 0;
    let mut next = 0; // the first range not yet passed
    for chunk in chunks {
        let end = start + chunk.len();
        let mut piece = Vec::with_capacity(chunk.len());
        let mut at = start;
        while at < end {
            while next < ranges.len() && ranges[next].end <= at {
                next += 1;
            }
            match ranges.get(next) {
                Some(r) if r.start <= at => {
                    if r.start == at {
                        piece.extend_from_slice(replacement);
                    }
                    at = r.end.min(end);
                }
                Some(r) if r.start < end => {
                    piece.extend_from_slice(&chunk[at - start..r.start - start]);
                    at = r.start;
                }
                _ => {
                    piece.extend_from_slice(&chunk[at - start..]);
                    at = end;
                }
            }
        }
        out.push(piece);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use serde_json::json;

    fn request(url: &str, headers: &[(&str, &str)], body: &str) -> TransportRequest {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.append(
                reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        TransportRequest::new(
            reqwest::Method::POST,
            url.parse().unwrap(),
            map,
            Bytes::from(body.to_owned()),
        )
    }

    #[test]
    fn header_names() {
        for name in [
            "Authorization",
            "x-api-key",
            "x-goog-api-key",
            "api-key",
            "cookie",
            "set-cookie",
            "proxy-authorization",
            "x-amz-security-token",
            "ocp-apim-subscription-key",
            "x-client-secret",
            "cf-aig-authorization",
        ] {
            assert!(is_secret_header(name), "{name}");
        }
        for name in [
            "content-type",
            "anthropic-ratelimit-tokens-remaining",
            "x-ratelimit-remaining-tokens",
            "anthropic-version",
            "request-id",
        ] {
            assert!(!is_secret_header(name), "{name}");
        }
    }

    #[test]
    fn requests_lose_their_keys_and_count_them() {
        let key = "sk-ant-api03-abcdefghijklmnop0123456789";
        let body = json!({
            "model": "m",
            "api_key": "hunter2-hunter2",
            "nested": {"apiKey": "zzzzzzzzzzzz", "password": "pw-123456789"},
            "messages": [{"role": "user", "content": format!("my key is {key} and AIzaSyA1234567890abcdefgh")}],
            "thinking": {"signature": "sk-notakey-but-a-signature-1234567"},
            "image": {"type": "base64", "media_type": "image/png", "data": "AKIAAAAAAAAAAAAAAAAAA"},
            "echo": "hunter2-hunter2 again",
        });
        let req = request(
            "https://x.test/v1/models/m:stream?alt=sse&key=AIzaSyQQQQQQQQQQQQQQQQQQ",
            &[
                ("x-api-key", key),
                ("authorization", "Bearer tok_0123456789abcdef"),
                ("anthropic-version", "2023-06-01"),
                ("x-trace", "Bearer tok_0123456789abcdef"),
            ],
            &body.to_string(),
        );
        let mut s = Scrubber::new(&[]);
        let recorded = s.request(&req);
        let text = serde_json::to_string(&recorded).unwrap();
        for secret in [
            key,
            "tok_0123456789abcdef",
            "hunter2-hunter2",
            "zzzzzzzzzzzz",
            "pw-123456789",
            "AIzaSyQQQ",
            "AIzaSyA123",
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(recorded.headers["x-api-key"], SCRUBBED);
        assert_eq!(recorded.headers["authorization"], SCRUBBED);
        // The whole value is a secret learned from `authorization`.
        assert_eq!(recorded.headers["x-trace"], SCRUBBED);
        assert_eq!(recorded.headers["anthropic-version"], "2023-06-01");
        assert!(
            recorded.url.contains("key=%5BSCRUBBED%5D"),
            "{}",
            recorded.url
        );
        assert!(recorded.url.contains("alt=sse"));
        let Some(Body::Json(b)) = &recorded.body else {
            panic!()
        };
        // Signatures and image data are kept.
        assert_eq!(
            b["thinking"]["signature"],
            "sk-notakey-but-a-signature-1234567"
        );
        assert_eq!(b["image"]["data"], "AKIAAAAAAAAAAAAAAAAAA");
        assert_eq!(b["echo"], format!("{SCRUBBED} again"));
        assert_eq!(s.counts.headers, 2);
        assert_eq!(s.counts.query, 1);
        assert_eq!(s.counts.body_fields, 3);
        // The key in the message text (a secret learned from the header) and the AIza token.
        assert_eq!(s.counts.secrets, 3, "{:?}", s.counts);
        assert_eq!(s.counts.key_formats, 1, "{:?}", s.counts);
        // Scrubbing again changes nothing.
        let mut again = Scrubber::new(&[]);
        assert_eq!(again.recorded_request(&recorded), recorded);
        assert_eq!(again.counts.total(), 0);
    }

    #[test]
    fn user_secrets_are_removed_everywhere() {
        let mut s = Scrubber::new(&["tenant-42".to_owned()]);
        let req = request(
            "http://x/tenant-42/v1",
            &[],
            r#"{"thoughtSignature":"a tenant-42 b"}"#,
        );
        let recorded = s.request(&req);
        assert_eq!(recorded.url, "http://x/[SCRUBBED]/v1");
        assert_eq!(
            recorded.body,
            Some(Body::Json(json!({"thoughtSignature": "a [SCRUBBED] b"})))
        );
        assert_eq!(s.counts.secrets, 2);
    }

    #[test]
    fn response_chunks_keep_their_boundaries() {
        let key = "sk-proj-0123456789abcdefghij";
        let chunks = vec![
            Bytes::from("data: {\"text\":\"a sk-proj-0123"),
            Bytes::from("456789abcdefghij b\"}\n\n"),
            Bytes::from("data: {\"signature\":\"sk-looks-like-a-key-12345\"}\n\n"),
            Bytes::from("event: x\ndata: Bearer abc123def456ghi\n\n"),
        ];
        let mut s = Scrubber::new(&[]);
        let out = s.chunks(&chunks, "/response");
        assert_eq!(out.len(), 4);
        assert_eq!(out[0], b"data: {\"text\":\"a [SCRUBBED]");
        assert_eq!(out[1], b" b\"}\n\n");
        assert_eq!(out[2], chunks[2].to_vec(), "signature kept");
        assert_eq!(out[3], b"event: x\ndata: Bearer [SCRUBBED]\n\n");
        assert_eq!(s.counts.key_formats, 2);
        assert!(!String::from_utf8_lossy(&out.concat()).contains(key));
    }

    #[test]
    fn splice_handles_ranges_over_several_chunks() {
        let chunks = vec![
            Bytes::from("ab"),
            Bytes::from("cd"),
            Bytes::from("ef"),
            Bytes::from("gh"),
        ];
        let out = splice(&chunks, &[1..5, 6..7], b"X");
        assert_eq!(
            out,
            vec![b"aX".to_vec(), b"".to_vec(), b"f".to_vec(), b"Xh".to_vec()]
        );
    }
}
