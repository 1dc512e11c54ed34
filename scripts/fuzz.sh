#!/usr/bin/env bash
# Coverage-guided fuzzing of every target in fuzz/ with libFuzzer (cargo-fuzz, nightly).
#
#   scripts/fuzz.sh [cpu-seconds-per-target] [target ...]
#
# Runs each target (all of them by default) until it has used the given CPU time (default
# 1800 s), starting from fuzz/corpus/<target>/; then merges what it found back into that
# corpus, minimized (only inputs that add edge coverage are kept). The budget is CPU time,
# measured from the process (/proc/<pid>/stat), not wall time: on a machine shared with builds
# a run takes longer but fuzzes as much. FUZZ_JOBS=N runs N targets at a time (one core
# each; default 1). Prints per target: executions, CPU and wall seconds, coverage (libFuzzer's
# `cov:` edges and `ft:` features) and crashes. A crash leaves its input in
# fuzz/artifacts/<target>/ and makes the script exit 1; replay it with
#   cargo +nightly fuzz run --debug-assertions <target> fuzz/artifacts/<target>/<file>
# and, once fixed, commit it there: tests/fuzz_replay.rs replays fuzz/artifacts on stable.
# Inputs libFuzzer only reports as slow (`slow-unit-*`) are kept in the log directory, not
# counted as crashes; an input slower than FUZZ_INPUT_TIMEOUT seconds (default 60, wall time,
# so a loaded machine does not make false hangs) is a crash (`timeout-*`).
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
jobs=${FUZZ_JOBS:-1}
input_timeout=${FUZZ_INPUT_TIMEOUT:-60}
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
tick=$(getconf CLK_TCK)

# CPU seconds (user + system) used so far by process $1, or nothing once it is gone.
cpu_of() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    # Fields after the command name (which may hold spaces): utime is the 12th, stime the 13th.
    set -- ${stat##*) }
    echo $(( (${12} + ${13}) / tick ))
}

# Fuzzes target $1 for $secs CPU seconds, merges, writes its table row to $logs/$1.row.
run_target() {
    local t=$1 corpus=fuzz/corpus/$1 found=$logs/$1.new rc=0 used=0 start
    mkdir -p "$corpus" "$found" "fuzz/artifacts/$t" "$logs/$t.slow"
    local before
    before=$(find "fuzz/artifacts/$t" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
    start=$SECONDS
    # No wall-clock limit of libFuzzer's own: the watchdog below stops the run (SIGINT, after
    # which libFuzzer prints its final stats and exits with 72) when its CPU budget is used.
    TMPDIR=$scratch "$bin/$t" -artifact_prefix="fuzz/artifacts/$t/" "$found" "$corpus" \
        -print_final_stats=1 -timeout="$input_timeout" -rss_limit_mb=2048 \
        >"$logs/$t.log" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        used=$(cpu_of "$pid")
        if [ -n "$used" ] && [ "$used" -ge "$secs" ]; then
            kill -INT "$pid" 2>/dev/null || true
            break
        fi
        sleep 5
    done
    wait "$pid" || rc=$?
    local wall=$((SECONDS - start))
    mv fuzz/artifacts/"$t"/slow-unit-* "$logs/$t.slow/" 2>/dev/null || true
    local after crashes
    after=$(find "fuzz/artifacts/$t" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
    crashes=$((after - before))
    if [ $rc -ne 0 ] && [ $rc -ne 72 ] && [ $crashes -eq 0 ]; then crashes="?(rc=$rc)"; fi
    # Merge (minimize) the new inputs into the committed corpus: the fewest inputs that keep
    # every edge covered (-use_counters=0 ignores hit counts, which keeps the corpus a few
    # times smaller than the run's own).
    local merged=$logs/$t.merged
    mkdir -p "$merged"
    TMPDIR=$scratch "$bin/$t" -merge=1 -use_counters=0 "$merged" "$corpus" "$found" \
        >"$logs/$t.merge.log" 2>&1 || true
    if [ -n "$(ls -A "$merged")" ]; then
        rm -f "$corpus"/*
        cp "$merged"/* "$corpus"/
    fi
    local execs last cov ft
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logs/$t.log" | grep -o '[0-9]*$' | tail -1)
    last=$(grep -E '#[0-9]+.*cov: ' "$logs/$t.log" | tail -1)
    cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
    printf '%-28s %12s %8s %8s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${used:-?}" "$wall" \
        "${cov:-?}" "${ft:-?}" "$crashes" "$(ls "$corpus" | wc -l) files" >"$logs/$t.row"
    if [ "$crashes" != 0 ]; then
        grep -m1 -A3 -E 'panicked at|ERROR: libFuzzer' "$logs/$t.log" | sed 's/^/    /' >>"$logs/$t.row" || true
        return 1
    fi
}

printf '%-28s %12s %8s %8s %8s %8s %8s %s\n' target executions cpu_s wall_s cov ft crashes corpus
status=0
running=0
for t in "${targets[@]}"; do
    run_target "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n || status=1
        running=$((running - 1))
    fi
done
while [ "$running" -gt 0 ]; do
    wait -n || status=1
    running=$((running - 1))
done
for t in "${targets[@]}"; do cat "$logs/$t.row"; done
echo "logs: $logs"
exit $status
