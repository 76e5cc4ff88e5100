"""Where a symbolic program's step time goes against a static one of the same shape: the small
GPT-2 / BERT / ResNet-18 of bench/dynamic.py, compiled by cdynamo's inductor once with automatic
dynamic (after two shapes) and once static, each step profiled three ways: its median time, the
Python functions it runs (cProfile, by own time), and the device kernels and CPU-side torch ops
it issues (torch.profiler, counts per step). Usage:
    python bench/profile_dynamic.py [--models gpt2,bert] [--mode train|inference] [--device cuda] [--rows 12]
Assumes transformers (gpt2, bert) or torchvision (resnet18) importable, like bench/dynamic.py."""
import argparse
import collections
import contextlib
import cProfile
import io
import os
import pstats
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

import torch  # noqa: E402

import cdynamo  # noqa: E402
import dynamic  # noqa: E402  bench/dynamic.py: the models and the sweep's shapes


def step_profile(label, step, args, device, rows):
    for _ in range(3):
        step(*args)
    median_ms = statistics.median(dynamic.timed(step, args, device) for _ in range(30)) * 1e3
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(20):
        step(*args)
    dynamic.sync(device)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(rows)
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(5):
            step(*args)
        dynamic.sync(device)
    device_kernels, cpu_ops, device_us = collections.Counter(), collections.Counter(), collections.Counter()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            device_kernels[event.name[:60]] += 1
            device_us[event.name[:60]] += event.device_time_total
        elif event.name.startswith(("aten::", "cuLaunch", "cudaLaunch", "cuda")):
            cpu_ops[event.name] += 1
    print(f"\n## {label}: {median_ms:.3f} ms per step; {sum(device_kernels.values()) / 5:.0f} device kernels "
          f"and {sum(cpu_ops.values()) / 5:.0f} CPU-side torch ops / launches per step")
    if device_us:
        print(f"device busy {sum(device_us.values()) / 5 / 1e3:.3f} ms per step; slowest kernels (µs per step):",
              {k: round(v / 5, 1) for k, v in device_us.most_common(rows)})
    print("CPU ops per step:", {k: v / 5 for k, v in cpu_ops.most_common(rows)})
    print("cProfile, 20 steps, by own time:")
    print("\n".join(line for line in text.getvalue().splitlines()[:rows + 12] if line.strip()))
    return median_ms, device_kernels, device_us


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", default="gpt2,bert")
    parser.add_argument("--mode", default="train", choices=["train", "inference"])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rows", type=int, default=12)
    options = parser.parse_args()
    for model_name in options.models.split(","):
        model, make_input = dynamic.build(model_name, "small", options.device)
        model.train(options.mode == "train")
        steady = make_input(dynamic.SWEEP // 2)
        grad = contextlib.nullcontext() if options.mode == "train" else torch.no_grad()
        results = {}
        with grad:
            for system_dynamic in (None, False):
                cdynamo.reset()
                cdynamo.utils.counters.clear()
                compiled = dynamic.as_step(cdynamo.compile(model, backend="inductor", dynamic=system_dynamic),
                                           options.mode)
                if system_dynamic is None:  # two shapes first: the second compile is the symbolic one
                    compiled(*make_input(0))
                    compiled(*make_input(1))
                label = f"{model_name} {options.mode}, {'symbolic' if system_dynamic is None else 'static'}"
                results[label] = step_profile(label, compiled, steady, options.device, options.rows)
                print("counters:", {k: dict(v) for k, v in cdynamo.utils.counters.items()
                                    if k in ("stats", "dynamic", "inductor")})
        (symbolic_ms, symbolic_kernels, symbolic_us), (static_ms, static_kernels, static_us) = results.values()
        print(f"\n# {model_name}: symbolic / static {symbolic_ms / static_ms:.3f}")
        extra = symbolic_kernels - static_kernels
        missing = static_kernels - symbolic_kernels
        print("kernels only in the symbolic step (per 5 steps):", dict(extra.most_common(15)))
        print("kernels only in the static step (per 5 steps):", dict(missing.most_common(15)))
        slower = {k: round((symbolic_us[k] - static_us[k]) / 5, 1) for k in symbolic_us
                  if symbolic_us[k] - static_us[k] > 0}
        print("device µs per step, symbolic minus static (largest):",
              dict(sorted(slower.items(), key=lambda kv: -kv[1])[:15]))


if __name__ == "__main__":
    main()
