# Shared by tests that start `recur serve --port 0`: `. "$(dirname "$0")/serve_port.sh"`.
#   serve_port ERRFILE   waits (up to 10 s) until the server's stderr names its port and /health
#                        answers; prints the port, or nothing when it never came up
serve_port() {
  for _ in $(seq 1 100); do
    port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$1")
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" >/dev/null && { echo "$port"; return; }
    sleep 0.1
  done
}
