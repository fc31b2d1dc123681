#!/bin/sh
# `recur agent run --allow-patches` with a command proposer that submits a patch action: the
# patch is built and judged as a candidate (the fixture repository of candidate_cli_test), the
# record is a `candidate.build` experiment and comes back as the proposer's next last_feedback;
# a resume replays it without building again or asking the program.
# Usage: proposer_patch_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
SRC="$2"
. "$(dirname "$0")/testlib.sh"
. "$(dirname "$0")/candidate_fixture.sh"
export PATCH_MARKER="$T/shown.json" PATCH_FILE="$P/fast.patch"

"$RECUR" agent run --episode "$SRC/episodes/kda-replayssm.toml" --journal "$T/j.db" --run patch --budget-s 60 \
  --proposer "command:/usr/bin/python3 $SRC/tests/proposers/patch_then_stop.py" --allow-patches \
  --candidate-repo "$R" --candidate-build-cmd make --candidate-runner ./runner --candidate-scratch "$T/scratch" \
  --candidate-budget-s 0.3 --json >"$T/run.json" 2>"$T/run.err"
[ -s "$T/run.json" ] || fail "agent run printed no summary: $(tail -5 "$T/run.err")"
/usr/bin/python3 - "$T/run.json" "$PATCH_MARKER" <<'PYEOF' || fail "patch action: $(head -c 1500 "$T/run.json")"
import json, sys
j = json.load(open(sys.argv[1]))
shown = json.load(open(sys.argv[2]))
probes = [e["probe"] for e in j["experiments"]]
assert "candidate.build" in probes, probes
i = probes.index("candidate.build")
assert probes[i - 1] == "propose" and probes[i + 1] == "propose", probes
fb = shown["last_feedback"]
assert fb["probe"] == "candidate.build" and fb["verdict"] != "failed", fb
assert "variant=fast" in fb["subject"], fb["subject"]
assert "patch" in shown["actions"], shown["actions"]
print("patch action ok:", fb["subject"], fb["verdict"])
PYEOF

# Resume replays the proposals and the candidate's record: nothing is asked or built again.
"$RECUR" agent resume patch --journal "$T/j.db" --proposer "command:false" --allow-patches \
  --candidate-build-cmd false --json >"$T/resume.json" 2>"$T/resume.err"
/usr/bin/python3 -c "import json,sys; j=json.load(open('$T/resume.json')); assert j['replayed'] == len(j['experiments']), j" \
  || fail "resume should replay every step: $(tail -3 "$T/resume.err")"
[ "$(git -C "$R" worktree list | wc -l)" = 1 ] || fail "worktrees left behind"
finish proposer_patch_cli_test
