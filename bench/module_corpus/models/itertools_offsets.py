import functools
import itertools
import math
import operator
import torch
import torch.nn as nn
import torch.nn.functional as F


class NeighborhoodAggregation(nn.Module):
    """Local 3x3(x dilation) neighbourhood aggregation with offsets from itertools.product (sparse-conv / local
    attention repos), split sizes from itertools.accumulate, numel via functools.reduce(operator.mul)."""

    def __init__(self, dim, kernel=3, dilations=(1, 2)):
        super().__init__()
        self.kernel = kernel
        self.dilations = dilations
        self.offsets = [list(itertools.product(range(-(kernel // 2), kernel // 2 + 1), repeat=2)) for _ in dilations]
        n_off = sum(len(o) for o in self.offsets)
        self.weight = nn.Parameter(torch.randn(n_off, dim) * 0.1)
        self.mix = nn.Linear(dim * len(dilations), dim)

    def forward(self, x):  # x: B, C, H, W
        B, C, H, W = x.shape
        pad = max(self.dilations) * (self.kernel // 2)
        xp = F.pad(x, (pad, pad, pad, pad))
        sizes = [len(o) for o in self.offsets]
        bounds = list(itertools.accumulate(sizes, operator.add))
        starts = [0] + bounds[:-1]
        outs = []
        for dil, offs, st in zip(self.dilations, self.offsets, starts):
            acc = torch.zeros_like(x)
            for j, (dy, dx) in enumerate(offs):
                w = self.weight[st + j].view(1, C, 1, 1)
                acc = acc + w * xp[:, :, pad + dy * dil: pad + dy * dil + H, pad + dx * dil: pad + dx * dil + W]
            outs.append(acc)
        y = torch.cat(outs, 1).permute(0, 2, 3, 1)
        numel = functools.reduce(operator.mul, y.shape[:-1], 1)
        assert numel == math.prod(y.shape[:3])
        return self.mix(y.reshape(numel, -1)).view(B, H, W, C).permute(0, 3, 1, 2)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Conv2d(3, 8, 1)
        self.agg = NeighborhoodAggregation(8)
        self.heads = nn.ModuleDict({"seg": nn.Conv2d(8, 4, 1), "depth": nn.Conv2d(8, 1, 1), "normal": nn.Conv2d(8, 3, 1)})

    def forward(self, x):
        h = F.relu(self.agg(self.inp(x)))
        outs = {k: head(h) for k, head in sorted(self.heads.items(), key=operator.itemgetter(0))}
        flat = list(itertools.chain.from_iterable([v.mean(), v.amax()] for v in outs.values()))
        pairs = {f"{a}_{b}": (outs[a].mean(1) - outs[b].mean(1)).abs() for a, b in itertools.combinations(outs, 2)}
        return outs, torch.stack(flat), pairs


def make_inputs():
    return (torch.randn(2, 3, 7, 9),)
