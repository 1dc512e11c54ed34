//! A persistent agent with a tool: the conversation lives in a session file, so the second
//! run continues the first.
//!
//! ```text
//! cargo run --example quickstart            # first run: asks about the weather
//! cargo run --example quickstart            # second run: "what did you tell me?"
//! cargo run --example quickstart -- ./chats # keep the sessions in ./chats
//! ```
//!
//! Sessions are kept in the directory given as the first argument, else in
//! `$PI_QUICKSTART_DIR`, else in the user's own cache directory (`$XDG_CACHE_HOME/pi-quickstart`
//! or `~/.cache/pi-quickstart`; `pi-quickstart-<user>` under the temporary directory when there
//! is no home), so two users of one machine never continue each other's conversation. Delete
//! it to start over. The files are pi's: `pi --session <file>` opens them too.
//!
//! Runs offline on the faux provider, which plays the model's part from a script, unless
//! [`choose_model`] finds a real model with an API key.

use std::io::Write;
use std::path::PathBuf;

use pi_engine::agent::{AgentEvent, AgentToolResult, ToolContext, ToolError, TypedTool};
use pi_engine::agent_session::{AgentSession, AgentSessionEvent, SessionEvent};
use pi_engine::providers::faux::{Chunking, FauxProvider, FauxRequest, FauxResponse};
use pi_engine::session::SessionOptions;
use pi_engine::{
    ApiProvider, ApiRegistry, AssistantContent, AssistantMessageEvent, Message, Model,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Arguments of `get_weather`.
#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// The city to look up.
    city: String,
}

async fn get_weather(args: WeatherArgs, _cx: ToolContext) -> Result<AgentToolResult, ToolError> {
    // A real tool would call a weather service here.
    let report = format!("{}: 21 °C, sunny, light wind", args.city);
    Ok(AgentToolResult::text(report).with_details(json!({"celsius": 21})))
}

/// What the agent talks to.
enum Choice {
    /// A model of a built-in provider, whose API key is set.
    Real(Box<Model>),
    /// The offline stand-in.
    Faux(FauxProvider),
}

/// Picks the model: a real one when its provider is built in and its API key is in the
/// environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`, in that order of
/// preference), else the scripted faux model. Model selection lives here alone.
fn choose_model() -> Choice {
    let wanted = [
        ("anthropic", "claude-sonnet-4-5"),
        ("openai", "gpt-5-mini"),
        ("google", "gemini-2.5-flash"),
    ];
    for (provider, id) in wanted {
        let Some(model) = pi_engine::get_model(provider, id) else {
            continue;
        };
        let built_in = ApiRegistry::global().get(&model.api).is_some();
        if built_in && pi_engine::llm::env_api_key(provider).is_some() {
            return Choice::Real(Box::new(model));
        }
    }
    Choice::Faux(scripted_model())
}

/// The scripted model. It answers from what it is sent, so the second run shows that the
/// first conversation came back from the file.
fn scripted_model() -> FauxProvider {
    let faux = FauxProvider::builder()
        .chunking(Chunking::Tokens {
            min: 1,
            max: 2,
            seed: 7,
        })
        .tokens_per_second(80.0)
        .build();
    for _ in 0..8 {
        faux.push(FauxResponse::respond(answer));
    }
    faux
}

/// One reply of the scripted model.
fn answer(request: &FauxRequest) -> FauxResponse {
    let texts: Vec<(bool, String)> = request
        .context
        .messages
        .iter()
        .map(|m| match m {
            Message::User(u) => (true, u.content.text()),
            Message::ToolResult(r) => (false, r.text()),
            Message::Assistant(a) => (false, a.text()),
            _ => (false, String::new()),
        })
        .collect();
    let last = request.context.messages.last();
    let question = texts
        .iter()
        .rev()
        .find(|(user, _)| *user)
        .map(|(_, t)| t.as_str());
    let report = request.context.messages.iter().rev().find_map(|m| match m {
        Message::ToolResult(r) => Some(r.text()),
        _ => None,
    });
    match (last, question) {
        (Some(Message::ToolResult(r)), _) => FauxResponse::text(format!(
            "Here is the weather: {}. A good day for a walk.",
            r.text()
        )),
        (_, Some(q)) if q.contains("weather") => FauxResponse::content(vec![
            AssistantContent::thinking("The user wants the weather; I have a tool for it."),
            AssistantContent::tool_call("call_1", "get_weather", json!({"city": "Lisbon"})),
        ]),
        (_, Some(_)) => {
            let name = texts
                .iter()
                .filter(|(user, _)| *user)
                .find_map(|(_, t)| t.split("I'm ").nth(1))
                .and_then(|rest| rest.split(|c: char| !c.is_alphanumeric()).next())
                .unwrap_or("a stranger");
            let told = report.unwrap_or_else(|| "nothing yet".into());
            FauxResponse::text(format!(
                "You are {name}, and I told you the weather: {told}."
            ))
        }
        _ => FauxResponse::text("Hello!"),
    }
}

/// Where sessions are kept: the first argument, `$PI_QUICKSTART_DIR`, else a directory of the
/// user's own.
fn session_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .or_else(|| var("PI_QUICKSTART_DIR").map(PathBuf::from))
        .unwrap_or_else(|| per_user_dir(var("XDG_CACHE_HOME"), var("HOME"), var("USER")))
}

/// `pi-quickstart` in the user's cache directory; without a home, a per-user name under the
/// temporary directory.
fn per_user_dir(
    cache: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
    user: Option<std::ffi::OsString>,
) -> PathBuf {
    match (cache, home) {
        (Some(cache), _) => PathBuf::from(cache).join("pi-quickstart"),
        (None, Some(home)) => PathBuf::from(home).join(".cache/pi-quickstart"),
        (None, None) => {
            let user = user.map_or_else(|| "user".into(), |u| u.to_string_lossy().into_owned());
            std::env::temp_dir().join(format!("pi-quickstart-{user}"))
        }
    }
}

/// Opens the most recent session in `dir` (or starts one), sends the next prompt of the
/// demo, and returns the final answer.
async fn run(
    dir: PathBuf,
    choice: Choice,
    echo: bool,
) -> Result<String, Box<dyn std::error::Error>> {
    let options = SessionOptions::new().with_session_dir(&dir);
    let session_manager = options.continue_recent("/quickstart")?;
    let builder = AgentSession::builder(session_manager)
        .system_prompt("You are a helpful assistant. Use tools when they help.")
        .tool(TypedTool::new(
            "get_weather",
            "Current weather in a city",
            get_weather,
        ));
    let builder = match choice {
        Choice::Real(model) => builder.default_model(*model),
        Choice::Faux(faux) => builder
            .default_model(faux.model())
            .models([faux.model()])
            .stream_fn(move |model, context, options| faux.stream(model, context, options)),
    };
    let session = builder.build()?;
    if echo {
        session.subscribe(print_event);
    }
    let continued = !session.messages().is_empty();
    let prompt = if continued {
        "Remind me: who am I, and what did you tell me?"
    } else {
        "Hi, I'm Ada. What's the weather in Lisbon?"
    };
    if echo {
        if continued {
            println!(
                "(continuing the earlier session in {}; delete that directory to start over)",
                dir.display()
            );
        }
        println!("> {prompt}");
    }
    // `?` for a refused call; a failed model call is the outcome's error.
    if let Err(error) = session.prompt(prompt).await?.into_result() {
        eprintln!("error: {error}");
    }
    if echo && let Some(file) = session.session_file() {
        println!("(session: {})", file.display());
    }
    Ok(session.last_assistant_text().unwrap_or_default())
}

fn print_event(event: &AgentSessionEvent) {
    match event {
        AgentSessionEvent::Agent(AgentEvent::MessageUpdate {
            assistant_message_event,
        }) => match assistant_message_event {
            AssistantMessageEvent::ThinkingStart { .. } => print!("[thinking] "),
            AssistantMessageEvent::ThinkingDelta { delta, .. }
            | AssistantMessageEvent::TextDelta { delta, .. } => print!("{delta}"),
            AssistantMessageEvent::ThinkingEnd { .. } | AssistantMessageEvent::TextEnd { .. } => {
                println!()
            }
            _ => {}
        },
        AgentSessionEvent::Agent(AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        }) => println!(
            "[tool] {tool_name} {}",
            serde_json::Value::Object(args.clone())
        ),
        AgentSessionEvent::Agent(AgentEvent::ToolExecutionEnd { result, .. }) => {
            println!("[tool result] {}", result.text_content())
        }
        AgentSessionEvent::Session(SessionEvent::AutoRetryStart {
            attempt, delay_ms, ..
        }) => println!("[retry {attempt} in {delay_ms} ms]"),
        AgentSessionEvent::Session(SessionEvent::CompactionStart { .. }) => {
            println!("[compacting the conversation]")
        }
        _ => {}
    }
    let _ = std::io::stdout().flush();
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let choice = choose_model();
    match &choice {
        Choice::Faux(_) => println!(
            "(faux model, offline: set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY \
             for a real model)"
        ),
        Choice::Real(model) => println!("(model {}/{})", model.provider, model.id),
    }
    if let Err(e) = run(session_dir(), choice, true).await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_kept_per_user() {
        let dir = |cache: Option<&str>, home: Option<&str>, user: Option<&str>| {
            per_user_dir(
                cache.map(Into::into),
                home.map(Into::into),
                user.map(Into::into),
            )
        };
        assert_eq!(
            dir(Some("/c"), Some("/home/ada"), None),
            PathBuf::from("/c/pi-quickstart")
        );
        assert_eq!(
            dir(None, Some("/home/ada"), Some("ada")),
            PathBuf::from("/home/ada/.cache/pi-quickstart")
        );
        let ada = dir(None, None, Some("ada"));
        assert_ne!(ada, dir(None, None, Some("bob")));
        assert!(ada.starts_with(std::env::temp_dir()));
    }

    #[tokio::test(start_paused = true)]
    async fn the_second_run_continues_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = run(dir.path().into(), Choice::Faux(scripted_model()), false)
            .await
            .unwrap();
        assert_eq!(
            first,
            "Here is the weather: Lisbon: 21 °C, sunny, light wind. A good day for a walk."
        );
        // A new process would start here: a new model, the same directory.
        let second = run(dir.path().into(), Choice::Faux(scripted_model()), false)
            .await
            .unwrap();
        assert_eq!(
            second,
            "You are Ada, and I told you the weather: Lisbon: 21 °C, sunny, light wind."
        );
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1, "one session file, continued");
    }
}
