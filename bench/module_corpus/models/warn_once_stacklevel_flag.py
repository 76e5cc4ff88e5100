import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEmbedding(nn.Module):
    """Warns (once, via a flag attribute, stacklevel=2) when the input is longer than max_len and falls back to
    interpolating the table; also warns about a deprecated kwarg passed through **kwargs."""

    def __init__(self, max_len, dim):
        super().__init__()
        self.max_len = max_len
        self.table = nn.Parameter(torch.randn(max_len, dim) * 0.02)
        self._warned = False

    def forward(self, x, **kwargs):
        if "past_length" in kwargs:
            warnings.warn("`past_length` is deprecated, use `offset`", FutureWarning, stacklevel=2)
            kwargs["offset"] = kwargs.pop("past_length")
        offset = kwargs.get("offset", 0)
        T = x.shape[1]
        if T + offset > self.max_len:
            if not self._warned:
                warnings.warn(f"sequence length {T + offset} > max_len {self.max_len}; interpolating", stacklevel=2)
                self._warned = True
            table = F.interpolate(self.table.t().unsqueeze(0), size=T + offset, mode="linear",
                                  align_corners=False).squeeze(0).t()
        else:
            table = self.table
        return x + table[offset:offset + T]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = PositionalEmbedding(6, 8)
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        a = self.pos(x, past_length=1)
        b = self.pos(x[:, :4])
        return self.proj(a), b, self.pos._warned


def make_inputs():
    return (torch.randn(2, 7, 8),)
