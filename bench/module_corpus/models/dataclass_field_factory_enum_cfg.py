import enum
from dataclasses import dataclass, field, asdict, replace
from typing import List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


class Pooling(enum.Enum):
    MEAN = "mean"
    MAX = "max"
    CLS = "cls"


class Act(str, enum.Enum):
    RELU = "relu"
    GELU = "gelu"


@dataclass
class EncoderConfig:
    vocab_size: int = 40
    hidden_sizes: List[int] = field(default_factory=lambda: [16, 16])
    pooling: Pooling = Pooling.MEAN
    act: Act = Act.GELU
    dropout: float = 0.1
    kernel_sizes: Tuple[int, ...] = (3, 5)
    extra: dict = field(default_factory=dict)

    @property
    def out_dim(self):
        return self.hidden_sizes[-1] * len(self.kernel_sizes)


class Encoder(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.cfg = cfg
        self.emb = nn.Embedding(cfg.vocab_size, cfg.hidden_sizes[0])
        self.convs = nn.ModuleList([nn.Conv1d(cfg.hidden_sizes[0], cfg.hidden_sizes[-1], k, padding=k // 2)
                                    for k in cfg.kernel_sizes])
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, tokens, mask):
        x = self.drop(self.emb(tokens)).transpose(1, 2)
        act = F.relu if self.cfg.act is Act.RELU else F.gelu
        feats = [act(conv(x)).transpose(1, 2) for conv in self.convs]
        x = torch.cat(feats, dim=-1)
        if self.cfg.pooling == Pooling.MEAN:
            m = mask.unsqueeze(-1).to(x.dtype)
            return (x * m).sum(1) / m.sum(1).clamp(min=1.0)
        elif self.cfg.pooling == Pooling.MAX:
            return x.masked_fill(~mask.unsqueeze(-1), float("-inf")).max(1).values
        return x[:, 0]


class Model(nn.Module):
    """dataclass config with field(default_factory=...), enum.Enum and str-mixin Enum members compared with
    == / is, a @property on the config, dataclasses.replace to derive a second config, asdict in forward."""

    def __init__(self):
        super().__init__()
        cfg = EncoderConfig()
        self.mean_enc = Encoder(cfg)
        self.max_enc = Encoder(replace(cfg, pooling=Pooling.MAX, act=Act.RELU))
        self.head = nn.Linear(cfg.out_dim * 2, 2)

    def forward(self, tokens, mask):
        a = self.mean_enc(tokens, mask)
        b = self.max_enc(tokens, mask)
        info = asdict(self.max_enc.cfg)
        scale = 1.0 if info["act"] == "relu" else 0.5
        return self.head(torch.cat([a, b], -1)) * scale, self.max_enc.cfg.pooling.value


def make_inputs():
    tokens = torch.randint(0, 40, (2, 6))
    mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    return tokens, mask
