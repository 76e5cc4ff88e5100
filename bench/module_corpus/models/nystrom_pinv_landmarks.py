from math import ceil

import torch
import torch.nn.functional as F
from torch import nn


def exists(val):
    return val is not None


def moore_penrose_iter_pinv(x, iters=6):
    device = x.device
    abs_x = torch.abs(x)
    col = abs_x.sum(dim=-1)
    row = abs_x.sum(dim=-2)
    z = x.transpose(-1, -2) / (torch.max(col) * torch.max(row))
    I = torch.eye(x.shape[-1], device=device)
    I = I.unsqueeze(0)
    for _ in range(iters):
        xz = x @ z
        z = 0.25 * z @ (13 * I - (xz @ (15 * I - (xz @ (7 * I - xz)))))
    return z


class NystromAttention(nn.Module):
    """lucidrains/nystrom-attention, einops replaced with reshape/permute."""

    def __init__(self, dim, dim_head=4, heads=2, num_landmarks=3, pinv_iterations=6, residual=True,
                 residual_conv_kernel=3, eps=1e-8, dropout=0.):
        super().__init__()
        self.eps = eps
        inner_dim = heads * dim_head
        self.num_landmarks = num_landmarks
        self.pinv_iterations = pinv_iterations
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout))
        self.residual = residual
        if residual:
            kernel_size = residual_conv_kernel
            padding = residual_conv_kernel // 2
            self.res_conv = nn.Conv2d(heads, heads, (kernel_size, 1), padding=(padding, 0), groups=heads, bias=False)

    def forward(self, x, mask=None, return_attn=False):
        b, n, _, h, m, iters, eps = *x.shape, self.heads, self.num_landmarks, self.pinv_iterations, self.eps
        remainder = n % m
        if remainder > 0:
            padding = m - (n % m)
            x = F.pad(x, (0, 0, padding, 0), value=0)
            if exists(mask):
                mask = F.pad(mask, (padding, 0), value=False)
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: t.reshape(b, t.shape[1], h, -1).permute(0, 2, 1, 3), (q, k, v))
        if exists(mask):
            mask = mask[:, None, :]
            q, k, v = map(lambda t: t * mask[..., None], (q, k, v))
        q = q * self.scale
        l = ceil(n / m)
        q_landmarks = q.reshape(b, h, q.shape[2] // l, l, -1).sum(dim=3)
        k_landmarks = k.reshape(b, h, k.shape[2] // l, l, -1).sum(dim=3)
        divisor = l
        if exists(mask):
            mask_landmarks_sum = mask.reshape(b, 1, -1, l).sum(dim=-1)
            divisor = mask_landmarks_sum[..., None] + eps
            mask_landmarks = mask_landmarks_sum > 0
        q_landmarks = q_landmarks / divisor
        k_landmarks = k_landmarks / divisor
        einsum_eq = '... i d, ... j d -> ... i j'
        sim1 = torch.einsum(einsum_eq, q, k_landmarks)
        sim2 = torch.einsum(einsum_eq, q_landmarks, k_landmarks)
        sim3 = torch.einsum(einsum_eq, q_landmarks, k)
        if exists(mask):
            mask_value = -torch.finfo(q.dtype).max
            sim1.masked_fill_(~(mask[..., None] * mask_landmarks[..., None, :]), mask_value)
            sim2.masked_fill_(~(mask_landmarks[..., None] * mask_landmarks[..., None, :]), mask_value)
            sim3.masked_fill_(~(mask_landmarks[..., None] * mask[..., None, :]), mask_value)
        attn1, attn2, attn3 = map(lambda t: t.softmax(dim=-1), (sim1, sim2, sim3))
        attn2_inv = moore_penrose_iter_pinv(attn2, iters)
        out = (attn1 @ attn2_inv) @ (attn3 @ v)
        if self.residual:
            out = out + self.res_conv(v)
        out = out.permute(0, 2, 1, 3).reshape(b, -1, h * out.shape[-1])
        out = self.to_out(out)
        out = out[:, -n:]
        if return_attn:
            attn = attn1 @ attn2_inv @ attn3
            return out, attn
        return out


class Model(nn.Module):
    def __init__(self, dim=8, depth=2):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleList([nn.LayerNorm(dim), NystromAttention(dim)]) for _ in range(depth)])

    def forward(self, x, mask=None):
        for norm, attn in self.layers:
            x = attn(norm(x), mask=mask) + x
        return x


def make_inputs():
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[1, 5:] = False
    return (torch.randn(2, 7, 8),), {"mask": mask}
