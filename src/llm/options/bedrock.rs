//! `bedrock-converse-stream`: how a reasoning level maps. Bedrock reads the typed
//! `reasoning` and `thinking_budgets` fields of [`StreamOptions`], so it has no options type
//! of its own.

use super::StreamOptions;
use super::anthropic::ADAPTIVE_THINKING_MODELS;
use crate::llm::model::Model;
use crate::llm::thinking::ThinkingLevel;

/// pi's `streamSimple` for Bedrock: the level and budgets as given; a budget-based Claude
/// model gets the adjusted budget and a `maxTokens` raised to hold it.
pub(super) fn map(
    model: &Model,
    options: &StreamOptions,
    level: Option<ThinkingLevel>,
    out: &mut StreamOptions,
) {
    let Some(level) = level else {
        return;
    };
    out.reasoning = Some(level);
    out.thinking_budgets = options.thinking_budgets;
    if !claude(model) || adaptive(model) {
        return;
    }
    let budget = super::raise_max_tokens_for_thinking(model, options, level, out);
    out.thinking_budgets = Some(
        options
            .thinking_budgets
            .unwrap_or_default()
            .with(level, budget),
    );
}

/// True for an Anthropic Claude model on Bedrock, by its id or its name (an application
/// inference profile's ARN names no model; its name may). The Bedrock provider reads it too.
pub(crate) fn claude(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    let name = model.name.to_lowercase();
    id.contains("anthropic.claude")
        || id.contains("anthropic/claude")
        || name.contains("anthropic.claude")
        || name.contains("anthropic/claude")
        || name.contains("claude")
}

/// What pi matches Bedrock model families against: the id and the name, lowercased, as they
/// are and with runs of whitespace, `_`, `.` and `:` turned into `-`.
pub(crate) fn candidates(model: &Model) -> Vec<String> {
    let mut values = vec![model.id.as_str()];
    if !model.name.is_empty() {
        values.push(model.name.as_str());
    }
    values
        .into_iter()
        .flat_map(|value| {
            let lower = value.to_lowercase();
            let dashed = dash_separators(&lower);
            [lower, dashed]
        })
        .collect()
}

/// Claude models that think adaptively (Opus 4.6/4.7, Sonnet 4.6), by [`candidates`].
pub(crate) fn adaptive(model: &Model) -> bool {
    candidates(model)
        .iter()
        .any(|s| ADAPTIVE_THINKING_MODELS.iter().any(|p| s.contains(p)))
}

/// Replaces each run of whitespace, `_`, `.` and `:` with one `-`.
fn dash_separators(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_run = false;
    for ch in s.chars() {
        if ch.is_whitespace() || matches!(ch, '_' | '.' | ':') {
            if !in_run {
                out.push('-');
            }
            in_run = true;
        } else {
            out.push(ch);
            in_run = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dashes_runs_of_separators() {
        assert_eq!(dash_separators("claude opus 4.6"), "claude-opus-4-6");
        assert_eq!(dash_separators("a :_. b"), "a-b");
    }
}
