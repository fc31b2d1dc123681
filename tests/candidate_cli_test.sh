#!/bin/sh
# `recur candidate build --patch FILE` against a tiny fixture repository (tests/candidate_fixture:
# a Makefile and a stand-alone runner of kernel rmsnorm that speaks the kernel-runner protocol),
# created here as a git repo. Patches (tests/candidate_fixture/patches): (a) a correct new variant -> check confirmed and a bench
# ratio; (b) a wrong one -> failed, localized to the column it skips; (c) one that does not
# apply; (d) one that does not compile -> the compiler's error; (e) a cheat that skips the work,
# prints a fake timing and tries to read the evaluator's memory -> failed, memory unreadable; (f) a
# variant that memoizes its last call -> failed by the cost check (instructions under callgrind);
# (g) a build and (h) a runner that hang -> killed at --timeout-s, failed.
# The fixture's tree (status, HEAD) is the same before and after every case, and no worktree is
# left. Last, the MCP tool candidate_build (recur mcp --allow-candidates) judges the good patch.
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
    --shape M8,N256 --budget-s 0.3 --timeout-s "${TIMEOUT_S:-60}" --scratch "$T/scratch" --json --quiet "$@" >"$T/$name.json" 2>"$T/$name.err"
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
assert 'check: all 12 comparisons within tolerance' in notes, notes
assert metrics['repeat_cost_ratio']['value'] >= 0.9 and metrics['instructions_per_call']['value'] > 1000, metrics"

# Memoization: right on every call, so check confirms it; repeated calls cost a fraction of a
# fresh one under callgrind, so the cost check fails it before any timing.
build cache
expect cache 1 "
assert j['verdict'] == 'failed' and j['notes'][0].startswith('cost check:'), notes
assert metrics['comparisons_failed']['value'] == 0, metrics
assert metrics['repeat_cost_ratio']['value'] < 0.5, metrics
assert 'ratio' not in metrics, metrics"

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

# --timeout-s: a build that hangs (its Makefile sleeps) and a runner that hangs (the Makefile
# makes it a script that sleeps) are killed, process groups and all, and reported as failed
# records naming the timeout.
TIMEOUT_S=1 build hang_build
expect hang_build 1 "assert j['verdict'] == 'failed' and j['notes'][0].startswith('build timed out after'), notes"
TIMEOUT_S=1 build hang_runner
expect hang_runner 1 "
assert j['verdict'] == 'failed' and 'no reply to \\'variants\\' within 1 s (killed)' in j['notes'][0], notes"
pgrep -f 'sleep 31.7' >/dev/null && fail "hang_build: the build's sleep was left running"
pgrep -f "$T/scratch" >/dev/null && fail "hang_runner: a runner was left running: $(pgrep -af "$T/scratch")"

# recur's own runner (the baseline's, and recur-kernel-runner's) takes one tensor set per call:
# each set's output is computed from its own inputs; a count that is neither one set nor ITERS sets
# is an error reply.
/usr/bin/python3 - "$RECUR" "$T/shm" <<'PYEOF' || fail "recur candidate runner: per-call tensor sets"
import math, random, struct, subprocess, sys
recur, path = sys.argv[1:3]
n = 64
sets = [([random.uniform(-2, 2) for _ in range(n)], [random.uniform(0.5, 1.5) for _ in range(n)]) for _ in range(2)]
with open(path, "wb") as f:
    for x, w in sets:
        f.write(struct.pack(f"{n}f", *x) + struct.pack(f"{n}f", *w) + bytes(4 * n))
offs = " ".join(str(s * 12 * n + t * 4 * n) for s in range(2) for t in range(3))
shm = open(path, "r+b")
p = subprocess.run(["sh", "-c", 'exec "$0" candidate runner 3<>"$1"', recur, path], input=f"run rmsnorm scalar M1,N{n} 2 {offs}\n"
                   f"run rmsnorm scalar M1,N{n} 2 0 256 512 768 1024\nquit\n", capture_output=True, text=True,
                   timeout=30)
replies = p.stdout.splitlines()
assert len(replies) == 2 and replies[0] == "ok" and replies[1].startswith("error "), (replies, p.stderr)
shm.seek(0)
data = shm.read()
for s, (x, w) in enumerate(sets):
    y = struct.unpack_from(f"{n}f", data, s * 12 * n + 8 * n)
    scale = 1 / math.sqrt(sum(v * v for v in x) / n + 1e-6)
    assert all(abs(y[i] - x[i] * scale * w[i]) < 1e-4 for i in range(n)), (s, y[:4])
PYEOF
# MCP: candidate_build exists only with --allow-candidates, and judges a client's patch in the
# served tree with the server's build command.
/usr/bin/python3 - "$RECUR" "$R" "$P/fast.patch" <<'PYEOF' || fail "mcp candidate_build"
import json, subprocess, sys
recur, repo, patch = sys.argv[1:4]
def session(flags, calls):
    p = subprocess.Popen([recur, "mcp", *flags], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    msgs = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
             "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    msgs += [{"jsonrpc": "2.0", "id": i + 1, "method": m, "params": a} for i, (m, a) in enumerate(calls)]
    out, _ = p.communicate("".join(json.dumps(m) + "\n" for m in msgs), timeout=60)
    return {r["id"]: r for r in map(json.loads, out.splitlines()) if "id" in r}
plain = session([], [("tools/list", {})])
assert "candidate_build" not in [t["name"] for t in plain[1]["result"]["tools"]]
r = session(["--allow-candidates", "--candidate-build-cmd", "make", "--candidate-runner", "./runner"],
            [("tools/call", {"name": "candidate_build", "arguments": {"patch": open(patch).read(),
              "shape": "M8,N256", "budget_s": 0.3}})])
fb = r[1]["result"]["structuredContent"]
assert fb["probe"] == "candidate.build" and fb["verdict"] != "failed" and "variant=fast" in fb["subject"], fb
PYEOF
[ "$(tree_state)" = "$BEFORE" ] || fail "mcp: the fixture's tree changed"

[ "$(git -C "$R" worktree list | wc -l)" = 1 ] || fail "worktrees left behind: $(git -C "$R" worktree list)"
finish candidate_cli_test
