//! Gemini stream framing for the local server of `tests/support` (include with
//! `#[path = "support/gemini.rs"] mod gemini;`).
#![allow(dead_code, unreachable_pub)] // Each test binary uses part of it.

/// Frames Gemini chunks (one JSON `GenerateContentResponse` each) as the SSE text of
/// `streamGenerateContent?alt=sse`.
pub fn gemini_sse<S: AsRef<str>>(chunks: &[S]) -> String {
    chunks
        .iter()
        .map(|c| format!("data: {}\r\n\r\n", c.as_ref()))
        .collect()
}

/// The chunks of a recorded fixture of `tests/fixtures/gemini/` (one JSON chunk per line).
pub fn fixture_chunks(name: &str) -> Vec<String> {
    std::fs::read_to_string(format!("tests/fixtures/gemini/{name}"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}
