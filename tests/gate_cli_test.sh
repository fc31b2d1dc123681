#!/bin/sh
# End-to-end test of `recur gate` and `recur journal show`: exit codes (gate: 0 pass, 1 fail or
# run error, 2 bad usage or spec, 3 inconclusive), --json Feedback records, spec errors that name
# file:line:column, and a journal written by journal_crash_child. Kept to a few seconds.
# Usage: gate_cli_test.sh /path/to/recur /path/to/journal_crash_child SOURCE_DIR
set -u
RECUR="$1"
CHILD="$2"
SRC="$3"
. "$(dirname "$0")/testlib.sh"

# expect CODE ARGS...: runs recur, checks the exit code, leaves stdout in $out and stderr in $err.
expect() {
  want="$1"; shift
  out="$("$RECUR" "$@" 2>"$T/err")"; got=$?
  err="$(cat "$T/err")"
  [ "$got" = "$want" ] || fail "recur $* exited $got, want $want; stderr: $err"
}
contains() { printf '%s' "$1" | grep -q -- "$2" || fail "expected '$2' in: $1"; }
# json_check PYTHON-EXPRESSION: evaluates it with j = the JSON on stdout.
json_check() {
  printf '%s' "$out" | /usr/bin/python3 -c "import json, sys; j = json.load(sys.stdin); assert $1, j" \
    || fail "JSON check '$1' failed on: $out"
}

# Every example spec is valid.
for spec in "$SRC"/episodes/gates/*.toml; do
  expect 0 gate --check "$spec"
  contains "$out" "is valid"
done

# A real gate: TP=2 and TP=4 against TP=1 on a small synthetic llama.
expect 0 gate "$SRC/episodes/gates/tp-agreement.toml" --json
json_check 'j["probe"] == "gate" and j["verdict"] == "confirmed" and j["tier"] == 3'
json_check 'any(m["name"] == "tokens_equal(tp4 vs tp1)" and m["value"] == 1 for m in j["metrics"])'
contains "$err" "check.engine tp2 vs tp1"   # progress on stderr

# A failing gate exits 1 and names the deciding condition.
sed 's/<= 1e-4",$/<= 0",/' "$SRC/episodes/gates/tp-agreement.toml" > "$T/fail.toml"
expect 1 gate "$T/fail.toml" -q
contains "$out" "verdict     refuted"
contains "$out" "gate fail: failed by condition 2"

# Bad specs exit 2 before anything runs, with file:line:column.
cat > "$T/bad.toml" <<'TOML'
conditions = [
  "decode_tok_s(fast) >= 0.9 * decode_tok_s(slow)",
]
[workload.engine]
model = "synthetic"
[arms.slow]
"engine.tp" = "1"
[arms.fst]
"engine.tp" = "2"
TOML
expect 2 gate "$T/bad.toml"
contains "$err" "bad.toml:2:17: condition 1: unknown arm 'fast'; arms: fst, slow"
sed 's/"engine.tp" = "2"/"engine.tpp" = "2"/; s/fast/fst/' "$T/bad.toml" > "$T/bad2.toml"
expect 2 gate "$T/bad2.toml"
contains "$err" "bad2.toml:9:16: arm fst: unknown knob 'engine.tpp'"
expect 2 gate "$SRC/episodes/gates/tp-agreement.toml" --set engine.tp=3
contains "$err" "is not one of"
expect 1 gate "$T/missing.toml"
contains "$err" "missing.toml: cannot open"
expect 2 gate

# The journal: a run of 6 experiments written by the crash test's child.
"$CHILD" "$T/j.db" demo 6 0 >/dev/null || fail "journal_crash_child failed"
expect 0 journal show --list --db "$T/j.db"
contains "$out" "demo"
expect 0 journal show demo --db "$T/j.db"
contains "$out" "resume: 6 done, 0 to re-run, 0 pending, 0 abandoned; next step 6"
expect 0 journal show 1 --db "$T/j.db" --json
json_check 'len(j["experiments"]) == 6 and j["experiments"][3]["decision"] == "keep" and j["experiments"][3]["feedback"]["probe"] == "bench.kernel"'
json_check 'j["resume"]["next_step"] == 6 and j["run"]["state"] == "done"'
expect 1 journal show nope --db "$T/j.db"
contains "$err" "no run 'nope'"
expect 1 journal show demo --db "$T/none.db"
contains "$err" "none.db: no such journal"
[ -e "$T/none.db" ] && fail "journal show created a database"
expect 2 journal show --db "$T/j.db"

finish gate_cli_test
