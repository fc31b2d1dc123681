#!/bin/sh
# A killed recur takes the programs its probes started with it (core/spawn.h): `recur bench cmd`
# runs `sleep`; killing recur (SIGTERM, then SIGKILL in a second round) must leave no sleep
# behind (before, it was reparented to PID 1 and ran on). The same through `recur mcp`, whose
# tool calls run `recur` children that run the program.
# Usage: probe_children_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$(realpath "$1")"
. "$(dirname "$0")/testlib.sh"
# A sleep of a length no other process uses, to find it among this test's descendants.
NAP=$((3000 + $$ % 997))

# The pid of the process running `sleep $NAP`, waiting up to 10 s for it to start.
find_sleep() {
  for _ in $(seq 1 100); do
    pgrep -x -f "sleep $NAP" && return 0
    sleep 0.1
  done
  return 1
}

# Gone (or a zombie nobody waits for) within 2 s.
gone_within_2s() {
  for _ in $(seq 1 20); do
    [ -d "/proc/$1" ] || return 0
    grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

for sig in TERM KILL; do
  "$RECUR" bench cmd --budget-s 600 -- sleep "$NAP" >/dev/null 2>&1 &
  parent=$!
  child=$(find_sleep) || { fail "bench cmd never started sleep $NAP"; kill -KILL "$parent"; continue; }
  kill -"$sig" "$parent"
  wait "$parent" 2>/dev/null
  if ! gone_within_2s "$child"; then
    fail "SIG$sig to recur bench cmd left its child $child (sleep $NAP) running"
    kill -KILL "$child" 2>/dev/null
  fi
done

# recur mcp -> recur bench cmd -> sleep: the server killed, the grandchild goes too.
mkfifo "$T/in"
(cd "$T" && "$RECUR" mcp --allow-exec sleep < "$T/in" > "$T/mcp.out" 2> "$T/mcp.err") &
server=$!
exec 3> "$T/in"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' >&3
printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"bench_cmd\",\"arguments\":{\"command\":[\"sleep\",\"$NAP\"],\"budget_s\":100}}}" >&3
if child=$(find_sleep); then
  kill -TERM "$server"
  if ! gone_within_2s "$child"; then
    fail "SIGTERM to recur mcp left the tool's program $child (sleep $NAP) running"
    kill -KILL "$child" 2>/dev/null
  fi
else
  fail "the bench_cmd tool never started sleep $NAP: $(tail -3 "$T/mcp.err")"
fi
exec 3>&-
kill -KILL "$server" 2>/dev/null
wait "$server" 2>/dev/null
finish probe_children_test
