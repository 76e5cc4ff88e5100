import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

LOG2PI = np.log(2 * np.pi)


class Model(nn.Module):
    """VAE / MDN-style Gaussian log-likelihoods with numpy constants in forward: -0.5 * np.log(2 * np.pi),
    np.sqrt(d_k) attention scaling, a numpy array of prior weights kept on self and turned into a tensor with
    torch.from_numpy(...).float().to(x.device) every call, np.prod(shape) for normalisation."""

    def __init__(self, dim=4, n_comp=3):
        super().__init__()
        self.enc = nn.Linear(dim, 2 * dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.prior_pi = np.array([0.5, 0.3, 0.2])
        self.prior_mu = np.linspace(-1, 1, n_comp * dim).reshape(n_comp, dim).astype(np.float32)
        self.d_k = dim

    @staticmethod
    def log_normal_diag(x, mean, log_var):
        return -0.5 * (LOG2PI + log_var + torch.pow(x - mean, 2) / torch.exp(log_var))

    def forward(self, x):
        mu, log_var = self.enc(x).chunk(2, dim=-1)
        z = mu
        log_q = self.log_normal_diag(z, mu, log_var).sum(-1)
        pi = torch.from_numpy(self.prior_pi).float().to(x.device)
        mus = torch.from_numpy(self.prior_mu).to(x.device)
        comp = -0.5 * (np.log(2 * np.pi) + (z.unsqueeze(1) - mus.unsqueeze(0)) ** 2).sum(-1)
        log_p = torch.logsumexp(comp + torch.log(pi), dim=1)
        kl = (log_q - log_p).mean()
        attn = F.softmax(self.q(x) @ self.k(x).t() / np.sqrt(self.d_k), dim=-1)
        bpd = kl / (np.prod(x.shape[1:]) * math.log(2.0))
        return kl, bpd, attn


def make_inputs():
    return (torch.randn(5, 4),)
