import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, ch=4, n=4):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(ch, ch, 3, padding=1, bias=False) for _ in range(n)])
        self.bns = nn.ModuleList([nn.BatchNorm2d(ch) for _ in range(n)])
        self.acts = [nn.ReLU(), nn.LeakyReLU(0.1), nn.ELU(), nn.Hardswish()]

    def forward(self, x):
        identity = x
        for i, (conv, bn, act) in enumerate(zip(self.convs, self.bns, self.acts)):
            x = act(bn(conv(x)))
            if i % 2 == 1:
                x = x + identity
                identity = x
        for idx, m in reversed(list(enumerate(self.convs))):
            if idx < 2:
                x = x + 0.01 * F.conv2d(x, m.weight, padding=1)
        return x


def make_inputs():
    return (torch.randn(2, 4, 6, 6),)
