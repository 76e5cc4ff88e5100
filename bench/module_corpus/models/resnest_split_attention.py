import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Conv2d, Module, Linear, BatchNorm2d, ReLU
from torch.nn.modules.utils import _pair
import torch.utils.checkpoint as cp


class DropBlock2D(object):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError


class rSoftMax(nn.Module):
    def __init__(self, radix, cardinality):
        super().__init__()
        self.radix = radix
        self.cardinality = cardinality

    def forward(self, x):
        batch = x.size(0)
        if self.radix > 1:
            x = x.view(batch, self.cardinality, self.radix, -1).transpose(1, 2)
            x = F.softmax(x, dim=1)
            x = x.reshape(batch, -1)
        else:
            x = torch.sigmoid(x)
        return x


class SplAtConv2d(Module):
    """zhanghang1989/ResNeSt Split-Attention Conv2d."""

    def __init__(self, in_channels, channels, kernel_size, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 bias=True, radix=2, reduction_factor=4, rectify=False, rectify_avg=False, norm_layer=None,
                 dropblock_prob=0.0, **kwargs):
        super(SplAtConv2d, self).__init__()
        padding = _pair(padding)
        self.rectify = rectify and (padding[0] > 0 or padding[1] > 0)
        self.rectify_avg = rectify_avg
        inter_channels = max(in_channels * radix // reduction_factor, 32 // 4)
        self.radix = radix
        self.cardinality = groups
        self.channels = channels
        self.dropblock_prob = dropblock_prob
        self.conv = Conv2d(in_channels, channels * radix, kernel_size, stride, padding, dilation, groups=groups * radix,
                           bias=bias, **kwargs)
        self.use_bn = norm_layer is not None
        if self.use_bn:
            self.bn0 = norm_layer(channels * radix)
        self.relu = ReLU(inplace=True)
        self.fc1 = Conv2d(channels, inter_channels, 1, groups=self.cardinality)
        if self.use_bn:
            self.bn1 = norm_layer(inter_channels)
        self.fc2 = Conv2d(inter_channels, channels * radix, 1, groups=self.cardinality)
        if dropblock_prob > 0.0:
            self.dropblock = DropBlock2D(dropblock_prob, 3)
        self.rsoftmax = rSoftMax(radix, groups)

    def forward(self, x):
        x = self.conv(x)
        if self.use_bn:
            x = self.bn0(x)
        if self.dropblock_prob > 0.0:
            x = self.dropblock(x)
        x = self.relu(x)
        batch, rchannel = x.shape[:2]
        if self.radix > 1:
            if torch.__version__ < "1.5":
                splited = torch.split(x, int(rchannel // self.radix), dim=1)
            else:
                splited = torch.split(x, rchannel // self.radix, dim=1)
            gap = sum(splited)
        else:
            gap = x
        gap = F.adaptive_avg_pool2d(gap, 1)
        gap = self.fc1(gap)
        if self.use_bn:
            gap = self.bn1(gap)
        gap = self.relu(gap)
        atten = self.fc2(gap)
        atten = self.rsoftmax(atten).view(batch, -1, 1, 1)
        if self.radix > 1:
            if torch.__version__ < "1.5":
                attens = torch.split(atten, int(rchannel // self.radix), dim=1)
            else:
                attens = torch.split(atten, rchannel // self.radix, dim=1)
            out = sum([att * split for (att, split) in zip(attens, splited)])
        else:
            out = atten * x
        return out.contiguous()


class GlobalAvgPool2d(nn.Module):
    def __init__(self):
        super(GlobalAvgPool2d, self).__init__()

    def forward(self, inputs):
        return nn.functional.adaptive_avg_pool2d(inputs, 1).view(inputs.size(0), -1)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, radix=1, cardinality=1, bottleneck_width=64,
                 avd=False, avd_first=False, dilation=1, is_first=False, norm_layer=None, last_gamma=False, with_cp=False):
        super(Bottleneck, self).__init__()
        group_width = int(planes * (bottleneck_width / 64.)) * cardinality
        self.conv1 = nn.Conv2d(inplanes, group_width, kernel_size=1, bias=False)
        self.bn1 = norm_layer(group_width)
        self.radix = radix
        self.avd = avd and (stride > 1 or is_first)
        self.avd_first = avd_first
        self.with_cp = with_cp
        if self.avd:
            self.avd_layer = nn.AvgPool2d(3, stride, padding=1)
            stride = 1
        if radix >= 1:
            self.conv2 = SplAtConv2d(group_width, group_width, kernel_size=3, stride=stride, padding=dilation,
                                     dilation=dilation, groups=cardinality, bias=False, radix=radix, norm_layer=norm_layer)
        self.conv3 = nn.Conv2d(group_width, planes * 4, kernel_size=1, bias=False)
        self.bn3 = norm_layer(planes * 4)
        if last_gamma:
            from torch.nn.init import zeros_
            zeros_(self.bn3.weight)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.dilation = dilation
        self.stride = stride

    def forward(self, x):
        def _inner_forward(x):
            residual = x
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            if self.avd and self.avd_first:
                out = self.avd_layer(out)
            out = self.conv2(out)
            if self.avd and not self.avd_first:
                out = self.avd_layer(out)
            out = self.conv3(out)
            out = self.bn3(out)
            if self.downsample is not None:
                residual = self.downsample(x)
            out += residual
            return out

        if self.with_cp:
            out = cp.checkpoint(_inner_forward, x, use_reentrant=False)
        else:
            out = _inner_forward(x)
        out = self.relu(out)
        return out


class Model(nn.Module):
    """ResNeSt (radix-2 split attention, rSoftMax over cardinal groups, avd avg-pool downsampling, avg_down
    shortcut) with mmdet-style with_cp activation checkpointing (use_reentrant=False) around the inner block."""

    def __init__(self, radix=2, groups=2, bottleneck_width=32, num_classes=4):
        super().__init__()
        norm_layer = nn.BatchNorm2d
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), norm_layer(8), nn.ReLU(inplace=True))
        down = nn.Sequential(nn.AvgPool2d(kernel_size=2, stride=2, ceil_mode=True, count_include_pad=False),
                             nn.Conv2d(8, 16, kernel_size=1, stride=1, bias=False), norm_layer(16))
        self.layer1 = nn.Sequential(
            Bottleneck(8, 4, stride=2, downsample=down, radix=radix, cardinality=groups, bottleneck_width=bottleneck_width,
                       avd=True, avd_first=False, is_first=True, norm_layer=norm_layer, with_cp=True),
            Bottleneck(16, 4, radix=radix, cardinality=groups, bottleneck_width=bottleneck_width, norm_layer=norm_layer,
                       last_gamma=True, with_cp=True),
            Bottleneck(16, 4, radix=1, cardinality=1, bottleneck_width=64, norm_layer=norm_layer))
        self.avgpool = GlobalAvgPool2d()
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.fc(self.avgpool(self.layer1(self.stem(x))))


def make_inputs():
    return (torch.randn(2, 3, 16, 16),)
