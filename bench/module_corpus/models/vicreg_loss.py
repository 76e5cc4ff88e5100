import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def off_diagonal(x):
    n, m = x.shape
    assert n == m
    return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def Projector(args, embedding):
    mlp_spec = f"{embedding}-{args.mlp}"
    layers = []
    f = list(map(int, mlp_spec.split("-")))
    for i in range(len(f) - 2):
        layers.append(nn.Linear(f[i], f[i + 1]))
        layers.append(nn.BatchNorm1d(f[i + 1]))
        layers.append(nn.ReLU(True))
    layers.append(nn.Linear(f[-2], f[-1], bias=False))
    return nn.Sequential(*layers)


class Model(nn.Module):
    """facebookresearch VICReg with an argparse.Namespace config: invariance (mse), variance (hinge on std),
    covariance (off-diagonal squared / num_features)."""

    def __init__(self):
        super().__init__()
        self.args = argparse.Namespace(mlp="16-16", batch_size=6, sim_coeff=25.0, std_coeff=25.0, cov_coeff=1.0)
        self.num_features = int(self.args.mlp.split("-")[-1])
        self.embedding = 12
        self.backbone = nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, self.embedding))
        self.projector = Projector(self.args, self.embedding)

    def forward(self, x, y):
        x = self.projector(self.backbone(x))
        y = self.projector(self.backbone(y))
        repr_loss = F.mse_loss(x, y)
        x = x - x.mean(dim=0)
        y = y - y.mean(dim=0)
        std_x = torch.sqrt(x.var(dim=0) + 0.0001)
        std_y = torch.sqrt(y.var(dim=0) + 0.0001)
        std_loss = torch.mean(F.relu(1 - std_x)) / 2 + torch.mean(F.relu(1 - std_y)) / 2
        cov_x = (x.T @ x) / (self.args.batch_size - 1)
        cov_y = (y.T @ y) / (self.args.batch_size - 1)
        cov_loss = off_diagonal(cov_x).pow_(2).sum().div(self.num_features) + off_diagonal(cov_y).pow_(2).sum().div(self.num_features)
        loss = self.args.sim_coeff * repr_loss + self.args.std_coeff * std_loss + self.args.cov_coeff * cov_loss
        return loss, {"repr": repr_loss, "std": std_loss, "cov": cov_loss}


def make_inputs():
    return torch.randn(6, 10), torch.randn(6, 10)
