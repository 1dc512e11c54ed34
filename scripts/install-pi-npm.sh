#!/usr/bin/env bash
# Installs pi 0.73.1's npm packages into .pi-npm/ (git-ignored): the reference that the
# interop and differential tests (`cargo test -- --include-ignored`) and the generated-data
# checks run with node; and the official ACP client library (@agentclientprotocol/sdk) that
# tests/cli_acp.rs drives `pi-engine --mode acp` with. Does nothing when they are there.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f .pi-npm/node_modules/@mariozechner/pi-coding-agent/package.json ] &&
  [ -f .pi-npm/node_modules/@mariozechner/pi-ai/package.json ] &&
  [ -f .pi-npm/node_modules/@agentclientprotocol/sdk/package.json ]; then
  exit 0
fi
mkdir -p .pi-npm
cd .pi-npm
printf '{"name":"pi-npm","private":true}' > package.json
pkgs="@mariozechner/pi-ai@0.73.1 @mariozechner/pi-agent-core@0.73.1 @mariozechner/pi-coding-agent@0.73.1 @agentclientprotocol/sdk@2.4.0"
# Retried once: npm sometimes reports TAR_ENTRY_ERROR on a first install.
npm install --no-audit --no-fund $pkgs || npm install --no-audit --no-fund $pkgs
