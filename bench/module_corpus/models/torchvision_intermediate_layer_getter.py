from collections import OrderedDict
from typing import Callable, Dict, List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class IntermediateLayerGetter(nn.ModuleDict):
    """torchvision IntermediateLayerGetter: keeps children up to the last requested layer, iterates
    self.items() in forward and returns an OrderedDict keyed by the user's names."""

    _version = 2
    __annotations__ = {"return_layers": Dict[str, str]}

    def __init__(self, model: nn.Module, return_layers: Dict[str, str]) -> None:
        if not set(return_layers).issubset([name for name, _ in model.named_children()]):
            raise ValueError("return_layers are not present in model")
        orig_return_layers = return_layers
        return_layers = {str(k): str(v) for k, v in return_layers.items()}
        layers = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            if name in return_layers:
                del return_layers[name]
            if not return_layers:
                break
        super().__init__(layers)
        self.return_layers = orig_return_layers

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out_name = self.return_layers[name]
                out[out_name] = x
        return out


class FeaturePyramidNetwork(nn.Module):
    def __init__(self, in_channels_list: List[int], out_channels: int, extra_blocks: Optional[Callable] = None):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            if in_channels == 0:
                raise ValueError("in_channels=0 is currently not supported")
            self.inner_blocks.append(nn.Conv2d(in_channels, out_channels, 1))
            self.layer_blocks.append(nn.Conv2d(out_channels, out_channels, 3, padding=1))
        self.extra_blocks = extra_blocks

    def get_result_from_inner_blocks(self, x: Tensor, idx: int) -> Tensor:
        num_blocks = len(self.inner_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.inner_blocks):
            if i == idx:
                out = module(x)
        return out

    def get_result_from_layer_blocks(self, x: Tensor, idx: int) -> Tensor:
        num_blocks = len(self.layer_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.layer_blocks):
            if i == idx:
                out = module(x)
        return out

    def forward(self, x: Dict[str, Tensor]) -> Dict[str, Tensor]:
        names = list(x.keys())
        x = list(x.values())
        last_inner = self.get_result_from_inner_blocks(x[-1], -1)
        results = []
        results.append(self.get_result_from_layer_blocks(last_inner, -1))
        for idx in range(len(x) - 2, -1, -1):
            inner_lateral = self.get_result_from_inner_blocks(x[idx], idx)
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))
        if self.extra_blocks is not None:
            results, names = self.extra_blocks(results, x, names)
        return OrderedDict([(k, v) for k, v in zip(names, results)])


def last_level_max_pool(results, x, names):
    names.append("pool")
    results.append(F.max_pool2d(results[-1], 1, 2, 0))
    return results, names


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        body = nn.Sequential(OrderedDict([
            ("conv1", nn.Conv2d(3, 8, 3, 2, 1)), ("relu", nn.ReLU()),
            ("layer1", nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1), nn.ReLU())),
            ("layer2", nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU())),
            ("layer3", nn.Sequential(nn.Conv2d(16, 24, 3, 2, 1), nn.ReLU())),
            ("layer4", nn.Sequential(nn.Conv2d(24, 32, 3, 2, 1), nn.ReLU())),
            ("avgpool", nn.AdaptiveAvgPool2d(1)), ("fc", nn.Flatten())]))
        self.body = IntermediateLayerGetter(body, return_layers={"layer1": "0", "layer2": "1", "layer3": "2"})
        self.fpn = FeaturePyramidNetwork([8, 16, 24], 8, extra_blocks=last_level_max_pool)
        self.out_channels = 8

    def forward(self, x):
        x = self.body(x)
        return self.fpn(x)


def make_inputs():
    return (torch.randn(1, 3, 32, 32),)
