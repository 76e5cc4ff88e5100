import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Model that returns a dict of losses plus logging scalars (detectron / mmdet style)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Linear(6, 4)
        self.ce = nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=0.05)
        self.smooth_l1 = nn.SmoothL1Loss(beta=0.5)
        self.loss_weights = {"cls": 1.0, "reg": 2.0}

    def forward(self, x, labels, targets):
        out = self.net(x)
        losses = {
            "cls": self.ce(out, labels),
            "reg": self.smooth_l1(out[:, :2], targets),
            "kl": F.kl_div(F.log_softmax(out, -1), F.softmax(out.detach() * 2, -1), reduction="batchmean"),
        }
        total = sum(self.loss_weights.get(k, 1.0) * v for k, v in losses.items())
        log_vars = {k: v.detach().clone() for k, v in losses.items()}
        log_vars["acc"] = (out.argmax(1) == labels).float().mean()
        return total, log_vars


def make_inputs():
    return torch.randn(5, 6), torch.tensor([1, 2, -100, 0, 3]), torch.randn(5, 2)
