import torch
import torch.nn as nn


def fixed_pos_embedding(x):
    seq_len, dim = x.shape
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(0, seq_len, dtype=torch.float), inv_freq).to(x)
    return torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)


def rotate_every_two(x):
    x1 = x[:, :, ::2]
    x2 = x[:, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)  # in einsum notation: rearrange(x, '... d j -> ... (d j)')


def duplicate_interleave(m):
    """A simple version of `torch.repeat_interleave` for duplicating a matrix while interleaving the copy."""
    dim0 = m.shape[0]
    m = m.view(-1, 1)  # flatten the matrix
    m = m.repeat(1, 2)  # repeat all elements into the 2nd dimension
    m = m.view(dim0, -1)  # reshape into a matrix, interleaving the copy
    return m


def apply_rotary_pos_emb(x, sin, cos, scale=1):
    sin, cos = map(lambda t: duplicate_interleave(t * scale), (sin, cos))
    return (x * cos) + (rotate_every_two(x) * sin)


class XPOS(nn.Module):
    def __init__(self, head_dim, scale_base=512):
        super().__init__()
        self.head_dim = head_dim
        self.scale_base = scale_base
        self.register_buffer("scale", (torch.arange(0, head_dim, 2) + 0.4 * head_dim) / (1.4 * head_dim))

    def forward(self, x, offset=0, downscale=False):
        length = x.shape[1]
        min_pos = -(length + offset) // 2
        max_pos = length + offset + min_pos
        scale = self.scale ** torch.arange(min_pos, max_pos, 1).to(self.scale).div(self.scale_base)[:, None]
        sin, cos = fixed_pos_embedding(scale)
        if scale.shape[0] > length:
            scale = scale[-length:]
            sin = sin[-length:]
            cos = cos[-length:]
        if downscale:
            scale = 1 / scale
        x = apply_rotary_pos_emb(x, sin, cos, scale)
        return x


class Model(nn.Module):
    """microsoft/torchscale XPOS: length-extrapolatable rotary with per-dim scale ** position, negative floor division
    for min_pos, map(lambda) over (sin, cos), an incremental-decoding offset."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.xpos = XPOS(self.head_dim, scale_base=64)

    def forward(self, x, offset: int = 0):
        bsz, tgt_len, embed_dim = x.size()
        q = self.q_proj(x).view(bsz, tgt_len, self.heads, self.head_dim).transpose(1, 2).reshape(bsz * self.heads, tgt_len, self.head_dim)
        k = self.k_proj(x).view(bsz, tgt_len, self.heads, self.head_dim).transpose(1, 2).reshape(bsz * self.heads, tgt_len, self.head_dim)
        v = self.v_proj(x).view(bsz, tgt_len, self.heads, self.head_dim).transpose(1, 2).reshape(bsz * self.heads, tgt_len, self.head_dim)
        q = self.xpos(q, offset=offset, downscale=False)
        k = self.xpos(k, offset=offset, downscale=True)
        attn = torch.bmm(q, k.transpose(1, 2)) * self.head_dim ** -0.5
        mask = torch.triu(torch.full((tgt_len, tgt_len), float("-inf")), 1)
        attn = torch.softmax(attn + mask, dim=-1)
        return torch.bmm(attn, v).view(bsz, self.heads, tgt_len, self.head_dim).transpose(1, 2).reshape(bsz, tgt_len, embed_dim)


def make_inputs():
    return torch.randn(2, 5, 16), 3
