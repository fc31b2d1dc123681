#!/bin/sh
# End-to-end test of `recur agent run` and `recur agent resume`: the agent is killed with
# SIGKILL in the middle of an episode, and the resumed run loses and duplicates nothing: every
# experiment done before the kill is replayed with the same Feedback, the one that was running
# (if any) runs again once, the steps stay contiguous, and the gate passes in the end.
# Also: exit codes, --json, and usage errors. Uses the rmsnorm speed gate (seconds).
# Usage: agent_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
SRC="$2"
. "$(dirname "$0")/testlib.sh"
PY=/usr/bin/python3

cat > "$T/episode.toml" <<TOML
name = "rms-crash"
description = "rmsnorm starts at scalar; the gate wants 1.5x over scalar"
gate = "$SRC/episodes/gates/rmsnorm-speed.toml"
candidate = "best"
budget_s = 300
[start]
"kernel.rmsnorm.variant" = "scalar"
TOML
J="$T/runs/journal.db"

# Usage errors exit 2 and say what was expected.
"$RECUR" agent run 2>"$T/err"; [ $? = 2 ] || fail "agent run without --episode should exit 2"
grep -q -- "--episode" "$T/err" || fail "usage error should name --episode: $(cat "$T/err")"
"$RECUR" agent run --episode "$T/episode.toml" --proposer magic 2>"$T/err"; [ $? = 2 ] || fail "bad proposer should exit 2"
grep -qF "expected builtin, random[:SEED]" "$T/err" || fail "bad proposer message: $(cat "$T/err")"
printf 'gate = "nope.toml"\n' > "$T/bad.toml"
"$RECUR" agent run --episode "$T/bad.toml" 2>"$T/err"; [ $? = 2 ] || fail "a malformed episode (missing gate file) is a usage error: exit 2"
grep -q "bad.toml" "$T/err" || fail "the error should name the episode: $(cat "$T/err")"

# max_experiments is exact: a limit of 2 runs two experiments (the gate and the first
# attribution probe), never a third, and the run ends saying why.
sed 's/^budget_s = 300$/budget_s = 300\nmax_experiments = 2/' "$T/episode.toml" > "$T/limit.toml"
grep -q '^max_experiments = 2$' "$T/limit.toml" || fail "the limit episode lacks max_experiments"
"$RECUR" agent run --episode "$T/limit.toml" --journal "$T/limit.db" --json >"$T/limit.json" 2>/dev/null
[ $? = 1 ] || fail "a run stopped at its experiment limit exits 1"
$PY - "$T/limit.json" <<'PYEOF' || fail "experiment limit: $(head -c 1500 "$T/limit.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j["experiments"]) == 2, [e["probe"] for e in j["experiments"]]
assert "2 experiments (the limit)" in j["outcome"], j["outcome"]
PYEOF

# Start, wait until at least two experiments are done, then SIGKILL.
"$RECUR" agent run --episode "$T/episode.toml" --journal "$J" --run crash >"$T/run.out" 2>"$T/run.err" &
pid=$!
done_count=0
for _ in $(seq 1 600); do
  done_count=$("$RECUR" journal show crash --db "$J" --json 2>/dev/null |
    $PY -c "import json,sys; j=json.load(sys.stdin); print(sum(e['state']=='done' for e in j['experiments']))" 2>/dev/null || echo 0)
  [ "${done_count:-0}" -ge 2 ] && break
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ "${done_count:-0}" -ge 2 ] || fail "the agent never finished two experiments (stderr: $(cat "$T/run.err"))"
"$RECUR" journal show crash --db "$J" --json > "$T/before.json" || fail "journal unreadable after kill -9"

# Resume: replays what was done, finishes the episode.
"$RECUR" agent resume crash --journal "$J" --json > "$T/after.json" 2>"$T/resume.err"
rc=$?
[ $rc = 0 ] || fail "resume exited $rc: $(tail -5 "$T/resume.err")"
grep -q "replayed" "$T/resume.err" || fail "resume should report replayed steps on stderr"
"$RECUR" journal show crash --db "$J" --json > "$T/journal.json" || fail "journal unreadable after resume"
$PY - "$T/before.json" "$T/after.json" "$T/journal.json" <<'PYEOF' || fail "resume invariants (see above)"
import json, sys
before = json.load(open(sys.argv[1]))
after = json.load(open(sys.argv[2]))
journal = json.load(open(sys.argv[3]))
assert after["passed"] is True, after["outcome"]
assert after["replayed"] >= sum(e["state"] == "done" for e in before["experiments"]), after
exps = journal["experiments"]
steps = [e["step"] for e in exps]
assert steps == list(range(len(steps))), steps                     # contiguous, no duplicates
assert all(e["state"] == "done" for e in exps), [e["state"] for e in exps]
old = {e["step"]: e for e in before["experiments"]}
for e in exps:
    o = old.get(e["step"])
    if o is None:
        continue
    if o["state"] == "done":                                         # replayed, never re-run
        assert e["feedback"] == o["feedback"] and e["attempts"] == o["attempts"] == 1, e["step"]
    elif o["state"] == "running":                                    # re-run exactly once
        assert e["attempts"] == o["attempts"] + 1, (e["attempts"], o["attempts"])
assert journal["run"]["state"] == "done", journal["run"]
assert after["final_config"]["kernel.rmsnorm.variant"] != "scalar", after["final_config"]
print("resume ok:", len(exps), "experiments,", after["replayed"], "replayed")
PYEOF

# The report of the resumed run exists and names the run.
rep=$($PY -c "import json; print(json.load(open('$T/after.json'))['report'] or '')")
[ -n "$rep" ] && [ -f "$rep" ] || fail "no report written: '$rep'"
grep -q "crash" "$rep" 2>/dev/null || fail "the report does not name the run"

finish agent_cli_test
