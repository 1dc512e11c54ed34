//! The tool sets pi has — coding (read, bash, edit, write), read-only (read, grep, find, ls),
//! all seven — built for one working directory with shared settings.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{
    BashOperations, BashTool, EditTool, FileSystem, FindTool, GrepTool, LocalFs, LsTool, ReadTool,
    WriteTool,
};
use crate::agent::AgentTool;

/// What `bash` does when the file tools are confined to a root: a shell cannot be confined by
/// checking paths, so the choice is explicit.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ConfinedBash {
    /// No `bash` in the sets: the agent can only touch files through the confined tools.
    Omit,
    /// `bash` runs on the local machine with the process's full access, **not confined**: the
    /// model can read and write anything the process can. Use only when that is acceptable.
    Unconfined,
    /// `bash` runs through these operations (a container, a sandbox, a remote machine), which
    /// do their own confinement.
    Operations(Arc<dyn BashOperations>),
}

/// Builds pi's built-in tools for one working directory.
///
/// ```
/// use pi_engine::tools::{BuiltinTools, ConfinedBash};
///
/// let coding = BuiltinTools::new("/work/project").coding();
/// let names: Vec<&str> = coding.iter().map(|t| t.name()).collect();
/// assert_eq!(names, ["read", "bash", "edit", "write"]);
///
/// // File tools confined to the project; no shell at all.
/// # let dir = tempfile::tempdir().unwrap();
/// let confined = BuiltinTools::confined(dir.path(), ConfinedBash::Omit).unwrap();
/// let names: Vec<String> = confined.all().iter().map(|t| t.name().to_owned()).collect();
/// assert_eq!(names, ["read", "edit", "write", "grep", "find", "ls"]);
/// ```
#[derive(Debug, Clone)]
pub struct BuiltinTools {
    cwd: PathBuf,
    fs: Arc<dyn FileSystem>,
    bash: Option<Arc<dyn BashOperations>>,
    omit_bash: bool,
    bash_timeout: Option<Duration>,
    model_accepts_images: bool,
}

impl BuiltinTools {
    /// The tools for `cwd` (relative paths resolve against it, `bash` runs in it), on the
    /// local machine, unconfined, as pi's are.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        BuiltinTools {
            cwd: cwd.into(),
            fs: Arc::new(LocalFs::new()),
            bash: None,
            omit_bash: false,
            bash_timeout: None,
            model_accepts_images: true,
        }
    }

    /// The tools for `root` as cwd, the file tools confined to it (a path resolving outside,
    /// through `..`, an absolute path or a symlink, is refused; see [`LocalFs::confined`]),
    /// and `bash` as `bash` says. Fails when `root` is not a directory.
    pub fn confined(root: impl AsRef<Path>, bash: ConfinedBash) -> io::Result<Self> {
        let fs = LocalFs::confined(root.as_ref())?;
        let mut tools = BuiltinTools::new(fs.root().unwrap_or(root.as_ref()).to_owned());
        tools.fs = Arc::new(fs);
        match bash {
            ConfinedBash::Omit => tools.omit_bash = true,
            ConfinedBash::Unconfined => {}
            ConfinedBash::Operations(ops) => tools.bash = Some(ops),
        }
        Ok(tools)
    }

    /// The file tools work through `fs` (a remote machine, an in-memory tree).
    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.fs = fs;
        self
    }

    /// `bash` runs through `ops` instead of the local shell.
    #[must_use]
    pub fn with_bash_operations(mut self, ops: Arc<dyn BashOperations>) -> Self {
        self.bash = Some(ops);
        self.omit_bash = false;
        self
    }

    /// A timeout for `bash` calls that give none (pi has none; neither has this by default).
    #[must_use]
    pub fn with_bash_default_timeout(mut self, timeout: Duration) -> Self {
        self.bash_timeout = Some(timeout);
        self
    }

    /// Tells `read` the model cannot see images (it adds pi's note to an image it reads).
    #[must_use]
    pub fn with_model_accepts_images(mut self, accepts: bool) -> Self {
        self.model_accepts_images = accepts;
        self
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// `read`.
    pub fn read(&self) -> ReadTool {
        ReadTool::new(&self.cwd)
            .with_fs(self.fs.clone())
            .with_model_accepts_images(self.model_accepts_images)
    }

    /// `write`.
    pub fn write(&self) -> WriteTool {
        WriteTool::new(&self.cwd).with_fs(self.fs.clone())
    }

    /// `edit`.
    pub fn edit(&self) -> EditTool {
        EditTool::new(&self.cwd).with_fs(self.fs.clone())
    }

    /// `bash`, or `None` when the tools are confined with [`ConfinedBash::Omit`].
    pub fn bash(&self) -> Option<BashTool> {
        if self.omit_bash {
            return None;
        }
        let mut bash = BashTool::new(&self.cwd);
        if let Some(ops) = &self.bash {
            bash = bash.with_operations(ops.clone());
        }
        if let Some(t) = self.bash_timeout {
            bash = bash.with_default_timeout(t);
        }
        Some(bash)
    }

    /// `grep`.
    pub fn grep(&self) -> GrepTool {
        GrepTool::new(&self.cwd).with_fs(self.fs.clone())
    }

    /// `find`.
    pub fn find(&self) -> FindTool {
        FindTool::new(&self.cwd).with_fs(self.fs.clone())
    }

    /// `ls`.
    pub fn ls(&self) -> LsTool {
        LsTool::new(&self.cwd).with_fs(self.fs.clone())
    }

    /// pi's coding set: read, bash, edit, write (pi's default tools).
    pub fn coding(&self) -> Vec<Arc<dyn AgentTool>> {
        let mut out: Vec<Arc<dyn AgentTool>> = vec![Arc::new(self.read())];
        if let Some(bash) = self.bash() {
            out.push(Arc::new(bash));
        }
        out.push(Arc::new(self.edit()));
        out.push(Arc::new(self.write()));
        out
    }

    /// pi's read-only set: read, grep, find, ls.
    pub fn read_only(&self) -> Vec<Arc<dyn AgentTool>> {
        vec![
            Arc::new(self.read()),
            Arc::new(self.grep()),
            Arc::new(self.find()),
            Arc::new(self.ls()),
        ]
    }

    /// All seven, in pi's order: read, bash, edit, write, grep, find, ls.
    pub fn all(&self) -> Vec<Arc<dyn AgentTool>> {
        let mut out = self.coding();
        out.push(Arc::new(self.grep()));
        out.push(Arc::new(self.find()));
        out.push(Arc::new(self.ls()));
        out
    }

    /// One tool by its name (`"read"`, …, `"ls"`); `None` for another name, or for `"bash"`
    /// when it is omitted.
    pub fn by_name(&self, name: &str) -> Option<Arc<dyn AgentTool>> {
        Some(match name {
            "read" => Arc::new(self.read()),
            "write" => Arc::new(self.write()),
            "edit" => Arc::new(self.edit()),
            "bash" => Arc::new(self.bash()?),
            "grep" => Arc::new(self.grep()),
            "find" => Arc::new(self.find()),
            "ls" => Arc::new(self.ls()),
            _ => return None,
        })
    }
}
