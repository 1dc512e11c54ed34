//! JavaScript's `a.localeCompare(b)` as node runs it (ICU, `en-US`), for the strings pi
//! sorts: model ids and provider names. pi's choice between matching models and the order
//! of `--list-models` depend on it.

use std::cmp::Ordering;

/// ICU's root order of the printable ASCII characters (a letter's two cases share a place):
/// spaces and punctuation, symbols, digits, letters.
const ORDER: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz";

/// The primary weight of `c`: its place in [`ORDER`]; other characters after every ASCII
/// one, by code point (an approximation: pi's ids are ASCII).
fn primary(c: char) -> u32 {
    let lower = c.to_ascii_lowercase();
    match ORDER.find(lower) {
        Some(i) if lower.is_ascii() => i as u32,
        _ => 0x100 + c as u32,
    }
}

/// `localeCompare` with ICU's default strength: characters compared first without case
/// (the whole string), then lowercase before uppercase; strings equal to ICU are ordered by
/// code point so the order is total.
pub(crate) fn locale_compare(a: &str, b: &str) -> Ordering {
    let primaries = |s: &str| s.chars().map(primary).collect::<Vec<_>>();
    primaries(a)
        .cmp(&primaries(b))
        .then_with(|| {
            let cases = |s: &str| s.chars().map(|c| c.is_uppercase()).collect::<Vec<_>>();
            cases(a).cmp(&cases(b))
        })
        .then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(items: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = items.iter().map(|s| s.to_string()).collect();
        v.sort_by(|a, b| locale_compare(a, b));
        v
    }

    #[test]
    fn matches_node() {
        // Orders printed by node 20 (`[...].sort((a, b) => a.localeCompare(b))`).
        assert_eq!(
            sorted(&[
                "a-b", "a.b", "ab", "a_b", "a/b", "a:b", "a1", "aB", "Ab", "ab1", "a b"
            ]),
            [
                "a b", "a_b", "a-b", "a:b", "a.b", "a/b", "a1", "ab", "aB", "Ab", "ab1"
            ]
        );
        assert_eq!(
            sorted(&["gpt-4o", "gpt-4", "gpt-4.1", "gpt-4-turbo", "gpt-40"]),
            ["gpt-4", "gpt-4-turbo", "gpt-4.1", "gpt-40", "gpt-4o"]
        );
    }
}
