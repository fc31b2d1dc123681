# Shared by tests that start `recur serve --port 0`: `. "$(dirname "$0")/serve_port.sh"`.
#   tiny_serve_model PATH CONTEXT  writes the tiny hybrid model these tests serve (dim 64, two
#                               layers "ka", vocab 400) with CONTEXT tokens; fails like `model new`
#   served_text_equals_generate SERVED EXPECTED_FROM NAME
#                               `recur serve -m SERVED`'s greedy completion of "Once upon a time"
#                               (6 tokens) must equal `recur generate -m EXPECTED_FROM`'s text; uses
#                               the caller's $RECUR, $T, fail and SERVER (the server's pid while up,
#                               for the caller's cleanup)
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

served_text_equals_generate() {
  "$RECUR" generate -m "$2" -p "Once upon a time" -n 6 --threads 1 --json > "$T/expected.json" 2>/dev/null \
    || fail "$3: generate -m $2"
  "$RECUR" serve -m "$1" --port 0 --workers 1 --threads 1 2> "$T/serve.err" &
  SERVER=$!
  PORT=$(serve_port "$T/serve.err")
  [ -n "$PORT" ] || fail "$3: serve -m $1: no 'listening on' line"
  curl -sf "http://127.0.0.1:$PORT/v1/completions" \
    -d "{\"model\":\"$3\",\"prompt\":\"Once upon a time\",\"max_tokens\":6,\"temperature\":0}" > "$T/completion.json" \
    || fail "$3: curl completion"
  /usr/bin/python3 - "$T/completion.json" "$T/expected.json" <<'PY' || fail "$3: served text differs: $(cat "$T/completion.json")"
import json, sys
got = json.load(open(sys.argv[1]))["choices"][0]["text"]
want = json.load(open(sys.argv[2]))["text"]
assert got == want, (got, want)
PY
  kill "$SERVER"; wait "$SERVER" 2>/dev/null; SERVER=""
  rm -f "$T/serve.err"
}
