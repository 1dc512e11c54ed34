//! confirm-destructive: asks before the session is replaced — "Clear session?" before a new
//! session, "Switch session?" before a switch when the session has user messages, "Fork from
//! entry …?" before a fork — and cancels on a no. Port of pi's
//! `examples/extensions/confirm-destructive.ts`.

use pi_engine::agent::AgentMessage;
use pi_engine::extensions::{Cancel, Extension, NotifyKind, SwitchReason};

/// The extension, registered as `confirm-destructive`.
pub(crate) fn extension() -> Extension {
    Extension::new("confirm-destructive", |pi| {
        pi.on_session_before_switch(|event, ctx| async move {
            if !ctx.has_ui() {
                return Ok(None);
            }
            if event.reason == SwitchReason::New {
                let confirmed = ctx
                    .ui()
                    .confirm(
                        "Clear session?",
                        "This will delete all messages in the current session.",
                    )
                    .await;
                if !confirmed {
                    ctx.ui().notify("Clear cancelled", NotifyKind::Info);
                    return Ok(Some(Cancel::now()));
                }
                return Ok(None);
            }
            // Any other switch (pi's "resume"): ask when the session has user messages.
            let entries = ctx.session().with_session_manager(|sm| sm.entries())?;
            let has_unsaved_work = entries
                .iter()
                .any(|e| matches!(e.as_message(), Some(AgentMessage::User(_))));
            if has_unsaved_work {
                let confirmed = ctx
                    .ui()
                    .confirm(
                        "Switch session?",
                        "You have messages in the current session. Switch anyway?",
                    )
                    .await;
                if !confirmed {
                    ctx.ui().notify("Switch cancelled", NotifyKind::Info);
                    return Ok(Some(Cancel::now()));
                }
            }
            Ok(None)
        });

        pi.on_session_before_fork(|event, ctx| async move {
            if !ctx.has_ui() {
                return Ok(None);
            }
            let short: String = event.entry_id.chars().take(8).collect();
            let choice = ctx
                .ui()
                .select(
                    &format!("Fork from entry {short}?"),
                    &["Yes, create fork", "No, stay in current session"],
                )
                .await;
            if choice.as_deref() != Some("Yes, create fork") {
                ctx.ui().notify("Fork cancelled", NotifyKind::Info);
                return Ok(Some(Cancel::now()));
            }
            Ok(None)
        });
    })
}
