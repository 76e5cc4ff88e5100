import functools
from collections import OrderedDict

import torch
import torch.nn as nn


def conv_bn(inp, oup, stride, norm_layer, act_layer):
    return nn.Sequential(OrderedDict([
        ("conv", nn.Conv2d(inp, oup, 3, stride, 1, bias=False)),
        ("bn", norm_layer(oup)),
        ("act", act_layer(inplace=True)),
    ]))


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
        super(InvertedResidual, self).__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self.stride = stride
        assert stride in [1, 2]
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(nn.Sequential(nn.Conv2d(inp, hidden_dim, 1, bias=False), norm_layer(hidden_dim), nn.ReLU6(inplace=True)))
        layers.extend([
            nn.Conv2d(hidden_dim, hidden_dim, 3, stride, 1, groups=hidden_dim, bias=False),
            norm_layer(hidden_dim),
            nn.ReLU6(inplace=True),
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            norm_layer(oup),
        ])
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        else:
            return self.conv(x)


class Model(nn.Module):
    """MobileNetV2-ish net with norm_layer = functools.partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01),
    OrderedDict Sequentials, _make_divisible and an inverted_residual_setting table walked in __init__."""

    def __init__(self, num_classes=5, width_mult=0.5):
        super(Model, self).__init__()
        norm_layer = functools.partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01)
        act_layer = nn.ReLU6
        input_channel = self._make_divisible(16 * width_mult, 4)
        inverted_residual_setting = [
            # t, c, n, s
            [1, 8, 1, 1],
            [4, 12, 2, 2],
        ]
        features = [conv_bn(3, input_channel, 2, norm_layer, act_layer)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = self._make_divisible(c * width_mult, 4)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(InvertedResidual(input_channel, output_channel, stride, expand_ratio=t, norm_layer=norm_layer))
                input_channel = output_channel
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(OrderedDict([("dropout", nn.Dropout(0.2)), ("fc", nn.Linear(input_channel, num_classes))]))

    @staticmethod
    def _make_divisible(v, divisor, min_value=None):
        if min_value is None:
            min_value = divisor
        new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
        if new_v < 0.9 * v:
            new_v += divisor
        return new_v

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1)).reshape(x.shape[0], -1)
        return self.classifier.fc(self.classifier.dropout(x))


def make_inputs():
    return (torch.randn(2, 3, 16, 16),)
