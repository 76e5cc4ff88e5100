import argparse
from types import SimpleNamespace
import torch
import torch.nn as nn
import torch.nn.functional as F


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--n_layers", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--act", type=str, default="gelu")
    parser.add_argument("--use_layernorm", action="store_true")
    parser.add_argument("--temperature", type=float, default=0.5)
    return parser.parse_args(["--use_layernorm"])


class Block(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.fc = nn.Linear(args.hidden, args.hidden)
        self.norm = nn.LayerNorm(args.hidden) if args.use_layernorm else nn.Identity()

    def forward(self, x):
        act = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}[self.args.act]
        return x + F.dropout(act(self.fc(self.norm(x))), self.args.dropout, self.training)


class Model(nn.Module):
    """Models configured by argparse.Namespace (training script args) plus a SimpleNamespace head config."""

    def __init__(self):
        super().__init__()
        args = get_args()
        self.args = args
        self.head_cfg = SimpleNamespace(num_classes=4, label_smoothing=0.1, pool="mean", extra=SimpleNamespace(scale=2.0))
        self.inp = nn.Linear(6, args.hidden)
        self.blocks = nn.ModuleList([Block(args) for _ in range(args.n_layers)])
        self.head = nn.Linear(args.hidden, self.head_cfg.num_classes)

    def forward(self, x, targets=None):
        h = self.inp(x)
        for blk in self.blocks:
            h = blk(h)
        cfg = vars(self.args)
        if self.head_cfg.pool == "mean":
            h = h.mean(1)
        elif self.head_cfg.pool == "max":
            h = h.amax(1)
        logits = self.head(h) * getattr(self.head_cfg.extra, "scale", 1.0) / cfg["temperature"]
        out = SimpleNamespace(logits=logits, probs=logits.softmax(-1))
        if targets is not None and hasattr(self.head_cfg, "label_smoothing"):
            out.loss = F.cross_entropy(logits, targets, label_smoothing=self.head_cfg.label_smoothing)
        return {k: v for k, v in vars(out).items()}


def make_inputs():
    return torch.randn(3, 5, 6), torch.tensor([0, 3, 1])


def make_inputs_seq():
    return [(torch.randn(3, 5, 6), torch.tensor([0, 3, 1])), (torch.randn(3, 5, 6),), (torch.randn(2, 4, 6), torch.tensor([2, 2]))]
