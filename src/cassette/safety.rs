//! A check for committed cassettes: one that holds a key fails it.
//!
//! [`check_cassette`] and [`check_dir`] find what the recorder would have scrubbed (see
//! [`scrub`](super#what-is-scrubbed)) and was not: a credential header, query parameter or
//! body field with a value other than [`SCRUBBED`](super::SCRUBBED), a token of a known key
//! format (`sk-…`, `sk-ant-…`, `AIza…`, `AKIA…`/`ASIA…`, `ya29.…`, `Bearer …`) anywhere
//! in a request or a response, and any value equal to a secret you give. Signature fields
//! (`signature`, `thinkingSignature`, `thoughtSignature`, `encrypted_content`, …), the data
//! of `redacted_thinking` blocks and of images, and `data:` URLs are allowed: they look
//! random, they are not keys. Put it in your own tests:
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! # let cassettes = dir.path();
//! if let Err(findings) = pi_engine::cassette::safety::check_dir(cassettes) {
//!     panic!("{} secret(s) in the cassettes:\n{}", findings.len(),
//!         findings.iter().map(|f| f.to_string()).collect::<Vec<_>>().join("\n"));
//! }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::format::Cassette;
use super::scrub::{Hit, Scrubber, SecretKind};

/// A secret found in a cassette.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finding {
    /// The cassette file (empty for [`check`]).
    pub file: PathBuf,
    /// Where in it: a JSON pointer (`/interactions/0/request/headers/x-api-key`; for a
    /// response body, `/interactions/0/response/chunks`).
    pub location: String,
    /// What was found.
    pub kind: FindingKind,
    /// The value, masked: its first 4 characters and its length (or why the file could not
    /// be read).
    pub excerpt: String,
}

/// What a [`Finding`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FindingKind {
    /// A secret of this kind.
    Secret(SecretKind),
    /// The file is not a readable cassette (it cannot be checked).
    Unreadable,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            FindingKind::Secret(SecretKind::Header) => "a credential header".to_owned(),
            FindingKind::Secret(SecretKind::QueryParam) => {
                "a credential query parameter".to_owned()
            }
            FindingKind::Secret(SecretKind::BodyField) => "a credential field".to_owned(),
            FindingKind::Secret(SecretKind::KeyFormat(format)) => format!("a `{format}` key"),
            FindingKind::Secret(SecretKind::Secret) => "a secret value".to_owned(),
            FindingKind::Unreadable => "not a readable cassette".to_owned(),
        };
        write!(
            f,
            "{}#{}: {what} ({})",
            self.file.display(),
            self.location,
            self.excerpt
        )
    }
}

/// The secrets in `cassette`, also looking for each of `secrets` (exact values).
///
/// ```
/// use pi_engine::cassette::Cassette;
/// use pi_engine::cassette::safety::check;
///
/// let cassette: Cassette = serde_json::from_value(serde_json::json!({
///     "version": 1,
///     "interactions": [{
///         "request": {
///             "method": "POST",
///             "url": "https://api.openai.com/v1/chat/completions",
///             "headers": {"authorization": "Bearer sk-proj-abcdefghijklmnop1234"},
///             "body": {"json": {"reasoning": {"encrypted_content": "gAAAAABsk-AKIA0123456789abcdef"}}}
///         },
///         "response": {"status": 200, "headers": {}, "chunks": []}
///     }]
/// })).unwrap();
/// let findings = check(&cassette, &[] as &[&str]);
/// assert_eq!(findings.len(), 1);
/// assert_eq!(findings[0].location, "/interactions/0/request/headers/authorization");
/// ```
pub fn check<S: AsRef<str>>(cassette: &Cassette, secrets: &[S]) -> Vec<Finding> {
    let secrets: Vec<String> = secrets.iter().map(|s| s.as_ref().to_owned()).collect();
    let mut hits: Vec<Hit> = Vec::new();
    for (i, interaction) in cassette.interactions.iter().enumerate() {
        let base = format!("/interactions/{i}");
        let mut s = Scrubber::new(&secrets);
        s.recorded_request(&interaction.request);
        let request_hits = std::mem::take(&mut s.hits);
        hits.extend(request_hits.into_iter().map(|mut h| {
            h.location = format!("{base}/request{}", h.location);
            h
        }));
        if let Some(response) = &interaction.response {
            let headers = response
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), (v.clone(), false)))
                .collect();
            s.header_values(headers, &format!("{base}/response/headers"));
            let chunks: Vec<Bytes> = response.chunks.iter().map(|c| c.bytes()).collect();
            s.chunks(&chunks, &format!("{base}/response/chunks"));
            if let Some(error) = &response.error {
                s.text(error, &format!("{base}/response/error"));
            }
        }
        if let Some(failed) = &interaction.failed {
            s.text(failed, &format!("{base}/failed"));
        }
        hits.append(&mut s.hits);
    }
    hits.into_iter()
        .map(|h| Finding {
            file: PathBuf::new(),
            location: h.location,
            kind: FindingKind::Secret(h.kind),
            excerpt: h.excerpt,
        })
        .collect()
}

/// Checks the cassette file at `path`: `Err` with what was found (a file that cannot be
/// read as a cassette is a finding too).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let path = dir.path().join("t.json");
/// # std::fs::write(&path, r#"{"version":1,"interactions":[]}"#).unwrap();
/// pi_engine::cassette::safety::check_cassette(&path).unwrap();
/// ```
pub fn check_cassette(path: impl AsRef<Path>) -> Result<(), Vec<Finding>> {
    check_cassette_with(path, &[] as &[&str])
}

/// [`check_cassette`], also looking for each of `secrets` (exact values: a tenant id, a
/// key of a format this crate does not know).
pub fn check_cassette_with<S: AsRef<str>>(
    path: impl AsRef<Path>,
    secrets: &[S],
) -> Result<(), Vec<Finding>> {
    let path = path.as_ref();
    let findings = match Cassette::load(path) {
        Ok(cassette) => check(&cassette, secrets)
            .into_iter()
            .map(|f| Finding {
                file: path.to_owned(),
                ..f
            })
            .collect(),
        Err(e) => vec![Finding {
            file: path.to_owned(),
            location: String::new(),
            kind: FindingKind::Unreadable,
            excerpt: e.to_string(),
        }],
    };
    if findings.is_empty() {
        Ok(())
    } else {
        Err(findings)
    }
}

/// Checks every `*.json` file under `dir` (recursively) with [`check_cassette`]. A
/// directory that does not exist holds no secrets.
pub fn check_dir(dir: impl AsRef<Path>) -> Result<(), Vec<Finding>> {
    check_dir_with(dir, &[] as &[&str])
}

/// [`check_dir`], also looking for each of `secrets`.
pub fn check_dir_with<S: AsRef<str>>(
    dir: impl AsRef<Path>,
    secrets: &[S],
) -> Result<(), Vec<Finding>> {
    let mut files = Vec::new();
    collect_json(dir.as_ref(), &mut files);
    files.sort();
    let findings: Vec<Finding> = files
        .iter()
        .filter_map(|f| check_cassette_with(f, secrets).err())
        .flatten()
        .collect();
    if findings.is_empty() {
        Ok(())
    } else {
        Err(findings)
    }
}

fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_json(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cassette(value: serde_json::Value) -> Cassette {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn keys_are_found_and_signatures_allowed() {
        let c = cassette(json!({
            "version": 1,
            "interactions": [{
                "request": {
                    "method": "POST",
                    "url": "https://g.test/v1beta/models/m:streamGenerateContent?alt=sse&key=AIzaSyAAAAAAAAAAAAAAAAAAAA",
                    "headers": {"x-api-key": "[SCRUBBED]", "cookie": "session=abc"},
                    "body": {"json": {
                        "contents": [{"parts": [
                            {"text": "hello", "thoughtSignature": "AKIAsig0123456789abcdef"},
                            {"inlineData": {"mimeType": "image/png", "data": "ASIAAAAAAAAAAAAAAAAAAAAA"}}
                        ]}],
                        "password": "correct-horse",
                        "img": "data:image/png;base64,sk-aaaaaaaaaaaaaaaa"
                    }}
                },
                "response": {"status": 200, "headers": {"set-cookie": "[SCRUBBED]"}, "chunks": [
                    {"text": "data: {\"type\":\"redacted_thinking\",\"data\":\"sk-ant-zzzzzzzzzzzzzzzzzzzz\"}\n\n"},
                    {"text": "data: {\"encrypted_content\":\"ya29.abcdefghijklmnop\"}\n\n"},
                    {"text": "data: {\"text\":\"leaked sk-ant-api03-"},
                    {"text": "0123456789\"}\n\n"}
                ]}
            }]
        }));
        let findings = check(&c, &["tenant-secret-1"]);
        let got: Vec<(&str, FindingKind)> = findings
            .iter()
            .map(|f| (f.location.as_str(), f.kind))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "/interactions/0/request/headers/cookie",
                    FindingKind::Secret(SecretKind::Header)
                ),
                (
                    "/interactions/0/request/url",
                    FindingKind::Secret(SecretKind::QueryParam)
                ),
                (
                    "/interactions/0/request/body/json/password",
                    FindingKind::Secret(SecretKind::BodyField)
                ),
                (
                    "/interactions/0/response/chunks",
                    FindingKind::Secret(SecretKind::KeyFormat("sk-ant-"))
                ),
            ],
            "{findings:#?}"
        );
        // A user's secret anywhere, even in a signature.
        let c2 = cassette(json!({"version": 1, "interactions": [{
            "request": {"method": "POST", "url": "http://x/", "headers": {},
                "body": {"json": {"signature": "x tenant-secret-1"}}}
        }]}));
        assert_eq!(check(&c2, &["tenant-secret-1"]).len(), 1);
        assert!(check(&c2, &[] as &[&str]).is_empty());
        assert!(
            findings[0]
                .to_string()
                .contains("a credential header (sess… (11 chars))"),
            "{}",
            findings[0]
        );
    }

    #[test]
    fn files_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("a/good.json");
        std::fs::create_dir_all(good.parent().unwrap()).unwrap();
        std::fs::write(&good, r#"{"version":1,"interactions":[]}"#).unwrap();
        assert_eq!(check_dir(dir.path()), Ok(()));
        std::fs::write(dir.path().join("bad.json"), "not json").unwrap();
        let findings = check_dir(dir.path()).unwrap_err();
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].kind, FindingKind::Unreadable);
        assert_eq!(check_dir(dir.path().join("missing")), Ok(()));
    }
}
