//! dirty-repo-guard: before the session is replaced — a new session, a switch, a fork — runs
//! `git status --porcelain` in the session's directory; when it lists changes, asks "You have
//! N uncommitted file(s). <action> anyway?" and cancels unless the answer is "Yes, proceed
//! anyway" (with a "Commit your changes first" warning). Without a UI a dirty repository
//! cancels; outside a git repository (git fails) nothing is asked. Port of pi's
//! `examples/extensions/dirty-repo-guard.ts`; all of it is ported.

use pi_engine::extensions::{
    Cancel, ExecOptions, Extension, ExtensionContext, HandlerResult, NotifyKind, SwitchReason,
};

/// The answer that lets the operation go on.
const PROCEED: &str = "Yes, proceed anyway";

/// How many files `git status --porcelain` lists as changed, or `None` when git failed (not a
/// repository, no git).
pub(crate) fn changed_files(porcelain: &str, code: i32) -> Option<usize> {
    (code == 0).then(|| {
        porcelain
            .trim()
            .split('\n')
            .filter(|l| !l.is_empty())
            .count()
    })
}

/// Cancels `action` ("new session", "switch session", "fork") when the repository has
/// uncommitted changes and the person does not say to go on.
async fn check_dirty_repo(ctx: &ExtensionContext, action: &str) -> HandlerResult<Cancel> {
    let status = ctx
        .exec("git", &["status", "--porcelain"], ExecOptions::new())
        .await;
    let Some(changed) = changed_files(&status.stdout, status.code) else {
        return Ok(None);
    };
    if changed == 0 {
        return Ok(None);
    }
    if !ctx.has_ui() {
        return Ok(Some(Cancel::now()));
    }
    let choice = ctx
        .ui()
        .select(
            &format!("You have {changed} uncommitted file(s). {action} anyway?"),
            &[PROCEED, "No, let me commit first"],
        )
        .await;
    if choice.as_deref() != Some(PROCEED) {
        ctx.ui()
            .notify("Commit your changes first", NotifyKind::Warning);
        return Ok(Some(Cancel::now()));
    }
    Ok(None)
}

/// The extension, registered as `dirty-repo-guard`.
pub(crate) fn extension() -> Extension {
    Extension::new("dirty-repo-guard", |pi| {
        pi.on_session_before_switch(|event, ctx| async move {
            let action = if event.reason == SwitchReason::New {
                "new session"
            } else {
                "switch session"
            };
            check_dirty_repo(&ctx, action).await
        });
        pi.on_session_before_fork(
            |_event, ctx| async move { check_dirty_repo(&ctx, "fork").await },
        );
    })
}
