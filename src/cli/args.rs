//! pi's command line, on `clap`: the built-in flags, pi's multi-letter short forms (`-nt`,
//! `-nbt`, …), `@file` arguments, and the flags extensions register — parsed in two passes,
//! since which extensions are loaded (`-e`) decides which flags exist.

use std::collections::BTreeMap;
use std::ffi::OsString;

use clap::{Arg, ArgAction, ArgMatches, Command};

use crate::extensions::{FlagInfo, FlagKind, FlagValue};
use crate::llm::thinking::ThinkingLevel;

/// How the command talks to its caller (`--mode`, `-p`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The final answer's text on stdout (`-p`, or `--mode text`).
    Text,
    /// Every event as a JSON line (`--mode json`).
    Json,
    /// pi's RPC protocol on stdin and stdout (`--mode rpc`).
    Rpc,
    /// The Agent Client Protocol (`--mode acp`).
    Acp,
}

/// The command line, parsed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Args {
    /// `--mode`.
    pub(crate) mode: Option<Mode>,
    /// `-p`/`--print`.
    pub(crate) print: bool,
    /// `-c`/`--continue`.
    pub(crate) continue_recent: bool,
    /// `-r`/`--resume`.
    pub(crate) resume: bool,
    /// `--provider`.
    pub(crate) provider: Option<String>,
    /// `--model`.
    pub(crate) model: Option<String>,
    /// `--api-key`.
    pub(crate) api_key: Option<String>,
    /// `--system-prompt`.
    pub(crate) system_prompt: Option<String>,
    /// `--append-system-prompt`, in order.
    pub(crate) append_system_prompt: Vec<String>,
    /// `--no-session`.
    pub(crate) no_session: bool,
    /// `--session`.
    pub(crate) session: Option<String>,
    /// `--fork`.
    pub(crate) fork: Option<String>,
    /// `--session-dir`.
    pub(crate) session_dir: Option<String>,
    /// `--models`, split at commas.
    pub(crate) models: Option<Vec<String>>,
    /// `--no-tools`.
    pub(crate) no_tools: bool,
    /// `--no-builtin-tools`.
    pub(crate) no_builtin_tools: bool,
    /// `--tools`, split at commas.
    pub(crate) tools: Option<Vec<String>>,
    /// `--thinking` (an invalid level is a warning, as pi).
    pub(crate) thinking: Option<ThinkingLevel>,
    /// `--export`.
    pub(crate) export: Option<String>,
    /// `-e`/`--extension`, in order.
    // Accepted as pi accepts it; pi-engine has no use for it (yet).
    #[allow(dead_code)]
    pub(crate) extensions: Vec<String>,
    /// `--no-extensions`.
    // Accepted as pi accepts it; pi-engine has no use for it (yet).
    #[allow(dead_code)]
    pub(crate) no_extensions: bool,
    /// `--skill`, in order.
    pub(crate) skills: Vec<String>,
    /// `--prompt-template`, in order.
    pub(crate) prompt_templates: Vec<String>,
    /// `--theme`, in order.
    // Accepted as pi accepts it; pi-engine has no use for it (yet).
    #[allow(dead_code)]
    pub(crate) themes: Vec<String>,
    /// `--no-skills`.
    pub(crate) no_skills: bool,
    /// `--no-prompt-templates`.
    pub(crate) no_prompt_templates: bool,
    /// `--no-themes`.
    // Accepted as pi accepts it; pi-engine has no use for it (yet).
    #[allow(dead_code)]
    pub(crate) no_themes: bool,
    /// `--no-context-files`.
    pub(crate) no_context_files: bool,
    /// `--list-models [search]`: `Some(None)` for every model.
    pub(crate) list_models: Option<Option<String>>,
    /// `--verbose`.
    // Accepted as pi accepts it; pi-engine has no use for it (yet).
    #[allow(dead_code)]
    pub(crate) verbose: bool,
    /// `--offline`.
    // Accepted as pi accepts it; pi-engine has no use for it (yet).
    #[allow(dead_code)]
    pub(crate) offline: bool,
    /// `--json-updates delta`: `message_update` lines without the partial message (this
    /// crate's; the default `full` is pi's).
    pub(crate) json_event_only: bool,
    /// `-h`/`--help`.
    pub(crate) help: bool,
    /// `-v`/`--version`.
    pub(crate) version: bool,
    /// `@file` arguments, without the `@`, in order.
    pub(crate) file_args: Vec<String>,
    /// The messages, in order.
    pub(crate) messages: Vec<String>,
    /// The values of the extensions' flags that were given.
    pub(crate) extension_flags: BTreeMap<String, FlagValue>,
    /// Warnings to print (pi's: an invalid `--thinking`).
    pub(crate) warnings: Vec<String>,
}

/// pi's multi-letter short flags, which `clap` (one letter after `-`) cannot declare.
const SHORT_ALIASES: &[(&str, &str)] = &[
    ("-nt", "--no-tools"),
    ("-nbt", "--no-builtin-tools"),
    ("-ne", "--no-extensions"),
    ("-ns", "--no-skills"),
    ("-np", "--no-prompt-templates"),
    ("-nc", "--no-context-files"),
];

/// The arguments with pi's multi-letter short flags spelled out. Everything after `--` is
/// left as it is.
fn expand_aliases(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut rest = false;
    for a in args {
        if rest {
            out.push(a.clone());
            continue;
        }
        if a == "--" {
            rest = true;
        }
        match SHORT_ALIASES.iter().find(|(short, _)| short == a) {
            Some((_, long)) => out.push((*long).to_owned()),
            None => out.push(a.clone()),
        }
    }
    out
}

/// The extensions given with `-e`/`--extension`, and `--no-extensions` (the first pass: the
/// extensions decide which flags the second pass accepts).
pub(crate) fn extension_args(args: &[String]) -> (Vec<String>, bool) {
    let args = expand_aliases(args);
    let mut extensions = Vec::new();
    let mut none = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--" => break,
            "-e" | "--extension" => {
                if let Some(v) = args.get(i + 1) {
                    extensions.push(v.clone());
                    i += 1;
                }
            }
            "--no-extensions" => none = true,
            _ => {
                if let Some(v) = a.strip_prefix("--extension=") {
                    extensions.push(v.to_owned());
                }
            }
        }
        i += 1;
    }
    (extensions, none)
}

fn flag(id: &'static str, long: &'static str, help: &'static str) -> Arg {
    Arg::new(id)
        .long(long)
        .action(ArgAction::SetTrue)
        .help(help)
}

fn value(id: &'static str, long: &'static str, name: &'static str, help: &'static str) -> Arg {
    Arg::new(id)
        .long(long)
        .value_name(name)
        .action(ArgAction::Set)
        .help(help)
}

fn values(id: &'static str, long: &'static str, name: &'static str, help: &'static str) -> Arg {
    Arg::new(id)
        .long(long)
        .value_name(name)
        .action(ArgAction::Append)
        .help(help)
}

/// The command line `clap` parses: pi's flags, and the flags of the loaded extensions.
pub(crate) fn command(extension_flags: &[FlagInfo]) -> Command {
    let mut cmd = Command::new("pi-engine")
        .about("AI coding assistant with read, bash, edit, write tools (pi's command, in Rust)")
        .version(env!("CARGO_PKG_VERSION"))
        .disable_help_flag(true)
        .disable_version_flag(true)
        .args([
            value("provider", "provider", "NAME", "Provider name"),
            value(
                "model",
                "model",
                "PATTERN",
                "Model pattern or ID (supports \"provider/id\" and optional \":<thinking>\")",
            ),
            value("api-key", "api-key", "KEY", "API key (defaults to env vars)"),
            value(
                "system-prompt",
                "system-prompt",
                "TEXT",
                "System prompt (default: coding assistant prompt)",
            ),
            values(
                "append-system-prompt",
                "append-system-prompt",
                "TEXT",
                "Append text or file contents to the system prompt (can be used multiple times)",
            ),
            value(
                "mode",
                "mode",
                "MODE",
                "Output mode: text (default), json, rpc or acp",
            )
            .value_parser(["text", "json", "rpc", "acp"]),
            flag(
                "print",
                "print",
                "Non-interactive mode: process prompt and exit",
            )
            .short('p'),
            flag("continue", "continue", "Continue previous session").short('c'),
            flag("resume", "resume", "Select a session to resume").short('r'),
            value(
                "session",
                "session",
                "PATH|ID",
                "Use specific session file or partial UUID",
            ),
            value(
                "fork",
                "fork",
                "PATH|ID",
                "Fork specific session file or partial UUID into a new session",
            ),
            value(
                "session-dir",
                "session-dir",
                "DIR",
                "Directory for session storage and lookup",
            ),
            flag("no-session", "no-session", "Don't save session (ephemeral)"),
            value(
                "models",
                "models",
                "PATTERNS",
                "Comma-separated model patterns for model cycling",
            ),
            flag(
                "no-tools",
                "no-tools",
                "Disable all tools by default (built-in and extension) [-nt]",
            ),
            flag(
                "no-builtin-tools",
                "no-builtin-tools",
                "Disable built-in tools by default but keep extension/custom tools enabled [-nbt]",
            ),
            value(
                "tools",
                "tools",
                "TOOLS",
                "Comma-separated allowlist of tool names to enable",
            )
            .short('t'),
            value(
                "thinking",
                "thinking",
                "LEVEL",
                "Set thinking level: off, minimal, low, medium, high, xhigh",
            ),
            value("export", "export", "FILE", "Export session file to HTML and exit"),
            values(
                "extension",
                "extension",
                "NAME|PATH",
                "Load an extension: a built-in one by name, or a program speaking the process extension protocol (can be used multiple times)",
            )
            .short('e'),
            flag(
                "no-extensions",
                "no-extensions",
                "Disable extension discovery (explicit -e still work) [-ne]",
            ),
            values(
                "skill",
                "skill",
                "PATH",
                "Load a skill file or directory (can be used multiple times)",
            ),
            flag(
                "no-skills",
                "no-skills",
                "Disable skills discovery and loading [-ns]",
            ),
            values(
                "prompt-template",
                "prompt-template",
                "PATH",
                "Load a prompt template file or directory (can be used multiple times)",
            ),
            flag(
                "no-prompt-templates",
                "no-prompt-templates",
                "Disable prompt template discovery and loading [-np]",
            ),
            values(
                "theme",
                "theme",
                "PATH",
                "Load a theme file or directory (can be used multiple times)",
            ),
            flag("no-themes", "no-themes", "Disable theme discovery and loading"),
            flag(
                "no-context-files",
                "no-context-files",
                "Disable AGENTS.md and CLAUDE.md discovery and loading [-nc]",
            ),
            Arg::new("list-models")
                .long("list-models")
                .value_name("SEARCH")
                .num_args(0..=1)
                .action(ArgAction::Set)
                .help("List available models (with optional fuzzy search)"),
            flag(
                "verbose",
                "verbose",
                "Force verbose startup (overrides quietStartup setting)",
            ),
            flag(
                "offline",
                "offline",
                "Disable startup network operations (same as PI_OFFLINE=1)",
            ),
            value(
                "json-updates",
                "json-updates",
                "full|delta",
                "With --mode json: message_update lines with the whole partial message (full, pi's) or only the event (delta: the output grows linearly with a reply)",
            )
            .value_parser(["full", "delta"]),
            flag("help", "help", "Show this help").short('h'),
            flag("version", "version", "Show version number").short('v'),
            Arg::new("inputs")
                .value_name("@FILES|MESSAGES")
                .num_args(0..)
                .action(ArgAction::Append)
                .trailing_var_arg(false)
                .help("Files to include (@path) and messages"),
        ]);
    for info in extension_flags {
        let f = &info.flag;
        // An extension flag that would shadow a built-in one is ignored (a warning is
        // printed by the caller); clap would panic on the duplicate.
        if cmd
            .get_arguments()
            .any(|a| a.get_long() == Some(f.name.as_str()))
        {
            continue;
        }
        let description = f
            .description
            .clone()
            .unwrap_or_else(|| format!("Registered by {}", info.extension));
        let arg = Arg::new(format!("ext:{}", f.name))
            .long(f.name.clone())
            .help(description)
            .help_heading("Extension flags");
        cmd = cmd.arg(match f.kind {
            FlagKind::String => arg.value_name("VALUE").action(ArgAction::Set),
            _ => arg.action(ArgAction::SetTrue),
        });
    }
    cmd
}

/// Parses the command line (without the program name). `extension_flags` are the flags the
/// loaded extensions registered.
///
/// # Errors
///
/// clap's error for an unknown flag, a missing value or an invalid `--mode`: its
/// `exit()` prints it and exits with 2.
pub(crate) fn parse(args: &[String], extension_flags: &[FlagInfo]) -> Result<Args, clap::Error> {
    let expanded = expand_aliases(args);
    let argv =
        std::iter::once(OsString::from("pi-engine")).chain(expanded.iter().map(OsString::from));
    let m = command(extension_flags).try_get_matches_from(argv)?;
    Ok(from_matches(&m, extension_flags))
}

/// Whether the argument `id` was on the command line (not a default).
fn given(m: &ArgMatches, id: &str) -> bool {
    m.try_contains_id(id).unwrap_or(false)
        && m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
}

fn from_matches(m: &ArgMatches, extension_flags: &[FlagInfo]) -> Args {
    let one = |id: &str| m.get_one::<String>(id).cloned();
    let many = |id: &str| {
        m.get_many::<String>(id)
            .map(|v| v.cloned().collect())
            .unwrap_or_default()
    };
    let on = |id: &str| m.get_flag(id);
    let split = |id: &str| {
        one(id).map(|s| {
            s.split(',')
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
        })
    };
    let mut args = Args {
        mode: one("mode").map(|m| match m.as_str() {
            "json" => Mode::Json,
            "rpc" => Mode::Rpc,
            "acp" => Mode::Acp,
            _ => Mode::Text,
        }),
        print: on("print"),
        continue_recent: on("continue"),
        resume: on("resume"),
        provider: one("provider"),
        model: one("model"),
        api_key: one("api-key"),
        system_prompt: one("system-prompt"),
        append_system_prompt: many("append-system-prompt"),
        no_session: on("no-session"),
        session: one("session"),
        fork: one("fork"),
        session_dir: one("session-dir"),
        // pi keeps the empty entries of `--models`; they match nothing.
        models: one("models").map(|s| s.split(',').map(|p| p.trim().to_owned()).collect()),
        no_tools: on("no-tools"),
        no_builtin_tools: on("no-builtin-tools"),
        tools: split("tools"),
        thinking: None,
        export: one("export"),
        extensions: many("extension"),
        no_extensions: on("no-extensions"),
        skills: many("skill"),
        prompt_templates: many("prompt-template"),
        themes: many("theme"),
        no_skills: on("no-skills"),
        no_prompt_templates: on("no-prompt-templates"),
        no_themes: on("no-themes"),
        no_context_files: on("no-context-files"),
        list_models: given(m, "list-models").then(|| one("list-models")),
        verbose: on("verbose"),
        offline: on("offline"),
        json_event_only: one("json-updates").as_deref() == Some("delta"),
        help: on("help"),
        version: on("version"),
        ..Args::default()
    };
    if let Some(level) = one("thinking") {
        match level.parse::<ThinkingLevel>() {
            Ok(l) => args.thinking = Some(l),
            Err(_) => args.warnings.push(format!(
                "Invalid thinking level \"{level}\". Valid values: off, minimal, low, medium, high, xhigh"
            )),
        }
    }
    for input in many("inputs") {
        match input.strip_prefix('@') {
            Some(path) => args.file_args.push(path.to_owned()),
            None => args.messages.push(input),
        }
    }
    for info in extension_flags {
        let id = format!("ext:{}", info.flag.name);
        if !given(m, &id) {
            continue;
        }
        let value = match info.flag.kind {
            FlagKind::String => m.get_one::<String>(&id).cloned().map(FlagValue::String),
            _ => Some(FlagValue::Bool(m.get_flag(&id))),
        };
        if let Some(v) = value {
            args.extension_flags.insert(info.flag.name.clone(), v);
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::Flag;

    fn parse_ok(args: &[&str]) -> Args {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        parse(&args, &[]).unwrap()
    }

    #[test]
    fn pis_flags_and_short_forms() {
        let a = parse_ok(&[
            "-p",
            "--model",
            "sonnet:high",
            "-nt",
            "-nc",
            "--tools",
            "read, grep,",
            "--models",
            "a,b",
            "@notes.md",
            "hello",
            "world",
        ]);
        assert!(a.print && a.no_tools && a.no_context_files);
        assert_eq!(a.model.as_deref(), Some("sonnet:high"));
        assert_eq!(a.tools.unwrap(), ["read", "grep"]);
        assert_eq!(a.models.unwrap(), ["a", "b"]);
        assert_eq!(a.file_args, ["notes.md"]);
        assert_eq!(a.messages, ["hello", "world"]);
    }

    #[test]
    fn list_models_with_and_without_a_search() {
        assert_eq!(parse_ok(&["--list-models"]).list_models, Some(None));
        assert_eq!(
            parse_ok(&["--list-models", "sonnet"]).list_models,
            Some(Some("sonnet".into()))
        );
        assert_eq!(parse_ok(&["hi"]).list_models, None);
    }

    #[test]
    fn an_invalid_thinking_level_is_a_warning() {
        let a = parse_ok(&["--thinking", "extreme"]);
        assert!(a.thinking.is_none());
        assert_eq!(a.warnings.len(), 1);
        assert_eq!(
            parse_ok(&["--thinking", "xhigh"]).thinking,
            Some(ThinkingLevel::Xhigh)
        );
    }

    #[test]
    fn unknown_flags_are_errors_unless_an_extension_registered_them() {
        let args: Vec<String> = ["--plan", "--team", "core", "go"]
            .iter()
            .map(|a| (*a).to_owned())
            .collect();
        let err = parse(&args, &[]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
        assert_eq!(err.exit_code(), 2);
        let flags = [
            FlagInfo::new(Flag::boolean("plan"), "plan-mode"),
            FlagInfo::new(Flag::string("team"), "teams"),
        ];
        let a = parse(&args, &flags).unwrap();
        assert_eq!(a.extension_flags["plan"], FlagValue::Bool(true));
        assert_eq!(a.extension_flags["team"], FlagValue::String("core".into()));
        assert_eq!(a.messages, ["go"]);
    }

    #[test]
    fn extensions_are_found_before_the_full_parse() {
        let args: Vec<String> = [
            "-e",
            "permission-gate",
            "--extension=./gate.py",
            "-ne",
            "--plan",
        ]
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
        assert_eq!(
            extension_args(&args),
            (
                vec!["permission-gate".to_owned(), "./gate.py".to_owned()],
                true
            )
        );
    }

    #[test]
    fn an_invalid_mode_is_a_usage_error() {
        let args = vec!["--mode".to_owned(), "xml".to_owned()];
        assert_eq!(parse(&args, &[]).unwrap_err().exit_code(), 2);
    }
}
