"""The GPU benchmark: eager, cdynamo's and torch.compile's inductor on anchors.md's GPU table, each
job in its own process. Assumes a CUDA GPU (--device cpu --small: the plumbing); bench/README.md.

    python3 bench/gpu.py --out DIR [--models a,b] [--time-budget-s 540] [--dtype bfloat16]
"""
import argparse
import os
import sys

# Runnable from a checkout without PYTHONPATH=python: this repository's package comes first.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from cdynamo.bench import gpu_cases, gpu_runner  # noqa: E402


def _comma_list(text):
    return [item.strip() for item in text.split(",") if item.strip()]


def build_parser():
    defaults = gpu_runner.GpuOptions()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--out", default=defaults.out,
        help="output folder: results.md, results.json, results.jsonl, logs/ (default: %(default)s)")
    add("--device", choices=("cuda", "cpu"), default="cuda")
    add("--small", action="store_true", help="tiny shapes and few repeats: tests the plumbing, measures nothing")
    add("--models", type=_comma_list,
        help="comma-separated cases or groups (micro, vision, transformers; default: all; see --list); "
        "the copy probe always runs")
    add("--systems", type=_comma_list, default=list(gpu_runner.SYSTEMS),
        help="the report's columns are the first cdynamo:* and torch:* ones; eager always runs (default: %(default)s)")
    add("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
        help="float32 runs with TF32 matmuls and convolutions (default: %(default)s)")
    add("--time-budget-s", type=float, default=defaults.time_budget_s,
        help="the whole run: jobs that no longer fit are skipped and listed (default: %(default)s)")
    add("--timeout-s", type=float, default=defaults.timeout_s, help="one job (default: %(default)s)")
    add("--no-warm", action="store_true", help="skip the warm-compile processes (about a third of the run)")
    add("--fresh", action="store_true",
        help="measure the selected cases again instead of resuming from OUT/results.jsonl")
    add("--repeats", type=int, help=f"timed batches per job (default: {defaults.repeats}; --small: 3)")
    add("--warmup", type=int, help=f"calls before timing (default: {defaults.warmup}; --small: 1)")
    add("--max-timing-s", type=float, default=defaults.max_timing_s,
        help="one job's timing: fewer repeats past this (default: %(default)s)")
    add("--kernel-counts", action="store_true", help="also count every model call's kernels (torch.profiler)")
    add("--threads", type=int, help="torch threads in the workers (default: torch's; --device cpu: 1)")
    add("--cache-root", help="folder of the per-job compiler caches (default: one under the temp dir)")
    add("--merge", type=_comma_list, help="one report in --out from these results.jsonl files; runs nothing")
    add("--no-progress", action="store_true")
    add("--list", action="store_true", help="list the cases and exit")
    return parser


def options_from(args):
    small = args.small
    options = gpu_runner.GpuOptions(
        out=args.out, device=args.device, dtype=args.dtype, small=small, cases=args.models, systems=tuple(args.systems),
        warm=not args.no_warm, fresh=args.fresh, time_budget_s=args.time_budget_s, timeout_s=args.timeout_s,
        max_timing_s=args.max_timing_s, kernel_counts=args.kernel_counts, cache_root=args.cache_root,
        threads=args.threads or (1 if args.device == "cpu" else None), progress=not args.no_progress,
    )
    # --small checks that everything runs; a few calls show that as well as many. (On the CPU one
    # thread: OpenMP's threads on cores shared with other work stall for whole scheduler slices.)
    options.repeats = args.repeats or (3 if small else options.repeats)
    options.warmup = args.warmup or (1 if small else options.warmup)
    if small:
        options.min_batch_s, options.max_timing_s, options.launch_repeats = 0.005, min(options.max_timing_s, 1.0), 30
    return options


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.list:
        for case in gpu_cases.CASES:
            missing = case.missing_packages()
            note = f"  [missing {', '.join(missing)}]" if missing else ""
            print(f"{case.name:<22} {case.kind:<7} {case.title}{note}")
        for group, members in gpu_cases.GROUPS.items():
            print(f"group {group}: {', '.join(members)}")
        return 0
    if args.merge:
        built = gpu_runner.merge_results(args.merge, args.out, tuple(args.systems))
        sys.stdout.write(built["markdown"])
        return 0
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            sys.stderr.write("--device cuda: torch.cuda.is_available() is False here (try --device cpu --small)\n")
            return 2
    if args.models:
        try:
            gpu_cases.select_cases(args.models)
        except KeyError as error:
            sys.stderr.write(f"{error.args[0]}\n")
            return 2
    built = gpu_runner.run_gpu_bench(options_from(args))
    sys.stdout.write(built["markdown"])
    sys.stdout.write(f"\nwritten: {os.path.join(args.out, 'results.md')}, results.json, results.jsonl, logs/\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
