"""`python -m cdynamo.demo` (what `make run` runs): compiles a small MLP with cdynamo, checks it
against eager, and prints compile time, per-call times and the speedup."""
import argparse
import statistics
import time

import torch

import cdynamo
from cdynamo.utils import counters


def default_backend():
    """The code-generating backend once it exists, else the graph-running one."""
    return "inductor" if "inductor" in cdynamo.list_backends() else "eager"


class MLP(torch.nn.Module):
    """Four Linear+ReLU blocks written out: straight-line code that cdynamo captures whole."""

    def __init__(self, width):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, width)
        self.fc2 = torch.nn.Linear(width, width)
        self.fc3 = torch.nn.Linear(width, width)
        self.fc4 = torch.nn.Linear(width, width)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        x = torch.relu(self.fc3(x))
        return torch.relu(self.fc4(x))


def median_call_seconds(fn, x, repeats, calls_per_repeat):
    """Median over `repeats` of the mean time of one call, itself measured over many calls."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls_per_repeat):
            fn(x)
        samples.append((time.perf_counter() - start) / calls_per_repeat)
    return statistics.median(samples)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default=None, help="backend name (default: inductor if available, else eager)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20, help="calls per timed repeat")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args(argv)
    backend = args.backend or default_backend()
    if args.threads:
        torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    model = MLP(args.width).eval()
    x = torch.randn(args.batch, args.width)
    print(f"model: 4 x (Linear {args.width} + ReLU), batch {args.batch}, "
          f"backend {backend!r}, {torch.get_num_threads()} threads")

    counters.clear()
    compiled = cdynamo.compile(model, backend=backend)
    with torch.inference_mode():
        expected = model(x)
        start = time.perf_counter()
        actual = compiled(x)
        compile_seconds = time.perf_counter() - start
        torch.testing.assert_close(actual, expected)
        print("result matches eager")

        for _ in range(3):  # warm caches and allocators of both before timing
            model(x)
            compiled(x)
        eager_seconds = median_call_seconds(model, x, args.repeats, args.calls)
        compiled_seconds = median_call_seconds(compiled, x, args.repeats, args.calls)

    graphs = counters["stats"]["unique_graphs"]
    graph_breaks = sum(counters["graph_break"].values())
    print(f"compile time (first call): {compile_seconds:.3f} s")
    print(f"eager:    {eager_seconds * 1e3:.3f} ms per call")
    print(f"compiled: {compiled_seconds * 1e3:.3f} ms per call")
    print(f"speedup:  {eager_seconds / compiled_seconds:.2f}x")
    print(f"graphs captured: {graphs}, graph breaks: {graph_breaks}")
    for reason, count in counters["graph_break"].items():
        print(f"  break x{count}: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
