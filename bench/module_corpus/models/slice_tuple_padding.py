import math
from typing import List, Sequence, Tuple
import torch
import torch.nn as nn
import torch.nn.functional as F


def get_same_padding(x: int, k: int, s: int, d: int):
    return max((math.ceil(x / s) - 1) * s + (k - 1) * d + 1 - x, 0)


def pad_same(x, k: List[int], s: List[int], d: List[int] = (1, 1), value: float = 0):
    ih, iw = x.size()[-2:]
    pad_h, pad_w = get_same_padding(ih, k[0], s[0], d[0]), get_same_padding(iw, k[1], s[1], d[1])
    if pad_h > 0 or pad_w > 0:
        x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2], value=value)
    return x


class Conv2dSame(nn.Conv2d):
    """timm / EfficientNet-PyTorch TF 'SAME' padding conv."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True):
        super().__init__(in_channels, out_channels, kernel_size, stride, 0, dilation, groups, bias)

    def forward(self, x):
        x = pad_same(x, self.kernel_size, self.stride, self.dilation)
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


def pad_to_multiple(x: torch.Tensor, multiple: int, dims: Sequence[int] = (-2, -1), mode="constant"):
    """MONAI / nnU-Net style: pad the trailing spatial dims up to a multiple, return the slices to undo it."""
    pads: List[Tuple[int, int]] = [(0, 0)] * x.ndim
    for d in dims:
        size = x.shape[d]
        target = int(math.ceil(size / multiple)) * multiple
        diff = target - size
        pads[d] = (diff // 2, diff - diff // 2)
    flat = [p for pair in reversed(pads) for p in pair]
    while len(flat) > 2 and flat[-1] == 0 and flat[-2] == 0:
        flat = flat[:-2]
    padded = F.pad(x, flat, mode=mode)
    slicer = [slice(None)] * x.ndim
    for d in dims:
        lo, hi = pads[d]
        slicer[d] = slice(lo, padded.shape[d] - hi)
    return padded, tuple(slicer)


def center_crop(x, size: Tuple[int, int]):
    h, w = x.shape[-2:]
    top, left = (h - size[0]) // 2, (w - size[1]) // 2
    return x[(Ellipsis, slice(top, top + size[0]), slice(left, left + size[1]))]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = Conv2dSame(3, 8, 3, stride=2)
        self.down = Conv2dSame(8, 8, 5, stride=2, dilation=1)
        self.up = nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.out = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        padded, undo = pad_to_multiple(x, 8)
        a = F.relu(self.stem(padded))
        b = F.relu(self.down(a))
        u = self.up(b)
        u = center_crop(u, tuple(a.shape[-2:]))
        y = self.out(torch.cat([a, u], 1))
        y = F.interpolate(y, size=padded.shape[2:], mode="bilinear", align_corners=False)
        idx = [slice(None), slice(0, 1)] + [None] * 0
        return y[undo], y[tuple(idx)].squeeze(1), padded.shape[-2:] + (a.shape[1],)


def make_inputs():
    return (torch.randn(2, 3, 13, 18),)
