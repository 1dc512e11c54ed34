#!/usr/bin/env bash
# Installs two MCP servers from npm into .mcp-npm/ (git-ignored), for tests/mcp.rs
# (`cargo test --features mcp --test mcp -- --include-ignored`): the reference servers
# @modelcontextprotocol/server-everything (stdio and streamable HTTP) and
# @modelcontextprotocol/server-filesystem (stdio). Pinned versions; does nothing when they
# are there.
set -euo pipefail
cd "$(dirname "$0")/.."
everything=2026.8.31
filesystem=2026.8.31
installed() {
  [ -f ".mcp-npm/node_modules/@modelcontextprotocol/$1/package.json" ] &&
    grep -q "\"version\": \"$2\"" ".mcp-npm/node_modules/@modelcontextprotocol/$1/package.json"
}
if installed server-everything "$everything" && installed server-filesystem "$filesystem"; then
  exit 0
fi
mkdir -p .mcp-npm
cd .mcp-npm
printf '{"name":"mcp-npm","private":true}' > package.json
pkgs="@modelcontextprotocol/server-everything@$everything @modelcontextprotocol/server-filesystem@$filesystem"
# Retried once: npm sometimes reports TAR_ENTRY_ERROR on a first install.
npm install --no-audit --no-fund $pkgs || npm install --no-audit --no-fund $pkgs
