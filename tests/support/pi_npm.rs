//! Where pi's npm packages are, for the tests that run pi itself with node. Those tests are
//! `#[ignore = "needs node and pi's npm packages …"]`: a fresh machine's `cargo test` lists them
//! as ignored, and `.ci/run` installs the packages (`scripts/install-pi-npm.sh`) and runs them
//! with `--include-ignored`. Run without the packages, they fail saying what is missing.
#![allow(dead_code, unreachable_pub)] // Each test binary uses part of it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The reason given by every test that runs pi (keep the `#[ignore]` attributes in step).
pub const NEEDS: &str = "needs node and pi's npm packages (scripts/install-pi-npm.sh)";

/// The `node_modules` folder holding `package` (e.g. `@mariozechner/pi-coding-agent`):
/// `$PI_NPM/node_modules`, else `.pi-npm/node_modules`. Panics, saying what is missing,
/// when node or the package is not installed.
pub fn require(package: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut candidates = vec![root.join(".pi-npm/node_modules")];
    if let Ok(p) = std::env::var("PI_NPM") {
        candidates.insert(0, Path::new(&p).join("node_modules"));
    }
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(node, "{NEEDS}: node is not installed");
    candidates
        .into_iter()
        .find(|d| d.join(package).join("package.json").exists())
        .unwrap_or_else(|| panic!("{NEEDS}: {package} is not installed in .pi-npm/ or $PI_NPM"))
}

/// `node tests/support/<script>` with `PI_NPM_MODULES=modules`: one of the drivers that run
/// pi's own functions. (A caller that clears the environment sets the variable again.)
pub fn node_script(script: &str, modules: &Path) -> Command {
    let mut command = Command::new("node");
    command
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/support")
                .join(script),
        )
        .env("PI_NPM_MODULES", modules);
    command
}

/// Runs `command` to its end and returns its stdout; panics with its stderr when it fails.
pub fn stdout_of(command: &mut Command) -> Vec<u8> {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "pi failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
