# Thin wrapper over CMake. `make demo` and `make test` work on a fresh Debian machine:
# they install missing packages (scripts/install-deps.sh), configure, build, then run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
COLLTUNE = $(BUILD)/cli/colltune
DEMO_DIR ?= demo-out

.PHONY: all deps configure build test test-long test-asan test-tsan fuzz demo bench install clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) >/dev/null

build: configure
	cmake --build $(BUILD) -j$(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) -LE long

test-long: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) -L long

# Sanitizer suites (CI; docs/hardening.md), each in its own build directory, tests only.
# ASan+UBSan: the whole suite but `long`. Open MPI frees little at exit and unloads its plugins
# (LeakSanitizer cannot even name them), so MPI tests run without leak detection; everything
# else with it. Left out, because they only repeat under the sanitizers commands other tests run
# there, to compare numbers the Release suite already compares: cli.tune_vs_step and
# cli.tune_vs_step_colltune (the tune and step runs twenty times over, 8 minutes of ASan each),
# cli.one_default (step, tune and sweep on three
# machines, 2 minutes) and cli.calibrate_user_path.* (calibrate, compare and simulate on two
# published logs, 3 minutes; cli.calibrate_* cover those commands under ASan).
SAN_ENV = ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
SAN_ENV_MPI = ASAN_OPTIONS=abort_on_error=1:detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-asan: deps
	cmake --preset ci-asan >/dev/null
	cmake --build build-asan -j$(JOBS)
	$(SAN_ENV) ctest --test-dir build-asan --output-on-failure -j$(JOBS) -LE 'long|mpi' -E '^install|^cli[.](tune_vs_step|tune_vs_step_colltune|one_default)$$|^cli[.]calibrate_user_path[.]'
	$(SAN_ENV_MPI) ctest --test-dir build-asan --output-on-failure -j$(JOBS) -L mpi -LE long

# ThreadSanitizer: the threads transport's tests (not BenchInputs: single-threaded arithmetic at
# 65,536 ranks, and 1,024 threads that TSan makes minutes long; ASan runs them), then the shared
# memos, the tuner's parallel grid over three runtimes' price paths, the fit's parallel rows,
# the bottleneck's what-if machines and NCCL's pricer building a tree's machines side by side.
test-tsan: deps
	cmake --preset ci-tsan >/dev/null
	cmake --build build-tsan -j$(JOBS) --target test_runtime test_bench_runtime test_common test_tuner test_calibrate \
	  test_whatif test_sim_analytic test_sim_engine
	TSAN_OPTIONS=halt_on_error=1 GTEST_FILTER=-BenchInputs.* \
	  ctest --test-dir build-tsan --output-on-failure -R '^test_(runtime|bench_runtime)$$'
	TSAN_OPTIONS=halt_on_error=1 GTEST_FILTER='OnceMap.*:ParallelMap.*:Tune.ParallelGrid*:Calibrate.APublishedLog*:Bottleneck.*' \
	  ctest --test-dir build-tsan --output-on-failure -R '^test_(common|tuner|calibrate|whatif)$$'
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/sim/analytic/test_sim_analytic --gtest_filter='NcclPriceScale.*'
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/sim/event/test_sim_engine --gtest_filter='FastPath.RoutesFoundAhead*'

# libFuzzer on every parser for FUZZ_SECONDS each (needs clang; docs/hardening.md). New inputs
# go to build-fuzz/corpus/, never into the checked-in corpus. Then the nothing-written-on-error
# replay through the colltune binary, FUZZ_CLI_RUNS runs from seed FUZZ_SEED.
FUZZ_SECONDS ?= 60
FUZZ_CLI_RUNS ?= 3000
FUZZ_SEED ?= 1
FUZZ_TARGETS = topology_json nccl_xml workload_json horovod_timeline nccl_tests_log bench_json preset_spec size_string \
  time_string calibrate_nccl_tests_log calibrate_bench_json compare_horovod_timeline step_whatif sweep_vary
fuzz: build
	cmake --preset fuzz >/dev/null
	cmake --build build-fuzz -j$(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do mkdir -p build-fuzz/corpus/$$t; echo "== fuzz_$$t"; \
	  build-fuzz/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=30 -rss_limit_mb=4096 \
	    build-fuzz/corpus/$$t tests/fuzz/corpus/$$t || exit 1; done
	python3 tests/fuzz/cli_no_files.py $(COLLTUNE) . $(FUZZ_CLI_RUNS) $(FUZZ_SEED)

# The main job on a built-in default: describe the machine, predict allreduce and a training
# step on it, then tune Horovod/NCCL settings for ResNet-50 and write the config files.
demo: build
	$(COLLTUNE) topo show dgx-h100:nodes=2
	$(COLLTUNE) simulate --topology dgx-h100:nodes=4 --algo auto --bytes 1KiB:1GiB
	$(COLLTUNE) step --topology dgx-h100:nodes=4 --model resnet50
	@mkdir -p $(DEMO_DIR)
	$(COLLTUNE) tune --topology dgx-h100:nodes=4 --model resnet50 --out $(DEMO_DIR)
	@ls -l $(DEMO_DIR)

bench: build
	@for b in $(BUILD)/bench/micro/micro_*; do echo "== $$b"; $$b --benchmark_min_time=0.2; done

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD)
