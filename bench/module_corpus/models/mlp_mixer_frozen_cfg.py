from dataclasses import dataclass, replace
from typing import Tuple
import torch
import torch.nn as nn


@dataclass(frozen=True)
class MixerConfig:
    image_size: Tuple[int, int] = (8, 8)
    patch_size: int = 4
    channels: int = 3
    dim: int = 16
    depth: int = 2
    expansion_factor: float = 4.0
    expansion_factor_token: float = 0.5
    num_classes: int = 5
    dropout: float = 0.0

    @property
    def num_patches(self):
        return (self.image_size[0] // self.patch_size) * (self.image_size[1] // self.patch_size)


class PreNormResidual(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.fn(self.norm(x)) + x


def FeedForward(dim, expansion_factor, dropout, dense):
    inner = int(dim * expansion_factor)
    return nn.Sequential(dense(dim, inner), nn.GELU(), nn.Dropout(dropout), dense(inner, dim), nn.Dropout(dropout))


class TokenMix(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ff = FeedForward(cfg.num_patches, cfg.expansion_factor_token, cfg.dropout, nn.Linear)

    def forward(self, x):
        return self.ff(x.transpose(1, 2)).transpose(1, 2)


class Model(nn.Module):
    def __init__(self, cfg: MixerConfig = MixerConfig()):
        super().__init__()
        self.cfg = replace(cfg, depth=cfg.depth)
        p = cfg.patch_size
        self.to_patches = nn.Conv2d(cfg.channels, cfg.dim, kernel_size=p, stride=p)
        self.layers = nn.Sequential(*[
            nn.Sequential(PreNormResidual(cfg.dim, TokenMix(cfg)),
                          PreNormResidual(cfg.dim, FeedForward(cfg.dim, cfg.expansion_factor, cfg.dropout, nn.Linear)))
            for _ in range(cfg.depth)])
        self.norm = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.num_classes)

    def forward(self, img):
        cfg = self.cfg
        h, w = img.shape[-2:]
        assert (h, w) == tuple(cfg.image_size), f"image size {h}x{w} != {cfg.image_size}"
        x = self.to_patches(img).flatten(2).transpose(1, 2)
        assert x.shape[1] == cfg.num_patches
        x = self.layers(x)
        x = self.norm(x).mean(dim=1)
        return self.head(x)


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
