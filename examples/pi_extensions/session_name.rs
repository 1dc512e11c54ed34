//! session-name: `/session-name [name]` names the session, or without a name says what it
//! is called. Port of pi's `examples/extensions/session-name.ts`.

use pi_engine::extensions::{Extension, NotifyKind};

/// The extension, registered as `session-name`.
pub(crate) fn extension() -> Extension {
    Extension::new("session-name", |pi| {
        pi.register_command(
            "session-name",
            "Set or show session name (usage: /session-name [new name])",
            |args, ctx| async move {
                let name = args.trim();
                if name.is_empty() {
                    let text = match ctx.session_name() {
                        Some(current) if !current.is_empty() => format!("Session: {current}"),
                        _ => "No session name set".to_owned(),
                    };
                    ctx.ui().notify(&text, NotifyKind::Info);
                } else {
                    ctx.set_session_name(name).await?;
                    ctx.ui()
                        .notify(&format!("Session named: {name}"), NotifyKind::Info);
                }
                Ok(())
            },
        );
    })
}
