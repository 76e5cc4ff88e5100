import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class FocalLoss(nn.Module):
    """The widely copied clcarwin/focal_loss_pytorch: alpha given as float / int / list turned into a Tensor in
    __init__, input.dim() > 2 reshaped N,C,H,W -> N*H*W,C, logpt.data.exp(), alpha.type_as(input.data),
    Variable(at), size_average flag."""

    def __init__(self, gamma=0, alpha=None, size_average=True):
        super(FocalLoss, self).__init__()
        self.gamma = gamma
        self.alpha = alpha
        if isinstance(alpha, (float, int)):
            self.alpha = torch.Tensor([alpha, 1 - alpha])
        if isinstance(alpha, list):
            self.alpha = torch.Tensor(alpha)
        self.size_average = size_average

    def forward(self, input, target):
        if input.dim() > 2:
            input = input.view(input.size(0), input.size(1), -1)  # N,C,H,W => N,C,H*W
            input = input.transpose(1, 2)                         # N,C,H*W => N,H*W,C
            input = input.contiguous().view(-1, input.size(2))    # N,H*W,C => N*H*W,C
        target = target.view(-1, 1)

        logpt = F.log_softmax(input, dim=1)
        logpt = logpt.gather(1, target)
        logpt = logpt.view(-1)
        pt = Variable(logpt.data.exp())

        if self.alpha is not None:
            if self.alpha.type() != input.data.type():
                self.alpha = self.alpha.type_as(input.data)
            at = self.alpha.gather(0, target.data.view(-1))
            logpt = logpt * Variable(at)

        loss = -1 * (1 - pt) ** self.gamma * logpt
        if self.size_average:
            return loss.mean()
        else:
            return loss.sum()


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.seg = nn.Conv2d(3, 3, 1)
        self.loss_list = FocalLoss(gamma=2, alpha=[0.25, 0.5, 0.25])
        self.loss_float = FocalLoss(gamma=1.5, alpha=0.25, size_average=False)
        self.loss_none = FocalLoss(gamma=0)

    def forward(self, x, target, binary_logits, binary_target):
        logits = self.seg(x)
        a = self.loss_list(logits, target)
        b = self.loss_float(binary_logits, binary_target)
        c = self.loss_none(logits, target)
        return a, b, c


def make_inputs():
    return (torch.randn(2, 3, 4, 4), torch.randint(0, 3, (2, 4, 4)),
            torch.randn(6, 2), torch.tensor([0, 1, 1, 0, 1, 0]))
