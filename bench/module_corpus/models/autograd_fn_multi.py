import torch
import torch.nn as nn
from torch.autograd.function import once_differentiable


class MaxWithIndex(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        y = x * w
        val, idx = y.max(dim=1)
        ctx.save_for_backward(x, w, idx)
        ctx.mark_non_differentiable(idx)
        return val, idx

    @staticmethod
    @once_differentiable
    def backward(ctx, gval, gidx):
        x, w, idx = ctx.saved_tensors
        gy = torch.zeros_like(x)
        gy.scatter_(1, idx[:, None], gval[:, None])
        gx = gy * w if ctx.needs_input_grad[0] else None
        gw = (gy * x).sum(0) if ctx.needs_input_grad[1] else None
        return gx, gw


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 6)
        self.w = nn.Parameter(torch.rand(6) + 0.5)

    def forward(self, x):
        h = self.fc(x)
        val, idx = MaxWithIndex.apply(h, self.w)
        return val * 2, idx


def make_inputs():
    return (torch.randn(4, 5),)
