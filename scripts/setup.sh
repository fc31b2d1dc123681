#!/usr/bin/env bash
# Installs the Debian packages recur needs to build and test. Idempotent: it runs
# `apt-get update` only when a package is missing, and says what it installs.
set -euo pipefail

packages=(
  # toolchain
  build-essential g++ cmake ninja-build pkg-config make git
  clang-14 libclang-rt-14-dev valgrind
  # libraries (docs/dependencies.md says why each one)
  libcli11-dev libfmt-dev nlohmann-json3-dev libsimdjson-dev
  libprotobuf-dev protobuf-compiler zlib1g-dev libsqlite3-dev libtomlplusplus-dev
  libcpp-httplib-dev libxxhash-dev libpng-dev libre2-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # Python bindings (python/, docs/python.md): /usr/bin/python3 builds, imports and tests them
  pybind11-dev python3-dev python3-numpy python3-pytest python3-pip python3-venv python3-setuptools python3-wheel
  # MPI collectives backend (engine.collectives=mpi, docs/engine.md "MPI mode"): OpenMPI and mpirun
  libopenmpi-dev openmpi-bin
  # the KV transfer engine's ucx transport (serve.kv_transfer=ucx, docs/transfer.md "UCX"; optional: RECUR_WITH_UCX)
  libucx-dev
  # tests only: tests/agent_report_cli_test.sh renders the agent's HTML report headless
  chromium
  # tests only: the official npm client libraries (tests/npm, docs/dependencies.md); npm below
  nodejs
)

# The npm test clients (tests/npm/package.json, pinned by its package-lock.json) into the ignored
# tests/npm/node_modules; run after the packages are in place.
install_npm_test_clients() {
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/npm"
  if ! command -v npm >/dev/null 2>&1; then
    echo "setup: npm missing; the npm client tests will be skipped"
    return 0
  fi
  if [ -d "$dir/node_modules" ] && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    echo "setup: npm test clients present"
    return 0
  fi
  echo "setup: installing the npm test clients into $dir/node_modules"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
}


missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# Debian's npm package, unless an npm is already there (NodeSource's nodejs bundles its own).
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  install_npm_test_clients
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "setup: missing packages (${missing[*]}) and not root; install them or rerun as root" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_npm_test_clients
echo "setup: done"
