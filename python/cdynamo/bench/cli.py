"""Command line of `python -m cdynamo.bench`: parses options, lists models and backends, runs the
suite and says where the dashboard is."""
import argparse
import os
import sys

from .backends import ALL_BACKENDS, get_backend
from .registry import all_models
from .runner import SuiteOptions, run_suite


def _comma_list(text):
    return [item.strip() for item in text.split(",") if item.strip()]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m cdynamo.bench",
        description="Benchmarks real models and microbenchmarks on eager, cdynamo's backends and "
        "torch.compile side by side, one process per model; writes results and an HTML dashboard.",
    )
    parser.add_argument("--models", type=_comma_list, help="comma-separated model names (default: all; see --list)")
    parser.add_argument(
        "--backends", type=_comma_list,
        help=f"comma-separated backends (default: all of {', '.join(ALL_BACKENDS)}); eager always runs as the baseline",
    )
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch/OpenMP threads (default: 2 on cpu, torch's default on cuda)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16", "float64"), default="float32")
    parser.add_argument("--train", action="store_true", help="time a training step (forward, loss, backward) instead of inference")
    parser.add_argument("--quick", action="store_true", help="the three microbenchmarks and two small models (under 10 min on 2 cores)")
    parser.add_argument("--small", action="store_true", help="small sizes of every model: a smoke test, not a benchmark")
    parser.add_argument("--out", default=os.path.join("bench", "results", "suite"), help="output directory (default: %(default)s)")
    parser.add_argument("--fresh", action="store_true", help="measure the selected models again instead of skipping pairs already measured (other models' results stay)")
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats per backend (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up calls before timing (default: %(default)s)")
    parser.add_argument("--min-repeat-s", type=float, default=0.1, help="each repeat runs enough calls to last this long")
    parser.add_argument("--max-timing-s", type=float, default=120.0, help="per model: fewer repeats (min 3) past this")
    parser.add_argument("--timeout-s", type=float, default=3600.0, help="per model subprocess")
    parser.add_argument("--history", help="history file (default: OUT/history.jsonl)")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--list", action="store_true", help="list models and backends with their availability, then exit")
    return parser


def list_models_and_backends(stream=sys.stdout):
    stream.write("models:\n")
    for spec in all_models():
        missing = spec.missing_packages()
        state = f"missing package {', '.join(missing)}" if missing else "available"
        quick = " [quick]" if spec.quick else ""
        stream.write(f"  {spec.name:<24} {spec.family:<13} {state}{quick}  {spec.description}\n")
    stream.write("backends:\n")
    for name in ALL_BACKENDS:
        available, reason = get_backend(name).availability()
        stream.write(f"  {name:<20} {'available' if available else reason}\n")


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.list:
        list_models_and_backends()
        return 0
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            sys.stderr.write("--device cuda: torch.cuda.is_available() is False here\n")
            return 2
    for name in args.backends or ():
        get_backend(name)  # unknown names fail now, with the list of known ones
    threads = args.threads
    if threads is None:
        import torch

        threads = 2 if args.device == "cpu" else torch.get_num_threads()
    options = SuiteOptions(
        models=args.models, backends=args.backends, device=args.device, threads=threads, dtype=args.dtype,
        train=args.train, quick=args.quick, small=args.small, out=args.out, fresh=args.fresh,
        warmup=args.warmup, repeats=args.repeats, min_repeat_s=args.min_repeat_s,
        max_timing_s=args.max_timing_s, timeout_s=args.timeout_s, history=args.history,
        progress=not args.no_progress,
    )
    summary = run_suite(options)
    sys.stdout.write(open(os.path.join(args.out, "results.md")).read())
    sys.stdout.write(f"\ndashboard: {os.path.join(args.out, 'index.html')}\n")
    failed = [row for row in summary["rows"] if row.get("status") == "error" and row["backend"] == "eager"]
    # Exit status 1 only when eager itself failed: the harness or the model is broken. Backend
    # failures are results, shown on the dashboard.
    return 1 if failed else 0
