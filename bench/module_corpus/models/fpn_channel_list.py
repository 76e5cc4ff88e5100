from typing import List
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Feature pyramid network over a tiny backbone; channel sizes kept as python lists on self."""

    def __init__(self, in_channels_list: List[int] = [4, 8, 16], out_channels: int = 8, strides=(1, 2, 2)):
        super().__init__()
        self.in_channels_list = list(in_channels_list)
        self.out_channels = out_channels
        self.strides = list(strides)
        self.backbone = nn.ModuleList()
        prev = 3
        for c, s in zip(self.in_channels_list, self.strides):
            self.backbone.append(nn.Sequential(nn.Conv2d(prev, c, 3, stride=s, padding=1), nn.BatchNorm2d(c), nn.ReLU()))
            prev = c
        self.inner_blocks = nn.ModuleList([nn.Conv2d(c, out_channels, 1) for c in self.in_channels_list])
        self.layer_blocks = nn.ModuleList([nn.Conv2d(out_channels, out_channels, 3, padding=1) for _ in self.in_channels_list])
        self.feature_names = [f"p{i + 2}" for i in range(len(self.in_channels_list))]

    def forward(self, x):
        feats = []
        for stage in self.backbone:
            x = stage(x)
            feats.append(x)
        last_inner = self.inner_blocks[-1](feats[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for idx in range(len(feats) - 2, -1, -1):
            inner_lateral = self.inner_blocks[idx](feats[idx])
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.layer_blocks[idx](last_inner))
        results.append(F.max_pool2d(results[-1], 1, 2, 0))
        names = self.feature_names + ["pool"]
        return dict(zip(names, results))


def make_inputs():
    return (torch.randn(2, 3, 11, 13),)
