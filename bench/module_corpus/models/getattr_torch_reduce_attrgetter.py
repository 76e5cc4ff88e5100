import operator

import torch
import torch.nn as nn
import torch.nn.functional as F


class Pool(nn.Module):
    """Functions looked up by name at call time: getattr(torch, self.reduce)(x, dim=...) with 'amax' / 'mean' /
    'sum', getattr(F, self.act), getattr(x, self.method)() tensor-method lookup, operator.attrgetter on dotted
    module paths, operator.methodcaller."""

    def __init__(self, reduce="mean", act="gelu", method="tanh"):
        super().__init__()
        self.reduce = reduce
        self.act = act
        self.method = method

    def forward(self, x):
        x = getattr(F, self.act)(x)
        x = getattr(x, self.method)()
        return getattr(torch, self.reduce)(x, dim=1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
        self.heads = nn.ModuleDict({"a": nn.Linear(6, 2)})
        self.pools = nn.ModuleList([Pool("mean"), Pool("amax", "relu", "sigmoid"), Pool("sum", "silu", "neg")])

    def forward(self, x):
        h = self.enc(x)
        w = operator.attrgetter("heads.a.weight")(self)
        first_linear = operator.attrgetter("enc.0")(self)
        pooled = [p(h.unsqueeze(1).expand(-1, 3, -1)) for p in self.pools]
        t = operator.methodcaller("softmax", dim=-1)(h @ w.t())
        return pooled, t, first_linear(x)


def make_inputs():
    return (torch.randn(2, 4),)
