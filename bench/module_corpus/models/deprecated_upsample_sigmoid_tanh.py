import warnings
import torch
import torch.nn as nn
import torch.nn.functional as F


class Decoder(nn.Module):
    """2018 segmentation decoder: F.upsample(..., mode='bilinear') and F.upsample_nearest (deprecated aliases),
    F.sigmoid / F.tanh, nn.Upsample module, torch.cat of encoder skip features."""

    def __init__(self):
        super(Decoder, self).__init__()
        self.enc1 = nn.Conv2d(3, 8, 3, padding=1)
        self.enc2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.enc3 = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec2 = nn.Conv2d(32, 8, 3, padding=1)
        self.dec1 = nn.Conv2d(16, 1, 3, padding=1)

    def forward(self, x):
        e1 = F.relu(self.enc1(x))
        e2 = F.relu(self.enc2(e1))
        e3 = F.tanh(self.enc3(e2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d2 = F.upsample(e3, size=e2.size()[2:], mode="bilinear", align_corners=True)
        d2 = F.relu(self.dec2(torch.cat([d2, e2], 1)))
        d1 = F.upsample_nearest(d2, scale_factor=2)
        d1 = self.dec1(torch.cat([d1, e1], 1))
        return F.sigmoid(d1), self.up(e3)


class Model(Decoder):
    pass


def make_inputs():
    return (torch.randn(1, 3, 16, 16),)
