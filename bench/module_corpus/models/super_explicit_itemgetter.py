import operator
from collections import namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F

Feature = namedtuple("Feature", ["name", "stride", "channels", "tensor"])


class BaseHead(nn.Module):
    def __init__(self, in_ch, out_ch):
        super(BaseHead, self).__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, 3, padding=1)

    def forward(self, x):
        return F.relu(self.conv(x))


class ScaledHead(BaseHead):
    def __init__(self, in_ch, out_ch, scale=2.0):
        super(ScaledHead, self).__init__(in_ch, out_ch)
        self.scale = nn.Parameter(torch.tensor(scale))

    def forward(self, x):
        return super(ScaledHead, self).forward(x) * self.scale


class ResidualScaledHead(ScaledHead):
    def forward(self, x):
        base = BaseHead.forward(self, x)
        scaled = super(ResidualScaledHead, self).forward(x)
        return base + scaled


class Model(nn.Module):
    """py2-style super(Class, self).forward chains, unbound BaseClass.forward(self, x), operator.itemgetter /
    attrgetter / methodcaller on namedtuples, zip(*lists) transposition, sorted(..., key=lambda) by stride."""

    def __init__(self):
        super(Model, self).__init__()
        self.stem = nn.ModuleDict({"p3": nn.Conv2d(3, 8, 3, 2, 1), "p5": nn.Conv2d(3, 16, 3, 8, 1), "p4": nn.Conv2d(3, 12, 3, 4, 1)})
        self.strides = {"p3": 2, "p4": 4, "p5": 8}
        self.heads = nn.ModuleDict({"p3": BaseHead(8, 4), "p4": ScaledHead(12, 4), "p5": ResidualScaledHead(16, 4)})

    def forward(self, x):
        feats = [Feature(name, self.strides[name], conv.out_channels, conv(x)) for name, conv in self.stem.items()]
        feats = sorted(feats, key=lambda f: (f.stride, f.name))
        names, strides, chans, tensors = zip(*feats)
        get_t = operator.itemgetter(3)
        by_name = operator.attrgetter("name")
        outs = []
        for f in feats:
            y = self.heads[by_name(f)](get_t(f))
            outs.append(y.flatten(2))
        pick = operator.itemgetter(0, -1)
        first, last = pick(outs)
        mean_fn = operator.methodcaller("mean", dim=-1)
        pooled = torch.stack([mean_fn(o) for o in outs], 1)
        total = sum(map(operator.mul, strides, chans))
        return torch.cat(outs, -1), first.sum(-1) - last.sum(-1), pooled * total, list(names)


def make_inputs():
    return (torch.randn(2, 3, 16, 16),)
