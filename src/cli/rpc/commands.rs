//! pi's RPC commands on an [`AgentSession`]: one future per command line, which writes the
//! command's response (pi's `handleCommand`).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::response::{Response, js_display};
use super::slash::{CommandSource, SlashCommand, SourceInfo};
use crate::agent::{AgentError, PromptInput, QueueMode, RunOutcome};
use crate::agent_session::{
    AgentSession, AgentSessionError, BashRun, CycleDirection, ForkPosition, JsonLinesWriter,
};
use crate::extensions::InputSource;
use crate::llm::message::{Content, ImageContent};
use crate::llm::model::Model;
use crate::llm::thinking::ThinkingLevel;
use crate::session::{NewSession, SessionOptions};

/// pi's answer to a prompt while the agent runs, without `streamingBehavior`.
const STREAMING_WITHOUT_BEHAVIOR: &str = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.";

/// The commands of pi 0.73.1's `RpcCommand` (`prompt` aside).
const COMMANDS: [&str; 28] = [
    "steer",
    "follow_up",
    "abort",
    "new_session",
    "get_state",
    "set_model",
    "cycle_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "bash",
    "abort_bash",
    "get_session_stats",
    "export_html",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "get_last_assistant_text",
    "set_session_name",
    "get_messages",
    "get_commands",
];

/// What the mode's settings give the commands.
pub(crate) struct Config {
    pub(crate) commands: Vec<SlashCommand>,
    pub(crate) extension_sources: HashMap<String, SourceInfo>,
    pub(crate) session_options: SessionOptions,
}

/// What every command works with.
pub(crate) struct Ctx {
    pub(crate) session: AgentSession,
    pub(crate) out: Arc<JsonLinesWriter>,
    pub(crate) prompts: Arc<Prompts>,
    pub(crate) config: Config,
}

impl fmt::Debug for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx").finish_non_exhaustive()
    }
}

impl Ctx {
    pub(crate) fn write(&self, response: &Response) {
        // A failed write is kept by the writer and reported when the mode ends.
        let _ = self.out.write_value(response);
    }

    fn reply(&self, req: &Request, result: Result<Option<Value>, String>) {
        let response = match result {
            Ok(data) => Response::success(req.id.clone(), req.kind.clone(), data),
            Err(message) => Response::error(req.id.clone(), req.kind.clone(), message),
        };
        self.write(&response);
    }
}

/// A command line: its `id` and `type` as given (echoed back), and its other fields.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) id: Option<Value>,
    pub(crate) kind: Option<Value>,
    fields: Map<String, Value>,
}

impl Request {
    /// A parsed line that is not an `extension_ui_response`. Anything but an object has
    /// neither id nor type (pi reads them as `undefined`).
    pub(crate) fn new(line: Value) -> Self {
        match line {
            Value::Object(mut fields) => Request {
                id: fields.shift_remove("id"),
                kind: fields.get("type").cloned(),
                fields,
            },
            _ => Request {
                id: None,
                kind: None,
                fields: Map::new(),
            },
        }
    }

    fn kind_str(&self) -> &str {
        self.kind.as_ref().and_then(Value::as_str).unwrap_or("")
    }

    fn string(&self, name: &str) -> Result<String, String> {
        match self.fields.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(format!("Invalid command: \"{name}\" must be a string")),
        }
    }

    fn optional_string(&self, name: &str) -> Result<Option<String>, String> {
        match self.fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("Invalid command: \"{name}\" must be a string")),
        }
    }

    fn boolean(&self, name: &str) -> Result<bool, String> {
        match self.fields.get(name) {
            Some(Value::Bool(b)) => Ok(*b),
            _ => Err(format!("Invalid command: \"{name}\" must be a boolean")),
        }
    }

    /// `images`: pi's `ImageContent[]` (`{"type":"image","data","mimeType"}`).
    fn images(&self) -> Result<Vec<ImageContent>, String> {
        let invalid = || {
            "Invalid command: \"images\" must be an array of {\"type\":\"image\",\"data\",\"mimeType\"}"
                .to_owned()
        };
        match self.fields.get("images") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(v @ Value::Array(_)) => {
                let blocks: Vec<Content> =
                    serde_json::from_value(v.clone()).map_err(|_| invalid())?;
                blocks
                    .into_iter()
                    .map(|b| match b {
                        Content::Image(image) => Ok(image),
                        _ => Err(invalid()),
                    })
                    .collect()
            }
            Some(_) => Err(invalid()),
        }
    }

    /// `{"message", "images"?}` as the input of a prompt.
    fn text_and_images(&self) -> Result<(String, Vec<ImageContent>), String> {
        Ok((self.string("message")?, self.images()?))
    }
}

/// The future of a command line, or `None` when it was answered at once (an unknown
/// command).
pub(crate) fn start(ctx: &Arc<Ctx>, req: Request) -> Option<BoxFuture<'static, ()>> {
    let ctx = ctx.clone();
    match req.kind_str() {
        "prompt" => Some(Box::pin(prompt(ctx, req))),
        kind if COMMANDS.contains(&kind) => Some(Box::pin(answer(ctx, req))),
        _ => {
            // pi answers without the id.
            let message = format!("Unknown command: {}", js_display(req.kind.as_ref()));
            ctx.write(&Response::error(None, req.kind.clone(), message));
            None
        }
    }
}

/// Runs a command other than `prompt` and writes its response.
async fn answer(ctx: Arc<Ctx>, req: Request) {
    let result = match AssertUnwindSafe(handle(&ctx, &req)).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => Err(format!("Internal error: {}", panic_text(&panic))),
    };
    ctx.reply(&req, result);
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a command panicked".to_owned())
}

/// pi's text of a session error.
fn session_error(e: AgentSessionError) -> String {
    match e {
        AgentSessionError::InvalidEntry { reason, .. } => reason.to_owned(),
        e => e.to_string(),
    }
}

fn data(v: impl Serialize) -> Result<Option<Value>, String> {
    serde_json::to_value(v).map(Some).map_err(|e| e.to_string())
}

/// The name of the extension command `text` invokes, if it does (`/name args`).
fn extension_command(session: &AgentSession, text: &str) -> Option<String> {
    let rest = text.strip_prefix('/')?;
    let name = rest.split_once(' ').map_or(rest, |(name, _)| name);
    session
        .commands()
        .iter()
        .any(|c| c.name == name)
        .then(|| name.to_owned())
}

/// `steer` and `follow_up` refuse extension commands (pi's `_throwIfExtensionCommand`).
fn queueable(session: &AgentSession, text: &str) -> Result<(), String> {
    match extension_command(session, text) {
        Some(name) => Err(format!(
            "Extension command \"/{name}\" cannot be queued. Use prompt() or execute the command when not streaming."
        )),
        None => Ok(()),
    }
}

/// pi's `RpcSessionState`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct State {
    model: Model,
    thinking_level: ThinkingLevel,
    is_streaming: bool,
    is_compacting: bool,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_file: Option<String>,
    session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_name: Option<String>,
    auto_compaction_enabled: bool,
    message_count: usize,
    pending_message_count: usize,
}

fn state(s: &AgentSession) -> State {
    let settings = s.settings();
    State {
        model: s.model(),
        thinking_level: s.thinking_level(),
        is_streaming: s.is_streaming(),
        is_compacting: s.is_compacting(),
        steering_mode: settings.steering_mode,
        follow_up_mode: settings.follow_up_mode,
        session_file: s.session_file().map(|p| p.to_string_lossy().into_owned()),
        session_id: s.session_id(),
        session_name: s.session_name(),
        auto_compaction_enabled: settings.compaction.enabled,
        message_count: s.messages().len(),
        pending_message_count: s.pending_message_count(),
    }
}

/// pi's `BashResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BashResult {
    output: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i64>,
    cancelled: bool,
    truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    full_output_path: Option<String>,
}

fn models_available(s: &AgentSession) -> Vec<Model> {
    s.available_models()
}

/// The commands `get_commands` lists: the extensions', then prompt templates, then skills.
fn slash_commands(ctx: &Ctx) -> Vec<SlashCommand> {
    let mut list: Vec<SlashCommand> = ctx
        .session
        .commands()
        .into_iter()
        .map(|c| {
            let info = ctx
                .config
                .extension_sources
                .get(&c.extension)
                .cloned()
                .unwrap_or_else(|| SourceInfo::new(c.extension.clone(), "local"));
            SlashCommand::extension(c.name, c.description, info)
        })
        .collect();
    for source in [CommandSource::Prompt, CommandSource::Skill] {
        list.extend(
            ctx.config
                .commands
                .iter()
                .filter(|c| c.source == source)
                .cloned(),
        );
    }
    list
}

async fn handle(ctx: &Ctx, req: &Request) -> Result<Option<Value>, String> {
    let s = &ctx.session;
    match req.kind_str() {
        "steer" | "follow_up" => {
            let (text, images) = req.text_and_images()?;
            queueable(s, &text)?;
            // Templates and skills are expanded before queueing, as pi does.
            let input = PromptInput::with_images(s.expand_input(text).await, images);
            if req.kind_str() == "steer" {
                s.steer(input);
            } else {
                s.follow_up(input);
            }
            Ok(None)
        }
        "abort" => {
            s.abort();
            s.wait_for_idle().await;
            Ok(None)
        }
        "new_session" => {
            let mut options = NewSession::new();
            if let Some(parent) = req.optional_string("parentSession")? {
                options = options.with_parent_session(parent);
            }
            let result = s.new_session_with(options).await.map_err(session_error)?;
            Ok(Some(json!({"cancelled": result.cancelled()})))
        }
        "get_state" => data(state(s)),
        "set_model" => {
            let provider = req.string("provider")?;
            let id = req.string("modelId")?;
            let model = models_available(s)
                .into_iter()
                .find(|m| m.provider == provider && m.id == id)
                .ok_or_else(|| format!("Model not found: {provider}/{id}"))?;
            s.set_model(model.clone()).await.map_err(session_error)?;
            data(model)
        }
        "cycle_model" => match s
            .cycle_model(CycleDirection::Forward)
            .await
            .map_err(session_error)?
        {
            None => Ok(Some(Value::Null)),
            Some(c) => data(json!({
                "model": c.model, "thinkingLevel": c.thinking_level, "isScoped": c.is_scoped
            })),
        },
        "get_available_models" => Ok(Some(json!({"models": models_available(s)}))),
        "set_thinking_level" => {
            let raw = req.fields.get("level").cloned().unwrap_or(Value::Null);
            let level: ThinkingLevel = serde_json::from_value(raw.clone())
                .map_err(|_| format!("Invalid thinking level: {}", js_display(Some(&raw))))?;
            s.set_thinking_level(level).await.map_err(session_error)?;
            Ok(None)
        }
        "cycle_thinking_level" => match s.cycle_thinking_level().await.map_err(session_error)? {
            None => Ok(Some(Value::Null)),
            Some(level) => Ok(Some(json!({"level": level}))),
        },
        "set_steering_mode" | "set_follow_up_mode" => {
            let raw = req.fields.get("mode").cloned().unwrap_or(Value::Null);
            let mode: QueueMode = serde_json::from_value(raw.clone())
                .map_err(|_| format!("Invalid mode: {}", js_display(Some(&raw))))?;
            if req.kind_str() == "set_steering_mode" {
                s.set_steering_mode(mode);
            } else {
                s.set_follow_up_mode(mode);
            }
            Ok(None)
        }
        "compact" => {
            let instructions = req.optional_string("customInstructions")?;
            let result = s
                .compact(instructions.as_deref())
                .await
                .map_err(session_error)?;
            data(result)
        }
        "set_auto_compaction" => {
            s.set_auto_compaction_enabled(req.boolean("enabled")?);
            Ok(None)
        }
        "set_auto_retry" => {
            s.set_auto_retry_enabled(req.boolean("enabled")?);
            Ok(None)
        }
        "abort_retry" => {
            s.abort_retry();
            Ok(None)
        }
        "bash" => {
            let command = req.string("command")?;
            let m = s
                // pi's RPC `bash` does not ask the extensions (its interactive `!cmd` does).
                .execute_bash(&command, BashRun::new().without_extensions())
                .await
                .map_err(session_error)?;
            data(BashResult {
                output: m.output,
                exit_code: if m.cancelled { None } else { m.exit_code },
                cancelled: m.cancelled,
                truncated: m.truncated,
                full_output_path: m.full_output_path,
            })
        }
        "abort_bash" => {
            s.abort_bash();
            Ok(None)
        }
        "get_session_stats" => data(s.session_stats()),
        "export_html" => {
            let output = req.optional_string("outputPath")?;
            let path = s
                .export_html(output.as_deref().map(std::path::Path::new))
                .await
                .map_err(|e| e.to_string())?;
            Ok(Some(json!({"path": path.to_string_lossy()})))
        }
        "switch_session" => {
            let path = req.string("sessionPath")?;
            let options = ctx.config.session_options.clone();
            // Opening indexes the file: not on an async worker thread.
            let manager = tokio::task::spawn_blocking(move || options.open(&path))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            let result = s.switch_session(manager).await.map_err(session_error)?;
            Ok(Some(json!({"cancelled": result.cancelled()})))
        }
        "fork" => {
            let entry = req.string("entryId")?;
            let result = s
                .fork(&entry, ForkPosition::Before)
                .await
                .map_err(session_error)?;
            let mut out = Map::new();
            if let Some(text) = &result.selected_text {
                out.insert("text".into(), text.clone().into());
            }
            out.insert("cancelled".into(), result.cancelled().into());
            Ok(Some(Value::Object(out)))
        }
        "clone" => {
            let leaf = s
                .with_session_manager(|sm| sm.leaf_id().map(str::to_owned))
                .ok_or("Cannot clone session: no current entry selected")?;
            let result = s
                .fork(&leaf, ForkPosition::At)
                .await
                .map_err(session_error)?;
            Ok(Some(json!({"cancelled": result.cancelled()})))
        }
        "get_fork_messages" => {
            let session = s.clone();
            // The entries' bodies may be read from the file.
            let messages = tokio::task::spawn_blocking(move || session.user_messages_for_forking())
                .await
                .map_err(|e| e.to_string())?
                .map_err(session_error)?;
            let messages: Vec<Value> = messages
                .into_iter()
                .map(|(entry_id, text)| json!({"entryId": entry_id, "text": text}))
                .collect();
            Ok(Some(json!({"messages": messages})))
        }
        "get_last_assistant_text" => {
            // pi's `{ text: undefined }` is `{}` on the wire.
            let mut out = Map::new();
            if let Some(text) = s.last_assistant_text() {
                out.insert("text".into(), text.into());
            }
            Ok(Some(Value::Object(out)))
        }
        "set_session_name" => {
            let name = req.string("name")?;
            let name = name.trim();
            if name.is_empty() {
                return Err("Session name cannot be empty".to_owned());
            }
            s.set_session_name(name).await.map_err(session_error)?;
            Ok(None)
        }
        "get_messages" => data(json!({"messages": s.messages()})),
        "get_commands" => data(json!({"commands": slash_commands(ctx)})),
        _ => Err(format!(
            "Unknown command: {}",
            js_display(req.kind.as_ref())
        )),
    }
}

// ----- prompt ------------------------------------------------------------------------------

tokio::task_local! {
    /// The prompt whose `AgentSession::prompt` is being polled: a run's `agent_start` is
    /// emitted inside it (listeners run where the event is produced), so it answers that
    /// prompt and no other — not one an extension's run started elsewhere.
    static PROMPT: u64;
}

/// The prompts whose run has not started yet, waiting to be answered (pi answers a prompt
/// when it is accepted, before its run's first event).
#[derive(Debug, Default)]
pub(crate) struct Prompts {
    state: Mutex<PromptState>,
}

#[derive(Debug, Default)]
struct PromptState {
    waiting: VecDeque<(u64, Option<Value>)>,
    next: u64,
    /// Prompts of the mode (not extension commands) from their start to their run's end:
    /// while one is in its preflight the agent is not streaming yet, but a prompt with
    /// `streamingBehavior` is queued all the same.
    running: usize,
}

impl Prompts {
    fn state(&self) -> MutexGuard<'_, PromptState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait(&self, id: Option<Value>) -> u64 {
        let mut st = self.state();
        st.next += 1;
        let token = st.next;
        st.waiting.push_back((token, id));
        token
    }

    /// A run started: the id of the prompt it answers, if a prompt of the mode started it
    /// and was not answered yet (`Some(None)`: one without an id).
    pub(crate) fn accept_current(&self) -> Option<Option<Value>> {
        let token = PROMPT.try_with(|t| *t).ok()?;
        self.withdraw(token)
    }

    /// The prompt's id if it is still waiting (and no longer).
    fn withdraw(&self, token: u64) -> Option<Option<Value>> {
        let mut st = self.state();
        let i = st.waiting.iter().position(|(t, _)| *t == token)?;
        st.waiting.remove(i).map(|(_, id)| id)
    }

    fn busy(&self) -> bool {
        self.state().running > 0
    }

    fn start(self: &Arc<Self>) -> Running {
        self.state().running += 1;
        Running(self.clone())
    }
}

/// A prompt of the mode runs while it lives.
struct Running(Arc<Prompts>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.state().running -= 1;
    }
}

/// What `streamingBehavior` asks for (pi: `"followUp"`, else any truthy value steers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behavior {
    Steer,
    FollowUp,
}

fn behavior(req: &Request) -> Option<Behavior> {
    match req.fields.get("streamingBehavior") {
        Some(Value::String(s)) if s == "followUp" => Some(Behavior::FollowUp),
        Some(v) if super::response::truthy(v) => Some(Behavior::Steer),
        _ => None,
    }
}

/// pi's `prompt`: answered when it is accepted — its run starts, it is queued, or an
/// extension handled it — or refused; a run's later failure is in its events, not in a
/// second response.
async fn prompt(ctx: Arc<Ctx>, req: Request) {
    let (text, images) = match req.text_and_images() {
        Ok(input) => input,
        Err(e) => return ctx.reply(&req, Err(e)),
    };
    let s = &ctx.session;
    let command = extension_command(s, &text).is_some();
    let busy = s.is_streaming() || ctx.prompts.busy();
    if busy && !command {
        let result = match behavior(&req) {
            Some(behavior) => {
                let input = PromptInput::with_images(s.expand_input(text).await, images);
                if behavior == Behavior::FollowUp {
                    s.follow_up(input);
                } else {
                    s.steer(input);
                }
                Ok(None)
            }
            // The input handlers are asked (one may handle it), then the prompt is refused.
            None => {
                let input = PromptInput::with_images(text, images);
                prompt_result(
                    AssertUnwindSafe(s.prompt_from(input, InputSource::Rpc))
                        .catch_unwind()
                        .await,
                )
            }
        };
        return ctx.reply(&req, result);
    }
    // The session runs an extension command (even while the agent runs), the `input`
    // handlers, and expands templates and skills.
    // Answered by the `agent_start` of its run, unless it ends before one (an extension
    // handled it, it was refused).
    let token = ctx.prompts.wait(req.id.clone());
    // A command is no run: prompts after it are not queued behind it.
    let running = (!command).then(|| ctx.prompts.start());
    let prompting = PROMPT.scope(
        token,
        s.prompt_from(PromptInput::with_images(text, images), InputSource::Rpc),
    );
    let outcome = AssertUnwindSafe(prompting).catch_unwind().await;
    drop(running);
    if ctx.prompts.withdraw(token).is_some() {
        ctx.reply(&req, prompt_result(outcome));
    }
}

/// The response to a prompt that ended before its run started (or was refused).
fn prompt_result(
    outcome: std::thread::Result<Result<RunOutcome, AgentSessionError>>,
) -> Result<Option<Value>, String> {
    match outcome {
        Ok(Ok(_)) => Ok(None),
        Ok(Err(AgentSessionError::Agent(AgentError::AlreadyProcessing))) => {
            Err(STREAMING_WITHOUT_BEHAVIOR.to_owned())
        }
        Ok(Err(e)) => Err(session_error(e)),
        Err(panic) => Err(format!("Internal error: {}", panic_text(&panic))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_keep_id_and_type_as_given() {
        let r = Request::new(json!({"id": 7, "type": "get_state", "x": 1}));
        assert_eq!(r.id, Some(json!(7)));
        assert_eq!(r.kind, Some(json!("get_state")));
        assert_eq!(r.kind_str(), "get_state");
        let r = Request::new(json!([1, 2]));
        assert_eq!((r.id, r.kind), (None, None));
        let r = Request::new(json!({"type": 5}));
        assert_eq!(r.kind_str(), "");
    }

    #[test]
    fn fields() {
        let r = Request::new(json!({"type": "prompt", "message": "hi", "images": [
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}));
        let (text, images) = r.text_and_images().unwrap();
        assert_eq!(text, "hi");
        assert_eq!(images[0].mime_type, "image/png");
        let r = Request::new(json!({"type": "prompt", "message": "hi", "images": [
            {"type": "text", "text": "no"}]}));
        assert!(r.images().is_err());
        let r = Request::new(json!({"type": "prompt", "message": 3}));
        assert_eq!(
            r.text_and_images().unwrap_err(),
            "Invalid command: \"message\" must be a string"
        );
        let r = Request::new(json!({"type": "prompt", "streamingBehavior": "followUp"}));
        assert_eq!(behavior(&r), Some(Behavior::FollowUp));
        let r = Request::new(json!({"type": "prompt", "streamingBehavior": "later"}));
        assert_eq!(behavior(&r), Some(Behavior::Steer));
        let r = Request::new(json!({"type": "prompt", "streamingBehavior": ""}));
        assert_eq!(behavior(&r), None);
    }

    #[tokio::test]
    async fn a_prompt_is_answered_once_by_its_own_run() {
        let prompts = Arc::new(Prompts::default());
        let a = prompts.wait(Some(json!("a")));
        let b = prompts.wait(None);
        // Outside a prompt (a run an extension started on a task of its own): no one.
        assert_eq!(prompts.accept_current(), None);
        let accepted = PROMPT.scope(b, async { prompts.accept_current() }).await;
        assert_eq!(accepted, Some(None));
        assert_eq!(prompts.withdraw(b), None);
        assert_eq!(
            PROMPT.scope(b, async { prompts.accept_current() }).await,
            None
        );
        assert_eq!(prompts.withdraw(a), Some(Some(json!("a"))));
        let running = prompts.start();
        assert!(prompts.busy());
        drop(running);
        assert!(!prompts.busy());
    }

    #[test]
    fn the_command_list_is_pis() {
        assert_eq!(COMMANDS.len() + 1, 29);
        let mut sorted = COMMANDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), COMMANDS.len());
    }
}
