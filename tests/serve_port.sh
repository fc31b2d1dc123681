# Shared by tests that start `recur serve --port 0`: `. "$(dirname "$0")/serve_port.sh"`.
#   tiny_serve_model PATH CONTEXT  writes the tiny hybrid model these tests serve (dim 64, two
#                               layers "ka", vocab 400) with CONTEXT tokens; fails like `model new`
#   serve_port ERRFILE [HOST]   waits (up to 30 s: start-up under a loaded CI machine) until the server's stderr names its port on HOST
#                               (127.0.0.1) and /health answers; prints the port, or nothing when
#                               it never came up
serve_port() {
  host="${2:-127.0.0.1}"
  for _ in $(seq 1 300); do
    port=$(sed -n "s|^listening on http://$host:\([0-9]*\).*|\1|p" "$1")
    [ -n "$port" ] && curl -sf "http://$host:$port/health" >/dev/null && { echo "$port"; return; }
    sleep 0.1
  done
}

tiny_serve_model() {
  "$RECUR" model new "$1" --arch hybrid --dim 64 --layers 2 --heads 4 --kda-head-dim 16 --vocab 400 \
    --context "$2" --pattern ka >/dev/null 2>&1
}
