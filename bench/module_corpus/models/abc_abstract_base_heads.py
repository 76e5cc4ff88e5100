import abc
from typing import Dict

import torch
import torch.nn as nn
import torch.nn.functional as F


class BaseHead(nn.Module, metaclass=abc.ABCMeta):
    """Abstract base head (mmaction/mmcls style): abc.ABCMeta metaclass with @abc.abstractmethod forward and
    init_weights, a concrete loss() shared by subclasses, and a class-level registry dict filled by
    __init_subclass__."""

    registry: Dict[str, type] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        BaseHead.registry[cls.__name__] = cls

    def __init__(self, num_classes, in_channels, loss_weight=1.0):
        super().__init__()
        self.num_classes = num_classes
        self.in_channels = in_channels
        self.loss_weight = loss_weight

    @abc.abstractmethod
    def init_weights(self):
        """Initiate the parameters either from existing checkpoint or from scratch."""

    @abc.abstractmethod
    def forward(self, x):
        """Defines the computation performed at every call."""

    def loss(self, cls_score, labels):
        losses = dict()
        if labels.shape == torch.Size([]):
            labels = labels.unsqueeze(0)
        losses['loss_cls'] = F.cross_entropy(cls_score, labels) * self.loss_weight
        top1 = (cls_score.argmax(1) == labels).float().mean()
        losses['top1_acc'] = top1
        return losses


class I3DHead(BaseHead):
    def __init__(self, num_classes, in_channels, dropout_ratio=0.5, **kwargs):
        super().__init__(num_classes, in_channels, **kwargs)
        self.dropout = nn.Dropout(p=dropout_ratio) if dropout_ratio != 0 else None
        self.fc_cls = nn.Linear(self.in_channels, self.num_classes)
        self.avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.init_weights()

    def init_weights(self):
        nn.init.normal_(self.fc_cls.weight, 0, 0.01)
        nn.init.constant_(self.fc_cls.bias, 0)

    def forward(self, x):
        x = self.avg_pool(x)
        if self.dropout is not None:
            x = self.dropout(x)
        x = x.view(x.shape[0], -1)
        return self.fc_cls(x)


class TSNHead(BaseHead):
    def __init__(self, num_classes, in_channels, consensus="avg", **kwargs):
        super().__init__(num_classes, in_channels, **kwargs)
        self.consensus = consensus
        self.fc_cls = nn.Linear(in_channels, num_classes)
        self.init_weights()

    def init_weights(self):
        nn.init.normal_(self.fc_cls.weight, 0, 0.01)

    def forward(self, x, num_segs=2):
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        x = x.reshape((-1, num_segs) + x.shape[1:])
        x = x.mean(dim=1) if self.consensus == "avg" else x.max(dim=1)[0]
        return self.fc_cls(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({name: BaseHead.registry[name](num_classes=4, in_channels=6, loss_weight=0.5)
                                    for name in ("I3DHead", "TSNHead")})

    def forward(self, video_feat, frame_feat, labels):
        s1 = self.heads["I3DHead"](video_feat)
        s2 = self.heads["TSNHead"](frame_feat, num_segs=2)
        losses = {}
        for name, score in (("i3d", s1), ("tsn", s2)):
            for k, v in self.heads["I3DHead"].loss(score, labels).items():
                losses[f"{name}.{k}"] = v
        return losses, isinstance(self.heads["TSNHead"], BaseHead)


def make_inputs():
    return torch.randn(3, 6, 2, 4, 4), torch.randn(6, 6, 4, 4), torch.tensor([0, 3, 1])
