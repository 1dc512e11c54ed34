//! Rust ports of fourteen of pi's example extensions (`examples/extensions/` in the npm package
//! `@mariozechner/pi-coding-agent` 0.73.1), written with `pi_engine::extensions`. Each is
//! registered under the stem of pi's file (`permission-gate` for `permission-gate.ts`), so
//! that a transcript of the port can be compared with one of the original.

pub(crate) mod bookmark;
pub(crate) mod confirm_destructive;
pub(crate) mod dirty_repo_guard;
pub(crate) mod dynamic_tools;
pub(crate) mod event_bus;
pub(crate) mod hello;
pub(crate) mod input_transform;
pub(crate) mod permission_gate;
pub(crate) mod protected_paths;
pub(crate) mod send_user_message;
pub(crate) mod session_name;
pub(crate) mod todo;
pub(crate) mod tool_override;
pub(crate) mod trigger_compact;

use pi_engine::extensions::Extension;

/// The ports' names: the stems of pi's files.
pub(crate) const NAMES: &[&str] = &[
    "permission-gate",
    "protected-paths",
    "input-transform",
    "hello",
    "session-name",
    "bookmark",
    "dynamic-tools",
    "send-user-message",
    "confirm-destructive",
    "todo",
    "dirty-repo-guard",
    "event-bus",
    "trigger-compact",
    "tool-override",
];

/// The port registered as `name` (pi's file stem), or `None`.
pub(crate) fn by_name(name: &str) -> Option<Extension> {
    Some(match name {
        "permission-gate" => permission_gate::extension(),
        "protected-paths" => protected_paths::extension(),
        "input-transform" => input_transform::extension(),
        "hello" => hello::extension(),
        "session-name" => session_name::extension(),
        "bookmark" => bookmark::extension(),
        "dynamic-tools" => dynamic_tools::extension(),
        "send-user-message" => send_user_message::extension(),
        "confirm-destructive" => confirm_destructive::extension(),
        "todo" => todo::extension(),
        "dirty-repo-guard" => dirty_repo_guard::extension(),
        "event-bus" => event_bus::extension(),
        "trigger-compact" => trigger_compact::extension(),
        "tool-override" => tool_override::extension(),
        _ => return None,
    })
}
