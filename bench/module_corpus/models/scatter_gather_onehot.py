import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Label-smoothing CE + class-wise pooling with scatter_add_ and gather."""

    def __init__(self, classes=5, smoothing=0.1):
        super().__init__()
        self.fc = nn.Linear(6, classes)
        self.classes = classes
        self.smoothing = smoothing

    def forward(self, x, target):
        logits = self.fc(x)
        logp = F.log_softmax(logits, dim=-1)
        with torch.no_grad():
            true_dist = torch.zeros_like(logp)
            true_dist.fill_(self.smoothing / (self.classes - 1))
            true_dist.scatter_(1, target.unsqueeze(1), 1.0 - self.smoothing)
        loss = torch.mean(torch.sum(-true_dist * logp, dim=-1))
        picked = logp.gather(1, target[:, None]).squeeze(1)
        sums = torch.zeros(self.classes, x.size(1)).scatter_add_(0, target[:, None].expand(-1, x.size(1)), x)
        oh = F.one_hot(target, num_classes=self.classes)
        topv, topi = logits.topk(2, dim=1)
        return loss, picked, sums, oh, topv, topi


def make_inputs():
    return torch.randn(7, 6), torch.tensor([0, 1, 4, 2, 1, 3, 0])
