#!/bin/sh
# Load/reliability soak of issue #9 (docs/performance.md "Serving — load", docs/serve.md):
# `recur serve --role all` (continuous batching), `recur loadgen --stream --duration-s DURATION`
# at CONCURRENCY clients, the server's VmRSS sampled every second into rss.csv, /metrics scraped
# before and after. Prints requests ok / 4xx / 5xx / no response, output tok/s, TTFT and ITL
# p50/p99, RSS at the end of warm-up vs the end and the max, and the least-squares slope of RSS
# over the steady part (after warm-up) in MB/min.
# Admission: the server runs --max-seqs MAX_SEQS in one batch and queues the rest
# (--queue-size QUEUE >= CONCURRENCY, so no client should get a 429), with HTTP_THREADS
# (> CONCURRENCY) connection threads so every keep-alive client is served at once.
# Exits 1 on any 5xx or failed connection, 2 on RSS growth after warm-up above RSS_MAX_MB
# (end minus warm-up end) — a leak check, not a performance assertion.
# Usage: [WARMUP=10] [RSS_MAX_MB=32] [MAX_SEQS=16] [QUEUE=128] [HTTP_THREADS=96] [INPUT=64] [OUTPUT=32]
#        [KEEP=dir] benchmarks/serve_soak.sh RECUR [DURATION=60] [CONCURRENCY=64] [MODEL]
set -u
RECUR="$1"
DURATION="${2:-60}"
CONCURRENCY="${3:-64}"
MODEL="${4:-}"
WARMUP="${WARMUP:-10}"
RSS_MAX_MB="${RSS_MAX_MB:-32}"
MAX_SEQS="${MAX_SEQS:-16}"
QUEUE="${QUEUE:-128}"
HTTP_THREADS="${HTTP_THREADS:-96}"
INPUT="${INPUT:-64}"
OUTPUT="${OUTPUT:-32}"
T="${KEEP:-$(mktemp -d)}"
mkdir -p "$T"
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null; done; [ -n "${KEEP:-}" ] || rm -rf "$T"; }
trap cleanup EXIT
trap "exit 1" INT TERM
MARG=""
[ -n "$MODEL" ] && MARG="-m $MODEL"
# shellcheck disable=SC2086
"$RECUR" serve --role all $MARG --port 0 --max-seqs "$MAX_SEQS" --queue-size "$QUEUE" \
  --http-threads "$HTTP_THREADS" 2> "$T/serve.err" &
SERVER=$!
PIDS="$SERVER"
for _ in $(seq 1 600); do
  PORT=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$T/serve.err")
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "${PORT:-}" ] || { echo "serve did not start:" >&2; cat "$T/serve.err" >&2; exit 1; }
URL="http://127.0.0.1:$PORT"
curl -s "$URL/metrics" > "$T/metrics.before"
# One sample a second: seconds since loadgen started, VmRSS in kB.
(
  echo "t_s,rss_kb"
  start=$(date +%s.%N)
  while kill -0 "$SERVER" 2>/dev/null; do
    rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$SERVER/status" 2>/dev/null)
    [ -n "$rss" ] && echo "$(echo "$(date +%s.%N) - $start" | bc),$rss"
    sleep 1
  done
) > "$T/rss.csv" &
PIDS="$PIDS $!"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
"$RECUR" loadgen --url "$URL" --concurrency "$CONCURRENCY" --duration-s "$DURATION" --input-len "$INPUT" \
  --output-len "$OUTPUT" --stream --json > "$T/loadgen.json"
LOADGEN_RC=$?
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
curl -s "$URL/metrics" > "$T/metrics.after"
kill -0 "$SERVER" 2>/dev/null || { echo "server died during the run:" >&2; tail -20 "$T/serve.err" >&2; exit 1; }
echo "load average before: $LOAD_BEFORE, after: $LOAD_AFTER; loadgen exit $LOADGEN_RC; files in $T"
/usr/bin/python3 - "$T" "$WARMUP" "$RSS_MAX_MB" <<'PY'
import json, re, sys
d, warmup, rss_max_mb = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
r = json.load(open(f"{d}/loadgen.json"))
st = {int(k): v for k, v in r["statuses"].items()}
ok = st.get(200, 0)
c4 = sum(v for k, v in st.items() if 400 <= k < 500)
c5 = sum(v for k, v in st.items() if k >= 500)
none = st.get(0, 0)
print(f"concurrency {r['concurrency']}, {r['duration_s']:.1f} s, input {r['input_len']} output {r['output_len']} tokens")
print(f"requests {r['requests']}: ok {ok}, 4xx {c4} {({k: v for k, v in st.items() if 400 <= k < 500}) or ''}".rstrip() + ", "
      f"5xx {c5}, no response {none}")
print(f"output {r['output_throughput']:.1f} tok/s, {r['request_throughput']:.2f} req/s")
t, i = r["ttft_ms"] or {}, r["itl_ms"] or {}
print(f"TTFT p50 {t.get('p50', float('nan')):.0f} ms, p99 {t.get('p99', float('nan')):.0f} ms; "
      f"ITL p50 {i.get('p50', float('nan')):.1f} ms, p99 {i.get('p99', float('nan')):.1f} ms")
def metric(name, text):
    return sum(float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))
before, after = open(f"{d}/metrics.before").read(), open(f"{d}/metrics.after").read()
for name in ("recur_generation_tokens_total", "recur_requests_cancelled_total"):
    print(f"/metrics {name}: +{metric(name, after) - metric(name, before):.0f}")
http = {}
for m in re.finditer(r'^recur_http_requests_total\{path="([^"]*)",status="(\d+)"\} (\S+)$', after, re.M):
    http[f"{m.group(1)} {m.group(2)}"] = int(float(m.group(3)))
print(f"/metrics recur_http_requests_total after (path status: count): {http}")
rows = [tuple(map(float, l.split(","))) for l in open(f"{d}/rss.csv").read().split()[1:]]
rows = [(t, kb / 1024) for t, kb in rows if t <= r["duration_s"]]
steady = [(t, mb) for t, mb in rows if t >= warmup]
code = 1 if c5 or none else 0
if len(steady) >= 2:
    n = len(steady)
    mt = sum(t for t, _ in steady) / n
    mm = sum(mb for _, mb in steady) / n
    slope = sum((t - mt) * (mb - mm) for t, mb in steady) / sum((t - mt) ** 2 for t, _ in steady) * 60
    growth = steady[-1][1] - steady[0][1]
    print(f"RSS MB: start {rows[0][1]:.1f}, t={steady[0][0]:.0f} s (warm-up end) {steady[0][1]:.1f}, "
          f"end {steady[-1][1]:.1f}, max {max(mb for _, mb in rows):.1f}; growth after warm-up {growth:+.1f} MB, "
          f"slope {slope:+.2f} MB/min ({n} samples)")
    if growth > rss_max_mb:
        print(f"FAIL: RSS grew {growth:.1f} MB after warm-up (threshold {rss_max_mb:.0f} MB)")
        code = code or 2
else:
    print("RSS: too few samples after warm-up")
if c5 or none:
    print(f"FAIL: {c5} 5xx and {none} requests without a response")
sys.exit(code)
PY
