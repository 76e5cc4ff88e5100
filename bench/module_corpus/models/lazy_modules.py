import torch
import torch.nn as nn


class Model(nn.Module):
    """LazyLinear/LazyConv2d whose shapes are inferred on the first call, plus a hand-rolled lazy head."""

    def __init__(self):
        super().__init__()
        self.conv = nn.LazyConv2d(4, 3)
        self.fc = nn.LazyLinear(5)
        self.head = None

    def forward(self, x):
        h = torch.relu(self.conv(x)).flatten(1)
        h = self.fc(h)
        if self.head is None:
            self.head = nn.Linear(h.shape[-1], 2)
        return self.head(h)


def make_inputs():
    return (torch.randn(2, 3, 6, 6),)
