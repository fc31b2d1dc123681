#!/bin/sh
# End-to-end test of `recur mcp`: tests/mcp_client.py drives the rmsnorm speed episode through
# episode_run_step from start to a passing gate twice, once per protocol era (initialize handshake;
# stateless _meta + server/discover), checks the journal of each run, tools, errors and hostile
# lines. Paths are confined to the server's folder, so the gate spec is copied into it, with a
# shorter bench budget (the AVX2/AVX-512 variants are several times scalar's speed; 1.5x is asked).
# Usage: mcp_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
SRC="$2"
export RECUR_CACHE_DIR="$(mktemp -d)"
T="$RECUR_CACHE_DIR"
. "$(dirname "$0")/sysinfo_seed.sh"
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/gates"
sed 's/^budget_s = 2$/budget_s = 0.5/' "$SRC/episodes/gates/rmsnorm-speed.toml" > "$T/gates/rmsnorm-speed.toml"
grep -q '^budget_s = 0.5$' "$T/gates/rmsnorm-speed.toml" || { echo "FAIL: the gate's budget_s line changed" >&2; exit 1; }
cat > "$T/episode.toml" <<TOML
name = "rms-mcp"
description = "rmsnorm starts at scalar; the gate wants 1.5x over scalar"
gate = "gates/rmsnorm-speed.toml"
candidate = "best"
budget_s = 300
[start]
"kernel.rmsnorm.variant" = "scalar"
TOML
export TMPDIR="$T/tmp"  # nothing may be left here (bench.callgrind's dumps go to the run's folder)
mkdir -p "$TMPDIR"
if ! /usr/bin/python3 "$SRC/tests/mcp_client.py" drive "$RECUR" "$T"; then
  echo "FAIL: mcp_client.py drive; server stderr:" >&2
  tail -20 "$T/mcp.err" >&2
  exit 1
fi
if [ -n "$(ls -A "$TMPDIR")" ]; then
  echo "FAIL: left in TMPDIR: $(ls "$TMPDIR")" >&2
  exit 1
fi
echo "mcp_cli_test: ok"
