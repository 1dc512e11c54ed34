//! The `pi-engine` command (feature `cli`): pi's command line, its configuration and
//! resources in pi's places, and its print, JSON and RPC modes — a drop-in for pi's headless
//! modes — and an ACP mode for editors.
//!
//! * [`acp`]: the Agent Client Protocol (`--mode acp`) on [`AgentSession`](crate::agent_session::AgentSession)s
//!   made per editor session.
//! * [`config`]: the agent directory, `settings.json` (global and project), `auth.json`,
//!   `models.json`, model patterns (`--model`, `--models`).
//! * [`resources`]: the system prompt as pi builds it, context files (`AGENTS.md`,
//!   `CLAUDE.md`), skills, prompt templates.
//! * [`rpc`]: pi's RPC mode on an [`AgentSession`](crate::agent_session::AgentSession).

pub mod acp;
mod args;
pub mod config;
mod files;
mod print;
pub mod resources;
pub mod rpc;
mod run;

pub use run::Cli;

/// Runs the command with the process's arguments and no compiled-in extensions; the exit
/// code is pi's (0, 1 on an error, 2 on a usage error). [`Cli`] adds extensions.
pub fn main() -> std::process::ExitCode {
    Cli::new().run()
}
