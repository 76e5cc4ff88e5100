"""Where a compiled call's CPU time per kernel goes on CUDA: the launch-overhead case of gpu.py
(independent sin kernels) taken apart, all in one process on the GPU machine. Rows, each µs of CPU:

  raw launch          one empty kernel (nvcc-built) through cdynamo's driver launch path
  torch.empty         Python torch.empty on the device (the caching allocator behind eager)
  eager sin / out=    torch.sin(x) and torch.sin(x, out=y) from Python
  executor            slope per kernel of the compiled program called directly (no frame, no guards)
  compiled            slope per kernel of the compiled module (frame, guards, executor)

The slopes are (t64 - t8) / 56, as in gpu.py's launch case. Each time is the median of 200
calls, the device synchronized after each timer stops.

    PYTHONPATH=python python bench/launch_breakdown.py [--json OUT]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import cdynamo  # noqa: E402
import cdynamo.inductor  # noqa: E402,F401  (cdynamo.inductor: the backend itself)
from cdynamo.bench.gpu_cases import IndependentSines  # noqa: E402

EMPTY_KERNEL = 'extern "C" __global__ void empty_kernel(float* in, float* out, int n) {}\n'


def median_us(fn, calls=200, warm=20):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def per_op_us(op, ops=32):
    def batch():
        for _ in range(ops):
            op()
    return median_us(batch) / ops


def raw_launch_us():
    major, minor = torch.cuda.get_device_capability()
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "k.cu")
        with open(source, "w") as f:
            f.write(EMPTY_KERNEL)
        cubin = os.path.join(folder, "k.cubin")
        subprocess.run(["nvcc", "-cubin", f"-arch=sm_{major}{minor}", "-o", cubin, source], check=True)
        with open(cubin, "rb") as f:
            binary = f.read()
    stream = torch.cuda.current_stream().cuda_stream
    return cdynamo._C._testing.cuda_launch_cost(binary, "empty_kernel", 3, stream)


def compiled_slopes():
    captured = {}

    def capturing(gm, example_inputs):
        program = cdynamo.inductor(gm, example_inputs)
        captured["program"] = program
        return program

    rows = {}
    for count in (8, 64):
        inputs = tuple(torch.randn(32 + k, device="cuda") for k in range(count))
        module = IndependentSines()
        compiled = cdynamo.compile(module, backend=capturing)
        compiled(*inputs)
        program = captured.pop("program")
        wait = getattr(program, "wait", None)
        if wait is not None:
            wait()
        compiled(*inputs)
        rows[("compiled", count)] = median_us(lambda: compiled(*inputs))
        rows[("executor", count)] = median_us(lambda: program(*inputs))
        rows[("eager module", count)] = median_us(lambda: module(*inputs))
    return {name: (rows[(name, 64)] - rows[(name, 8)]) / 56 for name in ("compiled", "executor", "eager module")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    x = torch.randn(64, device="cuda")
    y = torch.empty_like(x)
    result = {
        "raw launch": raw_launch_us(),
        "torch.empty": per_op_us(lambda: torch.empty(64, device="cuda")),
        "torch.empty (cpu)": per_op_us(lambda: torch.empty(64)),
        "eager sin": per_op_us(lambda: torch.sin(x)),
        "eager sin out=": per_op_us(lambda: torch.sin(x, out=y)),
    }
    result.update(compiled_slopes())
    for name, us in result.items():
        print(f"{name:>20}: {us:7.2f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
