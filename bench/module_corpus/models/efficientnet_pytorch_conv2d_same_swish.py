import collections
import math
from functools import partial

import torch
from torch import nn
from torch.nn import functional as F

GlobalParams = collections.namedtuple('GlobalParams', [
    'width_coefficient', 'depth_coefficient', 'image_size', 'dropout_rate',
    'num_classes', 'batch_norm_momentum', 'batch_norm_epsilon',
    'drop_connect_rate', 'depth_divisor', 'min_depth', 'include_top'])
GlobalParams.__new__.__defaults__ = (None,) * len(GlobalParams._fields)


class SwishImplementation(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i * torch.sigmoid(i)
        ctx.save_for_backward(i)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        i = ctx.saved_tensors[0]
        sigmoid_i = torch.sigmoid(i)
        return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))


class MemoryEfficientSwish(nn.Module):
    def forward(self, x):
        return SwishImplementation.apply(x)


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


def round_filters(filters, global_params):
    multiplier = global_params.width_coefficient
    if not multiplier:
        return filters
    divisor = global_params.depth_divisor
    min_depth = global_params.min_depth
    filters *= multiplier
    min_depth = min_depth or divisor
    new_filters = max(min_depth, int(filters + divisor / 2) // divisor * divisor)
    if new_filters < 0.9 * filters:
        new_filters += divisor
    return int(new_filters)


def drop_connect(inputs, p, training):
    assert 0 <= p <= 1, 'p must be in range of [0,1]'
    if not training:
        return inputs
    batch_size = inputs.shape[0]
    keep_prob = 1 - p
    random_tensor = keep_prob
    random_tensor += torch.rand([batch_size, 1, 1, 1], dtype=inputs.dtype, device=inputs.device)
    binary_tensor = torch.floor(random_tensor)
    return inputs / keep_prob * binary_tensor


class Conv2dDynamicSamePadding(nn.Conv2d):
    """2D Convolutions like TensorFlow, for a dynamic image size: padding computed in forward."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, dilation=1, groups=1, bias=True):
        super().__init__(in_channels, out_channels, kernel_size, stride, 0, dilation, groups, bias)
        self.stride = self.stride if len(self.stride) == 2 else [self.stride[0]] * 2

    def forward(self, x):
        ih, iw = x.size()[-2:]
        kh, kw = self.weight.size()[-2:]
        sh, sw = self.stride
        oh, ow = math.ceil(ih / sh), math.ceil(iw / sw)
        pad_h = max((oh - 1) * self.stride[0] + (kh - 1) * self.dilation[0] + 1 - ih, 0)
        pad_w = max((ow - 1) * self.stride[1] + (kw - 1) * self.dilation[1] + 1 - iw, 0)
        if pad_h > 0 or pad_w > 0:
            x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


def get_same_padding_conv2d(image_size=None):
    return partial(Conv2dDynamicSamePadding)


class MBConvBlock(nn.Module):
    def __init__(self, inp, oup, expand_ratio, kernel_size, stride, se_ratio, global_params):
        super().__init__()
        self._bn_mom = 1 - global_params.batch_norm_momentum
        self._bn_eps = global_params.batch_norm_epsilon
        self.has_se = (se_ratio is not None) and (0 < se_ratio <= 1)
        self.id_skip = True
        self.stride = stride
        self.inp, self.oup = inp, oup
        Conv2d = get_same_padding_conv2d(image_size=global_params.image_size)
        self.expand_ratio = expand_ratio
        hid = inp * expand_ratio
        if expand_ratio != 1:
            self._expand_conv = Conv2d(in_channels=inp, out_channels=hid, kernel_size=1, bias=False)
            self._bn0 = nn.BatchNorm2d(num_features=hid, momentum=self._bn_mom, eps=self._bn_eps)
        self._depthwise_conv = Conv2d(in_channels=hid, out_channels=hid, groups=hid, kernel_size=kernel_size,
                                      stride=stride, bias=False)
        self._bn1 = nn.BatchNorm2d(num_features=hid, momentum=self._bn_mom, eps=self._bn_eps)
        if self.has_se:
            num_squeezed_channels = max(1, int(inp * se_ratio))
            self._se_reduce = Conv2d(in_channels=hid, out_channels=num_squeezed_channels, kernel_size=1)
            self._se_expand = Conv2d(in_channels=num_squeezed_channels, out_channels=hid, kernel_size=1)
        self._project_conv = Conv2d(in_channels=hid, out_channels=oup, kernel_size=1, bias=False)
        self._bn2 = nn.BatchNorm2d(num_features=oup, momentum=self._bn_mom, eps=self._bn_eps)
        self._swish = MemoryEfficientSwish()

    def forward(self, inputs, drop_connect_rate=None):
        x = inputs
        if self.expand_ratio != 1:
            x = self._swish(self._bn0(self._expand_conv(inputs)))
        x = self._swish(self._bn1(self._depthwise_conv(x)))
        if self.has_se:
            x_squeezed = F.adaptive_avg_pool2d(x, 1)
            x_squeezed = self._se_expand(self._swish(self._se_reduce(x_squeezed)))
            x = torch.sigmoid(x_squeezed) * x
        x = self._bn2(self._project_conv(x))
        if self.id_skip and self.stride == 1 and self.inp == self.oup:
            if drop_connect_rate:
                x = drop_connect(x, p=drop_connect_rate, training=self.training)
            x = x + inputs
        return x

    def set_swish(self, memory_efficient=True):
        self._swish = MemoryEfficientSwish() if memory_efficient else Swish()


class Model(nn.Module):
    """lukemelas/EfficientNet-PyTorch: GlobalParams namedtuple with __new__.__defaults__, round_filters,
    TF-'SAME' Conv2dDynamicSamePadding computing the pad in forward with math.ceil, MemoryEfficientSwish
    autograd.Function, drop_connect_rate scaled by idx / len(self._blocks)."""

    def __init__(self):
        super().__init__()
        gp = GlobalParams(width_coefficient=0.25, depth_coefficient=1.0, image_size=None, dropout_rate=0.2,
                          num_classes=5, batch_norm_momentum=0.99, batch_norm_epsilon=1e-3,
                          drop_connect_rate=0.2, depth_divisor=4, min_depth=None)
        self._global_params = gp
        Conv2d = get_same_padding_conv2d(image_size=gp.image_size)
        out_channels = round_filters(32, gp)
        self._conv_stem = Conv2d(3, out_channels, kernel_size=3, stride=2, bias=False)
        self._bn0 = nn.BatchNorm2d(out_channels, momentum=1 - gp.batch_norm_momentum, eps=gp.batch_norm_epsilon)
        self._blocks = nn.ModuleList([
            MBConvBlock(out_channels, out_channels, 1, 3, 1, 0.25, gp),
            MBConvBlock(out_channels, round_filters(48, gp), 4, 5, 2, 0.25, gp),
            MBConvBlock(round_filters(48, gp), round_filters(48, gp), 4, 3, 1, 0.25, gp),
        ])
        self._blocks[0].set_swish(memory_efficient=False)
        self._fc = nn.Linear(round_filters(48, gp), gp.num_classes)
        self._dropout = nn.Dropout(gp.dropout_rate)
        self._swish = MemoryEfficientSwish()

    def extract_features(self, inputs):
        x = self._swish(self._bn0(self._conv_stem(inputs)))
        for idx, block in enumerate(self._blocks):
            drop_connect_rate = self._global_params.drop_connect_rate
            if drop_connect_rate:
                drop_connect_rate *= float(idx) / len(self._blocks)
            x = block(x, drop_connect_rate=drop_connect_rate)
        return x

    def forward(self, inputs):
        x = self.extract_features(inputs)
        x = F.adaptive_avg_pool2d(x, 1)
        if self._global_params.include_top is not False:
            x = x.flatten(start_dim=1)
            x = self._dropout(x)
            x = self._fc(x)
        return x


def make_inputs():
    return (torch.randn(2, 3, 15, 13),)
