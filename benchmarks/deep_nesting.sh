#!/usr/bin/env bash
# Issue #24: time and peak RSS of the analyses on traces nested DEPTH deep (benchmarks/deep_trace.py),
# for one or two recur binaries, interleaved run by run; prints median and min-max per case.
#   benchmarks/deep_nesting.sh [-n RUNS] [-d DEPTH] RECUR [BASE_RECUR]
# Each run is capped at 120 s and 16 GiB of address space (a quadratic binary hits the cap:
# reported as "capped").
set -uo pipefail
runs=5 depth=20000
while getopts n:d: o; do case $o in n) runs=$OPTARG ;; d) depth=$OPTARG ;; *) exit 2 ;; esac; done
shift $((OPTIND - 1))
bins=("$@")
[ ${#bins[@]} -ge 1 ] || { echo "usage: $0 [-n RUNS] [-d DEPTH] RECUR [BASE_RECUR]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$here/deep_trace.py" --kind begin --depth "$depth" -o "$tmp/b.json"
/usr/bin/python3 "$here/deep_trace.py" --kind complete --depth "$depth" -o "$tmp/x.json"
echo "depth $depth: B trace $(stat -c %s "$tmp/b.json") bytes, X trace $(stat -c %s "$tmp/x.json") bytes; $runs runs"
cases=("breakdown B|analyze breakdown $tmp/b.json"
       "breakdown --by path X|analyze breakdown --by path $tmp/x.json"
       "breakdown --by path --json X|analyze breakdown --by path --json $tmp/x.json"
       "critical-path X|analyze critical-path $tmp/x.json"
       "diff X B|analyze diff $tmp/x.json $tmp/b.json")
for ((r = 0; r < runs; r++)); do
  for c in "${cases[@]}"; do
    for ((k = 0; k < ${#bins[@]}; k++)); do
      # shellcheck disable=SC2086
      ( ulimit -v $((16 << 20)); /usr/bin/time -f "%e %M" -o "$tmp/t" timeout 120 "${bins[k]}" ${c#*|} >/dev/null 2>&1 )
      rc=$?
      if [ $rc -eq 0 ]; then read -r s kb <"$tmp/t"; else s=capped kb=capped; fi
      echo "$k|${c%%|*}|$s|$kb" >>"$tmp/results"
    done
  done
done
/usr/bin/python3 - "$tmp/results" "${bins[@]}" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
bins = sys.argv[2:]
for k, b in enumerate(bins):
    print(f"binary {k}: {b}")
    for case in dict.fromkeys(r[1] for r in rows):
        got = [r for r in rows if r[0] == str(k) and r[1] == case]
        ok = [r for r in got if r[2] != "capped"]
        if len(ok) < len(got):
            print(f"  {case:32s} {len(got) - len(ok)}/{len(got)} runs over 120 s or 16 GiB")
        if ok:
            s = sorted(float(r[2]) for r in ok)
            m = sorted(int(r[3]) / 1024 for r in ok)
            print(f"  {case:32s} {statistics.median(s):7.2f} s ({s[0]:.2f}-{s[-1]:.2f})  "
                  f"{statistics.median(m):8.1f} MB ({m[0]:.1f}-{m[-1]:.1f})")
PY
