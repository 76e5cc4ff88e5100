import math
import torch
import torch.nn as nn
import torch.fft


class GlobalFilter(nn.Module):
    """GFNet global filter: rfft2 -> multiply by a learned complex weight (stored real, viewed complex) -> irfft2."""

    def __init__(self, dim, h=4, w=3):
        super().__init__()
        self.complex_weight = nn.Parameter(torch.randn(h, w, dim, 2, dtype=torch.float32) * 0.02)
        self.w = w
        self.h = h

    def forward(self, x, spatial_size=None):
        B, N, C = x.shape
        if spatial_size is None:
            a = b = int(math.sqrt(N))
        else:
            a, b = spatial_size
        x = x.view(B, a, b, C)
        x = x.to(torch.float32)
        x = torch.fft.rfft2(x, dim=(1, 2), norm="ortho")
        weight = torch.view_as_complex(self.complex_weight)
        x = x * weight
        x = torch.fft.irfft2(x, s=(a, b), dim=(1, 2), norm="ortho")
        x = x.reshape(B, N, C)
        return x


class ComplexRotary(nn.Module):
    """Rotary embedding with complex multiply; the rotated query is returned also as magnitude/phase."""

    def __init__(self, dim, max_len=32, base=10000.0):
        super().__init__()
        inv = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        t = torch.arange(max_len).float()
        self.register_buffer("freqs", torch.outer(t, inv), persistent=False)

    def forward(self, x):
        T = x.shape[1]
        fc = torch.complex(torch.cos(self.freqs[:T]), torch.sin(self.freqs[:T]))
        xc = torch.view_as_complex(x.float().unflatten(-1, (-1, 2)).contiguous())
        out = xc * fc
        return torch.view_as_real(out).flatten(-2).type_as(x), out.abs(), torch.angle(out), out.conj().real


class Model(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.filter = GlobalFilter(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.rope = ComplexRotary(dim)

    def forward(self, x):
        x = x + self.mlp(self.norm2(self.filter(self.norm1(x))))
        r, mag, phase, re = self.rope(x)
        return x, r, mag, phase, re


def make_inputs():
    return (torch.randn(2, 16, 8),)
