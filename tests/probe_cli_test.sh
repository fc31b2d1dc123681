#!/bin/sh
# End-to-end test of `recur kernels`, `recur check` and `recur bench`: exit codes, --json that
# parses as a valid Feedback record, errors that list what exists. Kept to a few seconds.
# Usage: probe_cli_test.sh /path/to/recur
set -u
RECUR="$1"
export RECUR_CACHE_DIR="$(mktemp -d)"
. "$(dirname "$0")/sysinfo_seed.sh"
trap 'rm -rf "$RECUR_CACHE_DIR"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect CODE ARGS...: runs recur, checks the exit code, leaves stdout in $out and stderr in $err.
expect() {
  want="$1"; shift
  out="$("$RECUR" "$@" 2>"$RECUR_CACHE_DIR/err")"; got=$?
  err="$(cat "$RECUR_CACHE_DIR/err")"
  [ "$got" = "$want" ] || fail "recur $* exited $got, want $want; stderr: $err"
}
# is_feedback: stdout is a Feedback record with the given probe and verdict.
is_feedback() {
  printf '%s' "$out" | /usr/bin/python3 -c '
import json, sys
f = json.load(sys.stdin)
for k in ("probe", "tier", "cost_s", "subject", "hypothesis", "verdict", "metrics", "attribution", "notes", "next", "artifacts"):
    assert k in f, "missing " + k
assert f["probe"] == sys.argv[1], f["probe"]
assert f["verdict"] == sys.argv[2], f["verdict"]
' "$1" "$2" || fail "not a $1 Feedback with verdict $2: $out"
}
contains() { printf '%s' "$1" | grep -q -- "$2" || fail "expected '$2' in: $1"; }

expect 0 kernels --json
printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys; k={x["name"] for x in json.load(sys.stdin)}; assert {"rmsnorm","gemv"} <= k, k' \
  || fail "kernels --json lacks rmsnorm/gemv"
expect 0 kernels
contains "$out" "rmsnorm"

expect 0 check rmsnorm --variant scalar --shape M16,N256 --partitions 1,2,4 --seeds 1 --json
is_feedback check.kernel confirmed
expect 0 check gemv --variant scalar --shape M32,N64 --seeds 1,2
contains "$out" "verdict     confirmed"
contains "$out" "ghost replay"

expect 2 check rmsnrom
contains "$err" "kernels: "
contains "$err" " gemv,"
expect 2 check rmsnorm --variant avx9
contains "$err" "variants: scalar, avx2, avx512"
expect 2 check rmsnorm --shape Q4
contains "$err" "parameters: M (default 64), N (default 4096)"
expect 2 check rmsnorm --partitions 1,x
expect 2 check gemv --shape M4,N8 --partitions 8
contains "$err" "cannot split M=4 into 8 shards"

expect 0 bench rmsnorm --variant scalar --vs scalar --shape M8,N256 --budget-s 0.3 --target-ms 0.2 --hypothesis same --json
printf '%s' "$out" | /usr/bin/python3 -c '
import json, sys
f = json.load(sys.stdin)
assert f["probe"] == "bench.kernel" and f["tier"] == 2
names = {m["name"] for m in f["metrics"]}
for n in ("time_us", "baseline_time_us", "ratio", "p_value", "noise_threshold", "rounds", "gbps", "bandwidth_frac"):
    assert n in names, n
assert any("bench verdict:" in n for n in f["notes"]), f["notes"]
' || fail "bench --json: $out"
expect 0 bench gemv --variant scalar --shape M16,N64 --budget-s 0.2 --target-ms 0.2
contains "$out" "bench.kernel (tier 2"
expect 2 bench gemv --hypothesis quicker
expect 2 bench nosuch
expect 0 bench cmd --budget-s 0.3 --json -- /bin/true
is_feedback bench.cmd "$(printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])')"
expect 1 bench cmd --budget-s 0.3 -- /bin/false
contains "$out" "exited with status 1"

for verb in bench check kernels; do
  expect 0 "$verb" --help
  contains "$out" "--json"
done

if command -v valgrind >/dev/null 2>&1; then
  # Dumps are removed unless kept with --callgrind-dir (they used to pile up under $TMPDIR).
  mkdir "$RECUR_CACHE_DIR/tmp"
  TMPDIR="$RECUR_CACHE_DIR/tmp" expect 0 --isa avx2 bench rmsnorm --variant avx2 --shape M2,N64 --callgrind \
    --callgrind-iters 1 --json
  is_feedback bench.callgrind confirmed
  contains "$out" "unattributed"
  [ -z "$(ls -A "$RECUR_CACHE_DIR/tmp")" ] || fail "bench --callgrind left $(ls "$RECUR_CACHE_DIR/tmp") in TMPDIR"
  expect 0 --isa avx2 bench rmsnorm --variant avx2 --shape M2,N64 --callgrind --callgrind-iters 1 --json \
    --callgrind-dir "$RECUR_CACHE_DIR/kept"
  dump="$(printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["artifacts"]["callgrind"])')"
  case "$dump" in "$RECUR_CACHE_DIR/kept/"*) [ -s "$dump" ] || fail "no dump at $dump" ;;
    *) fail "--callgrind-dir: the artifact $dump is not in the folder" ;; esac
fi

[ "$failures" = 0 ] && echo "probe CLI: all checks passed"
exit "$failures"
