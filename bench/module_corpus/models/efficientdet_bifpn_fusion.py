import torch
import torch.nn as nn
import torch.nn.functional as F


class SeparableConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels=None, norm=True, activation=False):
        super().__init__()
        if out_channels is None:
            out_channels = in_channels
        self.depthwise_conv = nn.Conv2d(in_channels, in_channels, 3, 1, 1, groups=in_channels, bias=False)
        self.pointwise_conv = nn.Conv2d(in_channels, out_channels, 1, 1)
        self.norm = norm
        if self.norm:
            self.bn = nn.BatchNorm2d(num_features=out_channels, momentum=0.01, eps=1e-3)
        self.activation = activation
        if self.activation:
            self.swish = nn.SiLU()

    def forward(self, x):
        x = self.pointwise_conv(self.depthwise_conv(x))
        if self.norm:
            x = self.bn(x)
        if self.activation:
            x = self.swish(x)
        return x


class BiFPN(nn.Module):
    """zylo117 EfficientDet BiFPN with fast normalized fusion: relu(w) / (sum(relu(w)) + eps)."""

    def __init__(self, num_channels, epsilon=1e-4, attention=True):
        super().__init__()
        self.epsilon = epsilon
        self.conv4_up = SeparableConvBlock(num_channels)
        self.conv3_up = SeparableConvBlock(num_channels)
        self.conv4_down = SeparableConvBlock(num_channels)
        self.conv5_down = SeparableConvBlock(num_channels)
        self.p5_upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.p4_upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.p4_downsample = nn.MaxPool2d(3, 2, 1)
        self.p5_downsample = nn.MaxPool2d(3, 2, 1)
        self.swish = nn.SiLU()
        self.p4_w1 = nn.Parameter(torch.tensor([1.0, 0.7]))
        self.p4_w1_relu = nn.ReLU()
        self.p3_w1 = nn.Parameter(torch.tensor([0.9, 1.1]))
        self.p3_w1_relu = nn.ReLU()
        self.p4_w2 = nn.Parameter(torch.tensor([1.0, -0.2, 0.5]))
        self.p4_w2_relu = nn.ReLU()
        self.p5_w2 = nn.Parameter(torch.tensor([0.3, 1.2]))
        self.p5_w2_relu = nn.ReLU()
        self.attention = attention

    def forward(self, inputs):
        if self.attention:
            return self._forward_fast_attention(inputs)
        return self._forward(inputs)

    def _forward_fast_attention(self, inputs):
        p3_in, p4_in, p5_in = inputs
        p4_w1 = self.p4_w1_relu(self.p4_w1)
        weight = p4_w1 / (torch.sum(p4_w1, dim=0) + self.epsilon)
        p4_up = self.conv4_up(self.swish(weight[0] * p4_in + weight[1] * self.p5_upsample(p5_in)))
        p3_w1 = self.p3_w1_relu(self.p3_w1)
        weight = p3_w1 / (torch.sum(p3_w1, dim=0) + self.epsilon)
        p3_out = self.conv3_up(self.swish(weight[0] * p3_in + weight[1] * self.p4_upsample(p4_up)))
        p4_w2 = self.p4_w2_relu(self.p4_w2)
        weight = p4_w2 / (torch.sum(p4_w2, dim=0) + self.epsilon)
        p4_out = self.conv4_down(self.swish(weight[0] * p4_in + weight[1] * p4_up + weight[2] * self.p4_downsample(p3_out)))
        p5_w2 = self.p5_w2_relu(self.p5_w2)
        weight = p5_w2 / (torch.sum(p5_w2, dim=0) + self.epsilon)
        p5_out = self.conv5_down(self.swish(weight[0] * p5_in + weight[1] * self.p5_downsample(p4_out)))
        return p3_out, p4_out, p5_out

    def _forward(self, inputs):
        p3_in, p4_in, p5_in = inputs
        p4_up = self.conv4_up(self.swish(p4_in + self.p5_upsample(p5_in)))
        p3_out = self.conv3_up(self.swish(p3_in + self.p4_upsample(p4_up)))
        p4_out = self.conv4_down(self.swish(p4_in + p4_up + self.p4_downsample(p3_out)))
        p5_out = self.conv5_down(self.swish(p5_in + self.p5_downsample(p4_out)))
        return p3_out, p4_out, p5_out


class Model(nn.Module):
    def __init__(self, num_channels=8, repeats=2):
        super().__init__()
        self.stem = nn.ModuleList([nn.Conv2d(3, num_channels, 3, s, 1) for s in (2, 4, 8)])
        self.bifpn = nn.Sequential(*[BiFPN(num_channels, attention=(i % 2 == 0)) for i in range(repeats)])
        self.head = nn.Conv2d(num_channels, 4, 1)

    def forward(self, x):
        feats = tuple(conv(x) for conv in self.stem)
        feats = self.bifpn(feats)
        outs = [self.head(f).permute(0, 2, 3, 1).contiguous().view(x.shape[0], -1, 4) for f in feats]
        return torch.cat(outs, dim=1)


def make_inputs():
    return (torch.randn(2, 3, 32, 32),)
