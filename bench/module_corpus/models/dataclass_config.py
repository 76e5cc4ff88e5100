from dataclasses import dataclass, field, asdict
from typing import List
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class MLPConfig:
    in_dim: int = 8
    hidden: List[int] = field(default_factory=lambda: [16, 16])
    out_dim: int = 3
    activation: str = "gelu"
    dropout: float = 0.0
    residual: bool = True


class Model(nn.Module):
    def __init__(self, cfg: MLPConfig = None):
        super().__init__()
        self.cfg = cfg or MLPConfig()
        dims = [self.cfg.in_dim] + self.cfg.hidden
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.head = nn.Linear(dims[-1], self.cfg.out_dim)

    def forward(self, x):
        act = getattr(F, self.cfg.activation)
        cfgd = asdict(self.cfg)
        for layer in self.layers:
            h = act(layer(x))
            if self.cfg.residual and h.shape == x.shape:
                h = h + x
            x = F.dropout(h, p=cfgd["dropout"], training=self.training)
        return self.head(x)


def make_inputs():
    return (torch.randn(4, 8),)
