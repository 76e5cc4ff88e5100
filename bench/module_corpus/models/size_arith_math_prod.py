import functools
import math
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F


class FlattenHead(nn.Module):
    """Shape plumbing with torch.Size arithmetic: x.shape[:k] + (-1,), math.prod, functools.reduce(operator.mul),
    any()/all() over dims, torch.Size equality with tuples, numel() vs prod."""

    def __init__(self, in_shape=(4, 6, 6), out_features=5):
        super().__init__()
        self.in_shape = torch.Size(in_shape)
        self.fc = nn.Linear(math.prod(in_shape), out_features)
        self.keep = 1

    def forward(self, x):
        lead = x.shape[: x.dim() - len(self.in_shape)]
        assert x.shape[len(lead):] == self.in_shape, f"expected trailing {tuple(self.in_shape)}, got {tuple(x.shape)}"
        assert all(d > 0 for d in x.shape), "empty dims"
        flat = x.reshape(lead + (-1,))
        assert flat.shape[-1] == functools.reduce(operator.mul, self.in_shape, 1)
        assert flat.numel() == math.prod(x.shape)
        return self.fc(flat)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, 2, 1)
        self.head = FlattenHead()
        self.proj = nn.Linear(6, 6)

    def forward(self, x):
        B, T = x.shape[:2]
        frames = x.flatten(0, 1)
        feat = self.conv(frames)
        new_shape = torch.Size([B, T]) + feat.shape[1:]
        feat = feat.view(new_shape)
        if any(s % 2 for s in feat.shape[-2:]):
            feat = F.pad(feat.flatten(0, 1), (0, feat.shape[-1] % 2, 0, feat.shape[-2] % 2)).view(B, T, 4, 6, 6)
        logits = self.head(feat)
        spatial = feat.shape[-2:]
        scale = math.sqrt(math.prod(spatial)) / math.isqrt(36)
        rows = self.proj(feat.mean(2)) * scale
        sizes = [tuple(feat.shape), tuple(spatial), len(new_shape), math.prod(new_shape[2:])]
        half = torch.Size(s // 2 for s in spatial)
        small = F.adaptive_avg_pool2d(feat.flatten(0, 1), half).view(B, T, -1, *half)
        return logits, rows, small, sizes


def make_inputs():
    return (torch.randn(2, 3, 3, 11, 11),)
