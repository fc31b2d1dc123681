#!/bin/sh
# Hostile and careless clients against `recur serve` (tests/serve_hardening_client.py): slow
# headers, more streams than handler threads, an abandoned request, request deadlines, oversized
# declared, chunked and compressed bodies. /health must keep answering in milliseconds.
# Usage: serve_hardening_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
SRC="$2"
. "$(dirname "$0")/serve_port.sh"
T="$(mktemp -d)"
export RECUR_CACHE_DIR="$T"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill -9 "$SERVER" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- server stderr:" >&2; tail -20 "$T/serve.err" >&2; exit 1; }

tiny_serve_model "$T/tiny.gguf" 8192 || fail "model new"
printf 'k\n' > "$T/key"
"$RECUR" serve -m "$T/tiny.gguf" --port 0 --api-key-file "$T/key" --max-seqs 1 --queue-size 16 --threads 1 \
  --http-threads 4 --read-timeout-s 2 2> "$T/serve.err" &
SERVER=$!
PORT=$(serve_port "$T/serve.err")
[ -n "$PORT" ] || fail "no 'listening on' line"
/usr/bin/python3 "$SRC/tests/serve_hardening_client.py" "$PORT" k || fail "serve_hardening_client.py"
# The key came from the file, not the command line: a wrong one is refused.
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/models" -H "Authorization: Bearer kk")
[ "$code" = 401 ] || fail "wrong key: HTTP $code"
kill -TERM "$SERVER"
wait "$SERVER" || fail "exit status $? after SIGTERM"
SERVER=""
echo "serve_hardening_test: ok"
