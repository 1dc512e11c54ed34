//! The command's flow, as pi's `main`: the command line (two passes around the extensions'
//! flags), the configuration, the session, the model, the resources and tools, then the
//! mode.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use super::args::{self, Args, Mode};
use super::config::{
    Config, ConfigPaths, Diagnostic, ModelArgs, NO_MODELS_AVAILABLE, SessionRequest,
    SettingsManager, default_agent_dir,
};
use super::files;
use super::print::{self, PrintOutput};
use super::resources::{
    ResourceKind, ResourceLoader, ResourceOptions, Resources, SettingsEntries, SystemPromptOptions,
    build_system_prompt, expand_input_async,
};
use super::rpc::{self, RpcOptions, RpcUi, SlashCommand, SourceInfo};
use crate::agent::PromptInput;
use crate::agent_session::{AgentSession, SettingsChange, UpdateShape};
use crate::extensions::{
    Extension, ExtensionUi, FlagInfo, ProcessExtension, ProcessExtensionError,
    ProcessExtensionOptions,
};
use crate::llm::options::StreamOptions;
use crate::tools::{BuiltinTools, LocalBash};

/// pi's default tools, when `--tools` does not say.
const DEFAULT_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];

/// A compiled-in extension: built for each session by name (`-e <name>`).
type Factory = Arc<dyn Fn() -> Extension + Send + Sync>;

/// The `pi-engine` command, with the Rust extensions compiled into it (`-e <name>` loads
/// one; `-e <path>` runs a program as a process extension).
///
/// ```no_run
/// use pi_engine::cli::Cli;
/// use pi_engine::extensions::{Extension, ToolCallVerdict};
///
/// fn main() -> std::process::ExitCode {
///     Cli::new()
///         .extension("no-rm-rf", || {
///             Extension::new("no-rm-rf", |pi| {
///                 pi.on_tool_call(|call, _ctx| async move {
///                     let command = call.input.get("command").and_then(|c| c.as_str());
///                     Ok(command
///                         .is_some_and(|c| c.contains("rm -rf"))
///                         .then(|| ToolCallVerdict::block("rm -rf is not allowed")))
///                 });
///             })
///         })
///         .run()
/// }
/// ```
#[derive(Clone, Default)]
pub struct Cli {
    extensions: Vec<(String, Factory)>,
}

impl std::fmt::Debug for Cli {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.extensions.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Cli").field("extensions", &names).finish()
    }
}

/// How the command ends early: what to print where, and the exit code.
enum Exit {
    /// A message on stderr and exit code 1 (pi's `Error: …` lines).
    Error(String),
    /// Text on stdout and exit code 0 (`--help`, `--version`, `--list-models`).
    Done(String),
    /// clap's own output and exit code (a usage error: 2).
    Usage(clap::Error),
    /// Exit code 1 after the errors were printed (what they said, for ACP's answer).
    Reported(String),
    /// The model's provider has no credentials: a message on stderr and exit code 1.
    NeedsAuth(String),
}

/// What a mode runs: the session and what its front end lists.
/// What the mode gives the session: its extension UI, the file system of its tools, MCP
/// servers of its own (an ACP client's), and where warnings go.
struct FrontEnd<'a> {
    ui: Option<Arc<dyn ExtensionUi>>,
    fs: Option<Arc<dyn crate::tools::FileSystem>>,
    mcp_servers: &'a serde_json::Map<String, serde_json::Value>,
    warn: &'a (dyn Fn(String) + Sync),
}

struct Built {
    session: AgentSession,
    resources: Arc<Resources>,
    /// The MCP servers of the session's tools (feature `mcp`), shut down when the mode ends.
    #[cfg(feature = "mcp")]
    mcp: Option<Arc<crate::mcp::McpManager>>,
}

impl Cli {
    /// The command with no compiled-in extensions.
    pub fn new() -> Self {
        Cli::default()
    }

    /// Compiles in the extension `name`: `-e name` builds it with `factory`.
    #[must_use]
    pub fn extension(
        mut self,
        name: impl Into<String>,
        factory: impl Fn() -> Extension + Send + Sync + 'static,
    ) -> Self {
        self.extensions.push((name.into(), Arc::new(factory)));
        self
    }

    /// The names of the compiled-in extensions, in order.
    pub fn extension_names(&self) -> Vec<&str> {
        self.extensions.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Runs the command with the process's arguments, on a runtime of its own; the exit
    /// code is pi's (0, 1 on an error, 2 on a usage error).
    pub fn run(self) -> ExitCode {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("Error: could not start the runtime: {e}");
                return ExitCode::from(1);
            }
        };
        runtime.block_on(self.run_with(args))
    }

    /// Runs the command with `args` (without the program's name) on the current runtime,
    /// with the process's stdin, stdout and stderr.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops the command where it is; what was written to the session
    /// stays.
    pub async fn run_with(self, args: Vec<String>) -> ExitCode {
        match self.main(args).await {
            Ok(code) => code,
            Err(Exit::Done(text)) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(Exit::Error(text) | Exit::NeedsAuth(text)) => {
                eprintln!("{text}");
                ExitCode::from(1)
            }
            Err(Exit::Reported(_)) => ExitCode::from(1),
            Err(Exit::Usage(e)) => {
                let _ = e.print();
                ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
            }
        }
    }

    /// Builds the extensions `-e` names: a compiled-in one by name, else a program.
    async fn load_extensions(&self, names: &[String], cwd: &Path) -> Result<Vec<Extension>, Exit> {
        let mut out = Vec::new();
        for name in names {
            if let Some((_, factory)) = self.extensions.iter().find(|(n, _)| n == name) {
                out.push(factory());
                continue;
            }
            // `./x` as pi resolves it: `<cwd>/x`, not `<cwd>/./x` (in messages too).
            let path: PathBuf = cwd.join(name).components().collect();
            if !path.exists() && !name.contains('/') {
                return Err(Exit::Error(format!(
                    "Error: Failed to load extension \"{name}\": no compiled-in extension has this name (compiled in: {}) and no such file",
                    if self.extensions.is_empty() {
                        "none".to_owned()
                    } else {
                        self.extension_names().join(", ")
                    }
                )));
            }
            let stem = path
                .file_stem()
                .map_or_else(|| name.clone(), |s| s.to_string_lossy().into_owned());
            let options = ProcessExtensionOptions::new().with_cwd(cwd);
            match ProcessExtension::spawn(stem, &path, std::iter::empty::<&str>(), options).await {
                Ok(e) => out.push(e),
                Err(e @ ProcessExtensionError::TypeScriptExtension { .. }) => {
                    return Err(Exit::Error(format!(
                        "Error: Failed to load extension \"{name}\": {e}"
                    )));
                }
                Err(e) => {
                    return Err(Exit::Error(format!(
                        "Error: Failed to load extension \"{name}\": {e}"
                    )));
                }
            }
        }
        Ok(out)
    }

    /// `--mode acp`: sessions are made when the client asks, each in its own directory
    /// with that directory's configuration (as `pi-engine` started there would make it).
    async fn acp(&self, parsed: Args, extension_names: Vec<String>) -> Result<ExitCode, Exit> {
        use super::acp::{self, AcpOptions, AcpSessionSetup, AcpSetupError};
        let parsed = Arc::new(parsed);
        let agent_dir = default_agent_dir();
        let cli = self.clone();
        // The sessions' MCP servers, shut down when the mode ends.
        #[cfg(feature = "mcp")]
        let servers: Arc<Mutex<Vec<Arc<crate::mcp::McpManager>>>> = Arc::default();
        let factory = {
            let (parsed, agent_dir) = (parsed.clone(), agent_dir.clone());
            #[cfg(feature = "mcp")]
            let servers = servers.clone();
            move |setup: Arc<AcpSessionSetup>| {
                let (cli, parsed, agent_dir) = (cli.clone(), parsed.clone(), agent_dir.clone());
                #[cfg(feature = "mcp")]
                let keep = servers.clone();
                let names = extension_names.clone();
                async move {
                    let failed = |e: Exit| match e {
                        Exit::NeedsAuth(m) => AcpSetupError::NeedsAuth(plain(&m)),
                        Exit::Error(m) | Exit::Reported(m) | Exit::Done(m) => {
                            AcpSetupError::Failed(plain(&m))
                        }
                        Exit::Usage(e) => AcpSetupError::Failed(e.to_string()),
                    };
                    let cwd = setup.cwd().to_owned();
                    let config = Config::load(ConfigPaths::new(&cwd, &agent_dir))
                        .map_err(|e| AcpSetupError::Failed(e.to_string()))?;
                    if let Some(e) = &config.models_error {
                        return Err(AcpSetupError::Failed(format!(
                            "{e} ({})",
                            config.paths.models().display()
                        )));
                    }
                    let load = setup.session_to_load().map(str::to_owned);
                    let request = SessionRequest::from_flags(
                        false,
                        parsed.no_session,
                        false,
                        load.as_deref(),
                        None,
                    )
                    .map_err(|e| AcpSetupError::Failed(e.to_string()))?;
                    let session_dir = parsed.session_dir.clone();
                    let (config, sm) = blocking(move || {
                        let sm = config.open_session(&request, session_dir.as_deref());
                        (config, sm)
                    })
                    .await;
                    let sm = sm.map_err(|e| match &load {
                        Some(id) => AcpSetupError::NotFound(format!("no session {id}: {e}")),
                        None => AcpSetupError::Failed(e.to_string()),
                    })?;
                    let extensions = cli.load_extensions(&names, &cwd).await.map_err(failed)?;
                    let warn = |text: String| setup.warn(text);
                    let built = build_session(
                        &parsed,
                        config,
                        sm,
                        &agent_dir,
                        extensions,
                        FrontEnd {
                            ui: Some(setup.extension_ui()),
                            fs: setup.file_system(),
                            mcp_servers: setup.mcp_servers(),
                            warn: &warn,
                        },
                    )
                    .await
                    .map_err(failed)?;
                    #[cfg(feature = "mcp")]
                    if let Some(mcp) = built.mcp {
                        keep.lock().unwrap_or_else(|e| e.into_inner()).push(mcp);
                    }
                    Ok(built.session)
                }
            }
        };
        // `authenticate`: does the model the command line picks (or the settings') have a
        // key now? Read again each time: a key may have been added since.
        let auth_check = {
            let (parsed, agent_dir) = (parsed.clone(), agent_dir.clone());
            let cwd = std::env::current_dir().unwrap_or_default();
            move || {
                let Ok(config) = Config::load(ConfigPaths::new(&cwd, &agent_dir)) else {
                    return false;
                };
                let selection = config.select_model(&model_args(&parsed), false);
                selection
                    .model
                    .is_some_and(|m| config.auth.require(&m.provider).is_ok())
            }
        };
        let options = AcpOptions::new()
            .with_auth_check(auth_check)
            .stop_on(termination());
        let exit = acp::run(factory, stdin_lines(), tokio::io::stdout(), options).await;
        #[cfg(feature = "mcp")]
        {
            let all: Vec<_> =
                std::mem::take(&mut *servers.lock().unwrap_or_else(|e| e.into_inner()));
            for mcp in all {
                mcp.shutdown().await;
            }
        }
        Ok(ExitCode::from(exit.exit_code()))
    }

    async fn main(&self, raw: Vec<String>) -> Result<ExitCode, Exit> {
        let cwd = std::env::current_dir()
            .map_err(|e| Exit::Error(format!("Error: no working directory: {e}")))?;
        // First pass: which extensions are loaded decides which flags exist.
        let (names, _no_extensions) = args::extension_args(&raw);
        let extensions = self.load_extensions(&names, &cwd).await?;
        let flags: Vec<FlagInfo> = extensions
            .iter()
            .flat_map(|e| {
                let name = e.name().to_owned();
                e.flags()
                    .into_iter()
                    .map(move |f| FlagInfo::new(f, name.clone()))
            })
            .collect();
        let parsed = args::parse(&raw, &flags).map_err(Exit::Usage)?;
        for w in &parsed.warnings {
            eprintln!("Warning: {w}");
        }
        if parsed.help {
            let mut cmd = args::command(&flags);
            return Err(Exit::Done(cmd.render_help().to_string()));
        }
        if parsed.version {
            return Err(Exit::Done(format!("{}\n", env!("CARGO_PKG_VERSION"))));
        }
        // `--offline`: pi skips its startup network checks; pi-engine makes none.
        // `--export <session> [output]`: pi takes the output from the first message.
        if let Some(input) = parsed.export.clone() {
            let output = parsed.messages.first().map(PathBuf::from);
            let exported = blocking(move || {
                crate::session::export_html::export_session_file(
                    Path::new(&input),
                    output.as_deref(),
                )
            })
            .await;
            return match exported {
                Ok(path) => Err(Exit::Done(format!("Exported to: {}\n", path.display()))),
                Err(e) => Err(Exit::Error(format!("Error: {e}"))),
            };
        }
        let mode = app_mode(&parsed);
        if mode == AppMode::Acp {
            return self.acp(parsed, names).await;
        }
        if mode == AppMode::Rpc && !parsed.file_args.is_empty() {
            return Err(Exit::Error(
                "Error: @file arguments are not supported in RPC mode".to_owned(),
            ));
        }

        // The configuration of the starting directory, then the session.
        let agent_dir = default_agent_dir();
        let config = Config::load(ConfigPaths::new(&cwd, &agent_dir))
            .map_err(|e| Exit::Error(format!("Error: {e}")))?;
        // A `models.json` that does not load is an error naming the file (pi warns and
        // goes on with the built-in models, so a typo silently loses the custom ones).
        if let Some(e) = &config.models_error {
            let mut message = format!("Error: {e}");
            if !message.contains("\n\nFile: ") {
                message.push_str(&format!("\n\nFile: {}", config.paths.models().display()));
            }
            return Err(Exit::Error(message));
        }
        let request = SessionRequest::from_flags(
            parsed.continue_recent,
            parsed.no_session,
            parsed.resume,
            parsed.session.as_deref(),
            parsed.fork.as_deref(),
        )
        .map_err(|e| Exit::Error(format!("Error: {e}")))?;
        let session_dir = parsed.session_dir.clone();
        let sm = blocking(move || {
            let sm = config.open_session(&request, session_dir.as_deref());
            (config, sm)
        })
        .await;
        let (config, sm) = sm;
        let sm = sm.map_err(|e| Exit::Error(format!("Error: {e}")))?;
        // pi reads the project settings of the session's directory.
        let session_cwd = PathBuf::from(sm.cwd());
        let config = if session_cwd != cwd {
            config
                .for_cwd(&session_cwd)
                .map_err(|e| Exit::Error(format!("Error: {e}")))?
        } else {
            config
        };
        if let Some(search) = &parsed.list_models {
            return Err(Exit::Done(config.list_models(search.as_deref())));
        }

        let (ui, channel) = if mode == AppMode::Rpc {
            let (ui, channel) = RpcUi::new();
            (Some(ui as Arc<dyn ExtensionUi>), Some(channel))
        } else {
            (None, None)
        };
        let session_options = config.session_options(parsed.session_dir.as_deref());
        let warn = |text: String| eprintln!("Warning: {text}");
        let no_servers = serde_json::Map::new();
        let built = build_session(
            &parsed,
            config,
            sm,
            &agent_dir,
            extensions,
            FrontEnd {
                ui,
                fs: None,
                mcp_servers: &no_servers,
                warn: &warn,
            },
        )
        .await;
        let built = match built {
            Ok(built) => built,
            Err(Exit::Reported(_)) => return Ok(ExitCode::from(1)),
            Err(e) => return Err(e),
        };
        #[cfg(feature = "mcp")]
        let mcp = built.mcp.clone();
        let code = self
            .run_mode(mode, &parsed, &cwd, built, channel, session_options)
            .await;
        #[cfg(feature = "mcp")]
        if let Some(mcp) = mcp {
            mcp.shutdown().await;
        }
        code
    }

    /// Runs `mode` on the session `built`.
    async fn run_mode(
        &self,
        mode: AppMode,
        parsed: &Args,
        cwd: &Path,
        built: Built,
        channel: Option<super::rpc::RpcUiChannel>,
        session_options: crate::session::SessionOptions,
    ) -> Result<ExitCode, Exit> {
        let Built {
            session,
            resources: r,
            ..
        } = built;

        match mode {
            AppMode::Rpc => {
                let mut options = RpcOptions::new()
                    .with_commands(slash_commands(&r))
                    .with_session_options(session_options);
                if let Some(channel) = channel {
                    options = options.with_ui(channel);
                }
                options = options.stop_on(termination());
                let exit = rpc::run(session, stdin_lines(), tokio::io::stdout(), options).await;
                Ok(ExitCode::from(exit.exit_code()))
            }
            AppMode::Print | AppMode::Json => {
                let stdin = if std::io::stdin().is_terminal() {
                    None
                } else {
                    read_stdin().await
                };
                let file_args = parsed.file_args.clone();
                let fcwd = cwd.to_path_buf();
                let files = blocking(move || files::read_files(&file_args, &fcwd))
                    .await
                    .map_err(|e| Exit::Error(format!("Error: {e}")))?;
                let mut messages = parsed.messages.clone();
                let first = (!messages.is_empty()).then(|| messages.remove(0));
                let initial = files::initial_message(stdin, &files, first).map(|text| {
                    PromptInput::Text {
                        text,
                        images: files.images.clone(),
                    }
                });
                let output = match mode {
                    AppMode::Json => PrintOutput::Json(if parsed.json_event_only {
                        UpdateShape::EventOnly
                    } else {
                        UpdateShape::Pi
                    }),
                    _ => PrintOutput::Text,
                };
                let stderr: Arc<Mutex<dyn std::io::Write + Send>> =
                    Arc::new(Mutex::new(std::io::stderr()));
                let stop = termination();
                tokio::select! {
                    code = print::run(&session, initial, messages, output, tokio::io::stdout(), stderr) => Ok(code),
                    code = stop => {
                        // pi's print mode on a signal: the run stops, the session is disposed
                        // (extensions get `session_shutdown`), then the signal's exit code.
                        session.shutdown().await;
                        Ok(ExitCode::from(code))
                    }
                }
            }
            AppMode::Interactive => Err(Exit::Error(
                "Error: the interactive mode comes with pi-engine's terminal UI; until then use -p (print), --mode json or --mode rpc".to_owned(),
            )),
            AppMode::Acp => unreachable_mode(),
        }
    }
}

/// The session of a run, as pi's `main` makes it after the session file is open: the model,
/// the resources, the tools (on `fs` when given), the system prompt, the extensions and the
/// UI, then the active tools.
async fn build_session(
    parsed: &Args,
    config: Config,
    sm: crate::session::SessionManager,
    agent_dir: &Path,
    extensions: Vec<Extension>,
    front: FrontEnd<'_>,
) -> Result<Built, Exit> {
    let FrontEnd {
        ui,
        fs,
        mcp_servers,
        warn,
    } = front;
    let session_cwd = PathBuf::from(sm.cwd());
    // The model.
    let has_messages = sm
        .build_session_context()
        .is_ok_and(|c| !c.messages.is_empty());
    let selection = config.select_model(&model_args(parsed), has_messages);
    report(&config.diagnostics);
    report(&selection.diagnostics);
    if selection.has_errors() {
        let errors: Vec<String> = selection
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(ToString::to_string)
            .collect();
        return Err(Exit::Reported(errors.join("\n")));
    }

    // Resources, tools, the system prompt.
    let settings = config.settings.settings();
    let resources = ResourceLoader::load_async(
        session_cwd.clone(),
        agent_dir.to_path_buf(),
        resource_options(parsed, &config),
    )
    .await;
    // pi's print mode shows the context files' warnings, not the skills' or templates'.
    for d in &resources.diagnostics {
        if d.resource == ResourceKind::ContextFile {
            eprintln!("Warning: {}", d.message);
        }
    }
    let mut builtin = BuiltinTools::new(&session_cwd);
    if let Some(fs) = fs {
        builtin = builtin.with_fs(fs);
    }
    if let Some(shell) = &settings.shell_path {
        builtin = builtin.with_bash_operations(Arc::new(LocalBash::new().with_shell(shell)));
    }
    #[allow(unused_mut)] // Without feature `mcp`, the built-in tools only.
    let mut all_builtin = builtin.all();
    // MCP servers: `mcpServers` of settings.json (global, then the project's) and those a
    // front end passes (an ACP client's), started together; one that fails is a warning.
    #[cfg(feature = "mcp")]
    let mcp = {
        let mut servers = serde_json::Map::new();
        for level in [config.settings.global(), config.settings.project()] {
            if let Some(serde_json::Value::Object(m)) = level.get("mcpServers") {
                servers.extend(m.clone());
            }
        }
        servers.extend(mcp_servers.clone());
        if servers.is_empty() {
            None
        } else {
            let manager = crate::mcp::McpManager::start_json(
                &serde_json::Value::Object(servers),
                &session_cwd,
            )
            .await;
            for e in manager.errors() {
                warn(e.to_string());
            }
            all_builtin.extend(manager.tools());
            Some(Arc::new(manager))
        }
    };
    #[cfg(not(feature = "mcp"))]
    if !mcp_servers.is_empty() {
        warn(
            "MCP servers were not started: this pi-engine was built without the `mcp` feature"
                .to_owned(),
        );
    }

    // The session.
    let r = Arc::new(resources);
    let expander = r.clone();
    let (for_prompt, prompt_cwd) = (r.clone(), session_cwd.clone());
    let saver = config.settings.clone();
    // `config`'s registry moves into the session: a clone would be another copy of the
    // built-in catalog (about 0.6 MB of heap at startup). What is used of `config` after
    // this is taken first.
    let auth = config.auth.clone();
    let mut builder = AgentSession::builder(sm)
        .registry(config.registry)
        .settings(settings.to_agent_session_settings())
        .options(settings.apply_to_stream_options(StreamOptions::new()))
        .scoped_models(selection.scoped_models.clone())
        .tools(all_builtin)
        .input_expander(move |text| {
            let r = expander.clone();
            async move { expand_input_async(&text, &r).await }
        })
        .on_settings_change(move |change| save_setting(&saver, change))
        // pi's system prompt, rebuilt whenever the active tools change.
        .system_prompt_for_tools(move |tools| {
            build_system_prompt(
                &SystemPromptOptions::new(&prompt_cwd)
                    .with_resources(&for_prompt)
                    .with_tools(tools),
            )
        });
    if let Some(m) = selection.model.clone() {
        builder = builder.model(m);
    }
    if let Some(m) = selection.default_model.clone() {
        builder = builder.default_model(m);
    }
    if let Some(level) = selection.thinking_level {
        builder = builder.thinking_level(level);
    }
    for e in extensions {
        builder = builder.extension(e);
    }
    for (name, value) in &parsed.extension_flags {
        builder = builder.flag_value(name.clone(), value.clone());
    }
    if let Some(ui) = ui {
        builder = builder.extension_ui_arc(ui);
    }
    let session = match builder.build() {
        Ok(s) => s,
        Err(crate::agent_session::AgentSessionError::NoModel) => {
            return Err(Exit::Error(NO_MODELS_AVAILABLE.to_owned()));
        }
        Err(e) => return Err(Exit::Error(format!("Error: {e}"))),
    };
    // (`Config::check_model`, on the moved-from `config`.)
    auth.require(&session.model().provider)
        .map_err(|e| Exit::NeedsAuth(format!("Error: {e}")))?;
    let active = active_tools(parsed, &session);
    session.set_active_tools(&active);
    Ok(Built {
        session,
        resources: r,
        #[cfg(feature = "mcp")]
        mcp,
    })
}

/// pi's signal handling in its headless modes: `SIGTERM` ends the mode (the session is shut
/// down) with exit code 143, `SIGHUP` with 129. The handlers are installed when this is
/// called, so a signal that comes before the future is first polled is not lost.
fn termination() -> impl Future<Output = u8> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        async fn received(signal: Option<Signal>) {
            if let Some(mut s) = signal
                && s.recv().await.is_some()
            {
                return;
            }
            std::future::pending::<()>().await;
        }
        let term = signal(SignalKind::terminate()).ok();
        let hup = signal(SignalKind::hangup()).ok();
        async move {
            tokio::select! {
                () = received(term) => 143,
                () = received(hup) => 129,
            }
        }
    }
    #[cfg(not(unix))]
    {
        std::future::pending::<u8>()
    }
}

/// What the command line says about the model.
fn model_args(parsed: &Args) -> ModelArgs {
    let mut model_args = ModelArgs::new();
    model_args.provider = parsed.provider.clone();
    model_args.model = parsed.model.clone();
    model_args.thinking = parsed.thinking;
    model_args.models = parsed.models.clone();
    model_args.api_key = parsed.api_key.clone();
    model_args
}

/// A message without pi's `Error: ` prefix (the protocol's error says it is one).
fn plain(message: &str) -> String {
    message
        .strip_prefix("Error: ")
        .unwrap_or(message)
        .to_owned()
}

fn unreachable_mode() -> Result<ExitCode, Exit> {
    Err(Exit::Error("Error: unsupported mode".to_owned()))
}

/// Saves a setting a person changed (RPC `set_model`, …) in `settings.json`, as pi does,
/// off the async threads; a failure is a warning.
fn save_setting(settings: &SettingsManager, change: &SettingsChange) {
    let (settings, change) = (settings.clone(), change.clone());
    let save = move || {
        let written = match &change {
            SettingsChange::DefaultModel { provider, model_id } => {
                settings.set_default_model(provider, model_id)
            }
            SettingsChange::DefaultThinkingLevel(level) => {
                settings.set_default_thinking_level(*level)
            }
            SettingsChange::SteeringMode(mode) => settings.set_steering_mode(*mode),
            SettingsChange::FollowUpMode(mode) => settings.set_follow_up_mode(*mode),
            SettingsChange::AutoCompaction(on) => settings.set_compaction_enabled(*on),
            SettingsChange::AutoRetry(on) => settings.set_retry_enabled(*on),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "could not save a setting");
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn_blocking(save);
        }
        Err(_) => save(),
    }
}

/// Which mode the command runs in (pi's `resolveAppMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AppMode {
    Print,
    Json,
    Rpc,
    Acp,
    Interactive,
}

fn app_mode(parsed: &Args) -> AppMode {
    match parsed.mode {
        Some(Mode::Rpc) => AppMode::Rpc,
        Some(Mode::Json) => AppMode::Json,
        Some(Mode::Acp) => AppMode::Acp,
        _ if parsed.print || !std::io::stdin().is_terminal() => AppMode::Print,
        _ => AppMode::Interactive,
    }
}

fn report(diagnostics: &[Diagnostic]) {
    for d in diagnostics {
        eprintln!("{d}");
    }
}

fn resource_options(parsed: &Args, config: &Config) -> ResourceOptions {
    let global = config.settings.global();
    let project = config.settings.project();
    ResourceOptions {
        no_context_files: parsed.no_context_files,
        no_skills: parsed.no_skills,
        no_prompt_templates: parsed.no_prompt_templates,
        skill_paths: parsed.skills.clone(),
        prompt_template_paths: parsed.prompt_templates.clone(),
        system_prompt: parsed.system_prompt.clone(),
        append_system_prompt: parsed.append_system_prompt.clone(),
        settings_skills: SettingsEntries::from_settings(&global, &project, "skills"),
        settings_prompts: SettingsEntries::from_settings(&global, &project, "prompts"),
        ..ResourceOptions::default()
    }
}

/// pi's tool choice: `--tools` (an allowlist over every tool), `--no-tools` (none),
/// `--no-builtin-tools` (the extensions' only), else the four defaults and every
/// extension tool.
fn active_tools(parsed: &Args, session: &AgentSession) -> Vec<String> {
    let all = session.all_tools();
    let builtin = ["read", "bash", "edit", "write", "grep", "find", "ls"];
    if let Some(allow) = &parsed.tools {
        return all
            .iter()
            .filter(|t| allow.contains(&t.name))
            .map(|t| t.name.clone())
            .collect();
    }
    if parsed.no_tools {
        return Vec::new();
    }
    all.iter()
        .filter(|t| {
            let is_builtin = builtin.contains(&t.name.as_str());
            if parsed.no_builtin_tools {
                !is_builtin
            } else {
                !is_builtin || DEFAULT_TOOLS.contains(&t.name.as_str())
            }
        })
        .map(|t| t.name.clone())
        .collect()
}

/// The prompt templates and skills `get_commands` lists.
fn slash_commands(r: &Resources) -> Vec<SlashCommand> {
    let mut out = Vec::new();
    for t in &r.prompt_templates {
        out.push(SlashCommand::prompt_template(
            t.name.clone(),
            Some(t.description.as_str()),
            SourceInfo::from_resource(&t.source_info),
        ));
    }
    for s in &r.skills {
        out.push(SlashCommand::skill(
            s.name.clone(),
            Some(s.description.as_str()),
            SourceInfo::from_resource(&s.source_info),
        ));
    }
    out
}

/// The RPC mode's stdin, read by a thread of its own. `tokio::io::stdin()` reads on tokio's
/// blocking pool, and the runtime's shutdown waits for that read: when the mode ends while
/// stdin is still open (`SIGTERM`, an extension's `ctx.shutdown()`), the process would not
/// exit until the client closed stdin. A plain thread ends with the process, as pi does.
fn stdin_lines() -> Box<dyn tokio::io::AsyncRead + Send + Unpin> {
    use std::io::Read;
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(4);
    let reader = move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let chunk = match stdin.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => Ok(buf[..n].to_vec()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
            let failed = chunk.is_err();
            if tx.blocking_send(chunk).is_err() || failed {
                return;
            }
        }
    };
    match std::thread::Builder::new()
        .name("pi-engine-stdin".into())
        .spawn(reader)
    {
        Ok(_) => Box::new(ThreadStdin {
            rx,
            chunk: Vec::new(),
            pos: 0,
        }),
        Err(_) => Box::new(tokio::io::stdin()),
    }
}

/// Chunks of stdin from [`stdin_lines`]' thread as an `AsyncRead`; the end of the channel
/// is the end of the input.
struct ThreadStdin {
    rx: tokio::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    pos: usize,
}

impl tokio::io::AsyncRead for ThreadStdin {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        out: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        loop {
            if self.pos < self.chunk.len() {
                let n = out.remaining().min(self.chunk.len() - self.pos);
                out.put_slice(&self.chunk[self.pos..self.pos + n]);
                self.pos += n;
                return Poll::Ready(Ok(()));
            }
            match std::task::ready!(self.rx.poll_recv(cx)) {
                Some(Ok(chunk)) => {
                    self.chunk = chunk;
                    self.pos = 0;
                }
                Some(Err(e)) => return Poll::Ready(Err(e)),
                None => return Poll::Ready(Ok(())),
            }
        }
    }
}

/// Piped stdin, trimmed; `None` when empty.
async fn read_stdin() -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut text = String::new();
    tokio::io::stdin().read_to_string(&mut text).await.ok()?;
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// Runs blocking work (file reads) off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}
