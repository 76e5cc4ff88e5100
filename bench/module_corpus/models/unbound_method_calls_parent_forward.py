import torch
import torch.nn as nn
import torch.nn.functional as F


class ScaledLinear(nn.Linear):
    """Calls the parent's forward unbound (nn.Linear.forward(self, x)), Tensor methods called unbound
    (torch.Tensor.view(x, ...), torch.Tensor.add(a, b)), nn.Module.__call__(self.norm, x), and reaches the
    child through self._modules['norm'] and self.__dict__."""

    def __init__(self, in_f, out_f, scale=2.0):
        super().__init__(in_f, out_f)
        self.scale = scale
        self.norm = nn.LayerNorm(out_f)

    def forward(self, x):
        y = nn.Linear.forward(self, x) * self.scale
        y = nn.Module.__call__(self._modules["norm"], y)
        flat = torch.Tensor.view(y, y.size(0), -1)
        return torch.Tensor.add(flat, 1.0), self.__dict__["scale"]


class Conv(nn.Conv2d):
    def forward(self, x):
        return F.relu(super(Conv, self).forward(x)) + nn.Conv2d.forward(self, x).sigmoid()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ScaledLinear(6, 4)
        self.conv = Conv(3, 2, 3, padding=1)

    def forward(self, x, img):
        a, s = self.lin(x)
        return a * s, self.conv(img)


def make_inputs():
    return torch.randn(3, 6), torch.randn(1, 3, 5, 5)
