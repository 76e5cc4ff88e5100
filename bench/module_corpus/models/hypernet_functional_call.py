import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call


class TargetNet(nn.Module):
    def __init__(self, din=3, hidden=8, dout=2):
        super().__init__()
        self.l1 = nn.Linear(din, hidden)
        self.l2 = nn.Linear(hidden, dout)

    def forward(self, x):
        return self.l2(torch.tanh(self.l1(x)))


class Model(nn.Module):
    """HyperNetwork: an embedding-conditioned MLP emits the target net's weights, applied via torch.func.functional_call."""

    def __init__(self, n_tasks=4, z_dim=6):
        super().__init__()
        self.target = TargetNet()
        self.param_shapes = {n: p.shape for n, p in self.target.named_parameters()}
        self.param_numels = [p.numel() for p in self.target.parameters()]
        total = sum(self.param_numels)
        self.task_emb = nn.Embedding(n_tasks, z_dim)
        self.hyper = nn.Sequential(nn.Linear(z_dim, 32), nn.ReLU(), nn.Linear(32, total))

    def forward(self, x, task_id):
        z = self.task_emb(task_id)
        flat = self.hyper(z) * 0.1
        chunks = torch.split(flat, self.param_numels, dim=-1)
        params = {name: c.view(shape) for (name, shape), c in zip(self.param_shapes.items(), chunks)}
        y = functional_call(self.target, params, (x,))
        base = self.target(x)
        # also the older-style manual functional forward with F.linear over the dict
        h = torch.tanh(F.linear(x, params["l1.weight"], params["l1.bias"]))
        y2 = F.linear(h, params["l2.weight"], params["l2.bias"])
        return y, base, y2


def make_inputs():
    return torch.randn(5, 3), torch.tensor(2)
