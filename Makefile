# cdynamo developer commands. `make run`: set up everything and run the demo; `make test`: run the tests.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
TORCH_PIN := torch==2.13.0
# Triton from PyPI: on a CPU-only machine its interpreter runs the GPU target's kernels in tests.
TRITON_PIN := triton==3.9.0
BUILD_DIR := build/dev
JOBS ?= 2

.PHONY: run test test-clang build venv bench bench-suite bench-zoo verify clean sanitize wheel

# The stamp's name changes when the list does, so an existing venv gets the new packages.
VENV_STAMP := $(VENV)/.installed-2
$(VENV_STAMP):
	test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_PIN) numpy pytest pytest-xdist scikit-build-core cmake ninja
	$(PY) -m pip install -q $(TRITON_PIN)
	touch $@

venv: $(VENV_STAMP)

# In-place development build: the extension lands in python/cdynamo/.
build: venv
	$(VENV)/bin/cmake -S . -B $(BUILD_DIR) -G Ninja -DPython_EXECUTABLE=$(abspath $(PY)) -DCMAKE_BUILD_TYPE=Release >/dev/null
	$(VENV)/bin/cmake --build $(BUILD_DIR) -j $(JOBS)
	cp --remove-destination $(BUILD_DIR)/_C*.so python/cdynamo/  # a new file: running tests keep the old one
	ln -sf $(BUILD_DIR)/compile_commands.json compile_commands.json

run: build
	PYTHONPATH=python $(PY) -m cdynamo.demo

test: build
	PYTHONPATH=python $(PY) -m pytest -q -n 2 --durations=15 tests/python tests/fuzz
	TRITON_INTERPRET=0 PYTHONPATH=python $(PY) -m pytest -q tests/python/backend/test_triton_build.py

# The op sweep and the code-generation tests with clang++ (Debian: apt-get install clang
# libomp-dev), every kernel compiled with -Wall -Wextra -Werror: generated code must stay portable
# C++ (make test covers g++). Kernels go to build/clang-cache, keyed by compiler and flags; two
# pytest workers keep both cores compiling.
CLANG_CXX ?= clang++
CLANG_TESTS ?= $(addprefix tests/python/backend/,test_inductor_sweep.py test_codegen.py test_codegen_accumulators.py \
  test_codegen_fused.py test_codegen_fuzz.py)
CLANG_CACHE := $(abspath build/clang-cache)
test-clang: build
	@command -v $(CLANG_CXX) >/dev/null || { echo "test-clang needs $(CLANG_CXX): apt-get install clang libomp-dev" >&2; exit 1; }
	CDYNAMO_CXX=$(CLANG_CXX) CDYNAMO_CXXFLAGS="-Wall -Wextra -Werror" CDYNAMO_CACHE_DIR=$(CLANG_CACHE) \
	  CDYNAMO_TEST_CACHE_DIR=$(CLANG_CACHE)/tests PYTHONPATH=python $(PY) -m pytest -q -n 2 $(CLANG_TESTS)

bench: build
	PYTHONPATH=python $(PY) bench/overhead.py

# The model benchmark suite (python -m cdynamo.bench). With the model-zoo venv (bench-zoo:
# torch 2.14.1 + torchvision, timm, transformers, matplotlib) every model runs; without it, the
# main venv runs the microbenchmarks and reports the others as skipped. BENCH_ARGS adds options,
# e.g. make bench-suite BENCH_ARGS="--quick".
BENCH_VENV := .venv-bench
BENCH_ARGS ?=
bench-suite: build $(if $(wildcard $(BENCH_VENV)/bin/python),$(BENCH_VENV)/.cdynamo-installed)
	if [ -x $(BENCH_VENV)/bin/python ]; then $(BENCH_VENV)/bin/python -m cdynamo.bench $(BENCH_ARGS); \
	else PYTHONPATH=python $(PY) -m cdynamo.bench $(BENCH_ARGS); fi

# Creates .venv-bench (about 5.5 GB) and installs cdynamo into it; reinstalls when sources change.
bench-zoo: $(BENCH_VENV)/.cdynamo-installed
$(BENCH_VENV)/.cdynamo-installed: $(shell git ls-files csrc python CMakeLists.txt pyproject.toml 2>/dev/null)
	bench/setup_zoo.sh
	touch $@

verify: build
	PYTHONPATH=python $(PY) -m cdynamo.verify

# The pip-installable package, built the way users build it (against the venv's torch).
wheel: venv
	$(PY) -m pip wheel -q --no-build-isolation --no-deps . -w build/wheels
	ls build/wheels/cdynamo-*.whl

# ASan + UBSan build of the extension (build/asan, -O0 -g1: the build, not the tests, dominates
# its time on 2 cores; -g1 keeps line numbers in reports) running the frontend and end-to-end suites. Any report fails the run:
# ASan aborts on its first error, UBSan is built with -fno-sanitize-recover (CMakeLists.txt).
# The thread stress test runs 20,000 calls here instead of 100,000. Two pytest workers.
SANITIZE_RUNTIME = $$($(CXX) -print-file-name=libasan.so):$$($(CXX) -print-file-name=libubsan.so)
sanitize: venv
	$(VENV)/bin/cmake -S . -B build/asan -G Ninja -DPython_EXECUTABLE=$(abspath $(PY)) -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_C_FLAGS_DEBUG="-O0 -g1" -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" -DCDYNAMO_SANITIZE=ON -DCDYNAMO_INPLACE=OFF >/dev/null
	$(VENV)/bin/cmake --build build/asan -j $(JOBS)
	rm -rf build/asan/pkg && mkdir -p build/asan/pkg && cp -r python/cdynamo build/asan/pkg/ && rm -f build/asan/pkg/cdynamo/_C*.so && cp build/asan/_C*.so build/asan/pkg/cdynamo/
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  LD_PRELOAD=$(SANITIZE_RUNTIME) CDYNAMO_STRESS_CALLS=20000 \
	  PYTHONPATH=build/asan/pkg $(PY) -m pytest -q -x -n 2 tests/python/frontend tests/python/e2e

clean:
	rm -rf build python/cdynamo/_C*.so
