//! The events an extension handles, each with its payload and what a handler may return.
//! How several handlers' results combine is written on each result type (and in
//! `docs/extensions.md`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::agent::AgentMessage;
use crate::agent_session::ForkPosition;
use crate::llm::message::{Content, ImageContent};
use crate::llm::model::Model;
use crate::llm::thinking::ThinkingLevel;
use crate::session::compaction::{CompactionPreparation, CompactionResult};
use crate::session::{BranchSummaryEntry, CompactionEntry, ExtensionMessage, SessionEntry};

/// `tool_call`: the model asked for a tool, whose arguments passed validation; before it
/// runs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCallEvent {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The validated arguments.
    pub input: Map<String, Value>,
}

/// What a `tool_call` handler decides. Handlers run in registration order and the **first
/// block wins** (later handlers are not asked). A handler that fails, panics or passes its
/// deadline blocks the call too (fail closed, as pi), with the reason
/// `Extension failed, blocking execution: …`. Argument rewrites **chain**: the next handler
/// sees the arguments as the one before left them, and the tool runs with the last ones
/// (not validated again — pi's handlers that patch `event.input` in place).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ToolCallVerdict {
    /// Do not run the tool.
    pub block: bool,
    /// What the model is told (default: pi's `Tool execution was blocked`).
    pub reason: Option<String>,
    /// Run the tool with these arguments instead.
    pub input: Option<Map<String, Value>>,
}

impl ToolCallVerdict {
    /// Blocks the call; the model gets an error result with `reason`.
    pub fn block(reason: impl Into<String>) -> Self {
        ToolCallVerdict {
            block: true,
            reason: Some(reason.into()),
            input: None,
        }
    }

    /// Lets the call run with `input` as its arguments.
    ///
    /// ```
    /// use pi_engine::extensions::{Extension, ToolCallVerdict};
    ///
    /// // Every bash command runs with a timeout of at most 60 seconds.
    /// let cap = Extension::new("bash-timeout", |pi| {
    ///     pi.on_tool_call(|event, _ctx| async move {
    ///         if event.tool_name != "bash" {
    ///             return Ok(None);
    ///         }
    ///         let mut input = event.input;
    ///         let asked = input.get("timeout").and_then(|t| t.as_u64()).unwrap_or(u64::MAX);
    ///         input.insert("timeout".into(), asked.min(60).into());
    ///         Ok(Some(ToolCallVerdict::rewrite(input)))
    ///     });
    /// });
    /// # let _ = cap;
    /// ```
    pub fn rewrite(input: Map<String, Value>) -> Self {
        ToolCallVerdict {
            block: false,
            reason: None,
            input: Some(input),
        }
    }
}

/// `tool_result`: a tool ran (or failed); before its result is recorded. Not for a call that was
/// blocked or never started (as pi).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolResultEvent {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments it ran with.
    pub input: Map<String, Value>,
    /// What the model will see.
    pub content: Vec<Content>,
    /// The tool's details (`null` when it has none).
    pub details: Value,
    /// Whether the result is an error.
    pub is_error: bool,
}

/// Replacements of a tool result, field by field. **Chained**: each handler sees the result
/// as the handlers before it left it.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ToolResultPatch {
    /// Replaces the content.
    pub content: Option<Vec<Content>>,
    /// Replaces the details.
    pub details: Option<Value>,
    /// Replaces the error flag.
    pub is_error: Option<bool>,
}

impl ToolResultPatch {
    /// Replaces the content.
    #[must_use]
    pub fn with_content(mut self, content: Vec<Content>) -> Self {
        self.content = Some(content);
        self
    }
    /// Replaces the details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
    /// Replaces the error flag.
    #[must_use]
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = Some(is_error);
        self
    }
}

/// `context`: the messages about to be sent, before every model call (a copy: changing it
/// changes only this call). A handler returns the messages to send instead; **chained**.
///
/// The copy is shared by every handler of the call (an `Arc`, so a handler that only looks
/// costs nothing); one that changes them takes its own with
/// `Arc::unwrap_or_clone(event.messages)` or builds new ones from `event.messages.iter()`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ContextEvent {
    /// The messages, after the session's own context guard.
    pub messages: std::sync::Arc<Vec<AgentMessage>>,
}

/// Where a prompt came from (pi's `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum InputSource {
    /// Typed by a person in a front end ([`AgentSession::prompt`](crate::agent_session::AgentSession::prompt)).
    #[default]
    Interactive,
    /// From an RPC client.
    Rpc,
    /// Sent by an extension ([`ExtensionContext::send_user_message`](super::ExtensionContext::send_user_message)).
    Extension,
}

impl InputSource {
    /// pi's name of the source.
    pub fn as_str(self) -> &'static str {
        match self {
            InputSource::Interactive => "interactive",
            InputSource::Rpc => "rpc",
            InputSource::Extension => "extension",
        }
    }
}

/// `input`: a prompt arrived, before commands and templates are looked at.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InputEvent {
    /// The text.
    pub text: String,
    /// Its images.
    pub images: Vec<ImageContent>,
    /// Where it came from.
    pub source: InputSource,
}

/// What an `input` handler does with a prompt. Transforms **chain** (the next handler sees
/// the new text); `Handled` stops: no later handler runs and no model call is made.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum InputAction {
    /// Leave it as it is.
    #[default]
    Continue,
    /// Replace the text (and, when `Some`, the images).
    Transform {
        /// The new text.
        text: String,
        /// The new images.
        images: Option<Vec<ImageContent>>,
    },
    /// The extension answered it; nothing is sent.
    Handled,
}

impl InputAction {
    /// Replaces the text, keeping the images.
    pub fn transform(text: impl Into<String>) -> Self {
        InputAction::Transform {
            text: text.into(),
            images: None,
        }
    }
}

/// `before_agent_start`: a prompt is about to start a run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BeforeAgentStartEvent {
    /// The prompt's text.
    pub prompt: String,
    /// Its images.
    pub images: Vec<ImageContent>,
    /// The system prompt as the handlers before this one left it.
    pub system_prompt: String,
}

/// What a `before_agent_start` handler adds. Messages are **collected** from every handler
/// (in order, after the prompt); the system prompt is **chained** and applies to this run.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct BeforeAgentStart {
    /// A message to add to the context after the prompt (written as a `custom_message`).
    pub message: Option<ExtensionMessage>,
    /// The system prompt for this run.
    pub system_prompt: Option<String>,
}

impl BeforeAgentStart {
    /// Adds `message` after the prompt.
    #[must_use]
    pub fn with_message(mut self, message: ExtensionMessage) -> Self {
        self.message = Some(message);
        self
    }
    /// Sets the run's system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }
}

/// Why a session started (pi's `session_start.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionStartReason {
    /// The first use of a session handle.
    Startup,
    /// A new session replaced the old one.
    New,
    /// Another session was switched to.
    Resume,
    /// A fork of the old session replaced it.
    Fork,
}

impl SessionStartReason {
    /// pi's name of the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStartReason::Startup => "startup",
            SessionStartReason::New => "new",
            SessionStartReason::Resume => "resume",
            SessionStartReason::Fork => "fork",
        }
    }
}

/// `session_start`: the session is ready — before the first prompt or command of an
/// `AgentSession`, and after it moved to a new, another or a forked session
/// ([`new_session`](crate::agent_session::AgentSession::new_session),
/// [`switch_session`](crate::agent_session::AgentSession::switch_session),
/// [`fork`](crate::agent_session::AgentSession::fork)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionStartEvent {
    /// Why.
    pub reason: SessionStartReason,
    /// The file of the session this one replaced.
    pub previous_session_file: Option<PathBuf>,
}

/// Why the session is about to be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SwitchReason {
    /// A new, empty session.
    New,
    /// Another, existing session.
    Resume,
}

impl SwitchReason {
    /// pi's name of the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            SwitchReason::New => "new",
            SwitchReason::Resume => "resume",
        }
    }
}

/// `session_before_switch`: the session is about to be replaced.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionBeforeSwitchEvent {
    /// Why.
    pub reason: SwitchReason,
    /// The file of the session switched to (for [`SwitchReason::Resume`]).
    pub target_session_file: Option<PathBuf>,
}

/// A `session_before_switch` or `session_before_fork` handler's answer: the **first cancel
/// wins** and the operation is not done. A handler that fails does not cancel (its error is
/// reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Cancel {
    /// Do not go on.
    pub cancel: bool,
}

impl Cancel {
    /// Cancels the operation.
    pub fn now() -> Self {
        Cancel { cancel: true }
    }
}

/// `message_end`: a message (the user's, the model's, a tool result) is complete, before it
/// is recorded. A handler may return a replacement **with the same role** (one of another
/// role is refused and reported); replacements **chain**.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MessageEndEvent {
    /// The message as the handlers before this one left it.
    pub message: AgentMessage,
}

/// `before_provider_request`: the JSON body of a model call, just before it is sent. A
/// handler returns the body to send instead; **chained**.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProviderRequestEvent {
    /// The body as the handlers before this one left it.
    pub payload: Value,
}

/// `after_provider_response`: the provider answered a model call; its status and headers,
/// before the body is read. Observe only.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderResponseEvent {
    /// The HTTP status.
    pub status: u16,
    /// The headers, names in lower case.
    pub headers: BTreeMap<String, String>,
}

/// `session_before_fork`: [`fork`](crate::agent_session::AgentSession::fork) is about to
/// start a new session from an entry. A handler may cancel ([`Cancel`]; the first cancel
/// wins).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionBeforeForkEvent {
    /// The entry forked from.
    pub entry_id: String,
    /// Before the entry (a user message) or at it.
    pub position: ForkPosition,
}

/// `session_before_compact`: a compaction (manual or automatic) is about to summarize the
/// branch. A handler may cancel it, or provide the compaction itself
/// ([`CompactDecision`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionBeforeCompactEvent {
    /// What would be summarized and kept.
    pub preparation: CompactionPreparation,
    /// The entries of the current branch, root first.
    pub branch_entries: Vec<SessionEntry>,
    /// The extra instructions given to a manual compaction.
    pub custom_instructions: Option<String>,
}

/// A `session_before_compact` handler's answer. The **first** answer that cancels or brings
/// a compaction wins (later handlers are not asked); a handler that fails does neither.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct CompactDecision {
    /// Do not compact.
    pub cancel: bool,
    /// The compaction to record instead of summarizing with the model.
    pub compaction: Option<CompactionResult>,
}

impl CompactDecision {
    /// Cancels the compaction.
    pub fn cancel() -> Self {
        CompactDecision {
            cancel: true,
            compaction: None,
        }
    }

    /// Records `compaction` instead of asking the model for a summary.
    pub fn with_compaction(compaction: CompactionResult) -> Self {
        CompactDecision {
            cancel: false,
            compaction: Some(compaction),
        }
    }
}

/// `session_compact`: a compaction was recorded.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionCompactEvent {
    /// The entry written.
    pub compaction_entry: CompactionEntry,
    /// True when an extension provided it (`session_before_compact`).
    pub from_extension: bool,
}

/// What a move in the session tree would do (pi's `TreePreparation`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TreePreparation {
    /// The entry moved to.
    pub target_id: String,
    /// The leaf before the move.
    pub old_leaf_id: Option<String>,
    /// The deepest entry on both the old and the new path.
    pub common_ancestor_id: Option<String>,
    /// The entries of the branch being left (what a summary would cover).
    pub entries_to_summarize: Vec<SessionEntry>,
    /// Whether the caller asked for a branch summary.
    pub user_wants_summary: bool,
    /// The summary's extra instructions.
    pub custom_instructions: Option<String>,
    /// Whether those instructions replace pi's.
    pub replace_instructions: bool,
    /// The label asked for.
    pub label: Option<String>,
}

/// `session_before_tree`: [`navigate_tree`](crate::agent_session::AgentSession::navigate_tree)
/// is about to move. A handler may cancel, provide the branch summary, or change its
/// instructions and label ([`TreeDecision`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionBeforeTreeEvent {
    /// The move.
    pub preparation: TreePreparation,
}

/// A branch summary an extension provides.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BranchSummaryText {
    /// The summary.
    pub summary: String,
    /// Its details (pi's `{readFiles, modifiedFiles}` for its own summaries).
    pub details: Option<Value>,
}

impl BranchSummaryText {
    /// A summary without details.
    pub fn new(summary: impl Into<String>) -> Self {
        BranchSummaryText {
            summary: summary.into(),
            details: None,
        }
    }
}

/// A `session_before_tree` handler's answer. The first cancel wins; otherwise every
/// handler's answer applies in order (a later one's fields win).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct TreeDecision {
    /// Do not move.
    pub cancel: bool,
    /// The summary to record (used only when a summary was asked for).
    pub summary: Option<BranchSummaryText>,
    /// Replaces the summary's extra instructions.
    pub custom_instructions: Option<String>,
    /// Replaces whether the instructions replace pi's.
    pub replace_instructions: Option<bool>,
    /// Replaces the label.
    pub label: Option<String>,
}

impl TreeDecision {
    /// Cancels the move.
    pub fn cancel() -> Self {
        TreeDecision {
            cancel: true,
            ..TreeDecision::default()
        }
    }

    /// Provides the branch summary.
    #[must_use]
    pub fn with_summary(mut self, summary: BranchSummaryText) -> Self {
        self.summary = Some(summary);
        self
    }

    /// Sets the label.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

/// `session_tree`: the session moved in its tree.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionTreeEvent {
    /// The leaf now.
    pub new_leaf_id: Option<String>,
    /// The leaf before.
    pub old_leaf_id: Option<String>,
    /// The branch summary written, if any.
    pub summary_entry: Option<BranchSummaryEntry>,
    /// With a summary: whether an extension provided it.
    pub from_extension: Option<bool>,
}

/// Why a session ends (pi's `session_shutdown.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShutdownReason {
    /// The program is done with it ([`AgentSession::shutdown`](crate::agent_session::AgentSession::shutdown)).
    Quit,
    /// A new session replaces it.
    New,
    /// Another session replaces it.
    Resume,
    /// A fork of it replaces it.
    Fork,
}

impl ShutdownReason {
    /// pi's name of the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            ShutdownReason::Quit => "quit",
            ShutdownReason::New => "new",
            ShutdownReason::Resume => "resume",
            ShutdownReason::Fork => "fork",
        }
    }
}

/// `session_shutdown`: the session is about to end or be replaced. Observe only; its
/// handlers run before the switch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionShutdownEvent {
    /// Why.
    pub reason: ShutdownReason,
    /// The session that replaces it, when known.
    pub target_session_file: Option<PathBuf>,
}

/// How a model was chosen (pi's `model_select.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelSelectSource {
    /// [`set_model`](crate::agent_session::AgentSession::set_model) (or an extension's).
    Set,
    /// [`cycle_model`](crate::agent_session::AgentSession::cycle_model).
    Cycle,
}

/// `model_select`: the model changed. Observe only.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelSelectEvent {
    /// The model now.
    pub model: Model,
    /// The model before.
    pub previous_model: Option<Model>,
    /// How it was chosen.
    pub source: ModelSelectSource,
}

/// `thinking_level_select`: the thinking level changed. Observe only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThinkingLevelSelectEvent {
    /// The level now.
    pub level: ThinkingLevel,
    /// The level before.
    pub previous_level: ThinkingLevel,
}

/// Why resources are being discovered (pi's `resources_discover.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResourcesReason {
    /// When the front end starts.
    Startup,
    /// When it reloads its resources.
    Reload,
}

/// `resources_discover`: a front end looks for skills, prompt templates and themes
/// ([`AgentSession::discover_resources`](crate::agent_session::AgentSession::discover_resources)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourcesDiscoverEvent {
    /// The working directory.
    pub cwd: PathBuf,
    /// Why.
    pub reason: ResourcesReason,
}

/// What a `resources_discover` handler adds: paths of skills, prompt templates and themes.
/// **Collected** from every handler, in order, each path with the extension that gave it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Resources {
    /// Skill files or folders.
    pub skill_paths: Vec<PathBuf>,
    /// Prompt template files or folders.
    pub prompt_paths: Vec<PathBuf>,
    /// Theme files or folders.
    pub theme_paths: Vec<PathBuf>,
}

impl Resources {
    /// No paths.
    pub fn new() -> Self {
        Resources::default()
    }

    /// Adds a skill file or folder.
    #[must_use]
    pub fn with_skill_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.skill_paths.push(path.into());
        self
    }

    /// Adds a prompt template file or folder.
    #[must_use]
    pub fn with_prompt_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.prompt_paths.push(path.into());
        self
    }

    /// Adds a theme file or folder.
    #[must_use]
    pub fn with_theme_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.theme_paths.push(path.into());
        self
    }
}

/// The resources every extension added, each with the name of the extension that added it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DiscoveredResources {
    /// `(path, extension)` of skills.
    pub skill_paths: Vec<(PathBuf, String)>,
    /// `(path, extension)` of prompt templates.
    pub prompt_paths: Vec<(PathBuf, String)>,
    /// `(path, extension)` of themes.
    pub theme_paths: Vec<(PathBuf, String)>,
}

/// `user_bash`: a person runs a shell command themselves (pi's `!command`,
/// [`AgentSession::execute_bash`](crate::agent_session::AgentSession::execute_bash)). A
/// handler may run it elsewhere or answer it ([`UserBashAction`]); the first answer wins.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UserBashEvent {
    /// The command.
    pub command: String,
    /// True when its result is kept out of the model's context (pi's `!!command`).
    pub exclude_from_context: bool,
    /// Where it runs.
    pub cwd: PathBuf,
}

/// What a `user_bash` handler does with the command.
#[cfg(feature = "tools")]
#[cfg_attr(docsrs, doc(cfg(feature = "tools")))]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum UserBashAction {
    /// Run it with these operations (a container, a remote machine) instead of the
    /// session's.
    RunWith(std::sync::Arc<dyn crate::tools::BashOperations>),
    /// This is its result; nothing runs.
    Answer(crate::session::BashExecutionMessage),
}
