import torch
import torch.nn as nn
import torch.nn.functional as F


def conv(in_planes, out_planes, kernel_size=3, stride=1, padding=1, dilation=1):
    return nn.Sequential(nn.Conv2d(in_planes, out_planes, kernel_size=kernel_size, stride=stride, padding=padding,
                                   dilation=dilation, bias=True), nn.LeakyReLU(0.1))


def predict_flow(in_planes):
    return nn.Conv2d(in_planes, 2, kernel_size=3, stride=1, padding=1, bias=True)


def warp(x, flo):
    B, C, H, W = x.size()
    xx = torch.arange(0, W).view(1, -1).repeat(H, 1)
    yy = torch.arange(0, H).view(-1, 1).repeat(1, W)
    xx = xx.view(1, 1, H, W).repeat(B, 1, 1, 1)
    yy = yy.view(1, 1, H, W).repeat(B, 1, 1, 1)
    grid = torch.cat((xx, yy), 1).float()
    vgrid = grid + flo
    vgrid[:, 0, :, :] = 2.0 * vgrid[:, 0, :, :].clone() / max(W - 1, 1) - 1.0
    vgrid[:, 1, :, :] = 2.0 * vgrid[:, 1, :, :].clone() / max(H - 1, 1) - 1.0
    vgrid = vgrid.permute(0, 2, 3, 1)
    output = F.grid_sample(x, vgrid, align_corners=True)
    mask = torch.ones(x.size())
    mask = F.grid_sample(mask, vgrid, align_corners=True)
    mask[mask < 0.9999] = 0
    mask[mask > 0] = 1
    return output * mask


def cost_volume(feat1, feat2, max_disp=2):
    """Correlation over a (2d+1)^2 neighbourhood built with F.pad and a Python double loop."""
    b, c, h, w = feat1.shape
    feat2_pad = F.pad(feat2, [max_disp] * 4)
    costs = []
    for i in range(2 * max_disp + 1):
        for j in range(2 * max_disp + 1):
            shifted = feat2_pad[:, :, i:i + h, j:j + w]
            costs.append(torch.mean(feat1 * shifted, dim=1, keepdim=True))
    return torch.cat(costs, dim=1)


class Model(nn.Module):
    """NVlabs PWC-Net (two levels): pyramid features, warp with mask, cost volume, dense decoder, upsample flow."""

    def __init__(self, md=2):
        super().__init__()
        self.md = md
        self.conv1 = nn.Sequential(conv(3, 8, stride=2), conv(8, 8))
        self.conv2 = nn.Sequential(conv(8, 16, stride=2), conv(16, 16))
        nd = (2 * md + 1) ** 2
        dd = [16, 12, 8]
        self.decoders = nn.ModuleDict()
        self.predictors = nn.ModuleDict()
        for lvl, extra in (("2", 0), ("1", 8 + 4)):
            od = nd + extra
            layers = nn.ModuleList()
            for d in dd:
                layers.append(conv(od, d))
                od += d
            self.decoders[lvl] = layers
            self.predictors[lvl] = predict_flow(od)
        self.deconv2 = nn.ConvTranspose2d(2, 2, 4, 2, 1)
        self.upfeat2 = nn.ConvTranspose2d(sum(dd) + nd, 2, 4, 2, 1)

    def decode(self, lvl, x):
        for layer in self.decoders[lvl]:
            x = torch.cat((layer(x), x), 1)
        return self.predictors[lvl](x), x

    def forward(self, im1, im2):
        c11, c21 = self.conv1(im1), self.conv1(im2)
        c12, c22 = self.conv2(c11), self.conv2(c21)
        corr2 = F.leaky_relu(cost_volume(c12, c22, self.md), 0.1)
        flow2, x = self.decode("2", corr2)
        up_flow2 = self.deconv2(flow2)
        up_feat2 = self.upfeat2(x)
        warp1 = warp(c21, up_flow2 * 0.625)
        corr1 = F.leaky_relu(cost_volume(c11, warp1, self.md), 0.1)
        x = torch.cat((corr1, c11, up_flow2, up_feat2), 1)
        flow1, _ = self.decode("1", x)
        return flow1, flow2


def make_inputs():
    return torch.randn(1, 3, 16, 16), torch.randn(1, 3, 16, 16)
