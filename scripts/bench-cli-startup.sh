#!/usr/bin/env bash
# How soon `pi-engine` starts answering, beside pi on node: the time from starting
# `pi-engine --mode json "hi"` to its first `message_update` line, against
# `pi --mode json "hi"` (node .pi-npm/…/pi-coding-agent/dist/cli.js), both on the shared
# scripted mock server (conformance/mock_llm_server.py, a text-only reply), and each process's
# peak RSS (GNU time), beside the release conformance driver's (`conformance stream
# <request.json>`) streaming the same reply to the same request (pi-engine's own, taken from
# the mock server's log: pi's system prompt, the four tools, "hi"). Fresh processes,
# interleaved (pi, pi-engine, conformance, pi, …), after one warm-up round; prints medians
# (min–max) as a markdown table. The time to first line is measured from the spawn of
# /usr/bin/time (which then runs the command) to the line's arrival on the pipe.
# Goals: pi-engine's first update at least 10x sooner than pi's, its peak RSS within 1.2x of
# the conformance driver's; exits 1 when one is missed (CHECK=0: report only).
#
#   scripts/bench-cli-startup.sh
#   RUNS=10 scripts/bench-cli-startup.sh
#
# Needs node, python3, GNU time (/usr/bin/time: apt-get install -y time), pi's npm packages
# (scripts/install-pi-npm.sh) and the shared conformance suite.
#
# Environment (defaults):
#   RUNS=5               measured runs of each (after one warm-up round)
#   BUILD=1              release-build pi-engine and the conformance driver first (0: use them)
#   PI_SHARED=../shared  the shared material (conformance/mock_llm_server.py)
#   PI_NPM=.pi-npm       where pi's npm packages are
#   MOCK_DELAY_S=0       the mock server's pause between SSE events
#   PORT=                the mock server's port (default: a free one)
#   CHECK=1              exit 1 when a goal is missed
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
BUILD=${BUILD:-1}
PI_SHARED=${PI_SHARED:-$PWD/../shared}
PI_NPM=${PI_NPM:-$PWD/.pi-npm}
MOCK_DELAY_S=${MOCK_DELAY_S:-0}
CHECK=${CHECK:-1}
target=${CARGO_TARGET_DIR:-target}

mock=$PI_SHARED/conformance/mock_llm_server.py
pi_cli=$PI_NPM/node_modules/@mariozechner/pi-coding-agent/dist/cli.js
[ -f "$mock" ] || { echo "no mock server at $mock (set PI_SHARED)" >&2; exit 2; }
[ -f "$pi_cli" ] || { echo "pi is not installed at $PI_NPM: scripts/install-pi-npm.sh" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "GNU time is missing: apt-get install -y time" >&2; exit 2; }
command -v node >/dev/null || { echo "node is missing" >&2; exit 2; }

if [ "$BUILD" = 1 ]; then
  # One at a time: the conformance driver with its own (default) features, as it is built
  # for the differential suite.
  cargo build --release --example conformance >&2
  cargo build --release --features cli --bin pi-engine >&2
fi
engine=$(realpath -m "$target/release/pi-engine")
driver=$(realpath -m "$target/release/examples/conformance")
for b in "$engine" "$driver"; do
  [ -x "$b" ] || { echo "no $b (BUILD=1 builds it)" >&2; exit 2; }
done

# shellcheck source=scripts/lib/mock-server.sh
. scripts/lib/mock-server.sh
# The scripted mode with an empty script: every request gets the final text reply (no tool
# call), so each run is one request and one streamed reply.
start_mock_server '[]' "$MOCK_DELAY_S"

python3 - "$work" "$PORT" "$RUNS" "$CHECK" "$pi_cli" "$engine" "$driver" "$PI_SHARED" <<'EOF'
import json, os, shutil, statistics, subprocess, sys, time

work, port, runs, check, pi_cli, engine, driver, shared = sys.argv[1:9]
runs = int(runs)
url = f"http://127.0.0.1:{port}"

models = open(os.path.join(shared, "conformance/pi/models.json")).read().replace("http://127.0.0.1:18080", url)
model = json.loads(models)["providers"]["mock-anthropic"]

def write_request():
    """The conformance driver's request: the one pi-engine made (its system prompt, its
    tools, "hi", thinking at pi's default level), in the contract's shape."""
    body = None
    for line in open(os.path.join(work, "mock.jsonl")):
        body = json.loads(line)["body"]
    request = {
        "model": dict(model["models"][0], name="mock-claude", api="anthropic-messages",
                      provider="mock-anthropic", baseUrl=url, input=["text"]),
        "context": {
            "systemPrompt": "".join(b["text"] for b in body["system"]),
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 0}],
            "tools": [{"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}
                      for t in body["tools"]],
        },
        "options": {"apiKey": "dummy", "reasoning": "medium"},
    }
    with open(os.path.join(work, "request.json"), "w") as f:
        json.dump(request, f)

def home():
    """A fresh agent dir (models.json only) and an empty working directory."""
    root = os.path.join(work, "home")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "agent"))
    os.makedirs(os.path.join(root, "cwd"))
    with open(os.path.join(root, "agent/models.json"), "w") as f:
        f.write(models)
    return root

model_args = ["--provider", "mock-anthropic", "--model", "mock-claude", "--mode", "json", "hi"]
impls = {
    "pi (node)": (["node", pi_cli] + model_args, '"type":"message_update"'),
    "pi-engine": ([engine] + model_args, '"type":"message_update"'),
    "conformance stream": ([driver, "stream", os.path.join(work, "request.json")], '"type":"text_start"'),
}

def run(name):
    argv, marker = impls[name]
    root = home()
    env = dict(os.environ, PI_CODING_AGENT_DIR=os.path.join(root, "agent"), PI_OFFLINE="1")
    timing = os.path.join(work, "time.txt")
    t0 = time.perf_counter()
    p = subprocess.Popen(["/usr/bin/time", "-v", "-o", timing] + argv, cwd=os.path.join(root, "cwd"),
                         env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = None
    lines = 0
    for line in p.stdout:
        lines += 1
        if first is None and marker.encode() in line:
            first = time.perf_counter() - t0
    err = p.stderr.read()
    code = p.wait()
    total = time.perf_counter() - t0
    rss = None
    for l in open(timing):
        if "Maximum resident set size" in l:
            rss = int(l.split(":")[1]) / 1024
    if code != 0 or first is None:
        sys.exit(f"{name} failed (exit {code}, {lines} lines, no {marker}):\n{err.decode(errors='replace')[-2000:]}")
    return first * 1000, total * 1000, rss

results = {name: [] for name in impls}
# Warm-up (page cache, node's compile cache); pi-engine's request becomes the driver's.
run("pi (node)")
run("pi-engine")
write_request()
run("conformance stream")
for r in range(runs):
    for name in impls:
        results[name].append(run(name))
        print(f"run {r + 1}/{runs} {name}: first {results[name][-1][0]:.1f} ms, exit {results[name][-1][1]:.1f} ms, "
              f"peak RSS {results[name][-1][2]:.1f} MiB", file=sys.stderr, flush=True)

def med(name, i):
    return statistics.median(x[i] for x in results[name])

def cell(name, i, unit, digits=1):
    xs = [x[i] for x in results[name]]
    return f"{statistics.median(xs):.{digits}f} {unit} ({min(xs):.{digits}f}–{max(xs):.{digits}f})"

print(f"{runs} runs each, medians (min–max); the shared mock server, one text reply "
      f"(MOCK_SCRIPT='[]'); the driver streams pi-engine's own request")
print()
print("| | first `message_update` | process exit | peak RSS |")
print("|---|---|---|---|")
for name in impls:
    first = cell(name, 0, "ms") if name != "conformance stream" else cell(name, 0, "ms") + " (`text_start`)"
    print(f"| {name} | {first} | {cell(name, 1, 'ms')} | {cell(name, 2, 'MiB')} |")
speedup = med("pi (node)", 0) / med("pi-engine", 0)
rss_ratio = med("pi-engine", 2) / med("conformance stream", 2)
print()
print(f"first update: pi-engine {speedup:.1f}x sooner than pi (goal: 10x); "
      f"peak RSS: pi-engine {rss_ratio:.2f}x the conformance driver's (goal: at most 1.2x), "
      f"{med('pi (node)', 2) / med('pi-engine', 2):.1f}x less than pi's")
missed = []
if speedup < 10:
    missed.append("first update < 10x sooner")
if rss_ratio > 1.2:
    missed.append("peak RSS > 1.2x")
if missed:
    print("goal missed: " + "; ".join(missed))
    if check == "1":
        sys.exit(1)
EOF
