from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

jasper_activations = {"hardtanh": nn.Hardtanh, "relu": nn.ReLU, "selu": nn.SELU}


def get_same_padding(kernel_size, stride, dilation) -> int:
    if stride > 1 and dilation > 1:
        raise ValueError("Only stride OR dilation may be greater than 1")
    return (dilation * (kernel_size - 1)) // 2


def compute_new_kernel_size(kernel_size, kernel_width):
    new_kernel_size = max(int(kernel_size * kernel_width), 1)
    if new_kernel_size % 2 == 0:
        new_kernel_size += 1
    return new_kernel_size


class MaskedConv1d(nn.Module):
    """NeMo MaskedConv1d: zero padded frames with an arange<lens mask, update lengths from conv arithmetic."""

    __constants__ = ["use_conv_mask", "real_out_channels", "heads"]

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, heads=-1,
                 bias=False, use_mask=True):
        super().__init__()
        if not (heads == -1 or groups == in_channels):
            raise ValueError("Only use heads for depthwise convolutions")
        self.real_out_channels = out_channels
        if heads != -1:
            in_channels = heads
            out_channels = heads
            groups = heads
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                              groups=groups, bias=bias)
        self.use_mask = use_mask
        self.heads = heads
        self.same_padding = (self.conv.stride[0] == 1) and (
            2 * self.conv.padding[0] == self.conv.dilation[0] * (self.conv.kernel_size[0] - 1))

    def get_seq_len(self, lens):
        if self.same_padding:
            return lens
        return (torch.div(lens + 2 * self.conv.padding[0] - self.conv.dilation[0] * (self.conv.kernel_size[0] - 1) - 1,
                          self.conv.stride[0], rounding_mode="trunc") + 1)

    def forward(self, x, lens):
        if self.use_mask:
            max_len = x.size(2)
            mask = torch.arange(max_len, device=lens.device)[None, :] >= lens[:, None]
            x = x.masked_fill(mask.unsqueeze(1).to(device=x.device), 0)
            lens = self.get_seq_len(lens)
        sh = x.shape
        if self.heads != -1:
            x = x.view(-1, self.heads, sh[-1])
        out = self.conv(x)
        if self.heads != -1:
            out = out.view(sh[0], self.real_out_channels, -1)
        return out, lens


class JasperBlock(nn.Module):
    def __init__(self, inplanes, planes, repeat=3, kernel_size=11, kernel_size_factor=1, stride=1, dilation=1,
                 padding="same", dropout=0.2, activation=None, residual=True, separable=False):
        super().__init__()
        if padding != "same":
            raise ValueError("currently only 'same' padding is supported")
        kernel_size_factor = float(kernel_size_factor)
        kernel_size = compute_new_kernel_size(kernel_size, kernel_size_factor)
        padding_val = get_same_padding(kernel_size, stride, dilation)
        self.separable = separable
        inplanes_loop = inplanes
        conv = nn.ModuleList()
        for _ in range(repeat - 1):
            conv.extend(self._get_conv_bn_layer(inplanes_loop, planes, kernel_size, stride, dilation, padding_val, separable))
            conv.extend(self._get_act_dropout_layer(drop_prob=dropout, activation=activation))
            inplanes_loop = planes
        conv.extend(self._get_conv_bn_layer(inplanes_loop, planes, kernel_size, stride, dilation, padding_val, separable))
        self.mconv = conv
        self.res = nn.ModuleList([nn.ModuleList(self._get_conv_bn_layer(inplanes, planes, 1, 1, 1, 0, False))]) if residual else None
        self.mout = nn.Sequential(*self._get_act_dropout_layer(drop_prob=dropout, activation=activation))

    def _get_conv_bn_layer(self, in_channels, out_channels, kernel_size, stride, dilation, padding, separable):
        if separable:
            layers = [MaskedConv1d(in_channels, in_channels, kernel_size, stride=stride, dilation=dilation, padding=padding,
                                   groups=in_channels),
                      MaskedConv1d(in_channels, out_channels, 1)]
        else:
            layers = [MaskedConv1d(in_channels, out_channels, kernel_size, stride=stride, dilation=dilation, padding=padding)]
        layers.append(nn.BatchNorm1d(out_channels, eps=1e-3, momentum=0.1))
        return layers

    def _get_act_dropout_layer(self, drop_prob=0.2, activation=None):
        if activation is None:
            activation = nn.Hardtanh(min_val=0.0, max_val=20.0)
        return [activation, nn.Dropout(p=drop_prob)]

    def forward(self, input_):
        xs, lens_orig = input_
        out = xs[-1]
        lens = lens_orig
        for i, l in enumerate(self.mconv):
            if isinstance(l, MaskedConv1d):
                out, lens = l(out, lens)
            else:
                out = l(out)
        if self.res is not None:
            for i, layer in enumerate(self.res):
                res_out = xs[i]
                for j, res_layer in enumerate(layer):
                    if isinstance(res_layer, MaskedConv1d):
                        res_out, _ = res_layer(res_out, lens_orig)
                    else:
                        res_out = res_layer(res_out)
                out = out + res_out
        out = self.mout(out)
        return [out], lens


class Model(nn.Module):
    """QuartzNet-like ConvASREncoder: jasper config list of dicts, activation from a string registry."""

    def __init__(self, feat_in=8, activation="relu"):
        super().__init__()
        jasper = [dict(filters=16, repeat=1, kernel=5, stride=2, dilation=1, residual=False, separable=True),
                  dict(filters=16, repeat=2, kernel=7, stride=1, dilation=1, residual=True, separable=True),
                  dict(filters=16, repeat=2, kernel=7, stride=1, dilation=1, residual=True, separable=True, kernel_size_factor=0.5),
                  dict(filters=24, repeat=1, kernel=1, stride=1, dilation=1, residual=False, separable=False)]
        act = jasper_activations[activation]()
        layers = []
        inplanes = feat_in
        for lcfg in jasper:
            layers.append(JasperBlock(inplanes, lcfg["filters"], repeat=lcfg["repeat"], kernel_size=lcfg["kernel"],
                                      kernel_size_factor=lcfg.get("kernel_size_factor", 1.0), stride=lcfg["stride"],
                                      dilation=lcfg["dilation"], activation=act, residual=lcfg["residual"],
                                      separable=lcfg["separable"]))
            inplanes = lcfg["filters"]
        self.encoder = nn.Sequential(*layers)
        self.decoder = nn.Conv1d(24, 6, 1)

    def forward(self, audio_signal, length):
        s_input, length = self.encoder(([audio_signal], length))
        logits = self.decoder(s_input[-1]).transpose(1, 2)
        return F.log_softmax(logits, dim=-1), length


def make_inputs():
    return torch.randn(2, 8, 20), torch.tensor([20, 13])
