#!/usr/bin/env bash
# What extensions add to an AgentSession tool loop, in instructions (callgrind counts the
# same total for the same binary and inputs whatever else the machine is doing): a loop of
# TURNS turns on a scripted model with no extensions, with 10 that take part in the session
# but handle none of the loop's events (a command, a flag, a session_start handler each),
# and with 10 that also have tool_call, tool_result and context handlers changing nothing.
# Exits non-zero when the 10 bystanders cost LIMIT_PERCENT or more.
#
#   scripts/bench-extension-overhead.sh
#
# Environment (defaults): TURNS=1000, LIMIT_PERCENT=10.
set -euo pipefail
cd "$(dirname "$0")/.."

TURNS=${TURNS:-1000}
LIMIT_PERCENT=${LIMIT_PERCENT:-10}
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install -y valgrind" >&2; exit 2; }
cargo build --release --example extension_overhead >&2
bin=${CARGO_TARGET_DIR:-target}/release/examples/extension_overhead
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

count() {
  valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$bin" "$@" >/dev/null 2>"$out/log"
  grep -E '^(summary|totals):' "$out/cg" | tail -1 | awk '{print $2}'
}

none=$(count "$TURNS" 0)
bystanders=$(count "$TURNS" 10)
handling=$(count "$TURNS" 10 handling)
pct() { awk -v a="$1" -v b="$none" 'BEGIN { printf "%+.2f", (a - b) * 100 / b }'; }
per_turn() { awk -v a="$1" -v t="$TURNS" 'BEGIN { printf "%.0f", a / (t + 1) }'; }
printf 'instructions, %s turns (per turn):\n' "$TURNS"
printf '  no extensions:                         %s (%s)\n' "$none" "$(per_turn "$none")"
printf '  10 extensions not handling the loop:   %s (%s, %s%%)\n' "$bystanders" "$(per_turn "$bystanders")" "$(pct "$bystanders")"
printf '  10 extensions handling every turn:     %s (%s, %s%%)\n' "$handling" "$(per_turn "$handling")" "$(pct "$handling")"
awk -v a="$bystanders" -v b="$none" -v l="$LIMIT_PERCENT" 'BEGIN { exit !((a - b) * 100 / b < l) }' || {
  echo "10 bystander extensions cost ${LIMIT_PERCENT}% or more" >&2
  exit 1
}
