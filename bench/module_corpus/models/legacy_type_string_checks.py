import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Pre-1.0 type handling: x.type() == 'torch.FloatTensor' string compares, isinstance(x, torch.FloatTensor),
    torch.is_tensor, type(x) is torch.Tensor, legacy constructors torch.Tensor(list), torch.LongTensor(n).fill_,
    torch.ByteTensor masks, x.type(torch.DoubleTensor) round trips."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.class_weights = torch.Tensor([1.0, 2.0, 0.5])

    def forward(self, x, y):
        if x.type() == 'torch.DoubleTensor':
            x = x.float()
        assert isinstance(x, torch.FloatTensor) or x.is_cuda
        assert torch.is_tensor(y) and type(y) is torch.Tensor
        logits = self.fc(x)
        weights = self.class_weights
        if weights.type() != logits.type():
            weights = weights.type(logits.type())
        ignore = torch.LongTensor(y.size(0)).fill_(-1)
        mask = torch.ByteTensor((y >= 0).tolist()).bool() if not y.is_cuda else (y >= 0)
        target = torch.where(mask, y, ignore)
        loss = F.cross_entropy(logits, target, weight=weights, ignore_index=-1)
        probs = F.softmax(logits.type(torch.DoubleTensor), dim=1).type_as(logits)
        return loss, probs, logits.type(), str(logits.dtype)


def make_inputs():
    return torch.randn(5, 4, dtype=torch.double), torch.tensor([0, 2, -1, 1, 2])
