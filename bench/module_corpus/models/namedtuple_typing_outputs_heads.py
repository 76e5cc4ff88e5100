import collections
from typing import NamedTuple, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

DetOutput = collections.namedtuple("DetOutput", ["boxes", "scores", "labels"])


class LossOutput(NamedTuple):
    total: torch.Tensor
    cls: torch.Tensor
    reg: Optional[torch.Tensor] = None

    def as_dict(self):
        return {k: v for k, v in self._asdict().items() if v is not None}


class Model(nn.Module):
    """collections.namedtuple and typing.NamedTuple outputs: _replace, _asdict, _fields iteration, default
    field values, tuple unpacking of a namedtuple returned by a helper."""

    def __init__(self, c=8, n_cls=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.ReLU())
        self.cls_head = nn.Conv2d(c, n_cls, 1)
        self.reg_head = nn.Conv2d(c, 4, 1)

    def predict(self, feat):
        logits = self.cls_head(feat).flatten(2).transpose(1, 2)
        boxes = self.reg_head(feat).flatten(2).transpose(1, 2).sigmoid()
        scores, labels = logits.softmax(-1).max(-1)
        return DetOutput(boxes, scores, labels)

    def forward(self, x, targets):
        det = self.predict(self.backbone(x))
        boxes, scores, labels = det
        det = det._replace(scores=scores * (labels > 0).float())
        cls_loss = F.mse_loss(det.scores, targets)
        losses = LossOutput(total=cls_loss, cls=cls_loss)
        if boxes.shape[1] > 0:
            reg = boxes.abs().mean()
            losses = LossOutput(total=cls_loss + reg, cls=cls_loss, reg=reg)
        flat = {f: getattr(det, f).float().sum() for f in det._fields}
        return det, losses.as_dict(), flat, len(losses)


def make_inputs():
    return torch.randn(2, 3, 4, 4), torch.rand(2, 16)
