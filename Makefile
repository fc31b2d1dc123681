# The two commands the README promises. Everything else is a detail of these.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup build run test tsan fuzz clean

setup:
	@scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The main job: the agent solves the three episodes (episodes/*.toml) from their starting configurations,
# printing for each the gate's verdict, the experiments, the root cause and the report's path.
# The journal and the reports go to runs/.
EPISODES ?= episodes/kda-replayssm.toml episodes/partition-numerics.toml episodes/kv-transfer-overlap.toml
run: build
	@status=0; for e in $(EPISODES); do \
	  $(BUILD)/recur agent run --episode $$e || status=1; echo; \
	done; exit $$status

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600
	@$(MAKE) --no-print-directory tsan
	@$(MAKE) --no-print-directory fuzz

# Sanitizer builds use -O1 with line tables only: enough for symbolized reports, and they
# compile about 40% (TSan) and 20% (fuzz) faster than -O2 -g on CI's 2 cores.
# ThreadSanitizer build of the concurrency tests (label "tsan").
# Without UCX: its libucm overrides mmap/madvise, and a thread's start (glibc's madvise of the
# stack) then enters libucm's rwlock before TSan has set the thread up, which crashes every test
# that starts a thread in a binary linking it. The UCX transport's tests run in the normal build.
tsan: setup
	@cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DRECUR_SANITIZE=thread \
	  -DRECUR_BUILD_BENCHMARKS=OFF -DRECUR_WITH_UCX=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target recur_tsan_tests
	@cd build-tsan && ctest --output-on-failure -L tsan -j $(JOBS) --timeout 600

# libFuzzer targets (clang-14), each run for FUZZ_SECONDS.
FUZZ_SECONDS ?= 6
fuzz: setup
	@cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRECUR_FUZZ=ON \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
	  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
	  -DRECUR_BUILD_TESTS=OFF -DRECUR_BUILD_BENCHMARKS=OFF >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target recur_fuzz_targets
	@scripts/run_fuzzers.sh build-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) build-tsan build-fuzz
