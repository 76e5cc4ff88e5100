from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F


def weight_reduce_loss(loss, weight=None, reduction="mean", avg_factor=None):
    if weight is not None:
        loss = loss * weight
    if avg_factor is None:
        if reduction == "mean":
            loss = loss.mean()
        elif reduction == "sum":
            loss = loss.sum()
    else:
        if reduction == "mean":
            eps = torch.finfo(torch.float32).eps
            loss = loss.sum() / (avg_factor + eps)
        elif reduction != "none":
            raise ValueError('avg_factor can not be used with reduction="sum"')
    return loss


class Model(nn.Module):
    """mmdet BaseDetector._parse_losses: dict of losses (tensor or list of tensors), sum over keys containing
    'loss', and log_vars converted to Python floats with .item()."""

    def __init__(self, num_classes=4):
        super().__init__()
        self.cls = nn.Linear(8, num_classes)
        self.reg = nn.Linear(8, 4)
        self.num_classes = num_classes

    def forward_train(self, feats, labels, targets, weights):
        cls_score = self.cls(feats)
        bbox_pred = self.reg(feats)
        num_pos = max(float((labels > 0).sum()), 1.0)
        loss_cls = weight_reduce_loss(F.cross_entropy(cls_score, labels, reduction="none"), avg_factor=num_pos)
        loss_bbox = [weight_reduce_loss(F.l1_loss(bbox_pred[:, i], targets[:, i], reduction="none"), weights)
                     for i in range(4)]
        acc = (cls_score.argmax(-1) == labels).float().mean() * 100
        return dict(loss_cls=loss_cls, loss_bbox=loss_bbox, acc=acc)

    @staticmethod
    def _parse_losses(losses):
        log_vars = OrderedDict()
        for loss_name, loss_value in losses.items():
            if isinstance(loss_value, torch.Tensor):
                log_vars[loss_name] = loss_value.mean()
            elif isinstance(loss_value, list):
                log_vars[loss_name] = sum(_loss.mean() for _loss in loss_value)
            else:
                raise TypeError(f"{loss_name} is not a tensor or list of tensors")
        loss = sum(_value for _key, _value in log_vars.items() if "loss" in _key)
        log_vars["loss"] = loss
        for loss_name, loss_value in log_vars.items():
            log_vars[loss_name] = loss_value.item()
        return loss, log_vars

    def forward(self, feats, labels, targets, weights):
        losses = self.forward_train(feats, labels, targets, weights)
        loss, log_vars = self._parse_losses(losses)
        return dict(loss=loss, log_vars=log_vars, num_samples=len(feats))


def make_inputs():
    return torch.randn(6, 8), torch.tensor([0, 1, 3, 2, 0, 3]), torch.randn(6, 4), torch.rand(6)
