import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class AdaptiveScale(nn.Module):
    """Parameter created lazily in forward when it is still None (`if self.weight is None:
    self.weight = nn.Parameter(torch.ones(...))`), input kept with copy.deepcopy(x) as the residual,
    vars(self) read to pick up config values."""

    def __init__(self, eps=1e-5):
        super().__init__()
        self.weight = None
        self.eps = eps

    def forward(self, x):
        residual = copy.deepcopy(x)
        if self.weight is None:
            self.weight = nn.Parameter(torch.ones(x.size(1), device=x.device, dtype=x.dtype))
        mean = x.mean(dim=0, keepdim=True)
        var = x.var(dim=0, unbiased=False, keepdim=True)
        x = (x - mean) / torch.sqrt(var + vars(self)["eps"]) * self.weight
        return x + residual


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)
        self.scale = AdaptiveScale()

    def forward(self, x):
        h = self.scale(F.relu(self.fc(x)))
        return h, self.scale.weight.sum(), len(list(self.parameters()))


def make_inputs():
    return (torch.randn(4, 5),)
