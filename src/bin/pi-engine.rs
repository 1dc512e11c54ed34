//! `pi-engine`: pi's command line and its print, JSON and RPC modes, and an ACP mode for
//! editors (see `pi_engine::cli`).
//!
//! The Rust ports of pi's example extensions (`examples/pi_extensions/`) are compiled in:
//! `pi-engine -e permission-gate` loads the port of pi's `permission-gate.ts`, as
//! `pi -e examples/extensions/permission-gate.ts` loads the original.

#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/pi_extensions/mod.rs"]
mod pi_extensions;

use pi_engine::cli::Cli;

fn main() -> std::process::ExitCode {
    let mut cli = Cli::new();
    for name in pi_extensions::NAMES {
        cli = cli.extension(*name, move || {
            pi_extensions::by_name(name).expect("every listed port exists")
        });
    }
    cli.run()
}
