//! [`AgentSessionBuilder`], and restoring a session's model, thinking level and context
//! (pi's `createAgentSession`).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::error::AgentSessionError;
use super::session::{AgentSession, Inner, Parts, ScopedModel, State, TransformFn};
use super::settings::{AgentSessionSettings, DEFAULT_THINKING_LEVEL};
use crate::agent::{
    Agent, AgentHooks, AgentMessage, AgentTool, StreamFn, ToolCallDecision, ToolExecutionMode,
};
use crate::extensions::runner::ExtensionRunner;
use crate::extensions::{Extension, ExtensionUi, FlagValue, ToolCallEvent, ToolResultEvent};
use crate::llm::event_stream::AssistantMessageEventStream;
use crate::llm::message::Context;
use crate::llm::model::Model;
use crate::llm::models::ModelRegistry;
use crate::llm::options::StreamOptions;
use crate::llm::thinking::{ThinkingLevel, clamp_thinking_level};
use crate::session::{EntryType, SessionManager, to_llm};

/// Configures an [`AgentSession`]. Only the session manager is required — and a model,
/// unless the session has one the registry knows.
#[must_use]
pub struct AgentSessionBuilder {
    session: SessionManager,
    /// `None` until set: the default registry is built only when none was given (it
    /// materializes the whole catalog).
    registry: Option<ModelRegistry>,
    models: Vec<Model>,
    model: Option<Model>,
    default_model: Option<Model>,
    thinking_level: Option<ThinkingLevel>,
    system_prompt: String,
    tools: Vec<Arc<dyn AgentTool>>,
    settings: AgentSessionSettings,
    scoped_models: Vec<ScopedModel>,
    stream: Option<Arc<dyn StreamFn>>,
    options: StreamOptions,
    hooks: AgentHooks,
    transform: Option<Arc<TransformFn>>,
    tool_execution: ToolExecutionMode,
    max_turns: Option<usize>,
    extensions: Vec<Extension>,
    extension_ui: Option<Arc<dyn ExtensionUi>>,
    flag_values: Vec<(String, FlagValue)>,
    expand: Option<Arc<super::session::ExpandFn>>,
    prompt_for_tools: Option<Arc<super::session::PromptFn>>,
    on_settings_change: Option<Arc<super::session::SettingsFn>>,
}

impl fmt::Debug for AgentSessionBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentSessionBuilder")
            .field("session", &self.session.session_id())
            .field("model", &self.model.as_ref().map(|m| &m.id))
            .field("default_model", &self.default_model.as_ref().map(|m| &m.id))
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl AgentSession {
    /// Configures an agent session over `session` (new or reopened).
    pub fn builder(session: SessionManager) -> AgentSessionBuilder {
        AgentSessionBuilder {
            session,
            registry: None,
            models: Vec::new(),
            model: None,
            default_model: None,
            thinking_level: None,
            system_prompt: String::new(),
            tools: Vec::new(),
            settings: AgentSessionSettings::default(),
            scoped_models: Vec::new(),
            stream: None,
            options: StreamOptions::new(),
            hooks: AgentHooks::new(),
            transform: None,
            tool_execution: ToolExecutionMode::Parallel,
            max_turns: None,
            extensions: Vec::new(),
            extension_ui: None,
            flag_values: Vec::new(),
            expand: None,
            prompt_for_tools: None,
            on_settings_change: None,
        }
    }
}

impl AgentSessionBuilder {
    /// The models and credentials. Default: [`ModelRegistry::new`] (built-in models, keys
    /// from the environment).
    pub fn registry(mut self, registry: ModelRegistry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Models the session knows besides the registry's (a local server's, a test's). A
    /// reopened session's model is looked up in the registry, then here.
    pub fn models(mut self, models: impl IntoIterator<Item = Model>) -> Self {
        self.models.extend(models);
        self
    }

    /// The model, whatever the session last used (pi's `model` option, e.g. `--model`).
    pub fn model(mut self, model: Model) -> Self {
        self.model = Some(model);
        self
    }

    /// The model of a new session, and the fallback when a reopened session's model is
    /// unknown (see [`AgentSession::model_fallback_message`]).
    pub fn default_model(mut self, model: Model) -> Self {
        self.default_model = Some(model);
        self
    }

    /// The thinking level, whatever the session last used. Default: the session's, else
    /// the settings' default (`medium`); clamped to the model.
    pub fn thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.thinking_level = Some(level);
        self
    }

    /// The system prompt. Default: empty.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl AgentTool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Sets the tools.
    pub fn tools(mut self, tools: Vec<Arc<dyn AgentTool>>) -> Self {
        self.tools = tools;
        self
    }

    /// The settings. Default: pi's.
    pub fn settings(mut self, settings: AgentSessionSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The models [`cycle_model`](AgentSession::cycle_model) goes through.
    pub fn scoped_models(mut self, models: impl IntoIterator<Item = ScopedModel>) -> Self {
        self.scoped_models = models.into_iter().collect();
        self
    }

    /// Streams replies with `f` (a proxy, a scripted model) instead of the registry's
    /// [`stream_simple`](crate::stream_simple). The session then needs no credentials from
    /// the registry; keys it has are still put in the options.
    pub fn stream_fn(
        self,
        f: impl Fn(&Model, &Context, &StreamOptions) -> AssistantMessageEventStream
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.stream_fn_arc(Arc::new(f))
    }

    /// Streams replies with a shared stream function.
    pub fn stream_fn_arc(mut self, f: Arc<dyn StreamFn>) -> Self {
        self.stream = Some(f);
        self
    }

    /// Options of every model call (temperature, max tokens, cache retention, headers, …).
    /// The session sets the session id and the retry policy itself.
    pub fn options(mut self, options: StreamOptions) -> Self {
        self.options = options;
        self
    }

    /// The agent's tool hooks (`before_tool_call`, `after_tool_call`,
    /// `should_stop_after_turn`). The stream function, the message conversion (the session
    /// layer's [`to_llm`]), the context transformation and the key resolution are the
    /// session's: use [`stream_fn`](Self::stream_fn) and
    /// [`transform_context`](Self::transform_context).
    pub fn hooks(mut self, hooks: AgentHooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Transforms the context before every model call, after the session's own
    /// compaction check.
    pub fn transform_context<F>(mut self, f: F) -> Self
    where
        F: for<'a> Fn(
                &'a [AgentMessage],
                &'a CancellationToken,
            ) -> BoxFuture<'a, Cow<'a, [AgentMessage]>>
            + Send
            + Sync
            + 'static,
    {
        self.transform = Some(Arc::new(f));
        self
    }

    /// Parallel (default) or sequential tool execution.
    pub fn tool_execution(mut self, mode: ToolExecutionMode) -> Self {
        self.tool_execution = mode;
        self
    }

    /// Ends a run after this many turns. Default: no limit.
    pub fn max_turns(mut self, turns: usize) -> Self {
        self.max_turns = Some(turns);
        self
    }

    /// An extension ([`crate::extensions`]): its setup runs in [`build`](Self::build), its
    /// tools join the session's, its handlers take part in every run. Extensions are
    /// asked in the order they were given.
    pub fn extension(mut self, extension: Extension) -> Self {
        self.extensions.push(extension);
        self
    }

    /// The UI extensions talk to (dialogs, notifications). Default: [`NoUi`](crate::extensions::NoUi),
    /// pi's print mode — no person, dialogs answered as cancelled.
    pub fn extension_ui(mut self, ui: impl ExtensionUi) -> Self {
        self.extension_ui = Some(Arc::new(ui));
        self
    }

    /// The UI extensions talk to, shared.
    pub fn extension_ui_arc(mut self, ui: Arc<dyn ExtensionUi>) -> Self {
        self.extension_ui = Some(ui);
        self
    }

    /// Expands a prompt's text before it is sent — a front end's prompt templates and skill
    /// commands (`/name args`). It runs after `/commands` and the extensions' `input`
    /// handlers, before `before_agent_start`, as pi expands them.
    pub fn input_expander<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = String> + Send + 'static,
    {
        self.expand = Some(Arc::new(move |text| Box::pin(f(text))));
        self
    }

    /// Builds the system prompt from the tools the model can call, now and whenever they
    /// change ([`AgentSession::set_active_tools`], [`AgentSession::register_tool`], an
    /// extension's tools): pi rebuilds its prompt so the tools' snippets and guidelines are
    /// those of the active tools. Replaces [`system_prompt`](Self::system_prompt).
    pub fn system_prompt_for_tools(
        mut self,
        f: impl Fn(&[Arc<dyn AgentTool>]) -> String + Send + Sync + 'static,
    ) -> Self {
        self.prompt_for_tools = Some(Arc::new(f));
        self
    }

    /// Told of each setting a person changes through the session — the default model
    /// and thinking level, the queue modes, automatic compaction and retries — so a front
    /// end saves them as pi saves them in `settings.json`.
    pub fn on_settings_change(
        mut self,
        f: impl Fn(&super::settings::SettingsChange) + Send + Sync + 'static,
    ) -> Self {
        self.on_settings_change = Some(Arc::new(f));
        self
    }

    /// The value of a flag an extension registered (what a front end parsed from its
    /// command line); an extension reads it with
    /// [`ExtensionContext::flag`](crate::extensions::ExtensionContext::flag).
    pub fn flag_value(mut self, name: impl Into<String>, value: impl Into<FlagValue>) -> Self {
        self.flag_values.push((name.into(), value.into()));
        self
    }

    /// Builds the session: restores the reopened session's model, thinking level and
    /// context (or writes a new session's first `model_change` and
    /// `thinking_level_change` entries, as pi's SDK does).
    ///
    /// # Errors
    ///
    /// [`AgentSessionError::NoModel`] without a model, and session read or write errors.
    pub fn build(self) -> Result<AgentSession, AgentSessionError> {
        let mut session = self.session;
        let mut registry = self.registry.unwrap_or_default();
        let models = self.models;
        // Extensions are set up first: the providers they register can hold the model.
        let mut tools = self.tools;
        let extensions = if self.extensions.is_empty() {
            None
        } else {
            let ui = self
                .extension_ui
                .unwrap_or_else(|| Arc::new(crate::extensions::NoUi));
            let (runner, ext_tools) = ExtensionRunner::new(&self.extensions, ui);
            for tool in ext_tools {
                tools.retain(|t| t.name() != tool.name());
                tools.push(tool);
            }
            for (extension, name, config) in runner.setup_providers() {
                match registry.register_provider(name.clone(), config.entry.clone()) {
                    Ok(()) => runner.install_stream(name, config),
                    Err(e) => tracing::warn!(
                        target: "pi_engine::extensions",
                        extension = runner.name(*extension),
                        provider = %name,
                        error = %e,
                        "an extension's provider could not be registered"
                    ),
                }
            }
            for (name, value) in self.flag_values {
                runner.set_flag(&name, value);
            }
            Some(runner)
        };
        let needs_auth = self.stream.is_none();
        let restored = restore(
            &mut session,
            &Finder {
                registry: &registry,
                models: &models,
                needs_auth,
            },
            Restore {
                explicit: self.model,
                fallback: self.default_model,
                level: self.thinking_level,
                default_level: self.settings.default_thinking_level,
            },
        )?;
        let settings = self.settings;
        let state = State {
            scoped_models: self.scoped_models,
            retry_attempt: 0,
            overflow_attempted: false,
            steering_texts: Vec::new(),
            follow_up_texts: Vec::new(),
            overlay: None,
            guard_off: false,
            reserve_warned: false,
            last_assistant: None,
            last_assistant_entry: None,
            persist_error: None,
            compaction_cancel: None,
            branch_summary_cancel: None,
            retry_cancel: None,
            model_fallback_message: restored.fallback_message,
            bash_cancel: None,
            pending_bash: Vec::new(),
            settings: settings.clone(),
        };
        let hooks = self.hooks;
        let system_prompt = match &self.prompt_for_tools {
            Some(f) => f(&tools),
            None => self.system_prompt,
        };
        let all_tools = tools.clone();
        let has_message_end = extensions.as_ref().is_some_and(|r| r.has_message_end());
        let (tool_execution, max_turns) = (self.tool_execution, self.max_turns);
        let agent_for = |weak: &std::sync::Weak<Inner>| {
            let hooks = session_hooks(hooks, weak.clone(), has_message_end);
            let mut builder = Agent::builder(restored.model)
                .system_prompt(system_prompt)
                .thinking_level(restored.thinking_level)
                .tools(tools)
                .messages(restored.messages)
                .hooks(hooks)
                .tool_execution(tool_execution)
                .steering_mode(settings.steering_mode)
                .follow_up_mode(settings.follow_up_mode);
            if let Some(turns) = max_turns {
                builder = builder.max_turns(turns);
            }
            builder.build()
        };
        let inner = Inner::new(
            agent_for,
            Parts {
                session,
                registry,
                all_tools,
                models,
                stream: self.stream,
                options: self.options,
                transform: self.transform,
                expand: self.expand,
                prompt_for_tools: self.prompt_for_tools.clone(),
                on_settings_change: self.on_settings_change,
                state,
                extensions,
            },
        );
        Ok(AgentSession { inner })
    }
}

/// The agent's hooks in a session: the application's tool hooks, and the session's stream
/// function, key resolution, message conversion and context guard.
fn session_hooks(hooks: AgentHooks, weak: std::sync::Weak<Inner>, message_end: bool) -> AgentHooks {
    let mut hooks = extension_hooks(hooks, &weak);
    if message_end {
        let w = weak.clone();
        hooks = hooks.with_message_end(move |message| {
            let inner = w.upgrade();
            Box::pin(async move {
                let inner = inner?;
                let runner = inner.extensions.clone()?;
                let session = AgentSession { inner };
                runner.message_end(&session, message).await
            })
        });
    }
    let stream = weak.clone();
    let keys = weak.clone();
    hooks
        .with_stream_fn(move |model, context, options| match stream.upgrade() {
            Some(inner) => inner.stream_call(model, context, options),
            None => crate::providers::stream_simple(model, context, options),
        })
        .with_get_api_key(move |_provider| {
            let inner = keys.upgrade();
            Box::pin(async move {
                match inner {
                    Some(inner) => inner.resolve_auth().await,
                    None => None,
                }
            })
        })
        .with_convert_message(to_llm)
        .with_transform_context(move |messages, cancel| {
            let inner = weak.upgrade();
            Box::pin(async move {
                let Some(inner) = inner else {
                    return Cow::Borrowed(messages);
                };
                let view = inner.guard(messages, cancel).await;
                let view = match inner.transform.clone() {
                    None => view,
                    Some(user) => match view {
                        Cow::Borrowed(m) => user(m, cancel).await,
                        Cow::Owned(v) => Cow::Owned(user(&v, cancel).await.into_owned()),
                    },
                };
                match inner.extensions.clone() {
                    Some(runner) if runner.has_context() => {
                        let session = AgentSession { inner };
                        match runner.context(&session, view.to_vec(), cancel).await {
                            Some(messages) => Cow::Owned(messages),
                            None => view,
                        }
                    }
                    _ => view,
                }
            })
        })
}

/// The application's tool hooks, then the extensions' `tool_call` and `tool_result`.
fn extension_hooks(hooks: AgentHooks, weak: &std::sync::Weak<Inner>) -> AgentHooks {
    let before = hooks.before_tool_call.clone();
    let after = hooks.after_tool_call.clone();
    let (w1, w2) = (weak.clone(), weak.clone());
    hooks
        .with_before_tool_call(move |cx| {
            let before = before.clone();
            let inner = w1.upgrade();
            Box::pin(async move {
                // The application's hook first; its rewrite is what the extensions see.
                let mut rewritten = None;
                if let Some(before) = before {
                    match before(cx).await {
                        ToolCallDecision::Allow => {}
                        ToolCallDecision::AllowWith(args) => rewritten = Some(args),
                        other => return other,
                    }
                }
                let allow = |rewritten: Option<_>| match rewritten {
                    Some(args) => ToolCallDecision::AllowWith(args),
                    None => ToolCallDecision::Allow,
                };
                let Some(inner) = inner else {
                    return allow(rewritten);
                };
                let Some(runner) = inner.extensions.clone().filter(|r| r.has_tool_call()) else {
                    return allow(rewritten);
                };
                let session = AgentSession { inner };
                let event = ToolCallEvent {
                    tool_call_id: cx.tool_call.id.clone(),
                    tool_name: cx.tool_call.name.clone(),
                    input: rewritten.clone().unwrap_or_else(|| cx.args.clone()),
                };
                let outcome = runner.tool_call(&session, event, cx.cancel).await;
                match (outcome.blocked, outcome.input) {
                    (Some((_extension, reason)), _) => ToolCallDecision::Block(reason),
                    (None, Some(input)) => ToolCallDecision::AllowWith(input),
                    (None, None) => allow(rewritten),
                }
            })
        })
        .with_after_tool_call(move |cx| {
            let after = after.clone();
            let inner = w2.upgrade();
            Box::pin(async move {
                let mut patch = match after {
                    Some(after) => after(cx).await,
                    None => None,
                };
                let Some(inner) = inner else {
                    return patch;
                };
                let Some(runner) = inner.extensions.clone().filter(|r| r.has_tool_result()) else {
                    return patch;
                };
                let session = AgentSession { inner };
                let current = patch.clone().unwrap_or_default();
                let event = ToolResultEvent {
                    tool_call_id: cx.tool_call.id.clone(),
                    tool_name: cx.tool_call.name.clone(),
                    input: cx.args.clone(),
                    content: current.content.unwrap_or_else(|| cx.result.content.clone()),
                    details: current.details.unwrap_or_else(|| cx.result.details.clone()),
                    is_error: current.is_error.unwrap_or(cx.is_error),
                };
                if let Some(p) = runner.tool_result(&session, event, cx.cancel).await {
                    let mut out = patch.take().unwrap_or_default();
                    out.content = p.content;
                    out.details = p.details;
                    out.is_error = p.is_error;
                    patch = Some(out);
                }
                patch
            })
        })
}

/// Looks models up: the registry, then the session's own models.
pub(super) struct Finder<'a> {
    pub(super) registry: &'a ModelRegistry,
    pub(super) models: &'a [Model],
    pub(super) needs_auth: bool,
}

impl Finder<'_> {
    fn find(&self, provider: &str, id: &str) -> Option<Model> {
        self.registry
            .find(provider, id)
            .filter(|m| !self.needs_auth || self.registry.has_auth(m))
            .or_else(|| {
                self.models
                    .iter()
                    .find(|m| m.provider == provider && m.id == id)
            })
            .cloned()
    }
}

/// What to restore with.
pub(super) struct Restore {
    /// A model that wins over the session's.
    pub(super) explicit: Option<Model>,
    /// The model when the session has none that can be found.
    pub(super) fallback: Option<Model>,
    /// A level that wins over the session's.
    pub(super) level: Option<ThinkingLevel>,
    /// The settings' default level.
    pub(super) default_level: Option<ThinkingLevel>,
}

/// What a session resumes with.
pub(super) struct Restored {
    pub(super) model: Model,
    pub(super) thinking_level: ThinkingLevel,
    pub(super) messages: Vec<AgentMessage>,
    pub(super) fallback_message: Option<String>,
}

/// pi's `createAgentSession`: the model (explicit, else the session's, else the fallback),
/// the thinking level (explicit, else the session's when it recorded one, else the default;
/// clamped to the model), the context; and for a new session its first entries.
pub(super) fn restore(
    session: &mut SessionManager,
    finder: &Finder<'_>,
    with: Restore,
) -> Result<Restored, AgentSessionError> {
    let context = session.build_session_context()?;
    let existing = !context.messages.is_empty();
    let has_thinking_entry = session
        .branch_ids(None)
        .iter()
        .any(|id| session.entry_type(id) == Some(EntryType::ThinkingLevelChange));
    let mut fallback_message = None;
    let mut model = with.explicit;
    if model.is_none()
        && existing
        && let Some(saved) = &context.model
    {
        model = finder.find(&saved.provider, &saved.model_id);
        if model.is_none() {
            fallback_message = Some(format!(
                "Could not restore model {}/{}",
                saved.provider, saved.model_id
            ));
        }
    }
    let model = match (model, with.fallback) {
        (Some(m), _) => m,
        (None, Some(m)) => {
            if let Some(msg) = &mut fallback_message {
                msg.push_str(&format!(". Using {}/{}", m.provider, m.id));
            }
            m
        }
        (None, None) => return Err(AgentSessionError::NoModel),
    };
    let default_level = with.default_level.unwrap_or(DEFAULT_THINKING_LEVEL);
    let level = match with.level {
        Some(l) => l,
        None if existing && has_thinking_entry => context.thinking_level,
        None => default_level,
    };
    let thinking_level = clamp_thinking_level(&model, level);
    if existing {
        if !has_thinking_entry {
            session.append_thinking_level_change(thinking_level)?;
        }
    } else {
        // A session that was set up and never prompted already records them.
        let same_model = context
            .model
            .as_ref()
            .is_some_and(|m| m.provider == model.provider && m.model_id == model.id);
        if !same_model {
            session.append_model_change(model.provider.as_str(), model.id.as_str())?;
        }
        if !(same_model && has_thinking_entry && context.thinking_level == thinking_level) {
            session.append_thinking_level_change(thinking_level)?;
        }
    }
    Ok(Restored {
        model,
        thinking_level,
        messages: if existing {
            context.messages
        } else {
            Vec::new()
        },
        fallback_message,
    })
}
