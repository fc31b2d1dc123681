#!/bin/sh
# Disaggregated serving across hosts (docs/serve.md, "Roles", Faults): three network namespaces
# joined by veth pairs, no forwarding needed:
#   this namespace   the router(s) and the --role all reference    root-P: $A.1  root-D: $B.1
#   P ("host P")     the prefill workers                           root-P: $A.2  P-D:    $C.1
#   D ("host D")     the decode workers (transfer on P-D)          root-D: $B.2  P-D:    $C.2
# so the router reaches each worker over its own link and every KV transfer crosses the P-D link
# over TCP (serve.kv_transfer=tcp), or with KV_TRANSFER=ucx over UCX (serve.kv_transfer=ucx on
# both workers, UCX_TLS=tcp unless set: network namespaces still share the host's memory, and
# UCX would pick shared memory where two hosts have only the link; the prefill worker's log
# says which transport UCX picked). Cases, each against one decode worker with a single receive
# slot (a slot leaked by any case would 429 the next request), every curl bounded by --max-time:
#   1. greedy text equal to --role all's;
#   2. a decode worker that dies mid-request: 502 decode_worker_lost, the prefill keeps serving;
#   3. the first of two prefill workers SIGKILLed mid-transfer (after layer 0 was sent, so the
#      decode worker's slot holds a truncated transfer): retried on the other with the same text,
#      /health degraded, recur_router_worker_up 0. This is also the truncated-transfer case: the
#      router never asks a decode worker to decode a slot whose prefill failed, and the retry
#      rewrites the whole slot before the decode (a block never completed is never read);
#   4. the only prefill worker SIGKILLed mid-transfer: 503 no_prefill_worker for it and for new
#      requests, /health 503, recur_router_worker_up 0;
#   5. a transfer corrupted on its way over TCP (RECUR_FAULT_CORRUPT_KV): the decode worker's
#      checksum catches it, 502 error JSON naming the checksum and no text; the next request
#      through a clean prefill worker gets --role all's text.
# Needs root, `ip netns` and veth links; exits 77 (skipped) without them, and with KV_TRANSFER=ucx
# where recur was built without UCX.
# Usage: serve_disagg_netns_test.sh /path/to/recur
set -u
RECUR="$1"
KV="${KV_TRANSFER:-tcp}"
if [ "$KV" = ucx ] && ! "$RECUR" transfer peer --segment "ucx-probe-$$" --bytes 4096 --listen 127.0.0.1:0 --ucx \
  < /dev/null > /dev/null 2>&1; then
  echo "skipped: recur built without UCX"
  exit 77
fi
[ "$KV" = ucx ] && export UCX_TLS="${UCX_TLS:-tcp}"
[ "$(id -u)" = 0 ] && command -v ip >/dev/null || { echo "skipped: needs root and ip"; exit 77; }
NP="rdp$$"
ND="rdd$$"
V="rd$$"  # veth names: ${V}pa/${V}pb (root-P), ${V}da/${V}db (root-D), ${V}xa/${V}xb (P-D)
X=$(($$ % 200 + 1))
A=10.79.$X
B=10.80.$X
C=10.81.$X
ip netns add "$NP" 2>/dev/null || { echo "skipped: ip netns add failed"; exit 77; }
ip netns add "$ND" 2>/dev/null || { ip netns del "$NP"; echo "skipped: ip netns add failed"; exit 77; }
. "$(dirname "$0")/serve_disagg_lib.sh"
. "$(dirname "$0")/serve_disagg_faults_lib.sh"
cleanup() {
  stop_workers
  ip netns del "$NP" 2>/dev/null  # takes the veth pairs with it
  ip netns del "$ND" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
# link NAME NS_A ADDR_A NS_B ADDR_B: a veth pair (NS "" is this namespace), both ends up.
link() {
  ip link add "${V}$1a" type veth peer name "${V}$1b" || return 1
  for end in a b; do
    if [ $end = a ]; then ns=$2 addr=$3; else ns=$4 addr=$5; fi
    in=""
    if [ -n "$ns" ]; then
      ip link set "${V}$1$end" netns "$ns" || return 1
      in="ip netns exec $ns"
    fi
    $in ip addr add "$addr/24" dev "${V}$1$end" && $in ip link set "${V}$1$end" up || return 1
  done
}
link p "" "$A.1" "$NP" "$A.2" && link d "" "$B.1" "$ND" "$B.2" && link x "$NP" "$C.1" "$ND" "$C.2" ||
  { echo "skipped: veth setup failed (no CAP_NET_ADMIN?)"; exit 77; }
# carrier NS DEV: waits (up to 5 s) until the link has its carrier (LOWER_UP). A veth's carrier
# comes up a moment after both ends are set up, and UCX offers only interfaces that are up and
# running when a worker starts: a decode worker started before that has no address on the P-D
# link and the prefill worker's endpoint fails with "Destination is unreachable" (seen once in
# ten runs under ctest -j2).
carrier() {
  in=""
  [ -n "$1" ] && in="ip netns exec $1"
  for _ in $(seq 100); do
    $in ip link show "$2" | grep -q LOWER_UP && return 0
    sleep 0.05
  done
  echo "FAIL: link $2 has no carrier after 5 s"; exit 1
}
carrier "" "${V}pa"; carrier "$NP" "${V}pb"; carrier "" "${V}da"; carrier "$ND" "${V}db"
carrier "$NP" "${V}xa"; carrier "$ND" "${V}xb"
tiny_model
BODY='{"model":"tiny","prompt":"The quick brown fox jumps over the lazy dog","max_tokens":12,"temperature":0,"ignore_eos":true}'
# on NS NAME ENV... : launches `recur serve` in namespace NS with the environment ENV (may be none).
on() {
  ns=$1 name=$2
  shift 2
  launch "$name" ip netns exec "$ns" env "$@"
}
# url_of NAME HOST: the URL a launched server listens on at HOST (it must come up).
url_of() {
  port=$(serve_port "$T/$1.err" "$2")
  [ -n "$port" ] || fail "$1 did not come up on $2"
  echo "http://$2:$port"
}
# Over UCX each worker is told its P-D link (UCX_NET_DEVICES), as docs/transfer.md says to on
# hosts with several interfaces: UCX 1.13's tcp counts every interface of the peer as reachable,
# and with the AM feature it may put a rendezvous lane on the decode worker's host-facing link,
# which the prefill namespace has no route to ("Destination is unreachable", 1 run in 3-5).
UCX_D="" UCX_P=""
[ "$KV" = ucx ] && UCX_D="UCX_NET_DEVICES=${V}xb" UCX_P="UCX_NET_DEVICES=${V}xa"
decode() { on "$ND" "$1" $UCX_D $2 "$RECUR" --set serve.kv_transfer="$KV" serve --role decode -m "$M" --host "$B.2" --port 0 --threads 1 --kv-slots 1 --kv-listen "$C.2:0"; }
prefill() { on "$NP" "$1" $UCX_P RECUR_FAULT_PREFILL_PAUSE="$T/$1.arm" $2 "$RECUR" --set serve.kv_transfer="$KV" serve --role prefill -m "$M" --host "$A.2" --port 0 --threads 1; }
launch all "$RECUR" serve -m "$M" --port 0 --threads 1
decode d ""
decode d_dies RECUR_FAULT_DECODE_EXIT=1
prefill p ""
prefill p_killed ""
prefill p_other ""
prefill p_single ""
prefill p_bad RECUR_FAULT_CORRUPT_KV=1
ALL=http://127.0.0.1:$(port_of all) || exit 1
D=$(url_of d "$B.2") || exit 1
D_DIES=$(url_of d_dies "$B.2") || exit 1
P=$(url_of p "$A.2") || exit 1
PK=$(url_of p_killed "$A.2") || exit 1
PO=$(url_of p_other "$A.2") || exit 1
PS=$(url_of p_single "$A.2") || exit 1
P_BAD=$(url_of p_bad "$A.2") || exit 1
router r "$P" "$D"
router r_dies "$P" "$D_DIES"
router r_two_p "$PK,$PO" "$D"
router r_one_p "$PS" "$D"
router r_bad "$P_BAD" "$D"
R=http://127.0.0.1:$(port_of r) || exit 1
R_DIES=http://127.0.0.1:$(port_of r_dies) || exit 1
R_TWO_P=http://127.0.0.1:$(port_of r_two_p) || exit 1
R_ONE_P=http://127.0.0.1:$(port_of r_one_p) || exit 1
R_BAD=http://127.0.0.1:$(port_of r_bad) || exit 1
reference "$ALL"

# 1. Across hosts: --role all's text.
ok_text "$(post "$R" "$T/ns.json")" "$T/ns.json" "router across namespaces"
curl -sf --max-time 10 "$P/metrics" | grep -Eq '^recur_kv_transfer_bytes_total [1-9]' || fail "no $KV transfer from host P"
grep -q "over $KV" "$T/p.err" || fail "the prefill worker did not send over $KV"
echo "serve_disagg_netns_test: $(grep -o "over $KV.*" "$T/p.err" | head -1)"

# 2. A decode worker that dies mid-request.
code=$(post "$R_DIES" "$T/dead.json")
[ "$code" = 502 ] && grep -q '"code":"decode_worker_lost"' "$T/dead.json" || fail "dead decode across namespaces: HTTP $code $(cat "$T/dead.json")"
ok_text "$(post "$R" "$T/again.json")" "$T/again.json" "prefill worker after the dead decode worker"

# 3 and 4. Prefill workers killed mid-transfer (their TCP connection to host D cut mid-stream).
prefill_killed_retried "$R_TWO_P" "$T/p_killed.arm" "$PID_p_killed" "$PK" killed_retried
only_prefill_killed "$R_ONE_P" "$T/p_single.arm" "$PID_p_single" "$PS" killed_only

# 5. A corrupted transfer over TCP: caught by the checksum, no text; then a clean one.
code=$(post "$R_BAD" "$T/bad.json")
[ "$code" = 502 ] && grep -q 'checksum' "$T/bad.json" && ! grep -q '"choices"' "$T/bad.json" \
  || fail "corrupt transfer across namespaces: HTTP $code $(cat "$T/bad.json")"
curl -sf --max-time 10 "$D/metrics" | grep -Eq '^recur_kv_transfer_failures_total [1-9]' || fail "decode worker's failure metric"
ok_text "$(post "$R" "$T/clean.json")" "$T/clean.json" "a clean transfer after the corrupt one"
echo "serve_disagg_netns_test ($KV): ok"
