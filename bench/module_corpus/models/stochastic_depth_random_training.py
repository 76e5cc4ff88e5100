import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ResBlock(nn.Module):
    """Stochastic depth (Huang et al.) as people write it: random.random() < death_rate skips the block, only
    when self.training; eval scales the residual by (1 - death_rate)."""

    def __init__(self, c, death_rate=0.0):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.death_rate = death_rate

    def forward(self, x):
        if self.training and random.random() < self.death_rate:
            return x
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.training:
            out = out / (1.0 - self.death_rate)
        else:
            out = out * 1.0
        return F.relu(out + x)


class Model(nn.Module):
    def __init__(self, c=6, depth=4, max_death=0.5, cutout_p=0.5):
        super().__init__()
        rates = np.linspace(0, max_death, depth)
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.blocks = nn.Sequential(*[ResBlock(c, float(r)) for r in rates])
        self.fc = nn.Linear(c, 10)
        self.cutout_p = cutout_p

    def forward(self, x):
        if self.training and np.random.rand() < self.cutout_p:
            h, w = x.shape[-2:]
            cy, cx = np.random.randint(h), np.random.randint(w)
            x = x.clone()
            x[..., max(0, cy - 2):cy + 2, max(0, cx - 2):cx + 2] = 0
        x = self.blocks(F.relu(self.stem(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
