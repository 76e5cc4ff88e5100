import importlib
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F


def number_of_features_per_level(init_channel_number, num_levels):
    return [init_channel_number * 2 ** k for k in range(num_levels)]


def create_conv(in_channels, out_channels, kernel_size, order, num_groups, padding):
    """wolny/pytorch-3dunet: build a conv block from an order string like 'gcr' (GroupNorm, Conv, ReLU)."""
    assert "c" in order, "Conv layer MUST be present"
    assert order[0] not in "rle", "Non-linearity cannot be the first operation in the layer"
    modules = []
    for i, char in enumerate(order):
        if char == "r":
            modules.append(("ReLU", nn.ReLU(inplace=True)))
        elif char == "l":
            modules.append(("LeakyReLU", nn.LeakyReLU(inplace=True)))
        elif char == "e":
            modules.append(("ELU", nn.ELU(inplace=True)))
        elif char == "c":
            bias = not ("g" in order or "b" in order)
            modules.append(("conv", nn.Conv3d(in_channels, out_channels, kernel_size, padding=padding, bias=bias)))
        elif char == "g":
            is_before_conv = i < order.index("c")
            num_channels = in_channels if is_before_conv else out_channels
            if num_channels < num_groups:
                num_groups = 1
            assert num_channels % num_groups == 0, f"Expected number of channels in input to be divisible by num_groups"
            modules.append(("groupnorm", nn.GroupNorm(num_groups=num_groups, num_channels=num_channels)))
        elif char == "b":
            is_before_conv = i < order.index("c")
            modules.append(("batchnorm", nn.BatchNorm3d(in_channels if is_before_conv else out_channels)))
        else:
            raise ValueError(f"Unsupported layer type '{char}'. MUST be one of ['b', 'g', 'r', 'l', 'e', 'c']")
    return modules


class SingleConv(nn.Sequential):
    def __init__(self, in_channels, out_channels, kernel_size=3, order="gcr", num_groups=4, padding=1):
        super().__init__()
        for name, module in create_conv(in_channels, out_channels, kernel_size, order, num_groups, padding):
            self.add_module(name, module)


class DoubleConv(nn.Sequential):
    def __init__(self, in_channels, out_channels, encoder, kernel_size=3, order="gcr", num_groups=4, padding=1):
        super().__init__()
        if encoder:
            conv1_in_channels = in_channels
            conv1_out_channels = out_channels // 2
            if conv1_out_channels < in_channels:
                conv1_out_channels = in_channels
            conv2_in_channels, conv2_out_channels = conv1_out_channels, out_channels
        else:
            conv1_in_channels, conv1_out_channels = in_channels, out_channels
            conv2_in_channels, conv2_out_channels = out_channels, out_channels
        self.add_module("SingleConv1", SingleConv(conv1_in_channels, conv1_out_channels, kernel_size, order, num_groups, padding))
        self.add_module("SingleConv2", SingleConv(conv2_in_channels, conv2_out_channels, kernel_size, order, num_groups, padding))


class Encoder(nn.Module):
    def __init__(self, in_channels, out_channels, apply_pooling=True, pool_kernel_size=2, pool_type="max", **kw):
        super().__init__()
        assert pool_type in ["max", "avg"]
        if apply_pooling:
            self.pooling = nn.MaxPool3d(kernel_size=pool_kernel_size) if pool_type == "max" else nn.AvgPool3d(pool_kernel_size)
        else:
            self.pooling = None
        self.basic_module = DoubleConv(in_channels, out_channels, encoder=True, **kw)

    def forward(self, x):
        if self.pooling is not None:
            x = self.pooling(x)
        return self.basic_module(x)


class InterpolateUpsampling(nn.Module):
    def __init__(self, mode="nearest"):
        super().__init__()
        self.upsample = partial(self._interpolate, mode=mode)

    def forward(self, encoder_features, x):
        output_size = encoder_features.size()[2:]
        return self.upsample(x, output_size)

    @staticmethod
    def _interpolate(x, size, mode):
        return F.interpolate(x, size=size, mode=mode)


class Decoder(nn.Module):
    def __init__(self, in_channels, out_channels, **kw):
        super().__init__()
        self.upsampling = InterpolateUpsampling()
        self.joining = partial(self._joining, concat=True)
        self.basic_module = DoubleConv(in_channels, out_channels, encoder=False, **kw)

    def forward(self, encoder_features, x):
        x = self.upsampling(encoder_features=encoder_features, x=x)
        x = self.joining(encoder_features, x)
        return self.basic_module(x)

    @staticmethod
    def _joining(encoder_features, x, concat):
        return torch.cat((encoder_features, x), dim=1) if concat else encoder_features + x


class Model(nn.Module):
    def __init__(self, in_channels=1, out_channels=2, f_maps=4, num_levels=3, final_sigmoid=False, is_segmentation=True):
        super().__init__()
        if isinstance(f_maps, int):
            f_maps = number_of_features_per_level(f_maps, num_levels=num_levels)
        assert isinstance(f_maps, (list, tuple))
        assert len(f_maps) > 1, "Required at least 2 levels in the U-Net"
        encoders = []
        for i, out_feature_num in enumerate(f_maps):
            if i == 0:
                encoders.append(Encoder(in_channels, out_feature_num, apply_pooling=False))
            else:
                encoders.append(Encoder(f_maps[i - 1], out_feature_num))
        self.encoders = nn.ModuleList(encoders)
        decoders = []
        reversed_f_maps = list(reversed(f_maps))
        for i in range(len(reversed_f_maps) - 1):
            decoders.append(Decoder(reversed_f_maps[i] + reversed_f_maps[i + 1], reversed_f_maps[i + 1]))
        self.decoders = nn.ModuleList(decoders)
        self.final_conv = nn.Conv3d(f_maps[0], out_channels, 1)
        self.testing = True
        if is_segmentation:
            self.final_activation = nn.Sigmoid() if final_sigmoid else nn.Softmax(dim=1)
        else:
            self.final_activation = None

    def forward(self, x):
        encoders_features = []
        for encoder in self.encoders:
            x = encoder(x)
            encoders_features.insert(0, x)
        encoders_features = encoders_features[1:]
        for decoder, encoder_features in zip(self.decoders, encoders_features):
            x = decoder(encoder_features, x)
        x = self.final_conv(x)
        if self.testing and self.final_activation is not None:
            x = self.final_activation(x)
        return x


def make_inputs():
    return (torch.randn(1, 1, 8, 8, 8),)
