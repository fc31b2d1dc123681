#!/bin/sh
# Client disconnects on the disaggregated path (docs/serve.md, "Roles", Faults): a streamed request
# whose client leaves, mid-stream or while its prompt is still being prefilled, is cancelled on
# the decode worker (its sequence freed, fewer tokens than max_tokens), counted by the router as
# "cancelled" without marking the decode worker down, and the next request is served with
# --role all's text by a decode worker that runs one sequence with one receive slot (so a
# generation or slot that outlived its client would block or 429 it). The checks are in
# tests/serve_disagg_cancel_client.py. A second decode worker that holds its admissions
# (RECUR_FAULT_DECODE_HOLD) lets the client leave, or a deadline pass, while the decode worker
# produces nothing: the router must notice within about a second and cancel it there.
# Usage: serve_disagg_cancel_test.sh /path/to/recur
set -u
RECUR="$1"
. "$(dirname "$0")/serve_disagg_lib.sh"
tiny_model 8192  # room for a generation far longer than the test
launch all "$RECUR" serve -m "$M" --port 0 --threads 1
launch d "$RECUR" serve --role decode -m "$M" --port 0 --threads 1 --kv-slots 1 --max-seqs 1 --queue-size 1
launch dh env RECUR_FAULT_DECODE_HOLD="$T/hold" "$RECUR" serve --role decode -m "$M" --port 0 --threads 1 \
  --kv-slots 2 --max-seqs 1 --queue-size 4
launch p env RECUR_FAULT_PREFILL_PAUSE="$T/p.arm" "$RECUR" serve --role prefill -m "$M" --port 0 --threads 1
ALL=http://127.0.0.1:$(port_of all) || exit 1
D=http://127.0.0.1:$(port_of d) || exit 1
DH=http://127.0.0.1:$(port_of dh) || exit 1
P=http://127.0.0.1:$(port_of p) || exit 1
launch r "$RECUR" serve --role router -m "$M" --port 0 --prefill "$P" --decode "$D"
launch rh "$RECUR" serve --role router -m "$M" --port 0 --prefill "$P" --decode "$DH"
launch rt "$RECUR" serve --role router -m "$M" --port 0 --prefill "$P" --decode "$DH" --request-timeout-s 1
R=http://127.0.0.1:$(port_of r) || exit 1
RH=http://127.0.0.1:$(port_of rh) || exit 1
RT=http://127.0.0.1:$(port_of rt) || exit 1
curl -sf --max-time 20 "$ALL/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model":"tiny","prompt":"Once upon a time","max_tokens":8,"temperature":0,"ignore_eos":true}' > "$T/ref.json" \
  || fail "role all"
/usr/bin/python3 "$(dirname "$0")/serve_disagg_cancel_client.py" "$R" "$D" "$T/p.arm" "$T/ref.json" \
  "$RH" "$DH" "$T/hold" "$RT" "$P" || fail "client"
echo "serve_disagg_cancel_test: ok"
