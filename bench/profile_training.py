"""Where a training step's time goes: eager, cdynamo's inductor and torch.compile's on one model,
the device (or CPU) time per op from torch.profiler, side by side. Usage:
python bench/profile_training.py [resnet18|gpt2] [--device cuda] [--rows 15]. Assumes torchvision
(resnet18) or transformers (gpt2) is installed."""
import argparse
import copy
import time

import torch

import cdynamo


def build(name, device):
    if name == "resnet18":
        import torchvision

        return torchvision.models.resnet18().to(device).train(), (torch.randn(64, 3, 224, 224, device=device),)
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(attn_implementation="sdpa")).to(device).train()
    return model, (torch.randint(0, 50257, (8, 512), device=device),)


def loss_of(out):
    out = out.logits if hasattr(out, "logits") else out
    return out.float().pow(2).mean()


def step(model, inputs):
    for p in model.parameters():
        p.grad = None
    loss_of(model(*inputs)).backward()


def profile(label, model, inputs, device, rows):
    for _ in range(3):
        step(model, inputs)
    torch.cuda.synchronize() if device == "cuda" else None
    start = time.perf_counter()
    for _ in range(10):
        step(model, inputs)
    torch.cuda.synchronize() if device == "cuda" else None
    print(f"\n## {label}: {(time.perf_counter() - start) * 100:.2f} ms per step")
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(5):
            step(model, inputs)
        torch.cuda.synchronize() if device == "cuda" else None
    key = "self_device_time_total" if device == "cuda" else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by=key, row_limit=rows, max_name_column_width=70))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model", nargs="?", default="resnet18", choices=["resnet18", "gpt2"])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rows", type=int, default=15)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    model, inputs = build(args.model, args.device)
    profile("eager", copy.deepcopy(model), inputs, args.device, args.rows)
    profile("cdynamo inductor", cdynamo.compile(copy.deepcopy(model), backend="inductor"), inputs, args.device, args.rows)
    print("cdynamo counters:", dict(cdynamo.utils.counters["inductor"]))
    profile("torch.compile inductor", torch.compile(copy.deepcopy(model)), inputs, args.device, args.rows)


if __name__ == "__main__":
    main()
