//! [`Extension`] and the registration API it is set up with ([`ExtensionApi`], pi's
//! `ExtensionAPI` as it is during loading).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::context::ExtensionContext;
use super::events::{
    BeforeAgentStart, BeforeAgentStartEvent, Cancel, ContextEvent, InputAction, InputEvent,
    SessionBeforeSwitchEvent, SessionStartEvent, ToolCallEvent, ToolCallVerdict, ToolResultEvent,
    ToolResultPatch,
};
use crate::agent::{AgentMessage, AgentTool};
use crate::agent_session::AgentSessionEvent;

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
}

/// Everything one extension registered.
#[derive(Default)]
pub(crate) struct Registrations {
    pub(crate) tool_call: Vec<Registered<ToolCallEvent, ToolCallVerdict>>,
    pub(crate) tool_result: Vec<Registered<ToolResultEvent, ToolResultPatch>>,
    pub(crate) context: Vec<Registered<ContextEvent, Vec<AgentMessage>>>,
    pub(crate) input: Vec<Registered<InputEvent, InputAction>>,
    pub(crate) before_agent_start: Vec<Registered<BeforeAgentStartEvent, BeforeAgentStart>>,
    pub(crate) session_start: Vec<Registered<SessionStartEvent, ()>>,
    pub(crate) session_before_switch: Vec<Registered<SessionBeforeSwitchEvent, Cancel>>,
    pub(crate) event: Vec<Registered<AgentSessionEvent, ()>>,
    pub(crate) tools: Vec<Arc<dyn AgentTool>>,
    pub(crate) commands: Vec<Command>,
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

    /// `tool_call`: before a tool runs; may block it ([`ToolCallVerdict`]: the first block
    /// wins; a failing handler blocks).
    pub fn on_tool_call<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(ToolCallEvent, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<ToolCallVerdict>> + Send + 'static,
    {
        let r = self.registered(handler(f));
        self.registrations.tool_call.push(r);
        self
    }

    /// `tool_result`: after a tool ran; may replace its content, details or error flag
    /// ([`ToolResultPatch`], chained).
    pub fn on_tool_result<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(ToolResultEvent, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<ToolResultPatch>> + Send + 'static,
    {
        let r = self.registered(handler(f));
        self.registrations.tool_result.push(r);
        self
    }

    /// `context`: before every model call; may return the messages to send instead
    /// (chained).
    pub fn on_context<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(ContextEvent, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<Vec<AgentMessage>>> + Send + 'static,
    {
        let r = self.registered(handler(f));
        self.registrations.context.push(r);
        self
    }

    /// `input`: a prompt arrived; may transform it (chained) or handle it (stops).
    pub fn on_input<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(InputEvent, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<InputAction>> + Send + 'static,
    {
        let r = self.registered(handler(f));
        self.registrations.input.push(r);
        self
    }

    /// `before_agent_start`: a prompt starts a run; may add a message (collected) and set
    /// the run's system prompt (chained).
    pub fn on_before_agent_start<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(BeforeAgentStartEvent, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<BeforeAgentStart>> + Send + 'static,
    {
        let r = self.registered(handler(f));
        self.registrations.before_agent_start.push(r);
        self
    }

    /// `session_start`: the session is ready.
    pub fn on_session_start<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(SessionStartEvent, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        let r = self.registered(observer(f));
        self.registrations.session_start.push(r);
        self
    }

    /// `session_before_switch`: the session is about to be replaced; may cancel (the first
    /// cancel wins).
    pub fn on_session_before_switch<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(SessionBeforeSwitchEvent, ExtensionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<Cancel>> + Send + 'static,
    {
        let r = self.registered(handler(f));
        self.registrations.session_before_switch.push(r);
        self
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
    /// the session is built. (At run time: [`ExtensionContext::register_tool`].)
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
        });
        self
    }
}
