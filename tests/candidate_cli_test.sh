#!/bin/sh
# `recur candidate build --patch FILE` against a tiny fixture repository (tests/candidate_fixture:
# a Makefile and a stand-alone runner of kernel rmsnorm that speaks the kernel-runner protocol),
# created here as a git repo. Patches (tests/candidate_fixture/patches): (a) a correct new variant -> check confirmed and a bench
# ratio; (b) a wrong one -> failed, localized to the column it skips; (c) one that does not
# apply; (d) one that does not compile -> the compiler's error; (e) a cheat that skips the work,
# prints a fake timing and tries to read the evaluator's memory -> failed, memory unreadable.
# The fixture's tree (status, HEAD, worktree list) is the same before and after every case.
# Usage: candidate_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
SRC="$2"
. "$(dirname "$0")/testlib.sh"
. "$(dirname "$0")/candidate_fixture.sh"

tree_state() { (git -C "$R" status --porcelain; git -C "$R" rev-parse HEAD) | md5sum; }
BEFORE=$(tree_state)


build() {  # build NAME [extra flags]: runs the candidate, JSON in $T/NAME.json, exit code in $T/NAME.rc
  name="$1"
  shift
  "$RECUR" candidate build --repo "$R" --patch "$P/$name.patch" --build-cmd make --runner ./runner \
    --shape M8,N256 --budget-s 0.3 --timeout-s 60 --scratch "$T/scratch" --json --quiet "$@" >"$T/$name.json" 2>"$T/$name.err"
  echo $? >"$T/$name.rc"
  [ "$(tree_state)" = "$BEFORE" ] || fail "$name: the fixture's tree changed"
}
expect() {  # expect NAME RC PYTHON-ASSERTIONS on j (the record)
  [ "$(cat "$T/$1.rc")" = "$2" ] || fail "$1: exit $(cat "$T/$1.rc"), expected $2: $(head -c 600 "$T/$1.json") $(tail -3 "$T/$1.err")"
  /usr/bin/python3 -c "
import json
j = json.load(open('$T/$1.json'))
notes = ' | '.join(j['notes'])
metrics = {m['name']: m for m in j['metrics']}
$3
" || fail "$1: $(head -c 1500 "$T/$1.json")"
}

build fast
expect fast 0 "
assert j['probe'] == 'candidate.build' and j['verdict'] != 'failed', j['verdict']
assert 'variant=fast' in j['subject'] and ' vs ' in j['subject'], j['subject']
assert metrics['comparisons_failed']['value'] == 0 and metrics['comparisons']['value'] == 12, metrics
assert 'ratio' in metrics and len(metrics['ratio']['ci95']) == 2, metrics
assert 'check: all 12 comparisons within tolerance' in notes, notes"

build wrong
expect wrong 1 "
assert j['verdict'] == 'failed' and j['notes'][0].startswith('check refuted'), notes
assert 'col 255' in notes, notes
assert 'ratio' not in metrics"

build stale
expect stale 1 "assert j['verdict'] == 'failed' and 'does not apply' in j['notes'][0], notes"

build broken
expect broken 1 "assert j['verdict'] == 'failed' and 'build failed' in j['notes'][0] and 'undefined_helper' in j['notes'][0], notes"

build cheat --keep
expect cheat 1 "
assert j['verdict'] == 'failed' and 'time_us 0.001' in j['notes'][0], notes
err = open(j['artifacts']['worktree'] + '/../runner.err').read()
assert 'denied' in err and 'READABLE' not in err, err
print(j['artifacts']['worktree'])" >"$T/kept" && git -C "$R" worktree remove --force "$(cat "$T/kept")"

[ "$(git -C "$R" worktree list | wc -l)" = 1 ] || fail "worktrees left behind: $(git -C "$R" worktree list)"
finish candidate_cli_test
