#!/bin/sh
# End-to-end test of continuous batching in `recur serve` on a tiny synthetic model: one server
# with batching (--max-seqs 4, --max-batch-tokens 16, --queue-size 3) against one with
# --batching off (tests/serve_batching_client.py says what is checked).
# Usage: serve_batching_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
SRC="$2"
. "$(dirname "$0")/serve_port.sh"
T="$(mktemp -d)"
ON=""
OFF=""
cleanup() { for p in $ON $OFF; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in on off; do echo "--- $f server stderr:" >&2; cat "$T/$f.err" >&2; done; exit 1; }

tiny_serve_model "$T/tiny.gguf" 8192 || fail "model new"
"$RECUR" serve -m "$T/tiny.gguf" --port 0 --threads 1 --max-seqs 4 --max-batch-tokens 16 --queue-size 3 \
  2> "$T/on.err" &
ON=$!
"$RECUR" serve -m "$T/tiny.gguf" --port 0 --threads 1 --batching off 2> "$T/off.err" &
OFF=$!
PORT_ON=$(serve_port "$T/on.err")
PORT_OFF=$(serve_port "$T/off.err")
[ -n "$PORT_ON" ] && [ -n "$PORT_OFF" ] || fail "no 'listening on' line"
grep -q "batching up to 4 sequences, 16 tokens per forward" "$T/on.err" || fail "batching not on"
grep -q "one sequence per worker" "$T/off.err" || fail "--batching off not honoured"
/usr/bin/python3 "$SRC/tests/serve_batching_client.py" "$PORT_ON" "$PORT_OFF" tiny 16 || fail "serve_batching_client.py"
echo "serve_batching_test: ok"
