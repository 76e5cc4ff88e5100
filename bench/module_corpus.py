"""The module corpus: 75 nn.Modules written the way GitHub research code is (recurrent layers,
custom autograd Functions, numpy in forward, buffers updated in forward, checkpointing, ...),
each run eagerly and under cdynamo in a child process and compared (bench/module_corpus/harness.py).

    python3 bench/module_corpus.py [--backends eager,inductor] [--modes eval,train,nograd]
                                   [--models a,b] [--workers 2] [--out results.jsonl]

Prints one line per case and a summary: failures (wrong result, exception reaching the user,
crash, hang) and the most frequent graph-break reasons."""
import argparse
import collections
import glob
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "module_corpus")
REPO_PYTHON = os.path.join(os.path.dirname(HERE), "python")


def modes_of(source, wanted):
    """A model file may restrict its modes (MODES = ("eval",)): training needs parameters."""
    for only in ("eval", "train"):
        if f'MODES = ("{only}",)' in source:
            return [m for m in wanted if m == only or (only == "eval" and m == "nograd")]
    return list(wanted)


def run_case(path, backend, mode, timeout):
    env = dict(os.environ, PYTHONPATH=REPO_PYTHON + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    name = os.path.basename(path)[:-3]
    start = time.time()
    try:
        done = subprocess.run([sys.executable, os.path.join(CORPUS, "harness.py"), path, backend, mode],
                              env=env, capture_output=True, text=True, timeout=timeout)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT:")]
        if lines:
            result = json.loads(lines[-1][len("RESULT:"):])
        else:
            crashed = done.returncode < 0
            result = {"model": name, "backend": backend, "mode": mode, "status": "crash" if crashed else "harness_error",
                      "error": (signal.Signals(-done.returncode).name if crashed else done.stderr[-600:])}
    except subprocess.TimeoutExpired:
        result = {"model": name, "backend": backend, "mode": mode, "status": "hang"}
    result["secs"] = round(time.time() - start, 1)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="eager,inductor")
    parser.add_argument("--modes", default="eval,train,nograd")
    parser.add_argument("--models", help="comma-separated model file names (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout-s", type=float, default=120)
    parser.add_argument("--out", help="append each case's JSON result to this file")
    args = parser.parse_args(argv)
    files = sorted(glob.glob(os.path.join(CORPUS, "models", "*.py")))
    if args.models:
        wanted = set(args.models.split(","))
        files = [f for f in files if os.path.basename(f)[:-3] in wanted]
    cases = [(f, backend, mode) for f in files for backend in args.backends.split(",")
             for mode in modes_of(open(f).read(), args.modes.split(","))]
    results = []
    with ThreadPoolExecutor(args.workers) as pool:
        for result in pool.map(lambda case: run_case(*case, args.timeout_s), cases):
            results.append(result)
            print(f"{result['model']:28s} {result['backend']:9s} {result['mode']:7s} {result['status']:13s} "
                  f"{result['secs']:5.1f}s graphs={result.get('graphs')}", flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(result, default=str) + "\n")
    failures = [r for r in results if r["status"] != "pass"]
    print(f"\n{len(results) - len(failures)} of {len(results)} cases equal to eager")
    for r in failures:
        detail = r.get("error") or "; ".join(r.get("errors", [])[:2])
        print(f"  {r['status']:13s} {r['model']} ({r['backend']}, {r['mode']}): {str(detail)[:200]}")
    reasons = collections.Counter()
    for r in results:
        if r["backend"] == "eager":
            for reason in r.get("graph_breaks", {}):
                reasons[reason.rsplit(" (", 1)[0]] += 1
    print("\nmost frequent graph-break reasons (eager backend, cases):")
    for reason, count in reasons.most_common(12):
        print(f"  {count:3d}  {reason[:150]}")
    return 1 if any(r["status"] in ("crash", "hang") for r in failures) else 0


if __name__ == "__main__":
    sys.exit(main())
