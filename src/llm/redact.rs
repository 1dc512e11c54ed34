//! Keeping API keys out of what the crate prints, logs and stores.
//!
//! Two tools, used wherever a secret could pass:
//!
//! * [`scrub`]: removes the request's own key(s) and tokens of the known key formats
//!   (`sk-…`, `sk-ant-…`, `AIza…`, `AKIA…`/`ASIA…`, `Bearer …`) from provider text before it
//!   becomes an error message. A token keeps its short, non-secret prefix (`sk-ant-…[redacted]`)
//!   so a reader still sees which kind of key was meant; the words around it, which pi's retry
//!   and overflow patterns read, are untouched.
//! * [`Headers`]: a `Debug` view of a header list that prints the names and, for a sensitive
//!   header ([`is_secret_header`]), `<redacted>` instead of the value.
//!
//! Needs no cargo feature: `Debug` impls outside the providers use it too.

// Scrubbing errors is the HTTP providers' (cargo feature `http`).
#![cfg_attr(not(feature = "http"), allow(dead_code))]

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use regex::{Captures, Regex};

/// What replaces a secret (after its non-secret prefix, if any).
pub(crate) const REDACTED: &str = "…[redacted]";

/// Shortest key that is scrubbed as a literal: shorter "keys" (`ollama`, `x`, `test`) are
/// not secrets, and replacing them would garble ordinary words.
const MIN_LITERAL: usize = 8;

/// True when a header named `name` carries credentials: `authorization`,
/// `proxy-authorization`, `x-api-key`, `api-key`, `x-goog-api-key`, `cookie`, `set-cookie`,
/// or any name containing `key`, `token`, `secret` or `auth` (case-insensitive).
pub(crate) fn is_sensitive_header_name(name: &str) -> bool {
    // One pass over the bytes, no lowercase copy: every request header goes through this.
    let name = name.as_bytes();
    name.eq_ignore_ascii_case(b"cookie")
        || name.eq_ignore_ascii_case(b"set-cookie")
        || (0..name.len()).any(|i| {
            let rest = &name[i..];
            let part: &[u8] = match rest[0].to_ascii_lowercase() {
                b'k' => b"key",
                b't' => b"token",
                b's' => b"secret",
                b'a' => b"auth",
                _ => return false,
            };
            rest.len() >= part.len() && rest[..part.len()].eq_ignore_ascii_case(part)
        })
}

/// True when header `name: value` must not be printed: a sensitive name, a value holding
/// `key` (the request's API key), or a value holding a token of a known key format.
pub(crate) fn is_secret_header(name: &str, value: &str, key: Option<&str>) -> bool {
    is_sensitive_header_name(name)
        || key.is_some_and(|k| k.len() >= MIN_LITERAL && value.contains(k))
        || matches!(scrub(value, &[] as &[&str]), Cow::Owned(_))
}

/// `Debug` for a list of headers: each name with its value, or `<redacted>` for a secret one
/// ([`is_secret_header`]).
pub(crate) struct Headers<'a, I> {
    headers: I,
    key: Option<&'a str>,
}

impl<'a, I> Headers<'a, I> {
    /// Prints `headers`, treating a value that holds `key` as secret too.
    pub(crate) fn new(headers: I, key: Option<&'a str>) -> Self {
        Headers { headers, key }
    }
}

impl<'a, I, K, V> fmt::Debug for Headers<'a, I>
where
    I: IntoIterator<Item = (K, V)> + Clone,
    K: AsRef<str>,
    V: AsRef<str>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (name, value) in self.headers.clone() {
            let (name, value) = (name.as_ref(), value.as_ref());
            if is_secret_header(name, value, self.key) {
                map.entry(&name, &format_args!("<redacted>"));
            } else {
                map.entry(&name, &value);
            }
        }
        map.finish()
    }
}

/// `Debug` for a JSON object of options (`extra`): each member, or `<redacted>` for a member
/// whose name is sensitive (`accessToken`, `apiKey`, …) or whose text holds a key.
pub(crate) struct Members<'a>(pub(crate) &'a serde_json::Map<String, serde_json::Value>);

impl fmt::Debug for Members<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (name, value) in self.0 {
            let text = value.to_string();
            if is_secret_header(name, &text, None) {
                map.entry(name, &format_args!("<redacted>"));
            } else {
                map.entry(name, value);
            }
        }
        map.finish()
    }
}

/// The secrets of one request, to scrub from what its server answers: the values of its
/// sensitive headers (and their token without a `Bearer `/`Basic ` scheme) and its key.
#[derive(Clone, Default)]
pub(crate) struct Secrets(Vec<String>);

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} redacted)", self.0.len())
    }
}

impl Secrets {
    /// Adds `secret` (ignored when shorter than a real key).
    pub(crate) fn add(&mut self, secret: &str) {
        let secret = secret.trim();
        for s in [secret, strip_scheme(secret)] {
            if s.len() >= MIN_LITERAL && !self.0.iter().any(|have| have == s) {
                self.0.push(s.to_owned());
            }
        }
        // Longest first, so that a key is replaced before a shorter secret inside it.
        self.0.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// The secrets, longest first.
    #[cfg(test)]
    pub(crate) fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// [`scrub`] with these secrets.
    pub(crate) fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        scrub(text, &self.0)
    }
}

/// `value` without an HTTP auth scheme (`Bearer `, `Basic `, `token `).
fn strip_scheme(value: &str) -> &str {
    for scheme in ["bearer ", "basic ", "token "] {
        if value.len() > scheme.len()
            && value.is_char_boundary(scheme.len())
            && value[..scheme.len()].eq_ignore_ascii_case(scheme)
        {
            return value[scheme.len()..].trim_start();
        }
    }
    value
}

/// `text` without `secrets` (each replaced by [`REDACTED`] after the known prefix it starts
/// with, if any) and without tokens of the known key formats.
///
/// A secret is also found cut short (a text clipped in the middle of it): any run of at least
/// [`MIN_PARTIAL`] of its first characters.
pub(crate) fn scrub<'t, S: AsRef<str>>(text: &'t str, secrets: &[S]) -> Cow<'t, str> {
    let mut out = Cow::Borrowed(text);
    for secret in secrets {
        let secret = secret.as_ref();
        if secret.len() < MIN_LITERAL {
            continue;
        }
        if let Some(scrubbed) = remove_literal(&out, secret) {
            out = Cow::Owned(scrubbed);
        }
    }
    if !may_hold_token(&out) {
        return out;
    }
    match token_pattern().replace_all(&out, replace_token) {
        // A match that was kept as it is (a word, not a key) still makes a new string.
        Cow::Owned(s) if s != *out => Cow::Owned(s),
        _ => out,
    }
}

/// Shortest start of a secret that is removed when the secret is cut short.
const MIN_PARTIAL: usize = 12;

/// `text` with every occurrence of `secret`, or of a start of it of at least [`MIN_PARTIAL`]
/// bytes (all of it when shorter), replaced; `None` when there is none.
fn remove_literal(text: &str, secret: &str) -> Option<String> {
    let head_len = floor_char_boundary(secret, MIN_PARTIAL.min(secret.len()));
    let head = &secret[..head_len];
    if !text.contains(head) {
        return None;
    }
    let replacement = format!("{}{REDACTED}", known_prefix(secret));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(head) {
        out.push_str(&rest[..at]);
        let candidate = &rest[at..];
        // How much of the secret follows, at a character boundary.
        let mut len = candidate
            .bytes()
            .zip(secret.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        while !candidate.is_char_boundary(len) {
            len -= 1;
        }
        out.push_str(&replacement);
        rest = &candidate[len..];
    }
    out.push_str(rest);
    Some(out)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The non-secret prefix of a key of a known format (`sk-ant-`, `sk-`, `AIza`, …), or `""`.
fn known_prefix(secret: &str) -> &'static str {
    const PREFIXES: &[&str] = &["sk-ant-", "sk-", "AIza", "AKIA", "ASIA", "ya29."];
    PREFIXES
        .iter()
        .find(|p| secret.starts_with(**p))
        .copied()
        .unwrap_or("")
}

/// Tokens of the known key formats. Group 1: the kept prefix; group 2: the secret part.
/// False when `text` holds none of [`token_pattern`]'s prefixes, so that no token can match:
/// a scan that costs far less than a regex search, which every request header goes through.
fn may_hold_token(text: &str) -> bool {
    let text = text.as_bytes();
    (0..text.len()).any(|i| {
        let rest = &text[i..];
        match rest[0] {
            b's' => rest.starts_with(b"sk-"),
            b'A' => [&b"AIza"[..], b"AKIA", b"ASIA"]
                .iter()
                .any(|p| rest.starts_with(p)),
            b'y' => rest.starts_with(b"ya29."),
            b'b' | b'B' => rest.len() >= 6 && rest[..6].eq_ignore_ascii_case(b"bearer"),
            _ => false,
        }
    })
}

fn token_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let pattern = concat!(
            r"\b(sk-ant-|sk-|AIza|AKIA|ASIA|ya29\.)([A-Za-z0-9_\-]{8,})",
            r"|(?i:\b(bearer\s+))([A-Za-z0-9_\-~+/]{8,}(?:\.[A-Za-z0-9_\-~+/]+)*=*)",
        );
        match Regex::new(pattern) {
            Ok(re) => re,
            // The pattern is a constant; `[^\s\S]` (matches nothing) always compiles.
            Err(_) => Regex::new(r"[^\s\S]").unwrap_or_else(|_| unreachable!()),
        }
    })
}

fn replace_token(caps: &Captures<'_>) -> String {
    let whole = caps.get(0).map_or("", |m| m.as_str());
    if let (Some(prefix), Some(_)) = (caps.get(1), caps.get(2)) {
        // Any token after a key prefix, even one cut short (a clipped text) or without digits.
        return format!("{}{REDACTED}", prefix.as_str());
    }
    match (caps.get(3), caps.get(4)) {
        // A token is random: it has a digit. Words after "bearer" ("Bearer authentication")
        // are kept.
        (Some(prefix), Some(token)) if token.as_str().bytes().any(|b| b.is_ascii_digit()) => {
            format!("{}{REDACTED}", prefix.as_str())
        }
        _ => whole.to_owned(),
    }
}

/// The byte ranges of the tokens of the known key formats in `text` (the prefix included;
/// after `Bearer`, the token only), as [`scrub`] would replace them, each with the name of
/// its format (`"sk-ant-"`, `"sk-"`, `"AIza"`, `"AKIA"`, `"ASIA"`, `"ya29."`, `"bearer"`).
#[cfg(feature = "cassette")]
pub(crate) fn key_tokens(text: &str) -> Vec<(std::ops::Range<usize>, &'static str)> {
    if !may_hold_token(text) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for caps in token_pattern().captures_iter(text) {
        if let (Some(prefix), Some(token)) = (caps.get(1), caps.get(2)) {
            let name = match prefix.as_str() {
                "sk-ant-" => "sk-ant-",
                "sk-" => "sk-",
                "AIza" => "AIza",
                "AKIA" => "AKIA",
                "ASIA" => "ASIA",
                _ => "ya29.",
            };
            out.push((prefix.start()..token.end(), name));
        } else if let Some(token) = caps.get(4)
            && token.as_str().bytes().any(|b| b.is_ascii_digit())
        {
            out.push((token.range(), "bearer"));
        }
    }
    out
}

/// A header map for `Debug`: values marked sensitive (credentials, any value holding the
/// key) or secret by name ([`is_secret_header`]) are `<redacted>`.
#[cfg(feature = "http")]
pub(crate) struct HeaderMapShown<'a>(pub(crate) &'a reqwest::header::HeaderMap);

#[cfg(feature = "http")]
impl fmt::Debug for HeaderMapShown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (name, value) in self.0 {
            match value.to_str() {
                Ok(text)
                    if !value.is_sensitive() && !is_secret_header(name.as_str(), text, None) =>
                {
                    map.entry(&name.as_str(), &text)
                }
                _ => map.entry(&name.as_str(), &format_args!("<redacted>")),
            };
        }
        map.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_formats_keep_only_their_prefix() {
        let cases = [
            (
                "Incorrect API key provided: sk-proj-abc123DEF456ghi789. You can find your API key at https://platform.openai.com/account/api-keys.",
                "Incorrect API key provided: sk-…[redacted]. You can find your API key at https://platform.openai.com/account/api-keys.",
            ),
            (
                "invalid x-api-key sk-ant-api03-Zx9_yW8-vU7tS6",
                "invalid x-api-key sk-ant-…[redacted]",
            ),
            (
                "API key not valid: AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
                "API key not valid: AIza…[redacted]",
            ),
            (
                "The security token AKIAIOSFODNN7EXAMPLE / ASIA1234567890ABCDEF is invalid",
                "The security token AKIA…[redacted] / ASIA…[redacted] is invalid",
            ),
            (
                "got header Authorization: Bearer eyJhbGciOi.J9x-1_2~3+4/5==, rejected",
                "got header Authorization: Bearer …[redacted], rejected",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(scrub(text, &[] as &[&str]), want);
        }
    }

    #[test]
    fn words_are_not_keys() {
        for text in [
            "Invalid bearer authentication",
            "task-1234567890 failed",
            "risk-assessment-2024",
            "Missing bearer token",
            "prompt is too long: 213462 tokens > 200000 maximum",
        ] {
            assert!(
                matches!(scrub(text, &[] as &[&str]), Cow::Borrowed(_)),
                "{text}"
            );
        }
    }

    #[test]
    fn the_request_key_is_removed_whatever_its_format() {
        let key = "my-gateway-key-0f3a9c";
        let text = format!("401 unauthorized: key {key} is revoked (also {key})");
        assert_eq!(
            scrub(&text, &[key]),
            "401 unauthorized: key …[redacted] is revoked (also …[redacted])"
        );
        let mut secrets = Secrets::default();
        secrets.add("Bearer custom-token-77aa88bb");
        assert_eq!(secrets.as_slice().len(), 2);
        assert_eq!(
            secrets.scrub("token custom-token-77aa88bb rejected"),
            "token …[redacted] rejected"
        );
        // Cut short by a clipped text.
        assert_eq!(
            scrub("data={\"k\":\"my-gateway-key-0f…", &[key]),
            "data={\"k\":\"…[redacted]…"
        );
        // Short values are not secrets worth garbling text for.
        secrets.add("x");
        assert_eq!(secrets.as_slice().len(), 2);
    }

    /// Scrubbing keeps what pi's patterns read: each text classifies the same before and
    /// after (the crate's kinds, pi's overflow patterns, pi's auto-retry rule).
    #[test]
    fn scrubbed_texts_classify_as_before() {
        use crate::llm::error::{Error, is_overflow_message};
        use crate::llm::message::AssistantMessage;
        let key = "sk-proj-Zq81xk3LmN0pQ7rS2tU";
        let cases = [
            format!("401 invalid_request_error: Incorrect API key provided: {key}. You can find your API key at https://platform.openai.com/account/api-keys."),
            format!("429 rate_limit_error: Rate limit reached for key {key} on tokens per min (TPM): Limit 30000"),
            "529 overloaded_error: Overloaded (key sk-ant-api03-x9Y8z7W6)".to_owned(),
            format!("400 invalid_request_error: prompt is too long: 213462 tokens > 200000 maximum (Authorization: Bearer {key})"),
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Key: AIzaSyA1b2C3d4E5f6G7h8I9".to_owned(),
            "500 Internal server error for Bearer abc123def456ghi".to_owned(),
            "503 Service Unavailable: upstream connect error (AKIAIOSFODNN7EXAMPLE)".to_owned(),
            format!("Connection error: fetch failed ({key})"),
        ];
        let failed =
            |text: &str| AssistantMessage::new("a", "p", "m").with_error(Error::from_message(text));
        for text in &cases {
            let scrubbed = scrub(text, &[key]);
            assert!(!scrubbed.contains("Zq81xk3"), "{scrubbed}");
            assert_ne!(scrubbed, *text);
            assert_eq!(
                Error::from_message(text.as_str()).kind(),
                Error::from_message(scrubbed.as_ref()).kind(),
                "{text}"
            );
            assert_eq!(
                is_overflow_message(text),
                is_overflow_message(&scrubbed),
                "{text}"
            );
            for window in [0, 200_000] {
                assert_eq!(
                    crate::agent_session::retry::is_retryable(&failed(text), window),
                    crate::agent_session::retry::is_retryable(&failed(&scrubbed), window),
                    "{text}"
                );
                assert_eq!(
                    crate::agent_session::retry::is_context_overflow(&failed(text), window),
                    crate::agent_session::retry::is_context_overflow(&failed(&scrubbed), window),
                    "{text}"
                );
            }
        }
        // The texts do exercise the patterns.
        assert!(is_overflow_message(&scrub(&cases[3], &[key])));
        assert!(crate::agent_session::retry::is_retryable(
            &failed(&scrub(&cases[1], &[key])),
            0
        ));
        assert!(!crate::agent_session::retry::is_retryable(
            &failed(&scrub(&cases[0], &[key])),
            0
        ));
    }

    #[test]
    fn sensitive_headers() {
        for name in [
            "Authorization",
            "proxy-authorization",
            "x-api-key",
            "api-key",
            "X-Goog-Api-Key",
            "cookie",
            "Set-Cookie",
            "x-my-token",
            "client-secret",
            "cf-aig-authorization",
        ] {
            assert!(is_secret_header(name, "v", None), "{name}");
        }
        assert!(!is_secret_header("anthropic-version", "2023-06-01", None));
        assert!(is_secret_header(
            "x-custom",
            "k-0123456789",
            Some("k-0123456789")
        ));
        assert!(is_secret_header("x-custom", "sk-0123456789abcdef", None));
        let headers = [("x-api-key", "sk-ant-0123456789"), ("x-trace", "abc")];
        let shown = format!("{:?}", Headers::new(headers.iter().copied(), None));
        assert_eq!(shown, r#"{"x-api-key": <redacted>, "x-trace": "abc"}"#);
        for name in [
            "accept",
            "anthropic-beta",
            "x-ke",
            "tok",
            "content-type",
            "ké",
        ] {
            assert!(!is_sensitive_header_name(name), "{name}");
        }
        assert!(is_sensitive_header_name("X-KEY"));
    }

    proptest::proptest! {
        /// The scan before the regex never skips a text the regex would change.
        #[test]
        fn the_token_prefilter_never_hides_a_match(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "sk-", "sk", "ant-", "AIza", "AKI", "AKIA", "ASIA", "ya29.", "ya29", "bearer ",
                    "BeArEr\t", "Bearer", " ", "0123456789", "abcdefgh", "_-~+/", ".", "=", "é", "\n",
                ]),
                0..8,
            )
        ) {
            let text: String = parts.concat();
            if !may_hold_token(&text) {
                proptest::prop_assert!(token_pattern().find(&text).is_none(), "{text:?}");
            }
        }
    }
}
