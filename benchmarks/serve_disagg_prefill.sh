#!/bin/sh
# The KV transfer's cost on prefill throughput (docs/performance.md, "Disaggregated prefill"):
# three `recur serve --role prefill` workers, serve.kv_transfer = off | shm | tcp, send to one
# `--role decode` worker on this host; each run prefills the same prompt REPS times on each
# worker, the workers in a rotating order (interleaved runs); a prefill's time is the worker's
# own prefill_seconds (first forward to every layer's transfer complete; off: the forward only).
# Prints per mode the median over runs of each run's median prompt tok/s, with min..max, and
# the paired change against off: per run, this mode's median over off's median in the same run
# (robust to the host's load drifting between runs), median over runs with min..max; and the
# transfer's share of the critical path, measured inside the worker: (hook_seconds, the forward
# thread exporting and queueing layers, + tail_seconds, forward end to every block complete) /
# prefill_seconds, median over all prefills with min..max, and the median transfer_seconds. The decode worker never decodes: each slot is released unread.
# Usage: benchmarks/serve_disagg_prefill.sh RECUR [PROMPT_TOKENS=256] [RUNS=5] [REPS=3] [MODEL] [THREADS=2]
set -u
RECUR="$1"
TOKENS="${2:-256}"
RUNS="${3:-5}"
REPS="${4:-3}"
MODEL="${5:-}"
THREADS="${6:-2}"
T="$(mktemp -d)"
PIDS=""
# The disaggregated roles need a peer key (docs/serve.md, "Authentication"); this script is their router.
export RECUR_PEER_KEY="${RECUR_PEER_KEY:-bench-$$-$(date +%s%N)}"
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
MARG=""
[ -n "$MODEL" ] && MARG="-m $MODEL"
port_of() {  # waits for "listening on http://127.0.0.1:PORT" in $1 (model loading included)
  for _ in $(seq 1 600); do
    p=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$1")
    [ -n "$p" ] && { echo "$p"; return; }
    sleep 0.1
  done
}
# shellcheck disable=SC2086
"$RECUR" serve --role decode $MARG --port 0 --threads 1 --kv-slots 1 2> "$T/decode.err" &
PIDS="$PIDS $!"
D=$(port_of "$T/decode.err")
[ -n "$D" ] || { cat "$T/decode.err"; exit 1; }
URLS=""
for mode in off shm tcp; do
  # shellcheck disable=SC2086
  "$RECUR" --set serve.kv_transfer=$mode serve --role prefill $MARG --port 0 --threads "$THREADS" 2> "$T/$mode.err" &
  PIDS="$PIDS $!"
  p=$(port_of "$T/$mode.err")
  [ -n "$p" ] || { cat "$T/$mode.err"; exit 1; }
  URLS="$URLS $mode=http://127.0.0.1:$p"
done
/usr/bin/python3 - "http://127.0.0.1:$D" "$TOKENS" "$RUNS" "$REPS" $URLS <<'PY'
import json, os, statistics, sys, urllib.request
decode, tokens, runs, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
workers = dict(a.split("=", 1) for a in sys.argv[5:])
modes = list(workers)
def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json",
                                 "Authorization": "Bearer " + os.environ["RECUR_PEER_KEY"]})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)
ids = [(i * 37 + 11) % 350 + 1 for i in range(tokens)]
per_run = {m: [] for m in modes}
share = {m: [] for m in modes}
transfer = {m: [] for m in modes}
request = 1
for run in range(runs):
    order = modes[run % len(modes):] + modes[:run % len(modes)]
    for m in order:
        rates = []
        for _ in range(reps):
            slot = post(decode + "/kv/reserve", {})
            msg = dict(slot, request=request, prompt_ids=ids)
            request += 1
            out = post(workers[m] + "/prefill", msg)
            post(decode + "/kv/release", {"slot": slot["slot"], "token": slot["token"]})
            rates.append(out["prompt_tokens"] / out["prefill_seconds"])
            share[m].append((out["hook_seconds"] + out["tail_seconds"]) / out["prefill_seconds"])
            transfer[m].append(out["transfer_seconds"])
        per_run[m].append(statistics.median(rates))
result = {"prompt_tokens": tokens, "runs": runs, "reps": reps, "modes": {}}
print(f"prefill of {tokens} tokens, {runs} interleaved runs x {reps} prefills (median of run medians, min..max)")
for m in modes:
    med = statistics.median(per_run[m])
    paired = [x / o - 1 for x, o in zip(per_run[m], per_run["off"])]
    result["modes"][m] = {"median_tok_s": med, "min": min(per_run[m]), "max": max(per_run[m]),
                          "paired_vs_off": statistics.median(paired), "paired_min": min(paired),
                          "paired_max": max(paired), "runs": per_run[m],
                          "critical_share": statistics.median(share[m]), "critical_share_min": min(share[m]),
                          "critical_share_max": max(share[m]), "transfer_s": statistics.median(transfer[m])}
    print(f"  {m:4s} {med:9.1f} tok/s  ({min(per_run[m]):.1f}..{max(per_run[m]):.1f})  paired vs off "
          f"{100 * statistics.median(paired):+.1f}% ({100 * min(paired):+.1f}..{100 * max(paired):+.1f})  "
          f"critical path {100 * statistics.median(share[m]):.2f}% ({100 * min(share[m]):.2f}..{100 * max(share[m]):.2f})  "
          f"transfer {1e3 * statistics.median(transfer[m]):.1f} ms")
print(json.dumps(result))
PY
