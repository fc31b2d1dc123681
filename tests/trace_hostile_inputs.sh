#!/usr/bin/env bash
# Issue #24, inputs that explode or lie: a directory, a FIFO and /dev/zero given as a trace are
# refused by name (no bad_alloc, no endless read, no wait for a writer); a gzip bomb stops at the
# inflate limit (--max-trace-bytes) with an error naming the file and the limit; the reader's
# recoveries (B without E, invalid UTF-8 with its exact byte offset) show in `trace stats` and in
# every analysis' output, text and --json.
#   tests/trace_hostile_inputs.sh RECUR_BINARY SOURCE_DIR
set -uo pipefail
recur=${1:?usage: trace_hostile_inputs.sh RECUR SOURCE_DIR}
. "$(dirname "$0")/testlib.sh"
tmp=$T

# ---- not regular files ----
mkdir "$tmp/dir"
expect 1 "$recur" trace stats "$tmp/dir"
contains "$tmp/err" "$tmp/dir: is a directory: expected a regular trace file"
lacks "$tmp/err" "bad_alloc"
expect 1 "$recur" trace stats /dev/zero
contains "$tmp/err" "/dev/zero: is a character device: expected a regular trace file"
mkfifo "$tmp/fifo"
expect 1 "$recur" trace stats "$tmp/fifo"
contains "$tmp/err" "$tmp/fifo: is a FIFO: expected a regular trace file"
expect 1 "$recur" analyze breakdown "$tmp/fifo"
contains "$tmp/err" "is a FIFO"
expect 1 "$recur" analyze hta /dev/zero
contains "$tmp/err" "/dev/zero: is a character device"

# ---- a gzip bomb: one event whose name inflates to 8 MiB from a few KB ----
/usr/bin/python3 - "$tmp/bomb.json.gz" <<'PY'
import gzip, sys
with gzip.open(sys.argv[1], "wb", compresslevel=9) as f:
    f.write(b'{"traceEvents": [{"ph":"i","ts":1,"pid":1,"tid":1,"name":"')
    f.write(b"a" * (8 << 20))
    f.write(b'"}]}')
PY
[ "$(stat -c %s "$tmp/bomb.json.gz")" -lt 65536 ] || fail "the bomb is not small"
expect 1 "$recur" trace stats --max-trace-bytes 1MiB "$tmp/bomb.json.gz"
contains "$tmp/err" "$tmp/bomb.json.gz: inflates to more than 1048576 bytes"
contains "$tmp/err" "--max-trace-bytes raises it"
expect 1 "$recur" analyze breakdown --max-trace-bytes 1048576 "$tmp/bomb.json.gz"
contains "$tmp/err" "inflates to more than 1048576 bytes"
expect 1 "$recur" trace convert --max-trace-bytes 1MiB "$tmp/bomb.json.gz" "$tmp/x.json"
contains "$tmp/err" "inflates to more than 1048576 bytes"
# Raised past its size, the same file loads.
expect 0 "$recur" trace stats --max-trace-bytes 16MiB "$tmp/bomb.json.gz"
contains "$tmp/out" "1 events on"
expect 2 "$recur" trace stats --max-trace-bytes 0 "$tmp/bomb.json.gz"

# ---- recoveries carried into the analyses ----
# A 200 µs trace whose B on thread 2 never ends: it is closed at the track's end (a guess).
cat >"$tmp/open.json" <<'JSON'
{"traceEvents": [
 {"ph":"X","name":"step","pid":1,"tid":1,"ts":0,"dur":200},
 {"ph":"B","name":"forgotten","pid":1,"tid":2,"ts":10},
 {"ph":"X","name":"work","pid":1,"tid":2,"ts":20,"dur":30}
]}
JSON
note="$tmp/open.json: recovered: 1 B without E closed at track end"
for verb in breakdown locks critical-path; do
  expect 0 "$recur" analyze "$verb" "$tmp/open.json"
  contains "$tmp/out" "note: $note"
  expect 0 "$recur" analyze "$verb" --json "$tmp/open.json"
  /usr/bin/python3 - "$tmp/out" "$note" <<'PY' || fail "$verb --json lacks the recovery note"
import json, sys
notes = json.load(open(sys.argv[1]))["notes"]
assert any(n.startswith(sys.argv[2]) for n in notes), notes
PY
done
expect 0 "$recur" analyze hta "$tmp/open.json"  # HTA names the file alone, as in its other notes
contains "$tmp/out" "note: open.json: recovered: 1 B without E closed at track end"
expect 0 "$recur" analyze overlap "$tmp/open.json" 'name=step' 'name=work'
contains "$tmp/out" "note: $note"
expect 0 "$recur" analyze diff "$tmp/open.json" "$tmp/open.json"
[ "$(grep -cF "note: $note" "$tmp/out")" -eq 2 ] || fail "diff: one note per trace expected: $(head -c 400 "$tmp/out")"
# A clean trace has no note.
printf '[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":5}]' >"$tmp/clean.json"
expect 0 "$recur" analyze breakdown "$tmp/clean.json"
lacks "$tmp/out" "note:"

# ---- invalid UTF-8: replaced, with the byte's exact offset ----
/usr/bin/python3 - "$tmp/utf8.json" <<'PY'
import sys
doc = b'[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":5,"name":"bad'
assert len(doc) == 53  # the bad byte's offset (0-based, as every reader message counts)
doc += b'\xff' + b'name"}]'
open(sys.argv[1], "wb").write(doc)
PY
expect 0 "$recur" trace stats "$tmp/utf8.json"
contains "$tmp/out" "recovered: 1 invalid UTF-8 byte replaced by U+FFFD (at byte 53)"
contains "$tmp/out" "bad�name"
expect 0 "$recur" analyze breakdown --json "$tmp/utf8.json"
contains "$tmp/out" "invalid UTF-8 byte replaced by U+FFFD (at byte 53)"

finish trace_hostile_inputs
