"""Where a step's time goes: eager, cdynamo's inductor and torch.compile's on one case of the GPU
table (bench/gpu.py's builders; a training step for resnet18, gpt2 and the *_train cases, or with
--train; a forward under no_grad otherwise), the device (or CPU) time per op from torch.profiler,
side by side. Usage: python bench/profile_training.py [CASE] [--train] [--rows 15] [--device cuda]
[--dynamic] [--shapes] [--compilers eager,cdynamo,torch]. --dynamic compares cdynamo's static compile with its symbolic one
(config.symbolic_training; the last input dimension made symbolic by a first call one shorter).
Assumes torchvision (resnet18) or transformers (gpt2) is installed for those cases."""
import argparse
import copy
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

import torch  # noqa: E402

import cdynamo  # noqa: E402
from cdynamo.bench import gpu_cases, measure  # noqa: E402


def profile(label, model, inputs, device, rows, train=True, shapes=False):
    step = lambda: measure.run_step(model, inputs, train)  # noqa: E731
    timing = measure.batched_timing(step, device)
    print(f"\n## {label}: {timing['median'] * 1e3:.2f} ms per step")
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(5):
            step()
        measure.synchronize(device)
    key = "self_device_time_total" if device == "cuda" else "self_cpu_time_total"
    print(prof.key_averages(group_by_input_shape=shapes).table(sort_by=key, row_limit=rows, max_name_column_width=70))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("case", nargs="?", default="resnet18", help="a case of bench/gpu.py (default: %(default)s)")
    parser.add_argument("--train", action="store_true", help="a training step for any case")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rows", type=int, default=15)
    parser.add_argument("--dynamic", action="store_true")
    parser.add_argument("--shapes", action="store_true", help="one row per op and input shapes")
    parser.add_argument("--compilers", default="eager,cdynamo,torch", help="which of eager,cdynamo,torch to profile")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    case = gpu_cases.get_case(args.case)
    train = args.train or case.train or args.case in ("resnet18", "gpt2")
    model, inputs = case.build(False)
    model, inputs = model.to(args.device).train(train), measure.cast_floats(inputs, device=args.device)
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
    compilers = args.compilers.split(",")
    with cdynamo.config.patch(compiled_training=True):
        if "eager" in compilers:
            profile("eager", copy.deepcopy(model), inputs, args.device, args.rows, train, args.shapes)
        if "cdynamo" in compilers:
            profile("cdynamo inductor", cdynamo.compile(copy.deepcopy(model), backend="inductor"), inputs, args.device,
                    args.rows, train, args.shapes)
            print("cdynamo counters:", dict(cdynamo.utils.counters["inductor"]))
    if "torch" in compilers:
        profile("torch.compile inductor", torch.compile(copy.deepcopy(model)), inputs, args.device, args.rows, train,
                args.shapes)


if __name__ == "__main__":
    main()
