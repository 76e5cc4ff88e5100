import torch
import torch.nn as nn


class Model(nn.Module):
    """YOLO-style head decode: in-place ops on slices/views of the prediction tensor."""

    def __init__(self, na=3, nc=2):
        super().__init__()
        self.na, self.no = na, nc + 5
        self.conv = nn.Conv2d(4, na * (nc + 5), 1)
        self.register_buffer("anchors", torch.tensor([[1.0, 1.5], [2.0, 2.0], [3.0, 1.0]]))
        self.stride = 8.0

    def forward(self, x):
        bs, _, ny, nx = x.shape
        p = self.conv(x).view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
        y = p.sigmoid().clone()
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
        y[..., 0:2] = (y[..., 0:2] * 2.0 - 0.5 + grid) * self.stride
        y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * self.anchors.view(1, self.na, 1, 1, 2)
        flat = y.view(bs, -1, self.no)
        flat[:, :, 4].mul_(2.0).clamp_(max=1.5)
        z = flat.narrow(2, 5, self.no - 5)
        z.add_(1).relu_()
        return flat, p


def make_inputs():
    return (torch.randn(2, 4, 3, 3),)
