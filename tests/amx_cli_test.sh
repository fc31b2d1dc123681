#!/bin/sh
# kernel.gemm.amx from the command line (docs/engine.md "AMX tiles for prefill"): a Q8_0 llama's
# greedy tokens are the same with the tiles emulated as without, the trace names the tile
# products (amx=emulated: every product at m >= 16, none below); `on` without a
# usable AMX is refused, naming the knob; RECUR_AMX's values are checked by name.
# Usage: amx_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$(realpath "$1")"
. "$(dirname "$0")/testlib.sh"
cd "$T"

# FFN 1056: ffn_down's K crosses the VNNI prefill's K block (the two stored orders differ there).
expect 0 "$RECUR" model new m.gguf --arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 1056 --vocab 400 \
  --context 128 --dtype q8_0
prompt="the quick brown fox jumps over"
# With RECUR_TEST_AMX_HW=1 on an AMX CPU, the tiles run on the hardware instead (docs/gemm.md,
# "Left for an AMX machine").
mode=emulate zone=emulated
if [ -n "${RECUR_TEST_AMX_HW:-}" ] && grep -qw amx_tile /proc/cpuinfo; then mode=on zone=hardware; fi
tokens_of() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"])' "$T/out"; }
for layout in r16 rows; do
  expect 0 "$RECUR" generate -m m.gguf -p "$prompt" -n 6 --threads 2 --json --set engine.weight_layout=$layout
  off=$(tokens_of)
  expect 0 "$RECUR" generate -m m.gguf -p "$prompt" -n 6 --threads 2 --json --set engine.weight_layout=$layout \
    --set kernel.gemm.amx=$mode --trace amx.json
  tiles=$(tokens_of)
  [ "$off" = "$tiles" ] || fail "$layout: greedy tokens $off without the tiles, $tiles with them ($mode)"
  /usr/bin/python3 - amx.json "$zone" <<'PY' || fail "$layout: the trace does not show the tiles running for prefill only"
import json, sys
events = json.load(open(sys.argv[1]))
events = events["traceEvents"] if isinstance(events, dict) else events
matvec = [e.get("args", {}) for e in events if e.get("name") == "matvec"]
tile_m = [a["m"] for a in matvec if a.get("amx") == sys.argv[2]]
stored_m = [a["m"] for a in matvec if "amx" not in a]
assert tile_m and min(tile_m) >= 16, tile_m  # the prefill's products, on the tiles
assert stored_m and max(stored_m) < 16, stored_m  # decode (and the head's last row) on the stored kernels
PY
done

if grep -qw amx_tile /proc/cpuinfo; then
  echo "note: this CPU has AMX: the refusal of kernel.gemm.amx=on is not checked here"
else
  expect 1 "$RECUR" generate -m m.gguf -p "$prompt" -n 2 --set kernel.gemm.amx=on
  contains "$T/err" "kernel.gemm.amx=on: "
  contains "$T/err" "kernel.gemm.amx=emulate runs"
fi
RECUR_AMX=yes expect 2 "$RECUR" knobs
contains "$T/err" "RECUR_AMX='yes': expected off, on or emulate"

finish amx_cli_test
