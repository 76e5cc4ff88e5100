import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x, *args, mask=None, scale=1.0, **kwargs):
        y = self.fc(x) * scale
        if mask is not None:
            y = y * mask.unsqueeze(-1)
        for extra in args:
            y = y + extra
        if kwargs.get("return_pre", False):
            return y, x
        return y


class Model(nn.Module):
    def __init__(self, dim=8, depth=3):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])

    def forward(self, x, *args, **kwargs):
        opts = dict(kwargs)
        opts.setdefault("scale", 0.5)
        pres = []
        for blk in self.blocks:
            x, pre = blk(x, *args, return_pre=True, **opts)
            pres.append(pre)
        return x, pres


def make_inputs():
    x = torch.randn(2, 4, 8)
    bias = torch.randn(8)
    mask = torch.tensor([[1., 1., 0., 1.], [1., 0., 0., 1.]])
    return (x, bias), {"mask": mask}
