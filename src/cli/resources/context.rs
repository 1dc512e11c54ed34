//! Context files (pi's `loadProjectContextFiles`): `AGENTS.md` or `CLAUDE.md` from the agent
//! directory and from each directory from the filesystem root down to the working directory.

use std::path::{Path, PathBuf};

use super::paths;
use super::types::{DiagnosticType, ResourceDiagnostic, ResourceKind};

/// One context file: the system prompt shows it as `## <path>` and its content.
///
/// ```
/// use pi_engine::cli::resources::ContextFile;
///
/// let f = ContextFile { path: "/p/AGENTS.md".into(), content: "Use tabs.".into() };
/// assert_eq!(f.path.to_str(), Some("/p/AGENTS.md"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// The file, as pi writes it in the prompt (the directory joined with the file name).
    pub path: PathBuf,
    /// Its text.
    pub content: String,
}

/// The names pi looks for, in order; the first that exists and can be read wins.
const CANDIDATES: [&str; 4] = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"];

fn load_from_dir(dir: &Path, diagnostics: &mut Vec<ResourceDiagnostic>) -> Option<ContextFile> {
    for name in CANDIDATES {
        let path = dir.join(name);
        if !path.exists() {
            continue;
        }
        match paths::read_text(&path) {
            Ok(content) => return Some(ContextFile { path, content }),
            // pi prints "Warning: Could not read <path>: <error>" and tries the next name.
            Err(e) => diagnostics.push(ResourceDiagnostic::new(
                ResourceKind::ContextFile,
                DiagnosticType::Warning,
                format!("Could not read {}: {e}", path.display()),
                Some(paths::text(&path)),
            )),
        }
    }
    None
}

/// The context files for `cwd` in pi's order: the agent directory's first, then the
/// ancestors' from the root down to `cwd` itself; a file reached twice counts once. Both
/// directories must be absolute and normalized.
pub(crate) fn load_context_files(
    cwd: &Path,
    agent_dir: &Path,
    diagnostics: &mut Vec<ResourceDiagnostic>,
) -> Vec<ContextFile> {
    let mut files = Vec::new();
    if let Some(global) = load_from_dir(agent_dir, diagnostics) {
        files.push(global);
    }
    let mut ancestors = Vec::new();
    for dir in cwd.ancestors() {
        if let Some(f) = load_from_dir(dir, diagnostics)
            && !files
                .iter()
                .chain(&ancestors)
                .any(|s: &ContextFile| s.path == f.path)
        {
            ancestors.push(f);
        }
    }
    files.extend(ancestors.into_iter().rev());
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_precedence_and_dedup() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let agent = root.join("agent");
        let cwd = root.join("a/b");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(agent.join("AGENTS.md"), "global").unwrap();
        std::fs::write(root.join("a/CLAUDE.md"), "claude a").unwrap();
        std::fs::write(cwd.join("CLAUDE.md"), "claude b").unwrap();
        std::fs::write(cwd.join("AGENTS.md"), "agents b").unwrap();
        // A directory of that name cannot be read: a warning, then the next name.
        std::fs::create_dir_all(root.join("AGENTS.md")).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "claude root").unwrap();
        let mut diags = Vec::new();
        let files = load_context_files(&cwd, &agent, &mut diags);
        let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(contents, ["global", "claude root", "claude a", "agents b"]);
        assert_eq!(diags.len(), 1);

        // The agent directory inside the tree: once, first.
        let files = load_context_files(&agent, &agent, &mut Vec::new());
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].content, "global");
    }
}
