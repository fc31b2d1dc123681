#!/bin/sh
# `recur agent run --proposer command:PROG`: an external program that follows the state's `next`
# suggestions solves the kda-replayssm episode; its first, unsupported answer ({"action":
# "patch"}) is refused, recorded as a failed `propose` experiment, and fed back in `rejected`;
# the recorded proposals make a resume replay without asking the program again.
# Usage: proposer_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
SRC="$2"
. "$(dirname "$0")/testlib.sh"
export FOLLOW_NEXT_MARKER="$T/asked"
PROPOSER="command:/usr/bin/python3 $SRC/tests/proposers/follow_next.py"

"$RECUR" agent run --episode "$SRC/episodes/kda-replayssm.toml" --journal "$T/j.db" --run ext --budget-s 120 \
  --proposer "$PROPOSER" --json >"$T/run.json" 2>"$T/run.err"
rc=$?
[ $rc = 0 ] || fail "command proposer run exited $rc: $(tail -5 "$T/run.err")"
/usr/bin/python3 - "$T/run.json" <<'PYEOF' || fail "run checks: $(head -c 2000 "$T/run.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["passed"] is True, j["outcome"]
props = [e for e in j["experiments"] if e["probe"] == "propose"]
assert props and props[0]["verdict"] == "failed" and "patch" in props[0]["result"], props[:1]
assert j["final_config"]["kernel.kda_replay_decode.variant"].startswith("hoisted"), j["final_config"]
print("command proposer ok:", j["outcome"])
PYEOF

# The refusal was fed back: the next proposal's hypothesis (its `propose` record) counts it.
"$RECUR" journal show ext --db "$T/j.db" --json >"$T/journal.json" || fail "journal unreadable"
/usr/bin/python3 -c "
import json, sys
j = json.load(open('$T/journal.json'))
hyps = [e['feedback']['hypothesis'] for e in j['experiments'] if e['probe'] == 'propose' and e['verdict'] == 'confirmed']
assert hyps and 'refused before: 1' in hyps[0], hyps[:1]
" || fail "the refusal was not fed back to the proposer"

# Resume replays the recorded proposals: the program must not be asked again (make it fail if it is).
"$RECUR" agent resume ext --journal "$T/j.db" --proposer "command:false" --json >"$T/resume.json" 2>"$T/resume.err"
rc=$?
[ $rc = 0 ] || fail "resume exited $rc: $(tail -3 "$T/resume.err")"
/usr/bin/python3 -c "import json,sys; j=json.load(open('$T/resume.json')); assert j['replayed'] == len(j['experiments']), j" \
  || fail "resume should replay every step"

finish proposer_cli_test
