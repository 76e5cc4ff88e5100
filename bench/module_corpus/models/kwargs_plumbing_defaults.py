import inspect
from functools import partial
from typing import Any, Dict
import torch
import torch.nn as nn
import torch.nn.functional as F

_DEFAULTS: Dict[str, Any] = {"dropout": 0.0, "norm": "layer", "act": "gelu", "eps": 1e-5, "residual_scale": 1.0}


def build_norm(kind, dim, **kwargs):
    return {"layer": partial(nn.LayerNorm, eps=kwargs.get("eps", 1e-5)), "rms": partial(nn.RMSNorm, eps=kwargs.get("eps", 1e-6)),
            "none": lambda d: nn.Identity()}[kind](dim)


class MLP(nn.Module):
    def __init__(self, dim, hidden=None, **kwargs):
        super().__init__()
        cfg = {**_DEFAULTS, **kwargs}
        hidden = hidden or 2 * dim
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.act = getattr(F, cfg["act"])
        self.drop = nn.Dropout(cfg["dropout"])

    def forward(self, x, **kwargs):
        gate = kwargs.pop("gate", None)
        h = self.act(self.fc1(x))
        if gate is not None:
            h = h * gate
        return self.fc2(self.drop(h))


class Attn(nn.Module):
    def __init__(self, dim, heads=2, **kwargs):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.extra = kwargs

    def forward(self, x, attn_mask=None, is_causal=False, **unused):
        B, N, C = x.shape
        q, k, v = self.qkv(x).view(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
        return self.out(y.transpose(1, 2).reshape(B, N, C))


class Block(nn.Module):
    def __init__(self, dim, **kwargs):
        super().__init__()
        kwargs.setdefault("norm", "rms")
        self.cfg = {**_DEFAULTS, **kwargs}
        self.norm1 = build_norm(self.cfg["norm"], dim, **self.cfg)
        self.norm2 = build_norm(self.cfg["norm"], dim, **self.cfg)
        self.attn = Attn(dim, **{k: v for k, v in kwargs.items() if k in ("heads",)})
        self.mlp = MLP(dim, **{k: v for k, v in self.cfg.items() if k not in ("norm", "eps", "residual_scale", "heads")})
        self._attn_params = set(inspect.signature(self.attn.forward).parameters)

    def forward(self, x, **kwargs):
        attn_kwargs = {k: v for k, v in kwargs.items() if k in self._attn_params}
        x = x + self.cfg["residual_scale"] * self.attn(self.norm1(x), **attn_kwargs)
        mlp_kwargs = dict(kwargs)
        mlp_kwargs.pop("attn_mask", None)
        mlp_kwargs.pop("is_causal", None)
        return x + self.mlp(self.norm2(x), **mlp_kwargs)


class Model(nn.Module):
    """**kwargs plumbing as in HF/timm-style code: merged default dicts {**defaults, **kwargs}, setdefault, pop with
    defaults, kwargs filtered by inspect.signature parameters, getattr(F, name) activations, partial norm builders."""

    def __init__(self, dim=8, depth=2, **kwargs):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, heads=2, residual_scale=0.5 * (i + 1), **kwargs) for i in range(depth)])
        self.head = nn.Linear(dim, 2)

    def forward(self, x, **kwargs):
        output_hidden_states = kwargs.pop("output_hidden_states", False)
        hidden = [] if output_hidden_states else None
        for blk in self.blocks:
            x = blk(x, **kwargs)
            if hidden is not None:
                hidden.append(x)
        out = {"logits": self.head(x)}
        if hidden is not None:
            out["hidden_states"] = tuple(hidden)
        return out


def make_inputs():
    return (torch.randn(2, 5, 8),), {"is_causal": True, "gate": torch.rand(16), "output_hidden_states": True, "unused_flag": 3}
