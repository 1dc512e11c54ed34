//! send-user-message: user messages sent by an extension. `/ask <text>` sends one when the
//! agent is idle; `/steer <text>` and `/followup <text>` send one now when idle, or queue it
//! as a steering or follow-up message while the agent runs; `/askwith <text>` sends a message
//! of two text parts. Port of pi's `examples/extensions/send-user-message.ts`.

use pi_engine::extensions::{Delivery, Extension, NotifyKind};

/// The extension, registered as `send-user-message`.
pub(crate) fn extension() -> Extension {
    Extension::new("send-user-message", |pi| {
        pi.register_command(
            "ask",
            "Send a user message to the agent",
            |args, ctx| async move {
                if args.trim().is_empty() {
                    ctx.ui()
                        .notify("Usage: /ask <message>", NotifyKind::Warning);
                    return Ok(());
                }
                if !ctx.is_idle() {
                    ctx.ui().notify(
                        "Agent is busy. Use /steer or /followup instead.",
                        NotifyKind::Warning,
                    );
                    return Ok(());
                }
                ctx.send_user_message(args, None);
                Ok(())
            },
        );

        pi.register_command(
            "steer",
            "Send a steering message (interrupts current processing)",
            |args, ctx| async move {
                if args.trim().is_empty() {
                    ctx.ui()
                        .notify("Usage: /steer <message>", NotifyKind::Warning);
                    return Ok(());
                }
                if ctx.is_idle() {
                    ctx.send_user_message(args, None);
                } else {
                    ctx.send_user_message(args, Some(Delivery::Steer));
                }
                Ok(())
            },
        );

        pi.register_command(
            "followup",
            "Queue a follow-up message (waits for current processing)",
            |args, ctx| async move {
                if args.trim().is_empty() {
                    ctx.ui()
                        .notify("Usage: /followup <message>", NotifyKind::Warning);
                    return Ok(());
                }
                if ctx.is_idle() {
                    ctx.send_user_message(args, None);
                } else {
                    ctx.send_user_message(args, Some(Delivery::FollowUp));
                    ctx.ui().notify("Follow-up queued", NotifyKind::Info);
                }
                Ok(())
            },
        );

        pi.register_command(
            "askwith",
            "Send a user message with structured content",
            |args, ctx| async move {
                if args.trim().is_empty() {
                    ctx.ui()
                        .notify("Usage: /askwith <message>", NotifyKind::Warning);
                    return Ok(());
                }
                if !ctx.is_idle() {
                    ctx.ui().notify("Agent is busy", NotifyKind::Warning);
                    return Ok(());
                }
                // pi sends the parts [`User request: …`, `Please respond concisely.`], and its
                // sendUserMessage joins text parts with a line break into one prompt.
                let parts = [
                    format!("User request: {args}"),
                    "Please respond concisely.".to_owned(),
                ];
                ctx.send_user_message(parts.join("\n"), None);
                Ok(())
            },
        );
    })
}
