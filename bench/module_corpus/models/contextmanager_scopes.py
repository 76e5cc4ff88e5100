import contextlib
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


class Attn(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.scale_mult = 1.0

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        with sdpa_kernel([SDPBackend.MATH]):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale_mult * (C // self.h) ** -0.5)
        return self.o(y.transpose(1, 2).reshape(B, T, C))


class Model(nn.Module):
    """Context managers inside forward: contextlib.contextmanager scopes that patch attributes, nullcontext,
    torch.set_grad_enabled(flag), torch.is_grad_enabled(), sdpa_kernel."""

    def __init__(self, d=16, h=2, freeze_backbone=True):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(d, d), nn.GELU())
        self.attn = Attn(d, h)
        self.head = nn.Linear(d, 3)
        self.freeze_backbone = freeze_backbone
        self.use_temp_scale = True
        self.gradient_checkpointing = True

    @contextlib.contextmanager
    def temp_scale(self, mult):
        old = self.attn.scale_mult
        self.attn.scale_mult = mult
        try:
            yield self.attn
        finally:
            self.attn.scale_mult = old

    def forward(self, x):
        with torch.set_grad_enabled(not self.freeze_backbone and torch.is_grad_enabled()):
            h = self.backbone(x)
        ctx = self.temp_scale(0.5) if self.use_temp_scale else contextlib.nullcontext()
        with ctx:
            a = self.attn(h)
        if self.gradient_checkpointing and torch.is_grad_enabled() and self.training:
            a = torch.utils.checkpoint.checkpoint(self.attn, a, use_reentrant=False)
        else:
            a = self.attn(a)
        with contextlib.suppress(KeyError):
            a = a + {"bias": 1.0}["nobias"]
        return self.head(a), self.attn.scale_mult


def make_inputs():
    return (torch.randn(2, 5, 16),)


def py_state(m):
    return m.attn.scale_mult


def make_inputs_seq():
    return [(torch.randn(2, 5, 16),), (torch.randn(1, 3, 16),)]
