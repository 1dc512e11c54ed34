//! What `get_commands` lists besides the extensions' commands: prompt templates and skills,
//! which the command's resource loader finds (pi's `RpcSlashCommand` and `SourceInfo`).

use serde::Serialize;

use crate::cli::resources;

/// What kind of command `get_commands` lists (pi's `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CommandSource {
    /// Registered by an extension (`pi.registerCommand`).
    Extension,
    /// A prompt template (a `.md` file; `/name args` expands it).
    Prompt,
    /// A skill (`/skill:name args` expands it).
    Skill,
}

/// Whose a resource is (pi's `SourceScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SourceScope {
    /// The user's (`~/.pi/agent/`).
    User,
    /// The project's (`.pi/`).
    Project,
    /// Given for this run only (a command-line path, a compiled-in extension).
    #[default]
    Temporary,
}

/// Where a resource comes from (pi's `SourceOrigin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[non_exhaustive]
pub enum SourceOrigin {
    /// From an installed package.
    #[serde(rename = "package")]
    Package,
    /// A file or directory of its own.
    #[default]
    #[serde(rename = "top-level")]
    TopLevel,
}

/// Where a command was loaded from (pi's `SourceInfo`):
/// `{"path","source","scope","origin","baseDir"?}`.
///
/// ```
/// use pi_engine::cli::rpc::{SourceInfo, SourceScope};
///
/// let info = SourceInfo::new("/home/me/.pi/agent/prompts/fix.md", "local")
///     .with_scope(SourceScope::User);
/// assert_eq!(
///     serde_json::to_value(&info).unwrap(),
///     serde_json::json!({"path": "/home/me/.pi/agent/prompts/fix.md", "source": "local",
///         "scope": "user", "origin": "top-level"})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SourceInfo {
    /// The file (or, for a compiled-in extension, its name).
    pub path: String,
    /// pi's `source`: `local`, a package name, `cli`, …
    pub source: String,
    /// Whose it is.
    pub scope: SourceScope,
    /// Package or top level.
    pub origin: SourceOrigin,
    /// The directory paths in it are relative to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
}

impl SourceInfo {
    /// `path` from `source`, scope `temporary`, origin `top-level`, no base directory (pi's
    /// `createSyntheticSourceInfo`).
    pub fn new(path: impl Into<String>, source: impl Into<String>) -> Self {
        SourceInfo {
            path: path.into(),
            source: source.into(),
            scope: SourceScope::default(),
            origin: SourceOrigin::default(),
            base_dir: None,
        }
    }

    /// Sets the scope.
    #[must_use]
    pub fn with_scope(mut self, scope: SourceScope) -> Self {
        self.scope = scope;
        self
    }

    /// Sets the origin.
    #[must_use]
    pub fn with_origin(mut self, origin: SourceOrigin) -> Self {
        self.origin = origin;
        self
    }

    /// Sets the base directory.
    #[must_use]
    pub fn with_base_dir(mut self, dir: impl Into<String>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// The source of a skill or prompt template as the resource loader reports it.
    ///
    /// ```
    /// use pi_engine::cli::{resources, rpc};
    ///
    /// let found = resources::SourceInfo::new("/p/.pi/prompts/fix.md", "auto", resources::SourceScope::Project);
    /// let info = rpc::SourceInfo::from_resource(&found);
    /// assert_eq!(serde_json::to_value(&info).unwrap(), serde_json::to_value(&found).unwrap());
    /// ```
    pub fn from_resource(info: &resources::SourceInfo) -> Self {
        SourceInfo {
            path: info.path.clone(),
            source: info.source.clone(),
            scope: match info.scope {
                resources::SourceScope::User => SourceScope::User,
                resources::SourceScope::Project => SourceScope::Project,
                resources::SourceScope::Temporary => SourceScope::Temporary,
            },
            origin: match info.origin {
                resources::SourceOrigin::TopLevel => SourceOrigin::TopLevel,
                resources::SourceOrigin::Package => SourceOrigin::Package,
            },
            base_dir: info.base_dir.clone(),
        }
    }
}

impl From<&resources::SourceInfo> for SourceInfo {
    fn from(info: &resources::SourceInfo) -> Self {
        SourceInfo::from_resource(info)
    }
}

/// One entry of `get_commands` (pi's `RpcSlashCommand`): `{"name","description"?,"source",
/// "sourceInfo"}`. Build prompt templates and skills with [`prompt_template`](Self::prompt_template)
/// and [`skill`](Self::skill) and give them to
/// [`RpcOptions::with_commands`](super::RpcOptions::with_commands); the extensions' commands
/// come from the session.
///
/// ```
/// use pi_engine::cli::rpc::{SlashCommand, SourceInfo};
///
/// let skill = SlashCommand::skill("brave-search", Some("Web search"), SourceInfo::new("/s/SKILL.md", "local"));
/// assert_eq!(skill.name, "skill:brave-search");
/// let v = serde_json::to_value(&skill).unwrap();
/// assert_eq!(v["source"], "skill");
/// assert_eq!(v["sourceInfo"]["path"], "/s/SKILL.md");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SlashCommand {
    /// The name to type after `/` (a skill's is `skill:<name>`).
    pub name: String,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What kind of command it is.
    pub source: CommandSource,
    /// Where it was loaded from.
    pub source_info: SourceInfo,
}

impl SlashCommand {
    /// A prompt template, invoked as `/name`.
    pub fn prompt_template(
        name: impl Into<String>,
        description: Option<&str>,
        source_info: SourceInfo,
    ) -> Self {
        SlashCommand {
            name: name.into(),
            description: description.map(str::to_owned),
            source: CommandSource::Prompt,
            source_info,
        }
    }

    /// A skill, invoked as `/skill:name`.
    pub fn skill(
        name: impl AsRef<str>,
        description: Option<&str>,
        source_info: SourceInfo,
    ) -> Self {
        SlashCommand {
            name: format!("skill:{}", name.as_ref()),
            description: description.map(str::to_owned),
            source: CommandSource::Skill,
            source_info,
        }
    }

    /// An extension's command (`extension` names it when no [`SourceInfo`] was given for
    /// it: `{"path": <name>, "source": "local", "scope": "temporary", "origin": "top-level"}`).
    pub(crate) fn extension(
        name: String,
        description: Option<String>,
        source_info: SourceInfo,
    ) -> Self {
        SlashCommand {
            name,
            description,
            source: CommandSource::Extension,
            source_info,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pis_shapes() {
        let t = SlashCommand::prompt_template(
            "fix-tests",
            None,
            SourceInfo::new("/p/fix-tests.md", "local")
                .with_scope(SourceScope::Project)
                .with_origin(SourceOrigin::Package)
                .with_base_dir("/p"),
        );
        assert_eq!(
            serde_json::to_value(&t).unwrap(),
            json!({"name": "fix-tests", "source": "prompt", "sourceInfo": {"path": "/p/fix-tests.md",
                "source": "local", "scope": "project", "origin": "package", "baseDir": "/p"}})
        );
        let e = SlashCommand::extension(
            "plan".into(),
            Some("Plan".into()),
            SourceInfo::new("plan-ext", "local"),
        );
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"name":"plan","description":"Plan","source":"extension","sourceInfo":{"path":"plan-ext","source":"local","scope":"temporary","origin":"top-level"}}"#
        );
    }
}
