# Shared by the disaggregated-serving tests: `. "$(dirname "$0")/serve_disagg_lib.sh"` after T is set.
#   PIDS                 the processes a test started (append with PIDS="$PIDS $!")
#   stop_workers         SIGTERM to each (a worker's transfer engine then unlinks its shared
#                        memory), then SIGKILL, and removes /dev/shm/recur-kv.recur-<role>-PID*
#                        of those that died without unlinking (the fault cases)
#   fail MESSAGE         prints it and the tail of every $T/*.err, exits 1
PIDS=""
stop_workers() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  sleep 0.2
  for p in $PIDS; do
    kill -9 "$p" 2>/dev/null
    rm -f /dev/shm/recur-kv.recur-*-"$p" /dev/shm/recur-kv.recur-*-"$p".*
  done
}
fail() {
  echo "FAIL: $*" >&2
  for f in "$T"/*.err; do echo "--- $f:" >&2; tail -5 "$f" >&2; done
  exit 1
}
