#!/usr/bin/env bash
# The `bash` tool's memory when a command prints a lot: runs one `bash` call that prints
# 100 MB (`yes aaaaaaaaa | head -c 100000000`) through the release conformance driver
# (`conformance tool <request.json>`) under GNU time, prints the driver's peak RSS and wall
# time, and checks that the full-output log the tool names (`details.fullOutputPath`) holds
# every byte the command printed. Exits non-zero when the peak RSS reaches the limit (64 MiB),
# or when the call fails or the log is incomplete.
#
#   cargo build --release --example conformance
#   scripts/bench-bash-memory.sh
#
# Environment (defaults):
#   DRIVER=${CARGO_TARGET_DIR:-target}/release/examples/conformance
#   BYTES=100000000    what the command prints
#   LIMIT_MB=64        peak RSS limit, MiB
#   RUNS=1             runs; the figures printed are each run's and the largest peak
set -euo pipefail
cd "$(dirname "$0")/.."

DRIVER=${DRIVER:-${CARGO_TARGET_DIR:-target}/release/examples/conformance}
BYTES=${BYTES:-100000000}
LIMIT_MB=${LIMIT_MB:-64}
RUNS=${RUNS:-1}

if [ ! -x "$DRIVER" ]; then
  echo "no driver at $DRIVER: cargo build --release --example conformance (or set DRIVER)" >&2
  exit 2
fi
if [ ! -x /usr/bin/time ]; then
  echo "GNU time is missing: apt-get install -y time" >&2
  exit 2
fi

mib() { awk -v kb="$1" 'BEGIN {printf "%.1f", kb / 1024}'; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
command="yes aaaaaaaaa | head -c $BYTES"
python3 -c 'import json, sys; print(json.dumps({"tool": "bash", "cwd": sys.argv[1], "args": {"command": sys.argv[2]}}))' \
  "$work" "$command" > "$work/request.json"

worst_kb=0
status=0
for run in $(seq 1 "$RUNS"); do
  /usr/bin/time -v -o "$work/time.txt" "$DRIVER" tool "$work/request.json" > "$work/out.json"
  rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
  wall=$(awk -F': ' '/Elapsed \(wall clock\) time/ {print $2}' "$work/time.txt")
  cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u + s}' "$work/time.txt")
  # The call's result: not an error, and the full output's log path.
  log=$(python3 - "$work/out.json" <<'EOF'
import json, sys
out = json.load(open(sys.argv[1]))
if out.get("isError"):
    sys.exit("bash call failed: " + "".join(c.get("text", "") for c in out["content"])[-500:])
print(((out.get("details") or {}).get("fullOutputPath")) or "")
EOF
  )
  if [ -z "$log" ] || [ ! -f "$log" ]; then
    echo "run $run: no full-output log in the result (details.fullOutputPath)" >&2
    status=1
    continue
  fi
  logged=$(stat -c %s "$log")
  if [ "$logged" = "$BYTES" ] && cmp -s "$log" <(yes aaaaaaaaa | head -c "$BYTES"); then
    complete="complete"
  else
    complete="INCOMPLETE"
    status=1
  fi
  rm -f "$log"
  printf 'run %s: printed %s bytes; peak RSS %s MiB; wall %s; cpu %s s; full-output log %s bytes (%s)\n' \
    "$run" "$BYTES" "$(mib "$rss_kb")" "$wall" "$cpu" "$logged" "$complete"
  if [ "$rss_kb" -gt "$worst_kb" ]; then worst_kb=$rss_kb; fi
done

limit_kb=$((LIMIT_MB * 1024))
if [ "$worst_kb" -ge "$limit_kb" ]; then
  printf 'FAIL: peak RSS %s MiB >= %s MiB\n' "$(mib "$worst_kb")" "$LIMIT_MB"
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "FAIL: see above"
  exit 1
fi
printf 'ok: peak RSS %s MiB < %s MiB\n' "$(mib "$worst_kb")" "$LIMIT_MB"
