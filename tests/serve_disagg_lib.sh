# Shared by the disaggregated-serving tests: `. "$(dirname "$0")/serve_disagg_lib.sh"` first.
#   T, RECUR_CACHE_DIR   a fresh temporary directory (also the model cache); serve_port (serve_port.sh)
#   RECUR_PEER_KEY       the key the roles show each other (exported: every process launched has it)
#   PIDS                 the processes a test started (append with PIDS="$PIDS $!")
#   stop_workers         SIGTERM to each (a worker's transfer engine then unlinks its shared
#                        memory), then SIGKILL, and removes /dev/shm/recur-kv.recur-<role>-PID*
#                        of those that died without unlinking (the fault cases)
#   on exit              stop_workers and rm -rf $T (a test with more to undo sets its own EXIT
#                        trap); SIGINT, SIGTERM and SIGHUP exit through it
#   launch NAME ARGS...  runs ARGS in the background, stderr to $T/NAME.err, its pid in PID_NAME
#   port_of NAME         waits until a launched server listens on 127.0.0.1, prints its port
#   router NAME PREFILL_URLS DECODE_URLS   launches a --role router on 127.0.0.1 (model M)
#   text_of FILE         the text of a completion response
#   url_of NAME          waits until a launched process listens (port_of), prints its URL
#   post URL BODY OUT    POSTs BODY to URL/v1/completions (30 s at most) into OUT, prints the status
#   tiny_model [CONTEXT] writes the tiny hybrid model (one KDA, one attention layer; context 256
#                        unless given) to M=$T/tiny.gguf
#   fail MESSAGE         prints it and the tail of every $T/*.err, exits 1
. "$(dirname "$0")/serve_port.sh"
T="$(mktemp -d)"
export RECUR_CACHE_DIR="$T"
export RECUR_PEER_KEY="peer-$$-$(date +%s%N)"
PIDS=""
stop_workers() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  sleep 0.2
  for p in $PIDS; do
    kill -9 "$p" 2>/dev/null
    rm -f /dev/shm/recur-kv.recur-*-"$p" /dev/shm/recur-kv.recur-*-"$p".*
  done
}
disagg_cleanup() {
  stop_workers
  rm -rf "$T"
}
trap disagg_cleanup EXIT
trap "exit 1" INT TERM HUP  # so that the EXIT trap cleans up after a signal too (sh)
launch() {
  name="$1"
  shift
  "$@" 2> "$T/$name.err" &
  PIDS="$PIDS $!"
  eval "PID_$name=$!"
}
fail() {
  echo "FAIL: $*" >&2
  for f in "$T"/*.err; do echo "--- $f:" >&2; tail -5 "$f" >&2; done
  exit 1
}
tiny_model() {
  M="$T/tiny.gguf"
  "$RECUR" model new "$M" --arch hybrid --dim 64 --layers 2 --heads 4 --kda-head-dim 16 --vocab 400 \
    --context "${1:-256}" --pattern ka 2>/dev/null || fail "model new"
}
router() { launch "$1" "$RECUR" serve --role router -m "$M" --port 0 --prefill "$2" --decode "$3"; }
port_of() {
  port=$(serve_port "$T/$1.err")
  [ -n "$port" ] || fail "$1 did not come up"
  echo "$port"
}
text_of() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["text"])' "$1"; }
# Processes launch together, so their start-ups overlap while url_of waits for each.
url_of() {
  port=$(port_of "$1") || return 1
  echo "http://127.0.0.1:$port"
}
post() {
  curl -s --max-time 30 -o "$3" -w '%{http_code}' "$1/v1/completions" -H 'Content-Type: application/json' -d "$2"
}
