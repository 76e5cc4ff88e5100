"""Micro-benchmarks of the C++ back end's generated kernels, side by side with eager (and, with
--torch-compile, PyTorch's own inductor) in one process with the same threads:

  1. x * 2 + 1 over 16M float32: achieved GB/s (bytes read + written / time) next to the
     machine's measured bandwidth (torch's copy_ into a preallocated tensor of the same size);
  2. the pointwise chain relu(sin(x) + cos(x)) * 2 + exp(-x) over 16M float32 (anchors.md).

Programs are built by hand in the back end's test format (no lowering needed), so this measures
code generation, the kernel cache and the runtime alone. Run: PYTHONPATH=python python bench/kernel_bandwidth.py
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import torch

import cdynamo
from cdynamo import config
from cdynamo._C import _testing as T

F = "Float32"


def load(index="i0"):
    return ("Load", F, "x", index)


def const(v):
    return ("Constant", F, v)


def unary_program(n, body, inplace=False):
    """out = body(x) over n elements; inplace: out reuses x's storage (a planned in-place update)."""
    out = {"name": "y", "kind": "output", "dtype": "float32", "sizes": [n]}
    if inplace:
        out["reuses"] = "x"
    return {
        "buffers": [{"name": "x", "kind": "input", "dtype": "float32", "sizes": [n]}, out],
        "outputs": ["y"],
        "steps": [{"kernel": "kernel0", "ranges": [n], "nodes": [{"pointwise": "y", "body": body}]}],
    }


def axpb():
    return ("Add", F, ("Mul", F, load(), const(2.0)), const(1.0))


def chain():
    x = load()
    s = ("Add", F, ("Sin", F, x), ("Cos", F, x))
    r = ("Maximum", F, s, const(0.0))
    return ("Add", F, ("Mul", F, r, const(2.0)), ("Exp", F, ("Neg", F, x)))


def eager_chain(x):
    return torch.relu(torch.sin(x) + torch.cos(x)) * 2 + torch.exp(-x)


def timeit(fn, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), (min(samples), max(samples))


def row(name, seconds, spread, nbytes=None, baseline=None):
    text = f"  {name:<44} {seconds * 1e3:9.2f} ms  [{spread[0] * 1e3:.2f} .. {spread[1] * 1e3:.2f}]"
    if nbytes:
        text += f"  {nbytes / seconds / 1e9:6.1f} GB/s"
    if baseline:
        text += f"  {baseline / seconds:5.2f}x eager"
    print(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--torch-compile", action="store_true", help="also time torch.compile (slow to compile)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config.cache_dir = os.environ.get("CDYNAMO_CACHE_DIR") or tempfile.mkdtemp(prefix="cdynamo-bench-")
    n, nbytes = args.n, 8 * args.n  # 4 bytes read + 4 bytes written per element
    x = torch.randn(n)
    print(f"cdynamo C++ kernels, {n} float32, {torch.get_num_threads()} threads, torch {torch.__version__}")

    out = torch.empty_like(x)
    t_copy, s_copy = timeit(lambda: out.copy_(x), args.repeat)
    print("memory bandwidth")
    row("torch copy_ (preallocated)", t_copy, s_copy, nbytes)

    print("x * 2 + 1")
    t0 = time.perf_counter()
    fn = T.compile_program(unary_program(n, axpb()))
    compile_s = time.perf_counter() - t0
    inplace = T.compile_program(unary_program(n, axpb(), inplace=True))
    assert torch.equal(fn(x)[0], x * 2 + 1)
    t_eager, s_eager = timeit(lambda: x * 2 + 1, args.repeat)
    row("eager", t_eager, s_eager, nbytes)
    t_fn, s_fn = timeit(lambda: fn(x), args.repeat)
    row("cdynamo (returns a new tensor)", t_fn, s_fn, nbytes, t_eager)
    scratch = x.clone()
    t_in, s_in = timeit(lambda: inplace(scratch), args.repeat)
    row("cdynamo in place (half the footprint: caches)", t_in, s_in, nbytes, t_eager)
    with config.patch(reuse_large_buffers=False):
        fresh = T.compile_program(unary_program(n, axpb()))
    t_fresh, s_fresh = timeit(lambda: fresh(x), args.repeat)
    row("cdynamo, fresh output every call", t_fresh, s_fresh, nbytes, t_eager)
    # copy_ and the compiled call touch the same 2 x 64 MB (input and a reused output): comparable.
    print(f"  cdynamo reaches {t_copy / t_fn * 100:.0f}% of copy_'s bandwidth (median), "
          f"{s_copy[0] / s_fn[0] * 100:.0f}% (best of each); compile {compile_s:.2f} s")
    if args.torch_compile:
        tc = torch.compile(lambda a: a * 2 + 1)
        t0 = time.perf_counter()
        tc(x)
        print(f"  torch.compile cold compile {time.perf_counter() - t0:.1f} s")
        t_tc, s_tc = timeit(lambda: tc(x), args.repeat)
        row("torch.compile (inductor)", t_tc, s_tc, nbytes, t_eager)

    print("relu(sin(x) + cos(x)) * 2 + exp(-x)")
    t0 = time.perf_counter()
    cfn = T.compile_program(unary_program(n, chain()))
    compile_s = time.perf_counter() - t0
    got = cfn(x)[0]
    ref = eager_chain(x.double())
    err = ((got.double() - ref).abs() / ref.abs().clamp_min(1e-6)).max().item()
    t_eager, s_eager = timeit(lambda: eager_chain(x), max(5, args.repeat // 3))
    row("eager", t_eager, s_eager)
    t_fn, s_fn = timeit(lambda: cfn(x), args.repeat)
    row("cdynamo", t_fn, s_fn, None, t_eager)
    print(f"  max relative error vs float64: {err:.2e}; compile {compile_s:.2f} s")
    if args.torch_compile:
        tc = torch.compile(eager_chain)
        t0 = time.perf_counter()
        tc(x)
        print(f"  torch.compile cold compile {time.perf_counter() - t0:.1f} s")
        t_tc, s_tc = timeit(lambda: tc(x), args.repeat)
        row("torch.compile (inductor)", t_tc, s_tc, None, t_eager)
    return 0


if __name__ == "__main__":
    sys.exit(main())
