"""Where a training step's time goes: eager, cdynamo's inductor and torch.compile's on one case of
the GPU table (bench/gpu.py's builders and training step), the device (or CPU) time per op from
torch.profiler, side by side. Usage: python bench/profile_training.py [resnet18|gpt2] [--rows 15]
[--device cuda] [--dynamic]. --dynamic compares cdynamo's static compile with its symbolic one
(config.symbolic_training; the last input dimension made symbolic by a first call one shorter).
Assumes torchvision (resnet18) or transformers (gpt2) is installed."""
import argparse
import copy
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

import torch  # noqa: E402

import cdynamo  # noqa: E402
from cdynamo.bench import gpu_cases, measure  # noqa: E402


def profile(label, model, inputs, device, rows):
    step = lambda: measure.train_step(model, inputs)  # noqa: E731
    timing = measure.batched_timing(step, device)
    print(f"\n## {label}: {timing['median'] * 1e3:.2f} ms per step")
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(5):
            step()
        measure.synchronize(device)
    key = "self_device_time_total" if device == "cuda" else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by=key, row_limit=rows, max_name_column_width=70))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("case", nargs="?", default="resnet18", choices=["resnet18", "gpt2"])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rows", type=int, default=15)
    parser.add_argument("--dynamic", action="store_true")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    model, inputs = gpu_cases.get_case(args.case).build(False)
    model, inputs = model.to(args.device).train(), measure.cast_floats(inputs, device=args.device)
    if args.dynamic:
        shorter = [t.narrow(-1, 0, t.shape[-1] - 1) if isinstance(t, torch.Tensor) else t for t in inputs]
        for symbolic in (False, True):
            with cdynamo.config.patch(compiled_training=True, symbolic_training=symbolic):
                cdynamo.utils.counters.clear()
                compiled = cdynamo.compile(copy.deepcopy(model), backend="inductor")
                if symbolic:
                    measure.train_step(compiled, shorter)
                profile(f"cdynamo inductor, {'symbolic' if symbolic else 'static'}", compiled, inputs, args.device,
                        args.rows)
                print("cdynamo counters:", {k: dict(v) for k, v in cdynamo.utils.counters.items()
                                            if k in ("dynamic", "inductor")})
        return
    with cdynamo.config.patch(compiled_training=True):
        profile("eager", copy.deepcopy(model), inputs, args.device, args.rows)
        profile("cdynamo inductor", cdynamo.compile(copy.deepcopy(model), backend="inductor"), inputs, args.device, args.rows)
        print("cdynamo counters:", dict(cdynamo.utils.counters["inductor"]))
    profile("torch.compile inductor", torch.compile(copy.deepcopy(model)), inputs, args.device, args.rows)


if __name__ == "__main__":
    main()
