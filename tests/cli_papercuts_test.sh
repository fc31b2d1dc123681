#!/bin/sh
# A newcomer's papercuts (issue 24) and run names that would leave the journal's folder.
# Usage: cli_papercuts_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$(realpath "$1")"
SRC="$(realpath "$2")"
. "$(dirname "$0")/testlib.sh"
cd "$T"

# Global options after the verb.
out=$("$RECUR" version --isa scalar --json 2>"$T/err") || fail "version --isa after the verb: $(cat "$T/err")"
echo "$out" | grep -q '"isa": *"scalar"' || fail "version --isa scalar after the verb: $out"
out=$("$RECUR" version --set core.isa=scalar --json 2>"$T/err") || fail "version --set after the verb: $(cat "$T/err")"
echo "$out" | grep -q '"isa": *"scalar"' || fail "version --set core.isa=scalar after the verb: $out"

# model new: refuses to overwrite without --force; --json.
"$RECUR" model new m.gguf --dim 32 --layers 1 --heads 2 --vocab 400 --context 64 2>/dev/null || fail "model new"
"$RECUR" model new m.gguf --dim 32 --layers 1 --heads 2 --vocab 400 --context 64 2>"$T/err"
[ $? = 2 ] || fail "model new over an existing file should exit 2"
grep -q -- "--force" "$T/err" || fail "model new over an existing file should say --force: $(cat "$T/err")"
out=$("$RECUR" model new m.gguf --force --json --dim 32 --layers 1 --heads 2 --vocab 400 --context 64 2>/dev/null) ||
  fail "model new --force --json"
echo "$out" | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["path"]=="m.gguf" and j["parameters"]>0, j' ||
  fail "model new --json: $out"

# trace convert --json (merge has it too).
out=$("$RECUR" trace convert "$SRC/fuzz/corpus/fuzz_trace_reader/object_form.json" t.pftrace --json 2>"$T/err") ||
  fail "trace convert --json: $(cat "$T/err")"
echo "$out" | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["format"]=="perfetto" and j["events"]>0, j' ||
  fail "trace convert --json: $out"

# serve checks its flags before loading (or writing) a model.
"$RECUR" serve --max-seqs 8 --max-batch-tokens 4 >/dev/null 2>"$T/err"
[ $? = 2 ] || fail "serve --max-seqs 8 --max-batch-tokens 4 should exit 2: $(cat "$T/err")"
grep -q -- "--max-batch-tokens" "$T/err" || fail "serve's flag error should name --max-batch-tokens: $(cat "$T/err")"
"$RECUR" serve --role router >/dev/null 2>"$T/err"
[ $? = 2 ] || fail "serve --role router without workers should exit 2: $(cat "$T/err")"
[ ! -d "$T/models" ] || fail "serve wrote the default model before refusing its flags"

# generate --trace into a folder that does not exist: refused before loading any model.
"$RECUR" generate --trace /nonexistent/x.json -n 1 >/dev/null 2>"$T/err"
[ $? = 2 ] || fail "generate --trace /nonexistent/x.json should exit 2: $(cat "$T/err")"
grep -q -- "--trace" "$T/err" || fail "generate --trace error should name the flag: $(cat "$T/err")"
[ ! -d "$T/models" ] || fail "generate --trace /nonexistent/x.json wrote the default model before refusing"

# Without -m, generate and engine bench use the embedded default; generate says its weights are
# random. A smaller model planted under the default's name stands in for it.
mkdir -p "$T/models"
"$RECUR" model new "$T/models/default-hybrid-d384-l6-v32000-f32-seed1.gguf" --arch hybrid --dim 64 --layers 2 \
  --heads 2 --vocab 400 --context 128 --kda-head-dim 32 2>/dev/null || fail "model new (the stand-in default)"
"$RECUR" generate -n 2 >/dev/null 2>"$T/err" || fail "generate without -m: $(cat "$T/err")"
grep -q "RANDOM weights" "$T/err" || fail "generate without -m should say the weights are random: $(cat "$T/err")"
"$RECUR" engine bench --prefill 4 --decode 2 --runs 1 --warmup 0 --json >/dev/null 2>"$T/err" ||
  fail "engine bench without -m: $(cat "$T/err")"

# journal show is read-only: a journal not in WAL mode stays so (byte 18 of the header: 1 = rollback, 2 = WAL).
/usr/bin/python3 - "$T/j.db" <<'PY' || fail "could not create a rollback-mode journal"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA journal_mode=DELETE")
db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, episode TEXT NOT NULL, "
           "base_config TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'running', outcome TEXT NOT NULL DEFAULT '', "
           "created_at REAL NOT NULL, ended_at REAL)")
db.execute("PRAGMA user_version=1")
db.commit()
PY
before=$(od -An -tu1 -j18 -N1 "$T/j.db" | tr -d ' ')
"$RECUR" journal show --db "$T/j.db" --list >/dev/null 2>"$T/err" || fail "journal show --list: $(cat "$T/err")"
after=$(od -An -tu1 -j18 -N1 "$T/j.db" | tr -d ' ')
[ "$before" = "$after" ] || fail "journal show changed the journal's mode (header byte 18: $before -> $after)"

# Run names are folders: names that leave the journal's folder are refused, from --run and from
# an episode's name, before anything runs.
mkdir -p gates
sed 's/^budget_s = 2$/budget_s = 0.3/' "$SRC/episodes/gates/rmsnorm-speed.toml" > gates/rmsnorm-speed.toml
episode() {
  cat > "$1" <<TOML
name = "$2"
gate = "gates/rmsnorm-speed.toml"
candidate = "best"
budget_s = 30
[start]
"kernel.rmsnorm.variant" = "scalar"
TOML
}
episode ok.toml "rms"
episode escape.toml "../../escaped-by-name"
mkdir -p deep/a/b
"$RECUR" agent run --episode escape.toml --journal deep/a/b/journal.db --steps 1 --quiet >/dev/null 2>"$T/err"
[ $? = 2 ] || fail "an episode named ../../escaped-by-name should be a usage error (exit 2): $(cat "$T/err")"
grep -q "name" "$T/err" || fail "the error should name the episode's name field: $(cat "$T/err")"
for run in ../../escaped-by-run /tmp/escaped-by-run a/b; do
  "$RECUR" agent run --episode ok.toml --journal deep/a/b/journal.db --run "$run" --steps 1 --quiet >/dev/null 2>"$T/err"
  [ $? = 2 ] || fail "--run $run should be a usage error (exit 2): $(cat "$T/err")"
  grep -q "run name" "$T/err" || fail "--run $run: the error should say what a run name may be: $(cat "$T/err")"
done
for p in deep/escaped-by-name escaped-by-name deep/escaped-by-run /tmp/escaped-by-run; do
  [ ! -e "$p" ] || fail "a run name escaped the journal's folder: $p exists"
done
finish cli_papercuts_test
