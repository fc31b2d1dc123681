#!/usr/bin/env bash
# End-to-end test of `recur analyze hta`: the figures of expected.json through the CLI on a
# folder of two ranks, the --json Feedback record with every table under "details", a trace
# without distributedInfo, --jobs, exit codes (0 ok, 1 failure, 2 bad usage) and errors that
# name the input.
#   tests/analyze_hta_cli_test.sh RECUR_BINARY HTA_TESTDATA_DIR
set -uo pipefail
recur=${1:?usage: analyze_hta_cli_test.sh RECUR HTA_DIR}
hta=${2:?usage: analyze_hta_cli_test.sh RECUR HTA_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# expect CODE CMD...: runs CMD, stdout to $tmp/out, stderr to $tmp/err, checks the exit code.
expect() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [ "$got" -eq "$want" ] || fail "exit $got (want $want): $* -- $(head -c 300 "$tmp/err")"
}
contains() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 400 "$1")"; }

# Usage and errors first: they need no test data.
expect 2 "$recur" analyze hta
expect 2 "$recur" analyze hta "$tmp" --jobs 0
expect 0 "$recur" analyze hta --help
contains "$tmp/out" "--json"
contains "$tmp/out" "--jobs"
expect 1 "$recur" analyze hta "$tmp/missing"
contains "$tmp/err" "$tmp/missing: no such file or folder"
expect 1 "$recur" analyze hta "$tmp"
contains "$tmp/err" "no trace files"
printf '{"traceEvents":[{"ph":"X","name":"a","ts":"x"}]}' >"$tmp/bad.json"
expect 1 "$recur" analyze hta "$tmp/bad.json"
contains "$tmp/err" "bad.json: byte 42: expected a number"

# A small trace without distributedInfo: rank 0, noted; one kernel overlaps a collective by half.
cat >"$tmp/small.json" <<'JSON'
{"traceEvents": [
 {"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":1,"tid":1,"ts":0,"dur":1,"args":{"correlation":1}},
 {"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":1,"tid":1,"ts":2,"dur":1,"args":{"correlation":2}},
 {"ph":"X","name":"gemm","cat":"kernel","pid":0,"tid":7,"ts":10,"dur":10,"args":{"stream":7,"correlation":1}},
 {"ph":"X","name":"ncclKernel_AllReduce","cat":"kernel","pid":0,"tid":8,"ts":15,"dur":10,"args":{"stream":8,"correlation":2}}
]}
JSON
expect 0 "$recur" analyze hta --json "$tmp/small.json"
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "small --json: $(head -c 400 "$tmp/out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["probe"] == "analyze.hta" and j["tier"] == 0, j
m = {x["name"]: x["value"] for x in j["metrics"]}
assert m["rank0.comm_comp_overlap_pct"] == 50.0, m
assert m["rank0.kernel_span_us"] == 15.0 and m["rank0.idle_us"] == 0.0, m
assert any("no distributedInfo.rank: rank 0 assumed" in n for n in j["notes"]), j["notes"]
r = j["details"]["ranks"][0]
assert r["rank_from"] == "assumed" and r["launch_stats"]["n"] == 2, r
PY

if [ -d "$hta" ]; then
  # Two ranks: every figure of expected.json, read from the file here.
  expect 0 "$recur" analyze hta --json "$hta/trace_filter"
  cp "$tmp/out" "$tmp/j1.json"
  /usr/bin/python3 - "$tmp/out" "$hta/expected.json" <<'PY' || fail "trace_filter --json against expected.json"
import json, sys
j = json.load(open(sys.argv[1]))
want = json.load(open(sys.argv[2]))["traces"]["trace_filter"]["ranks"]
m = {x["name"]: x["value"] for x in j["metrics"]}
assert len(j["details"]["ranks"]) == len(want) == 2, j["details"]["ranks"]
for rank, figures in want.items():
    for name, value in figures.items():
        ours = m[f"rank{rank}.{name}"]
        tol = 0.01 if name.endswith("_pct") else 0.001 * abs(value)
        assert abs(ours - value) <= tol + 1e-9, (rank, name, ours, value)
assert j["details"]["last_profiler_step_excluded"] is True, j["details"]
PY
  # --jobs 2 reads both ranks at once: the same figures.
  expect 0 "$recur" analyze hta --json --jobs 2 "$hta/trace_filter"
  /usr/bin/python3 -c "
import json, sys
a, b = json.load(open('$tmp/j1.json')), json.load(open('$tmp/out'))
assert a['details'] == b['details'] and a['metrics'] == b['metrics']" || fail "--jobs 2 differs from --jobs 1"
  # The tables for people.
  expect 0 "$recur" analyze hta "$hta/trace_filter"
  contains "$tmp/out" "=== temporal_breakdown"
  contains "$tmp/out" "COMPUTATION overlapping COMMUNICATION"
  contains "$tmp/out" "=== idle_time_breakdown"
  # A single file works as well as a folder.
  expect 0 "$recur" analyze hta "$hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
  contains "$tmp/out" "no distributedInfo.rank: rank 0 assumed"
else
  echo "note: no HTA test data at $hta; skipping the Kineto checks" >&2
fi

if [ "$failures" -ne 0 ]; then
  echo "analyze hta CLI: $failures failure(s)" >&2
  exit 1
fi
echo "analyze hta CLI: all checks passed"
