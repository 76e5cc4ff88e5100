"""Convolutional networks on the CPU, side by side in one run: eager, cdynamo's inductor (with
and without channels-last convolutions) and torch.compile's inductor; median times, speedups
and cold compile times. Usage: python bench/convnets.py [--threads 2] [--batch 8] [--models resnet18,...]

torch.compile appears here only as the comparison; cdynamo never calls it."""
import argparse
import copy
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import cdynamo  # noqa: E402


def _models(batch):
    import torchvision

    return {
        "resnet18": (lambda: torchvision.models.resnet18(), (batch, 3, 224, 224)),
        "resnet50": (lambda: torchvision.models.resnet50(), (batch, 3, 224, 224)),
        "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(), (batch, 3, 224, 224)),
    }


def _time(fn, x, repeat):
    with torch.no_grad():
        for _ in range(2):
            fn(x)
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn(x)
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _compile_cdynamo(model, x, channels_last):
    # Each variant compiles its own copy of the model: cache entries are guarded on the module's
    # identity, so the variants' compiled graphs live side by side (a reset would drop them).
    model = copy.deepcopy(model)
    with cdynamo.config.patch(channels_last_convolutions=channels_last):
        compiled = cdynamo.optimize("inductor")(model)
        start = time.perf_counter()
        with torch.no_grad():
            out = compiled(x)
        return compiled, out, time.perf_counter() - start


def _compile_torch(model, x):
    compiled = torch.compile(copy.deepcopy(model))
    start = time.perf_counter()
    with torch.no_grad():
        out = compiled(x)
    return compiled, out, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--models", default="resnet18")
    parser.add_argument("--no-torch", action="store_true", help="skip torch.compile")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    table = _models(args.batch)
    print(f"torch {torch.__version__}, {args.threads} threads, batch {args.batch}")
    print("| model | eager ms | cdynamo | cdynamo (no channels-last) | torch.compile | cold s: cdynamo / torch |")
    print("|---|---|---|---|---|---|")
    for name in args.models.split(","):
        make, shape = table[name]
        torch.manual_seed(0)
        model = make().eval()
        x = torch.randn(shape)
        with torch.no_grad():
            expected = model(x)
        row = {}
        compiled, out, cold = _compile_cdynamo(model, x, True)
        torch.testing.assert_close(out, expected, rtol=1e-3, atol=1e-3)
        row["cdynamo"], row["cold"] = compiled, cold
        plain, out, _ = _compile_cdynamo(model, x, False)
        torch.testing.assert_close(out, expected, rtol=1e-3, atol=1e-3)
        row["plain"] = plain
        if not args.no_torch:
            theirs, out, torch_cold = _compile_torch(model, x)
            torch.testing.assert_close(out, expected, rtol=1e-3, atol=1e-3)
        # Interleaved rounds: a slow spell of the machine hits every variant alike.
        times = {"eager": [], "cdynamo": [], "plain": [], "torch": []}
        for _ in range(3):
            times["eager"].append(_time(model, x, args.repeat))
            times["cdynamo"].append(_time(compiled, x, args.repeat))
            times["plain"].append(_time(plain, x, args.repeat))
            if not args.no_torch:
                times["torch"].append(_time(theirs, x, args.repeat))
        eager = min(times["eager"])
        speed = {k: eager / min(v) for k, v in times.items() if v}
        torch_cell = f"{speed['torch']:.2f}x" if "torch" in speed else "-"
        torch_cold_cell = f"{torch_cold:.1f}" if not args.no_torch else "-"
        print(f"| {name} | {eager * 1e3:.1f} | {speed['cdynamo']:.2f}x | {speed['plain']:.2f}x | {torch_cell} | "
              f"{cold:.2f} / {torch_cold_cell} |", flush=True)


if __name__ == "__main__":
    main()
