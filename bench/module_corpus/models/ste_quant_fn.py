import torch
import torch.nn as nn
import torch.nn.functional as F


class Quantize(torch.autograd.Function):
    """Uniform k-bit quantizer with a straight-through estimator (DoReFa-style)."""

    @staticmethod
    def forward(ctx, x, k):
        n = float(2 ** k - 1)
        ctx.save_for_backward(x)
        ctx.n = n
        return torch.round(x * n) / n

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        mask = (x >= 0) & (x <= 1)
        return grad * mask.to(grad.dtype), None


class QConv2d(nn.Conv2d):
    def __init__(self, *args, w_bits=4, **kwargs):
        super().__init__(*args, **kwargs)
        self.w_bits = w_bits

    def forward(self, x):
        w = torch.tanh(self.weight)
        w = w / (2 * w.abs().max()) + 0.5
        wq = 2 * Quantize.apply(w, self.w_bits) - 1
        return F.conv2d(x, wq, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = QConv2d(3, 8, 3, padding=1, w_bits=2)
        self.conv2 = QConv2d(8, 8, 3, padding=1, bias=False)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = Quantize.apply(torch.clamp(x, 0, 1), 3)
        return self.conv2(x)


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
