//! `conformance stream <request.json>`: one model call per run, every event printed as a
//! JSON line in pi-ai's shape (without `partial`), then the final message.

use std::io::Write;

use futures::StreamExt;
use pi_engine::{ApiRegistry, Context, Message, Model, StreamOptions};
use serde::Deserialize;

#[derive(Deserialize)]
struct Request {
    model: Model,
    context: Context,
    #[serde(default)]
    options: StreamOptions,
    #[serde(default)]
    repeat: Option<usize>,
}

pub(crate) async fn run(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let request: Request =
        serde_json::from_str(&text).map_err(|e| format!("bad request file {path}: {e}"))?;
    let registry = ApiRegistry::global();
    let simple = request.options.reasoning.is_some();
    // Millions of short lines: one large buffer straight to the file descriptor (stdout's own
    // line buffering would copy every block a second time).
    let mut out = std::io::BufWriter::with_capacity(1 << 20, raw_stdout());
    for _ in 0..request.repeat.unwrap_or(1).max(1) {
        let mut stream = if simple {
            registry.stream_simple(&request.model, &request.context, &request.options)
        } else {
            registry.stream(&request.model, &request.context, &request.options)
        };
        while let Some(event) = stream.next().await {
            write_line(&mut out, &event)?;
        }
        let message = stream.result().await;
        out.write_all(br#"{"type":"__final_message__","message":"#)
            .and_then(|()| {
                serde_json::to_writer(&mut out, &Message::from(message)).map_err(Into::into)
            })
            .and_then(|()| out.write_all(b"}\n"))
            .map_err(|e| format!("write: {e}"))?;
        out.flush().map_err(|e| format!("write: {e}"))?;
    }
    Ok(())
}

/// Standard output without Rust's line buffering.
#[cfg(unix)]
fn raw_stdout() -> Box<dyn Write> {
    use std::os::fd::AsFd;
    match std::io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => Box::new(std::fs::File::from(fd)),
        Err(_) => Box::new(std::io::stdout()),
    }
}

#[cfg(not(unix))]
fn raw_stdout() -> Box<dyn Write> {
    Box::new(std::io::stdout())
}

fn write_line(out: &mut impl Write, value: &impl serde::Serialize) -> Result<(), String> {
    serde_json::to_writer(&mut *out, value).map_err(|e| format!("write: {e}"))?;
    out.write_all(b"\n").map_err(|e| format!("write: {e}"))
}
