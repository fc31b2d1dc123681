#!/bin/sh
# `recur mcp` driven by the official TypeScript SDK client (tests/npm/mcp_sdk_client.mjs): every
# tool's success and error paths; the SDK checks each result against the tool's outputSchema.
# scripts/setup.sh installs the SDK into tests/npm/node_modules. Skips (exit 77) only where node
# or npm are absent; with node but no installed SDK it fails and says how to install it.
# Usage: mcp_sdk_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$(realpath "$1")"
SRC="$(realpath "$2")"
. "$(dirname "$0")/npm_client.sh"
require_npm_client mcp_sdk_test @modelcontextprotocol/sdk
. "$(dirname "$0")/testlib.sh"
W="$T/work"
mkdir -p "$W/gates"
cp "$SRC/fuzz/corpus/fuzz_trace_reader/object_form.json" "$W/trace.json"
"$RECUR" model new "$W/tiny.gguf" --dim 32 --layers 1 --heads 2 --vocab 400 --context 64 >/dev/null 2>&1 || fail "model new"
sed 's/^budget_s = 2$/budget_s = 0.3/' "$SRC/episodes/gates/rmsnorm-speed.toml" > "$W/gates/rmsnorm-speed.toml"
cat > "$W/episode.toml" <<TOML
name = "rms-sdk"
description = "rmsnorm starts at scalar; the gate wants 1.5x over scalar"
gate = "gates/rmsnorm-speed.toml"
candidate = "best"
budget_s = 60
[start]
"kernel.rmsnorm.variant" = "scalar"
TOML
if ! node "$SRC/tests/npm/mcp_sdk_client.mjs" "$RECUR" "$W"; then
  fail "mcp_sdk_client.mjs; server stderr:"
  tail -20 "$W/mcp.err" >&2
fi
finish mcp_sdk_test
