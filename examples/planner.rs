//! A planning agent: it breaks a task into numbered steps, and the streamed text is written
//! to a plan file.
//!
//! ```text
//! cargo run --example planner -- "ship the release" [plan.md]
//! ```
//!
//! Runs offline on the faux provider (the scripted model writes a plan for any task).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pi_engine::agent::Agent;
use pi_engine::providers::faux::{Chunking, FauxProvider, FauxResponse};
use pi_engine::{ApiProvider, Message, Model};

const PLANNER_PROMPT: &str = "You are a planning agent. Break down tasks into steps.
Output format:
1. Step 1
2. Step 2
...";

/// Asks a planning agent for a plan and writes what it streams to `path`.
async fn plan(
    model: Model,
    stream: FauxProvider,
    task: &str,
    path: &Path,
) -> std::io::Result<String> {
    let planner = Agent::builder(model)
        .system_prompt(PLANNER_PROMPT)
        .stream_fn(move |m, c, o| stream.stream(m, c, o))
        .build();
    let plan = Arc::new(Mutex::new(String::new()));
    let sink = plan.clone();
    planner.subscribe(move |event, _| {
        if let Some(delta) = event.text_delta() {
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_str(delta);
        }
    });
    planner
        .prompt(format!("Create a plan for: {task}"))
        .await
        .map_err(std::io::Error::other)?
        .into_result()
        .map_err(std::io::Error::other)?;
    let plan = std::mem::take(&mut *plan.lock().unwrap_or_else(|e| e.into_inner()));
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    tokio::fs::write(path, &plan).await?;
    Ok(plan)
}

/// A model that answers every planning request with a plan for the task it names.
fn scripted_model() -> FauxProvider {
    let faux = FauxProvider::builder()
        .chunking(Chunking::Tokens {
            min: 1,
            max: 3,
            seed: 3,
        })
        .build();
    faux.push(FauxResponse::respond(|req| {
        let task = req
            .context
            .messages
            .iter()
            .find_map(|m| match m {
                Message::User(u) => Some(u.content.text()),
                _ => None,
            })
            .unwrap_or_default();
        let task = task.trim_start_matches("Create a plan for: ");
        FauxResponse::text(format!(
            "1. Clarify what \"{task}\" means and who it is for\n\
             2. List the work and its order\n\
             3. Do the work, checking each step\n\
             4. Review the result and report"
        ))
    }));
    faux
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let task = args.next().unwrap_or_else(|| "ship the release".into());
    let path = PathBuf::from(args.next().unwrap_or_else(|| ".pi/plan.md".into()));
    let faux = scripted_model();
    let text = plan(faux.model(), faux, &task, &path).await?;
    println!("{text}\n\nPlan written to {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn writes_a_numbered_plan() {
        let dir = std::env::temp_dir().join(format!("pi-engine-planner-{}", std::process::id()));
        let path = dir.join(".pi/plan.md");
        let faux = super::scripted_model();
        let streamed = super::plan(faux.model(), faux.clone(), "migrate the database", &path)
            .await
            .unwrap();
        let written = std::fs::read_to_string(&path).unwrap();
        assert_eq!(written, streamed);
        let lines: Vec<_> = written.lines().collect();
        assert_eq!(lines.len(), 4);
        for (i, line) in lines.iter().enumerate() {
            assert!(line.starts_with(&format!("{}. ", i + 1)), "{line}");
        }
        assert!(lines[0].contains("\"migrate the database\""));
        // The planner's system prompt asked for this format.
        let request = &faux.requests()[0];
        assert!(
            request
                .context
                .system_prompt
                .as_deref()
                .unwrap()
                .contains("Output format:\n1. Step 1")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
