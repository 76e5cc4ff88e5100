import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_nd(n):
    return getattr(nn, f"Conv{n}d")


def pool_nd(n, kind="Max"):
    return getattr(nn, f"{kind}Pool{n}d")


def center_crop_nd(x, target_spatial):
    """crop the trailing spatial dims with an index tuple built from slice objects."""
    spatial = x.shape[2:]
    idx = [slice(None), slice(None)]
    for s, t in zip(spatial, target_spatial):
        start = (s - t) // 2
        idx.append(slice(start, start + t))
    return x[tuple(idx)]


def select_along(x, dim, i):
    index = (slice(None),) * dim + (i,)
    return x[index]


def take_last(x, n):
    return x[(Ellipsis, slice(-n, None))]


class Block(nn.Module):
    def __init__(self, dims, c_in, c_out):
        super().__init__()
        self.dims = dims
        self.conv = conv_nd(dims)(c_in, c_out, 3, padding=0)
        self.pool = pool_nd(dims)(2)
        self.norm = getattr(nn, f"InstanceNorm{dims}d")(c_out, affine=True)

    def forward(self, x):
        y = F.relu(self.norm(self.conv(x)))
        skip = center_crop_nd(x, y.shape[2:])
        if skip.shape[1] != y.shape[1]:
            reps = (1, y.shape[1] // skip.shape[1]) + (1,) * self.dims
            skip = skip.repeat(*reps)
        return self.pool(y + skip)


class Model(nn.Module):
    """Dimension-agnostic (1d/2d/3d) blocks built with getattr(nn, f'Conv{n}d'); indexing with tuples of
    slice objects, Ellipsis, and (slice(None),)*dim + (i,)."""

    def __init__(self, c=4):
        super().__init__()
        self.nets = nn.ModuleDict({f"d{n}": Block(n, 2, c) for n in (1, 2, 3)})

    def forward(self, x1, x2, x3):
        outs = {}
        for x in (x1, x2, x3):
            n = x.dim() - 2
            y = self.nets[f"d{n}"](x)
            outs[n] = (select_along(y, 1, 0), take_last(y, 2), y.flatten(2).mean(-1))
        return outs


def make_inputs():
    return torch.randn(2, 2, 12), torch.randn(2, 2, 10, 10), torch.randn(1, 2, 8, 8, 8)
