import operator

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Multi-scale features kept in a dict with string keys 'p3'...'p10' sorted numerically with
    key=lambda k: int(k[1:]), dict(zip(names, outputs)), max over a dict of Python numbers with
    operator.itemgetter, '_'.join / str.split on layer names, enumerate(..., start=1)."""

    def __init__(self, c=4):
        super().__init__()
        self.names = ["p10", "p3", "p4"]
        self.convs = nn.ModuleDict({n: nn.Conv2d(c, c, 3, padding=1) for n in self.names})
        self.fuse = nn.Conv2d(c, 2, 1)
        self.level_weight = {"p3": 1.0, "p4": 0.5, "p10": 0.25}

    def forward(self, feats):
        outs = [self.convs[n](f) for n, f in zip(self.names, feats)]
        fmap = dict(zip(self.names, outs))
        ordered = sorted(fmap.keys(), key=lambda k: int(k[1:]))
        base = fmap[ordered[0]]
        total = base
        for i, name in enumerate(ordered[1:], start=1):
            total = total + F.interpolate(fmap[name], size=base.shape[-2:], mode="nearest") * self.level_weight[name] / i
        best_level, best_w = max(self.level_weight.items(), key=operator.itemgetter(1))
        tag = "_".join(n.split("p")[-1] for n in ordered)
        return self.fuse(total) * best_w, best_level, tag


def make_inputs():
    return ([torch.randn(1, 4, 1, 1), torch.randn(1, 4, 8, 8), torch.randn(1, 4, 4, 4)],)
