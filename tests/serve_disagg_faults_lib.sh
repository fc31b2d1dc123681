# Shared by the fault tests of disaggregated serving (after serve_disagg_lib.sh). A prefill worker
# started with RECUR_FAULT_PREFILL_PAUSE=ARM pauses after handing layer 0 to the transfer engine
# while the file ARM exists (it writes ARM.paused), so a test can SIGKILL a worker mid-transfer.
#   BODY                         the request body that post sends (set it first)
#   reference URL                REF: the text of --role all's (URL's) answer to BODY
#   post URL OUT                 POSTs BODY to URL/v1/completions (30 s at most), prints the status
#   in_flight ROUTER ARM PID OUT posts through ROUTER, SIGKILLs PID while the armed prefill worker
#                                is mid-transfer, lets the prefill go on; prints the HTTP status
#   health ROUTER OUT            GET ROUTER/health (10 s at most), prints the status
#   ok_text CODE OUT WHAT        fails unless CODE is 200 and OUT's text is REF (set REF first)
#   prefill_killed_retried ROUTER ARM PID URL TAG
#                                the first of ROUTER's two prefill workers (URL, PID, armed by
#                                ARM) killed mid-transfer: retried on the other (REF's text), the
#                                router reports URL down (/health degraded, worker_up 0), counts
#                                prefill_retried, and the next two requests get REF's text
#   only_prefill_killed ROUTER ARM PID URL TAG
#                                ROUTER's only prefill worker killed mid-transfer: that request and
#                                a new one get 503 no_prefill_worker, /health 503 unavailable,
#                                worker_up 0
post() {
  curl -s --max-time 30 -o "$2" -w '%{http_code}' "$1/v1/completions" -H 'Content-Type: application/json' -d "$BODY"
}
reference() {
  [ "$(post "$1" "$T/ref.json")" = 200 ] || fail "role all: $(cat "$T/ref.json")"
  REF=$(text_of "$T/ref.json")
}
wait_paused() {  # wait_paused ARM: until the prefill worker armed by ARM is mid-transfer
  for _ in $(seq 1 100); do
    [ -f "$1.paused" ] && return 0
    sleep 0.05
  done
  fail "no prefill paused mid-transfer at $1"
}
in_flight() {
  touch "$2"
  post "$1" "$4" > "$4.code" &
  client=$!
  wait_paused "$2"
  kill -9 "$3"
  rm -f "$2"
  wait "$client"
  cat "$4.code"
}
health() {
  curl -s --max-time 10 -o "$2" -w '%{http_code}' "$1/health"
}
ok_text() {
  [ "$1" = 200 ] && [ "$(text_of "$2")" = "$REF" ] || fail "$3: HTTP $1 $(cat "$2")"
}
prefill_killed_retried() {
  code=$(in_flight "$1" "$2" "$3" "$T/$5.json")
  ok_text "$code" "$T/$5.json" "$5: prefill killed, retried on the other"
  code=$(health "$1" "$T/$5h.json")
  [ "$code" = 200 ] && grep -q '"status":"degraded"' "$T/$5h.json" && grep -q "\"up\":false,\"url\":\"$4\"" "$T/$5h.json" \
    || fail "$5: health after a killed prefill worker: HTTP $code $(cat "$T/$5h.json")"
  curl -sf --max-time 10 "$1/metrics" > "$T/$5m.txt"
  grep -q "recur_router_worker_up{role=\"prefill\",url=\"$4\"} 0" "$T/$5m.txt" &&
    grep -q 'outcome="prefill_retried"} 1' "$T/$5m.txt" || fail "$5: router metrics: $(grep recur_router "$T/$5m.txt")"
  for i in 1 2; do ok_text "$(post "$1" "$T/$5n$i.json")" "$T/$5n$i.json" "$5: request $i after the prefill kill"; done
}
only_prefill_killed() {
  code=$(in_flight "$1" "$2" "$3" "$T/$5.json")
  [ "$code" = 503 ] && grep -q '"code":"no_prefill_worker"' "$T/$5.json" ||
    fail "$5: in flight on the only prefill: HTTP $code $(cat "$T/$5.json")"
  code=$(health "$1" "$T/$5h.json")
  [ "$code" = 503 ] && grep -q '"status":"unavailable"' "$T/$5h.json" ||
    fail "$5: health, no prefill worker: HTTP $code $(cat "$T/$5h.json")"
  code=$(post "$1" "$T/$5n.json")
  [ "$code" = 503 ] && grep -q '"code":"no_prefill_worker"' "$T/$5n.json" ||
    fail "$5: new request, no prefill: HTTP $code $(cat "$T/$5n.json")"
  curl -sf --max-time 10 "$1/metrics" | grep -q "recur_router_worker_up{role=\"prefill\",url=\"$4\"} 0" ||
    fail "$5: worker_up after the kill"
}
