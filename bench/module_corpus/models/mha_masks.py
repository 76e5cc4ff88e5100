import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d=16, heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True, dropout=0.0)
        self.cross = nn.MultiheadAttention(d, 2, kdim=8, vdim=8)
        self.norm = nn.LayerNorm(d)

    def forward(self, x, mem, key_padding_mask):
        L = x.size(1)
        causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
        h, w = self.attn(x, x, x, key_padding_mask=key_padding_mask, attn_mask=causal, need_weights=True)
        x = self.norm(x + h)
        q = x.transpose(0, 1)
        c, cw = self.cross(q, mem, mem, need_weights=True, average_attn_weights=False)
        return x + c.transpose(0, 1), w, cw


def make_inputs():
    x = torch.randn(2, 5, 16)
    mem = torch.randn(7, 2, 8)
    kpm = torch.tensor([[False] * 5, [False, False, False, True, True]])
    return x, mem, kpm
