import torch
import torch.nn as nn


class Model(nn.Module):
    """Detection-loss style boolean masking, nonzero, masked_select, in-place mask assignment."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, labels):
        y = self.fc(x)
        pos = labels > 0
        pos_pred = y[pos]
        neg_count = (~pos).sum()
        y2 = y.clone()
        y2[~pos] = 0.0
        y2[y2 < -0.5] = -0.5
        idx = torch.nonzero(pos, as_tuple=False).squeeze(1)
        sel = torch.masked_select(y, y > 0)
        return pos_pred.sum(0), neg_count, y2, idx, sel.sum()


def make_inputs():
    return torch.randn(6, 4), torch.tensor([1, 0, 2, 0, 0, 3])
