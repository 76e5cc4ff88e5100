import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(4)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 1), "b": nn.Linear(4, 2)})
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))

    def forward(self, x, use_b=True):
        for layer in self.layers[:2]:
            x = torch.relu(layer(x))
        for layer in reversed(self.layers[2:]):
            x = layer(x)
        x = self.layers[-1](x) + self.seq[-1](x) + self.seq[0](x)
        outs = [self.heads[k](x) for k in self.heads.keys() if k != "b" or use_b]
        if "c" in self.heads:
            outs.append(self.heads["c"](x))
        return outs, len(self.layers), len(self.seq)


def make_inputs():
    return (torch.randn(3, 4),)
