import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Config(dict):
    """dict with attribute access (easydict / ml_collections-lite): __getattr__ -> item, missing -> default."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            if name.startswith("use_"):
                return False
            raise AttributeError(name)

    def __setattr__(self, name, value):
        self[name] = value


class SinusoidalPositions(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg

    @functools.cached_property
    def inv_freq(self):
        d = self.cfg.dim
        return torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))

    @property
    def max_len(self):
        return self.cfg.max_len

    def forward(self, T):
        pos = torch.arange(T).float()[:, None]
        ang = pos * self.inv_freq[None]
        return torch.stack([ang.sin(), ang.cos()], -1).flatten(-2)


class DelegatingWrapper(nn.Module):
    """Wrapper forwarding unknown attributes to the wrapped module (like DataParallel/.module or PEFT wrappers)."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.emb = nn.Embedding(cfg.vocab, cfg.dim)
        self.pos = SinusoidalPositions(cfg)
        self.layer = nn.TransformerEncoderLayer(cfg.dim, cfg.heads, cfg.dim * 2, dropout=0.0, batch_first=True)
        self.hidden_size = cfg.dim

    def forward(self, ids):
        x = self.emb(ids) * math.sqrt(self.cfg.dim) + self.pos(ids.shape[1])
        if self.cfg.use_layer:
            x = self.layer(x)
        if self.cfg.use_dropout_in_eval:
            x = F.dropout(x, 0.5)
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = Config(vocab=20, dim=8, heads=2, max_len=16)
        cfg.use_layer = True
        self.cfg = cfg
        self.encoder = DelegatingWrapper(Encoder(cfg))
        self.head = nn.Linear(self.encoder.hidden_size, 3)

    def forward(self, ids):
        h = self.encoder(ids)
        assert ids.shape[1] <= self.encoder.pos.max_len
        return self.head(h[:, 0]), self.encoder.cfg.dim, h.mean(1)


def make_inputs():
    return (torch.randint(0, 20, (2, 7)),)
