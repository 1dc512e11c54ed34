#!/usr/bin/env bash
# Records which functions a run of `pi-engine` executes, for the linker to lay them out
# together (build.rs passes the list as `--symbol-ordering-file`): the code a start-up touches
# then sits in a few pages instead of being scattered over the whole binary, and the
# process's peak RSS drops by about a third (scripts/bench-cli-startup.sh measures it).
#
#   scripts/gen-symbol-order.sh            # release-builds pi-engine first
#   BUILD=0 scripts/gen-symbol-order.sh    # uses target/release/pi-engine as it is
#
# Then build pi-engine again: the list takes effect at the next link.
#
# Runs `pi-engine --mode json "hi"` and `pi-engine -p "hi"` under valgrind's callgrind
# against the shared scripted mock server, and writes the mangled names of the functions
# they executed, in the order callgrind first met them, to src/bin/pi-engine.order.
# Names carry hashes of the build's configuration (the toolchain, the crate's features and
# dependencies, its metadata as Cargo computes it): regenerate the list after a change to
# those, or to what start-up runs. A name the build no longer has is skipped, so a stale list
# costs memory (scripts/bench-cli-startup.sh shows it), never correctness.
#
# Needs valgrind, python3 and the shared conformance suite (PI_SHARED, default ../shared).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-1}
PI_SHARED=${PI_SHARED:-$PWD/../shared}
target=${CARGO_TARGET_DIR:-target}
mock=$PI_SHARED/conformance/mock_llm_server.py
command -v valgrind >/dev/null || { echo "valgrind is missing" >&2; exit 2; }
[ -f "$mock" ] || { echo "no mock server at $mock (set PI_SHARED)" >&2; exit 2; }
if [ "$BUILD" = 1 ]; then
  cargo build --release --features cli --bin pi-engine >&2
fi
engine=$(realpath "$target/release/pi-engine")

# shellcheck source=scripts/lib/mock-server.sh
. scripts/lib/mock-server.sh
start_mock_server '[]' 0
mkdir -p "$work/agent" "$work/cwd"
sed "s#http://127.0.0.1:18080#http://127.0.0.1:$PORT#" "$PI_SHARED/conformance/pi/models.json" > "$work/agent/models.json"

n=0
for args in "--mode json" "-p"; do
  n=$((n + 1))
  # shellcheck disable=SC2086 # the mode's flags are words
  (cd "$work/cwd" && PI_CODING_AGENT_DIR=$work/agent PI_OFFLINE=1 valgrind --tool=callgrind \
    --demangle=no --callgrind-out-file="$work/cg.$n" \
    "$engine" --provider mock-anthropic --model mock-claude --no-session $args hi \
    >/dev/null 2>"$work/valgrind.$n.log") || { cat "$work/valgrind.$n.log" >&2; exit 1; }
done

python3 - "$work" "$n" src/bin/pi-engine.order <<'EOF'
import re, sys
work, runs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seen, order = set(), []
for n in range(1, runs + 1):
    names = {}
    for line in open(f"{work}/cg.{n}"):
        m = re.match(r"^c?fn=\((\d+)\)(?: (\S+))?", line)
        if not m:
            continue
        if m.group(2):
            names[m.group(1)] = m.group(2)
        # `fn=` lines are functions that ran (with costs of their own).
        if line.startswith("fn=") and m.group(1) in names:
            # Callgrind marks recursion depths (`name'2`); the symbol is the name before.
            name = names[m.group(1)].split("'")[0]
            # Rust's symbols (C and libc ones are not in this binary's .text to order).
            if name.startswith("_ZN") or name.startswith("_R"):
                if name not in seen:
                    seen.add(name)
                    order.append(name)
with open(out, "w") as f:
    f.write("\n".join(order) + "\n")
print(f"{len(order)} functions written to {out}", file=sys.stderr)
EOF
