#!/usr/bin/env bash
# Installs LiteLLM's proxy (pinned) into .litellm/ (git-ignored): the local server that
# tests/local_servers.rs (`cargo test -- --include-ignored`) starts to check the README's
# "Local servers" entry against a real LiteLLM. Does nothing when it is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
version=1.108.7
if [ -x .litellm/bin/litellm ] && .litellm/bin/pip show litellm 2>/dev/null | grep -q "^Version: $version$"; then
  exit 0
fi
python3 -m venv .litellm
.litellm/bin/pip install --quiet --disable-pip-version-check "litellm[proxy]==$version"
