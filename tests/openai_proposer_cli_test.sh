#!/bin/sh
# `recur agent run --proposer openai:URL` against `recur serve` on a tiny random-weight model:
# its answers are nonsense, which is the invalid-action path. Checks that each answer is
# refused with the reason (failed `propose` experiments), that the reasons reach the endpoint
# (the next request's `rejected`, from --proposer-log), that the run ends cleanly after three
# refusals (exit 1), that HTTP errors (a wrong API key) are refusals too, that
# --proposer-max-calls 1 stops after one call with a clear outcome, and that a resume replays
# the recorded answers without asking the endpoint.
# Usage: openai_proposer_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
SRC="$2"
. "$(dirname "$0")/testlib.sh"
. "$(dirname "$0")/serve_port.sh"
PY=/usr/bin/python3
SERVER=""
trap '[ -n "$SERVER" ] && kill -9 "$SERVER" 2>/dev/null; rm -rf "$T"' EXIT

# A small rmsnorm speed gate the scalar start fails (episodes/gates/rmsnorm-speed.toml on a
# smaller shape and budget: this test is about the proposer, not the measurement).
cat > "$T/gate.toml" <<'TOML'
name = "rmsnorm-speed-small"
conditions = ["speedup(best vs scalar) >= 1.5"]
[workload.kernel]
name = "rmsnorm"
shape = "M4,N1024"
budget_s = 0.3
seeds = [1]
[arms.scalar]
"kernel.rmsnorm.variant" = "scalar"
[arms.best]
"kernel.rmsnorm.variant" = "auto"
TOML
cat > "$T/episode.toml" <<TOML
name = "rms-openai"
description = "rmsnorm starts at scalar; the gate wants 1.5x over scalar"
gate = "$T/gate.toml"
candidate = "best"
budget_s = 60
[start]
"kernel.rmsnorm.variant" = "scalar"
TOML

tiny_serve_model "$T/tiny.gguf" 8192 || fail "model new"
"$RECUR" serve -m "$T/tiny.gguf" --port 0 --api-key sekrit --workers 1 --threads 1 2>"$T/serve.err" &
SERVER=$!
PORT=$(serve_port "$T/serve.err")
[ -n "$PORT" ] || { fail "recur serve printed no 'listening on' line: $(cat "$T/serve.err")"; # The openai options with another proposer are a usage error, not silently ignored.
"$RECUR" agent run --episode "$T/episode.toml" --journal "$T/j.db" --proposer builtin --proposer-max-calls 3 2>"$T/err"
rc=$?
[ $rc = 2 ] || fail "--proposer-max-calls with builtin exited $rc (want 2)"
grep -q "are for openai:URL proposers" "$T/err" || fail "openai options message: $(cat "$T/err")"

finish openai_proposer_cli_test; }
URL="http://127.0.0.1:$PORT/v1"
agent_run() {  # RUN_NAME EXTRA_FLAGS...: runs the episode with the openai proposer, JSON to $T/RUN_NAME.json
  name=$1
  shift
  "$RECUR" agent run --episode "$T/episode.toml" --journal "$T/j.db" --run "$name" --proposer "openai:$URL" \
    --proposer-log "$T/$name.log" --json "$@" >"$T/$name.json" 2>"$T/$name.err"
}

# Nonsense answers: three refusals in a row end the run (exit 1, no crash).
RECUR_PROPOSER_API_KEY=sekrit agent_run nonsense
rc=$?
[ $rc = 1 ] || fail "nonsense run exited $rc (want 1): $(tail -5 "$T/nonsense.err")"
$PY - "$T/nonsense.json" "$T/nonsense.log" <<'PYEOF' || fail "nonsense run checks: $(head -c 1500 "$T/nonsense.json")"
import json, sys
run = json.load(open(sys.argv[1]))
calls = [json.loads(line) for line in open(sys.argv[2])]
assert "refused answers in a row" in run["outcome"], run["outcome"]
props = [e for e in run["experiments"] if e["probe"] == "propose"]
assert len(props) == 3 and all(e["verdict"] == "failed" for e in props), props
assert all("refused: proposer 'openai:" in e["result"] for e in props), props
assert len(calls) == 3, len(calls)
req = calls[0]["request"]
assert req["temperature"] == 0 and 0 < req["max_tokens"] <= 1024 and req["model"] == "tiny", req
assert req["messages"][0]["role"] == "system" and '"action": "set"' in req["messages"][0]["content"]
states = [json.loads(c["request"]["messages"][1]["content"]) for c in calls]
assert states[0]["rejected"] == [] and states[0]["config"] == {"kernel.rmsnorm.variant": "scalar"}
assert [k["name"] for k in states[0]["knobs"]] == ["kernel.rmsnorm.variant"], "compact state: only the tagged knobs"
# Each refusal reaches the endpoint in the next request, as the journal recorded it.
for i in (1, 2):
    assert len(states[i]["rejected"]) == i, states[i]["rejected"]
    assert states[i]["rejected"][-1].startswith("refused: proposer 'openai:"), states[i]["rejected"]
for c in calls:
    assert c["response"]["usage"]["prompt_tokens"] > 0
print("nonsense answers refused:", props[0]["result"][:160])
PYEOF

# A wrong API key: HTTP 401 is a refusal with the reason, not a crash.
RECUR_PROPOSER_API_KEY=wrong OPENAI_API_KEY=sekrit agent_run badkey
rc=$?
[ $rc = 1 ] || fail "wrong-key run exited $rc (want 1): $(tail -5 "$T/badkey.err")"
grep -q 'HTTP 401' "$T/badkey.json" || fail "wrong key: no 'HTTP 401' refusal: $(head -c 1500 "$T/badkey.json")"
grep -q 'refused answers in a row' "$T/badkey.json" || fail "wrong key: outcome: $(head -c 600 "$T/badkey.json")"

# --proposer-max-calls 1: one call, then the run stops with the limit as its outcome.
OPENAI_API_KEY=sekrit agent_run limited --proposer-max-calls 1
rc=$?
[ $rc = 1 ] || fail "limited run exited $rc (want 1): $(tail -5 "$T/limited.err")"
$PY - "$T/limited.json" "$T/limited.log" <<'PYEOF' || fail "limit checks: $(head -c 1500 "$T/limited.json")"
import json, sys
run = json.load(open(sys.argv[1]))
assert "proposer stopped: proposer limit: 1 calls" in run["outcome"], run["outcome"]
assert sum(1 for _ in open(sys.argv[2])) == 1
props = [e["verdict"] for e in run["experiments"] if e["probe"] == "propose"]
assert props == ["failed", "refuted"], props
PYEOF

# Resume replays the recorded answers: the endpoint is not asked again (it is gone).
kill -TERM "$SERVER"
wait "$SERVER"
SERVER=""
"$RECUR" agent resume nonsense --journal "$T/j.db" --proposer "openai:$URL" --json >"$T/resume.json" 2>"$T/resume.err"
rc=$?
[ $rc = 1 ] || fail "resume exited $rc (want 1): $(tail -3 "$T/resume.err")"
$PY -c "import json,sys; j=json.load(open('$T/resume.json')); assert j['replayed'] == len(j['experiments']), j['replayed']" \
  || fail "resume should replay every step"

# A URL that is not one is a usage error (exit 2) naming the accepted form.
"$RECUR" agent run --episode "$T/episode.toml" --journal "$T/j.db" --proposer "openai:localhost:8000" 2>"$T/err"
rc=$?
[ $rc = 2 ] || fail "bad openai URL exited $rc (want 2)"
grep -q "expected an http:// or https:// URL" "$T/err" || fail "bad URL message: $(cat "$T/err")"

# The openai options with another proposer are a usage error, not silently ignored.
"$RECUR" agent run --episode "$T/episode.toml" --journal "$T/j.db" --proposer builtin --proposer-max-calls 3 2>"$T/err"
rc=$?
[ $rc = 2 ] || fail "--proposer-max-calls with builtin exited $rc (want 2)"
grep -q "are for openai:URL proposers" "$T/err" || fail "openai options message: $(cat "$T/err")"

finish openai_proposer_cli_test
