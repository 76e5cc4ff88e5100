import torch
import torch.nn as nn
from torch.autograd import Variable


class LabelSmoothing(nn.Module):
    "Implement label smoothing."

    def __init__(self, size, padding_idx, smoothing=0.0):
        super(LabelSmoothing, self).__init__()
        self.criterion = nn.KLDivLoss(reduction="sum")
        self.padding_idx = padding_idx
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.size = size
        self.true_dist = None

    def forward(self, x, target):
        assert x.size(1) == self.size
        true_dist = x.data.clone()
        true_dist.fill_(self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        true_dist[:, self.padding_idx] = 0
        mask = torch.nonzero(target.data == self.padding_idx)
        if mask.dim() > 0:
            true_dist.index_fill_(0, mask.squeeze(), 0.0)
        self.true_dist = true_dist
        return self.criterion(x, Variable(true_dist, requires_grad=False))


class SimpleLossCompute:
    "A simple loss compute and train function."

    def __init__(self, generator, criterion):
        self.generator = generator
        self.criterion = criterion

    def __call__(self, x, y, norm):
        x = self.generator(x)
        sloss = (
            self.criterion(
                x.contiguous().view(-1, x.size(-1)), y.contiguous().view(-1)
            )
            / norm
        )
        return sloss.data * norm, sloss


class Model(nn.Module):
    """Annotated Transformer LabelSmoothing (KLDivLoss against a scatter_-built true_dist, padding rows zeroed
    with torch.nonzero + index_fill_) driven through a plain-class SimpleLossCompute with __call__."""

    def __init__(self, d_model=12, vocab=9):
        super().__init__()
        self.generator = nn.Sequential(nn.Linear(d_model, vocab), nn.LogSoftmax(dim=-1))
        self.criterion = LabelSmoothing(size=vocab, padding_idx=0, smoothing=0.1)
        self.loss_compute = SimpleLossCompute(self.generator, self.criterion)

    def forward(self, out, y):
        ntokens = (y != 0).sum()
        loss, loss_node = self.loss_compute(out, y, ntokens)
        return loss, loss_node, self.criterion.true_dist


def make_inputs():
    return torch.randn(2, 5, 12), torch.tensor([[3, 4, 5, 0, 0], [1, 2, 8, 7, 0]])
