import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, Independent, MixtureSameFamily, Normal


class MDN(nn.Module):
    """Mixture density network head (world models / handwriting synthesis) as a torch.distributions mixture."""

    def __init__(self, in_dim, out_dim, n_gaussians):
        super().__init__()
        self.out_dim, self.k = out_dim, n_gaussians
        self.pi = nn.Linear(in_dim, n_gaussians)
        self.mu = nn.Linear(in_dim, n_gaussians * out_dim)
        self.sigma = nn.Linear(in_dim, n_gaussians * out_dim)

    def forward(self, h):
        logits = self.pi(h)
        mu = self.mu(h).view(*h.shape[:-1], self.k, self.out_dim)
        sigma = F.softplus(self.sigma(h)).view(*h.shape[:-1], self.k, self.out_dim) + 1e-4
        mix = Categorical(logits=logits)
        comp = Independent(Normal(mu, sigma), 1)
        return MixtureSameFamily(mix, comp), (logits, mu, sigma)


def manual_nll(logits, mu, sigma, y):
    y = y.unsqueeze(-2)
    log_comp = -0.5 * (((y - mu) / sigma) ** 2 + 2 * torch.log(sigma) + math.log(2 * math.pi)).sum(-1)
    return -torch.logsumexp(F.log_softmax(logits, -1) + log_comp, -1)


class Model(nn.Module):
    def __init__(self, in_dim=6, hidden=16, out_dim=2, k=3):
        super().__init__()
        self.rnn_like = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh())
        self.mdn = MDN(hidden, out_dim, k)

    def forward(self, x, y):
        dist, (logits, mu, sigma) = self.mdn(self.rnn_like(x))
        nll = -dist.log_prob(y)
        return nll, dist.mean, dist.variance, manual_nll(logits, mu, sigma, y)


def make_inputs():
    return torch.randn(4, 6), torch.randn(4, 2)
