import functools
import re
from typing import Optional
import torch
import torch.nn as nn
import torch.nn.functional as F


@functools.lru_cache(maxsize=64)
def _parse(pattern):
    left, right = pattern.split("->")
    tok = lambda s: re.findall(r"\([^)]*\)|\w+", s.strip())
    return tuple(tok(left)), tuple(tok(right))


def rearrange(t, pattern, **sizes):
    """Tiny vendored einops.rearrange: only split/merge of axes, no ellipsis."""
    left, right = _parse(pattern)
    known = dict(sizes)
    flat_left = []
    for group, dim in zip(left, t.shape):
        if group.startswith("("):
            names = group[1:-1].split()
            unknown = [n for n in names if n not in known]
            prod = 1
            for n in names:
                if n in known:
                    prod *= known[n]
            if unknown:
                known[unknown[0]] = dim // prod
            flat_left.extend(names)
        else:
            known[group] = dim
            flat_left.append(group)
    t = t.reshape([known[n] for n in flat_left])
    flat_right = [n for g in right for n in (g[1:-1].split() if g.startswith("(") else [g])]
    t = t.permute([flat_left.index(n) for n in flat_right])
    out_shape = []
    for g in right:
        if g.startswith("("):
            size = 1
            for n in g[1:-1].split():
                size *= known[n]
            out_shape.append(size)
        else:
            out_shape.append(known[g])
    return t.reshape(out_shape)


def repeat_batch(t, b):
    return t.unsqueeze(0).expand(b, *t.shape)


class CrossAttention(nn.Module):
    def __init__(self, q_dim, ctx_dim=None, heads=2, dim_head=8):
        super().__init__()
        inner = heads * dim_head
        ctx_dim = ctx_dim if ctx_dim is not None else q_dim
        self.heads = heads
        self.to_q = nn.Linear(q_dim, inner, bias=False)
        self.to_kv = nn.Linear(ctx_dim, inner * 2, bias=False)
        self.to_out = nn.Linear(inner, q_dim)

    def forward(self, x, context=None, mask: Optional[torch.Tensor] = None):
        h = self.heads
        context = x if context is None else context
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> (b h) n d", h=h) for t in (q, k, v))
        sim = torch.einsum("b i d, b j d -> b i j", q, k) * q.shape[-1] ** -0.5
        if mask is not None:
            mask = rearrange(mask, "b j -> b j")
            mask = mask[:, None, None, :].expand(-1, h, 1, -1).reshape(-1, 1, mask.shape[-1])
            sim = sim.masked_fill(~mask, -torch.finfo(sim.dtype).max)
        attn = sim.softmax(dim=-1)
        out = torch.einsum("b i j, b j d -> b i d", attn, v)
        return self.to_out(rearrange(out, "(b h) n d -> b n (h d)", h=h))


class Model(nn.Module):
    def __init__(self, input_dim=6, num_latents=4, latent_dim=12, depth=2, num_classes=3):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim))
        self.cross = CrossAttention(latent_dim, input_dim)
        self.selfs = nn.ModuleList([CrossAttention(latent_dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(latent_dim)
        self.head = nn.Linear(latent_dim, num_classes)

    def forward(self, data, mask=None, *, return_embeddings=False):
        b = data.shape[0]
        x = repeat_batch(self.latents, b)
        x = self.cross(x, context=data, mask=mask) + x
        for sa in self.selfs:
            x = sa(x) + x
        x = self.norm(x)
        if return_embeddings:
            return x
        return self.head(x.mean(dim=1))


def make_inputs():
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[1, 3:] = False
    return (torch.randn(2, 5, 6),), {"mask": mask}
