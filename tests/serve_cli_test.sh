#!/bin/sh
# End-to-end test of `recur serve` and `recur loadgen` on a tiny synthetic model: health, auth,
# completions, a streamed chat equal to `recur generate` (greedy), bad requests, body limit, 429
# under overload, a client that disconnects mid-stream, loadgen runs (by count and by duration), and SIGTERM.
# Usage: serve_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
SRC="$2"
. "$(dirname "$0")/serve_port.sh"
T="$(mktemp -d)"
export RECUR_CACHE_DIR="$T"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill -9 "$SERVER" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- server stderr:" >&2; cat "$T/serve.err" >&2; exit 1; }

# Long context so that one request can outlast the overload checks; small dims keep it fast.
# --max-seqs 1: the batching scheduler runs one sequence, so a second request waits in the queue.
tiny_serve_model "$T/tiny.gguf" 8192 || fail "model new"
"$RECUR" generate -m "$T/tiny.gguf" -p "<|user|>
Hello
<|assistant|>
" -n 12 --threads 1 --json > "$T/expected.json" 2>/dev/null || fail "recur generate"

"$RECUR" serve -m "$T/tiny.gguf" --port 0 --api-key sekrit --workers 1 --max-seqs 1 --queue-size 1 --threads 1 2> "$T/serve.err" &
SERVER=$!
PORT=$(serve_port "$T/serve.err")
[ -n "$PORT" ] || fail "no 'listening on' line"
URL="http://127.0.0.1:$PORT"

# curl: a non-streamed completion.
curl -sf "$URL/v1/completions" -H "Authorization: Bearer sekrit" \
  -d '{"model":"tiny","prompt":"Once upon a time","max_tokens":4,"temperature":0}' > "$T/completion.json" \
  || fail "curl completion"
grep -q '"object":"text_completion"' "$T/completion.json" || fail "completion body: $(cat "$T/completion.json")"
# curl: a body over the 1 MiB limit gets 413 with error JSON.
head -c 1100000 /dev/zero | tr '\0' 'a' > "$T/big.txt"
code=$(curl -s -o "$T/big.out" -w '%{http_code}' "$URL/v1/completions" -H "Authorization: Bearer sekrit" --data-binary @"$T/big.txt")
[ "$code" = 413 ] || fail "oversized body: HTTP $code"
grep -q '"code":"body_too_large"' "$T/big.out" || fail "413 body: $(cat "$T/big.out")"

/usr/bin/python3 "$SRC/tests/serve_client.py" "$PORT" sekrit tiny "$T/expected.json" || fail "serve_client.py"

# loadgen: concurrency 4 against a queue of 1 means some 429s; they are counted, not hidden.
"$RECUR" loadgen --url "$URL" --api-key sekrit --concurrency 4 --requests 8 --input-len 8 --output-len 8 --stream --json \
  > "$T/loadgen.json"
/usr/bin/python3 - "$T/loadgen.json" <<'PY' || fail "loadgen JSON: $(cat "$T/loadgen.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["requests"] == 8 and r["concurrency"] == 4 and r["model"] == "tiny"
assert r["succeeded"] + r["failed"] == 8 and r["succeeded"] >= 1
assert sum(r["statuses"].values()) == 8 and set(r["statuses"]) <= {"200", "429"}
assert r["output_tokens"] == 8 * r["succeeded"]
for key in ("ttft_ms", "latency_ms"):
    p = r[key]
    assert p["count"] == r["succeeded"] and 0 <= p["p50"] <= p["p90"] <= p["p99"], key
assert r["request_throughput"] > 0 and r["output_throughput"] > 0
PY
# loadgen --duration-s: clients keep sending until the time is up (a request under way finishes),
# so more requests than clients; the JSON reports what was sent and the limit.
"$RECUR" loadgen --url "$URL" --api-key sekrit --concurrency 2 --duration-s 0.3 --input-len 4 --output-len 2 --json \
  > "$T/loadgen_timed.json"
/usr/bin/python3 - "$T/loadgen_timed.json" <<'PY' || fail "loadgen --duration-s JSON: $(cat "$T/loadgen_timed.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["duration_limit_s"] == 0.3 and r["duration_s"] >= 0.3
assert r["requests"] > 2 and sum(r["statuses"].values()) == r["requests"] and r["succeeded"] >= 1
assert set(r["statuses"]) <= {"200", "429"}
PY
"$RECUR" loadgen --url "$URL" --duration-s -1 > /dev/null 2>&1 && fail "loadgen --duration-s -1 accepted"

# SIGTERM: a clean exit with status 0.
kill -TERM "$SERVER"
for _ in $(seq 1 100); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SERVER" 2>/dev/null && fail "still running 10 s after SIGTERM"
wait "$SERVER"
rc=$?
SERVER=""
[ "$rc" = 0 ] || fail "exit status $rc after SIGTERM"
grep -q "SIGTERM received" "$T/serve.err" || fail "no shutdown message"
echo "serve_cli_test: ok"
