import itertools
from collections import Counter, OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Multi-scale token pyramid bookkeeping: itertools.accumulate for offsets, itertools.groupby on sorted
    (level, name) keys, itertools.chain.from_iterable, itertools.pairwise splits, collections.Counter,
    enumerate(start=...), dict comprehensions, and tuple unpacking with starred targets."""

    def __init__(self, dim=8):
        super().__init__()
        self.levels = OrderedDict([("s8", 8), ("s16", 16), ("s32", 32)])
        self.proj = nn.ModuleDict({k: nn.Conv2d(3, dim, s, s) for k, s in self.levels.items()})
        self.level_embed = nn.Embedding(len(self.levels), dim)
        self.mix = nn.Linear(dim, dim)

    def forward(self, x):
        feats = {k: self.proj[k](x) for k in self.levels}
        sizes = [f.shape[-2] * f.shape[-1] for f in feats.values()]
        starts = [0, *itertools.accumulate(sizes)]
        tokens = torch.cat([f.flatten(2).transpose(1, 2) for f in feats.values()], 1)
        lvl_ids = torch.cat([torch.full((n,), i, dtype=torch.long) for i, n in enumerate(sizes)])
        tokens = tokens + self.level_embed(lvl_ids)[None]
        tokens = self.mix(tokens)
        split = [tokens[:, a:b] for a, b in itertools.pairwise(starts)]
        groups = {}
        keyed = sorted(((int(k[1:]) >= 16, k) for k in self.levels), key=lambda t: t[0])
        for coarse, items in itertools.groupby(keyed, key=lambda t: t[0]):
            names = [n for _, n in items]
            idx = [list(self.levels).index(n) for n in names]
            groups["coarse" if coarse else "fine"] = torch.cat([split[i] for i in idx], 1).mean(1)
        counts = Counter(n[0] for n in self.levels)
        first, *rest = split
        flat_shapes = list(itertools.chain.from_iterable(t.shape[1:] for t in split))
        summary = {f"lvl{i}": t.norm(dim=-1).mean() for i, t in enumerate(split, start=1)}
        return groups, first.sum(1) - sum(r.sum(1) for r in rest), counts["s"], flat_shapes, summary


def make_inputs():
    return (torch.randn(2, 3, 64, 64),)
