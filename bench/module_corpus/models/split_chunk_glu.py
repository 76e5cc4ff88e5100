import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 16)
        self.lstm_gates = nn.Linear(8, 4 * 6)

    def forward(self, x):
        a, b = self.proj(x).chunk(2, dim=-1)
        glu = a * torch.sigmoid(b)
        i, f, g, o = self.lstm_gates(x).split(6, dim=1)
        c = torch.sigmoid(f) * torch.tanh(g) + torch.sigmoid(i)
        h = torch.sigmoid(o) * torch.tanh(c)
        first, *rest = torch.split(glu, [2, 3, 3], dim=1)
        parts = torch.unbind(h, dim=0)
        return first, torch.cat(rest, 1), sum(parts), F.glu(self.proj(x), dim=-1)


def make_inputs():
    return (torch.randn(3, 8),)
