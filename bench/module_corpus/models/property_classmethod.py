import torch
import torch.nn as nn


class Model(nn.Module):
    base_dim = 6

    def __init__(self, mult=2):
        super().__init__()
        self.mult = mult
        self.fc = nn.Linear(self.base_dim, self.hidden_dim)
        self.out = nn.Linear(self.hidden_dim, 1)
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    @property
    def hidden_dim(self):
        return self.base_dim * self.mult

    @property
    def device(self):
        return next(self.parameters()).device

    @classmethod
    def activation(cls, x):
        return torch.relu(x) * cls.base_dim

    @staticmethod
    def _check(x):
        return x.float()

    def forward(self, x):
        x = self._check(x).to(self.device)
        self.step += 1
        h = self.activation(self.fc(x)) / self.hidden_dim
        return self.out(h) * self.step


def make_inputs():
    return (torch.randn(3, 6),)
