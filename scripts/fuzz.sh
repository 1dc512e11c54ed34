#!/usr/bin/env bash
# Coverage-guided fuzzing of every target in fuzz/ with libFuzzer (cargo-fuzz, nightly).
#
#   scripts/fuzz.sh [seconds-per-target] [target ...]
#
# Runs each target (all of them by default) for the given CPU time (default 1800 s), one at
# a time, starting from fuzz/corpus/<target>/; then merges what it found back into that
# corpus, minimized (only inputs that add edge coverage are kept). Prints per target:
# executions, coverage (libFuzzer's `cov:` edges and `ft:` features) and crashes. A crash
# leaves its input in fuzz/artifacts/<target>/ and makes the script exit 1; replay it with
#   cargo +nightly fuzz run --debug-assertions <target> fuzz/artifacts/<target>/<file>
# and, once fixed, commit it there: tests/fuzz_replay.rs replays fuzz/artifacts on stable.
#
# Needs: `cargo install cargo-fuzz` and a nightly toolchain. The build uses its own target
# directory (FUZZ_TARGET_DIR, default ../target-fuzz, beside the repository)
# because it is compiled with sanitizer flags.
set -euo pipefail

secs=${1:-1800}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tdir=${FUZZ_TARGET_DIR:-$root/../target-fuzz}
# Debug assertions on: overflow checks catch arithmetic that would wrap in release builds.
fuzz=(cargo +nightly fuzz)
opts=(--debug-assertions --target-dir "$tdir")
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <("${fuzz[@]}" list)
fi

# Built once: the runs below use these binaries (a source edit while the script runs does
# not rebuild in the middle).
"${fuzz[@]}" build "${opts[@]}"
bin=$tdir/$(rustc +nightly -vV | sed -n 's/^host: //p')/release
logs=$(mktemp -d)
# The session targets write a scratch file per input: in memory when possible (2x faster).
scratch=${TMPDIR:-/tmp}
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch=/dev/shm; fi
printf '%-28s %12s %8s %8s %8s %s\n' target executions cov ft crashes corpus
status=0
for t in "${targets[@]}"; do
    corpus=fuzz/corpus/$t
    found=$logs/$t.new
    mkdir -p "$corpus" "$found" "fuzz/artifacts/$t"
    before=$(find "fuzz/artifacts/$t" -type f | wc -l)
    # -max_total_time is wall time of one process on one core, i.e. its CPU time.
    set +e
    TMPDIR=$scratch "$bin/$t" -artifact_prefix="fuzz/artifacts/$t/" "$found" "$corpus" \
        -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        >"$logs/$t.log" 2>&1
    rc=$?
    set -e
    after=$(find "fuzz/artifacts/$t" -type f | wc -l)
    crashes=$((after - before))
    if [ $rc -ne 0 ] && [ $crashes -eq 0 ]; then crashes="?(rc=$rc)"; fi
    # Merge (minimize) the new inputs into the committed corpus: the fewest inputs that keep
    # every edge covered (-use_counters=0 ignores hit counts, which keeps the corpus a few
    # times smaller than the run's own).
    merged=$logs/$t.merged
    mkdir -p "$merged"
    TMPDIR=$scratch "$bin/$t" -merge=1 -use_counters=0 "$merged" "$corpus" "$found" \
        >"$logs/$t.merge.log" 2>&1 || true
    if [ -n "$(ls -A "$merged")" ]; then
        rm -f "$corpus"/*
        cp "$merged"/* "$corpus"/
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logs/$t.log" | grep -o '[0-9]*$' | tail -1)
    last=$(grep -E '#[0-9]+.*cov: ' "$logs/$t.log" | tail -1)
    cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
    printf '%-28s %12s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$crashes" \
        "$(ls "$corpus" | wc -l) files"
    if [ "$crashes" != 0 ]; then
        status=1
        grep -m1 -A3 -E 'panicked at|ERROR: libFuzzer' "$logs/$t.log" | sed 's/^/    /' || true
    fi
done
echo "logs: $logs"
exit $status
