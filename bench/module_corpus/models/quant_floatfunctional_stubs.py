import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.ao.quantization import QuantStub, DeQuantStub
from torch.ao.nn.quantized import FloatFunctional


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNReLU(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1, act=True):
        padding = (kernel_size - 1) // 2
        layers = [nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, groups=groups, bias=False),
                  nn.BatchNorm2d(out_planes, momentum=0.1)]
        if act:
            layers.append(nn.ReLU(inplace=False))
        super(ConvBNReLU, self).__init__(*layers)


class QuantizableInvertedResidual(nn.Module):
    """torchvision.models.quantization.mobilenetv2: residual add through FloatFunctional.add so it can be
    swapped for a quantized add after convert()."""

    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        self.stride = stride
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1))
        layers.extend([ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
                       nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)])
        self.conv = nn.Sequential(*layers)
        self.skip_add = nn.quantized.FloatFunctional()

    def forward(self, x):
        if self.use_res_connect:
            return self.skip_add.add(x, self.conv(x))
        else:
            return self.conv(x)


class QuantizableSqueezeExcitation(nn.Module):
    def __init__(self, input_channels, squeeze_factor=4):
        super().__init__()
        squeeze_channels = _make_divisible(input_channels // squeeze_factor, 8)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.relu = nn.ReLU()
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.hsig = nn.Hardsigmoid()
        self.skip_mul = FloatFunctional()

    def _scale(self, input):
        scale = F.adaptive_avg_pool2d(input, 1)
        scale = self.fc2(self.relu(self.fc1(scale)))
        return self.hsig(scale)

    def forward(self, input):
        return self.skip_mul.mul(self._scale(input), input)


class QuantizableBasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.add_relu = FloatFunctional()

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out = self.add_relu.add_relu(out, identity)
        return out


class Model(nn.Module):
    """Eager-mode-quantization-ready network (before prepare/convert): QuantStub/DeQuantStub at the ends,
    FloatFunctional add / add_relu / mul / cat / add_scalar / mul_scalar in place of python operators."""

    def __init__(self, num_classes=5):
        super().__init__()
        self.quant = QuantStub()
        self.dequant = DeQuantStub()
        self.stem = ConvBNReLU(3, 8, stride=2)
        self.ir1 = QuantizableInvertedResidual(8, 8, 1, 2)
        self.ir2 = QuantizableInvertedResidual(8, 12, 2, 2)
        self.se = QuantizableSqueezeExcitation(12)
        self.block = QuantizableBasicBlock(12, 12)
        self.block_ds = QuantizableBasicBlock(12, 16, 2, downsample=nn.Sequential(nn.Conv2d(12, 16, 1, 2, bias=False),
                                                                                    nn.BatchNorm2d(16)))
        self.cat = FloatFunctional()
        self.scalar_ops = FloatFunctional()
        self.fc = nn.Linear(16 + 12, num_classes)

    def forward(self, x):
        x = self.quant(x)
        x = self.stem(x)
        x = self.ir2(self.ir1(x))
        x = self.se(x)
        x = self.block(x)
        y = self.block_ds(x)
        pooled = self.cat.cat([F.adaptive_avg_pool2d(y, 1).flatten(1), F.adaptive_avg_pool2d(x, 1).flatten(1)], dim=1)
        pooled = self.scalar_ops.add_scalar(self.scalar_ops.mul_scalar(pooled, 0.5), 0.1)
        out = self.fc(pooled)
        return self.dequant(out)

    def fuse_model(self, is_qat=None):
        for m in self.modules():
            if type(m) is ConvBNReLU:
                torch.ao.quantization.fuse_modules(m, ["0", "1", "2"] if len(m) == 3 else ["0", "1"], inplace=True)


def make_inputs():
    return (torch.randn(2, 3, 16, 16),)
