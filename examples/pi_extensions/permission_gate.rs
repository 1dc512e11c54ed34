//! permission-gate: asks before a dangerous `bash` command (`rm -rf`, `sudo`,
//! `chmod`/`chown … 777`) runs, and blocks it unless the person picks "Yes"; without a UI it
//! blocks. Port of pi's `examples/extensions/permission-gate.ts`.

use std::sync::LazyLock;

use pi_engine::extensions::{Extension, ToolCallVerdict};
use regex::Regex;

/// pi's patterns (JavaScript `/…/i`; `\b` there is an ASCII word boundary).
static DANGEROUS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"(?i)(?-u:\b)rm\s+(-rf?|--recursive)",
        r"(?i)(?-u:\b)sudo(?-u:\b)",
        r"(?i)(?-u:\b)(chmod|chown)(?-u:\b).*777",
    ]
    .iter()
    .map(|p| Regex::new(p).expect("a constant pattern"))
    .collect()
});

/// Whether `command` matches one of pi's dangerous patterns.
pub(crate) fn is_dangerous(command: &str) -> bool {
    DANGEROUS.iter().any(|p| p.is_match(command))
}

/// The extension, registered as `permission-gate`.
pub(crate) fn extension() -> Extension {
    Extension::new("permission-gate", |pi| {
        pi.on_tool_call(|event, ctx| async move {
            if event.tool_name != "bash" {
                return Ok(None);
            }
            let command = event
                .input
                .get("command")
                .and_then(|c| c.as_str())
                .unwrap_or_default()
                .to_owned();
            if !is_dangerous(&command) {
                return Ok(None);
            }
            if !ctx.has_ui() {
                // In a mode without a person, block by default.
                return Ok(Some(ToolCallVerdict::block(
                    "Dangerous command blocked (no UI for confirmation)",
                )));
            }
            let title = format!("\u{26a0}\u{fe0f} Dangerous command:\n\n  {command}\n\nAllow?");
            let choice = ctx.ui().select(&title, &["Yes", "No"]).await;
            Ok((choice.as_deref() != Some("Yes"))
                .then(|| ToolCallVerdict::block("Blocked by user")))
        });
    })
}
