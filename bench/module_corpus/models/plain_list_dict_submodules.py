import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """The common bug/habit of keeping layers in a plain Python list and dict (not ModuleList/ModuleDict): they
    are not registered, but forward still calls them; plus a tuple of lambdas stored as an attribute."""

    def __init__(self, dims=(6, 10, 8)):
        super(Model, self).__init__()
        self.layers = [nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1)]
        self.heads = {"a": nn.Linear(dims[-1], 2), "b": nn.Linear(dims[-1], 3)}
        self.acts = (lambda t: F.leaky_relu(t, 0.1), torch.tanh)
        self.registered = nn.Linear(dims[-1], 1)
        self.scale = 0.5

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            x = self.acts[i % len(self.acts)](x)
        out = {k: head(x) * self.scale for k, head in sorted(self.heads.items())}
        out["r"] = self.registered(x)
        keys = list(out.keys())
        out["idx"] = keys.index("b")
        return out


def make_inputs():
    return (torch.randn(4, 6),)
