//! pi's print modes: `-p` (the final answer's text on stdout) and `--mode json` (the session
//! header, then every event as one JSON line). The prompts run one after another; an error or
//! an abort is on stderr with exit code 1.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWrite;

use crate::agent::{AgentMessage, PromptInput};
use crate::agent_session::{
    AgentSession, AgentSessionEvent, JsonLinesWriter, SessionEvent, UpdateShape,
};
use crate::llm::message::{AssistantContent, StopReason};

/// Which print mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrintOutput {
    /// The final answer's text.
    Text,
    /// Every event as a JSON line, `message_update`s in `shape`.
    Json(UpdateShape),
}

/// Runs `first` (the message built from stdin, `@file`s and the first message) and then
/// each of `rest`, printing as `output` says to `stdout`; errors go to `stderr`.
///
/// # Cancel safety
///
/// Dropping the future stops the run where it is; what was written to the session stays.
pub(crate) async fn run(
    session: &AgentSession,
    first: Option<PromptInput>,
    rest: Vec<String>,
    output: PrintOutput,
    stdout: impl AsyncWrite + Send + Unpin + 'static,
    stderr: Arc<Mutex<dyn std::io::Write + Send>>,
) -> ExitCode {
    // pi's print mode reports extension failures on stderr as they happen.
    let err = stderr.clone();
    let errors = session.subscribe(move |e| {
        if let AgentSessionEvent::Session(SessionEvent::ExtensionError {
            extension_path,
            error,
            ..
        }) = e
        {
            let mut w = err.lock().unwrap_or_else(|p| p.into_inner());
            let _ = writeln!(w, "Extension error ({extension_path}): {error}");
        }
    });
    let mut stdout = Some(stdout);
    let writer = match (
        output,
        stdout.take_if(|_| matches!(output, PrintOutput::Json(_))),
    ) {
        (PrintOutput::Json(shape), Some(stdout)) => {
            let writer = JsonLinesWriter::with_shape(stdout, shape);
            if let Err(e) = writer.write_header(session) {
                errors.unsubscribe();
                return fail(&stderr, &e.to_string());
            }
            // pi's JSON lines have no `extension_action` (this crate's own event).
            writer.attach_filtered(session, |e| {
                !matches!(
                    e,
                    AgentSessionEvent::Session(SessionEvent::ExtensionAction { .. })
                )
            });
            Some(writer)
        }
        _ => None,
    };
    let mut code = ExitCode::SUCCESS;
    let inputs = first
        .into_iter()
        .chain(rest.into_iter().map(PromptInput::from));
    for input in inputs {
        if let Err(e) = session.prompt(input).await {
            code = fail(&stderr, &e.to_string());
            break;
        }
    }
    session.shutdown().await;
    errors.unsubscribe();
    match writer {
        Some(writer) => {
            if let Err(e) = writer.finish().await {
                // A closed stdout: nothing more can be said there.
                return fail(&stderr, &e.to_string());
            }
        }
        None if code == ExitCode::SUCCESS => {
            if let Some(stdout) = stdout {
                code = print_answer(session, stdout, &stderr).await;
            }
        }
        None => {}
    }
    code
}

fn fail(stderr: &Mutex<dyn std::io::Write + Send>, text: &str) -> ExitCode {
    let mut w = stderr.lock().unwrap_or_else(|p| p.into_inner());
    let _ = writeln!(w, "{text}");
    ExitCode::from(1)
}

/// pi's text output: the text blocks of the last message when it is a reply; its error
/// (or `Request aborted`) on stderr when it failed.
async fn print_answer(
    session: &AgentSession,
    mut stdout: impl AsyncWrite + Unpin,
    stderr: &Mutex<dyn std::io::Write + Send>,
) -> ExitCode {
    use tokio::io::AsyncWriteExt;
    let messages = session.messages();
    let Some(AgentMessage::Assistant(reply)) = messages.last() else {
        return ExitCode::SUCCESS;
    };
    match reply.stop_reason {
        StopReason::Error | StopReason::Aborted => {
            let text = reply
                .error_message
                .clone()
                .unwrap_or_else(|| format!("Request {}", reply.stop_reason.as_str()));
            return fail(stderr, &text);
        }
        _ => {}
    }
    let mut out = String::new();
    for block in &reply.content {
        if let AssistantContent::Text(t) = block {
            out.push_str(&t.text);
            out.push('\n');
        }
    }
    if stdout.write_all(out.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
