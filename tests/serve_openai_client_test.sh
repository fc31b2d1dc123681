#!/bin/sh
# `recur serve` driven by the official OpenAI client (tests/npm/serve_openai_client.mjs, the
# `openai` npm package): chat and completions, streamed and not, logprobs, echo, and a 400 the
# client surfaces as an APIError for every unsupported field. scripts/setup.sh installs the client
# into tests/npm/node_modules. Skips (exit 77) only where node or npm are absent; with node but no
# installed client it fails and says how to install it.
# Usage: serve_openai_client_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$(realpath "$1")"
SRC="$(realpath "$2")"
. "$(dirname "$0")/npm_client.sh"
require_npm_client serve_openai_client_test openai
. "$(dirname "$0")/testlib.sh"
. "$(dirname "$0")/serve_port.sh"
SERVER=""
trap '[ -n "$SERVER" ] && kill -9 "$SERVER" 2>/dev/null; rm -rf "$T"' EXIT
tiny_serve_model "$T/tiny.gguf" 256 || { fail "model new"; finish serve_openai_client_test; }
"$RECUR" serve -m "$T/tiny.gguf" --port 0 --api-key sekrit --workers 1 --threads 1 2> "$T/serve.err" &
SERVER=$!
PORT=$(serve_port "$T/serve.err")
if [ -z "$PORT" ]; then
  fail "the server did not come up"
elif ! node "$SRC/tests/npm/serve_openai_client.mjs" "$PORT" sekrit tiny; then
  fail "serve_openai_client.mjs; server stderr:"
  tail -20 "$T/serve.err" >&2
fi
finish serve_openai_client_test
