import torch
import torch.nn as nn
import torch.nn.utils.parametrize as P
from torch.nn.utils import parametrizations


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class PositiveScale(nn.Module):
    def forward(self, s):
        return torch.nn.functional.softplus(s)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.sym = nn.Linear(6, 6)
        P.register_parametrization(self.sym, "weight", Symmetric())
        self.scale = nn.Linear(6, 6)
        P.register_parametrization(self.scale, "bias", PositiveScale())
        self.wn = parametrizations.weight_norm(nn.Linear(6, 4))
        self.sn = parametrizations.spectral_norm(nn.Linear(4, 3))

    def forward(self, x):
        x = torch.tanh(self.sym(x))
        x = self.scale(x)
        with P.cached():
            x = self.wn(x) + self.wn(x)
        return self.sn(x)


def make_inputs():
    return (torch.randn(5, 6),)
