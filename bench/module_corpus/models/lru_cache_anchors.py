import functools
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


@functools.lru_cache(maxsize=16)
def make_anchor_points(h: int, w: int, stride: int, offset: float = 0.5):
    sx = (torch.arange(w, dtype=torch.float32) + offset) * stride
    sy = (torch.arange(h, dtype=torch.float32) + offset) * stride
    yy, xx = torch.meshgrid(sy, sx, indexing="ij")
    return torch.stack([xx, yy], -1).view(-1, 2)


@functools.lru_cache()
def dfl_project(reg_max: int):
    return torch.arange(reg_max, dtype=torch.float32)


@functools.cache
def level_name(i):
    return f"p{i + 3}"


class DFL(nn.Module):
    """YOLOv8 distribution focal loss integral."""

    def __init__(self, c1=8):
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        x = torch.arange(c1, dtype=torch.float)
        self.conv.weight.data[:] = nn.Parameter(x.view(1, c1, 1, 1))
        self.c1 = c1

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


def dist2bbox(distance, anchor_points, xywh=True, dim=-1):
    lt, rb = distance.chunk(2, dim)
    x1y1 = anchor_points - lt
    x2y2 = anchor_points + rb
    if xywh:
        c_xy = (x1y1 + x2y2) / 2
        wh = x2y2 - x1y1
        return torch.cat((c_xy, wh), dim)
    return torch.cat((x1y1, x2y2), dim)


class Model(nn.Module):
    """Anchor-free detect head whose anchor points and DFL projection come from functools.lru_cache'd helpers."""

    def __init__(self, nc=3, reg_max=8, ch=(8, 16), strides=(8, 16)):
        super().__init__()
        self.nc, self.reg_max, self.strides = nc, reg_max, strides
        self.no = nc + reg_max * 4
        self.stem = nn.ModuleList([nn.Conv2d(3, ch[0], 3, 8, 1), nn.Conv2d(ch[0], ch[1], 3, 2, 1)])
        self.cv2 = nn.ModuleList(nn.Conv2d(c, 4 * reg_max, 1) for c in ch)
        self.cv3 = nn.ModuleList(nn.Conv2d(c, nc, 1) for c in ch)
        self.dfl = DFL(reg_max)

    def forward(self, img):
        feats, x = [], img
        for s in self.stem:
            x = F.silu(s(x))
            feats.append(x)
        outs, anchors, stride_t, names = [], [], [], []
        for i, f in enumerate(feats):
            outs.append(torch.cat([self.cv2[i](f), self.cv3[i](f)], 1).flatten(2))
            h, w = f.shape[2:]
            anchors.append(make_anchor_points(h, w, self.strides[i]))
            stride_t.append(torch.full((h * w, 1), float(self.strides[i])))
            names.append(level_name(i))
        out = torch.cat(outs, 2)
        anchor_points = torch.cat(anchors).to(out.device).transpose(0, 1).unsqueeze(0) / torch.cat(stride_t).t()
        box, cls = out.split((self.reg_max * 4, self.nc), 1)
        dbox = dist2bbox(self.dfl(box), anchor_points, xywh=True, dim=1) * torch.cat(stride_t).t()
        proj = dfl_project(self.reg_max)
        b, _, a = box.shape
        alt = box.view(b, 4, self.reg_max, a).softmax(2).transpose(2, 3).matmul(proj.to(box.dtype))
        return torch.cat((dbox, cls.sigmoid()), 1), alt, "/".join(names)


def make_inputs():
    return (torch.randn(2, 3, 32, 48),)


def make_inputs_seq():
    return [(torch.randn(2, 3, 32, 48),), (torch.randn(1, 3, 64, 32),), (torch.randn(2, 3, 32, 48),)]
