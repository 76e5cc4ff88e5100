import copy
import inspect
import warnings
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.instancenorm import _InstanceNorm

CONV_LAYERS = {"Conv": nn.Conv2d, "Conv2d": nn.Conv2d, "Conv1d": nn.Conv1d}
NORM_LAYERS = {"BN": nn.BatchNorm2d, "BN2d": nn.BatchNorm2d, "GN": nn.GroupNorm, "LN": nn.LayerNorm, "IN": nn.InstanceNorm2d}
ACTIVATION_LAYERS = {"ReLU": nn.ReLU, "LeakyReLU": nn.LeakyReLU, "GELU": nn.GELU, "Swish": nn.SiLU, "HSigmoid": nn.Hardsigmoid}
PADDING_LAYERS = {"zero": nn.ZeroPad2d, "reflect": nn.ReflectionPad2d, "replicate": nn.ReplicationPad2d}


def infer_abbr(class_type):
    if not inspect.isclass(class_type):
        raise TypeError(f"class_type must be a type, but got {type(class_type)}")
    if hasattr(class_type, "_abbr_"):
        return class_type._abbr_
    if issubclass(class_type, _InstanceNorm):
        return "in"
    elif issubclass(class_type, _BatchNorm):
        return "bn"
    elif issubclass(class_type, nn.GroupNorm):
        return "gn"
    elif issubclass(class_type, nn.LayerNorm):
        return "ln"
    else:
        class_name = class_type.__name__.lower()
        if "batch" in class_name:
            return "bn"
        return "norm_layer"


def build_norm_layer(cfg, num_features, postfix=""):
    if not isinstance(cfg, dict):
        raise TypeError("cfg must be a dict")
    if "type" not in cfg:
        raise KeyError('the cfg dict must contain the key "type"')
    cfg_ = cfg.copy()
    layer_type = cfg_.pop("type")
    if layer_type not in NORM_LAYERS:
        raise KeyError(f"Unrecognized norm type {layer_type}")
    norm_layer = NORM_LAYERS.get(layer_type)
    abbr = infer_abbr(norm_layer)
    assert isinstance(postfix, (int, str))
    name = abbr + str(postfix)
    requires_grad = cfg_.pop("requires_grad", True)
    cfg_.setdefault("eps", 1e-5)
    if layer_type != "GN":
        layer = norm_layer(num_features, **cfg_)
    else:
        assert "num_groups" in cfg_
        layer = norm_layer(num_channels=num_features, **cfg_)
    for param in layer.parameters():
        param.requires_grad = requires_grad
    return name, layer


def build_conv_layer(cfg, *args, **kwargs):
    if cfg is None:
        cfg_ = dict(type="Conv2d")
    else:
        cfg_ = cfg.copy()
    layer_type = cfg_.pop("type")
    conv_layer = CONV_LAYERS.get(layer_type)
    return conv_layer(*args, **kwargs, **cfg_)


def build_activation_layer(cfg):
    cfg_ = cfg.copy()
    return ACTIVATION_LAYERS[cfg_.pop("type")](**cfg_)


def build_padding_layer(cfg, *args, **kwargs):
    cfg_ = cfg.copy()
    return PADDING_LAYERS[cfg_.pop("type")](*args, **kwargs, **cfg_)


class ConvModule(nn.Module):
    """mmcv.cnn.ConvModule: conv/norm/act bundle, order tuple, norm registered under an inferred name."""
    _abbr_ = "conv_block"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias="auto",
                 conv_cfg=None, norm_cfg=None, act_cfg=dict(type="ReLU"), inplace=True, with_spectral_norm=False,
                 padding_mode="zeros", order=("conv", "norm", "act")):
        super().__init__()
        assert conv_cfg is None or isinstance(conv_cfg, dict)
        assert norm_cfg is None or isinstance(norm_cfg, dict)
        assert act_cfg is None or isinstance(act_cfg, dict)
        official_padding_mode = ["zeros", "circular"]
        self.conv_cfg = conv_cfg
        self.norm_cfg = norm_cfg
        self.act_cfg = act_cfg
        self.inplace = inplace
        self.with_explicit_padding = padding_mode not in official_padding_mode
        self.order = order
        assert isinstance(self.order, tuple) and len(self.order) == 3
        assert set(order) == {"conv", "norm", "act"}
        self.with_norm = norm_cfg is not None
        self.with_activation = act_cfg is not None
        if bias == "auto":
            bias = not self.with_norm
        self.with_bias = bias
        if self.with_explicit_padding:
            pad_cfg = dict(type=padding_mode)
            self.padding_layer = build_padding_layer(pad_cfg, padding)
        conv_padding = 0 if self.with_explicit_padding else padding
        self.conv = build_conv_layer(conv_cfg, in_channels, out_channels, kernel_size, stride=stride, padding=conv_padding,
                                     dilation=dilation, groups=groups, bias=bias)
        self.in_channels = self.conv.in_channels
        self.out_channels = self.conv.out_channels
        if self.with_norm:
            if order.index("norm") > order.index("conv"):
                norm_channels = out_channels
            else:
                norm_channels = in_channels
            self.norm_name, norm = build_norm_layer(norm_cfg, norm_channels)
            self.add_module(self.norm_name, norm)
            if self.with_bias:
                if isinstance(norm, (_BatchNorm, _InstanceNorm)):
                    warnings.warn("Unnecessary conv bias before batch/instance norm")
        else:
            self.norm_name = None
        if self.with_activation:
            act_cfg_ = act_cfg.copy()
            if act_cfg_["type"] not in ["Tanh", "PReLU", "Sigmoid", "HSigmoid", "Swish", "GELU"]:
                act_cfg_.setdefault("inplace", inplace)
            self.activate = build_activation_layer(act_cfg_)

    @property
    def norm(self):
        if self.norm_name:
            return getattr(self, self.norm_name)
        else:
            return None

    def forward(self, x, activate=True, norm=True):
        for layer in self.order:
            if layer == "conv":
                if self.with_explicit_padding:
                    x = self.padding_layer(x)
                x = self.conv(x)
            elif layer == "norm" and norm and self.with_norm:
                x = self.norm(x)
            elif layer == "act" and activate and self.with_activation:
                x = self.activate(x)
        return x


class Model(nn.Module):
    """An mmseg-style decode path built entirely from ConvModule configs (BN/GN/IN norms, pre-act order, reflect pad)."""

    def __init__(self, channels=16, num_classes=4, norm_cfg=dict(type="BN", requires_grad=True),
                 act_cfg=dict(type="ReLU"), align_corners=False):
        super().__init__()
        self.align_corners = align_corners
        self.stem = ConvModule(3, channels, 3, stride=2, padding=1, norm_cfg=norm_cfg, act_cfg=act_cfg)
        self.gn_block = ConvModule(channels, channels, 3, padding=1, norm_cfg=dict(type="GN", num_groups=4),
                                   act_cfg=dict(type="LeakyReLU", negative_slope=0.2))
        self.preact = ConvModule(channels, channels, 3, padding=1, padding_mode="reflect", norm_cfg=dict(type="IN", affine=True),
                                 act_cfg=dict(type="Swish"), order=("norm", "act", "conv"))
        self.bottleneck = ConvModule(channels * 3, channels, 1, norm_cfg=norm_cfg, act_cfg=None)
        self.conv_seg = nn.Conv2d(channels, num_classes, kernel_size=1)

    def forward(self, img):
        x0 = self.stem(img)
        x1 = self.gn_block(x0)
        x2 = self.preact(x1, activate=True)
        x3 = self.gn_block(x2, norm=False)
        feat = self.bottleneck(torch.cat([x1, x2, x3], dim=1))
        out = self.conv_seg(feat)
        out = F.interpolate(out, size=img.shape[2:], mode="bilinear", align_corners=self.align_corners)
        return out


def make_inputs():
    return (torch.randn(2, 3, 16, 16),)
