//! What the loader reports besides the resources: where each came from, and what was wrong.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a skill or prompt template came from (pi's `SourceInfo`, as RPC's `get_commands`
/// shows it).
///
/// ```
/// use pi_engine::cli::resources::{SourceInfo, SourceScope};
///
/// let info = SourceInfo::new("/p/.pi/prompts/fix.md", "auto", SourceScope::Project)
///     .with_base_dir("/p/.pi");
/// assert_eq!(
///     serde_json::to_value(&info).unwrap(),
///     serde_json::json!({"path": "/p/.pi/prompts/fix.md", "source": "auto", "scope": "project",
///                        "origin": "top-level", "baseDir": "/p/.pi"})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    /// The resource's file.
    pub path: String,
    /// How it was found: `"auto"` (discovered in a standard directory), `"local"` (a path in
    /// settings or on the command line), or another of pi's values.
    pub source: String,
    /// Whose it is.
    pub scope: SourceScope,
    /// Top-level or from a package.
    pub origin: SourceOrigin,
    /// The directory it is relative to, when pi records one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
}

impl SourceInfo {
    /// A top-level source without a base directory.
    pub fn new(path: impl Into<String>, source: impl Into<String>, scope: SourceScope) -> Self {
        SourceInfo {
            path: path.into(),
            source: source.into(),
            scope,
            origin: SourceOrigin::TopLevel,
            base_dir: None,
        }
    }

    /// Sets the base directory.
    pub fn with_base_dir(mut self, dir: impl Into<String>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }
}

/// Whose a resource is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceScope {
    /// The user's: the agent directory, `~/.agents`, the global settings.
    User,
    /// The project's: `.pi/` in the working directory, `.agents/` in it or its ancestors, the
    /// project settings.
    Project,
    /// Neither: a path given for this run.
    Temporary,
}

/// Whether a resource is the user's own or came with a package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SourceOrigin {
    /// Not from a package.
    #[serde(rename = "top-level")]
    TopLevel,
    /// From a pi package.
    #[serde(rename = "package")]
    Package,
}

/// How bad a [`ResourceDiagnostic`] is (pi's diagnostic `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiagnosticType {
    /// The resource loaded with a problem, or a file was skipped.
    Warning,
    /// A path that was asked for does not exist.
    Error,
    /// Two resources with one name: the first one found is kept.
    Collision,
}

/// Which kind of resource a diagnostic is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceKind {
    /// A skill (`SKILL.md` or a skill path).
    Skill,
    /// A prompt template.
    PromptTemplate,
    /// A context file (`AGENTS.md`, `CLAUDE.md`).
    ContextFile,
    /// A system prompt file (`--system-prompt`, `SYSTEM.md`, `APPEND_SYSTEM.md`).
    SystemPrompt,
}

/// Two resources with the same name (pi's `collision`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Collision {
    /// `"skill"` or `"prompt"`.
    pub resource_type: String,
    /// The name both have.
    pub name: String,
    /// The file that was kept.
    pub winner_path: String,
    /// The file that was left out.
    pub loser_path: String,
}

/// A problem with a resource file: pi's `ResourceDiagnostic` (serialized as pi's), plus the
/// kind of resource. A bad file never fails the load; it is left out or loaded as pi does,
/// with one of these naming it.
///
/// ```
/// use pi_engine::cli::resources::{DiagnosticType, ResourceDiagnostic, ResourceKind};
///
/// let d = ResourceDiagnostic::new(ResourceKind::Skill, DiagnosticType::Warning,
///                                 "description is required", Some("/s/x/SKILL.md".into()));
/// assert_eq!(d.to_string(), "warning: description is required (/s/x/SKILL.md)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceDiagnostic {
    /// How bad it is.
    #[serde(rename = "type")]
    pub kind: DiagnosticType,
    /// pi's message.
    pub message: String,
    /// The file or path concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For a collision, the two files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collision: Option<Collision>,
    /// What kind of resource it is about (not in pi's JSON).
    #[serde(skip)]
    pub resource: ResourceKind,
}

impl ResourceDiagnostic {
    /// A diagnostic without a collision.
    pub fn new(
        resource: ResourceKind,
        kind: DiagnosticType,
        message: impl Into<String>,
        path: Option<String>,
    ) -> Self {
        ResourceDiagnostic {
            kind,
            message: message.into(),
            path,
            collision: None,
            resource,
        }
    }

    /// pi's collision of two resources named `name`: `loser` is left out for `winner`.
    /// `resource_type` is pi's (`"skill"`, `"prompt"`).
    pub(crate) fn collision(
        resource: ResourceKind,
        resource_type: &str,
        message: String,
        name: &str,
        winner: &std::path::Path,
        loser: &std::path::Path,
    ) -> Self {
        let loser = super::paths::text(loser);
        ResourceDiagnostic {
            kind: DiagnosticType::Collision,
            message,
            path: Some(loser.clone()),
            collision: Some(Collision {
                resource_type: resource_type.to_owned(),
                name: name.to_owned(),
                winner_path: super::paths::text(winner),
                loser_path: loser,
            }),
            resource,
        }
    }

    pub(crate) fn warning(resource: ResourceKind, message: impl Into<String>, path: &str) -> Self {
        Self::new(
            resource,
            DiagnosticType::Warning,
            message,
            Some(path.to_owned()),
        )
    }
}

impl fmt::Display for ResourceDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            DiagnosticType::Warning => "warning",
            DiagnosticType::Error => "error",
            DiagnosticType::Collision => "collision",
        };
        write!(f, "{kind}: {}", self.message)?;
        if let Some(p) = &self.path {
            write!(f, " ({p})")?;
        }
        Ok(())
    }
}
