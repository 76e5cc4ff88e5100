import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(6, 6) for _ in range(4)])
        self.gates = nn.Parameter(torch.tensor([1.0, 0.0, 1.0, 1.0]))

    def _active_blocks(self):
        for i, blk in enumerate(self.blocks):
            if i % 2 == 0 or i == len(self.blocks) - 1:
                yield i, blk

    @staticmethod
    def pairwise(seq):
        it = iter(seq)
        prev = next(it)
        for cur in it:
            yield prev, cur
            prev = cur

    def forward(self, x):
        hs = [x]
        for i, blk in self._active_blocks():
            x = torch.relu(blk(x)) * self.gates[i]
            hs.append(x)
        diffs = [b - a for a, b in self.pairwise(hs)]
        total = sum(d.abs().mean() for d in diffs)
        squares = list(h.pow(2).sum() for h in hs)
        return x, total, torch.stack(squares)


def make_inputs():
    return (torch.randn(3, 6),)
