#!/bin/sh
# Disaggregated serving over the ucx transport (serve.kv_transfer=ucx on both workers,
# docs/transfer.md "UCX") on 127.0.0.1, with UCX_TLS as the environment has it (unset: UCX picks;
# the prefill worker logs which transports): the same greedy text as --role all for three
# prompts, and the fault cases of serve_disagg_faults_test.sh over UCX:
#   1. a decode worker SIGKILLed mid-transfer: 502 decode_worker_lost naming the peer gone;
#   2. the first of two prefill workers SIGKILLed mid-transfer: retried on the other, same text;
#   3. a block corrupted on its way (RECUR_FAULT_CORRUPT_KV): the decode worker's checksum
#      catches it (502, no text), and the next clean request gets --role all's text.
# Exits 77 (skipped) where recur was built without UCX.
# Usage: serve_disagg_ucx_test.sh /path/to/recur
set -u
RECUR="$1"
. "$(dirname "$0")/serve_disagg_lib.sh"
. "$(dirname "$0")/serve_disagg_faults_lib.sh"
if ! "$RECUR" transfer peer --segment "ucx-probe-$$" --bytes 4096 --listen 127.0.0.1:0 --ucx < /dev/null > "$T/probe.out" 2>&1; then
  grep -q "not in this build" "$T/probe.out" && { echo "skipped: recur built without UCX"; exit 77; }
  fail "ucx probe: $(cat "$T/probe.out")"
fi
tiny_model
BODY='{"model":"tiny","prompt":"Once upon a time","max_tokens":8,"temperature":0,"ignore_eos":true}'
UCX="--set serve.kv_transfer=ucx"
prefill() { launch "$1" env RECUR_FAULT_PREFILL_PAUSE="$T/$1.arm" $2 "$RECUR" $UCX serve --role prefill -m "$M" --port 0 --threads 1; }
decode() { launch "$1" "$RECUR" $UCX serve --role decode -m "$M" --port 0 --threads 1 --kv-slots 1; }
launch all "$RECUR" serve -m "$M" --port 0 --threads 1
decode d
decode d_killed
prefill p ""
prefill p_killed ""
prefill p_other ""
prefill p_bad RECUR_FAULT_CORRUPT_KV=1
ALL=http://127.0.0.1:$(port_of all) || exit 1
D=http://127.0.0.1:$(port_of d) || exit 1
DK=http://127.0.0.1:$(port_of d_killed) || exit 1
P=http://127.0.0.1:$(port_of p) || exit 1
PK=http://127.0.0.1:$(port_of p_killed) || exit 1
PO=http://127.0.0.1:$(port_of p_other) || exit 1
P_BAD=http://127.0.0.1:$(port_of p_bad) || exit 1
router r "$P" "$D"
router r_dies "$P" "$DK"
router r_two_p "$PK,$PO" "$D"
router r_bad "$P_BAD" "$D"
R=http://127.0.0.1:$(port_of r) || exit 1
R_DIES=http://127.0.0.1:$(port_of r_dies) || exit 1
R_TWO_P=http://127.0.0.1:$(port_of r_two_p) || exit 1
R_BAD=http://127.0.0.1:$(port_of r_bad) || exit 1
reference "$ALL"

# The same greedy text as --role all (prompts of 4..40 tokens: 1..3 KV pages).
i=0
for prompt in "Once upon a time" "The quick brown fox jumps over the lazy dog and keeps running far away" \
  "a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h i j k l m n"; do
  i=$((i + 1))
  body="{\"model\":\"tiny\",\"prompt\":\"$prompt\",\"max_tokens\":10,\"temperature\":0,\"ignore_eos\":true}"
  for url in "$ALL" "$R"; do
    curl -s --max-time 30 -o "$T/p$i-${url##*:}.json" "$url/v1/completions" -d "$body" || fail "prompt $i at $url"
  done
  [ "$(text_of "$T/p$i-${R##*:}.json")" = "$(text_of "$T/p$i-${ALL##*:}.json")" ] ||
    fail "prompt $i over ucx: '$(text_of "$T/p$i-${R##*:}.json")' != role all '$(text_of "$T/p$i-${ALL##*:}.json")'"
done
grep -q "over ucx (" "$T/p.err" || fail "the prefill worker did not send over ucx"
echo "serve_disagg_ucx_test: $(grep -o 'over ucx (.*)' "$T/p.err" | head -1)"
curl -sf --max-time 10 "$P/metrics" | grep -Eq '^recur_kv_transfer_bytes_total [1-9]' || fail "no transfer bytes"

# 1. A decode worker killed mid-transfer: the prefill's next layer finds the peer gone.
code=$(in_flight "$R_DIES" "$T/p.arm" "$PID_d_killed" "$T/1.json")
[ "$code" = 502 ] && grep -q '"code":"decode_worker_lost"' "$T/1.json" || fail "decode killed over ucx: HTTP $code $(cat "$T/1.json")"
ok_text "$(post "$R" "$T/1n.json")" "$T/1n.json" "the prefill worker after the decode kill"

# 2. Two prefill workers, the first killed mid-transfer: retried on the other.
prefill_killed_retried "$R_TWO_P" "$T/p_killed.arm" "$PID_p_killed" "$PK" killed_retried

# 3. A corrupted transfer: caught by the checksum, no text; then a clean one.
code=$(post "$R_BAD" "$T/bad.json")
[ "$code" = 502 ] && grep -q 'checksum' "$T/bad.json" && ! grep -q '"choices"' "$T/bad.json" \
  || fail "corrupt transfer over ucx: HTTP $code $(cat "$T/bad.json")"
ok_text "$(post "$R" "$T/clean.json")" "$T/clean.json" "a clean transfer after the corrupt one"
echo "serve_disagg_ucx_test: ok"
