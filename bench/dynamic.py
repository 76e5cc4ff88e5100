"""Dynamic shapes, side by side in one run: a sweep of 16 input shapes through GPT-2, BERT and
ResNet-18, compiled by cdynamo and by torch.compile (same backend kind, same threads), each
system and model in a process of its own. Per row: compiles over the sweep, total compile time
(first call at each shape, minus an eager call at that shape), steady-state time per call of the
dynamic compile against a static compile of the same shape, and the per-call cost of the shape
guard (a tiny function, dynamic vs static). A throwaway process first compiles a tiny training
step with each system, so that Python's first import of the compilers' modules (their bytecode
caches, seconds on a fresh machine) counts for neither. --mode train times training steps (forward, the
mean of the first output, backward); --mode reduce-overhead gives both compilers that mode.

    PYTHONPATH=/path/to/transformers:python python bench/dynamic.py [--models gpt2,bert,resnet18]
        [--backend inductor|eager] [--device cpu|cuda] [--size small|full]
        [--mode inference|train|reduce-overhead] [--with-one] [--vary length|batch]

DYNAMIC_PROFILE_DIR=dir: a cProfile of each child's sweep of first calls; DYNAMIC_KERNEL_PROFILE=dir:
a torch.profiler table of 10 steady steps of the dynamic and of the static compile, per system.
"""
import contextlib
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

SWEEP = 16


def build(model_name, size, device, with_one=False, vary="length"):
    """(model, make_input(k) for shape k of the sweep). with_one: the third shape's varying size
    is 1 (a batch of one, a single token), which torch.compile's symbolic sizes exclude. vary:
    what changes for GPT-2 and BERT, the sequence length or the batch size (ResNet-18: the batch)."""
    torch.manual_seed(0)
    if model_name in ("gpt2", "bert"):
        import transformers

        small = size == "small"
        if model_name == "gpt2":
            cfg = transformers.GPT2Config(n_layer=2 if small else 12, n_embd=128 if small else 768,
                                          n_head=4 if small else 12, n_positions=1024)
            model = transformers.GPT2LMHeadModel(cfg)
        else:
            cfg = transformers.BertConfig(num_hidden_layers=2 if small else 12, hidden_size=128 if small else 768,
                                          num_attention_heads=4 if small else 12,
                                          intermediate_size=512 if small else 3072)
            model = transformers.BertModel(cfg)
        lengths = [16 + 24 * k + (k % 3) for k in range(SWEEP)]  # 16 .. 378, odd and even
        batches = [2] * SWEEP
        if vary == "batch":  # a server's batches of 2 .. 17 sequences of 64 tokens
            lengths, batches = [64] * SWEEP, list(range(2, 2 + SWEEP))
        if with_one:
            (batches if vary == "batch" else lengths)[2] = 1

        def make_input(k):
            return (torch.randint(0, 1000, (batches[k], lengths[k]), device=device),)

    elif model_name == "resnet18":
        import torchvision

        model = torchvision.models.resnet18()
        batches = list(range(2, 2 + SWEEP))
        if with_one:
            batches[2] = 1

        def make_input(k):
            return (torch.randn(batches[k], 3, 64 if size == "small" else 224, 64 if size == "small" else 224,
                                device=device),)
    else:
        raise SystemExit(f"unknown model {model_name}")
    return model.to(device).eval(), make_input


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn, args, device, repeat=1):
    sync(device)
    start = time.perf_counter()
    for _ in range(repeat):
        fn(*args)
    sync(device)
    return (time.perf_counter() - start) / repeat


def compiler(system, backend, dynamic, mode):
    options = {"mode": mode} if mode == "reduce-overhead" else {}
    if system == "cdynamo":
        import cdynamo

        return lambda m: cdynamo.compile(m, backend=backend, dynamic=dynamic, **options)
    return lambda m: torch.compile(m, backend=backend, dynamic=dynamic, **options)


def as_step(fn, mode):
    """What one timed call runs: the model, or a training step through it."""
    if mode != "train":
        return fn

    def step(*args):
        out = fn(*args)
        first = out if isinstance(out, torch.Tensor) else out[0]  # logits, last hidden state
        first.float().mean().backward()

    return step


def reset(system):
    if system == "cdynamo":
        import cdynamo

        cdynamo.reset()
    else:
        torch._dynamo.reset()


def compile_count(system):
    if system == "cdynamo":
        from cdynamo.utils import counters

        return counters["stats"]["frames_compiled"], sum(counters["graph_break"].values())
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())


def child(model_name, system, backend, size, device, mode, with_one=False, vary="length"):
    model, make_input = build(model_name, size, device, with_one, vary)
    if mode == "train":
        model.train()
    inputs = [make_input(k) for k in range(SWEEP)]
    eager = as_step(model, mode)
    with torch.no_grad() if mode != "train" else contextlib.nullcontext():
        eager_times = [timed(eager, x, device) for x in inputs]  # warms eager too
        eager_times = [timed(eager, x, device) for x in inputs]
        compiled = as_step(compiler(system, backend, None, mode)(model), mode)
        profiler = None
        if os.environ.get("DYNAMIC_PROFILE_DIR"):  # where the sweep's compile time goes (main thread)
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        first_calls = [timed(compiled, x, device) for x in inputs]
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(os.path.join(os.environ["DYNAMIC_PROFILE_DIR"], f"{model_name}-{system}-{mode}.prof"))
        compiles, breaks = compile_count(system)
        steady_k = SWEEP // 2
        # Each sample averages 5 steps: a step of a few ms is launch-bound, and single steps
        # vary by more than the difference measured.
        steady_dynamic = statistics.median(timed(compiled, inputs[steady_k], device, 5) for _ in range(20))
        kernel_profile(f"{model_name}-{system}-{mode}-dynamic", compiled, inputs[steady_k], device)
        reset(system)  # the static compile must not find the dynamic one's cache entries
        static = as_step(compiler(system, backend, False, mode)(model), mode)
        timed(static, inputs[steady_k], device)
        steady_static = statistics.median(timed(static, inputs[steady_k], device, 5) for _ in range(20))
        kernel_profile(f"{model_name}-{system}-{mode}-static", static, inputs[steady_k], device)
        eager_ms = statistics.median(timed(eager, inputs[steady_k], device) for _ in range(5)) * 1e3
    compile_total = sum(max(0.0, f - e) for f, e in zip(first_calls, eager_times))
    notes = {}
    if system == "cdynamo":  # graphs the inductor ran as captured, and per-size compiles past the cap
        from cdynamo.utils import counters

        notes = {k: v for k, v in {**counters["inductor"], **counters["dynamic"]}.items()
                 if "fallback" in k or "static" in k or "captured" in k or "per sizes" in k}
        notes.update({f"cudagraphs {k}": v for k, v in counters["cudagraphs"].items() if k in ("recorded", "replays")})
        from cdynamo.utils import timings

        notes["seconds"] = {phase: round(t, 2) for phase, t in sorted(timings.items()) if t >= 0.05}
    print(json.dumps({"compiles": compiles, "breaks": breaks, "compile_s": compile_total, "notes": notes,
                      "steady_dynamic_ms": steady_dynamic * 1e3, "steady_static_ms": steady_static * 1e3,
                      "eager_ms": eager_ms}))


def kernel_profile(name, step, args, device):
    """With DYNAMIC_KERNEL_PROFILE=dir: where 10 steady steps spend their time, per kernel and
    operator (torch.profiler), written to dir/name.txt: what differs between the dynamic and
    the static compile's steps."""
    folder = os.environ.get("DYNAMIC_KERNEL_PROFILE")
    if not folder:
        return
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        timed(step, args, device, 10)
    sort_by = "self_cuda_time_total" if device == "cuda" else "self_cpu_time_total"
    with open(os.path.join(folder, f"{name}.txt"), "w") as f:
        f.write(prof.key_averages().table(sort_by=sort_by, row_limit=40, max_name_column_width=90))


def warm_child(device):
    """One tiny training compile per system, in a throwaway process: on a fresh machine the first
    import of torch's and Triton's compiler modules writes their bytecode caches (seconds), which
    would otherwise count in the compile time of whichever system the sweep runs first."""
    for system in ("cdynamo", "torch.compile"):
        step = as_step(compiler(system, "inductor", None, "train")(torch.nn.Linear(8, 8).to(device)), "train")
        step(torch.randn(4, 8, device=device))
        reset(system)
    print(json.dumps({"warm": True}))


def guard_cost_child(system):
    """Per-call seconds of a tiny compiled function, dynamic=True then dynamic=False."""
    source = "def f(x, y):\n    return x + y\n"
    results = {}
    for dynamic in (True, False):
        namespace = {}
        exec(compile(source, __file__, "exec"), namespace)
        fn = compiler(system, "eager", dynamic, "default")(namespace["f"])
        x, y = torch.randn(8, 4), torch.randn(8, 4)
        for _ in range(200):
            fn(x, y)
        start = time.perf_counter_ns()
        for _ in range(20000):
            fn(x, y)
        results[dynamic] = (time.perf_counter_ns() - start) / 20000 / 1e3
    print(json.dumps({"dynamic_us": results[True], "static_us": results[False]}))


def run_child(args):
    # Cold caches for every system and model: compile times compare cold against cold, also on a
    # machine where an earlier run filled the default cache folders.
    import tempfile

    with tempfile.TemporaryDirectory() as caches:
        env = dict(os.environ)
        for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CDYNAMO_CACHE_DIR"):
            env[name] = os.path.join(caches, name.lower())
        out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"error": (out.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="gpt2,bert,resnet18")
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--size", default="small")
    parser.add_argument("--mode", default="inference", choices=["inference", "train", "reduce-overhead"])
    parser.add_argument("--with-one", action="store_true",
                        help="the sweep's third shape has size 1 in the varying dimension (batch or length)")
    parser.add_argument("--vary", default="length", choices=["length", "batch"],
                        help="GPT-2 and BERT: sweep the sequence length (2 sequences) or the batch (64 tokens)")
    parser.add_argument("--child", nargs=2)
    parser.add_argument("--guard-cost")
    parser.add_argument("--warm", action="store_true")
    options = parser.parse_args()
    if options.child:
        return child(options.child[0], options.child[1], options.backend, options.size, options.device, options.mode,
                     options.with_one, options.vary)
    if options.guard_cost:
        return guard_cost_child(options.guard_cost)
    if options.warm:
        return warm_child(options.device)
    warmed = run_child(["--warm", "--device", options.device])
    if "error" in warmed:
        print(f"(warming the imports failed: {warmed['error'][:200]})")
    print(f"torch {torch.__version__}, {options.device}, threads {torch.get_num_threads()}, backend {options.backend}, "
          f"size {options.size}, mode {options.mode}, {SWEEP} shapes per model"
          + f", varying the {options.vary if options.vary == 'batch' else 'sequence length'} for GPT-2 and BERT"
          + (", the third of size 1" if options.with_one else "") + "\n")
    print("| model | system | compiles | graph breaks | compile time over the sweep (s) | steady dynamic / static | "
          "eager ms | dynamic ms |")
    print("|---|---|---|---|---|---|---|---|")
    for model_name in options.models.split(","):
        rows = {}
        for system in ("cdynamo", "torch.compile"):
            common = ["--backend", options.backend, "--device", options.device, "--size", options.size,
                      "--mode", options.mode, "--vary", options.vary] + (["--with-one"] if options.with_one else [])
            rows[system] = r = run_child(["--child", model_name, system, *common])
            if "error" in r:
                print(f"| {model_name} | {system} | error: {r['error'][:120]} |")
                continue
            print(f"| {model_name} | {system} | {r['compiles']} | {r['breaks']} | {r['compile_s']:.2f} | "
                  f"{r['steady_dynamic_ms'] / r['steady_static_ms']:.3f} | {r['eager_ms']:.2f} | "
                  f"{r['steady_dynamic_ms']:.2f} |" + (f" {r['notes']}" if r.get("notes") else ""))
        if all("error" not in r for r in rows.values()):
            ratio = rows["cdynamo"]["compile_s"] / max(rows["torch.compile"]["compile_s"], 1e-9)
            print(f"| {model_name} | cdynamo / torch.compile compile time | | | **{ratio:.2f}** | | | |")
    print("\n| per-call cost, x + y (backend eager) | dynamic µs | static µs |")
    print("|---|---|---|")
    for system in ("cdynamo", "torch.compile"):
        r = run_child(["--guard-cost", system])
        if "error" in r:
            print(f"| {system} | error: {r['error'][:120]} | |")
        else:
            print(f"| {system} | {r['dynamic_us']:.2f} | {r['static_us']:.2f} |")


if __name__ == "__main__":
    main()
