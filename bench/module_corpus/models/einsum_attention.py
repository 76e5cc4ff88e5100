import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Causal self-attention written with einsum, masked_fill(-inf), torch.where with scalars."""

    def __init__(self, dim=16, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)
        self.register_buffer("causal", torch.tril(torch.ones(8, 8)).bool(), persistent=False)

    def forward(self, x, pad_mask):
        b, n, d = x.shape
        h = self.heads
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: t.reshape(b, n, h, -1).transpose(1, 2), (q, k, v))
        dots = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
        mask = self.causal[:n, :n][None, None] & pad_mask[:, None, None, :]
        dots = dots.masked_fill(~mask, float("-inf"))
        attn = dots.softmax(dim=-1)
        attn = torch.where(torch.isnan(attn), 0.0, attn)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        out = out.transpose(1, 2).reshape(b, n, d)
        gate = torch.where(out > 0, 1.0, 0.5)
        return self.to_out(out * gate)


def make_inputs():
    x = torch.randn(2, 6, 16)
    pad = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    return x, pad
