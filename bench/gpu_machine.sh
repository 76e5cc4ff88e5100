#!/usr/bin/env bash
# Builds cdynamo for the GPU machine's Python (3.12, torch 2.11) in place and runs what the
# closing notes quote from there: the test suite, the overhead benchmark and the quick suite.
# Usage: bench/gpu_machine.sh [tests|bench|all] OUTDIR   (CPU rows pinned to 2 cores, 2 threads)
#        bench/gpu_machine.sh gpu OUTDIR [bench/gpu.py options]   (the GPU table, not part of all;
#        GPU_CALL_S, default 560: seconds the whole call may take, the build included)
set -uo pipefail
what=${1:-all}
out=${2:-/tmp/cdynamo-gpu}
shift $(( $# < 2 ? $# : 2 ))
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=python CDYNAMO_CACHE_DIR="$out/kernel-cache"
cmake -S . -B build/dev -G Ninja -DPython_EXECUTABLE="$(command -v python3)" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/dev -j "$(nproc)" 2>&1 | grep -E "error|warning" | head -20
if [ "$what" = tests ] || [ "$what" = all ]; then
  workers=$(( $(nproc) / 2 ))
  python3 -m pytest -q -p no:cacheprovider -n "$workers" --tb=short tests/python 2>&1 | tee "$out/pytest.log" \
    | grep -E "^E  |passed|failed|^FAILED" | head -40
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  taskset -c 0,1 python3 bench/overhead.py --threads 1 --json "$out/overhead.json" 2>&1 | tail -4
  taskset -c 0,1 python3 -m cdynamo.bench --quick --threads 2 --no-progress --out "$out/suite" \
    --backends cdynamo:eager,cdynamo:inductor,torch:eager,torch:inductor 2>&1 | tail -40
fi
if [ "$what" = gpu ]; then
  # The device runs one command for at most 10 minutes: what the build took comes off the budget.
  budget=$(( ${GPU_CALL_S:-560} - SECONDS ))
  python3 bench/gpu.py --out "$out/gpu" --time-budget-s "$budget" "$@" 2>&1 | tee "$out/gpu.log" \
    | sed -n '/^# GPU benchmark/,$p'
  # Few files come back from the device: the per-job logs travel as one archive.
  tar -czf "$out/gpu-logs.tar.gz" -C "$out/gpu" logs && rm -rf "$out/gpu/logs"
fi
