# Sourced by scripts that run a command against the shared scripted mock server
# (conformance/mock_llm_server.py): a scratch directory `$work`, removed on exit with the
# server, and `start_mock_server MOCK_SCRIPT DELAY_S` that starts the server on `$PORT` (a
# free port unless set), logging requests to `$work/mock.jsonl`, and waits until it listens.
# Needs `$mock`, the server's path.
work=$(mktemp -d)
mock_pid=
cleanup() {
  if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

start_mock_server() {
  PORT=${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
  MOCK_PORT=$PORT MOCK_LOG=$work/mock.jsonl MOCK_SCRIPT=$1 MOCK_DELAY_S=$2 \
    python3 "$mock" 2>"$work/mock.log" &
  mock_pid=$!
  for _ in $(seq 1 100); do
    if python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2)' "$PORT" 2>/dev/null; then
      return 0
    fi
    sleep 0.05
  done
  echo "the mock server did not start on port $PORT (see $work/mock.log)" >&2
  return 1
}
