import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """@torch.no_grad() decorating a helper method (momentum / target computation), register_hook only when
    training and requires_grad, @staticmethod and @classmethod helpers, a @property computed size."""

    def __init__(self, dim=8, n_proto=5, temp=0.1):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 16), nn.ReLU(), nn.Linear(16, dim))
        self.prototypes = nn.Linear(dim, n_proto, bias=False)
        self.temp = temp
        self.grads = []

    @property
    def num_prototypes(self):
        return self.prototypes.weight.shape[0]

    @staticmethod
    def l2norm(x, dim=-1):
        return x / x.norm(dim=dim, keepdim=True).clamp_min(1e-6)

    @classmethod
    def sharpen(cls, p, T):
        p = p ** (1.0 / T)
        return p / p.sum(-1, keepdim=True)

    @torch.no_grad()
    def normalize_prototypes(self):
        w = self.prototypes.weight.data.clone()
        w = self.l2norm(w, dim=1)
        self.prototypes.weight.copy_(w)

    @torch.no_grad()
    def targets(self, scores):
        return self.sharpen(F.softmax(scores / self.temp, dim=-1), 0.5)

    def forward(self, x):
        self.normalize_prototypes()
        z = self.l2norm(self.encoder(x))
        if self.training and z.requires_grad:
            z.register_hook(lambda g: self.grads.append(g.norm()))
        scores = self.prototypes(z)
        q = self.targets(scores)
        loss = -(q * F.log_softmax(scores / self.temp, dim=-1)).sum(-1).mean()
        return loss, scores, self.num_prototypes


def make_inputs():
    return (torch.randn(6, 8),)
