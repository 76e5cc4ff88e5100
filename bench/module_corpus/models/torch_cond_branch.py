import torch
import torch.nn as nn


class Model(nn.Module):
    """Export-friendly data-dependent branching with torch.cond (sample-level early-exit / gating)."""

    def __init__(self, d=8):
        super().__init__()
        self.cheap = nn.Linear(d, d)
        self.expensive = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.threshold = 0.0

    def forward(self, x):
        def true_fn(x):
            return self.expensive(x) + x

        def false_fn(x):
            return self.cheap(x)

        y = torch.cond(x.mean() > self.threshold, true_fn, false_fn, (x,))
        z = torch.cond(y.sum() < 0, lambda t: t.sin(), lambda t: t.cos(), [y])
        return y, z


def make_inputs():
    return (torch.randn(4, 8) + 0.5,)
