import torch
import torch.nn as nn
import torch.nn.functional as F


class LabelSmoothingCrossEntropy(nn.Module):
    """Smoothed CE where the number of classes comes from the logits, plus a 'class-balanced' weight computed
    from torch.bincount(minlength=num_classes) on the batch labels."""

    def __init__(self, smoothing=0.1):
        super().__init__()
        assert smoothing < 1.0
        self.smoothing = smoothing
        self.confidence = 1.0 - smoothing

    def forward(self, x, target):
        num_classes = x.size(-1)
        logprobs = F.log_softmax(x, dim=-1)
        one_hot = F.one_hot(target, num_classes=num_classes).to(x.dtype)
        soft = one_hot * self.confidence + self.smoothing / num_classes
        counts = torch.bincount(target, minlength=num_classes).to(x.dtype)
        cls_w = (counts.sum() / (num_classes * counts.clamp(min=1)))[target]
        loss = -(soft * logprobs).sum(-1)
        return (loss * cls_w).sum() / cls_w.sum()


class Model(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.fc = nn.Linear(8, num_classes)
        self.crit = LabelSmoothingCrossEntropy()

    def forward(self, x, target):
        logits = self.fc(x)
        mixed = torch.roll(target, 1)
        lam = 0.7
        loss = lam * self.crit(logits, target) + (1 - lam) * self.crit(logits, mixed)
        return loss, logits


def make_inputs():
    return torch.randn(6, 8), torch.tensor([0, 1, 1, 3, 4, 0])
