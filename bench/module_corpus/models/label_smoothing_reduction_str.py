import warnings
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.loss import _WeightedLoss


class SmoothCrossEntropyLoss(_WeightedLoss):
    """Kaggle-notebook label smoothing CE built on torch's private _WeightedLoss (reduction string)."""

    def __init__(self, weight=None, reduction='mean', smoothing=0.0):
        super().__init__(weight=weight, reduction=reduction)
        self.smoothing = smoothing
        self.weight = weight
        self.reduction = reduction

    @staticmethod
    def _smooth_one_hot(targets: torch.Tensor, n_classes: int, smoothing=0.0):
        assert 0 <= smoothing < 1
        with torch.no_grad():
            targets = torch.empty(size=(targets.size(0), n_classes), device=targets.device) \
                .fill_(smoothing / (n_classes - 1)) \
                .scatter_(1, targets.data.unsqueeze(1), 1. - smoothing)
        return targets

    def forward(self, inputs, targets):
        targets = SmoothCrossEntropyLoss._smooth_one_hot(targets, inputs.size(-1), self.smoothing)
        lsm = F.log_softmax(inputs, -1)
        if self.weight is not None:
            lsm = lsm * self.weight.unsqueeze(0)
        loss = -(targets * lsm).sum(-1)
        if self.reduction == 'sum':
            loss = loss.sum()
        elif self.reduction == 'mean':
            loss = loss.mean()
        return loss


class LabelSmoothingLoss(nn.Module):
    """OpenNMT-style KL label smoothing with ignore_index / padding rows zeroed."""

    def __init__(self, label_smoothing, tgt_vocab_size, ignore_index=-100):
        assert 0.0 < label_smoothing <= 1.0
        self.ignore_index = ignore_index
        super(LabelSmoothingLoss, self).__init__()
        smoothing_value = label_smoothing / (tgt_vocab_size - 2)
        one_hot = torch.full((tgt_vocab_size,), smoothing_value)
        one_hot[self.ignore_index] = 0
        self.register_buffer('one_hot', one_hot.unsqueeze(0))
        self.confidence = 1.0 - label_smoothing

    def forward(self, output, target):
        model_prob = self.one_hot.repeat(target.size(0), 1)
        model_prob.scatter_(1, target.unsqueeze(1), self.confidence)
        model_prob.masked_fill_((target == self.ignore_index).unsqueeze(1), 0)
        return F.kl_div(output, model_prob, reduction='sum')


def reduce_loss(loss, reduction: str):
    reduction_enum = F._Reduction.get_enum(reduction)
    if reduction_enum == 0:
        return loss
    elif reduction_enum == 1:
        return loss.mean()
    elif reduction_enum == 2:
        return loss.sum()


def weight_reduce_loss(loss, weight=None, reduction='mean', avg_factor=None):
    if weight is not None:
        loss = loss * weight
    if avg_factor is None:
        loss = reduce_loss(loss, reduction)
    else:
        if reduction == 'mean':
            eps = torch.finfo(torch.float32).eps
            loss = loss.sum() / (avg_factor + eps)
        elif reduction != 'none':
            raise ValueError('avg_factor can not be used with reduction="sum"')
    return loss


class Model(nn.Module):
    def __init__(self, n_classes=6):
        super().__init__()
        self.fc = nn.Linear(8, n_classes)
        self.losses = nn.ModuleDict({
            'sce_mean': SmoothCrossEntropyLoss(smoothing=0.1),
            'sce_none': SmoothCrossEntropyLoss(reduction='none', smoothing=0.2),
            'sce_w': SmoothCrossEntropyLoss(weight=torch.linspace(0.5, 1.5, n_classes), reduction='sum', smoothing=0.05),
            'onmt': LabelSmoothingLoss(0.1, n_classes, ignore_index=0),
        })

    def forward(self, x, target, reduction: Optional[str] = 'mean', avg_factor=None):
        logits = self.fc(x)
        out = {}
        for name, crit in self.losses.items():
            if isinstance(crit, LabelSmoothingLoss):
                out[name] = crit(F.log_softmax(logits, -1), target)
            else:
                out[name] = crit(logits, target)
        per_sample = F.cross_entropy(logits, target, reduction='none', label_smoothing=0.1)
        w = (target != 0).float()
        out['mm'] = weight_reduce_loss(per_sample, w, reduction=reduction, avg_factor=avg_factor)
        out['mm_none'] = weight_reduce_loss(per_sample, None, reduction='none')
        return out


def make_inputs():
    return (torch.randn(5, 8), torch.tensor([0, 3, 1, 5, 2])), {"avg_factor": 4.0}
