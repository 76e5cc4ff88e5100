"""A training step (forward, loss, backward) side by side on the CPU: eager, cdynamo's inductor
(compiled forward and backward) and torch.compile's inductor, each in its own process, the
same threads. Models: a nanoGPT-style transformer and a small convolutional network with
batch norm. Usage: python bench/training.py [--threads 2] [--repeats 15]. Assumes the tests'
model file (tests/python/backend/inductor_models.py)."""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(name):
    import torch
    from torch import nn

    torch.manual_seed(0)
    if name == "tinygpt":
        sys.path.insert(0, os.path.join(ROOT, "tests", "python", "backend"))
        from inductor_models import TinyGPT

        return TinyGPT(vocab=2000, width=256, heads=4, layers=4, context=128), (torch.randint(0, 2000, (8, 128)),)

    def block(c_in, c_out, stride):
        return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())

    model = nn.Sequential(block(3, 32, 2), block(32, 32, 1), block(32, 64, 2), block(64, 64, 1),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).train()
    return model, (torch.randn(16, 3, 64, 64),)


def child(name, system, threads, repeats):
    import torch

    from cdynamo.bench import measure

    torch.set_num_threads(threads)
    model, inputs = build(name)
    if system == "cdynamo":
        import cdynamo

        model = cdynamo.compile(model, backend="inductor")
    elif system == "torch.compile":
        model = torch.compile(model)
    first, _ = measure.timed_call(lambda: measure.train_step(model, inputs), "cpu")
    timing = measure.batched_timing(lambda: measure.train_step(model, inputs), "cpu", repeats=repeats)
    print(json.dumps({"first_s": first, "median_ms": timing["median"] * 1e3}))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        return child(*args.child, args.threads, args.repeats)
    # cdynamo's column is compiled training (opt-in until it is at least eager's speed everywhere).
    env = dict(os.environ, CDYNAMO_COMPILED_TRAINING="1",
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    print("| model | eager ms | cdynamo ms (vs eager) | torch.compile ms (vs eager) | first step s: cdynamo / torch.compile |")
    print("|---|---|---|---|---|")
    for name in ("tinygpt", "convnet"):
        row = {}
        for system in ("eager", "cdynamo", "torch.compile"):
            out = subprocess.run([sys.executable, __file__, "--child", name, system, "--threads", str(args.threads),
                                  "--repeats", str(args.repeats)], env=env, capture_output=True, text=True, check=True)
            row[system] = json.loads(out.stdout.strip().splitlines()[-1])
        eager = row["eager"]["median_ms"]
        cd, tc = row["cdynamo"], row["torch.compile"]
        print(f"| {name} | {eager:.1f} | {cd['median_ms']:.1f} ({eager / cd['median_ms']:.2f}×) | "
              f"{tc['median_ms']:.1f} ({eager / tc['median_ms']:.2f}×) | {cd['first_s']:.2f} / {tc['first_s']:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
