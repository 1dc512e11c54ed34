#!/usr/bin/env bash
# The soak (not CI): many concurrent agents with tools against the in-process fault server of
# examples/soak.rs (anthropic-messages SSE on 127.0.0.1; per request 10% cut streams, 10%
# malformed events, 10% 429 with Retry-After, 5% stalls), for a fixed time. Builds the example
# in release, runs it under /usr/bin/time -v, and prints the figures: throughput, RSS over time
# and its peak, and whether every run ended with exactly one agent_end (exit status 1 if not).
#
#   scripts/soak.sh                       # 1000 agents, 600 s
#   scripts/soak.sh --agents 1000 --duration 60
#   SOAK_AGENTS=200 SOAK_DURATION_SECS=30 scripts/soak.sh
#
# SOAK_PROFILE picks the cargo profile (default release). The run stops by itself: after the
# duration, runs in flight get at most --drain seconds (default 120) to finish.
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${SOAK_PROFILE:-release}"
target="${CARGO_TARGET_DIR:-target}"
cargo build --quiet --profile "$profile" --example soak
bin="$target/$profile/examples/soak"

# 1000 agents hold ~2000 sockets (client and server ends) at once.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
if [ -x /usr/bin/time ]; then
    /usr/bin/time -v "$bin" "$@" 2>"$log" || status=$?
    grep -E "Maximum resident set size|Elapsed \(wall clock\)|Percent of CPU" "$log" | sed 's/^[[:space:]]*/time -v: /'
    grep -vE "^[[:space:]]" "$log" | grep -v "Command exited" >&2 || true
else
    "$bin" "$@" || status=$?
fi
exit "$status"
