import torch
import torch.nn as nn
import torch.nn.functional as F


class Up(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_ch, in_ch // 2, 2, stride=2)
        self.conv = nn.Sequential(nn.Conv2d(in_ch, out_ch, 3, padding=1), nn.BatchNorm2d(out_ch), nn.ReLU(inplace=True))

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inc = nn.Conv2d(1, 4, 3, padding=1)
        self.down = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(4, 8, 3, padding=1))
        self.up = Up(8, 4)
        self.outc = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down(x1)
        return self.outc(self.up(x2, x1))


def make_inputs():
    return (torch.randn(2, 1, 9, 11),)
