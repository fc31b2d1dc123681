#!/bin/sh
# Fault cases of disaggregated serving (docs/serve.md, "Roles"), each with a real SIGKILL at a
# deterministic point (RECUR_FAULT_PREFILL_PAUSE, serve_disagg_faults_lib.sh):
#   1. two prefill workers, one killed mid-transfer: the request is retried on the other (200,
#      same text), the router reports the dead one (/health degraded, recur_router_worker_up 0);
#   2. one prefill worker killed mid-transfer: that request gets 503 no_prefill_worker, /health
#      503, new requests 503 error JSON; a prefill worker restarted on the same port is found by
#      the next request and serves again;
#   3. a decode worker killed mid-transfer: 502 decode_worker_lost with one decode worker (over
#      shm, and over TCP where the prefill's next layer finds the peer gone), retried on the other
#      with two; the prefill worker keeps serving.
# The surviving decode worker has one receive slot, so a slot leaked by any case fails the next
# request with 429. Every curl has a bounded --max-time: nothing may hang.
# Usage: serve_disagg_faults_test.sh /path/to/recur
set -u
RECUR="$1"
. "$(dirname "$0")/serve_disagg_lib.sh"
. "$(dirname "$0")/serve_disagg_faults_lib.sh"
tiny_model
BODY='{"model":"tiny","prompt":"Once upon a time","max_tokens":8,"temperature":0,"ignore_eos":true}'
prefill() { launch "$1" env RECUR_FAULT_PREFILL_PAUSE="$T/$1.arm" "$RECUR" serve --role prefill -m "$M" --port "${2:-0}" --threads 1; }
decode() { launch "$1" "$RECUR" serve --role decode -m "$M" --port 0 --threads 1 --kv-slots 1; }
launch all "$RECUR" serve -m "$M" --port 0 --threads 1
decode d
decode d_killed
decode d_killed2
prefill p_killed
prefill p_other
prefill p_single
prefill p
launch p_tcp env RECUR_FAULT_PREFILL_PAUSE="$T/p_tcp.arm" "$RECUR" --set serve.kv_transfer=tcp serve --role prefill \
  -m "$M" --port 0 --threads 1
decode d_killed_tcp
ALL=http://127.0.0.1:$(port_of all) || exit 1
D=http://127.0.0.1:$(port_of d) || exit 1
DK=http://127.0.0.1:$(port_of d_killed) || exit 1
DK2=http://127.0.0.1:$(port_of d_killed2) || exit 1
PK=http://127.0.0.1:$(port_of p_killed) || exit 1
PO=http://127.0.0.1:$(port_of p_other) || exit 1
PS_PORT=$(port_of p_single) || exit 1
PS=http://127.0.0.1:$PS_PORT
P=http://127.0.0.1:$(port_of p) || exit 1
P_TCP=http://127.0.0.1:$(port_of p_tcp) || exit 1
DK_TCP=http://127.0.0.1:$(port_of d_killed_tcp) || exit 1
router r_two_prefill "$PK,$PO" "$D"
router r_one_prefill "$PS" "$D"
router r_one_decode "$P" "$DK"
router r_two_decode "$P" "$DK2,$D"
router r_tcp "$P_TCP" "$DK_TCP"
R_TWO_P=http://127.0.0.1:$(port_of r_two_prefill) || exit 1
R_ONE_P=http://127.0.0.1:$(port_of r_one_prefill) || exit 1
R_ONE_D=http://127.0.0.1:$(port_of r_one_decode) || exit 1
R_TWO_D=http://127.0.0.1:$(port_of r_two_decode) || exit 1
R_TCP=http://127.0.0.1:$(port_of r_tcp) || exit 1
reference "$ALL"

# 1. Two prefill workers; the first (round-robin) is killed mid-transfer: retried on the other.
prefill_killed_retried "$R_TWO_P" "$T/p_killed.arm" "$PID_p_killed" "$PK" 1

# 2. The only prefill worker killed mid-transfer: errors, 503s; back on the same port: serves.
only_prefill_killed "$R_ONE_P" "$T/p_single.arm" "$PID_p_single" "$PS" 2
prefill p_back "$PS_PORT"
[ "$(port_of p_back)" = "$PS_PORT" ] || fail "prefill worker did not come back on port $PS_PORT"
ok_text "$(post "$R_ONE_P" "$T/2b.json")" "$T/2b.json" "after the prefill worker came back"
code=$(health "$R_ONE_P" "$T/2bh.json")
[ "$code" = 200 ] && grep -q '"status":"ok"' "$T/2bh.json" || fail "health after the prefill came back: HTTP $code $(cat "$T/2bh.json")"

# 3. Decode workers killed mid-transfer: one decode worker, the request fails; two, it is retried.
code=$(in_flight "$R_ONE_D" "$T/p.arm" "$PID_d_killed" "$T/3.json")
[ "$code" = 502 ] && grep -q '"code":"decode_worker_lost"' "$T/3.json" || fail "decode killed mid-transfer: HTTP $code $(cat "$T/3.json")"
code=$(in_flight "$R_TWO_D" "$T/p.arm" "$PID_d_killed2" "$T/3r.json")
ok_text "$code" "$T/3r.json" "decode killed mid-transfer, retried on the other"
curl -sf --max-time 10 "$R_TWO_D/metrics" | grep -q 'outcome="retried"} 1' || fail "retried metric"
for i in 1 2; do ok_text "$(post "$R_TWO_D" "$T/3n$i.json")" "$T/3n$i.json" "request $i after the decode kill"; done
# Over TCP the prefill worker's next layer finds the peer gone (or, when the kill lands while a
# request is in flight, its connection reset): the transfer fails, and the router
# reports the lost decode worker.
code=$(in_flight "$R_TCP" "$T/p_tcp.arm" "$PID_d_killed_tcp" "$T/3t.json")
[ "$code" = 502 ] && grep -q '"code":"decode_worker_lost"' "$T/3t.json" && grep -Eq 'peer gone|Connection reset|Broken pipe' "$T/3t.json" \
  || fail "decode killed mid-transfer over TCP: HTTP $code $(cat "$T/3t.json")"
curl -sf --max-time 10 "$P_TCP/metrics" | grep -q '^recur_kv_transfer_failures_total 1' || fail "prefill transfer failure metric"
echo "serve_disagg_faults_test: ok"
