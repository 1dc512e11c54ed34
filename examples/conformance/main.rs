//! The conformance driver: exposes the library to the language-neutral differential tests
//! of `../shared/conformance` (see `CONTRACT.md` there).
//!
//! ```text
//! conformance stream <request.json>
//! conformance agent-scenario <scenarios.json> <name> --requests <file>
//! conformance agent-loop <turns>
//! conformance session-context <file.jsonl> [--branch ID|null]
//! conformance session-load <file.jsonl>
//! conformance tool <request.json>
//! conformance extension-scenario <scenarios.json> <name>
//! ```

use std::process::ExitCode;

mod agent;
mod extension;
mod session;
mod stream;
mod tool;

fn usage() -> ExitCode {
    eprintln!(
        "usage: conformance stream <request.json>\n       conformance agent-scenario <scenarios.json> <name> --requests <file>\n       conformance agent-loop <turns>\n       conformance session-context <file.jsonl> [--branch ID|null]\n       conformance session-load <file.jsonl>\n       conformance tool <request.json>\n       conformance extension-scenario <scenarios.json> <name>"
    );
    ExitCode::from(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("stream") if args.len() == 2 => stream::run(&args[1]).await,
        Some("agent-scenario") if args.len() == 5 && args[3] == "--requests" => {
            agent::scenario(&args[1], &args[2], &args[4]).await
        }
        Some("agent-loop") if args.len() == 2 => agent::agent_loop(&args[1]).await,
        Some("session-context") => session::context(&args[1..]),
        Some("session-load") => session::load(&args[1..]),
        Some("tool") if args.len() == 2 => tool::run(&args[1]).await,
        Some("extension-scenario") if args.len() == 3 => {
            extension::scenario(&args[1], &args[2]).await
        }
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance: {e}");
            ExitCode::from(1)
        }
    }
}
