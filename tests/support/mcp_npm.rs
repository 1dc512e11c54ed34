//! Where the MCP servers from npm are (`scripts/install-mcp-servers.sh` puts them in
//! `.mcp-npm/`), for the tests that run them; those are `#[ignore = "needs …"]` and `.ci/run`
//! installs the servers and runs them with `--include-ignored`.
#![allow(dead_code, unreachable_pub)] // Each test binary uses part of it.

use std::path::PathBuf;

/// The entry point (`dist/index.js`) of the reference server `@modelcontextprotocol/<name>`;
/// panics, saying how to install it, when it is missing.
pub fn server(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".mcp-npm/node_modules/@modelcontextprotocol")
        .join(name)
        .join("dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-mcp-servers.sh",
        path.display()
    );
    path
}
