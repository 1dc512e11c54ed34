//! The seed article's extensions, written with `pi_engine::extensions`: an approval gate
//! on `bash` (`rm|del|format|shutdown` needs a yes), a `tool_call` block of `rm -rf`, a
//! `before_agent_start` injection, a one-hour `context` filter, a `calculator` tool, a
//! `spawn_sub_agent` tool and a `/plan` command that writes `.pi/plan.md`.
//!
//! ```text
//! cargo run --example seed_extensions
//! ```
//!
//! Offline on the faux provider: the scripted model plans, computes, and tries to delete a
//! file; the scripted "person" says no.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pi_engine::agent::{Agent, AgentHooks, AgentMessage, AgentToolResult, StreamFn, TypedTool};
use pi_engine::agent_session::AgentSession;
use pi_engine::extensions::{
    BeforeAgentStart, Extension, ExtensionUi, NotifyKind, ToolCallVerdict,
};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::session::{ExtensionMessage, SessionManager};
use pi_engine::tools::BuiltinTools;
use pi_engine::{ApiProvider, Model};
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn command_of(input: &serde_json::Map<String, serde_json::Value>) -> String {
    input
        .get("command")
        .and_then(|c| c.as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The seed's approval gate: a `bash` command matching `rm|del|format|shutdown` runs only
/// after a person confirms; otherwise the model is told "User cancelled operation".
pub fn approval_gate() -> Extension {
    let dangerous = Regex::new("rm|del|format|shutdown").expect("a valid pattern");
    Extension::new("approval-gate", move |pi| {
        let dangerous = dangerous.clone();
        pi.on_tool_call(move |call, ctx| {
            let dangerous = dangerous.clone();
            async move {
                let command = command_of(&call.input);
                if call.tool_name != "bash" || !dangerous.is_match(&command) {
                    return Ok(None);
                }
                let question = format!("Execute dangerous command?\n{command}");
                let yes = ctx.ui().confirm(&question, &command).await;
                Ok((!yes).then(|| ToolCallVerdict::block("User cancelled operation")))
            }
        });
    })
}

/// The seed's `tool_call` example: `rm -rf` needs a yes.
pub fn no_rm_rf() -> Extension {
    Extension::new("no-rm-rf", |pi| {
        pi.on_tool_call(|call, ctx| async move {
            let command = command_of(&call.input);
            if call.tool_name != "bash" || !command.contains("rm -rf") {
                return Ok(None);
            }
            let ok = ctx
                .ui()
                .confirm("Dangerous Command", &format!("Allow: {command}?"))
                .await;
            Ok((!ok).then(|| ToolCallVerdict::block("Blocked by user")))
        });
    })
}

/// The seed's `before_agent_start` example: a hidden message and extra instructions.
pub fn extra_context() -> Extension {
    Extension::new("my-ext", |pi| {
        pi.on_before_agent_start(|event, _ctx| async move {
            Ok(Some(
                BeforeAgentStart::default()
                    .with_message(ExtensionMessage::new(
                        "my-ext:context",
                        "Additional context for this turn",
                        false,
                    ))
                    .with_system_prompt(format!(
                        "{}\n\nExtra instructions...",
                        event.system_prompt
                    )),
            ))
        });
    })
}

/// The seed's `context` example: user messages older than an hour are not sent.
pub fn last_hour_only() -> Extension {
    Extension::new("last-hour", |pi| {
        pi.on_context(|event, _ctx| async move {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            let kept = event
                .messages
                .iter()
                .filter(|m| match m {
                    AgentMessage::User(u) if u.timestamp > 0 => now - u.timestamp < 3_600_000,
                    _ => true,
                })
                .cloned()
                .collect();
            Ok(Some(kept))
        });
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Operation {
    Add,
    Subtract,
    Multiply,
    Divide,
}

/// Arguments of `calculator`.
#[derive(Deserialize, JsonSchema)]
struct CalculatorArgs {
    operation: Operation,
    /// First operand
    a: f64,
    /// Second operand
    b: f64,
}

/// The seed's `calculator` tool.
pub fn calculator() -> Extension {
    Extension::new("calculator", |pi| {
        let tool = TypedTool::new(
            "calculator",
            "Perform basic arithmetic operations",
            |args: CalculatorArgs, _cx| async move {
                let (name, result) = match args.operation {
                    Operation::Add => ("add", args.a + args.b),
                    Operation::Subtract => ("subtract", args.a - args.b),
                    Operation::Multiply => ("multiply", args.a * args.b),
                    Operation::Divide if args.b == 0.0 => return Err("Division by zero".into()),
                    Operation::Divide => ("divide", args.a / args.b),
                };
                Ok(
                    AgentToolResult::text(format!("{} {name} {} = {result}", args.a, args.b))
                        .with_details(json!({ "result": result })),
                )
            },
        )
        .with_label("Calculator");
        pi.register_tool(tool);
    })
}

/// Runs `prompt` on a fresh agent with `system` and no tools; returns its last text.
async fn run_agent(
    model: Model,
    stream: Arc<dyn StreamFn>,
    system: &str,
    prompt: String,
) -> String {
    let agent = Agent::builder(model)
        .system_prompt(system)
        .hooks(AgentHooks::new().with_stream_fn_arc(stream))
        .build();
    match agent.prompt(prompt).await {
        Ok(outcome) if outcome.is_completed() => agent.last_assistant_text().unwrap_or_default(),
        Ok(outcome) => format!("The sub-agent did not finish: {outcome:?}"),
        Err(e) => format!("The sub-agent could not start: {e}"),
    }
}

/// Arguments of `spawn_sub_agent`.
#[derive(Deserialize, JsonSchema)]
struct SubAgentArgs {
    /// The task for the sub-agent.
    task: String,
}

/// The seed's sub-agent tool: a fresh agent (same model, no tools) does the task.
pub fn sub_agent(model: Model, stream: Arc<dyn StreamFn>) -> Extension {
    Extension::new("sub-agent", move |pi| {
        let (model, stream) = (model.clone(), stream.clone());
        pi.register_tool(TypedTool::new(
            "spawn_sub_agent",
            "Spawn a sub-agent for an independent task",
            move |args: SubAgentArgs, _cx| {
                let (model, stream) = (model.clone(), stream.clone());
                async move {
                    let text = run_agent(
                        model,
                        stream,
                        "You are a focused sub-agent.",
                        args.task.clone(),
                    )
                    .await;
                    Ok(AgentToolResult::text(text).with_details(json!({ "task": args.task })))
                }
            },
        ));
    })
}

/// The seed's `/plan <task>`: a planning agent writes `.pi/plan.md` in the session's
/// directory.
pub fn planner(stream: Arc<dyn StreamFn>) -> Extension {
    Extension::new("planner", move |pi| {
        let stream = stream.clone();
        pi.timeout(Duration::from_secs(300));
        pi.register_command("plan", "Create a plan for the given task", move |args, ctx| {
            let stream = stream.clone();
            async move {
                let system = "You are a planning agent. Break down tasks into steps.\nOutput format:\n1. Step 1\n2. Step 2\n...";
                let plan = run_agent(ctx.session().model(), stream, system, format!("Create a plan for: {args}")).await;
                let dir = ctx.cwd().join(".pi");
                tokio::fs::create_dir_all(&dir).await?;
                tokio::fs::write(dir.join("plan.md"), plan).await?;
                ctx.ui().notify("Plan created in .pi/plan.md", NotifyKind::Info);
                Ok(())
            }
        });
    })
}

/// A UI whose person answers confirmations from a script and whose notifications are kept.
#[derive(Default)]
pub struct ScriptedPerson {
    answers: Mutex<Vec<bool>>,
    /// The questions asked, in order.
    pub asked: Mutex<Vec<String>>,
    /// The notifications shown, in order.
    pub notes: Mutex<Vec<String>>,
}

/// The UI half of a [`ScriptedPerson`] (shared with the test that reads what was asked).
pub struct PersonUi(pub Arc<ScriptedPerson>);

#[async_trait]
impl ExtensionUi for PersonUi {
    async fn select(&self, _title: &str, _options: &[String]) -> Option<String> {
        None
    }
    async fn confirm(&self, title: &str, _message: &str) -> bool {
        self.0.asked.lock().unwrap().push(title.to_owned());
        self.0.answers.lock().unwrap().pop().unwrap_or(false)
    }
    async fn input(&self, _title: &str, _placeholder: Option<&str>) -> Option<String> {
        None
    }
    async fn editor(&self, _title: &str, _prefill: Option<&str>) -> Option<String> {
        None
    }
    fn notify(&self, message: &str, _kind: Option<NotifyKind>) {
        self.0.notes.lock().unwrap().push(message.to_owned());
    }
}

/// A session in `dir` with every seed extension, the built-in tools, `faux` as the model
/// and `person` as the UI.
pub fn session(dir: &Path, faux: &FauxProvider, person: Arc<ScriptedPerson>) -> AgentSession {
    let s = faux.clone();
    let stream: Arc<dyn StreamFn> = Arc::new(
        move |m: &Model, c: &pi_engine::Context, o: &pi_engine::StreamOptions| s.stream(m, c, o),
    );
    let mut builder = AgentSession::builder(SessionManager::in_memory(dir.to_string_lossy()))
        .default_model(faux.model())
        .system_prompt("You are a helpful coding agent.")
        .stream_fn_arc(stream.clone())
        .tools(BuiltinTools::new(dir).coding())
        .extension_ui(PersonUi(person));
    for ext in [
        approval_gate(),
        no_rm_rf(),
        extra_context(),
        last_hour_only(),
        calculator(),
        sub_agent(faux.model(), stream.clone()),
        planner(stream),
    ] {
        builder = builder.extension(ext);
    }
    builder.build().expect("a model is given")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pi-seed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    std::fs::write(dir.join("victim.txt"), "keep me\n").expect("a file");
    dir
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = scratch("demo");
    let faux = FauxProvider::new();
    let person = Arc::new(ScriptedPerson::default());
    *person.answers.lock().unwrap() = vec![false];
    let session = session(&dir, &faux, person.clone());

    faux.push(FauxResponse::text(
        "1. Read the code\n2. Add the cache\n3. Test it",
    ));
    session.prompt("/plan add a cache").await?.into_result()?;
    println!(
        "/plan wrote .pi/plan.md:\n{}",
        std::fs::read_to_string(dir.join(".pi/plan.md"))?
    );

    faux.push(FauxResponse::tool_call(
        "c1",
        "calculator",
        json!({"operation": "multiply", "a": 6, "b": 7}),
    ));
    faux.push(FauxResponse::tool_call(
        "c2",
        "bash",
        json!({"command": "rm victim.txt"}),
    ));
    faux.push(FauxResponse::text(
        "6 x 7 is 42; I did not delete the file.",
    ));
    session
        .prompt("What is 6 x 7? Then delete victim.txt.")
        .await?
        .into_result()?;
    for m in session.messages() {
        if let AgentMessage::ToolResult(r) = m {
            println!("{}: {}", r.tool_name, r.text());
        }
    }
    println!("asked: {:?}", person.asked.lock().unwrap());
    println!(
        "victim.txt still there: {}",
        dir.join("victim.txt").exists()
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(session: &AgentSession) -> Vec<(String, bool, String)> {
        session
            .messages()
            .into_iter()
            .filter_map(|m| match m {
                AgentMessage::ToolResult(r) => Some((r.tool_name.clone(), r.is_error, r.text())),
                _ => None,
            })
            .collect()
    }

    fn setup(
        name: &str,
        answers: Vec<bool>,
    ) -> (PathBuf, FauxProvider, Arc<ScriptedPerson>, AgentSession) {
        let dir = scratch(name);
        let faux = FauxProvider::new();
        let person = Arc::new(ScriptedPerson::default());
        *person.answers.lock().unwrap() = answers;
        let s = session(&dir, &faux, person.clone());
        (dir, faux, person, s)
    }

    #[tokio::test]
    async fn the_gate_asks_before_a_dangerous_command_and_a_no_stops_it() {
        let (dir, faux, person, session) = setup("gate-no", vec![false]);
        faux.push(FauxResponse::tool_call(
            "c1",
            "bash",
            json!({"command": "ls"}),
        ));
        faux.push(FauxResponse::tool_call(
            "c2",
            "bash",
            json!({"command": "rm victim.txt"}),
        ));
        faux.push(FauxResponse::text("ok"));
        session
            .prompt("clean up")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert_eq!(
            *person.asked.lock().unwrap(),
            ["Execute dangerous command?\nrm victim.txt"]
        );
        let r = results(&session);
        assert!(!r[0].1 && r[0].2.contains("victim.txt"), "ls ran: {r:?}");
        assert_eq!(
            r[1],
            ("bash".into(), true, "User cancelled operation".into())
        );
        assert!(dir.join("victim.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_yes_lets_it_run_and_rm_rf_asks_twice() {
        let (dir, faux, person, session) = setup("gate-yes", vec![true, true]);
        faux.push(FauxResponse::tool_call(
            "c1",
            "bash",
            json!({"command": "rm -rf victim.txt"}),
        ));
        faux.push(FauxResponse::text("ok"));
        session
            .prompt("clean up")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        // The approval gate, then the rm -rf block: both asked, in registration order.
        assert_eq!(
            *person.asked.lock().unwrap(),
            [
                "Execute dangerous command?\nrm -rf victim.txt",
                "Dangerous Command"
            ]
        );
        assert!(!results(&session)[0].1);
        assert!(!dir.join("victim.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn rm_rf_is_blocked_when_the_second_question_says_no() {
        // Answers pop from the end: the gate gets yes, the rm -rf block gets no.
        let (dir, faux, _person, session) = setup("rm-rf", vec![false, true]);
        faux.push(FauxResponse::tool_call(
            "c1",
            "bash",
            json!({"command": "rm -rf victim.txt"}),
        ));
        faux.push(FauxResponse::text("ok"));
        session
            .prompt("clean up")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert_eq!(
            results(&session)[0],
            ("bash".into(), true, "Blocked by user".into())
        );
        assert!(dir.join("victim.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn the_injection_adds_a_hidden_message_and_instructions() {
        let (dir, faux, _person, session) = setup("inject", vec![]);
        faux.push(FauxResponse::text("ok"));
        session.prompt("hi").await.unwrap().into_result().unwrap();
        let req = &faux.requests()[0];
        assert_eq!(
            req.context
                .system_prompt
                .as_deref()
                .map(|s| s.ends_with("\n\nExtra instructions...")),
            Some(true)
        );
        assert!(format!("{:?}", req.context.messages).contains("Additional context for this turn"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn user_messages_older_than_an_hour_are_not_sent() {
        let (dir, faux, _person, session) = setup("hour", vec![]);
        let mut old = pi_engine::UserMessage::new("from yesterday");
        old.timestamp -= 2 * 3_600_000;
        session.agent().set_messages(vec![old.into()]);
        faux.push(FauxResponse::text("ok"));
        session.prompt("now").await.unwrap().into_result().unwrap();
        let sent = format!("{:?}", faux.requests()[0].context.messages);
        assert!(
            !sent.contains("from yesterday") && sent.contains("now"),
            "{sent}"
        );
        // The old message, the prompt, the injected message, the reply: the session keeps all.
        assert_eq!(session.messages().len(), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn the_calculator_and_the_sub_agent() {
        let (dir, faux, _person, session) = setup("tools", vec![]);
        faux.push(FauxResponse::tool_call(
            "c1",
            "calculator",
            json!({"operation": "divide", "a": 1, "b": 4}),
        ));
        faux.push(FauxResponse::tool_call(
            "c2",
            "calculator",
            json!({"operation": "divide", "a": 1, "b": 0}),
        ));
        faux.push(FauxResponse::tool_call(
            "c3",
            "spawn_sub_agent",
            json!({"task": "summarize"}),
        ));
        faux.push(FauxResponse::text("a summary")); // the sub-agent's answer
        faux.push(FauxResponse::text("done"));
        session.prompt("go").await.unwrap().into_result().unwrap();
        let r = results(&session);
        assert_eq!(
            r[0],
            ("calculator".into(), false, "1 divide 4 = 0.25".into())
        );
        assert_eq!(r[1], ("calculator".into(), true, "Division by zero".into()));
        assert_eq!(r[2], ("spawn_sub_agent".into(), false, "a summary".into()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn plan_writes_the_plan_and_says_so() {
        let (dir, faux, person, session) = setup("plan", vec![]);
        faux.push(FauxResponse::text("1. One\n2. Two"));
        assert!(session.prompt("/plan a cache").await.unwrap().is_handled());
        assert_eq!(
            std::fs::read_to_string(dir.join(".pi/plan.md")).unwrap(),
            "1. One\n2. Two"
        );
        assert_eq!(
            *person.notes.lock().unwrap(),
            ["Plan created in .pi/plan.md"]
        );
        let asked = format!("{:?}", faux.requests()[0].context.messages);
        assert!(asked.contains("Create a plan for: a cache"), "{asked}");
        assert!(
            session.messages().is_empty(),
            "the session's own context is untouched"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
