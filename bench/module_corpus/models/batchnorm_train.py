import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3)
        self.bn = nn.BatchNorm2d(6, momentum=None)  # cumulative moving average
        self.bn1d = nn.BatchNorm1d(6, affine=False)
        self.inorm = nn.InstanceNorm2d(6, track_running_stats=True, affine=True)

    def forward(self, x):
        x = self.bn(self.conv(x))
        x = self.inorm(x)
        x = x.mean((2, 3))
        return self.bn1d(x)


def make_inputs():
    return (torch.randn(4, 3, 6, 6),)
