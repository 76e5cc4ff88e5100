import functools
import inspect
import math
from collections import namedtuple
from dataclasses import dataclass
from typing import Dict, List, Optional
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ShapeSpec:
    channels: Optional[int] = None
    height: Optional[int] = None
    width: Optional[int] = None
    stride: Optional[int] = None


class CfgNode(dict):
    def __getattr__(self, name):
        if name in self:
            return self[name]
        raise AttributeError(name)

    def __setattr__(self, name, value):
        self[name] = value


def _called_with_cfg(*args, **kwargs):
    if len(args) and isinstance(args[0], CfgNode):
        return True
    if isinstance(kwargs.pop("cfg", None), CfgNode):
        return True
    return False


def _get_args_from_config(from_config_func, *args, **kwargs):
    signature = inspect.signature(from_config_func)
    if list(signature.parameters.keys())[0] != "cfg":
        raise TypeError(f"{from_config_func.__self__}.from_config must take 'cfg' as the first argument!")
    support_var_arg = any(param.kind in [param.VAR_POSITIONAL, param.VAR_KEYWORD] for param in signature.parameters.values())
    if support_var_arg:
        ret = from_config_func(*args, **kwargs)
    else:
        supported_arg_names = set(signature.parameters.keys())
        extra_kwargs = {}
        for name in list(kwargs.keys()):
            if name not in supported_arg_names:
                extra_kwargs[name] = kwargs.pop(name)
        ret = from_config_func(*args, **kwargs)
        ret.update(extra_kwargs)
    return ret


def configurable(init_func=None, *, from_config=None):
    """detectron2.config.configurable: __init__ can be called with explicit args or with a cfg."""
    if init_func is not None:
        assert inspect.isfunction(init_func) and from_config is None and init_func.__name__ == "__init__"

        @functools.wraps(init_func)
        def wrapped(self, *args, **kwargs):
            try:
                from_config_func = type(self).from_config
            except AttributeError as e:
                raise AttributeError("Class with @configurable must have a 'from_config' classmethod.") from e
            if not inspect.ismethod(from_config_func):
                raise TypeError("Class with @configurable must have a 'from_config' classmethod.")
            if _called_with_cfg(*args, **kwargs):
                explicit_args = _get_args_from_config(from_config_func, *args, **kwargs)
                init_func(self, **explicit_args)
            else:
                init_func(self, *args, **kwargs)

        return wrapped
    raise NotImplementedError


def get_norm(norm, out_channels):
    if norm is None:
        return None
    if isinstance(norm, str):
        if len(norm) == 0:
            return None
        norm = {"BN": nn.BatchNorm2d, "GN": lambda channels: nn.GroupNorm(4, channels), "": None}[norm]
    return norm(out_channels)


class Conv2d(nn.Conv2d):
    """detectron2.layers.Conv2d: a conv with optional norm and activation stored as attributes."""

    def __init__(self, *args, **kwargs):
        norm = kwargs.pop("norm", None)
        activation = kwargs.pop("activation", None)
        super().__init__(*args, **kwargs)
        self.norm = norm
        self.activation = activation

    def forward(self, x):
        x = F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        if self.norm is not None:
            x = self.norm(x)
        if self.activation is not None:
            x = self.activation(x)
        return x


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()

    @property
    def size_divisibility(self) -> int:
        return 0

    def output_shape(self):
        return {name: ShapeSpec(channels=self._out_feature_channels[name], stride=self._out_feature_strides[name])
                for name in self._out_features}


class TinyResNet(Backbone):
    def __init__(self, out_features=("res2", "res3", "res4")):
        super().__init__()
        self.stem = Conv2d(3, 8, 3, 2, 1, bias=False, norm=get_norm("BN", 8), activation=F.relu_)
        chans = {"res2": 8, "res3": 16, "res4": 16}
        self._out_feature_strides = {"stem": 2}
        self._out_feature_channels = {"stem": 8}
        self.stage_names, self.stages = [], []
        in_ch, stride = 8, 2
        for name in ["res2", "res3", "res4"]:
            stage = Conv2d(in_ch, chans[name], 3, 2, 1, bias=False, norm=get_norm("GN", chans[name]), activation=F.relu)
            self.add_module(name, stage)
            self.stage_names.append(name)
            self.stages.append(stage)
            stride *= 2
            self._out_feature_strides[name] = stride
            self._out_feature_channels[name] = chans[name]
            in_ch = chans[name]
        self._out_features = list(out_features)

    def forward(self, x):
        outputs = {}
        x = self.stem(x)
        if "stem" in self._out_features:
            outputs["stem"] = x
        for name, stage in zip(self.stage_names, self.stages):
            x = stage(x)
            if name in self._out_features:
                outputs[name] = x
        return outputs


def _assert_strides_are_log2_contiguous(strides):
    for i, stride in enumerate(strides[1:], 1):
        assert stride == 2 * strides[i - 1], "Strides {} {} are not log2 contiguous".format(stride, strides[i - 1])


class FPN(Backbone):
    _fuse_type: str

    @configurable
    def __init__(self, bottom_up, in_features, out_channels, norm="", top_block=None, fuse_type="sum"):
        super(FPN, self).__init__()
        assert isinstance(bottom_up, Backbone)
        assert in_features, in_features
        input_shapes = bottom_up.output_shape()
        strides = [input_shapes[f].stride for f in in_features]
        in_channels_per_feature = [input_shapes[f].channels for f in in_features]
        _assert_strides_are_log2_contiguous(strides)
        lateral_convs, output_convs = [], []
        use_bias = norm == ""
        for idx, in_channels in enumerate(in_channels_per_feature):
            lateral_norm = get_norm(norm, out_channels)
            output_norm = get_norm(norm, out_channels)
            lateral_conv = Conv2d(in_channels, out_channels, kernel_size=1, bias=use_bias, norm=lateral_norm)
            output_conv = Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1, bias=use_bias, norm=output_norm)
            stage = int(math.log2(strides[idx]))
            self.add_module("fpn_lateral{}".format(stage), lateral_conv)
            self.add_module("fpn_output{}".format(stage), output_conv)
            lateral_convs.append(lateral_conv)
            output_convs.append(output_conv)
        self.lateral_convs = lateral_convs[::-1]
        self.output_convs = output_convs[::-1]
        self.top_block = top_block
        self.in_features = tuple(in_features)
        self.bottom_up = bottom_up
        self._out_feature_strides = {"p{}".format(int(math.log2(s))): s for s in strides}
        if self.top_block is not None:
            for s in range(stage, stage + self.top_block.num_levels):
                self._out_feature_strides["p{}".format(s + 1)] = 2 ** (s + 1)
        self._out_features = list(self._out_feature_strides.keys())
        self._out_feature_channels = {k: out_channels for k in self._out_features}
        self._size_divisibility = strides[-1]
        assert fuse_type in {"avg", "sum"}
        self._fuse_type = fuse_type

    @classmethod
    def from_config(cls, cfg, bottom_up):
        return {"bottom_up": bottom_up, "in_features": cfg.MODEL.FPN.IN_FEATURES, "out_channels": cfg.MODEL.FPN.OUT_CHANNELS,
                "norm": cfg.MODEL.FPN.NORM, "top_block": LastLevelMaxPool(), "fuse_type": cfg.MODEL.FPN.FUSE_TYPE}

    @property
    def size_divisibility(self):
        return self._size_divisibility

    def forward(self, x):
        bottom_up_features = self.bottom_up(x)
        results = []
        prev_features = self.lateral_convs[0](bottom_up_features[self.in_features[-1]])
        results.append(self.output_convs[0](prev_features))
        for idx, (lateral_conv, output_conv) in enumerate(zip(self.lateral_convs, self.output_convs)):
            if idx > 0:
                features = self.in_features[-idx - 1]
                features = bottom_up_features[features]
                top_down_features = F.interpolate(prev_features, scale_factor=2.0, mode="nearest")
                lateral_features = lateral_conv(features)
                prev_features = lateral_features + top_down_features
                if self._fuse_type == "avg":
                    prev_features /= 2
                results.insert(0, output_conv(prev_features))
        if self.top_block is not None:
            if self.top_block.in_feature in bottom_up_features:
                top_block_in_feature = bottom_up_features[self.top_block.in_feature]
            else:
                top_block_in_feature = results[self._out_features.index(self.top_block.in_feature)]
            results.extend(self.top_block(top_block_in_feature))
        assert len(self._out_features) == len(results)
        return {f: res for f, res in zip(self._out_features, results)}


class LastLevelMaxPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_levels = 1
        self.in_feature = "p4"

    def forward(self, x):
        return [F.max_pool2d(x, kernel_size=1, stride=2, padding=0)]


class Model(nn.Module):
    """detectron2: @configurable FPN built from a CfgNode, ShapeSpec dataclasses, size_divisibility padding."""

    def __init__(self):
        super().__init__()
        cfg = CfgNode(MODEL=CfgNode(FPN=CfgNode(IN_FEATURES=["res2", "res3", "res4"], OUT_CHANNELS=8, NORM="", FUSE_TYPE="avg")))
        self.backbone = FPN(cfg, bottom_up=TinyResNet())
        self.register_buffer("pixel_mean", torch.tensor([0.4, 0.45, 0.5]).view(-1, 1, 1), False)
        self.register_buffer("pixel_std", torch.tensor([0.2, 0.2, 0.2]).view(-1, 1, 1), False)
        shapes = self.backbone.output_shape()
        self.heads = nn.ModuleDict({k: nn.Conv2d(v.channels, 2, 1) for k, v in shapes.items()})

    def forward(self, images):
        images = [(x - self.pixel_mean) / self.pixel_std for x in images]
        div = self.backbone.size_divisibility
        max_size = torch.tensor([max(s) for s in zip(*[img.shape[-2:] for img in images])])
        if div > 1:
            max_size = (max_size + (div - 1)).div(div, rounding_mode="floor") * div
        batched = images[0].new_full((len(images), 3) + tuple(max_size.tolist()), 0.0)
        for img, pad_img in zip(images, batched):
            pad_img[..., : img.shape[-2], : img.shape[-1]].copy_(img)
        features = self.backbone(batched)
        return {k: self.heads[k](v) for k, v in features.items()}


def make_inputs():
    return ([torch.rand(3, 30, 28), torch.rand(3, 24, 32)],)
