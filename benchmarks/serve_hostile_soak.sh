#!/bin/sh
# The hostile soak of issue #24 (docs/performance.md "Serving — hostile clients", docs/serve.md
# "Connections"): `recur serve --role all` on a tiny model (so it runs on 2 cores) under 64 normal
# clients, 16 that abandon long generations after 1 s, 40 slow-header clients, chunked bodies over
# --max-body and a /health probe every 50 ms, for DURATION seconds (serve_hostile_soak.py).
# Exits 1 on a 5xx or unanswered normal request, /health p99 >= 100 ms, an abandoned request not
# cancelled within 1 s, or RSS growth over 32 MB after the first 10 s.
# Usage: [KEEP=dir] benchmarks/serve_hostile_soak.sh RECUR [DURATION=60]
set -u
RECUR="$1"
DURATION="${2:-60}"
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../tests/serve_port.sh"
T="${KEEP:-$(mktemp -d)}"
mkdir -p "$T"
export RECUR_CACHE_DIR="$T"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"; }
trap cleanup EXIT
trap "exit 1" INT TERM
"$RECUR" model new "$T/tiny.gguf" --arch hybrid --dim 64 --layers 2 --heads 4 --kda-head-dim 16 --vocab 400 \
  --context 8192 --pattern ka 2>/dev/null || { echo "model new failed" >&2; exit 1; }
"$RECUR" serve -m "$T/tiny.gguf" --port 0 --threads 1 --max-seqs 16 --queue-size 128 --http-threads 96 \
  2> "$T/serve.err" &
SERVER=$!
PORT=$(serve_port "$T/serve.err")
[ -n "$PORT" ] || { echo "serve did not start:" >&2; cat "$T/serve.err" >&2; exit 1; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$HERE/serve_hostile_soak.py" "$PORT" "$SERVER" "$DURATION" "$T/summary.json"
rc=$?
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
