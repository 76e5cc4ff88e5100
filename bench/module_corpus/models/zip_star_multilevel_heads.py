import torch
import torch.nn as nn
import torch.nn.functional as F


class Head(nn.Module):
    def __init__(self, c, num_anchors, num_classes):
        super().__init__()
        self.cls = nn.Conv2d(c, num_anchors * num_classes, 3, padding=1)
        self.box = nn.Conv2d(c, num_anchors * 4, 3, padding=1)
        self.num_classes = num_classes

    def forward(self, x):
        return self.cls(x), self.box(x)


def permute_and_flatten(layer, N, A, C, H, W):
    layer = layer.view(N, -1, C, H, W)
    layer = layer.permute(0, 3, 4, 1, 2)
    layer = layer.reshape(N, -1, C)
    return layer


class Model(nn.Module):
    """Detection head over a feature list: outputs transposed with zip(*[head(f) for f in feats]) (and
    map(list, zip(*...))), per-level shapes unpacked from .shape, concat_box_prediction_layers-style flatten,
    min/max with key= over levels."""

    def __init__(self, c=8, num_anchors=2, num_classes=3):
        super().__init__()
        self.head = Head(c, num_anchors, num_classes)
        self.num_anchors = num_anchors

    def forward(self, p3, p4, p5):
        feats = [p3, p4, p5]
        cls_outs, box_outs = map(list, zip(*[self.head(f) for f in feats]))
        box_cls_flat, box_reg_flat = [], []
        for box_cls_per_level, box_reg_per_level in zip(cls_outs, box_outs):
            N, AxC, H, W = box_cls_per_level.shape
            Ax4 = box_reg_per_level.shape[1]
            A = Ax4 // 4
            C = AxC // A
            box_cls_flat.append(permute_and_flatten(box_cls_per_level, N, A, C, H, W))
            box_reg_flat.append(permute_and_flatten(box_reg_per_level, N, A, 4, H, W))
        box_cls = torch.cat(box_cls_flat, dim=1).flatten(0, -2)
        box_reg = torch.cat(box_reg_flat, dim=1).reshape(-1, 4)
        largest = max(feats, key=lambda f: f.shape[-1] * f.shape[-2])
        num_per_level = [f.shape[-2] * f.shape[-1] * self.num_anchors for f in feats]
        return box_cls.sigmoid(), box_reg, largest.mean(), num_per_level


def make_inputs():
    return torch.randn(1, 8, 8, 8), torch.randn(1, 8, 4, 4), torch.randn(1, 8, 2, 2)
