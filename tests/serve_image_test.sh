#!/bin/sh
# End-to-end test of images in chat messages on a tiny synthetic model (dim 64): server A encodes
# images in process, server B through an encode worker (`recur serve --role encode`, --encode
# URL). curl holds a streamed chat with a PNG data: URI; tests/serve_image_client.py (Python's
# standard library) checks tokens, usage, A == B greedy, bad images (400) and POST /v1/encode.
# Usage: serve_image_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
SRC="$2"
. "$(dirname "$0")/serve_port.sh"
T="$(mktemp -d)"
PIDS=""
cleanup() { for p in $PIDS; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in a b enc; do [ -f "$T/$f.err" ] && { echo "--- $f stderr:" >&2; cat "$T/$f.err" >&2; }; done; exit 1; }
export RECUR_CACHE_DIR="$T/cache"  # the test's own 64-dim default encoder
: > "$T/enc.err"; : > "$T/a.err"; : > "$T/b.err"

tiny_serve_model "$T/tiny.gguf" 512 || fail "model new"
"$RECUR" serve --role encode -m "$T/tiny.gguf" --port 0 2> "$T/enc.err" &
PIDS="$PIDS $!"
PORT_ENC=$(serve_port "$T/enc.err")
[ -n "$PORT_ENC" ] || fail "encode worker: no 'listening on' line"
"$RECUR" serve -m "$T/tiny.gguf" --port 0 --threads 1 2> "$T/a.err" &
PIDS="$PIDS $!"
"$RECUR" serve -m "$T/tiny.gguf" --port 0 --threads 1 --encode "http://127.0.0.1:$PORT_ENC" 2> "$T/b.err" &
PIDS="$PIDS $!"
PORT_A=$(serve_port "$T/a.err")
PORT_B=$(serve_port "$T/b.err")
[ -n "$PORT_A" ] && [ -n "$PORT_B" ] || fail "no 'listening on' line"
grep -q "images: in process" "$T/a.err" || fail "server A does not encode in process"
grep -q "images: encode worker http://127.0.0.1:$PORT_ENC" "$T/b.err" || fail "server B does not use the encode worker"

# curl: a streamed chat with a 4x4 PNG.
PNG=$(/usr/bin/python3 "$SRC/tests/serve_image_client.py" png)
cat > "$T/body.json" <<JSON
{"model":"tiny","stream":true,"stream_options":{"include_usage":true},"max_tokens":4,"temperature":0,
 "messages":[{"role":"user","content":[{"type":"text","text":"what is in "},
  {"type":"image_url","image_url":{"url":"data:image/png;base64,$PNG"}},{"type":"text","text":"?"}]}]}
JSON
curl -sfN "http://127.0.0.1:$PORT_A/v1/chat/completions" -H 'Content-Type: application/json' \
  --data-binary @"$T/body.json" > "$T/curl.out" || fail "curl streamed chat"
grep -q '^data: \[DONE\]' "$T/curl.out" || fail "curl: no [DONE]: $(cat "$T/curl.out")"
grep -q '"completion_tokens":4' "$T/curl.out" || fail "curl: no usage with 4 completion tokens: $(cat "$T/curl.out")"
STATUS=$(curl -s -o "$T/bad.json" -w '%{http_code}' "http://127.0.0.1:$PORT_A/v1/chat/completions" \
  -d '{"model":"tiny","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}')
[ "$STATUS" = 400 ] || fail "truncated PNG: HTTP $STATUS"
grep -q '"code":"invalid_image"' "$T/bad.json" || fail "truncated PNG: $(cat "$T/bad.json")"

/usr/bin/python3 "$SRC/tests/serve_image_client.py" check "$PORT_A" "$PORT_B" "$PORT_ENC" || fail "serve_image_client.py"
echo "serve_image_test: ok"
