"""Warm start: time to the first result of a compiled model in a new process whose caches an
earlier process filled, split by phase; cdynamo and torch.compile side by side.

Each system runs in child processes with its own cache folder: one cold (empty folder), then
--repeats rounds of one warm process per system (interleaved, so a loaded machine slows all
alike). See bench/README.md for the method and figures."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# cdynamo phases from cdynamo.utils.timings (seconds summed over all graphs of the call).
PHASES = [
    ("frontend", "bytecode tracing, fake tensors, guards (compile_frame - backend)"),
    ("graph cache", "key hashing and loading entries"),
    ("aten trace", "make_fx + decompositions"),
    ("lower+codegen", "lowering, scheduling, C++ generation"),
    ("kernels", "kernel cache lookup, dlopen, g++"),
    ("run", "first call minus compile: compiled graphs, eager code between them, hooks"),
]


# ---------------------------------------------------------------------------------------------
# Child side.


def tiny_gpt(torch):
    """A two-layer GPT of the backend tests (no transformers needed): --model tiny."""
    sys.path.insert(0, os.path.join(REPO, "tests", "python", "backend"))
    from inductor_models import TinyGPT

    return TinyGPT(vocab=512, width=128, heads=4, layers=2, context=128).eval(), torch.randint(0, 512, (1, 128))


def build_model(name, torch):
    torch.manual_seed(0)
    if name == "tiny":
        return tiny_gpt(torch)
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config()).eval(), torch.randint(0, 50257, (1, 128))


def first_tensor(out):
    if hasattr(out, "logits"):
        return out.logits
    return out[0] if isinstance(out, (tuple, list)) else out


def child(args):
    t0 = time.perf_counter()
    import torch

    if args.system == "cdynamo":
        import cdynamo
    t_import = time.perf_counter() - t0
    torch.set_num_threads(args.threads)
    model, ids = build_model(args.model, torch)
    with torch.no_grad():
        expected = first_tensor(model(ids))
        compiled = cdynamo.optimize("inductor")(model) if args.system == "cdynamo" else torch.compile(model)
        profile = None
        if args.profile:
            import cProfile

            profile = cProfile.Profile()
            profile.enable()
        start, start_cpu = time.perf_counter(), time.thread_time()
        out = compiled(ids)
        first, first_cpu = time.perf_counter() - start, time.thread_time() - start_cpu
        if profile:
            profile.disable()
        start = time.perf_counter()
        compiled(ids)
        second = time.perf_counter() - start
    result = {"import_s": t_import, "first_call_s": first, "first_call_cpu_s": first_cpu, "second_call_s": second}
    result["max_abs_error"] = float((first_tensor(out) - expected).abs().max())
    if args.system == "cdynamo":
        from cdynamo import utils

        t = dict(getattr(utils, "timings", {}))  # absent in versions before it (--cdynamo-path)
        frame, backend = t.get("compile_frame", 0.0), t.get("backend", 0.0)
        result["phases"] = None if not t else {
            "frontend": frame - backend,
            "graph cache": t.get("graph_cache_key", 0.0) + t.get("graph_cache_load", 0.0),
            "aten trace": t.get("aten_graph", 0.0),
            "lower+codegen": t.get("lower", 0.0) + t.get("schedule", 0.0) + t.get("codegen", 0.0),
            "kernels": t.get("kernels", 0.0) + t.get("executor", 0.0),
            "run": first - frame,
        }
        if "compile_frame_cpu" in t:  # the compile phases in this thread's CPU time: least distorted by load
            result["frontend_cpu_s"] = t["compile_frame_cpu"] - t.get("backend_cpu", 0.0)
        result["counters"] = {k: dict(v) for k, v in utils.counters.items() if k in ("inductor", "stats")}
    else:
        try:
            from torch._dynamo.utils import counters

            result["counters"] = {"inductor": dict(counters["inductor"]), "stats": dict(counters["stats"])}
        except Exception:  # noqa: BLE001 - counters are informative only
            pass
    if profile:
        import io
        import pstats

        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
        result["profile"] = text.getvalue()
    print("RESULT " + json.dumps(result))


# ---------------------------------------------------------------------------------------------
# Parent side.


def run_child(system, cache, args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(args.cdynamo_path or REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env["CDYNAMO_CACHE_DIR"] = os.path.join(cache, "cdynamo")
    # torch.compile's caches (FX graph cache, AOTAutograd cache, kernels) in the same temp folder.
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "torchinductor")
    env["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    env["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "1"
    env["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "1"
    argv = [sys.executable, os.path.abspath(__file__), "--child", "--system", system, "--model", args.model,
            "--threads", str(args.threads)] + (["--profile"] if args.profile else [])
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=args.timeout)
    wall = time.perf_counter() - start
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"{system} child failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
    result = json.loads(lines[-1][len("RESULT "):])
    result["process_s"] = wall
    return result


def median_of(results, path):
    values = []
    for r in results:
        v = r
        for part in path:
            v = v.get(part, 0.0) if isinstance(v, dict) else 0.0
        values.append(v)
    return statistics.median(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="gpt2", choices=["gpt2", "tiny"])
    parser.add_argument("--systems", default="cdynamo,torch",
                        help="comma-separated: cdynamo, torch, and baseline (needs --baseline)")
    parser.add_argument("--baseline", help="another checkout of cdynamo, built in place, measured as 'baseline'")
    parser.add_argument("--repeats", type=int, default=3, help="warm processes per system (median)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--profile", action="store_true", help="cProfile the first call of the last warm child")
    parser.add_argument("--json", help="write all results to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--system", help=argparse.SUPPRESS)
    parser.add_argument("--cdynamo-path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    systems = args.systems.split(",")
    if "baseline" in systems and not args.baseline:
        sys.exit("--systems baseline needs --baseline PATH")
    report = {"model": args.model, "threads": args.threads, "python": sys.version.split()[0]}
    profile_wanted = args.profile
    with tempfile.TemporaryDirectory(prefix="warm-start-") as root:
        caches = {system: os.path.join(root, system) for system in systems}

        def run(system, profile=False):
            args.profile = profile
            args.cdynamo_path = args.baseline if system == "baseline" else None
            return run_child("torch" if system == "torch" else "cdynamo", caches[system], args)

        cold = {system: run(system) for system in systems}
        warm = {system: [] for system in systems}
        # Rounds of one warm process per system, so that a loaded machine slows all alike.
        for k in range(args.repeats):
            for system in systems:
                warm[system].append(run(system, profile_wanted and k == args.repeats - 1))
    for system in systems:
        report[system] = {"cold": cold[system], "warm": warm[system]}
        c, w = cold[system], warm[system]
        firsts = [r["first_call_s"] for r in w]
        print(f"\n== {system}: {args.model}, first call (s); warm = median (min) of {args.repeats} processes;"
              " fastest = the warm process with the shortest first call")
        print(f"  cold first call {c['first_call_s']:8.3f}   warm first call {statistics.median(firsts):8.3f} ({min(firsts):.3f})"
              f"   steady call {median_of(w, ['second_call_s']):.4f}   import {median_of(w, ['import_s']):.2f}"
              f"   max |err| {max(r['max_abs_error'] for r in w):.2e}")
        if c.get("phases"):
            best = min(w, key=lambda r: r["first_call_s"])
            print(f"  {'phase':14s} {'cold':>8s} {'warm':>8s} {'fastest':>8s}")
            for phase, meaning in PHASES:
                print(f"  {phase:14s} {c['phases'][phase]:8.3f} {median_of(w, ['phases', phase]):8.3f}"
                      f" {best['phases'][phase]:8.3f}   {meaning}")
            if "frontend_cpu_s" in best:
                print(f"  frontend CPU time (main thread): median {median_of(w, ['frontend_cpu_s']):.3f}")
        print(f"  warm counters: {w[-1].get('counters')}")
        for r in w:
            if "profile" in r:
                print(r["profile"])
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
