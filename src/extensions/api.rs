//! [`Extension`] and the registration API it is set up with ([`ExtensionApi`], pi's
//! `ExtensionAPI` as it is during loading).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use serde_json::Value;

use super::command::Completion;
use super::context::ExtensionContext;
use super::events::{
    BeforeAgentStart, BeforeAgentStartEvent, Cancel, CompactDecision, ContextEvent, InputAction,
    InputEvent, MessageEndEvent, ModelSelectEvent, ProviderRequestEvent, ProviderResponseEvent,
    Resources, ResourcesDiscoverEvent, SessionBeforeCompactEvent, SessionBeforeForkEvent,
    SessionBeforeSwitchEvent, SessionBeforeTreeEvent, SessionCompactEvent, SessionShutdownEvent,
    SessionStartEvent, SessionTreeEvent, ThinkingLevelSelectEvent, ToolCallEvent, ToolCallVerdict,
    ToolResultEvent, ToolResultPatch, TreeDecision,
};
#[cfg(feature = "tools")]
use super::events::{UserBashAction, UserBashEvent};
use super::flag::Flag;
use super::provider::ProviderConfig;
use super::render::{MessageRenderOptions, RenderedMessage};
use crate::agent::{AgentMessage, AgentTool};
use crate::agent_session::AgentSessionEvent;
use crate::session::ExtensionMessage;

/// What a handler fails with. Any error converts (`?` works on `std::io::Error`,
/// `serde_json::Error`, `String`, …).
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// What a handler returns: `Ok(None)` leaves things as they are.
pub type HandlerResult<R> = Result<Option<R>, HandlerError>;

pub(crate) type Handler<E, R> =
    Arc<dyn Fn(E, ExtensionContext) -> BoxFuture<'static, HandlerResult<R>> + Send + Sync>;

pub(crate) type CommandHandler = Arc<
    dyn Fn(String, ExtensionContext) -> BoxFuture<'static, Result<(), HandlerError>> + Send + Sync,
>;

pub(crate) type CompletionFn =
    Arc<dyn Fn(String) -> BoxFuture<'static, Option<Vec<Completion>>> + Send + Sync>;

pub(crate) type ShortcutHandler =
    Arc<dyn Fn(ExtensionContext) -> BoxFuture<'static, Result<(), HandlerError>> + Send + Sync>;

pub(crate) type BusHandler = Arc<
    dyn Fn(Value, ExtensionContext) -> BoxFuture<'static, Result<(), HandlerError>> + Send + Sync,
>;

pub(crate) type RendererFn =
    Arc<dyn Fn(&ExtensionMessage, MessageRenderOptions) -> Option<RenderedMessage> + Send + Sync>;

type Setup = dyn Fn(&mut ExtensionApi) + Send + Sync;

/// The default deadline of one handler call (time in UI dialogs not counted).
pub const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(30);

/// An extension: a name and a setup function that registers handlers, tools and commands
/// (pi's `export default function (pi: ExtensionAPI)`). Given to
/// [`AgentSessionBuilder::extension`](crate::agent_session::AgentSessionBuilder::extension);
/// the setup runs once, when the session is built.
///
/// ```
/// use pi_engine::extensions::{Extension, ToolCallVerdict};
///
/// let gate = Extension::new("no-rm-rf", |pi| {
///     pi.on_tool_call(|event, _ctx| async move {
///         let command = event.input.get("command").and_then(|c| c.as_str()).unwrap_or("");
///         Ok((event.tool_name == "bash" && command.contains("rm -rf"))
///             .then(|| ToolCallVerdict::block("rm -rf is not allowed")))
///     });
/// });
/// assert_eq!(gate.name(), "no-rm-rf");
/// ```
#[derive(Clone)]
pub struct Extension {
    name: String,
    setup: Arc<Setup>,
    timeout: Duration,
}

impl fmt::Debug for Extension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extension")
            .field("name", &self.name)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Extension {
    /// An extension called `name` (its events and errors say this name: pi's
    /// `extensionPath`), set up by `setup`.
    pub fn new(
        name: impl Into<String>,
        setup: impl Fn(&mut ExtensionApi) + Send + Sync + 'static,
    ) -> Self {
        Extension {
            name: name.into(),
            setup: Arc::new(setup),
            timeout: DEFAULT_HANDLER_TIMEOUT,
        }
    }

    /// The deadline of each of this extension's handler calls, unless a handler sets its
    /// own ([`ExtensionApi::timeout`]). Default: [`DEFAULT_HANDLER_TIMEOUT`], 30 s.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The extension's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The extension's default handler deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The command-line flags the extension registers (its setup runs on a scratch
    /// registration, so a front end can parse its command line before the session is
    /// built; the setup should only register).
    pub fn flags(&self) -> Vec<super::flag::Flag> {
        self.register(0)
            .registrations
            .flags
            .into_iter()
            .map(|(_, f)| f)
            .collect()
    }

    pub(crate) fn register(&self, index: usize) -> ExtensionApi {
        let mut api = ExtensionApi {
            extension: index,
            timeout: self.timeout,
            registrations: Registrations::default(),
        };
        (self.setup)(&mut api);
        api
    }
}

/// A registered handler: which extension, its deadline, the function.
pub(crate) struct Registered<E, R> {
    pub(crate) extension: usize,
    pub(crate) timeout: Duration,
    pub(crate) handler: Handler<E, R>,
}

impl<E, R> Clone for Registered<E, R> {
    fn clone(&self) -> Self {
        Registered {
            extension: self.extension,
            timeout: self.timeout,
            handler: self.handler.clone(),
        }
    }
}

/// A command (`/name args`) an extension registered.
#[derive(Clone)]
pub(crate) struct Command {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) extension: usize,
    pub(crate) timeout: Option<Duration>,
    pub(crate) handler: CommandHandler,
    pub(crate) completions: Option<CompletionFn>,
}

/// A keyboard shortcut an extension registered.
#[derive(Clone)]
pub(crate) struct Shortcut {
    pub(crate) key: String,
    pub(crate) description: Option<String>,
    pub(crate) extension: usize,
    pub(crate) timeout: Duration,
    pub(crate) handler: ShortcutHandler,
}

/// A handler of the extensions' event bus.
#[derive(Clone)]
pub(crate) struct BusSubscription {
    pub(crate) channel: String,
    pub(crate) extension: usize,
    pub(crate) timeout: Duration,
    pub(crate) handler: BusHandler,
}

/// A message renderer an extension registered.
#[derive(Clone)]
pub(crate) struct Renderer {
    pub(crate) custom_type: String,
    pub(crate) extension: usize,
    pub(crate) render: RendererFn,
}

/// Declares every event's handlers once: the field of [`Registrations`] and its merge.
macro_rules! registrations {
    ($($(#[$meta:meta])* $field:ident: $event:ty => $result:ty,)*) => {
        /// Everything one extension (or, merged, every extension) registered.
        #[derive(Default)]
        pub(crate) struct Registrations {
            $($(#[$meta])* pub(crate) $field: Vec<Registered<$event, $result>>,)*
            pub(crate) event: Vec<Registered<AgentSessionEvent, ()>>,
            pub(crate) tools: Vec<Arc<dyn AgentTool>>,
            pub(crate) commands: Vec<Command>,
            pub(crate) shortcuts: Vec<Shortcut>,
            pub(crate) flags: Vec<(usize, Flag)>,
            pub(crate) renderers: Vec<Renderer>,
            pub(crate) bus: Vec<BusSubscription>,
            pub(crate) providers: Vec<(usize, String, ProviderConfig)>,
        }

        impl Registrations {
            /// Appends `other`'s registrations after these.
            pub(crate) fn extend(&mut self, other: Registrations) {
                $($(#[$meta])* self.$field.extend(other.$field);)*
                self.event.extend(other.event);
                self.tools.extend(other.tools);
                self.commands.extend(other.commands);
                self.shortcuts.extend(other.shortcuts);
                self.flags.extend(other.flags);
                self.renderers.extend(other.renderers);
                self.bus.extend(other.bus);
                self.providers.extend(other.providers);
            }
        }
    };
}

registrations! {
    tool_call: ToolCallEvent => ToolCallVerdict,
    tool_result: ToolResultEvent => ToolResultPatch,
    context: ContextEvent => Vec<AgentMessage>,
    input: InputEvent => InputAction,
    before_agent_start: BeforeAgentStartEvent => BeforeAgentStart,
    message_end: MessageEndEvent => AgentMessage,
    before_provider_request: ProviderRequestEvent => Value,
    after_provider_response: ProviderResponseEvent => (),
    session_start: SessionStartEvent => (),
    session_before_switch: SessionBeforeSwitchEvent => Cancel,
    session_before_fork: SessionBeforeForkEvent => Cancel,
    session_before_compact: SessionBeforeCompactEvent => CompactDecision,
    session_compact: SessionCompactEvent => (),
    session_before_tree: SessionBeforeTreeEvent => TreeDecision,
    session_tree: SessionTreeEvent => (),
    session_shutdown: SessionShutdownEvent => (),
    model_select: ModelSelectEvent => (),
    thinking_level_select: ThinkingLevelSelectEvent => (),
    resources_discover: ResourcesDiscoverEvent => Resources,
    #[cfg(feature = "tools")]
    user_bash: UserBashEvent => UserBashAction,
}

/// The registration API an [`Extension`]'s setup gets (pi's `pi` during loading). Handlers
/// are async closures taking the event (owned) and an [`ExtensionContext`]; they return
/// `Ok(None)` to leave things as they are, `Ok(Some(result))` to act, or `Err` — which is
/// reported as an `extension_error` event and, for `tool_call` only, blocks the call.
///
/// Each handler call runs under a deadline (the extension's, default 30 s; time spent in
/// UI dialogs does not count) and a cancellation token
/// ([`ExtensionContext::cancelled`]); a handler past its deadline is dropped and counts as
/// failed. A panic in a handler is caught and counts as failed.
pub struct ExtensionApi {
    extension: usize,
    timeout: Duration,
    pub(crate) registrations: Registrations,
}

impl fmt::Debug for ExtensionApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtensionApi")
            .field("extension", &self.extension)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn handler<E, R, F, Fut>(f: F) -> Handler<E, R>
where
    F: Fn(E, ExtensionContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult<R>> + Send + 'static,
{
    Arc::new(move |e, ctx| Box::pin(f(e, ctx)))
}

fn observer<E, F, Fut>(f: F) -> Handler<E, ()>
where
    F: Fn(E, ExtensionContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    Arc::new(move |e, ctx| {
        let fut = f(e, ctx);
        Box::pin(async move { fut.await.map(|()| None) })
    })
}

/// Declares the `on_…` methods of handlers that return a result.
macro_rules! on_result {
    ($($(#[$meta:meta])* $method:ident => $field:ident: $event:ty => $result:ty;)*) => {$(
        $(#[$meta])*
        pub fn $method<F, Fut>(&mut self, f: F) -> &mut Self
        where
            F: Fn($event, ExtensionContext) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = HandlerResult<$result>> + Send + 'static,
        {
            let r = self.registered(handler(f));
            self.registrations.$field.push(r);
            self
        }
    )*};
}

/// Declares the `on_…` methods of handlers that only observe.
macro_rules! on_observe {
    ($($(#[$meta:meta])* $method:ident => $field:ident: $event:ty;)*) => {$(
        $(#[$meta])*
        pub fn $method<F, Fut>(&mut self, f: F) -> &mut Self
        where
            F: Fn($event, ExtensionContext) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
        {
            let r = self.registered(observer(f));
            self.registrations.$field.push(r);
            self
        }
    )*};
}

impl ExtensionApi {
    fn registered<E, R>(&self, handler: Handler<E, R>) -> Registered<E, R> {
        Registered {
            extension: self.extension,
            timeout: self.timeout,
            handler,
        }
    }

    /// The deadline of the handlers and commands registered after this call.
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = timeout;
        self
    }

    on_result! {
        /// `tool_call`: before a tool runs; may block it or rewrite its arguments
        /// ([`ToolCallVerdict`]: the first block wins; rewrites chain; a failing handler
        /// blocks).
        on_tool_call => tool_call: ToolCallEvent => ToolCallVerdict;
        /// `tool_result`: after a tool ran; may replace its content, details or error flag
        /// ([`ToolResultPatch`], chained).
        on_tool_result => tool_result: ToolResultEvent => ToolResultPatch;
        /// `context`: before every model call; may return the messages to send instead
        /// (chained).
        on_context => context: ContextEvent => Vec<AgentMessage>;
        /// `input`: a prompt arrived; may transform it (chained) or handle it (stops).
        on_input => input: InputEvent => InputAction;
        /// `before_agent_start`: a prompt starts a run; may add a message (collected) and
        /// set the run's system prompt (chained).
        on_before_agent_start => before_agent_start: BeforeAgentStartEvent => BeforeAgentStart;
        /// `message_end`: a message is complete, before it is recorded; may replace it with
        /// one of the same role (chained). Runs in the agent's loop, which waits for it.
        on_message_end => message_end: MessageEndEvent => AgentMessage;
        /// `before_provider_request`: the JSON body of a model call before it is sent; may
        /// return the body to send instead (chained).
        on_before_provider_request => before_provider_request: ProviderRequestEvent => Value;
        /// `session_before_switch`: the session is about to be replaced by a new or another
        /// one; may cancel (the first cancel wins).
        on_session_before_switch => session_before_switch: SessionBeforeSwitchEvent => Cancel;
        /// `session_before_fork`: a fork is about to start; may cancel (the first cancel
        /// wins).
        on_session_before_fork => session_before_fork: SessionBeforeForkEvent => Cancel;
        /// `session_before_compact`: a compaction is about to summarize the branch; may
        /// cancel it or provide the compaction ([`CompactDecision`]: the first wins).
        on_session_before_compact => session_before_compact: SessionBeforeCompactEvent => CompactDecision;
        /// `session_before_tree`: a move in the session tree is about to happen; may cancel
        /// it, provide the branch summary or change its instructions and label
        /// ([`TreeDecision`]).
        on_session_before_tree => session_before_tree: SessionBeforeTreeEvent => TreeDecision;
        /// `resources_discover`: a front end looks for skills, prompt templates and themes;
        /// may add paths ([`Resources`], collected).
        on_resources_discover => resources_discover: ResourcesDiscoverEvent => Resources;
    }

    /// `user_bash`: a person runs a shell command ([`AgentSession::execute_bash`](crate::agent_session::AgentSession::execute_bash));
    /// may run it elsewhere or answer it ([`UserBashAction`]: the first answer wins).
    #[cfg(feature = "tools")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tools")))]
    pub fn on_user_bash<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(UserBashEvent, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<UserBashAction>> + Send + 'static,
    {
        let r = self.registered(handler(f));
        self.registrations.user_bash.push(r);
        self
    }

    on_observe! {
        /// `after_provider_response`: the provider answered a model call (status and
        /// headers, before the body is read). The call waits for the handlers.
        on_after_provider_response => after_provider_response: ProviderResponseEvent;
        /// `session_start`: the session is ready (first use, or after a new session, a
        /// switch or a fork).
        on_session_start => session_start: SessionStartEvent;
        /// `session_compact`: a compaction was recorded.
        on_session_compact => session_compact: SessionCompactEvent;
        /// `session_tree`: the session moved in its tree.
        on_session_tree => session_tree: SessionTreeEvent;
        /// `session_shutdown`: the session is about to end or be replaced.
        on_session_shutdown => session_shutdown: SessionShutdownEvent;
        /// `model_select`: the model changed.
        on_model_select => model_select: ModelSelectEvent;
        /// `thinking_level_select`: the thinking level changed.
        on_thinking_level_select => thinking_level_select: ThinkingLevelSelectEvent;
    }

    /// Every event the session reports (pi's `agent_start`, `turn_end`, `message_end`,
    /// `tool_execution_start`, … as [`AgentSessionEvent`]s), to observe. Handlers run in
    /// order on a task of their own, one event at a time, so a slow handler never holds the
    /// run up.
    pub fn on_event<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(AgentSessionEvent, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        let r = self.registered(observer(f));
        self.registrations.event.push(r);
        self
    }

    /// A tool the model can call (pi's `registerTool`); it joins the session's tools when
    /// the session is built, replacing one of the same name. (At run time:
    /// [`ExtensionContext::register_tool`].)
    pub fn register_tool(&mut self, tool: impl AgentTool) -> &mut Self {
        self.registrations.tools.push(Arc::new(tool));
        self
    }

    /// A command: a prompt `/name args` runs `handler(args, ctx)` instead of the model
    /// (pi's `registerCommand`). The arguments are the text after the name, trimmed at the
    /// start.
    pub fn register_command<F, Fut>(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> &mut Self
    where
        F: Fn(String, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        let description: String = description.into();
        self.registrations.commands.push(Command {
            name: name.into(),
            description: (!description.is_empty()).then_some(description),
            extension: self.extension,
            timeout: Some(self.timeout),
            handler: Arc::new(move |args, ctx| Box::pin(handler(args, ctx))),
            completions: None,
        });
        self
    }

    /// The argument completions of this extension's command `name` (pi's
    /// `getArgumentCompletions`): `f` gets the text typed after `/name ` and returns the
    /// suggestions, or `None` for none. A front end asks through
    /// [`AgentSession::command_completions`](crate::agent_session::AgentSession::command_completions).
    /// Does nothing when the extension registered no command `name` (yet).
    pub fn command_completions<F, Fut>(&mut self, name: &str, f: F) -> &mut Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Vec<Completion>>> + Send + 'static,
    {
        let f: CompletionFn = Arc::new(move |prefix| Box::pin(f(prefix)));
        if let Some(c) = self
            .registrations
            .commands
            .iter_mut()
            .rev()
            .find(|c| c.name == name)
        {
            c.completions = Some(f);
        }
        self
    }

    /// A keyboard shortcut (pi's `registerShortcut`, key ids such as `ctrl+shift+p`): a
    /// front end runs it with [`AgentSession::run_shortcut`](crate::agent_session::AgentSession::run_shortcut).
    pub fn register_shortcut<F, Fut>(
        &mut self,
        key: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> &mut Self
    where
        F: Fn(ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        let description: String = description.into();
        self.registrations.shortcuts.push(Shortcut {
            key: key.into(),
            description: (!description.is_empty()).then_some(description),
            extension: self.extension,
            timeout: self.timeout,
            handler: Arc::new(move |ctx| Box::pin(handler(ctx))),
        });
        self
    }

    /// A command-line flag (pi's `registerFlag`): a front end lists them
    /// ([`AgentSession::flags`](crate::agent_session::AgentSession::flags)), parses them and
    /// sets their values ([`AgentSessionBuilder::flag_value`](crate::agent_session::AgentSessionBuilder::flag_value));
    /// the extension reads one with [`ExtensionContext::flag`].
    pub fn register_flag(&mut self, flag: Flag) -> &mut Self {
        self.registrations.flags.push((self.extension, flag));
        self
    }

    /// How a front end shows the extension messages of `custom_type` (pi's
    /// `registerMessageRenderer`), as data: `render` returns the lines to show, or `None`
    /// to leave it to the front end's default.
    pub fn register_message_renderer(
        &mut self,
        custom_type: impl Into<String>,
        render: impl Fn(&ExtensionMessage, MessageRenderOptions) -> Option<RenderedMessage>
        + Send
        + Sync
        + 'static,
    ) -> &mut Self {
        self.registrations.renderers.push(Renderer {
            custom_type: custom_type.into(),
            extension: self.extension,
            render: Arc::new(render),
        });
        self
    }

    /// A provider and its models (pi's `registerProvider`): added to the session's
    /// [`ModelRegistry`](crate::llm::models::ModelRegistry) when the session is built. (At
    /// run time, and to remove one: [`ExtensionContext::register_provider`],
    /// [`ExtensionContext::unregister_provider`].)
    pub fn register_provider(
        &mut self,
        name: impl Into<String>,
        config: ProviderConfig,
    ) -> &mut Self {
        self.registrations
            .providers
            .push((self.extension, name.into(), config));
        self
    }

    /// Handles messages on `channel` of the extensions' event bus (pi's `pi.events.on`):
    /// what any extension sends with [`ExtensionContext::emit_bus_event`]. Handlers run on a
    /// task of their own, in registration order, each under the extension's deadline; a
    /// failure is an `extension_error` (event `bus:<channel>`).
    pub fn on_bus_event<F, Fut>(&mut self, channel: impl Into<String>, f: F) -> &mut Self
    where
        F: Fn(Value, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        self.registrations.bus.push(BusSubscription {
            channel: channel.into(),
            extension: self.extension,
            timeout: self.timeout,
            handler: Arc::new(move |data, ctx| Box::pin(f(data, ctx))),
        });
        self
    }
}
