#!/bin/sh
# Disaggregated workers authenticate their peers (docs/serve.md, "Authentication" and "Roles"):
# a worker without a peer key refuses to start; /kv/reserve, /kv/release, /decode and /prefill
# need the peer key (from RECUR_PEER_KEY or --peer-key-file); a release must name the slot's
# token; a reservation unused for --kv-reserve-timeout-s is released; the router reaches its
# workers with the key end to end. The decode worker's KV listener (--kv-listen, TCP) takes only
# peers that prove the same key (docs/transfer.md, "Peer authentication"): a prefill worker with
# it transfers over TCP, a client without it or with another is refused on both sides, naming
# the peer, and no warning about an open listener is logged.
# Usage: serve_disagg_auth_test.sh /path/to/recur
set -u
RECUR="$1"
. "$(dirname "$0")/serve_disagg_lib.sh"
# call METHOD URL PATH BODY [KEY]: prints "STATUS BODY" on one line
call() {
  auth="X-No-Key: 1"
  [ $# -ge 5 ] && auth="Authorization: Bearer $5"
  out=$(curl -s --max-time 10 -w ' %{http_code}' -X "$1" "$2$3" -H 'Content-Type: application/json' -H "$auth" -d "$4")
  echo "${out##* } ${out% *}"
}

tiny_model
# No peer key: refused at start, naming both ways to give one.
env -u RECUR_PEER_KEY "$RECUR" serve --role decode -m "$M" --port 0 --threads 1 2> "$T/nokey.err" && fail "started without a peer key"
grep -q "RECUR_PEER_KEY" "$T/nokey.err" && grep -q -- "--peer-key-file" "$T/nokey.err" || fail "no-key message: $(cat "$T/nokey.err")"

printf '%s\n' "$RECUR_PEER_KEY" > "$T/peer.key"
launch d env -u RECUR_PEER_KEY "$RECUR" serve --role decode -m "$M" --port 0 --threads 1 --kv-slots 2 \
  --kv-reserve-timeout-s 1 --peer-key-file "$T/peer.key"
launch p "$RECUR" serve --role prefill -m "$M" --port 0 --threads 1
launch p_tcp "$RECUR" --set serve.kv_transfer=tcp serve --role prefill -m "$M" --port 0 --threads 1
D=http://127.0.0.1:$(port_of d) || exit 1
P=http://127.0.0.1:$(port_of p) || exit 1
P_TCP=http://127.0.0.1:$(port_of p_tcp) || exit 1
K="$RECUR_PEER_KEY"

for key in "" "wrong"; do
  r=$(call POST "$D" /kv/reserve '{}' $key)
  [ "${r%% *}" = 401 ] || fail "/kv/reserve with key '$key': $r"
  r=$(call POST "$P" /prefill '{}' $key)
  [ "${r%% *}" = 401 ] || fail "/prefill with key '$key': $r"
done
r=$(call POST "$D" /decode '{"slot":0,"token":"x"}')
[ "${r%% *}" = 401 ] || fail "/decode without a key: $r"

tok() { echo "$1" | sed -n 's/.*"token":"\([0-9a-f]*\)".*/\1/p'; }
r0=$(call POST "$D" /kv/reserve '{}' "$K")
[ "${r0%% *}" = 200 ] || fail "reserve: $r0"
T0=$(tok "$r0")
[ ${#T0} = 32 ] || fail "reservation token: $r0"
r=$(call POST "$D" /kv/release '{"slot":0,"token":"00000000000000000000000000000000"}' "$K")
[ "${r%% *}" = 409 ] && echo "$r" | grep -q slot_not_owned || fail "release with another token: $r"
r=$(call POST "$D" /kv/release '{"slot":0}' "$K")
[ "${r%% *}" = 400 ] || fail "release without a token: $r"
r=$(call POST "$D" /decode "{\"slot\":0,\"token\":\"$T0\"}" "$K")
# (a /decode with the right token takes the slot; its missing fields then fail it with a 400)
[ "${r%% *}" = 400 ] || fail "decode with the token but no request: $r"
r=$(call POST "$D" /kv/release "{\"slot\":0,\"token\":\"$T0\"}" "$K")
[ "${r%% *}" = 409 ] || fail "release of a slot already taken by /decode: $r"

# Both slots reserved and abandoned: full (429) until the reservations expire (1 s).
for i in 1 2; do
  r=$(call POST "$D" /kv/reserve '{}' "$K")
  [ "${r%% *}" = 200 ] || fail "reserve $i: $r"
done
r=$(call POST "$D" /kv/reserve '{}' "$K")
[ "${r%% *}" = 429 ] || fail "third reserve on 2 slots: $r"
sleep 1.3
r1=$(call POST "$D" /kv/reserve '{}' "$K")
[ "${r1%% *}" = 200 ] || fail "reserve after the reservations expired: $r1"
curl -sf "$D/metrics" | grep -q '^recur_kv_reservations_expired_total 2$' || fail "expired metric"
r=$(call POST "$D" /kv/release "{\"slot\":$(echo "$r1" | sed -n 's/.*"slot":\([0-9]*\).*/\1/p'),\"token\":\"$(tok "$r1")\"}" "$K")
[ "${r%% *}" = 200 ] || fail "release with its token: $r"

# The router shows the key to its workers: a completion end to end.
router r "$P" "$D"
R=http://127.0.0.1:$(port_of r) || exit 1
r=$(call POST "$R" /v1/completions '{"model":"tiny","prompt":"Once upon a time","max_tokens":4}')
[ "${r%% *}" = 200 ] || fail "completion through the router: $r"

# KV over TCP with the key: the prefill worker proves it to the decode worker's listener.
router r_tcp "$P_TCP" "$D"
R_TCP=http://127.0.0.1:$(port_of r_tcp) || exit 1
r=$(call POST "$R_TCP" /v1/completions '{"model":"tiny","prompt":"Once upon a time","max_tokens":4}')
[ "${r%% *}" = 200 ] || fail "completion over TCP with the peer key: $r"
curl -sf "$P_TCP/metrics" | grep -Eq '^recur_kv_transfer_bytes_total [1-9]' || fail "no bytes went over TCP"
grep -q "without a peer key" "$T/d.err" && fail "the decode worker's listener says it is open: $(cat "$T/d.err")"
# Clients without the key, or with another, are refused (nothing written: the bench never gets
# past the handshake); the decode worker logs each, naming the peer.
r=$(call POST "$D" /kv/reserve '{}' "$K")
KV=$(echo "$r" | sed -n 's/.*"tcp":"\([^"]*\)".*/\1/p')
[ -n "$KV" ] || fail "no TCP address in the reservation: $r"
env -u RECUR_PEER_KEY "$RECUR" transfer bench --peer "$KV" --bytes 4096 --blocks 1 --rounds 1 --latency-samples 0 \
  > /dev/null 2> "$T/nokey_kv.err" && fail "a KV client without the peer key was served"
grep -q "peer authentication failed: the peer asks for a peer key" "$T/nokey_kv.err" || fail "no key: $(cat "$T/nokey_kv.err")"
RECUR_PEER_KEY=wrong "$RECUR" transfer bench --peer "$KV" --bytes 4096 --blocks 1 --rounds 1 --latency-samples 0 \
  > /dev/null 2> "$T/wrong_kv.err" && fail "a KV client with a wrong peer key was served"
grep -q "peer authentication failed: wrong peer key" "$T/wrong_kv.err" && grep -q "$KV" "$T/wrong_kv.err" ||
  fail "wrong key: $(cat "$T/wrong_kv.err")"
grep -q "refused peer 127.0.0.1:[0-9]*: peer authentication failed: wrong peer key" "$T/d.err" ||
  fail "the decode worker did not log the refused peer: $(cat "$T/d.err")"
r=$(call POST "$R_TCP" /v1/completions '{"model":"tiny","prompt":"Once upon a time","max_tokens":4}')
[ "${r%% *}" = 200 ] || fail "completion over TCP after the refused peers: $r"
echo "serve_disagg_auth_test: ok"
