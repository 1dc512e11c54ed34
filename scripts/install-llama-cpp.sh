#!/usr/bin/env bash
# Installs llama-cpp-python's OpenAI-compatible server (pinned; it compiles llama.cpp, a few
# minutes on 2 cores) into .llama-cpp/ (git-ignored), and writes a tiny random-weight model
# for it (scripts/tiny-gguf.py): the local server tests/local_servers.rs checks the README's
# llama-cpp-python entry against. Does nothing when both are there.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.3.36
if [ -x .llama-cpp/bin/python ] && [ -f .llama-cpp/tiny.gguf ] &&
  .llama-cpp/bin/pip show llama-cpp-python 2>/dev/null | grep -q "^Version: $version$"; then
  exit 0
fi
python3 -m venv .llama-cpp
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
  .llama-cpp/bin/pip install --quiet --disable-pip-version-check \
  "llama-cpp-python[server]==$version" "gguf==0.19.0" "numpy<3"
.llama-cpp/bin/python scripts/tiny-gguf.py .llama-cpp/tiny.gguf
