//! bookmark: `/bookmark [label]` labels the last assistant message (default label
//! `bookmark-<ms since 1970>`); `/unbookmark` removes the label of the last labelled entry.
//! Port of pi's `examples/extensions/bookmark.ts`.

use std::time::{SystemTime, UNIX_EPOCH};

use pi_engine::agent::AgentMessage;
use pi_engine::extensions::{Extension, NotifyKind};

/// The extension, registered as `bookmark`.
pub(crate) fn extension() -> Extension {
    Extension::new("bookmark", |pi| {
        pi.register_command(
            "bookmark",
            "Bookmark last message (usage: /bookmark [label])",
            |args, ctx| async move {
                let label = match args.trim() {
                    "" => {
                        let ms = SystemTime::now()
                            .duration_since(UNIX_EPOCH)
                            .map_or(0, |d| d.as_millis());
                        format!("bookmark-{ms}")
                    }
                    given => given.to_owned(),
                };
                let entries = ctx.session().with_session_manager(|sm| sm.entries())?;
                let last_answer = entries
                    .iter()
                    .rev()
                    .find(|e| matches!(e.as_message(), Some(AgentMessage::Assistant(_))));
                match last_answer {
                    Some(entry) => {
                        ctx.set_label(entry.id(), Some(&label)).await?;
                        ctx.ui()
                            .notify(&format!("Bookmarked as: {label}"), NotifyKind::Info);
                    }
                    None => ctx
                        .ui()
                        .notify("No assistant message to bookmark", NotifyKind::Warning),
                }
                Ok(())
            },
        );

        pi.register_command(
            "unbookmark",
            "Remove bookmark from last labeled entry",
            |_args, ctx| async move {
                let labelled = ctx.session().with_session_manager(|sm| {
                    sm.entries().map(|entries| {
                        entries.iter().rev().find_map(|e| {
                            sm.label(e.id())
                                .filter(|l| !l.is_empty())
                                .map(|l| (e.id().to_owned(), l.to_owned()))
                        })
                    })
                })?;
                match labelled {
                    Some((id, label)) => {
                        ctx.set_label(&id, None).await?;
                        ctx.ui()
                            .notify(&format!("Removed bookmark: {label}"), NotifyKind::Info);
                    }
                    None => ctx
                        .ui()
                        .notify("No bookmarked entry found", NotifyKind::Warning),
                }
                Ok(())
            },
        );
    })
}
