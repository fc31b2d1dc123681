#!/bin/sh
# The shipped episodes, run by the agent from their starting configurations with a reduced
# budget, must pass their gates, and the root cause must name the components the attribution
# pointed at (kernel:kda_replay_decode; kernel:gemm and op:all_reduce; lock:gil). The budgets are below
# the episodes' own (240 s, 300 s) so a regression that makes the agent wander fails here; they
# still leave room for a loaded machine (partition-numerics took 171 s of probes at load 5).
# Usage: episodes_test.sh /path/to/recur SOURCE_DIR [EPISODE ...]   (default: all three)
set -u
RECUR="$1"
SRC="$2"
shift 2
ONLY="${*:-kda-replayssm partition-numerics kv-transfer-overlap}"
. "$(dirname "$0")/testlib.sh"
# A copy of the episodes: partition-numerics's gate takes 5 samples of the best of 2 runs here
# (7 of 3 shipped); its speed condition has a wide margin (0.99 against >= 0.6).
EP="$T/episodes"
cp -r "$SRC/episodes" "$EP"
sed -i 's/^runs = 7$/runs = 5/; s/^best_of = 3$/best_of = 2/' "$EP/gates/partition-numerics.toml"
grep -q '^best_of = 2$' "$EP/gates/partition-numerics.toml" || fail "partition-numerics: the gate's best_of line changed"
# kv-transfer-overlap's gate: 5 rounds (7 shipped); an undecided final gate is accepted below.
sed -i 's/^runs = 7$/runs = 5/' "$EP/gates/kv-transfer-overlap.toml"
grep -q '^runs = 5$' "$EP/gates/kv-transfer-overlap.toml" || fail "kv-transfer-overlap: the gate's runs line changed"
want() { case " $ONLY " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

run_episode() {  # NAME BUDGET PYTHON-CHECK [noise-tolerant]
  want "$1" || return 0
  "$RECUR" agent run --episode "$EP/$1.toml" --journal "$T/runs/journal.db" --budget-s "$2" --json \
    >"$T/$1.json" 2>"$T/$1.err"
  rc=$?
  [ $rc = 0 ] || [ -n "${4:-}" ] || { fail "$1: exit $rc: $(tail -3 "$T/$1.err")"; return; }
  /usr/bin/python3 - "$T/$1.json" "$3" "${4:-}" <<'PYEOF' || fail "$1: $(cat "$T/$1.json" | head -c 3000)"
import json, re, sys
j = json.load(open(sys.argv[1]))
if sys.argv[3] and not j["passed"]:
    # A throughput gate on a shared machine: when its CI stays too wide to decide, the honest
    # verdict is inconclusive. Accepted only with the right change kept (checked below) and the
    # final ratio's point estimate on the passing side; a gate that fails is never accepted.
    final = j["final_gate"]
    assert "inconclusive" in final and "fail" not in final.split(":")[0], final
    m = re.search(r"prefill_ratio\(cand vs notransfer\) ([0-9.]+) \[", final)
    assert m and float(m.group(1)) >= 0.95, final
else:
    assert j["passed"] is True, j["outcome"]
assert j["report"], "no report"
kept = [f for f in j["root_cause"]]
assert kept, "no change kept"
assert all(e["decision"] in ("keep", "revert", "none") for e in j["experiments"])
assert eval(sys.argv[2], {"j": j, "kept": kept}), sys.argv[2]
print(sys.argv[1].rsplit("/", 1)[1], "ok:", j["outcome"])
PYEOF
}

# ReplaySSM: the fix is a variant of the replay kernel whose prologue is computed once per head.
run_episode kda-replayssm 120 \
  'all(f["component"] == "kernel:kda_replay_decode" for f in kept) and j["final_config"]["kernel.kda_replay_decode.variant"].startswith("hoisted")'
# Partition numerics: TP=4 stays; the fixes are the all-reduce dtype and the projection precision.
run_episode partition-numerics 240 \
  'j["final_config"]["engine.tp"] == "4" and j["final_config"]["engine.tp.reduce_dtype"] == "f32" and j["final_config"]["kernel.gemm.precision"] != "bf16" and {f["component"] for f in kept} <= {"kernel:gemm", "op:all_reduce"}'

# KV transfer overlap: the Python prefill path (needs the bindings built beside recur). Whether
# its throughput gate passes depends on free CPU (the transfer overlaps the forward only when a
# vCPU is free; under other tests' load it fails either way), so this checks the agent's chain
# of evidence instead, which does not: the first experiments of a run (gate, its reruns when
# undecided, overlap, locks, the proposal) must localize the gap to the GIL held across the
# forward and propose python.release_gil. The whole episode, gate included: `make run`.
if ! want kv-transfer-overlap; then
  :
elif [ -f "$(dirname "$RECUR")/python/recur/__init__.py" ]; then
  "$RECUR" agent run --episode "$EP/kv-transfer-overlap.toml" --journal "$T/runs/journal.db" --steps 6 --json \
    >"$T/kv.json" 2>"$T/kv.err"
  /usr/bin/python3 - "$T/kv.json" <<'PYEOF' || fail "kv-transfer-overlap: $(head -c 3000 "$T/kv.json") $(tail -3 "$T/kv.err")"
import json, sys
j = json.load(open(sys.argv[1]))
ex = j["experiments"]
probes = [e["probe"] for e in ex]
assert "analyze.overlap" in probes and "analyze.locks" in probes, probes
overlap = next(e for e in ex if e["probe"] == "analyze.overlap")
assert "never overlapped" in overlap["result"], overlap["result"]
locks = next(e for e in ex if e["probe"] == "analyze.locks")
assert "GIL" in locks["result"], locks["result"]
prop = next(e for e in ex if e["probe"] == "propose")
assert "python.release_gil=true" in prop["result"], prop["result"]
after = [e for e in ex if e["step"] > prop["step"] and e["probe"] == "gate"]
assert not after or after[0]["hypothesis"].startswith("lock:gil explains"), after[0]["hypothesis"]
print("kv-transfer-overlap ok:", prop["result"])
PYEOF
else
  echo "kv-transfer-overlap: skipped (no Python bindings beside $RECUR)"
fi

finish episodes_test
