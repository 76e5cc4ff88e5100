"""Per-call overhead of a compiled frame over the plain eager call: cdynamo and
torch.compile(backend="eager") measured side by side, interleaved, in one run."""
import argparse
import gc
import json
import platform
import statistics
import sys
import time

import torch

# Each case is source text, so every system gets its own code object: per-code caches
# (co_extra) of cdynamo and torch._dynamo then never see each other's entries.
CASES = {
    "A": {
        "title": "x + 1, 1 tensor arg",
        "source": "def f(x):\n    return x + 1\n",
        "inputs": lambda: (torch.randn(4),),
    },
    "B": {
        "title": "10 tensors + 1 int, 10 adds",
        "source": (
            "def f(a, b, c, d, e, g, h, i, j, k, n):\n"
            "    return a + b + c + d + e + g + h + i + j + k + n\n"
        ),
        "inputs": lambda: tuple(torch.randn(4) for _ in range(10)) + (3,),
    },
}


def make_function(source):
    namespace = {"torch": torch}
    # Named after this file: frames of "<...>" pseudo-files are never traced.
    exec(compile(source, __file__, "exec"), namespace)
    return namespace["f"]


def make_systems(source, cdynamo_backend, with_inductor):
    """name -> callable for each system measured; all start from the same source."""
    import cdynamo

    systems = {
        "eager": make_function(source),
        "cdynamo": cdynamo.optimize(cdynamo_backend)(make_function(source)),
        "torch.compile": torch.compile(make_function(source), backend="eager"),
    }
    if with_inductor:
        systems["torch.compile inductor"] = torch.compile(make_function(source))
    return systems


def time_per_call(fn, args, iterations):
    """Seconds per call, averaged over `iterations` calls with the garbage collector off."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(iterations):
            fn(*args)
        elapsed = time.perf_counter_ns() - start
    finally:
        if gc_was_enabled:
            gc.enable()
    return elapsed / iterations / 1e9


def check_cdynamo_captured(title):
    """A silent fallback to eager would make cdynamo look free: insist on one captured graph."""
    from cdynamo.utils import counters

    stats = counters["stats"]
    if stats["unique_graphs"] != 1 or stats["frames_fallback"] != 0:
        raise SystemExit(
            f"case {title!r}: cdynamo captured {stats['unique_graphs']} graph(s) with "
            f"{stats['frames_fallback']} fallback(s) instead of 1 graph; reasons: "
            f"{dict(counters['graph_break'])}"
        )


def measure_case(case, args):
    from cdynamo.utils import counters

    counters.clear()
    inputs = case["inputs"]()
    systems = make_systems(case["source"], args.cdynamo_backend, args.with_inductor)
    expected = systems["eager"](*inputs)
    for name, fn in systems.items():
        for _ in range(5):  # first call compiles; the rest warm caches
            result = fn(*inputs)
        torch.testing.assert_close(result, expected, msg=lambda m, name=name: f"{name}: {m}")
    check_cdynamo_captured(case["title"])

    # Iterations so that one repeat of the eager call lasts about --repeat-seconds.
    eager_seconds = time_per_call(systems["eager"], inputs, 1000)
    iterations = max(1000, int(args.repeat_seconds / eager_seconds))

    # Interleaved repeats: drift of the machine (other load, frequency) hits every system alike.
    samples = {name: [] for name in systems}
    for _ in range(args.repeats):
        for name, fn in systems.items():
            samples[name].append(time_per_call(fn, inputs, iterations))
    return {name: statistics.median(values) * 1e6 for name, values in samples.items()}, iterations


def format_table(results):
    systems = list(next(iter(results.values()))["us"])
    header = "| case | eager µs | " + " | ".join(
        f"{name} µs (+overhead)" for name in systems[1:]) + " |"
    lines = [header, "|" + "---|" * (len(systems) + 1)]
    for key, result in results.items():
        eager = result["us"]["eager"]
        cells = [f"{eager:.2f}"] + [
            f"{result['us'][name]:.2f} (+{result['us'][name] - eager:.2f})" for name in systems[1:]
        ]
        lines.append(f"| {key}: {result['title']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats per system")
    parser.add_argument("--repeat-seconds", type=float, default=0.05,
                        help="target duration of one eager repeat")
    parser.add_argument("--cdynamo-backend", default="eager")
    parser.add_argument("--with-inductor", action="store_true",
                        help="also measure torch.compile with its default (inductor) backend")
    parser.add_argument("--cases", default="A,B", help="comma-separated subset of A,B")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    results = {}
    for key in args.cases.split(","):
        case = CASES[key]
        us, iterations = measure_case(case, args)
        results[key] = {"title": case["title"], "us": us, "iterations": iterations}

    print(f"Python {platform.python_version()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s), {platform.processor() or platform.machine()}; "
          f"median of {args.repeats} interleaved repeats, µs per call (+ over eager)")
    print(format_table(results))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"python": platform.python_version(), "torch": torch.__version__,
                       "threads": torch.get_num_threads(), "repeats": args.repeats,
                       "cdynamo_backend": args.cdynamo_backend, "results": results}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
