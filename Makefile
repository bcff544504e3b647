# Entry points. `make run` and `make test` work on a fresh Debian machine:
# they install what is missing, configure, build, then run.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps build run test test-full test-unit test-python python-env test-asan \
        test-tsan test-valgrind bench bench-compile-op format check-format clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The demo: a small C program on 4 local ranks, then DDP training on 4
# local ranks (torchrun) over gloo and over shoal, step times side by side.
run: build python-env
	$(BUILD)/tools/shoalrun -n 4 --tag-output $(BUILD)/examples/shoal-example-hello
	OMP_NUM_THREADS=1 PYTHONWARNINGS=ignore $(PYENV)/bin/python -m torch.distributed.run \
	    --standalone --nproc-per-node 4 examples/python/ddp_train.py --compare

# Every area of tests: the layering of the includes and of the calls
# (scripts/check-layers.py, check-calls.py), the file names in the docs
# and comments (check-paths.py),
# unit, multi-process and failure tests, the install check, the Python
# tests, PyTorch's suite and the network-namespace hosts. By default a
# sample (SAMPLE=1): a test that runs at several world sizes runs at one
# (3 ranks where it has a 3-rank form; tests/runner.c and
# tests/python/conftest.py say which), and the slowest Python tests whose
# ground others cover (marked `full`) wait for make test-full; each part
# prints how many it left out. SAMPLE=0 runs every test of these suites
# (CI does); make test-full also runs the whole matrices. TEST_JOBS tests
# run side by side.
SAMPLE    ?= 1
TEST_JOBS ?= 2
export SHOAL_TEST_SAMPLE = $(SAMPLE)
test: build
	scripts/check-layers.py
	scripts/check-calls.py $(BUILD)/CMakeFiles/shoal_objects.dir
	scripts/check-paths.py
	@echo "The Python environment is made beside the C tests (they mostly" \
	    "wait on their ranks); its output follows their report"
	@( $(MAKE) --no-print-directory python-env > $(PYENV_LOG) 2>&1; \
	   echo $$? > $(PYENV_LOG).rc ) & \
	 $(BUILD)/tests/shoal_tests -j $(TEST_JOBS); c=$$?; \
	 wait; cat $(PYENV_LOG); [ $$c = 0 ] && [ "$$(cat $(PYENV_LOG).rc)" = 0 ]
	tests/fuzz/replay.sh $(BUILD)
	scripts/check-install.sh $(BUILD)
	@echo "PyTorch's suite (2 ranks) runs beside the Python tests (it mostly" \
	    "waits; each side draws its ports from its own range); its" \
	    "report follows theirs"
	@( SHOAL_STORE_PORTS=30000-32767 \
	   $(TORCH_SUITE) --world-sizes 2 --jobs 3 > $(SUITE_LOG) 2>&1; \
	   echo $$? > $(SUITE_LOG).rc ) & \
	 ( SHOAL_STORE_PORTS=20000-29999 $(PY_SIDE) ); py=$$?; \
	 wait; cat $(SUITE_LOG); [ $$py = 0 ] && [ "$$(cat $(SUITE_LOG).rc)" = 0 ]
	$(PY_TIMED)
	$(MAKE) --no-print-directory test-net

# Hosts as network namespaces (tests/net, about 15 s): skipped, not failed,
# where namespaces are not permitted (not root, or a container without
# CAP_SYS_ADMIN). ip, tc and ping are installed when missing if we are root;
# where that fails, the tests that need them skip.
.PHONY: test-net
test-net: build
	@[ "$$(id -u)" != 0 ] || scripts/install-deps.sh --net || \
	    echo "test-net: ip, tc or ping missing; tests needing them skip"
	SHOAL_BUILD_DIR=$(abspath $(BUILD)) tests/net/run.sh

# The Python package: `pip install .` into a virtual environment under
# $(BUILD) (it sees the system's packages, so an installed torch is used),
# then pytest over multi-process cases on 1-4 ranks. The CMake tree of the
# wheel build is kept in $(BUILD)/python-wheel, so rebuilds are incremental.
PYTHON ?= python3
PYENV   = $(BUILD)/pyenv
python-env: | deps
	@PYTHON=$(PYTHON) scripts/install-deps.sh --venv $(PYENV)
	$(PYENV)/bin/python -m pip install --quiet --no-build-isolation --no-deps \
	    -C build-dir=$(BUILD)/python-wheel .

# Two passes: TEST_JOBS at a time, then the tests marked `timed` (they
# compare measured times, so they run alone); exit status 5 is pytest's
# "nothing selected", for a PYTEST_ARGS that picks no timed test.
PYTEST      = cd tests/python && $(abspath $(PYENV))/bin/python -m pytest -q
PY_SIDE     = $(PYTEST) -n $(TEST_JOBS) -m "not timed" --durations=10
PY_TIMED    = $(PYTEST) -m timed
TORCH_SUITE = $(PYENV)/bin/python tests/torch_suite/run_suite.py
SUITE_LOG   = $(abspath $(BUILD))/torch-suite.log
PYENV_LOG   = $(abspath $(BUILD))/python-env.log
test-python: python-env
	$(PY_SIDE) $(PYTEST_ARGS)
	$(PY_TIMED) $(PYTEST_ARGS) || [ $$? = 5 ]

# PyTorch's own distributed test suite (in the torch wheel) for gloo, for
# backend "shoal", and for shoal run under gloo's name (every group a shoal
# group) on 2 and 3 ranks; fails when shoal-as-gloo fails a test gloo passes.
# `make test` runs it on 2 ranks (about 2.5 minutes, beside the Python
# tests), test-full on 2 and 3.
.PHONY: test-torch-suite
test-torch-suite: python-env
	$(TORCH_SUITE) $(TORCH_SUITE_ARGS)

# torchft 0.2.0's own process-group tests (its process_group_test.py) over
# its gloo wrapper and over shoal, side by side (tests/torchft). Installs
# torchft and parameterized into the venv when missing.
.PHONY: test-torchft
test-torchft: python-env
	@$(PYENV)/bin/python -c 'import torchft, parameterized' 2>/dev/null || \
	    $(PYENV)/bin/python -m pip install --quiet torchft==0.2.0 parameterized
	$(PYENV)/bin/python tests/torchft/run_torchft_pg_test.py

# Every test at every world size, and the whole matrices (every collective,
# dtype, op, count and world size in C and through torch.distributed; the
# fault matrix; the network faults; PyTorch's suite on 2 and 3 ranks)
# instead of the sample `make test` runs. Takes much longer.
test-full: build
	scripts/check-layers.py
	scripts/check-calls.py $(BUILD)/CMakeFiles/shoal_objects.dir
	scripts/check-paths.py
	SHOAL_TEST_SAMPLE=0 SHOAL_COLL_FULL=1 SHOAL_FAULT_FULL=1 \
	    $(BUILD)/tests/shoal_tests -j $(TEST_JOBS)
	tests/fuzz/replay.sh $(BUILD)
	scripts/check-install.sh $(BUILD)
	SHOAL_NET_FULL=1 $(MAKE) --no-print-directory test-net
	SHOAL_PY_FULL=1 $(MAKE) --no-print-directory test-python SAMPLE=0
	$(MAKE) --no-print-directory test-torch-suite

test-unit: build
	$(BUILD)/tests/shoal_tests $(FILTER)

# The test suite built with AddressSanitizer and UndefinedBehaviorSanitizer.
test-asan: | deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	      -DSHOAL_SANITIZE=address,undefined
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	SHOAL_TEST_TIMEOUT_MULTIPLIER=3 ASAN_OPTIONS=detect_leaks=1 \
	    $(ASAN_BUILD)/tests/shoal_tests
	ASAN_OPTIONS=detect_leaks=1 tests/fuzz/replay.sh $(ASAN_BUILD)

# The fuzz harnesses (tests/fuzz) built with clang's libFuzzer, ASan and
# UBSan in $(FUZZ_BUILD), each run for FUZZ_SECONDS on its corpus in
# tests/fuzz/corpus; new inputs join the corpus, a crash is written to
# tests/fuzz/crashes/ and fails the target. make test replays the corpora.
# Warnings stay warnings: clang warns of a few things gcc accepts.
FUZZ_BUILD     ?= build-fuzz
FUZZ_SECONDS   ?= 60
FUZZ_HARNESSES ?= wire tcp algo plan
.PHONY: fuzz
fuzz:
	@scripts/install-deps.sh --fuzz
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_C_COMPILER=clang \
	      -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
	      -DSHOAL_FUZZ=ON -DSHOAL_SANITIZE=address,undefined -DSHOAL_WERROR=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix shoal_fuzz_,$(FUZZ_HARNESSES))
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_HARNESSES)

# Multi-process cases built with ThreadSanitizer (the engine, watcher and
# progress threads share each communicator).
TSAN_BUILD ?= build-tsan
TSAN_CASES  = p2p_async p2p_arrived direct_paused p2p_threads progress bcast barrier split timeout plan_random plan_errors \
              wait_for_abort p2p_any split_left split_keys window_map window_errors \
              queue queue_all revoke
# The same over the TCP transport (its epoll engine and abort frames).
TSAN_TCP_CASES = p2p_async progress bcast coll_inflight timeout plan_random \
                 wait_for_abort p2p_any split_left split_keys window_errors queue queue_all \
                 revoke
# The same over UCX's TCP transport where UCX is built. UCX's memory hooks
# and signal handlers, installed when its library loads, crash
# ThreadSanitizer's runtime: off for every TSan run.
TSAN_UCX_CASES = p2p_async bcast coll_inflight plan_random p2p_any window_ring queue
test-tsan: export UCX_MEM_MALLOC_HOOKS = no
test-tsan: export UCX_MEM_MMAP_HOOK_MODE = none
test-tsan: export UCX_HANDLE_ERRORS = none
test-tsan: | deps
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSHOAL_SANITIZE=thread
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target shoal_mptest shoalrun
	if grep -q '^SHOAL_HAVE_UCX_BUILT:INTERNAL=ON' $(TSAN_BUILD)/CMakeCache.txt; then \
	    for c in $(TSAN_UCX_CASES); do \
	        SHOAL_TRANSPORT=ucx UCX_TLS=tcp TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
	            $(TSAN_BUILD)/tools/shoalrun -n 3 $(TSAN_BUILD)/tests/shoal_mptest $$c || exit 1; \
	    done; \
	fi
	for c in $(TSAN_CASES); do \
	    TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
	        $(TSAN_BUILD)/tools/shoalrun -n 3 $(TSAN_BUILD)/tests/shoal_mptest $$c || exit 1; \
	done
	for c in $(TSAN_TCP_CASES); do \
	    SHOAL_TRANSPORT=tcp TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
	        $(TSAN_BUILD)/tools/shoalrun -n 3 $(TSAN_BUILD)/tests/shoal_mptest $$c || exit 1; \
	done
	for t in shm tcp; do for m in heap-quick plain-quick; do \
	    SHOAL_TRANSPORT=$$t TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
	        $(TSAN_BUILD)/tools/shoalrun -n 3 $(TSAN_BUILD)/tests/shoal_mptest \
	        window_ring $$m || exit 1; \
	done; done

# Ranks under valgrind: no leaks, no invalid accesses, for the example and
# the broadcast, point-to-point and failure cases.
VALGRIND = valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
           --error-exitcode=9
test-valgrind: build
	$(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/examples/shoal-example-hello
	$(BUILD)/tools/shoalrun -n 3 $(VALGRIND) $(BUILD)/tests/shoal_mptest bcast
	$(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest p2p_async
	$(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest p2p_threads
	$(BUILD)/tools/shoalrun -n 3 $(VALGRIND) $(BUILD)/tests/shoal_mptest split
	$(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest timeout
	$(BUILD)/tools/shoalrun -n 3 $(VALGRIND) $(BUILD)/tests/shoal_mptest plan_random 15
	$(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest plan_errors
	$(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest wait_for_abort
	$(BUILD)/tools/shoalrun -n 3 $(VALGRIND) $(BUILD)/tests/shoal_mptest split_left
	$(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest tp_mem
	SHOAL_TRANSPORT=tcp $(BUILD)/tools/shoalrun -n 3 $(VALGRIND) $(BUILD)/tests/shoal_mptest bcast
	SHOAL_TRANSPORT=tcp $(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest p2p_async
	SHOAL_TRANSPORT=tcp $(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest timeout
	SHOAL_TRANSPORT=tcp $(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest tp_mem
	$(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest window_ring heap-quick
	$(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest window_errors
	SHOAL_TRANSPORT=tcp $(BUILD)/tools/shoalrun -n 2 $(VALGRIND) $(BUILD)/tests/shoal_mptest window_ring plain-quick

# tools/soak: SOAK_CALLS checked collectives on SOAK_RANKS ranks, shm then TCP;
# then tools/stall: tiny timed calls over TCP on 4 ranks, failing on a stall.
SOAK_RANKS ?= 8
SOAK_CALLS ?= 100000
SOAK_ARGS  ?= --max-ratio 100
.PHONY: soak
soak: build
	st=0; \
	SHOAL_TRANSPORT=shm $(BUILD)/tools/shoalrun -n $(SOAK_RANKS) \
	    $(BUILD)/tools/shoal-soak --calls $(SOAK_CALLS) $(SOAK_ARGS) || st=1; \
	SHOAL_TRANSPORT=tcp $(BUILD)/tools/shoalrun -n $(SOAK_RANKS) \
	    $(BUILD)/tools/shoal-soak --calls $(SOAK_CALLS) $(SOAK_ARGS) || st=1; \
	SHOAL_TRANSPORT=tcp $(BUILD)/tools/shoalrun -n 4 \
	    $(BUILD)/tools/shoal-stall --calls 20000 --fail-over-ms 2000 || st=1; \
	exit $$st

bench: build
	@scripts/install-deps.sh --bench
	tools/perf/compare.sh $(BUILD)

# compare.sh five times back to back (to 64 KiB), then the stability
# target over the runs (tools/perf/stability.sh): every row's shoal time
# within 1.5x of its own median, no cell above 2x Open MPI's.
.PHONY: bench-stability
bench-stability: build
	@scripts/install-deps.sh --bench
	tools/perf/stability.sh $(BUILD)

# Two hosts as network namespaces, one process each, on one link: raw TCP
# (tools/perf/tcp_bench: 1 and N streams, round trip), gloo's all_reduce
# through torch.distributed, shoal over TCP (and UCX where built), and
# the targets for shoal's TCP rows. Needs root; skips (77) without.
.PHONY: bench-net
bench-net: build python-env
	@[ "$$(id -u)" != 0 ] || scripts/install-deps.sh --net
	tools/perf/bench_net.sh $(BUILD) $(abspath $(PYENV))/bin/python

# python -m shoal.bench: the same collectives through torch.distributed
# (gloo, and backend "shoal") and the shoal API (ordinary and shoal.empty
# tensors) on 2 local ranks, with the memcpy baseline and the targets of
# the Python front end. BENCH_ARGS: e.g. --quick, --ranks 4.
.PHONY: bench-python
bench-python: python-env
	$(PYENV)/bin/python -m shoal.bench $(BENCH_ARGS)

# compile_op: Shard(0) -> Shard(1) of a 4096 x 4096 DTensor on 2
# ranks against gloo's DTensor.redistribute, compile time on 8 ranks.
bench-compile-op: python-env
	$(PYENV)/bin/python tools/perf/bench_compile_op.py $(BENCH_ARGS)

# The late rank's call (tools/perf/bench_late.py): a 4-byte all_reduce
# straight after a gloo barrier against the same call back to back,
# through torch.distributed and the shoal API, beside torch's own add_;
# idle and beside a busy process. BENCH_ARGS: e.g. --loads 0 --iters 5000.
.PHONY: bench-late
bench-late: python-env
	$(PYENV)/bin/python tools/perf/bench_late.py $(BENCH_ARGS)

# Training steps with real compute (tools/perf/bench_train.py): DDP and
# FSDP2 of an MLP and a small transformer on 2 and 4 ranks, over gloo and
# shoal, beside the compute-only step; the communication overhead of each.
# BENCH_ARGS: e.g. --ranks 2 --load 1.
.PHONY: bench-train
bench-train: python-env
	$(PYENV)/bin/python tools/perf/bench_train.py $(BENCH_ARGS)

SOURCES = $(shell git ls-files '*.c' '*.h')

format:
	clang-format -i $(SOURCES)

check-format:
	clang-format --dry-run --Werror $(SOURCES)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
