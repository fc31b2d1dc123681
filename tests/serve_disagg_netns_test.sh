#!/bin/sh
# Disaggregated serving across network namespaces (two "hosts" joined by a veth pair): the decode
# worker runs in its own namespace and receives the state over TCP; the router and the prefill
# worker run in this one. Same greedy text as --role all; a decode worker that dies mid-request
# fails that request with a 502 error JSON while the prefill worker keeps serving.
# Needs root and `ip netns`; exits 77 (skipped) without them.
# Usage: serve_disagg_netns_test.sh /path/to/recur
set -u
RECUR="$1"
. "$(dirname "$0")/serve_port.sh"
[ "$(id -u)" = 0 ] && command -v ip >/dev/null || { echo "skipped: needs root and ip"; exit 77; }
NS="rdis$$"
V="rd$$"
A=10.79.$(($$ % 200 + 1))
ip netns add "$NS" 2>/dev/null || { echo "skipped: ip netns add failed"; exit 77; }
. "$(dirname "$0")/serve_disagg_lib.sh"
cleanup() {
  stop_workers
  ip link del "${V}a" 2>/dev/null
  ip netns del "$NS" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
ip link add "${V}a" type veth peer name "${V}b" && ip link set "${V}b" netns "$NS" &&
  ip addr add "$A.1/24" dev "${V}a" && ip link set "${V}a" up &&
  ip netns exec "$NS" ip addr add "$A.2/24" dev "${V}b" && ip netns exec "$NS" ip link set "${V}b" up &&
  ip netns exec "$NS" ip link set lo up || fail "veth setup"
tiny_model
"$RECUR" serve -m "$M" --port 0 --threads 1 2> "$T/all.err" &
PIDS="$PIDS $!"
ALL="http://127.0.0.1:$(serve_port "$T/all.err")"
for name in decode decode_dies; do
  fault=""
  [ $name = decode_dies ] && fault="RECUR_FAULT_DECODE_EXIT=1"
  ip netns exec "$NS" env $fault "$RECUR" serve --role decode -m "$M" --host "$A.2" --port 0 --threads 1 \
    --kv-listen "$A.2:0" 2> "$T/$name.err" &
  PIDS="$PIDS $!"
  p=$(serve_port "$T/$name.err" "$A.2")
  [ -n "$p" ] || fail "$name did not come up"
  eval "URL_$name=http://$A.2:$p"
done
"$RECUR" --set serve.kv_transfer=tcp serve --role prefill -m "$M" --port 0 --threads 1 2> "$T/prefill.err" &
PIDS="$PIDS $!"
P="http://127.0.0.1:$(serve_port "$T/prefill.err")"
"$RECUR" serve --role router -m "$M" --port 0 --prefill "$P" --decode "$URL_decode" 2> "$T/router.err" &
PIDS="$PIDS $!"
R="http://127.0.0.1:$(serve_port "$T/router.err")"
"$RECUR" serve --role router -m "$M" --port 0 --prefill "$P" --decode "$URL_decode_dies" 2> "$T/router_dies.err" &
PIDS="$PIDS $!"
RD="http://127.0.0.1:$(serve_port "$T/router_dies.err")"

body='{"model":"tiny","prompt":"The quick brown fox jumps over the lazy dog","max_tokens":12,"temperature":0,"ignore_eos":true}'
text_of() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["text"])' "$1"; }
curl -sf "$ALL/v1/completions" -d "$body" > "$T/all.json" || fail "role all"
curl -sf "$R/v1/completions" -d "$body" > "$T/ns.json" || fail "router across namespaces: $(cat "$T/ns.json")"
[ "$(text_of "$T/ns.json")" = "$(text_of "$T/all.json")" ] || fail "across namespaces: $(cat "$T/ns.json") vs $(cat "$T/all.json")"
code=$(curl -s -o "$T/dead.json" -w '%{http_code}' "$RD/v1/completions" -d "$body")
[ "$code" = 502 ] && grep -q decode_worker_lost "$T/dead.json" || fail "dead decode across namespaces: HTTP $code $(cat "$T/dead.json")"
curl -sf "$R/v1/completions" -d "$body" > "$T/again.json" && [ "$(text_of "$T/again.json")" = "$(text_of "$T/all.json")" ] \
  || fail "prefill worker after the dead decode worker: $(cat "$T/again.json")"
echo "serve_disagg_netns_test: ok"
