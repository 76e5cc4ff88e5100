import torch
import torch.nn as nn


class Model(nn.Module):
    """Detection backbones freeze BatchNorm by switching it to eval inside forward."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.bn2 = nn.BatchNorm2d(4)
        self.freeze_bn = True

    def forward(self, x):
        if self.freeze_bn:
            for name, m in self.named_modules():
                if isinstance(m, nn.BatchNorm2d) and name.startswith("bn") and name != "bn2":
                    m.eval()
        x = self.bn(self.conv(x))
        return self.bn2(x), self.bn.training, self.training


def make_inputs():
    return (torch.randn(3, 3, 5, 5),)
