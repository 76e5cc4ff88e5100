import torch
import torch.nn as nn


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.alpha, None


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def grad_reverse(x, alpha=1.0):
    return GradReverse.apply(x, alpha)


class Model(nn.Module):
    """DANN: feature extractor + label head + domain head behind a gradient-reversal layer."""

    def __init__(self):
        super().__init__()
        self.feature = nn.Sequential(nn.Linear(10, 32), nn.Tanh())
        self.classifier = nn.Linear(32, 4)
        self.domain = nn.Linear(32, 2)

    def forward(self, x, alpha=0.5):
        feat = self.feature(x)
        feat = MyReLU.apply(feat)
        class_out = self.classifier(feat)
        domain_out = self.domain(grad_reverse(feat, alpha))
        return class_out, domain_out


def make_inputs():
    return (torch.randn(5, 10),)
