import torch
import torch.nn as nn
import torch.nn.functional as F

MODES = ("eval",)


class DropPath(nn.Module):
    def __init__(self, p=0.2):
        super().__init__()
        self.p = p

    def forward(self, x):
        if self.p == 0.0 or not self.training:
            return x
        keep = 1 - self.p
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        mask = x.new_empty(shape).bernoulli_(keep)
        return x * mask / keep


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.5)
        self.adrop = nn.AlphaDropout(0.3)
        self.d2 = nn.Dropout2d(0.5)
        self.dp = DropPath(0.3)

    def forward(self, x):
        h = self.drop(self.fc(x))
        h = F.dropout(h, 0.3, self.training) + self.adrop(h)
        h = self.dp(h)
        img = self.d2(h.view(2, 4, 2, 2))
        return h, img


def make_inputs():
    return (torch.randn(4, 8),)
