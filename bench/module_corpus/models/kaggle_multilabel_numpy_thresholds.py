import numpy as np
import torch
import torch.nn as nn


class Model(nn.Module):
    """Kaggle multi-label (protein / planet) eval step in forward: sigmoid probabilities moved to numpy,
    per-class numpy threshold array, (probs > thresholds).astype(int), per-class F1 in numpy with
    np.logical_and / sum(axis=0) / np.nan_to_num, macro F1 as a Python float, BCEWithLogits with pos_weight."""

    def __init__(self, n_classes=5):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, n_classes))
        self.thresholds = np.array([0.5, 0.4, 0.3, 0.5, 0.6])
        self.register_buffer("pos_weight", torch.tensor([1.0, 2.0, 3.0, 1.0, 0.5]))

    def forward(self, x, y):
        logits = self.net(x)
        loss = nn.BCEWithLogitsLoss(pos_weight=self.pos_weight)(logits, y)
        probs = torch.sigmoid(logits).detach().cpu().numpy()
        preds = (probs > self.thresholds).astype(int)
        targets = y.cpu().numpy().astype(int)
        tp = np.logical_and(preds == 1, targets == 1).sum(axis=0)
        fp = np.logical_and(preds == 1, targets == 0).sum(axis=0)
        fn = np.logical_and(preds == 0, targets == 1).sum(axis=0)
        f1 = np.nan_to_num(2 * tp / (2 * tp + fp + fn + 1e-9))
        return loss, torch.from_numpy(preds), float(f1.mean())


def make_inputs():
    return torch.randn(6, 10), (torch.rand(6, 5) > 0.5).float()
