import torch
import torch.nn as nn


class Model(nn.Module):
    """WGAN critic that clips its weights through p.data at the start of every forward."""

    def __init__(self, clip=0.05):
        super().__init__()
        self.clip = clip
        self.net = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))

    def forward(self, x):
        for p in self.parameters():
            p.data.clamp_(-self.clip, self.clip)
        return self.net(x).mean()


def make_inputs():
    return (torch.randn(6, 4),)
