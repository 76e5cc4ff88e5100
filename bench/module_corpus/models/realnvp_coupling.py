import math
import torch
import torch.nn as nn


class AffineCoupling(nn.Module):
    def __init__(self, dim, hidden, mask):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.LeakyReLU(0.01), nn.Linear(hidden, hidden),
                                 nn.LeakyReLU(0.01), nn.Linear(hidden, 2 * dim))
        self.scale = nn.Parameter(torch.zeros(dim))

    def forward(self, x, reverse=False):
        x_masked = x * self.mask
        s, t = self.net(x_masked).chunk(2, dim=-1)
        s = self.scale * torch.tanh(s)
        s = s * (1 - self.mask)
        t = t * (1 - self.mask)
        if not reverse:
            y = x_masked + (1 - self.mask) * (x * torch.exp(s) + t)
            return y, s.sum(dim=-1)
        y = x_masked + (1 - self.mask) * ((x - t) * torch.exp(-s))
        return y, -s.sum(dim=-1)


class ActNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, dim))
        self.log_scale = nn.Parameter(torch.zeros(1, dim))
        self.register_buffer("initialized", torch.tensor(1, dtype=torch.uint8))

    def forward(self, x):
        y = (x + self.loc) * torch.exp(self.log_scale)
        logdet = self.log_scale.sum().expand(x.size(0))
        return y, logdet


class Model(nn.Module):
    """RealNVP flow on vectors: alternating checkerboard masks, log-likelihood under N(0, I)."""

    def __init__(self, dim=6, hidden=16, n_flows=4):
        super().__init__()
        layers = []
        for i in range(n_flows):
            mask = (torch.arange(dim) % 2 == i % 2).float()
            layers.append(ActNorm(dim))
            layers.append(AffineCoupling(dim, hidden, mask))
        self.flows = nn.ModuleList(layers)
        self.dim = dim
        for flow in self.flows:
            if isinstance(flow, AffineCoupling):
                nn.init.normal_(flow.scale, std=0.5)

    def forward(self, x):
        log_det = torch.zeros(x.size(0), device=x.device)
        z = x
        for flow in self.flows:
            z, ld = flow(z)
            log_det = log_det + ld
        log_pz = -0.5 * (z ** 2).sum(-1) - 0.5 * self.dim * math.log(2 * math.pi)
        nll = -(log_pz + log_det).mean()
        x_rec = z
        for flow in reversed(self.flows):
            if isinstance(flow, AffineCoupling):
                x_rec, _ = flow(x_rec, reverse=True)
            else:
                x_rec = x_rec * torch.exp(-flow.log_scale) - flow.loc
        bits_per_dim = nll / (self.dim * math.log(2))
        return z, log_det, bits_per_dim, x_rec


def make_inputs():
    return (torch.randn(5, 6),)
