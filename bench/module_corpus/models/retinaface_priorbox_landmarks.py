from itertools import product as product
from math import ceil

import torch
import torch.nn as nn
import torch.nn.functional as F

cfg_mnet = {
    "name": "mobilenet0.25",
    "min_sizes": [[8, 16], [32, 64]],
    "steps": [8, 16],
    "variance": [0.1, 0.2],
    "clip": False,
}


class PriorBox(object):
    def __init__(self, cfg, image_size=None, phase="train"):
        super(PriorBox, self).__init__()
        self.min_sizes = cfg["min_sizes"]
        self.steps = cfg["steps"]
        self.clip = cfg["clip"]
        self.image_size = image_size
        self.feature_maps = [[ceil(self.image_size[0] / step), ceil(self.image_size[1] / step)] for step in self.steps]
        self.name = "s"

    def forward(self):
        anchors = []
        for k, f in enumerate(self.feature_maps):
            min_sizes = self.min_sizes[k]
            for i, j in product(range(f[0]), range(f[1])):
                for min_size in min_sizes:
                    s_kx = min_size / self.image_size[1]
                    s_ky = min_size / self.image_size[0]
                    dense_cx = [x * self.steps[k] / self.image_size[1] for x in [j + 0.5]]
                    dense_cy = [y * self.steps[k] / self.image_size[0] for y in [i + 0.5]]
                    for cy, cx in product(dense_cy, dense_cx):
                        anchors += [cx, cy, s_kx, s_ky]
        output = torch.Tensor(anchors).view(-1, 4)
        if self.clip:
            output.clamp_(max=1, min=0)
        return output


def decode(loc, priors, variances):
    boxes = torch.cat((priors[:, :2] + loc[:, :2] * variances[0] * priors[:, 2:],
                       priors[:, 2:] * torch.exp(loc[:, 2:] * variances[1])), 1)
    boxes[:, :2] -= boxes[:, 2:] / 2
    boxes[:, 2:] += boxes[:, :2]
    return boxes


def decode_landm(pre, priors, variances):
    landms = torch.cat((priors[:, :2] + pre[:, :2] * variances[0] * priors[:, 2:],
                        priors[:, :2] + pre[:, 2:4] * variances[0] * priors[:, 2:],
                        priors[:, :2] + pre[:, 4:6] * variances[0] * priors[:, 2:],
                        priors[:, :2] + pre[:, 6:8] * variances[0] * priors[:, 2:],
                        priors[:, :2] + pre[:, 8:10] * variances[0] * priors[:, 2:]), dim=1)
    return landms


class ClassHead(nn.Module):
    def __init__(self, inchannels=16, num_anchors=2):
        super().__init__()
        self.num_anchors = num_anchors
        self.conv1x1 = nn.Conv2d(inchannels, self.num_anchors * 2, kernel_size=(1, 1), stride=1, padding=0)

    def forward(self, x):
        out = self.conv1x1(x)
        out = out.permute(0, 2, 3, 1).contiguous()
        return out.view(out.shape[0], -1, 2)


class BboxHead(nn.Module):
    def __init__(self, inchannels=16, num_anchors=2):
        super().__init__()
        self.conv1x1 = nn.Conv2d(inchannels, num_anchors * 4, kernel_size=(1, 1), stride=1, padding=0)

    def forward(self, x):
        out = self.conv1x1(x).permute(0, 2, 3, 1).contiguous()
        return out.view(out.shape[0], -1, 4)


class LandmarkHead(nn.Module):
    def __init__(self, inchannels=16, num_anchors=2):
        super().__init__()
        self.conv1x1 = nn.Conv2d(inchannels, num_anchors * 10, kernel_size=(1, 1), stride=1, padding=0)

    def forward(self, x):
        out = self.conv1x1(x).permute(0, 2, 3, 1).contiguous()
        return out.view(out.shape[0], -1, 10)


class Model(nn.Module):
    """biubug6 Pytorch_Retinaface: heads per FPN level, PriorBox (itertools.product, math.ceil) in forward,
    decode boxes and 5-point landmarks, scale back to pixels."""

    def __init__(self, cfg=cfg_mnet, phase="test"):
        super().__init__()
        self.cfg = cfg
        self.phase = phase
        self.body = nn.ModuleList([nn.Sequential(nn.Conv2d(3, 16, 3, 8, 1), nn.ReLU()),
                                   nn.Sequential(nn.Conv2d(3, 16, 3, 16, 1), nn.ReLU())])
        self.ClassHead = self._make_class_head(fpn_num=2)
        self.BboxHead = self._make_bbox_head(fpn_num=2)
        self.LandmarkHead = self._make_landmark_head(fpn_num=2)

    def _make_class_head(self, fpn_num=3, inchannels=16, anchor_num=2):
        classhead = nn.ModuleList()
        for i in range(fpn_num):
            classhead.append(ClassHead(inchannels, anchor_num))
        return classhead

    def _make_bbox_head(self, fpn_num=3, inchannels=16, anchor_num=2):
        return nn.ModuleList([BboxHead(inchannels, anchor_num) for _ in range(fpn_num)])

    def _make_landmark_head(self, fpn_num=3, inchannels=16, anchor_num=2):
        return nn.ModuleList([LandmarkHead(inchannels, anchor_num) for _ in range(fpn_num)])

    def forward(self, inputs):
        features = [b(inputs) for b in self.body]
        bbox_regressions = torch.cat([self.BboxHead[i](feature) for i, feature in enumerate(features)], dim=1)
        classifications = torch.cat([self.ClassHead[i](feature) for i, feature in enumerate(features)], dim=1)
        ldm_regressions = torch.cat([self.LandmarkHead[i](feature) for i, feature in enumerate(features)], dim=1)
        if self.phase == "train":
            return bbox_regressions, classifications, ldm_regressions
        im_height, im_width = inputs.shape[2], inputs.shape[3]
        scale = torch.Tensor([im_width, im_height, im_width, im_height])
        priorbox = PriorBox(self.cfg, image_size=(im_height, im_width))
        priors = priorbox.forward()
        boxes = decode(bbox_regressions[0], priors, self.cfg["variance"]) * scale
        scores = F.softmax(classifications, dim=-1)[0][:, 1]
        landms = decode_landm(ldm_regressions[0], priors, self.cfg["variance"])
        scale1 = torch.Tensor([inputs.shape[3], inputs.shape[2]] * 5)
        landms = landms * scale1
        return boxes, scores, landms


def make_inputs():
    return (torch.randn(1, 3, 32, 48),)
