//! trigger-compact: compacts the session when its context grows past 100 000 tokens (checked
//! at the end of each turn: the turn whose context crosses the line starts a compaction), and
//! on `/trigger-compact [instructions]` at once, the instructions going to the summary. Shows
//! "Compaction started", then "Compaction completed" or "Compaction failed: <error>". Port of
//! pi's `examples/extensions/trigger-compact.ts`; all of it is ported.

use std::sync::{Arc, Mutex};

use pi_engine::agent::AgentEvent;
use pi_engine::extensions::{Extension, ExtensionContext, NotifyKind};

/// The context size past which a turn starts a compaction.
pub(crate) const COMPACT_THRESHOLD_TOKENS: u64 = 100_000;

/// Whether a turn that left the context at `current` tokens, after one that left it at
/// `previous`, crossed the threshold.
pub(crate) fn crossed_threshold(previous: Option<u64>, current: u64) -> bool {
    previous.is_some_and(|p| p <= COMPACT_THRESHOLD_TOKENS) && current > COMPACT_THRESHOLD_TOKENS
}

/// Starts a compaction and tells the person how it went (pi's `onComplete`, `onError`).
fn trigger_compaction(ctx: &ExtensionContext, custom_instructions: Option<String>) {
    if ctx.has_ui() {
        ctx.ui().notify("Compaction started", NotifyKind::Info);
    }
    let compaction = ctx.compact(custom_instructions);
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let outcome = match compaction.await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if ctx.has_ui() {
            match outcome {
                Ok(()) => ctx.ui().notify("Compaction completed", NotifyKind::Info),
                Err(e) => ctx
                    .ui()
                    .notify(&format!("Compaction failed: {e}"), NotifyKind::Error),
            }
        }
    });
}

/// The extension, registered as `trigger-compact`.
pub(crate) fn extension() -> Extension {
    Extension::new("trigger-compact", |pi| {
        // The context size at the end of the last turn that knew it.
        let previous: Arc<Mutex<Option<u64>>> = Arc::default();

        pi.on_event(move |event, ctx| {
            let previous = previous.clone();
            async move {
                if !matches!(event.as_agent(), Some(AgentEvent::TurnEnd { .. })) {
                    return Ok(());
                }
                let Some(current) = ctx.context_usage().and_then(|u| u.tokens) else {
                    return Ok(());
                };
                let before = previous
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .replace(current);
                if crossed_threshold(before, current) {
                    trigger_compaction(&ctx, None);
                }
                Ok(())
            }
        });

        pi.register_command(
            "trigger-compact",
            "Trigger compaction immediately",
            |args, ctx| async move {
                let instructions = Some(args.trim().to_owned()).filter(|a| !a.is_empty());
                trigger_compaction(&ctx, instructions);
                Ok(())
            },
        );
    })
}
