import collections.abc
import functools
import types
from functools import partial
from itertools import repeat
from typing import Callable, Optional, Type, Union
import torch
import torch.nn as nn
import torch.nn.functional as F


def _ntuple(n):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))
    return parse


to_2tuple = _ntuple(2)

_has_silu = "silu" in dir(torch.nn.functional)
_has_hardswish = "hardswish" in dir(torch.nn.functional)
_has_hardsigmoid = "hardsigmoid" in dir(torch.nn.functional)
_has_mish = "mish" in dir(torch.nn.functional)

_EXPORTABLE = False
_SCRIPTABLE = False


def is_exportable():
    return _EXPORTABLE


def is_scriptable():
    return _SCRIPTABLE


def swish(x, inplace: bool = False):
    return x.mul_(x.sigmoid()) if inplace else x.mul(x.sigmoid())


def hard_sigmoid(x, inplace: bool = False):
    if inplace:
        return x.add_(3.).clamp_(0., 6.).div_(6.)
    else:
        return F.relu6(x + 3.) / 6.


class GELUTanh(nn.Module):
    def __init__(self, inplace: bool = False):
        super(GELUTanh, self).__init__()

    def forward(self, input):
        return F.gelu(input, approximate="tanh")


class QuickGELU(nn.Module):
    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, input):
        return input * torch.sigmoid(1.702 * input)


_ACT_DEFAULT = dict(
    silu=F.silu if _has_silu else swish,
    swish=F.silu if _has_silu else swish,
    relu=F.relu,
    relu6=F.relu6,
    gelu=F.gelu,
    hard_sigmoid=F.hardsigmoid if _has_hardsigmoid else hard_sigmoid,
)

_ACT_LAYER_DEFAULT = dict(
    silu=nn.SiLU if _has_silu else None,
    swish=nn.SiLU if _has_silu else None,
    mish=nn.Mish if _has_mish else None,
    relu=nn.ReLU,
    relu6=nn.ReLU6,
    leaky_relu=nn.LeakyReLU,
    elu=nn.ELU,
    prelu=nn.PReLU,
    celu=nn.CELU,
    selu=nn.SELU,
    gelu=nn.GELU,
    gelu_tanh=GELUTanh,
    quick_gelu=QuickGELU,
    sigmoid=nn.Sigmoid,
    tanh=nn.Tanh,
    hard_sigmoid=nn.Hardsigmoid if _has_hardsigmoid else None,
    hard_swish=nn.Hardswish if _has_hardswish else None,
    identity=nn.Identity,
)


def get_act_fn(name: Union[Callable, str] = "relu"):
    if not name:
        return None
    if isinstance(name, Callable):
        return name
    name = name.lower()
    return _ACT_DEFAULT[name]


def get_act_layer(name: Union[Type[nn.Module], str] = "relu"):
    if name is None:
        return None
    if not isinstance(name, str):
        return name
    if not name:
        return None
    name = name.lower()
    return _ACT_LAYER_DEFAULT[name]


def create_act_layer(name: Union[Type[nn.Module], str], inplace=None, **kwargs):
    act_layer = get_act_layer(name)
    if act_layer is None:
        return None
    if inplace is None:
        return act_layer(**kwargs)
    try:
        return act_layer(inplace=inplace, **kwargs)
    except TypeError:
        return act_layer(**kwargs)


class GroupNorm1(nn.GroupNorm):
    def __init__(self, num_channels, **kwargs):
        super().__init__(1, num_channels, **kwargs)


class LayerNorm2d(nn.LayerNorm):
    def __init__(self, num_channels, eps=1e-6, affine=True):
        super().__init__(num_channels, eps=eps, elementwise_affine=affine)

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        x = x.permute(0, 3, 1, 2)
        return x


_NORM_MAP = dict(batchnorm=nn.BatchNorm2d, batchnorm2d=nn.BatchNorm2d, groupnorm=nn.GroupNorm, groupnorm1=GroupNorm1,
                 layernorm=nn.LayerNorm, layernorm2d=LayerNorm2d)
_NORM_TYPES = {m for n, m in _NORM_MAP.items()}


def get_norm_layer(norm_layer):
    if norm_layer is None:
        return None
    assert isinstance(norm_layer, (type, str, types.FunctionType, functools.partial))
    norm_kwargs = {}
    if isinstance(norm_layer, functools.partial):
        norm_kwargs.update(norm_layer.keywords)
        norm_layer = norm_layer.func
    if isinstance(norm_layer, str):
        if not norm_layer:
            return None
        layer_name = norm_layer.replace("_", "").lower()
        norm_layer = _NORM_MAP[layer_name]
    else:
        norm_layer = norm_layer
    if norm_kwargs:
        norm_layer = partial(norm_layer, **norm_kwargs)
    return norm_layer


def drop_path(x, drop_prob: float = 0., training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0., scale_by_keep: bool = True):
        super(DropPath, self).__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self):
        return f"drop_prob={round(self.drop_prob, 3):0.3f}"


class SqueezeExcite(nn.Module):
    def __init__(self, in_chs, rd_ratio=0.25, act_layer="relu", gate_layer="hard_sigmoid", force_act_layer=None):
        super().__init__()
        rd_channels = max(1, int(in_chs * rd_ratio))
        act_layer = force_act_layer or act_layer
        self.conv_reduce = nn.Conv2d(in_chs, rd_channels, 1, bias=True)
        self.act1 = create_act_layer(act_layer, inplace=True)
        self.conv_expand = nn.Conv2d(rd_channels, in_chs, 1, bias=True)
        self.gate = create_act_layer(gate_layer)

    def forward(self, x):
        x_se = x.mean((2, 3), keepdim=True)
        x_se = self.conv_reduce(x_se)
        x_se = self.act1(x_se)
        x_se = self.conv_expand(x_se)
        return x * self.gate(x_se)


class ConvNormAct(nn.Module):
    def __init__(self, in_chs, out_chs, kernel_size=1, stride=1, norm_layer="batchnorm2d", act_layer="relu", apply_act=True):
        super().__init__()
        kernel_size = to_2tuple(kernel_size)
        padding = tuple(((stride - 1) + (k - 1)) // 2 for k in kernel_size)
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, stride, padding, bias=False)
        norm_act_layer = get_norm_layer(norm_layer)
        self.bn = norm_act_layer(out_chs)
        self.act = create_act_layer(act_layer, inplace=True) if apply_act else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Block(nn.Module):
    def __init__(self, chs, act_layer, norm_layer, se_layer=None, drop_path_rate=0.):
        super().__init__()
        self.conv_dw = ConvNormAct(chs, chs, 3, norm_layer=norm_layer, act_layer=act_layer)
        self.se = se_layer(chs) if se_layer is not None else nn.Identity()
        self.conv_pw = ConvNormAct(chs, chs, 1, norm_layer=norm_layer, apply_act=False)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate > 0. else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.conv_pw(self.se(self.conv_dw(x)))
        return self.drop_path(x) + shortcut


class Model(nn.Module):
    """timm layers: string act/norm factories (create_act_layer, get_norm_layer with partial), to_2tuple via
    itertools.repeat, _has_* feature flags from dir(F), drop_path, SE with a gate factory, partial se_layer."""

    def __init__(self, chs=8, num_classes=5, act_layer="swish", drop_path_rate=0.1):
        super().__init__()
        self.stem = ConvNormAct(3, chs, 3, 2, norm_layer=partial(nn.BatchNorm2d, eps=1e-3), act_layer=act_layer)
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, 3)]
        norms = ["batchnorm2d", "group_norm1", LayerNorm2d]
        acts = ["gelu_tanh", nn.Hardswish, "quick_gelu"]
        se_layer = partial(SqueezeExcite, rd_ratio=0.5, gate_layer="hard_sigmoid")
        self.blocks = nn.Sequential(*[Block(chs, acts[i], norms[i], se_layer if i != 1 else None, dpr[i]) for i in range(3)])
        self.head_act = get_act_fn("silu")
        self.fc = nn.Linear(chs, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = self.head_act(x).mean((2, 3))
        return self.fc(x)


def make_inputs():
    return (torch.randn(2, 3, 16, 16),)
