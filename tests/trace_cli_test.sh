#!/usr/bin/env bash
# End-to-end tests of `recur trace stats|convert|merge`: outputs, --json, exit codes (0 ok,
# 1 failure, 2 bad usage) and error messages that name the file, the byte and what was expected.
#   tests/trace_cli_test.sh RECUR_BINARY HTA_TESTDATA_DIR
set -uo pipefail
recur=${1:?usage: trace_cli_test.sh RECUR HTA_DIR}
hta=${2:?usage: trace_cli_test.sh RECUR HTA_DIR}
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
contains() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 300 "$1")"; }

cat >"$tmp/small.json" <<'JSON'
{"distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": [
 {"ph":"X","name":"step","cat":"cpu_op","pid":7,"tid":7,"ts":1.5,"dur":10,"args":{"External id":3}},
 {"ph":"X","name":"kernel","cat":"kernel","pid":0,"tid":7,"ts":2,"dur":4,"args":{"stream":7,"correlation":9}},
 {"ph":"s","id":9,"pid":7,"tid":7,"ts":2,"cat":"ac2g","name":"ac2g"},
 {"ph":"f","id":9,"pid":0,"tid":7,"ts":2,"cat":"ac2g","name":"ac2g","bp":"e"},
 {"ph":"B","name":"open","pid":7,"tid":8,"ts":3},
 {"ph":"M","name":"thread_name","pid":7,"tid":7,"args":{"name":"main"}}
]}
JSON

# stats: text and JSON
expect 0 "$recur" trace stats "$tmp/small.json"
contains "$tmp/out" "5 events on"
contains "$tmp/out" "rank 1 of 2"
contains "$tmp/out" "recovered: 1 B without E closed at track end"
expect 0 "$recur" trace stats --json "$tmp/small.json"
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "stats --json content"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["events"] == 5, j
assert j["rank"] == 1 and j["world_size"] == 2, j
assert j["phases"] == {"X": 3, "s": 1, "f": 1}, j["phases"]
assert j["top_names"][0]["name"] == "step" and abs(j["top_names"][0]["total_dur_us"] - 10) < 1e-9, j
assert j["unclosed_begin_events"] == 1 and j["dropped_events"] == 0, j
PY

# convert JSON -> protobuf -> JSON keeps the events
expect 0 "$recur" trace convert "$tmp/small.json" "$tmp/small.pftrace"
contains "$tmp/err" "Perfetto protobuf"
[ "$(head -c 1 "$tmp/small.pftrace" | od -An -tx1 | tr -d ' ')" = "0a" ] || fail "pftrace does not start with field 1"
expect 0 "$recur" trace convert "$tmp/small.pftrace" "$tmp/back.json"
expect 0 "$recur" trace stats --json "$tmp/back.json"
/usr/bin/python3 -c "import json,sys; j=json.load(open('$tmp/out')); assert j['events']==5 and j['phases']=={'X':3,'s':1,'f':1}, j" \
  || fail "protobuf round trip lost events"
expect 0 "$recur" trace convert "$tmp/small.json" "$tmp/small.out" --format json
/usr/bin/python3 -c "import json; json.load(open('$tmp/small.out'))" || fail "--format json output is not JSON"

# a real Kineto trace, gzip-compressed
if [ -d "$hta" ]; then
  expect 0 "$recur" trace stats --json "$hta/trace_filter/sampled_rank-0.json.gz"
  /usr/bin/python3 -c "import json; j=json.load(open('$tmp/out')); assert j['events']==4820 and j['rank']==0 and j['world_size']==128, j" \
    || fail "HTA rank 0 stats"
  # merge two ranks
  expect 0 "$recur" trace merge --json -o "$tmp/merged.json.gz" "$hta/trace_filter/sampled_rank-0.json.gz" \
    "$hta/trace_filter/sampled_rank-1.json.gz"
  /usr/bin/python3 -c "import json; j=json.load(open('$tmp/out')); assert j['events']==4820+4685 and j['inputs']==2, j" \
    || fail "merge summary"
  expect 0 "$recur" trace stats "$tmp/merged.json.gz"
  contains "$tmp/out" "9505 events"
  # the same rank twice is a failure (exit 1)
  expect 1 "$recur" trace merge -o "$tmp/dup.json" "$hta/trace_filter/sampled_rank-0.json.gz" \
    "$hta/trace_filter/sampled_rank-0.json.gz"
  contains "$tmp/err" "rank 0 appears twice"
else
  echo "note: no HTA test data at $hta; skipping the Kineto checks" >&2
fi

# failures: bad file (exit 1, names file, byte, expectation), missing file, bad usage (exit 2)
printf '{"traceEvents":[{"ph":"X","name":"a","ts":"x"}]}' >"$tmp/bad.json"
expect 1 "$recur" trace stats "$tmp/bad.json"
contains "$tmp/err" "$tmp/bad.json: byte 42: expected a number"
printf '{"traceEvents":[{"ph":"X","na' >"$tmp/cut.json"
expect 1 "$recur" trace convert "$tmp/cut.json" "$tmp/cut.pftrace"
contains "$tmp/err" "cut.json: byte 29: unexpected end of input"
printf '\x1f\x8b\x08\x00garbage' >"$tmp/bad.json.gz"
expect 1 "$recur" trace stats "$tmp/bad.json.gz"
contains "$tmp/err" "bad.json.gz: byte"
expect 1 "$recur" trace stats "$tmp/missing.json"
contains "$tmp/err" "missing.json: cannot open"
expect 2 "$recur" trace stats
expect 2 "$recur" trace convert "$tmp/small.json"
expect 2 "$recur" trace convert "$tmp/small.json" "$tmp/x.json" --format yaml
expect 2 "$recur" trace merge "$tmp/small.json"
expect 2 "$recur" trace
expect 0 "$recur" trace stats --help
contains "$tmp/out" "--json"
expect 0 "$recur" trace merge --help
contains "$tmp/out" "--output"

if [ "$failures" -ne 0 ]; then
  echo "trace CLI: $failures failure(s)" >&2
  exit 1
fi
echo "trace CLI: all checks passed"
