//! `conformance stream <request.json>`: one model call per run, every event printed as a
//! JSON line in pi-ai's shape (without `partial`), then the final message.

use std::io::Write;

use futures::StreamExt;
use pi_engine::{ApiRegistry, AssistantMessageEvent, Context, Message, Model, StreamOptions};
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
    let mut request: Request =
        serde_json::from_str(&text).map_err(|e| format!("bad request file {path}: {e}"))?;
    // The contract's `idleTimeoutMs`: the idle timeout between events, so that a test can
    // stall a stream in seconds.
    if let Some(ms) = request.options.extra.remove("idleTimeoutMs") {
        let ms = ms.as_u64().ok_or_else(|| {
            format!("bad request file {path}: idleTimeoutMs is not a count of milliseconds")
        })?;
        request.options.idle_timeout = Some(std::time::Duration::from_millis(ms));
    }
    let registry = ApiRegistry::global();
    let simple = request.options.reasoning.is_some();
    // The contract's counting mode: every event consumed (and folded), only the final
    // message printed, to be timed beside clients that only count events.
    let count_only = std::env::var_os("PERF_MODE").is_some_and(|m| m == "count");
    let mut events = 0usize;
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
            if count_only {
                events += 1;
            } else {
                write_line(&mut out, &event)?;
            }
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
    if count_only {
        eprintln!("events: {events}");
    }
    Ok(())
}

/// `n` in decimal, in `buf`.
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
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

/// One event as a JSON line. Deltas, nearly every line of a long reply, are written
/// directly (same bytes as serde's output); the rest through serde.
fn write_line(out: &mut impl Write, event: &AssistantMessageEvent) -> Result<(), String> {
    use AssistantMessageEvent as E;
    let delta = match event {
        E::TextDelta {
            content_index,
            delta,
        } => Some((&b"text_delta"[..], *content_index, delta)),
        E::ThinkingDelta {
            content_index,
            delta,
        } => Some((&b"thinking_delta"[..], *content_index, delta)),
        E::ToolcallDelta {
            content_index,
            delta,
        } => Some((&b"toolcall_delta"[..], *content_index, delta)),
        _ => None,
    };
    let written = match delta {
        Some((kind, index, delta)) => out
            .write_all(br#"{"type":""#)
            .and_then(|()| out.write_all(kind))
            .and_then(|()| out.write_all(br#"","contentIndex":"#))
            .and_then(|()| out.write_all(decimal(index, &mut [0u8; 20])))
            .and_then(|()| out.write_all(br#","delta":"#))
            .and_then(|()| serde_json::to_writer(&mut *out, delta).map_err(Into::into))
            .and_then(|()| out.write_all(b"}\n")),
        None => serde_json::to_writer(&mut *out, event)
            .map_err(Into::into)
            .and_then(|()| out.write_all(b"\n")),
    };
    written.map_err(|e| format!("write: {e}"))
}
