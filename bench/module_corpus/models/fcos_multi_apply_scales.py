from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F


def multi_apply(func, *args, **kwargs):
    """mmdet.core.utils.multi_apply."""
    pfunc = partial(func, **kwargs) if kwargs else func
    map_results = map(pfunc, *args)
    return tuple(map(list, zip(*map_results)))


class Scale(nn.Module):
    def __init__(self, scale=1.0):
        super(Scale, self).__init__()
        self.scale = nn.Parameter(torch.tensor(scale, dtype=torch.float))

    def forward(self, x):
        return x * self.scale


class ConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, norm_cfg=None, act_cfg=dict(type='ReLU'),
                 bias='auto'):
        super().__init__()
        self.with_norm = norm_cfg is not None
        self.with_activation = act_cfg is not None
        if bias == 'auto':
            bias = not self.with_norm
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, bias=bias)
        if self.with_norm:
            assert norm_cfg['type'] == 'GN'
            self.gn = nn.GroupNorm(norm_cfg['num_groups'], out_channels)
        if self.with_activation:
            self.activate = getattr(nn, act_cfg['type'])(**{k: v for k, v in act_cfg.items() if k != 'type'})

    @property
    def norm(self):
        return getattr(self, 'gn') if self.with_norm else None

    def forward(self, x, activate=True, norm=True):
        x = self.conv(x)
        if norm and self.with_norm:
            x = self.norm(x)
        if activate and self.with_activation:
            x = self.activate(x)
        return x


class Model(nn.Module):
    """mmdet-style FCOSHead: shared towers over FPN levels via multi_apply, per-level learnable Scale."""

    def __init__(self, num_classes=4, in_channels=8, feat_channels=8, stacked_convs=2, strides=(4, 8, 16),
                 norm_on_bbox=True, centerness_on_reg=True, conv_cfg=None,
                 norm_cfg=dict(type='GN', num_groups=4, requires_grad=True)):
        super().__init__()
        self.num_classes = num_classes
        self.cls_out_channels = num_classes
        self.strides = strides
        self.norm_on_bbox = norm_on_bbox
        self.centerness_on_reg = centerness_on_reg
        norm_cfg = {k: v for k, v in norm_cfg.items() if k != 'requires_grad'}
        self.cls_convs = nn.ModuleList()
        self.reg_convs = nn.ModuleList()
        for i in range(stacked_convs):
            chn = in_channels if i == 0 else feat_channels
            self.cls_convs.append(ConvModule(chn, feat_channels, 3, stride=1, padding=1, norm_cfg=norm_cfg))
            self.reg_convs.append(ConvModule(chn, feat_channels, 3, stride=1, padding=1, norm_cfg=norm_cfg))
        self.conv_cls = nn.Conv2d(feat_channels, self.cls_out_channels, 3, padding=1)
        self.conv_reg = nn.Conv2d(feat_channels, 4, 3, padding=1)
        self.conv_centerness = nn.Conv2d(feat_channels, 1, 3, padding=1)
        self.scales = nn.ModuleList([Scale(1.0) for _ in self.strides])

    def forward(self, feats):
        return multi_apply(self.forward_single, feats, self.scales, self.strides)

    def forward_single(self, x, scale, stride):
        cls_feat = x
        reg_feat = x
        for cls_layer in self.cls_convs:
            cls_feat = cls_layer(cls_feat)
        cls_score = self.conv_cls(cls_feat)
        for reg_layer in self.reg_convs:
            reg_feat = reg_layer(reg_feat)
        bbox_pred = self.conv_reg(reg_feat)
        if self.centerness_on_reg:
            centerness = self.conv_centerness(reg_feat)
        else:
            centerness = self.conv_centerness(cls_feat)
        bbox_pred = scale(bbox_pred).float()
        if self.norm_on_bbox:
            bbox_pred = bbox_pred.clamp(min=0)
            if not self.training:
                bbox_pred *= stride
        else:
            bbox_pred = bbox_pred.exp()
        return cls_score, bbox_pred, centerness


def make_inputs():
    return ([torch.randn(2, 8, 16, 16), torch.randn(2, 8, 8, 8), torch.randn(2, 8, 4, 4)],)
