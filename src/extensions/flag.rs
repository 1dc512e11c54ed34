//! Command-line flags that extensions register (pi's `registerFlag`/`getFlag`).

/// The kind of a flag's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FlagKind {
    /// `--name` alone.
    Bool,
    /// `--name value`.
    String,
}

/// A flag's value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FlagValue {
    /// A boolean flag's value.
    Bool(bool),
    /// A string flag's value.
    String(String),
}

impl FlagValue {
    /// The boolean, for a boolean flag.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            FlagValue::Bool(b) => Some(*b),
            FlagValue::String(_) => None,
        }
    }

    /// The text, for a string flag.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            FlagValue::String(s) => Some(s),
            FlagValue::Bool(_) => None,
        }
    }
}

impl From<bool> for FlagValue {
    fn from(b: bool) -> Self {
        FlagValue::Bool(b)
    }
}

impl From<&str> for FlagValue {
    fn from(s: &str) -> Self {
        FlagValue::String(s.to_owned())
    }
}

impl From<String> for FlagValue {
    fn from(s: String) -> Self {
        FlagValue::String(s)
    }
}

/// A flag an extension registers: its name (without `--`), kind, description and default.
///
/// ```
/// use pi_engine::extensions::{Extension, Flag, FlagValue};
///
/// let ext = Extension::new("plan-mode", |pi| {
///     pi.register_flag(Flag::boolean("plan").with_description("Start in plan mode"));
///     pi.on_session_start(|_event, ctx| async move {
///         if ctx.flag("plan") == Some(FlagValue::Bool(true)) {
///             ctx.ui().set_status("plan-mode", Some("plan"));
///         }
///         Ok(())
///     });
/// });
/// # let _ = ext;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Flag {
    /// The name, without `--`.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// Its kind.
    pub kind: FlagKind,
    /// Its value when not given.
    pub default: Option<FlagValue>,
}

impl Flag {
    /// A boolean flag, `false` unless given.
    pub fn boolean(name: impl Into<String>) -> Self {
        Flag {
            name: name.into(),
            description: None,
            kind: FlagKind::Bool,
            default: Some(FlagValue::Bool(false)),
        }
    }

    /// A flag that takes a value, unset unless given.
    pub fn string(name: impl Into<String>) -> Self {
        Flag {
            name: name.into(),
            description: None,
            kind: FlagKind::String,
            default: None,
        }
    }

    /// Adds a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the value when the flag is not given.
    #[must_use]
    pub fn with_default(mut self, value: impl Into<FlagValue>) -> Self {
        self.default = Some(value.into());
        self
    }
}

/// A registered flag as a front end lists it: the flag and the extension that registered
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlagInfo {
    /// The flag.
    pub flag: Flag,
    /// The extension that registered it.
    pub extension: String,
}

impl FlagInfo {
    /// `flag`, registered by `extension`.
    pub fn new(flag: Flag, extension: impl Into<String>) -> Self {
        FlagInfo {
            flag,
            extension: extension.into(),
        }
    }
}
