import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.same = nn.Conv1d(3, 4, 5, padding="same", dilation=2, padding_mode="reflect")
        self.grouped = nn.Conv1d(4, 4, 3, groups=2, padding=1, bias=False)
        self.tconv = nn.ConvTranspose1d(4, 2, 3, stride=2, output_padding=1)
        self.c3d = nn.Conv3d(1, 2, (1, 3, 3), padding=(0, 1, 1))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.unflat = nn.Unflatten(1, (2, 2))
        self.ident = nn.Identity()
        self.pool = nn.AvgPool1d(2, ceil_mode=True, count_include_pad=False)
        self.apool = nn.AdaptiveMaxPool1d(3, return_indices=True)

    def forward(self, x, vol):
        y = self.grouped(self.same(x))
        z = self.tconv(y)
        v = self.c3d(vol)
        u = self.unflat(self.up(y))
        p = self.pool(self.ident(z))
        m, idx = self.apool(y)
        return z, v, u, p, m, idx


def make_inputs():
    return torch.randn(2, 3, 9), torch.randn(2, 1, 2, 4, 4)
