#!/usr/bin/env bash
# End-to-end tests of `recur analyze overlap|breakdown|diff|locks|critical-path`: figures on
# small hand-made traces, --json Feedback records that parse and validate (decomposition
# shares sum to 1 with an `unattributed` entry), exit codes (0 ok, 1 failure, 2 bad usage),
# and a real Kineto trace and folder of ranks.
#   tests/analyze_cli_test.sh RECUR_BINARY HTA_TESTDATA_DIR
set -uo pipefail
recur=${1:?usage: analyze_cli_test.sh RECUR HTA_DIR}
hta=${2:?usage: analyze_cli_test.sh RECUR HTA_DIR}
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
# feedback PROBE PYTHON_ASSERTS: $tmp/out is a valid Feedback record of PROBE; `j` holds it.
feedback() {
  /usr/bin/python3 - "$tmp/out" "$1" "$2" <<'PY' || fail "feedback $2: $(head -c 400 "$tmp/out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["probe"] == sys.argv[2], j["probe"]
assert j["tier"] == 0 and j["cost_s"] >= 0 and j["verdict"] == "inconclusive", j
assert isinstance(j["details"], dict)
if j.get("attribution_is_decomposition"):
    total = sum(a["share"] for a in j["attribution"])
    assert abs(total - 1) < 1e-6, total
    assert any(a["component"] == "unattributed" for a in j["attribution"]), j["attribution"]
    assert all(0 <= a["share"] <= 1 for a in j["attribution"]), j["attribution"]
exec(sys.argv[3])
PY
}

# BASE: main runs two steps of a then b; a worker waits on kv_pool while main holds it, and a
# flow goes from main to the worker.  CAND: b is 20 us slower in the first step.
cat >"$tmp/base.json" <<'JSON'
{"traceEvents": [
 {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},
 {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"worker"}},
 {"ph":"X","name":"step","cat":"recur","pid":1,"tid":1,"ts":0,"dur":100},
 {"ph":"X","name":"a","cat":"recur","pid":1,"tid":1,"ts":0,"dur":30},
 {"ph":"X","name":"b","cat":"recur","pid":1,"tid":1,"ts":30,"dur":30},
 {"ph":"X","name":"kv_pool","cat":"lock_held","pid":1,"tid":1,"ts":35,"dur":20,"args":{"mutex":"kv_pool"}},
 {"ph":"s","name":"kv","cat":"flow","id":5,"pid":1,"tid":1,"ts":50},
 {"ph":"X","name":"step","cat":"recur","pid":1,"tid":1,"ts":100,"dur":100},
 {"ph":"X","name":"a","cat":"recur","pid":1,"tid":1,"ts":100,"dur":30},
 {"ph":"X","name":"b","cat":"recur","pid":1,"tid":1,"ts":130,"dur":30},
 {"ph":"X","name":"recv","cat":"recur","pid":1,"tid":2,"ts":40,"dur":50},
 {"ph":"X","name":"kv_pool","cat":"lock_wait","pid":1,"tid":2,"ts":40,"dur":15,"args":{"mutex":"kv_pool","holder_tid":1}},
 {"ph":"f","name":"kv","cat":"flow","id":5,"pid":1,"tid":2,"ts":60,"bp":"e"}
]}
JSON
sed -e 's/"ts":30,"dur":30/"ts":30,"dur":50/' -e 's/"ts":0,"dur":100}/"ts":0,"dur":120}/' \
    -e 's/"ts":100,"dur":100/"ts":120,"dur":100/' -e 's/"ts":100,"dur":30/"ts":120,"dur":30/' \
    -e 's/"ts":130,"dur":30/"ts":150,"dur":30/' "$tmp/base.json" >"$tmp/cand.json"

# overlap: the worker's wait against main's hold of kv_pool
expect 0 "$recur" analyze overlap "$tmp/base.json" 'cat=lock_wait' 'cat=lock_held,thread=main'
contains "$tmp/out" "overlap of A 'cat=lock_wait' (1 zones) by B 'cat=lock_held,thread=main' (1 zones), by all"
expect 0 "$recur" analyze overlap --json "$tmp/base.json" 'name=recv' 'name=b'
feedback analyze.overlap '
m = {x["name"]: x["value"] for x in j["metrics"]}
assert m["a_busy_us"] == 50 and m["overlap_us"] == 20 and abs(m["overlap_share"] - 0.4) < 1e-12, m
assert j["details"]["total"]["partial_zones"] == 1, j["details"]'

# breakdown by path, with a selector
expect 0 "$recur" analyze breakdown "$tmp/base.json" --by path
contains "$tmp/out" "step/b/kv_pool"
contains "$tmp/out" "worker (1/2)"
expect 0 "$recur" analyze breakdown --json "$tmp/base.json" --select 'thread=main'
feedback analyze.breakdown '
rows = {r["key"]: r for r in j["details"]["rows"]}
assert rows["b"]["count"] == 2 and rows["b"]["self_us"] == 40 and rows["b"]["total_us"] == 60, rows
assert j["details"]["self_total_us"] == 200, j["details"]'

# diff: the slower b explains the whole change
expect 0 "$recur" analyze diff "$tmp/base.json" "$tmp/cand.json" --root name=step
contains "$tmp/out" "diff of root 'name=step': BASE 200.000 us -> CAND 220.000 us (+20.000 us, +10.0%)"
expect 0 "$recur" analyze diff --json "$tmp/base.json" "$tmp/cand.json" --root name=step
feedback analyze.diff '
assert j["attribution"][0]["component"] == "step/b" and abs(j["attribution"][0]["share"] - 1) < 1e-9, j["attribution"]
assert j["details"]["change_us"] == 20, j["details"]'
expect 0 "$recur" analyze diff --json "$tmp/base.json" "$tmp/cand.json"
feedback analyze.diff 'assert j["details"]["measure"] == "trace span"'

# locks: the worker waited for main, which held kv_pool inside step/b
expect 0 "$recur" analyze locks "$tmp/base.json"
contains "$tmp/out" "mutex kv_pool: 1 waits, 15.000 us total"
contains "$tmp/out" "main (1/1)"
expect 0 "$recur" analyze locks --json "$tmp/base.json"
feedback analyze.locks '
row = j["details"]["mutexes"][0]["rows"][0]
assert row["holder"] == "main (1/1)" and row["holder_zone"] == "step/b" and row["waiter_zone"] == "recv", row'

# critical-path: through main's critical section, the lock hand-off and the worker
expect 0 "$recur" analyze critical-path "$tmp/base.json"
contains "$tmp/out" "critical path:"
expect 0 "$recur" analyze critical-path --json "$tmp/base.json"
feedback analyze.critical-path '
d = j["details"]
assert d["edges"] == {"flow": 1, "lock": 1, "join": 0}, d["edges"]
assert abs(sum(c["share"] for c in d["components"]) - 1) < 1e-9, d["components"]'

# a real Kineto trace and a folder of two ranks
if [ -d "$hta" ]; then
  k="$hta/trace_filter/sampled_rank-0.json.gz"
  expect 0 "$recur" analyze overlap --json "$k" 'name~^nccl' 'cat=kernel,name!~^nccl' --by rank
  feedback analyze.overlap 'assert j["details"]["a_selected"] > 0 and j["details"]["groups"][0]["group"] == "rank 0"'
  expect 0 "$recur" analyze overlap "$hta/trace_filter" 'name~^nccl' 'cat=kernel,name!~^nccl' --by rank
  contains "$tmp/out" "rank 1"
  expect 0 "$recur" analyze breakdown --json "$k" --select cat=kernel --by name
  feedback analyze.breakdown 'assert len(j["details"]["rows"]) > 0'
  expect 0 "$recur" analyze critical-path --json "$k"
  feedback analyze.critical-path 'assert j["details"]["end_thread"] != "Spans/PyTorch Profiler", j["details"]["end_thread"]'
  expect 0 "$recur" analyze critical-path --json "$hta/nccl_parser_config/nccl_data.json.gz" --end cat=kernel
  feedback analyze.critical-path 'assert j["details"]["edges"]["flow"] > 0 and j["details"]["edges_on_path"]["flow"] > 0, j["details"]["edges"]'
  expect 0 "$recur" analyze locks --json "$k"
  feedback analyze.locks 'assert j["details"]["mutexes"] == []'
  expect 0 "$recur" analyze diff --json "$k" "$hta/trace_filter/sampled_rank-1.json.gz"
  feedback analyze.diff 'pass'
else
  echo "note: no HTA test data at $hta; skipping the Kineto checks" >&2
fi

# failures: bad selectors are usage errors (2) naming the column; missing files fail (1)
expect 2 "$recur" analyze overlap "$tmp/base.json" 'nam=x' 'name=b'
contains "$tmp/err" "A: selector 'nam=x': column 1: unknown key 'nam'"
expect 2 "$recur" analyze breakdown "$tmp/base.json" --select 'name~('
contains "$tmp/err" "--select: selector 'name~(': column 6: bad regex"
expect 2 "$recur" analyze diff "$tmp/base.json" "$tmp/cand.json" --root 'stream=x'
expect 2 "$recur" analyze locks "$tmp/base.json" --select ','
expect 2 "$recur" analyze critical-path "$tmp/base.json" --join 'name'
expect 2 "$recur" analyze overlap "$tmp/base.json" 'name=a' 'name=b' --by node
contains "$tmp/err" "group by 'node'"
expect 2 "$recur" analyze breakdown "$tmp/base.json" --by size
expect 1 "$recur" analyze breakdown "$tmp/missing.json"
contains "$tmp/err" "missing.json: cannot open"
expect 1 "$recur" analyze diff "$tmp/base.json" "$tmp/missing.json"
contains "$tmp/err" "missing.json: cannot open"
expect 1 "$recur" analyze diff "$tmp/base.json" "$tmp/cand.json" --root name=prefill
contains "$tmp/err" "root 'name=prefill' selects no zone in BASE"
mkdir "$tmp/empty"
expect 1 "$recur" analyze locks "$tmp/empty"
contains "$tmp/err" "no trace files"
expect 2 "$recur" analyze overlap "$tmp/base.json" 'name=a'
expect 2 "$recur" analyze
for verb in overlap breakdown diff locks critical-path; do
  expect 0 "$recur" analyze "$verb" --help
  contains "$tmp/out" "--json"
done

if [ "$failures" -ne 0 ]; then
  echo "analyze CLI: $failures failure(s)" >&2
  exit 1
fi
echo "analyze CLI: all checks passed"
