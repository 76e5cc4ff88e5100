import os
import torch
import torch.nn as nn
import torch.nn.functional as F

FLASH_ENV = "CORPUS_USE_FLASH"


class CausalSelfAttention(nn.Module):
    """nanoGPT-ish attention that decides its kernel in forward from torch.__version__, hasattr(F, ...) and os.environ."""

    def __init__(self, n_embd=16, n_head=2, block_size=8):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd = n_head, n_embd
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        flash = hasattr(torch.nn.functional, "scaled_dot_product_attention") and torch.__version__ >= "2.0"
        if flash and os.environ.get(FLASH_ENV, "1") == "1":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (k.size(-1) ** -0.5)
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.attn = CausalSelfAttention()
        self.debug = int(os.environ.get("CORPUS_DEBUG_LEVEL", "0"))

    def forward(self, x):
        y = x + self.attn(self.ln(x))
        major, minor = (int(p) for p in torch.__version__.split(".")[:2])
        if (major, minor) >= (1, 12) and torch.backends.cudnn.enabled:
            y = y * 1.0
        if self.debug > 1 or os.getenv("CORPUS_PRINT") is not None:
            print("y", y.shape)
        if torch.cuda.is_available() and y.is_cuda:
            y = y.half()
        return y


def make_inputs():
    return (torch.randn(2, 6, 16),)
