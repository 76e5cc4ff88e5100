import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, Independent, TransformedDistribution
from torch.distributions.transforms import TanhTransform, AffineTransform

LOG_STD_MAX = 2
LOG_STD_MIN = -5


def mlp(sizes, activation, output_activation=nn.Identity):
    layers = []
    for j in range(len(sizes) - 1):
        act = activation if j < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
    return nn.Sequential(*layers)


class SquashedGaussianMLPActor(nn.Module):
    """Spinning Up SAC actor with deterministic branch and the tanh log-prob correction."""

    def __init__(self, obs_dim, act_dim, hidden_sizes, activation, act_limit):
        super().__init__()
        self.net = mlp([obs_dim] + list(hidden_sizes), activation, activation)
        self.mu_layer = nn.Linear(hidden_sizes[-1], act_dim)
        self.log_std_layer = nn.Linear(hidden_sizes[-1], act_dim)
        self.act_limit = act_limit

    def forward(self, obs, deterministic=False, with_logprob=True):
        net_out = self.net(obs)
        mu = self.mu_layer(net_out)
        log_std = self.log_std_layer(net_out)
        log_std = torch.tanh(log_std)
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)
        std = torch.exp(log_std)
        pi_distribution = Normal(mu, std)
        if deterministic:
            pi_action = mu
        else:
            pi_action = pi_distribution.rsample()
        if with_logprob:
            logp_pi = pi_distribution.log_prob(pi_action).sum(axis=-1)
            logp_pi -= (2 * (math.log(2) - pi_action - F.softplus(-2 * pi_action))).sum(axis=1)
        else:
            logp_pi = None
        pi_action = torch.tanh(pi_action)
        pi_action = self.act_limit * pi_action
        return pi_action, logp_pi


class Model(nn.Module):
    def __init__(self, obs_dim=5, act_dim=2, hidden_sizes=(16, 16), act_limit=2.0):
        super().__init__()
        self.pi = SquashedGaussianMLPActor(obs_dim, act_dim, hidden_sizes, nn.ReLU, act_limit)
        self.q1 = mlp([obs_dim + act_dim] + list(hidden_sizes) + [1], nn.ReLU)
        self.act_limit = act_limit

    def forward(self, obs, act):
        a, logp = self.pi(obs, deterministic=True)
        q = torch.squeeze(self.q1(torch.cat([obs, a], dim=-1)), -1)
        # log-prob of replay actions under a TransformedDistribution (tanh squash then scale)
        h = self.pi.net(obs)
        base = Independent(Normal(self.pi.mu_layer(h), self.pi.log_std_layer(h).clamp(LOG_STD_MIN, LOG_STD_MAX).exp()), 1)
        dist = TransformedDistribution(base, [TanhTransform(cache_size=1), AffineTransform(0.0, self.act_limit)])
        act = act.clamp(-self.act_limit * 0.99, self.act_limit * 0.99)
        return a, logp, q, dist.log_prob(act), base.entropy()


def make_inputs():
    return torch.randn(4, 5), torch.randn(4, 2)
