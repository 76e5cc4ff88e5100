# Long differential fuzzing runs: N generated programs, eager vs cdynamo (and optionally torch.compile), with counts.
# Assumes the extension is built (make build); imports tests/fuzz/fuzzlib.py by path; children get this checkout's python/.
import argparse
import collections
import importlib.util
import json
import os
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ_DIR = os.path.join(REPO, "tests", "fuzz")
STATUSES = ("pass", "mismatch", "error", "crash", "hang")


def load_fuzzlib():
    sys.path.insert(0, FUZZ_DIR)  # fuzzlib's minimizer imports fuzz_harness next to it
    spec = importlib.util.spec_from_file_location("fuzzlib", os.path.join(FUZZ_DIR, "fuzzlib.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzzlib"] = module
    spec.loader.exec_module(module)
    return module


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="first seed; programs use seed .. seed+count-1")
    parser.add_argument("--workers", type=int, default=2, help="child processes at a time")
    parser.add_argument("--out", default="fuzz-out", help="folder for findings/ and summary.json")
    parser.add_argument("--backends", default="eager,inductor", help="cdynamo backends to check")
    parser.add_argument("--torch-compile", action="store_true", help="also run torch.compile (eager, inductor)")
    parser.add_argument("--torch-compile-limit", type=int, default=None,
                        help="only the first K programs under torch.compile's inductor (it compiles C++ slowly)")
    parser.add_argument("--batch-size", type=int, default=50, help="programs per child process")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per program before it is a hang")
    parser.add_argument("--minimize", action="store_true", help="also write a minimized repro of each finding")
    return parser.parse_args()


def run_backend(fuzzlib, programs, backend, args):
    """All programs under one backend, `workers` batches at a time; (outcomes, wall seconds)."""
    chunks = [programs[i:i + args.batch_size] for i in range(0, len(programs), args.batch_size)]
    start = time.monotonic()
    with ThreadPoolExecutor(args.workers) as pool:
        parts = pool.map(lambda chunk: fuzzlib.run_programs(chunk, backend, len(chunk), args.timeout), chunks)
        outcomes = [o for part in parts for o in part]
    return outcomes, time.monotonic() - start


def minimize_in_child(program, outcome, fuzzlib, timeout):
    """Minimizes in a fresh child (the check runs in-process there); (source, lines) or None.
    The child gets the program's parts, not its seed: the generator may have changed since."""
    code = ("import sys, json, warnings; warnings.filterwarnings('ignore'); sys.path.insert(0, %r);"
            "import fuzzlib, fuzz_harness; p = fuzzlib.Program(**json.loads(sys.stdin.read()));"
            "m = fuzzlib.minimize(p, %r, %r, %r); found = fuzz_harness.check_program(m.source(), %r);"
            "print('MINIMIZED' + json.dumps([m.source(), found[1]]))") % (
                FUZZ_DIR, outcome.backend, outcome.status, fuzzlib.finding_signature(outcome), outcome.backend)
    try:
        done = subprocess.run([sys.executable, "-c", code], input=json.dumps(program.__dict__), capture_output=True,
                              text=True, timeout=timeout, env=fuzzlib.child_env())
    except subprocess.TimeoutExpired:
        return None
    for line in done.stdout.splitlines():
        if line.startswith("MINIMIZED"):
            return tuple(json.loads(line[len("MINIMIZED"):]))
    return None


def minimize_finding(fuzzlib, program, outcome, args):
    """(source, lines) of a smaller program with the same finding, or None."""
    if outcome.status in ("mismatch", "error"):
        return minimize_in_child(program, outcome, fuzzlib, 20 * args.timeout)
    if outcome.status == "hang":
        return None  # every attempt would wait for the timeout
    # A crash would take a minimizing child down with it: one child per attempt instead.
    check = lambda source, backend: fuzzlib.check_in_child(source, backend, outcome.seed, min(args.timeout, 60.0))
    smaller = fuzzlib.minimize(program, outcome.backend, outcome.status, fuzzlib.finding_signature(outcome),
                               budget=60, check=check)
    return smaller.source(), check(smaller.source(), outcome.backend)[1]


def save_findings(fuzzlib, outcomes, programs, args):
    """Repro files for every non-pass outcome; with --minimize one minimized repro per signature."""
    findings_dir = os.path.join(args.out, "findings")
    groups = collections.defaultdict(list)
    for outcome in outcomes:
        if outcome.status == "pass":
            continue
        path = fuzzlib.save_finding(findings_dir, outcome, programs[outcome.seed].source())
        groups[(outcome.backend, fuzzlib.finding_signature(outcome))].append((outcome, path))
    for (backend, signature), members in groups.items():
        outcome = members[0][0]
        if args.minimize:
            smaller = minimize_finding(fuzzlib, programs[outcome.seed], outcome, args)
            if smaller:
                minimized = fuzzlib.Outcome(outcome.seed, backend, outcome.status, smaller[1])
                path = fuzzlib.save_finding(os.path.join(args.out, "minimized"), minimized, smaller[0])
                members.insert(0, (outcome, path))
    return groups


def count_line(label, outcomes, seconds):
    counts = collections.Counter(o.status for o in outcomes)
    text = " / ".join(f"{counts[s]} {s}" for s in STATUSES)
    rate = len(outcomes) / seconds if seconds else 0.0
    return f"{label:<22} {len(outcomes):>6} programs: {text}  ({rate:.2f} programs/s, {seconds:.0f} s)"


def main():
    warnings.filterwarnings("ignore")
    args = parse_args()
    fuzzlib = load_fuzzlib()
    seeds = range(args.seed, args.seed + args.count)
    start = time.monotonic()
    generated = {seed: fuzzlib.generate_program(seed) for seed in seeds}
    print(f"generated {len(seeds)} programs in {time.monotonic() - start:.1f} s", flush=True)
    programs = [(seed, generated[seed].source()) for seed in seeds]
    runs = [(f"cdynamo {b}", b, programs) for b in args.backends.split(",")]
    if args.torch_compile:
        limit = args.torch_compile_limit or len(programs)
        runs += [("torch.compile eager", "torch-eager", programs),
                 ("torch.compile inductor", "torch-inductor", programs[:limit])]
    report, all_outcomes = [], []
    for label, backend, selected in runs:
        outcomes, seconds = run_backend(fuzzlib, selected, backend, args)
        report.append(count_line(label, outcomes, seconds))
        all_outcomes += outcomes
        print(report[-1], flush=True)
    groups = save_findings(fuzzlib, all_outcomes, generated, args)
    print_summary(args, report, groups)


def print_summary(args, report, groups):
    print(f"\nfuzz run: seeds {args.seed}..{args.seed + args.count - 1}, {args.workers} workers")
    for line in report:
        print("  " + line)
    print("\ndistinct findings (backend, signature: count, example repro):")
    for (backend, signature), members in sorted(groups.items(), key=lambda item: -len(item[1])):
        print(f"  {backend:<15} {signature[:90]}: {len(members)}, {members[0][1]}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"report": report, "findings": {f"{b} | {s}": [p for _, p in m] for (b, s), m in groups.items()}},
                  f, indent=1)


if __name__ == "__main__":
    main()
