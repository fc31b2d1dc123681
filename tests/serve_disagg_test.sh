#!/bin/sh
# End-to-end test of disaggregated serving (docs/serve.md, "Roles") on a tiny hybrid model (one
# KDA and one attention layer): router + prefill + decode processes on 127.0.0.1 answer with the
# same greedy text as `--role all`, over shared memory and over TCP, also for 4 concurrent
# requests batched together on the decode worker, and for a chat with an image (encoded by the
# router in process or through an encode worker); a corrupted transfer fails
# its request (checksum) instead of producing tokens; a decode worker that dies mid-request fails
# that request with a 502 error JSON (one decode worker) or has it retried on the other one (two);
# the router reports it (/health, /metrics) and the prefill worker keeps serving.
# Usage: serve_disagg_test.sh /path/to/recur
set -u
RECUR="$1"
. "$(dirname "$0")/serve_disagg_lib.sh"

tiny_model

# Workers first (all at once), then the routers over them.
launch all "$RECUR" serve -m "$M" --port 0 --threads 1
launch decode1 env RECUR_FAULT_DECODE_HOLD="$T/hold" "$RECUR" serve --role decode -m "$M" --port 0 --threads 1
launch prefill_shm "$RECUR" serve --role prefill -m "$M" --port 0 --threads 1
launch prefill_tcp "$RECUR" --set serve.kv_transfer=tcp serve --role prefill -m "$M" --port 0 --threads 1
launch prefill_bad env RECUR_FAULT_CORRUPT_KV=1 "$RECUR" serve --role prefill -m "$M" --port 0 --threads 1
launch decode_dies env RECUR_FAULT_DECODE_EXIT=1 "$RECUR" serve --role decode -m "$M" --port 0 --threads 1
launch decode_dies2 env RECUR_FAULT_DECODE_EXIT=1 "$RECUR" serve --role decode -m "$M" --port 0 --threads 1
launch encode "$RECUR" serve --role encode -m "$M" --port 0
ALL=$(url_of all) || exit 1
D1=$(url_of decode1) || exit 1
P_SHM=$(url_of prefill_shm) || exit 1
P_TCP=$(url_of prefill_tcp) || exit 1
P_BAD=$(url_of prefill_bad) || exit 1
D2=$(url_of decode_dies) || exit 1
D3=$(url_of decode_dies2) || exit 1
ENC=$(url_of encode) || exit 1
router router_shm "$P_SHM" "$D1"
router router_tcp "$P_TCP" "$D1"
router router_bad "$P_BAD" "$D1"
router router_one "$P_SHM" "$D2"
router router_two "$P_SHM" "$D3,$D1"
launch router_enc "$RECUR" serve --role router -m "$M" --port 0 --prefill "$P_TCP" --decode "$D1" --encode "$ENC"
R_SHM=$(url_of router_shm) || exit 1
R_TCP=$(url_of router_tcp) || exit 1
R_BAD=$(url_of router_bad) || exit 1
R1=$(url_of router_one) || exit 1
R2=$(url_of router_two) || exit 1
R_ENC=$(url_of router_enc) || exit 1

# Same greedy text as --role all, over shm and TCP (prompts of 4..40 tokens: 1..3 KV pages).
i=0
for prompt in "Once upon a time" "The quick brown fox jumps over the lazy dog and keeps running far away" \
  "a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h i j k l m n"; do
  i=$((i + 1))
  body="{\"model\":\"tiny\",\"prompt\":\"$prompt\",\"max_tokens\":10,\"temperature\":0,\"ignore_eos\":true}"
  [ "$(post "$ALL" "$body" "$T/all$i.json")" = 200 ] || fail "role all: $(cat "$T/all$i.json")"
  for r in shm tcp; do
    url=$R_SHM
    [ $r = tcp ] && url=$R_TCP
    [ "$(post "$url" "$body" "$T/$r$i.json")" = 200 ] || fail "router $r, prompt $i: $(cat "$T/$r$i.json")"
    [ "$(text_of "$T/$r$i.json")" = "$(text_of "$T/all$i.json")" ] ||
      fail "router $r, prompt $i: '$(text_of "$T/$r$i.json")' != role all '$(text_of "$T/all$i.json")'"
    grep -q '"completion_tokens":10' "$T/$r$i.json" || fail "usage: $(cat "$T/$r$i.json")"
  done
done
# A streamed chat through the router: role chunk, text chunks, finish, [DONE].
curl -sN "$R_SHM/v1/chat/completions" -d '{"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"temperature":0,"stream":true}' \
  > "$T/stream.txt" || fail "stream"
grep -q '"finish_reason":"length"' "$T/stream.txt" && grep -v '^$' "$T/stream.txt" | tail -1 | grep -q 'data: \[DONE\]' \
  || fail "stream: $(cat "$T/stream.txt")"
curl -sf "$R_SHM/metrics" | grep -Eq '^recur_kv_transfer_bytes_total [1-9]' || fail "router transfer bytes metric"
curl -sf "$P_TCP/metrics" | grep -Eq '^recur_kv_transfer_seconds_count [1-9]' || fail "prefill transfer seconds metric"

# Continuous batching on the decode worker: 4 concurrent greedy requests through the router each
# get --role all's text, and the decode worker's forwards carried more than one sequence (a
# forward there holds only decode tokens, so more than one token means more than one sequence).
# The decode worker holds the first one's admission (RECUR_FAULT_DECODE_HOLD) until the other
# three wait in its queue, so the four are admitted together whatever the timing. (--role all
# batches its four too: the same greedy text, serve_batching_test.)
batch_body() { echo "{\"model\":\"tiny\",\"prompt\":\"request $1 of four\",\"max_tokens\":96,\"temperature\":0,\"ignore_eos\":true}"; }
touch "$T/hold"
CURLS=""
for i in 1 2 3 4; do
  post "$ALL" "$(batch_body $i)" "$T/ball$i.json" > /dev/null &
  CURLS="$CURLS $!"
  post "$R_SHM" "$(batch_body $i)" "$T/bdis$i.json" > "$T/bdis$i.code" &
  CURLS="$CURLS $!"
done
queued=""
for _ in $(seq 1 200); do
  [ -f "$T/hold.paused" ] && curl -sf --max-time 5 "$D1/metrics" | grep -q '^recur_queue_depth 3$' && queued=yes && break
  sleep 0.05
done
rm -f "$T/hold"
[ -n "$queued" ] || fail "the decode worker never held one request with three queued behind it"
for p in $CURLS; do wait "$p"; done
for i in 1 2 3 4; do
  [ "$(cat "$T/bdis$i.code")" = 200 ] && [ "$(text_of "$T/bdis$i.json")" = "$(text_of "$T/ball$i.json")" ] ||
    fail "concurrent request $i: '$(cat "$T/bdis$i.json")' != role all '$(text_of "$T/ball$i.json")'"
done
curl -sf "$D1/metrics" > "$T/dmetrics.txt"
single=$(sed -n 's/^recur_batch_forward_tokens_bucket{le="1"} //p' "$T/dmetrics.txt")
forwards=$(sed -n 's/^recur_batch_forward_tokens_count //p' "$T/dmetrics.txt")
[ -n "$forwards" ] && [ "$forwards" -gt "$single" ] ||
  fail "decode worker: no forward with more than one sequence ($single of $forwards forwards had one token)"

# A chat with an image (tests/serve_image_client.py's 4x4 PNG) through the roles: the router
# encodes it (in process, or through the encode worker) and sends the rows with the prompt to the
# prefill worker; the greedy text and usage equal --role all's.
PNG=$(/usr/bin/python3 "$(dirname "$0")/serve_image_client.py" png) || fail "png fixture"
printf '%s' "{\"model\":\"tiny\",\"max_tokens\":8,\"temperature\":0,\"ignore_eos\":true,\"messages\":[{\"role\":\"user\",
 \"content\":[{\"type\":\"text\",\"text\":\"what is in \"},{\"type\":\"image_url\",
 \"image_url\":{\"url\":\"data:image/png;base64,$PNG\"}},{\"type\":\"text\",\"text\":\"?\"}]}]}" > "$T/image.json"
chat_of() {  # the content and usage of a chat response
  /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["choices"][0]["message"]["content"], r["usage"])' "$1"
}
CURLS=""
for name in ALL R_SHM R_ENC; do
  eval "url=\$$name"
  curl -s -o "$T/img_$name.json" -w '%{http_code}' "$url/v1/chat/completions" -H 'Content-Type: application/json' \
    --data-binary @"$T/image.json" > "$T/img_$name.code" &
  CURLS="$CURLS $!"
done
for p in $CURLS; do wait "$p"; done
for name in ALL R_SHM R_ENC; do
  [ "$(cat "$T/img_$name.code")" = 200 ] || fail "image chat via $name: HTTP $(cat "$T/img_$name.code") $(cat "$T/img_$name.json")"
done
for name in R_SHM R_ENC; do
  [ "$(chat_of "$T/img_$name.json")" = "$(chat_of "$T/img_ALL.json")" ] ||
    fail "image chat via $name: '$(chat_of "$T/img_$name.json")' != role all '$(chat_of "$T/img_ALL.json")'"
done
grep -q '"prompt_tokens":' "$T/img_ALL.json" && curl -sf "$ENC/metrics" | grep -Eq '^recur_encode_images_total [1-9]' ||
  fail "the encode worker encoded nothing"

# A corrupted transfer: the decode worker's checksum catches it; the request fails, no text.
code=$(post "$R_BAD" '{"model":"tiny","prompt":"Once upon a time","max_tokens":4,"temperature":0}' "$T/bad.json")
[ "$code" = 502 ] || fail "corrupt transfer: HTTP $code $(cat "$T/bad.json")"
grep -q 'checksum' "$T/bad.json" && ! grep -q '"choices"' "$T/bad.json" || fail "corrupt transfer body: $(cat "$T/bad.json")"
# The decode worker still serves.
[ "$(post "$R_SHM" '{"model":"tiny","prompt":"Once upon a time","max_tokens":10,"temperature":0,"ignore_eos":true}' "$T/after.json")" = 200 ] &&
  [ "$(text_of "$T/after.json")" = "$(text_of "$T/all1.json")" ] || fail "after corruption: $(cat "$T/after.json")"

# A decode worker that dies mid-request (after receiving the state): with one decode worker the
# request fails with a 502 error JSON; with two, the router retries it on the other one. Either
# way the router reports the dead worker and the prefill worker keeps serving.
body='{"model":"tiny","prompt":"Once upon a time","max_tokens":10,"temperature":0,"ignore_eos":true}'
code=$(post "$R1" "$body" "$T/dead.json")
[ "$code" = 502 ] && grep -q '"code":"decode_worker_lost"' "$T/dead.json" || fail "dead decode: HTTP $code $(cat "$T/dead.json")"
code=$(curl -s -o "$T/health1.json" -w '%{http_code}' "$R1/health")
[ "$code" = 503 ] && grep -q '"status":"unavailable"' "$T/health1.json" || fail "health, no decode worker: HTTP $code $(cat "$T/health1.json")"
[ "$(post "$R2" "$body" "$T/retried.json")" = 200 ] && [ "$(text_of "$T/retried.json")" = "$(text_of "$T/all1.json")" ] \
  || fail "retry on the other decode worker: $(cat "$T/retried.json")"
code=$(curl -s -o "$T/health.json" -w '%{http_code}' "$R2/health")
[ "$code" = 200 ] && grep -q '"status":"degraded"' "$T/health.json" && grep -q "\"up\":false,\"url\":\"$D3\"" "$T/health.json" \
  || fail "health after a dead decode worker: HTTP $code $(cat "$T/health.json")"
curl -sf "$R2/metrics" > "$T/metrics.txt"
grep -q "recur_router_worker_up{role=\"decode\",url=\"$D3\"} 0" "$T/metrics.txt" && grep -q 'outcome="retried"} 1' "$T/metrics.txt" \
  || fail "router metrics: $(grep recur_router "$T/metrics.txt")"
[ "$(post "$R2" "$body" "$T/next.json")" = 200 ] && [ "$(text_of "$T/next.json")" = "$(text_of "$T/all1.json")" ] \
  || fail "the next request after a dead decode worker: $(cat "$T/next.json")"
echo "serve_disagg_test: ok"
