//! `--list-models [search]`: pi's table of the models with credentials.

use crate::llm::model::{InputModality, Model};
use crate::models::ModelRegistry;

use super::collate::locale_compare;

/// What pi-engine prints when no model has credentials (pi's text starts the same way, then
/// points to its `/login` and its docs).
pub const NO_MODELS_AVAILABLE: &str = "No models available. Set a provider's API key in its environment variable (e.g. ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY), store one in ~/.pi/agent/auth.json ({\"<provider>\": {\"type\": \"api_key\", \"key\": \"…\"}}), pass --api-key with --model, or add a local server to ~/.pi/agent/models.json.";

/// pi's `formatTokenCount`: `200000` → `200K`, `1000000` → `1M`, `131072` → `131.1K`.
fn format_token_count(count: u64) -> String {
    if count >= 1_000_000 {
        let millions = count as f64 / 1_000_000.0;
        if count.is_multiple_of(1_000_000) {
            format!("{}M", count / 1_000_000)
        } else {
            format!("{}M", to_fixed_1(millions))
        }
    } else if count >= 1_000 {
        let thousands = count as f64 / 1_000.0;
        if count.is_multiple_of(1_000) {
            format!("{}K", count / 1_000)
        } else {
            format!("{}K", to_fixed_1(thousands))
        }
    } else {
        count.to_string()
    }
}

/// JavaScript's `x.toFixed(1)` for a positive `x`: the exact value of the double rounded
/// to one decimal, halves up (Rust's `{:.1}` rounds halves to even).
fn to_fixed_1(x: f64) -> String {
    // Exact: a double of this size has at most 52 fractional binary digits, so 60 decimals
    // hold its whole expansion.
    let exact = format!("{x:.60}");
    let Some((int, frac)) = exact.split_once('.') else {
        return format!("{x:.1}");
    };
    let digits: Vec<u8> = frac.bytes().map(|b| b - b'0').collect();
    let tenths = u64::from(digits[0]);
    let round_up = digits.get(1).is_some_and(|d| *d >= 5);
    let int: u64 = int.parse().unwrap_or(0);
    let total = int * 10 + tenths + u64::from(round_up);
    format!("{}.{}", total / 10, total % 10)
}

/// pi-tui's `fuzzyMatch`, for matching only: the query's characters appear in the text in
/// order (case-insensitive); a query of letters then digits (or digits then letters) also
/// matches swapped (`gpt5` finds `5gpt`… and `4o` finds `o4`).
fn fuzzy_matches(query: &str, text: &str) -> bool {
    let query = query.to_lowercase();
    let text = text.to_lowercase();
    let subsequence = |q: &str| {
        let mut chars = text.chars();
        q.chars().all(|c| chars.any(|t| t == c))
    };
    if subsequence(&query) {
        return true;
    }
    let split = query
        .find(|c: char| !c.is_ascii_lowercase())
        .unwrap_or(query.len());
    let (letters, digits) = query.split_at(split);
    let swapped = if !letters.is_empty()
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
    {
        Some(format!("{digits}{letters}"))
    } else {
        let split = query
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(query.len());
        let (digits, letters) = query.split_at(split);
        (!digits.is_empty()
            && !letters.is_empty()
            && letters.bytes().all(|b| b.is_ascii_lowercase()))
        .then(|| format!("{letters}{digits}"))
    };
    swapped.is_some_and(|q| subsequence(&q))
}

/// pi-tui's `fuzzyFilter` (filtering only: the list is sorted afterwards): every
/// whitespace-separated token of `query` must match `provider id`.
fn fuzzy_filter<'a>(models: Vec<&'a Model>, query: &str) -> Vec<&'a Model> {
    let tokens: Vec<&str> = query.split_whitespace().collect();
    if tokens.is_empty() {
        return models;
    }
    models
        .into_iter()
        .filter(|m| {
            let text = format!("{} {}", m.provider, m.id);
            tokens.iter().all(|t| fuzzy_matches(t, &text))
        })
        .collect()
}

/// JavaScript's `padEnd` (lengths in UTF-16 units).
fn pad_end(s: &str, width: usize) -> String {
    let len = s.encode_utf16().count();
    let mut out = s.to_owned();
    out.extend(std::iter::repeat_n(' ', width.saturating_sub(len)));
    out
}

/// What `--list-models [search]` prints on stdout, exactly as pi prints it: the models with
/// credentials ([`ModelRegistry::available`]), fuzzy-filtered by `search` (each word's
/// letters in order in `provider id`), sorted by provider then id as JavaScript's
/// `localeCompare` sorts, as a table with the columns `provider`, `model`, `context`,
/// `max-out`, `thinking` and `images`, two spaces apart, each line padded to the full
/// width. Without models: [`NO_MODELS_AVAILABLE`]; when the search leaves none:
/// `No models matching "<search>"`.
///
/// pi also prints a warning on stderr first when `models.json` failed to load
/// (`Warning: errors loading models.json:` and the error); the command does that.
///
/// ```
/// use pi_engine::cli::config::list_models;
/// use pi_engine::models::ModelRegistry;
///
/// let registry = ModelRegistry::from_models_json(r#"{"providers": {"local": {
///     "baseUrl": "http://127.0.0.1:8080/v1", "api": "openai-completions", "apiKey": "x",
///     "models": [{"id": "qwen3-coder", "reasoning": true, "contextWindow": 262144},
///                {"id": "llama", "input": ["text", "image"], "maxTokens": 8192}]}}}"#).unwrap();
/// let table = list_models(&registry, Some("local"));
/// // Every line is padded to the full width (pi's `padEnd` of the last column).
/// assert!(table.lines().all(|l| l.len() == 57));
/// let lines: Vec<&str> = table.lines().map(str::trim_end).collect();
/// assert_eq!(lines, [
///     "provider  model        context  max-out  thinking  images",
///     "local     llama        128K     8.2K     no        yes",
///     "local     qwen3-coder  262.1K   16.4K    yes       no",
/// ]);
/// ```
pub fn list_models(registry: &ModelRegistry, search: Option<&str>) -> String {
    let models = registry.available();
    if models.is_empty() {
        return format!("{NO_MODELS_AVAILABLE}\n");
    }
    let search = search.filter(|s| !s.is_empty());
    let mut models = match search {
        Some(q) => fuzzy_filter(models, q),
        None => models,
    };
    if models.is_empty() {
        return format!("No models matching \"{}\"\n", search.unwrap_or_default());
    }
    models.sort_by(|a, b| {
        locale_compare(&a.provider, &b.provider).then_with(|| locale_compare(&a.id, &b.id))
    });
    let header = [
        "provider", "model", "context", "max-out", "thinking", "images",
    ];
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let rows: Vec<[String; 6]> = models
        .iter()
        .map(|m| {
            [
                m.provider.clone(),
                m.id.clone(),
                format_token_count(m.context_window),
                format_token_count(m.max_tokens),
                yes_no(m.reasoning),
                yes_no(m.input.contains(&InputModality::Image)),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.encode_utf16().count());
        }
    }
    let line = |cells: [&str; 6]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| pad_end(c, w))
            .collect();
        padded.join("  ") + "\n"
    };
    let mut out = line(header);
    for row in &rows {
        out.push_str(&line([
            &row[0], &row[1], &row[2], &row[3], &row[4], &row[5],
        ]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_as_pi_formats_them() {
        let cases = [
            (0, "0"),
            (999, "999"),
            (1000, "1K"),
            (1250, "1.3K"), // a tie: JavaScript rounds it up
            (1150, "1.1K"), // 1.15 is 1.1499999… as a double
            (1350, "1.4K"),
            (131_072, "131.1K"),
            (200_000, "200K"),
            (999_999, "1000.0K"),
            (1_000_000, "1M"),
            (1_048_576, "1.0M"),
            (1_250_000, "1.3M"),
            (2_000_000, "2M"),
        ];
        for (n, want) in cases {
            assert_eq!(format_token_count(n), want, "{n}");
        }
    }

    #[test]
    fn fuzzy_matching_as_pi_tui() {
        assert!(fuzzy_matches("opus", "anthropic claude-opus-4-7"));
        assert!(fuzzy_matches("ANT", "anthropic x"));
        assert!(!fuzzy_matches("zzz", "anthropic x"));
        // Letters and digits swapped.
        assert!(fuzzy_matches("o4", "openai gpt-4o"));
        assert!(fuzzy_matches("gpt5", "openai gpt-5"));
        assert!(!fuzzy_matches("o4x", "openai gpt-4o"));
    }
}
