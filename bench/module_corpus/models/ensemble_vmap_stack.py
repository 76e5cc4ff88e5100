import copy
import torch
import torch.nn as nn
from torch.func import functional_call, stack_module_state, vmap


class Critic(nn.Module):
    def __init__(self, obs=5, act=2, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs + act, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], -1)).squeeze(-1)


class Model(nn.Module):
    """REDQ/SAC-N ensemble of critics evaluated with vmap over stacked parameters (PyTorch model-ensembling tutorial)."""

    def __init__(self, n_critics=5):
        super().__init__()
        critics = [Critic() for _ in range(n_critics)]
        params, buffers = stack_module_state(critics)
        self.params = nn.ParameterDict({k.replace(".", "_"): nn.Parameter(v) for k, v in params.items()})
        self._names = list(params.keys())
        self.base = copy.deepcopy(critics[0]).to("meta")
        self.n_critics = n_critics

    def forward(self, obs, act, subset_size: int = 2):
        params = {n: self.params[n.replace(".", "_")] for n in self._names}

        def fmodel(p, o, a):
            return functional_call(self.base, (p, {}), (o, a))

        qs = vmap(fmodel, in_dims=(0, None, None))(params, obs, act)  # [n_critics, B]
        q_min = qs[:subset_size].min(0).values
        q_mean = qs.mean(0)
        q_std = qs.std(0)
        return qs, q_min, q_mean - 0.5 * q_std


def make_inputs():
    return torch.randn(4, 5), torch.randn(4, 2)
