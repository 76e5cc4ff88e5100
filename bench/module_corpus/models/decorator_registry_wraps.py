import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

_BLOCKS = {}
_NORMS = {}


def register(registry, name=None):
    def deco(cls):
        key = name or cls.__name__.lower()
        if key in registry:
            raise KeyError(f"{key} already registered")
        registry[key] = cls
        cls._registry_key = key
        return cls
    return deco


def shape_checked(ndim):
    """decorator for forward: asserts input rank and restores the leading shape after flattening."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(self, x, *args, **kwargs):
            assert x.dim() >= ndim, f"{type(self).__name__}.{fn.__name__} expects >= {ndim} dims, got {x.dim()}"
            lead = x.shape[:-1]
            out = fn(self, x.reshape(-1, x.shape[-1]), *args, **kwargs)
            return out.reshape(*lead, out.shape[-1])
        return wrapper
    return deco


def scaled(factor_attr):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            return fn(self, *args, **kwargs) * getattr(self, factor_attr)
        wrapper.__scaled__ = True
        return wrapper
    return deco


@register(_NORMS, "ln")
class LN(nn.LayerNorm):
    pass


@register(_NORMS, "rms")
class RMS(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


@register(_BLOCKS)
class GatedMLP(nn.Module):
    def __init__(self, dim, act="silu", norm="rms", scale=1.0):
        super().__init__()
        self.norm = _NORMS[norm](dim)
        self.fc = nn.Linear(dim, dim * 4)
        self.out = nn.Linear(dim * 2, dim)
        self.act = getattr(F, act)
        self.scale = scale

    @shape_checked(2)
    @scaled("scale")
    def forward(self, x):
        a, b = self.fc(self.norm(x)).chunk(2, -1)
        return self.out(self.act(a) * b)


@register(_BLOCKS, "attn")
class TinyAttention(nn.Module):
    def __init__(self, dim, act="gelu", norm="ln", scale=1.0, heads=2):
        super().__init__()
        self.norm = _NORMS[norm](dim)
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.scale = scale / math.sqrt(dim // heads)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.norm(x)).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        att = (q @ k.transpose(-1, -2) * self.scale).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, C))


def build_block(cfg, dim):
    cfg = dict(cfg)
    kind = cfg.pop("type")
    return _BLOCKS[kind](dim, **cfg)


class Model(nn.Module):
    """mmcv/timm-style registries filled by class decorators, functools.wraps-stacked forward decorators,
    getattr(F, name) activations, config-list model build."""

    CFG = [dict(type="attn", norm="ln"), dict(type="gatedmlp", act="gelu", scale=0.5), dict(type="attn", norm="rms"),
           dict(type="gatedmlp", act="silu")]

    def __init__(self, dim=16):
        super().__init__()
        self.blocks = nn.ModuleList([build_block(c, dim) for c in self.CFG])
        self.kinds = [type(b)._registry_key for b in self.blocks]

    def forward(self, x):
        trace = []
        for kind, blk in zip(self.kinds, self.blocks):
            y = blk(x)
            if getattr(type(blk).forward, "__wrapped__", None) is not None:
                trace.append(kind + ":" + type(blk).forward.__name__)
            x = x + y
        return x, trace


def make_inputs():
    return (torch.randn(2, 5, 16),)
