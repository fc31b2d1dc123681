#!/usr/bin/env bash
# End-to-end test of `recur transfer bench` and `recur transfer peer` (small sizes: a correctness
# check of the two-process path, not a measurement).
#   tests/transfer_cli_test.sh RECUR
set -u
recur=${1:?usage: transfer_cli_test.sh RECUR}
. "$(dirname "$0")/testlib.sh"

for transport in shm tcp; do
  out=$("$recur" transfer bench --transport "$transport" --bytes 262144 --blocks 8 --rounds 2 --latency-samples 4 --json) \
    || fail "$transport bench exited $?"
  python3 - "$transport" "$out" <<'PY' || fail "$transport bench JSON: $out"
import json, sys
r = json.loads(sys.argv[2])
assert r["transport"] == sys.argv[1], r
assert r["verified"] is True, r
assert r["block_bytes"] == 32768 and r["blocks"] == 8, r
assert len(r["gbps"]["samples"]) == 2 and r["gbps"]["median"] > 0, r
assert r["memcpy_gbps"]["median"] > 0 and r["block_latency_us"]["samples"] == 4, r
PY
done

table=$("$recur" transfer bench --bytes 65536 --blocks 2 --rounds 1 --latency-samples 1) || fail "table bench exited $?"
case "$table" in *"verified       yes"*) ;; *) fail "table: $table" ;; esac

# Usage errors exit 2.
"$recur" transfer bench --transport udp >/dev/null 2>&1
[ $? = 2 ] || fail "--transport udp should be a usage error"
"$recur" transfer peer --bytes 10 >/dev/null 2>&1
[ $? = 2 ] || fail "peer without --segment should be a usage error"

# The peer by hand: it announces its region and port and serves until its stdin closes; bench
# --peer sends to it over TCP and over shared memory.
coproc PEER { "$recur" transfer peer --segment "cli-peer-$$" --listen 127.0.0.1:0 --bytes 1048576; }
read -r word offset port <&"${PEER[0]}"
[ "$word" = ready ] && [ "$offset" -gt 0 ] && [ "$port" -gt 0 ] || fail "peer said '$word $offset $port'"
for target in "127.0.0.1:$port/cli-peer-$$" "cli-peer-$$"; do
  out=$("$recur" transfer bench --peer "$target" --bytes 65536 --blocks 4 --rounds 1 --latency-samples 1 --json) \
    || fail "bench --peer $target exited $?"
  case "$out" in *'"verified": true'*) ;; *) fail "bench --peer $target: $out" ;; esac
done
eval "exec ${PEER[1]}>&-"
wait "$PEER_PID" || fail "peer exited $?"

finish transfer_cli
