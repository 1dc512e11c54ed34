#!/usr/bin/env bash
# Regenerates tests/fixtures/extensions/golden/ from pi itself: each scenario of
# tests/fixtures/extensions/scenarios.json runs through pi 0.73.1 (`pi --mode rpc -e <pi's example
# extension>` against the shared suite's scripted mock LLM server, via its run-pi-extension.mjs),
# and the transcript pi produced becomes the golden the Rust ports are compared with. Needs node,
# python3, git, pi's npm packages (scripts/install-pi-npm.sh) and the shared conformance suite
# ($PI_SHARED, default ../shared). Check that no golden has a `failure`, and run it twice: the
# goldens must not change.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${PI_SHARED:-$PWD/../shared}
export PI_NPM=${PI_NPM:-$PWD/.pi-npm}
python3 "$shared/conformance/run_extensions.py" \
  --driver "node $shared/conformance/extensions/run-pi-extension.mjs" \
  --scenarios tests/fixtures/extensions/scenarios.json \
  --golden tests/fixtures/extensions/golden \
  --make-golden
