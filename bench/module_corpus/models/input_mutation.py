import torch
import torch.nn as nn


class Model(nn.Module):
    """Forward that mutates its inputs in place (normalising a batch dict in place, etc.)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, batch):
        x.sub_(x.mean(0, keepdim=True))
        batch["feats"].mul_(0.5)
        batch["mask"].masked_fill_(batch["feats"].sum(-1) < 0, False)
        x[:, 0] = 1.0
        batch["seen"] = batch.get("seen", 0) + 1
        y = self.fc(x + batch["feats"]) * batch["mask"][:, None]
        return y


def make_inputs():
    return torch.randn(3, 4), {"feats": torch.randn(3, 4), "mask": torch.ones(3, dtype=torch.bool)}
