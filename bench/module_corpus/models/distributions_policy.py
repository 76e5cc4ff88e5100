import torch
import torch.nn as nn
from torch.distributions import Categorical, Normal, kl_divergence


class Model(nn.Module):
    """Actor-critic head (RL repos) using torch.distributions for log-probs and entropy."""

    def __init__(self, obs=6, act=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs, 16), nn.Tanh())
        self.mu = nn.Linear(16, act)
        self.log_std = nn.Parameter(torch.zeros(act) - 0.5)
        self.logits = nn.Linear(16, 4)
        self.value = nn.Linear(16, 1)

    def forward(self, obs, actions, disc_actions):
        h = self.body(obs)
        dist = Normal(self.mu(h), self.log_std.exp())
        logp = dist.log_prob(actions).sum(-1)
        ent = dist.entropy().sum(-1)
        cat = Categorical(logits=self.logits(h))
        ref = Normal(torch.zeros_like(dist.loc), torch.ones_like(dist.scale))
        kl = kl_divergence(dist, ref).sum(-1)
        return logp + cat.log_prob(disc_actions), ent + cat.entropy(), kl, self.value(h).squeeze(-1)


def make_inputs():
    return torch.randn(4, 6), torch.randn(4, 3), torch.tensor([0, 3, 1, 2])
