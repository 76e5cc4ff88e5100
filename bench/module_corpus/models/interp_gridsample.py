import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Spatial Transformer Network + upsampling decoder."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 4, 3), nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, 6))
        self.loc[-1].weight.data.zero_()
        self.loc[-1].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
        self.conv = nn.Conv2d(1, 2, 3, padding=1)

    def forward(self, x):
        theta = self.loc(x).view(-1, 2, 3)
        theta = theta + 0.1 * torch.tanh(theta)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        x = F.grid_sample(x, grid, align_corners=False, padding_mode="border")
        y = self.conv(x)
        up = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        up2 = F.interpolate(y, size=(x.shape[2] * 3, x.shape[3] * 3), mode="nearest")
        return up, up2.mean(dim=(2, 3))


def make_inputs():
    return (torch.randn(2, 1, 10, 10),)
