import torch
import torch.nn as nn


class SEBlock(nn.Module):
    def __init__(self, c, r=2):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(nn.Linear(c, c // r), nn.ReLU(inplace=True), nn.Linear(c // r, c), nn.Hardsigmoid())

    def forward(self, x):
        b, c, _, _ = x.size()
        y = self.pool(x).view(b, c)
        y = self.fc(y).view(b, c, 1, 1)
        return x * y.expand_as(x)


class Model(nn.Module):
    """SE net with forward hooks capturing features (feature-extractor pattern) and a pre-hook."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.se = SEBlock(4)
        self.head = nn.Conv2d(4, 2, 1)
        self.se.register_forward_hook(self._save("se"))
        self.head.register_forward_pre_hook(lambda mod, inp: (inp[0] * 2,))
        self.conv.register_forward_hook(lambda mod, inp, out: out.relu())

    @staticmethod
    def _save(name):
        def hook(module, inp, out):
            module.saved_features = {name: out.detach()}
        return hook

    def forward(self, x):
        out = self.head(self.se(self.conv(x)))
        return out, self.se.saved_features["se"].sum()


def make_inputs():
    return (torch.randn(2, 3, 5, 5),)
