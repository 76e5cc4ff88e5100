import operator
from functools import reduce
from itertools import chain, zip_longest

import torch
import torch.nn as nn


class LayerStack(nn.Module):
    """A hand-written container: __len__, __iter__, __getitem__ with int/slice, __contains__; forward iterates
    `for layer in self`, slicing returns a new LayerStack."""

    def __init__(self, layers):
        super().__init__()
        self._layers = nn.ModuleList(layers)

    def __len__(self):
        return len(self._layers)

    def __iter__(self):
        return iter(self._layers)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return LayerStack(list(self._layers)[idx])
        return self._layers[idx]

    def __contains__(self, m):
        return any(m is l for l in self._layers)

    def forward(self, x):
        for layer in self:
            x = layer(x)
        return x


class Model(nn.Module):
    """Container dunders plus functools.reduce(operator.mul, shape), itertools.chain over two layer lists,
    zip_longest pairing outputs with an optional list of scales."""

    def __init__(self, dim=6):
        super().__init__()
        self.stack = LayerStack([nn.Sequential(nn.Linear(dim, dim), nn.Tanh()) for _ in range(4)])
        self.extra = nn.ModuleList([nn.Linear(dim, dim) for _ in range(2)])
        self.scales = [1.0, 0.5]

    def forward(self, x):
        flat = x.reshape(x.shape[0], reduce(operator.mul, x.shape[1:], 1))
        h = self.stack[:2](flat)
        h = self.stack[-1](h)
        outs = []
        for layer, s in zip_longest(chain(self.stack[2:], self.extra), self.scales, fillvalue=0.25):
            outs.append(layer(h) * s)
        return sum(outs), len(self.stack), self.extra[0] in self.stack, self.stack[0] in self.stack


def make_inputs():
    return (torch.randn(3, 2, 3),)
