//! The conformance driver: exposes the library to the language-neutral differential tests
//! of `../shared/conformance` (see `CONTRACT.md` there).
//!
//! ```text
//! conformance stream <request.json>
//! ```

use std::process::ExitCode;

mod session;
mod stream;

fn usage() -> ExitCode {
    eprintln!("usage: conformance stream <request.json>");
    ExitCode::from(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("stream") if args.len() == 2 => stream::run(&args[1]).await,
        Some("session-context") => session::context(&args[1..]),
        Some("session-load") => session::load(&args[1..]),
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
