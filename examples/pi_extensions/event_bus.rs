//! event-bus: the bus between extensions. A handler of the channel `my:notification` shows
//! each message as "Event from <from>: <message>"; the extension sends one itself when the
//! session starts ("Session started", from `event-bus-example`), and `/emit [message]` sends
//! one from `/emit command` (the message defaults to "hello"). Port of pi's
//! `examples/extensions/event-bus.ts`.
//!
//! pi's listener keeps the context of the last `session_start` to reach the UI; a bus handler
//! here gets a context of its own, so nothing is kept. Otherwise all of it is ported.

use pi_engine::extensions::{Extension, NotifyKind};
use serde_json::{Value, json};

/// The channel.
const CHANNEL: &str = "my:notification";

/// A value as a JavaScript template literal prints it.
fn js_string(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::Null => String::new(),
                v => js_string(Some(v)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".to_owned(),
        Some(other) => other.to_string(),
    }
}

/// What the handler shows for a bus message `{message, from}`.
pub(crate) fn describe(data: &Value) -> String {
    format!(
        "Event from {}: {}",
        js_string(data.get("from")),
        js_string(data.get("message"))
    )
}

/// The extension, registered as `event-bus`.
pub(crate) fn extension() -> Extension {
    Extension::new("event-bus", |pi| {
        // Messages from any extension (this one included).
        pi.on_bus_event(CHANNEL, |data, ctx| async move {
            ctx.ui().notify(&describe(&data), NotifyKind::Info);
            Ok(())
        });

        pi.register_command(
            "emit",
            "Emit my:notification event (usage: /emit message)",
            |args, ctx| async move {
                let message = match args.trim() {
                    "" => "hello",
                    text => text,
                };
                ctx.emit_bus_event(
                    CHANNEL,
                    json!({"message": message, "from": "/emit command"}),
                );
                // The handler above shows it.
                Ok(())
            },
        );

        pi.on_session_start(|_event, ctx| async move {
            ctx.emit_bus_event(
                CHANNEL,
                json!({"message": "Session started", "from": "event-bus-example"}),
            );
            Ok(())
        });
    })
}
