#!/bin/sh
# A fixed, short subset of the episode suite, run by the built-in agent from the starting
# configurations through `recur agent eval`: every run must meet its
# episode's [expect]. kv-transfer-overlap's chain of evidence is checked on its own (below).
# Usage: episodes_test.sh /path/to/recur SOURCE_DIR [EPISODE ...]   (default: the subset)
set -u
RECUR="$1"
SRC="$2"
shift 2
# Scored through `recur agent eval` (below); kv-transfer-overlap has its own check.
EVAL_EPISODES="kda-replayssm partition-numerics numerics/kv-cache-layer-dtype engine/projection-decode-speed
  kernels/gemm-fp32-roof numerics/f64-exact-logits"
ONLY="${*:-$(for e in $EVAL_EPISODES; do printf '%s ' "${e##*/}"; done)kv-transfer-overlap}"
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

# The subset runs through `recur agent eval` with the built-in proposer, as the suite's score
# does (docs/agent.md, "Evaluating a proposer"): each run must meet its episode's [expect]
# (outcome, root cause, no decoy kept). The budgets are twice the episodes' own: tight enough
# that a regression that makes the agent wander fails here, with room for the load of the
# tests ctest runs beside this one. The subset covers a kernel speed gate, numerics
# across partitionings and in one layer's KV cache, engine throughput with no reference arm,
# and both kinds of honest stop.
EVAL_SET=""
for e in $EVAL_EPISODES; do want "${e##*/}" && EVAL_SET="$EVAL_SET $EP/$e.toml"; done
if [ -n "$EVAL_SET" ]; then
  # shellcheck disable=SC2086
  "$RECUR" agent eval $EVAL_SET --proposer builtin --budget-scale 2 --journal "$T/runs/journal.db" --json \
    >"$T/eval.json" 2>"$T/eval.err"
  rc=$?
  [ $rc = 0 ] || fail "agent eval: exit $rc: $(tail -3 "$T/eval.err")"
  /usr/bin/python3 - "$T/eval.json" <<'PYEOF' || fail "agent eval: $(head -c 4000 "$T/eval.json")"
import json, sys
j = json.load(open(sys.argv[1]))
bad = []
for r in j["runs"]:
    ok = r["outcome_met"] and r["root_cause_named"] in (True, None) and not r["decoys_kept"] and r["report"]
    print(r["episode"], "ok:" if ok else "FAILED:", r["expected"], "|", r["outcome"], "| changes:", " ".join(r["changes"]))
    if not ok:
        bad.append(r["episode"])
assert not bad, bad
PYEOF
  # Only live knobs: every change the built-in proposer tried is a knob the gate's workload read
  # under the configuration it was tried from (the latest gate's "knobs read" note).
  for run in $(/usr/bin/python3 -c 'import json,sys; print(" ".join(r["run"] for r in json.load(open(sys.argv[1]))["runs"]))' "$T/eval.json"); do
    "$RECUR" journal show "$run" --db "$T/runs/journal.db" --json --feedback >"$T/show.json" || { fail "journal show $run"; continue; }
    /usr/bin/python3 - "$T/show.json" "$run" <<'PYEOF' || fail "$run: a change to a knob its workload did not read"
import json, sys
prefix = "knobs read under the candidate arm: "
live = None
for e in json.load(open(sys.argv[1]))["experiments"]:
    notes = (e.get("feedback") or {}).get("notes") or []
    for k in e["config_diff"]:
        if e["probe"] == "gate" and e["hypothesis"].startswith("ablation"):
            continue  # the ablation puts a kept knob back; it was live when it was kept
        assert live is not None and k in live, (sys.argv[2], e["step"], k, sorted(live or []))
    if e["probe"] == "gate" and e["decision"] in ("keep", "none"):
        for n in notes:
            if n.startswith(prefix):
                live = set(n[len(prefix):].split(", "))
print(sys.argv[2], "ok: every change is to a knob the workload read")
PYEOF
  done
fi

# KV transfer overlap: the Python prefill path (needs the bindings built beside recur). Whether
# its throughput gate passes depends on free CPU (the transfer overlaps the forward only when a
# vCPU is free; under other tests' load it fails either way), so this checks the agent's chain
# of evidence instead, which does not: the first experiments of a run (gate, its reruns when
# undecided, overlap, locks, the proposal) must localize the gap to the GIL held across the
# forward and propose python.release_gil. The whole episode, gate included: `make run`.
if ! want kv-transfer-overlap; then
  :
elif [ -f "$(dirname "$RECUR")/python/recur/__init__.py" ]; then
  # Eight steps: up to three gates (an inconclusive one is measured again), the overlap, the
  # locks and the time split of the same trace, the proposal and its first probe.
  "$RECUR" agent run --episode "$EP/kv-transfer-overlap.toml" --journal "$T/runs/journal.db" --steps 8 --json \
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
