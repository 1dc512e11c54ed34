//! Fourteen of pi's example extensions, ported to `pi_engine::extensions` (the modules of this
//! folder, one per extension): permission-gate, protected-paths, input-transform, hello,
//! session-name, bookmark, dynamic-tools, send-user-message, confirm-destructive, todo,
//! dirty-repo-guard, event-bus, trigger-compact and tool-override.
//!
//! ```text
//! cargo run --example pi_extensions
//! ```
//!
//! Lists the ports, then runs permission-gate offline on the faux provider: the scripted
//! model tries `rm -rf build` and the scripted person says no. The conformance driver runs the
//! same ports against pi's own transcripts (`conformance extension-scenario`).

#[path = "mod.rs"]
mod pi_extensions;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use pi_engine::ApiProvider;
use pi_engine::agent::AgentMessage;
use pi_engine::agent_session::AgentSession;
use pi_engine::extensions::{Extension, ExtensionUi, NotifyKind};
use pi_engine::providers::faux::{FauxProvider, FauxResponse};
use pi_engine::session::SessionManager;
use pi_engine::tools::BuiltinTools;
use serde_json::json;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A scripted person: answers dialogs in order (`None` cancels; a confirm is yes for
/// `Some("yes")`), and keeps what was asked and shown.
#[derive(Default)]
struct Person {
    answers: Mutex<VecDeque<Option<String>>>,
    asked: Mutex<Vec<String>>,
    notes: Mutex<Vec<(String, NotifyKind)>>,
}

impl Person {
    fn answering(answers: &[Option<&str>]) -> Arc<Person> {
        let person = Person::default();
        *lock(&person.answers) = answers.iter().map(|a| a.map(str::to_owned)).collect();
        Arc::new(person)
    }

    fn answer(&self, title: &str) -> Option<String> {
        lock(&self.asked).push(title.to_owned());
        lock(&self.answers).pop_front().flatten()
    }

    fn notes(&self) -> Vec<(String, NotifyKind)> {
        lock(&self.notes).clone()
    }
}

/// The UI half of a [`Person`] (the test keeps the other).
struct PersonUi(Arc<Person>);

#[async_trait]
impl ExtensionUi for PersonUi {
    async fn select(&self, title: &str, _options: &[String]) -> Option<String> {
        self.0.answer(title)
    }
    async fn confirm(&self, title: &str, _message: &str) -> bool {
        self.0.answer(title).as_deref() == Some("yes")
    }
    async fn input(&self, title: &str, _placeholder: Option<&str>) -> Option<String> {
        self.0.answer(title)
    }
    async fn editor(&self, title: &str, _prefill: Option<&str>) -> Option<String> {
        self.0.answer(title)
    }
    fn notify(&self, message: &str, kind: Option<NotifyKind>) {
        lock(&self.0.notes).push((message.to_owned(), kind.unwrap_or_default()));
    }
}

/// A session in `dir` (kept in `sm`) with pi's default tools, `extension`, `faux` as the
/// model and `person` as the UI.
fn session_with(
    sm: SessionManager,
    dir: &Path,
    faux: &FauxProvider,
    extension: Extension,
    person: Arc<Person>,
) -> AgentSession {
    let f = faux.clone();
    AgentSession::builder(sm)
        .default_model(faux.model())
        .stream_fn(move |m, c, o| f.stream(m, c, o))
        .tools(BuiltinTools::new(dir).coding())
        .extension(extension)
        .extension_ui(PersonUi(person))
        .build()
        .expect("a model is given")
}

/// A scratch folder with `build/out.txt` and `keep.txt`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pi-ext-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("build")).expect("a scratch folder");
    std::fs::write(dir.join("build/out.txt"), "x\n").expect("a file");
    std::fs::write(dir.join("keep.txt"), "k\n").expect("a file");
    dir
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("ported: {}", pi_extensions::NAMES.join(", "));

    let dir = scratch("demo");
    let faux = FauxProvider::new();
    let person = Person::answering(&[Some("No")]);
    let gate = pi_extensions::by_name("permission-gate").ok_or("no permission-gate")?;
    let sm = SessionManager::in_memory(dir.to_string_lossy());
    let session = session_with(sm, &dir, &faux, gate, person.clone());
    faux.push(FauxResponse::tool_call(
        "c1",
        "bash",
        json!({"command": "rm -rf build"}),
    ));
    faux.push(FauxResponse::text("I left the build folder alone."));
    session.prompt("clean the build").await?.into_result()?;
    for title in lock(&person.asked).iter() {
        println!("asked: {title}");
    }
    for (note, kind) in person.notes() {
        println!("shown ({}): {note}", kind.as_str());
    }
    for m in session.messages() {
        if let AgentMessage::ToolResult(r) = m {
            println!("{} -> {}", r.tool_name, r.text());
        }
    }
    println!("build/ still there: {}", dir.join("build").exists());
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::pi_extensions::*;
    use super::*;
    use pi_engine::agent_session::{ForkPosition, NavigateOptions};
    use pi_engine::session::SessionOptions;

    struct Fixture {
        dir: PathBuf,
        faux: FauxProvider,
        person: Arc<Person>,
        session: AgentSession,
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn fixture(name: &str, extension: Extension, answers: &[Option<&str>]) -> Fixture {
        let dir = scratch(name);
        let faux = FauxProvider::new();
        let person = Person::answering(answers);
        let sm = SessionManager::in_memory(dir.to_string_lossy());
        let session = session_with(sm, &dir, &faux, extension, person.clone());
        Fixture {
            dir,
            faux,
            person,
            session,
        }
    }

    /// The tool results: name, error flag, text.
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

    fn user_texts(session: &AgentSession) -> Vec<String> {
        session
            .messages()
            .into_iter()
            .filter_map(|m| match m {
                AgentMessage::User(u) => Some(u.content.text()),
                _ => None,
            })
            .collect()
    }

    /// Runs a command that starts no run.
    async fn command(session: &AgentSession, text: &str) {
        assert!(session.prompt(text).await.unwrap().is_handled(), "{text}");
    }

    fn info(text: &str) -> (String, NotifyKind) {
        (text.to_owned(), NotifyKind::Info)
    }

    #[test]
    fn every_name_has_its_port() {
        for name in NAMES {
            assert_eq!(
                by_name(name).map(|e| e.name().to_owned()).as_deref(),
                Some(*name)
            );
        }
        assert!(by_name("nope").is_none());
    }

    #[test]
    fn the_gate_knows_pis_dangerous_commands() {
        use permission_gate::is_dangerous;
        for yes in [
            "rm -rf build",
            "RM -R x",
            "rm --recursive x",
            "sudo ls",
            "chmod 777 f",
        ] {
            assert!(is_dangerous(yes), "{yes}");
        }
        for no in ["ls", "rm file", "farm -rf", "pseudo x", "chmod 644 f"] {
            assert!(!is_dangerous(no), "{no}");
        }
    }

    #[tokio::test]
    async fn permission_gate_asks_and_a_no_blocks() {
        let fx = fixture("gate-no", permission_gate::extension(), &[Some("No")]);
        fx.faux.push(FauxResponse::tool_call(
            "c1",
            "bash",
            json!({"command": "rm -rf build"}),
        ));
        fx.faux.push(FauxResponse::text("ok"));
        fx.session
            .prompt("clean")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert_eq!(
            *lock(&fx.person.asked),
            ["\u{26a0}\u{fe0f} Dangerous command:\n\n  rm -rf build\n\nAllow?"]
        );
        assert_eq!(
            results(&fx.session),
            [("bash".into(), true, "Blocked by user".into())]
        );
        assert!(fx.dir.join("build/out.txt").exists());
    }

    #[tokio::test]
    async fn permission_gate_lets_a_yes_run() {
        let fx = fixture("gate-yes", permission_gate::extension(), &[Some("Yes")]);
        fx.faux.push(FauxResponse::tool_call(
            "c1",
            "bash",
            json!({"command": "rm -rf build"}),
        ));
        fx.faux.push(FauxResponse::text("ok"));
        fx.session
            .prompt("clean")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert!(!results(&fx.session)[0].1);
        assert!(!fx.dir.join("build").exists());
    }

    #[tokio::test]
    async fn permission_gate_blocks_without_a_ui() {
        let dir = scratch("gate-no-ui");
        let faux = FauxProvider::new();
        let f = faux.clone();
        let session = AgentSession::builder(SessionManager::in_memory(dir.to_string_lossy()))
            .default_model(faux.model())
            .stream_fn(move |m, c, o| f.stream(m, c, o))
            .tools(BuiltinTools::new(&dir).coding())
            .extension(permission_gate::extension())
            .build()
            .unwrap();
        faux.push(FauxResponse::tool_call(
            "c1",
            "bash",
            json!({"command": "sudo rm x"}),
        ));
        faux.push(FauxResponse::text("ok"));
        session.prompt("go").await.unwrap().into_result().unwrap();
        assert_eq!(
            results(&session)[0].2,
            "Dangerous command blocked (no UI for confirmation)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn protected_paths_blocks_a_write_to_env() {
        let fx = fixture("protected", protected_paths::extension(), &[]);
        fx.faux.push(FauxResponse::tool_call(
            "c1",
            "write",
            json!({"path": ".env", "content": "SECRET=1\n"}),
        ));
        fx.faux.push(FauxResponse::tool_call(
            "c2",
            "write",
            json!({"path": "notes.txt", "content": "note\n"}),
        ));
        fx.faux.push(FauxResponse::text("ok"));
        fx.session
            .prompt("write")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        let r = results(&fx.session);
        assert_eq!(
            r[0],
            ("write".into(), true, "Path \".env\" is protected".into())
        );
        assert!(!r[1].1, "{r:?}");
        assert_eq!(
            fx.person.notes(),
            [(
                "Blocked write to protected path: .env".to_owned(),
                NotifyKind::Warning
            )]
        );
        assert!(!fx.dir.join(".env").exists());
        assert!(fx.dir.join("notes.txt").exists());
    }

    #[tokio::test]
    async fn input_transform_rewrites_quick_and_answers_ping() {
        let fx = fixture("input", input_transform::extension(), &[]);
        fx.faux.push(FauxResponse::text("A monoid."));
        fx.session
            .prompt("?quick what is a monad")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert_eq!(
            user_texts(&fx.session),
            ["Respond briefly in 1-2 sentences: what is a monad"]
        );
        assert!(fx.session.prompt("ping").await.unwrap().is_handled());
        assert!(fx.session.prompt("?quick  ").await.unwrap().is_handled());
        assert_eq!(fx.faux.requests().len(), 1, "ping never reaches the model");
        assert_eq!(
            fx.person.notes(),
            [
                info("pong"),
                ("Usage: ?quick <question>".to_owned(), NotifyKind::Warning)
            ]
        );
    }

    #[tokio::test]
    async fn hello_greets() {
        let fx = fixture("hello", hello::extension(), &[]);
        fx.faux.push(FauxResponse::tool_call(
            "c1",
            "hello",
            json!({"name": "Ada"}),
        ));
        fx.faux.push(FauxResponse::text("ok"));
        fx.session
            .prompt("greet Ada")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        let tools = fx.faux.requests()[0]
            .context
            .tools
            .clone()
            .unwrap_or_default();
        let hello = tools.iter().find(|t| t.name == "hello").unwrap();
        assert_eq!(hello.description, "A simple greeting tool");
        assert_eq!(
            hello.parameters,
            json!({"type": "object", "properties": {"name": {"type": "string",
                "description": "Name to greet"}}, "required": ["name"]})
        );
        let details = fx.session.messages().into_iter().find_map(|m| match m {
            AgentMessage::ToolResult(r) => r.details.clone(),
            _ => None,
        });
        assert_eq!(details, Some(json!({"greeted": "Ada"})));
        assert_eq!(results(&fx.session)[0].2, "Hello, Ada!");
    }

    #[tokio::test]
    async fn session_name_sets_and_shows_the_name() {
        let fx = fixture("name", session_name::extension(), &[]);
        assert!(
            fx.session
                .prompt("/session-name")
                .await
                .unwrap()
                .is_handled()
        );
        command(&fx.session, "/session-name Release prep").await;
        command(&fx.session, "/session-name").await;
        assert_eq!(fx.session.session_name().as_deref(), Some("Release prep"));
        assert_eq!(
            fx.person.notes(),
            [
                info("No session name set"),
                info("Session named: Release prep"),
                info("Session: Release prep")
            ]
        );
    }

    #[tokio::test]
    async fn bookmark_labels_the_last_answer_and_unbookmark_removes_it() {
        let fx = fixture("bookmark", bookmark::extension(), &[]);
        command(&fx.session, "/bookmark early").await;
        fx.faux.push(FauxResponse::text("hi"));
        fx.session
            .prompt("hello")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        command(&fx.session, "/bookmark v1").await;
        let label = |session: &AgentSession| {
            session.with_session_manager(|sm| {
                let entries = sm.entries().unwrap();
                let answer = entries
                    .iter()
                    .rev()
                    .find(|e| matches!(e.as_message(), Some(AgentMessage::Assistant(_))))
                    .unwrap();
                sm.label(answer.id()).map(str::to_owned)
            })
        };
        assert_eq!(label(&fx.session).as_deref(), Some("v1"));
        command(&fx.session, "/unbookmark").await;
        assert_eq!(label(&fx.session), None);
        command(&fx.session, "/unbookmark").await;
        assert_eq!(
            fx.person.notes(),
            [
                (
                    "No assistant message to bookmark".to_owned(),
                    NotifyKind::Warning
                ),
                info("Bookmarked as: v1"),
                info("Removed bookmark: v1"),
                ("No bookmarked entry found".to_owned(), NotifyKind::Warning)
            ]
        );
    }

    #[tokio::test]
    async fn dynamic_tools_adds_echo_tools_and_they_echo() {
        let fx = fixture("dynamic", dynamic_tools::extension(), &[]);
        command(&fx.session, "/add-echo-tool shout").await;
        command(&fx.session, "/add-echo-tool Shout").await;
        command(&fx.session, "/add-echo-tool no way").await;
        fx.faux.push(FauxResponse::tool_call(
            "c1",
            "shout",
            json!({"message": "hey"}),
        ));
        fx.faux.push(FauxResponse::text("ok"));
        fx.session
            .prompt("say hey")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert_eq!(
            results(&fx.session),
            [("shout".into(), false, "[shout] hey".into())]
        );
        let names: Vec<String> = fx.faux.requests()[0]
            .context
            .tools
            .clone()
            .unwrap_or_default()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert!(names.contains(&"echo_session".to_owned()), "{names:?}");
        assert_eq!(
            fx.person.notes(),
            [
                info("Registered dynamic tool: echo_session"),
                info("Registered dynamic tool: shout"),
                (
                    "Tool already registered: shout".to_owned(),
                    NotifyKind::Warning
                ),
                (
                    "Usage: /add-echo-tool <tool_name> (lowercase, numbers, underscores)"
                        .to_owned(),
                    NotifyKind::Warning
                ),
            ]
        );
    }

    #[tokio::test]
    async fn send_user_message_ask_runs_the_question() {
        let fx = fixture("ask", send_user_message::extension(), &[]);
        fx.faux.push(FauxResponse::text("4"));
        fx.session
            .prompt("/ask what is two plus two")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        fx.faux.push(FauxResponse::text("concise"));
        fx.session
            .prompt("/askwith a haiku")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        command(&fx.session, "/ask").await;
        assert_eq!(
            user_texts(&fx.session),
            [
                "what is two plus two",
                "User request: a haiku\nPlease respond concisely."
            ]
        );
        assert_eq!(
            fx.person.notes(),
            [("Usage: /ask <message>".to_owned(), NotifyKind::Warning)]
        );
    }

    #[tokio::test]
    async fn confirm_destructive_cancels_a_new_session_on_a_no() {
        let fx = fixture(
            "confirm",
            confirm_destructive::extension(),
            &[Some("no"), Some("yes")],
        );
        fx.faux.push(FauxResponse::text("hi"));
        fx.session
            .prompt("hello")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert!(fx.session.new_session().await.unwrap().cancelled());
        assert_eq!(fx.session.messages().len(), 2, "nothing was cleared");
        assert!(!fx.session.new_session().await.unwrap().cancelled());
        assert!(fx.session.messages().is_empty());
        assert_eq!(
            *lock(&fx.person.asked),
            ["Clear session?", "Clear session?"]
        );
        assert_eq!(fx.person.notes(), [info("Clear cancelled")]);
    }

    #[tokio::test]
    async fn confirm_destructive_asks_before_a_fork() {
        let fx = fixture(
            "fork",
            confirm_destructive::extension(),
            &[
                Some("No, stay in current session"),
                Some("Yes, create fork"),
            ],
        );
        fx.faux.push(FauxResponse::text("hi"));
        fx.session
            .prompt("hello")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        let question = fx.session.with_session_manager(|sm| {
            let entries = sm.entries().unwrap();
            let user = entries
                .iter()
                .find(|e| matches!(e.as_message(), Some(AgentMessage::User(_))))
                .unwrap();
            user.id().to_owned()
        });
        let fork = |id: String| {
            let session = fx.session.clone();
            async move { session.fork(&id, ForkPosition::Before).await.unwrap() }
        };
        assert!(fork(question.clone()).await.cancelled());
        let forked = fork(question.clone()).await;
        assert!(!forked.cancelled());
        assert_eq!(forked.selected_text.as_deref(), Some("hello"));
        let title = format!("Fork from entry {}?", &question[..8.min(question.len())]);
        assert_eq!(*lock(&fx.person.asked), [title.clone(), title]);
        assert_eq!(fx.person.notes(), [info("Fork cancelled")]);
    }

    #[tokio::test]
    async fn todo_adds_and_rebuilds_its_list_from_the_session() {
        let dir = scratch("todo");
        let sessions = dir.join("sessions");
        let faux = FauxProvider::new();
        let person = Person::answering(&[]);
        let sm = SessionOptions::new()
            .with_session_dir(&sessions)
            .create(dir.to_string_lossy());
        let session = session_with(sm, &dir, &faux, todo::extension(), person.clone());
        faux.push(FauxResponse::tool_call(
            "c1",
            "todo",
            json!({"action": "add", "text": "buy milk"}),
        ));
        faux.push(FauxResponse::tool_call(
            "c2",
            "todo",
            json!({"action": "toggle", "id": 7}),
        ));
        faux.push(FauxResponse::text("ok"));
        session
            .prompt("remember milk")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert_eq!(
            results(&session),
            [
                ("todo".into(), false, "Added todo #1: buy milk".into()),
                ("todo".into(), false, "Todo #7 not found".into())
            ]
        );
        let file = session.session_file().unwrap();
        drop(session);

        // Reopened, the list is the one the last result left.
        let sm = SessionOptions::new().open(&file).unwrap();
        let session = session_with(sm, &dir, &faux, todo::extension(), person);
        faux.push(FauxResponse::tool_call(
            "c3",
            "todo",
            json!({"action": "toggle", "id": 1}),
        ));
        faux.push(FauxResponse::tool_call(
            "c4",
            "todo",
            json!({"action": "list"}),
        ));
        faux.push(FauxResponse::text("ok"));
        session
            .prompt("done with milk")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        let r = results(&session);
        assert_eq!(r[2].2, "Todo #1 completed");
        assert_eq!(r[3].2, "[x] #1: buy milk");
        let last = session.messages().into_iter().rev().find_map(|m| match m {
            AgentMessage::ToolResult(r) => r.details.clone(),
            _ => None,
        });
        assert_eq!(
            last,
            Some(
                json!({"action": "list", "todos": [{"id": 1, "text": "buy milk",
                "done": true}], "nextId": 2})
            )
        );
        drop(session);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn todo_follows_the_branch_when_the_session_moves_in_its_tree() {
        let fx = fixture("todo-tree", todo::extension(), &[]);
        let add = |id: &str, text: &str| {
            FauxResponse::tool_call(id, "todo", json!({"action": "add", "text": text}))
        };
        fx.faux.push(add("c1", "first"));
        fx.faux.push(FauxResponse::text("ok"));
        fx.session
            .prompt("one")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        let after_first = fx
            .session
            .with_session_manager(|sm| sm.leaf_id().map(str::to_owned))
            .unwrap();
        fx.faux.push(add("c2", "second"));
        fx.faux.push(FauxResponse::text("ok"));
        fx.session
            .prompt("two")
            .await
            .unwrap()
            .into_result()
            .unwrap();

        // Back to the end of the first run: the list is the one that branch left.
        fx.session
            .navigate_tree(&after_first, NavigateOptions::new())
            .await
            .unwrap();
        fx.faux.push(FauxResponse::tool_call(
            "c3",
            "todo",
            json!({"action": "list"}),
        ));
        fx.faux.push(FauxResponse::text("ok"));
        fx.session
            .prompt("list")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert_eq!(
            results(&fx.session).last().map(|r| r.2.clone()).as_deref(),
            Some("[ ] #1: first")
        );
    }

    #[tokio::test]
    async fn todos_needs_a_ui() {
        let dir = scratch("todos");
        let faux = FauxProvider::new();
        let f = faux.clone();
        let session = AgentSession::builder(SessionManager::in_memory(dir.to_string_lossy()))
            .default_model(faux.model())
            .stream_fn(move |m, c, o| f.stream(m, c, o))
            .extension(todo::extension())
            .build()
            .unwrap();
        assert!(session.prompt("/todos").await.unwrap().is_handled());
        assert!(faux.requests().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Waits (up to 5 s) until `done` holds: for what handlers do on tasks of their own.
    async fn eventually(what: &str, done: impl Fn() -> bool) {
        for _ in 0..500 {
            if done() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("{what} did not happen");
    }

    /// Makes `dir` a git repository without commits (git itself reads it: `git status` lists
    /// every file as untracked).
    fn git_repo(dir: &Path) {
        for (path, text) in [
            (".git/HEAD", "ref: refs/heads/main\n"),
            (
                ".git/config",
                "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
            ),
            (".git/objects/info/.keep", ""),
            (".git/refs/heads/.keep", ""),
        ] {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    #[test]
    fn dirty_repo_guard_counts_porcelain_lines() {
        use dirty_repo_guard::changed_files;
        assert_eq!(changed_files("?? a\n M b\n", 0), Some(2));
        assert_eq!(changed_files("\n", 0), Some(0));
        assert_eq!(changed_files("", 128), None, "not a repository");
    }

    #[tokio::test]
    async fn dirty_repo_guard_cancels_a_new_session_until_told_to_proceed() {
        let fx = fixture(
            "dirty",
            dirty_repo_guard::extension(),
            &[
                Some("No, let me commit first"),
                None,
                Some("Yes, proceed anyway"),
            ],
        );
        git_repo(&fx.dir);
        fx.faux.push(FauxResponse::text("hi"));
        fx.session
            .prompt("hello")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert!(fx.session.new_session().await.unwrap().cancelled());
        assert!(
            fx.session.new_session().await.unwrap().cancelled(),
            "a cancelled dialog"
        );
        assert_eq!(fx.session.messages().len(), 2, "nothing was cleared");
        assert!(!fx.session.new_session().await.unwrap().cancelled());
        assert!(fx.session.messages().is_empty());
        // `build/` and `keep.txt` are untracked.
        let title = "You have 2 uncommitted file(s). new session anyway?";
        assert_eq!(*lock(&fx.person.asked), [title, title, title]);
        let warning = ("Commit your changes first".to_owned(), NotifyKind::Warning);
        assert_eq!(fx.person.notes(), [warning.clone(), warning]);
    }

    #[tokio::test]
    async fn dirty_repo_guard_asks_before_a_fork_and_lets_a_clean_repo_be() {
        let fx = fixture(
            "dirty-fork",
            dirty_repo_guard::extension(),
            &[Some("No, let me commit first")],
        );
        git_repo(&fx.dir);
        fx.faux.push(FauxResponse::text("hi"));
        fx.session
            .prompt("hello")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        let question = fx.session.with_session_manager(|sm| {
            let entries = sm.entries().unwrap();
            let user = entries
                .iter()
                .find(|e| matches!(e.as_message(), Some(AgentMessage::User(_))))
                .unwrap();
            user.id().to_owned()
        });
        let fork = fx.session.fork(&question, ForkPosition::Before).await;
        assert!(fork.unwrap().cancelled());
        assert_eq!(
            *lock(&fx.person.asked),
            ["You have 2 uncommitted file(s). fork anyway?"]
        );

        // Nothing uncommitted (every file ignored): nothing is asked.
        std::fs::create_dir_all(fx.dir.join(".git/info")).unwrap();
        std::fs::write(fx.dir.join(".git/info/exclude"), "*\n").unwrap();
        assert!(!fx.session.new_session().await.unwrap().cancelled());
        assert_eq!(lock(&fx.person.asked).len(), 1);
    }

    #[tokio::test]
    async fn dirty_repo_guard_cancels_without_a_ui_and_ignores_a_non_repo() {
        let dir = scratch("dirty-no-ui");
        let faux = FauxProvider::new();
        let f = faux.clone();
        let session = AgentSession::builder(SessionManager::in_memory(dir.to_string_lossy()))
            .default_model(faux.model())
            .stream_fn(move |m, c, o| f.stream(m, c, o))
            .extension(dirty_repo_guard::extension())
            .build()
            .unwrap();
        // Not a repository (unless the temporary folder is inside one): allowed.
        let outside_a_repo = !std::process::Command::new("git")
            .args(["rev-parse", "--git-dir"])
            .current_dir(&dir)
            .stderr(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if outside_a_repo {
            assert!(!session.new_session().await.unwrap().cancelled());
        }
        git_repo(&dir);
        assert!(session.new_session().await.unwrap().cancelled());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn event_bus_shows_what_is_sent_on_the_bus() {
        let fx = fixture("bus", event_bus::extension(), &[]);
        fx.faux.push(FauxResponse::text("hi"));
        fx.session
            .prompt("hello")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        command(&fx.session, "/emit deploy finished").await;
        command(&fx.session, "/emit").await;
        let want = [
            info("Event from event-bus-example: Session started"),
            info("Event from /emit command: deploy finished"),
            info("Event from /emit command: hello"),
        ];
        eventually("three notifications", || fx.person.notes().len() == 3).await;
        assert_eq!(fx.person.notes(), want);
        assert_eq!(fx.faux.requests().len(), 1, "/emit never reaches the model");
    }

    #[test]
    fn event_bus_prints_fields_as_javascript_does() {
        use event_bus::describe;
        assert_eq!(
            describe(&json!({"from": "x", "message": 3})),
            "Event from x: 3"
        );
        assert_eq!(
            describe(&json!({"message": {"a": 1}})),
            "Event from undefined: [object Object]"
        );
    }

    #[test]
    fn trigger_compact_crosses_the_threshold_once() {
        use trigger_compact::crossed_threshold;
        assert!(crossed_threshold(Some(90_000), 100_001));
        assert!(crossed_threshold(Some(100_000), 150_000));
        assert!(!crossed_threshold(None, 150_000), "the first turn");
        assert!(!crossed_threshold(Some(100_001), 150_000), "already past");
        assert!(!crossed_threshold(Some(90_000), 100_000));
    }

    /// An answer of about 22 500 estimated tokens: more than a compaction keeps (20 000), so
    /// what comes before it is summarized.
    fn long_answer() -> String {
        "word ".repeat(18_000)
    }

    #[tokio::test]
    async fn trigger_compact_compacts_with_the_instructions() {
        let fx = fixture("compact", trigger_compact::extension(), &[]);
        for (prompt, answer) in [("one", "first".to_owned()), ("two", long_answer())] {
            fx.faux.push(FauxResponse::text(answer));
            fx.session
                .prompt(prompt)
                .await
                .unwrap()
                .into_result()
                .unwrap();
        }
        // The summaries (of the history and of the split turn's start).
        fx.faux.push(FauxResponse::text("The summary."));
        fx.faux.push(FauxResponse::text("The turn's start."));
        command(&fx.session, "/trigger-compact keep it short").await;
        eventually("the compaction", || fx.person.notes().len() == 2).await;
        assert_eq!(
            fx.person.notes(),
            [info("Compaction started"), info("Compaction completed")]
        );
        let summary_requests = &fx.faux.requests()[2..];
        assert!(
            summary_requests
                .iter()
                .any(|r| format!("{:?}", r.context.messages).contains("keep it short")),
            "the instructions reach the summary"
        );
        assert_eq!(
            fx.session.messages().first().map(AgentMessage::role),
            Some("compactionSummary")
        );
    }

    #[tokio::test]
    async fn trigger_compact_compacts_when_a_turn_crosses_100k_tokens() {
        let fx = fixture("compact-auto", trigger_compact::extension(), &[]);
        // Under the session's own threshold (the faux window of 128k less 16k in reserve).
        let answers = [
            ("one", 90_000, "first".to_owned()),
            ("two", 105_000, long_answer()),
        ];
        for (prompt, tokens, answer) in answers {
            let usage = pi_engine::Usage::new(tokens, 10, 0, 0);
            fx.faux.push(FauxResponse::text(answer).with_usage(usage));
            if tokens == 105_000 {
                fx.faux.push(FauxResponse::text("The summary."));
                fx.faux.push(FauxResponse::text("The turn's start."));
            }
            fx.session
                .prompt(prompt)
                .await
                .unwrap()
                .into_result()
                .unwrap();
            if tokens == 90_000 {
                // The observer of the first turn has seen it before the second starts.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                assert!(fx.person.notes().is_empty(), "under the threshold");
            }
        }
        eventually("the compaction", || fx.person.notes().len() == 2).await;
        assert_eq!(
            fx.person.notes(),
            [info("Compaction started"), info("Compaction completed")]
        );
        assert_eq!(
            fx.session.messages().first().map(AgentMessage::role),
            Some("compactionSummary")
        );
    }

    #[test]
    fn tool_override_blocks_pis_sensitive_paths() {
        use tool_override::is_blocked_path;
        for yes in [
            "/p/.env",
            "/p/.env.local",
            "/p/config/Secrets.YAML",
            "/p/credential.json",
            "/home/u/.ssh/id_rsa",
            "/home/u/.aws/config",
            "/home/u/.gnupg/x",
        ] {
            assert!(is_blocked_path(yes), "{yes}");
        }
        for no in [
            "/p/env",
            "/p/.envrc",
            "/p/secrets.txt",
            "/p/notes.txt",
            "/p/ssh/x",
        ] {
            assert!(!is_blocked_path(no), "{no}");
        }
        assert_eq!(
            tool_override::resolve(Path::new("/p/q"), "../r/./s.txt"),
            PathBuf::from("/p/r/s.txt")
        );
    }

    #[test]
    fn tool_override_reads_lines_as_pi_does() {
        use tool_override::select_lines;
        let text = "one\ntwo\nthree\n";
        assert_eq!(select_lines(text, None, None), (text.to_owned(), 4));
        assert_eq!(select_lines(text, Some(2.0), None).0, "two\nthree\n");
        assert_eq!(select_lines(text, Some(2.0), Some(1.0)).0, "two");
        assert_eq!(select_lines(text, Some(0.0), Some(1.0)).0, "one");
        assert_eq!(select_lines(text, Some(9.0), None).0, "");
        // A negative limit counts from the end, as JavaScript's `slice`.
        assert_eq!(select_lines(text, None, Some(-1.0)).0, "one\ntwo\nthree");
        let big = "x".repeat(60 * 1024);
        let (cut, _) = select_lines(&big, None, None);
        assert_eq!(
            cut.len(),
            50 * 1024 + "\n\n[Output truncated at 50KB]".len()
        );
    }

    #[tokio::test]
    async fn tool_override_blocks_env_reads_and_logs_every_read() {
        let logs = scratch("read-log");
        let log = logs.join("read-access.log");
        let fx = fixture(
            "override",
            tool_override::extension_logging_to(log.clone()),
            &[],
        );
        std::fs::write(fx.dir.join(".env"), "SECRET=1\n").unwrap();
        std::fs::write(fx.dir.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
        command(&fx.session, "/read-log").await;
        for (id, args) in [
            ("c1", json!({"path": ".env"})),
            ("c2", json!({"path": "notes.txt", "offset": 2})),
            ("c3", json!({"path": "missing.txt"})),
        ] {
            fx.faux.push(FauxResponse::tool_call(id, "read", args));
        }
        fx.faux.push(FauxResponse::text("ok"));
        fx.session
            .prompt("read")
            .await
            .unwrap()
            .into_result()
            .unwrap();
        let r = results(&fx.session);
        assert_eq!(
            r[0],
            (
                "read".into(),
                false,
                "Access denied: \".env\" matches a blocked pattern (sensitive file). This tool \
                 blocks access to .env files, secrets, credentials, and SSH/AWS/GPG directories."
                    .into()
            )
        );
        assert_eq!(r[1], ("read".into(), false, "two\nthree\n".into()));
        let missing = fx.dir.join("missing.txt");
        assert_eq!(
            r[2].2,
            format!(
                "Error reading file: ENOENT: no such file or directory, access '{}'",
                missing.display()
            )
        );
        let tools = fx.faux.requests()[0]
            .context
            .tools
            .clone()
            .unwrap_or_default();
        let reads: Vec<_> = tools.iter().filter(|t| t.name == "read").collect();
        assert_eq!(reads.len(), 1);
        assert!(reads[0].description.contains("access logging"));

        let logged = std::fs::read_to_string(&log).unwrap();
        let statuses: Vec<&str> = logged
            .lines()
            .map(|l| l.split_once("] ").unwrap().1)
            .collect();
        let env = fx.dir.join(".env");
        let notes = fx.dir.join("notes.txt");
        assert_eq!(
            statuses,
            [
                format!("BLOCKED: {} (matches blocked pattern)", env.display()),
                format!("ALLOWED: {}", notes.display()),
                format!("ALLOWED: {}", missing.display()),
            ]
        );
        command(&fx.session, "/read-log").await;
        let notes_shown = fx.person.notes();
        assert_eq!(notes_shown[0], info("No access log found"));
        assert_eq!(
            notes_shown[1],
            info(&format!("Recent file access:\n{}", logged.trim()))
        );
        std::fs::remove_dir_all(&logs).unwrap();
    }

    #[test]
    fn tool_names_are_normalized_as_pi_does() {
        use dynamic_tools::normalize_tool_name;
        assert_eq!(
            normalize_tool_name("  Shout_2 ").as_deref(),
            Some("shout_2")
        );
        assert_eq!(normalize_tool_name(""), None);
        assert_eq!(normalize_tool_name("a-b"), None);
    }
}
