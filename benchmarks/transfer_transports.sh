#!/bin/sh
# recur's own shm and TCP transports beside UCX (docs/performance.md, "KV transfer: shm, TCP and
# UCX"): `recur transfer bench` per block size (4 KiB .. 64 MiB) and transport, the transports
# in a rotating order within each run (interleaved), RUNS runs. Transports: shm, tcp, ucx (UCX_TLS
# as the environment has it: unset, UCX picks; here shared memory) and ucx_tcp (UCX_TLS=tcp).
# Each bench sends one layer of BLOCKS blocks per round (clamped to 2..256 and 32 MiB, 2 blocks
# at 64 MiB), 3 rounds, and times 8 single blocks. Prints per size and transport the median over
# runs of GB/s and single-block latency with min..max, the rooflines (memcpy of the same bytes;
# raw loopback TCP), and the paired ratios ucx/shm and ucx_tcp/tcp (per run, then median).
# BASELINE=OTHER_RECUR adds ucx_tcp_base (ucx_tcp run by that binary, e.g. a build of the commit
# before a change) to the rotation, and the paired ratios ucx_tcp/ucx_tcp_base and ucx_tcp_base/tcp.
# Usage: [BASELINE=OLD_RECUR] benchmarks/transfer_transports.sh RECUR [RUNS=5] [SIZES="4096 65536 1048576 4194304 16777216 67108864"]
set -u
RECUR="$1"
RUNS="${2:-5}"
SIZES="${3:-4096 65536 1048576 4194304 16777216 67108864}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
export RECUR_PEER_KEY="${RECUR_PEER_KEY:-bench-$$-$(date +%s%N)}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
BASELINE="${BASELINE:-}"
order="shm tcp ucx ucx_tcp"
[ -n "$BASELINE" ] && order="$order ucx_tcp_base"
for run in $(seq 1 "$RUNS"); do
  for size in $SIZES; do
    blocks=$((33554432 / size))
    [ "$blocks" -gt 256 ] && blocks=256
    [ "$blocks" -lt 2 ] && blocks=2
    for t in $order; do
      case $t in
        ucx_tcp_base) env UCX_TLS=tcp "$BASELINE" transfer bench --transport ucx --bytes $((size * blocks)) --blocks "$blocks" \
                   --rounds 3 --latency-samples 8 --json > "$T/$run-$size-$t.json" 2> "$T/$run-$size-$t.err" ;;
        ucx_tcp) env UCX_TLS=tcp "$RECUR" transfer bench --transport ucx --bytes $((size * blocks)) --blocks "$blocks" \
                   --rounds 3 --latency-samples 8 --json > "$T/$run-$size-$t.json" 2> "$T/$run-$size-$t.err" ;;
        *) "$RECUR" transfer bench --transport "$t" --bytes $((size * blocks)) --blocks "$blocks" --rounds 3 \
             --latency-samples 8 --json > "$T/$run-$size-$t.json" 2> "$T/$run-$size-$t.err" ;;
      esac || echo "run $run size $size $t failed: $(tail -1 "$T/$run-$size-$t.err")" >&2
    done
    order="$(echo "$order" | cut -d' ' -f2-) $(echo "$order" | cut -d' ' -f1)"  # rotate
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
/usr/bin/python3 - "$T" "$RUNS" "$SIZES" "$BASELINE" <<'PY'
import json, os, statistics, sys
d, runs, sizes = sys.argv[1], int(sys.argv[2]), [int(s) for s in sys.argv[3].split()]
names = ["shm", "tcp", "ucx", "ucx_tcp"] + (["ucx_tcp_base"] if sys.argv[4] else [])
pairs = [("ucx", "shm"), ("ucx_tcp", "tcp")] + ([("ucx_tcp", "ucx_tcp_base"), ("ucx_tcp_base", "tcp")] if sys.argv[4] else [])
def load(run, size, t):
    p = os.path.join(d, f"{run}-{size}-{t}.json")
    try:
        return json.load(open(p)) if os.path.getsize(p) else None
    except (OSError, ValueError):
        return None
def spread(v):
    return f"{statistics.median(v):.3g} [{min(v):.3g}..{max(v):.3g}]" if v else "-"
print("| block | transport (UCX lanes) | GB/s median [min..max] | 1-block latency us | memcpy GB/s | tcp loopback GB/s |")
print("|---|---|---|---|---|---|")
ratios = {}
for size in sizes:
    per = {t: [load(r, size, t) for r in range(1, runs + 1)] for t in names}
    for t in names:
        ok = [x for x in per[t] if x and x["verified"]]
        path = ok[0]["path"] if ok else t
        gbps = [x["gbps"]["median"] for x in ok]
        lat = [x["block_latency_us"]["median"] for x in ok]
        mem = [x["memcpy_gbps"]["median"] for x in ok]
        loop = [x["tcp_loopback_gbps"]["median"] for x in ok if x["tcp_loopback_gbps"]["samples"]]
        print(f"| {size} | {t}: {path} | {spread(gbps)} | {spread(lat)} | {spread(mem)} | {spread(loop)} |")
    for num, den in pairs:
        r = [a["gbps"]["median"] / b["gbps"]["median"] for a, b in zip(per[num], per[den]) if a and b and b["gbps"]["median"] > 0]
        ratios[(size, num, den)] = r
print()
print("| block | " + " | ".join(f"{n} / {m}" for n, m in pairs) + " |  (paired per run)")
print("|---|" + "---|" * len(pairs))
for size in sizes:
    print(f"| {size} | " + " | ".join(spread(ratios[(size, n, m)]) for n, m in pairs) + " |")
PY
