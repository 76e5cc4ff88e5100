import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class LazyInitLinear(nn.Module):
    """Initialises its weights on the first forward call (data-dependent init, guarded by a Python bool flag
    on self), a pattern from old weight-norm / actnorm / LSUV code."""

    def __init__(self, in_features, out_features):
        super(LazyInitLinear, self).__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        self.initialized = False

    def reset_parameters(self):
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        fan_in = self.weight.size(1)
        bound = 1 / math.sqrt(fan_in)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        if not self.initialized:
            nn.init.eye_(self.weight)
            with torch.no_grad():
                y = F.linear(x, self.weight)
                self.weight.data.div_(y.std(0).unsqueeze(1) + 1e-6)
                self.bias.data.copy_(-(F.linear(x, self.weight)).mean(0))
            self.initialized = True
        return F.linear(x, self.weight, self.bias)


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.l1 = LazyInitLinear(6, 6)
        self.l2 = LazyInitLinear(6, 6)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        return self.l2(h), self.l1.weight.sum()


def make_inputs():
    return (torch.randn(8, 6),)
