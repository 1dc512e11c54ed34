//! protected-paths: blocks `write` and `edit` calls on a path containing `.env`, `.git/` or
//! `node_modules/`, with a warning in the UI. Port of pi's
//! `examples/extensions/protected-paths.ts`.

use pi_engine::extensions::{Extension, NotifyKind, ToolCallVerdict};

/// The parts of a path that make it protected.
const PROTECTED: [&str; 3] = [".env", ".git/", "node_modules/"];

/// The extension, registered as `protected-paths`.
pub(crate) fn extension() -> Extension {
    Extension::new("protected-paths", |pi| {
        pi.on_tool_call(|event, ctx| async move {
            if event.tool_name != "write" && event.tool_name != "edit" {
                return Ok(None);
            }
            // Both tools require a path; pi's handler throws without one, which blocks too.
            let path = event
                .input
                .get("path")
                .and_then(|p| p.as_str())
                .ok_or("the call has no path")?;
            if !PROTECTED.iter().any(|p| path.contains(p)) {
                return Ok(None);
            }
            if ctx.has_ui() {
                ctx.ui().notify(
                    &format!("Blocked write to protected path: {path}"),
                    NotifyKind::Warning,
                );
            }
            Ok(Some(ToolCallVerdict::block(format!(
                "Path \"{path}\" is protected"
            ))))
        });
    })
}
