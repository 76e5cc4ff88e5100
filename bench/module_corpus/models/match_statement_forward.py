from dataclasses import dataclass
from enum import Enum, auto
import torch
import torch.nn as nn
import torch.nn.functional as F


class PoolType(Enum):
    AVG = auto()
    MAX = auto()
    ATTN = auto()


@dataclass
class HeadCfg:
    kind: str
    dim: int
    extra: dict


class Model(nn.Module):
    """Python 3.10 structural pattern matching in forward: literal/str patterns with guards, sequence patterns on
    x.shape, enum value patterns, mapping patterns with **rest, class patterns on a dataclass, or-patterns, capture."""

    def __init__(self, dim=8):
        super().__init__()
        self.pool_type = PoolType.ATTN
        self.attn = nn.Linear(dim, 1)
        self.proj = nn.Linear(dim, dim)
        self.cfgs = [HeadCfg("linear", dim, {"bias": True}), HeadCfg("mlp", dim, {"hidden": 16, "act": "gelu"})]
        self.heads = nn.ModuleList()
        for cfg in self.cfgs:
            match cfg:
                case HeadCfg(kind="linear", dim=d, extra={"bias": b}):
                    self.heads.append(nn.Linear(d, 3, bias=b))
                case HeadCfg(kind="mlp", dim=d, extra={"hidden": h, **rest}):
                    act = nn.GELU() if rest.get("act") == "gelu" else nn.ReLU()
                    self.heads.append(nn.Sequential(nn.Linear(d, h), act, nn.Linear(h, 3)))
                case _:
                    raise ValueError(cfg)

    def to_tokens(self, x):
        match x.shape:
            case (b, c, h, w):
                return x.flatten(2).transpose(1, 2)
            case (b, n, c) if n > 0:
                return x
            case (b, c):
                return x.unsqueeze(1)
            case _:
                raise ValueError(f"bad shape {tuple(x.shape)}")

    def pool(self, t):
        match self.pool_type:
            case PoolType.AVG:
                return t.mean(1)
            case PoolType.MAX:
                return t.amax(1)
            case PoolType.ATTN:
                w = self.attn(t).softmax(1)
                return (w * t).sum(1)

    def forward(self, x, opts):
        t = self.proj(self.to_tokens(x))
        z = self.pool(t)
        outs = []
        for cfg, head in zip(self.cfgs, self.heads):
            y = head(z)
            match opts:
                case {"activation": "softmax" | "probs", **others}:
                    y = y.softmax(-1)
                case {"activation": "log_softmax", "temperature": float(temp)}:
                    y = F.log_softmax(y / temp, -1)
                case {"clip": [lo, hi]}:
                    y = y.clamp(lo, hi)
                case _:
                    pass
            outs.append(y)
        match outs:
            case [single]:
                return single
            case [first, *rest]:
                return first + sum(rest)


def make_inputs():
    return torch.randn(2, 8, 3, 3), {"activation": "log_softmax", "temperature": 2.0}
