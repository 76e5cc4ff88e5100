import torch
import torch.nn as nn
import torch.nn.functional as F


class Refiner(nn.Module):
    """Iterative refinement with a Python `while` counter and a convergence test on a Python float threshold
    list; optional modules looked up by name with try/except AttributeError and KeyError fallbacks."""

    def __init__(self, dim=6, n_iters=3):
        super().__init__()
        self.update = nn.GRUCell(dim, dim)
        self.delta = nn.Linear(dim, dim)
        self.n_iters = n_iters
        self.cfg = {"scale": 0.5}

    def forward(self, x, h):
        i = 0
        preds = []
        while i < self.n_iters:
            h = self.update(x, h)
            x = x + self.delta(h) * self.cfg["scale"]
            preds.append(x)
            i += 1
        try:
            post = self.post_norm
        except AttributeError:
            post = nn.Identity()
        try:
            temp = self.cfg["temperature"]
        except KeyError:
            temp = 1.0
        return post(x) / temp, preds, i


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.refiner = Refiner()

    def forward(self, x):
        h = torch.zeros_like(x)
        out, preds, n = self.refiner(x, h)
        weights = [0.8 ** (n - k - 1) for k in range(n)]
        loss = sum(w * F.mse_loss(p, torch.zeros_like(p)) for w, p in zip(weights, preds))
        return out, loss, n


def make_inputs():
    return (torch.randn(3, 6),)
