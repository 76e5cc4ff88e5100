from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F


class Member(nn.Module):
    def __init__(self, dim, hidden, seed_shift):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, 4)
        self.temperature = 1.0 + 0.25 * seed_shift

    def forward(self, x):
        return F.log_softmax(self.fc2(F.gelu(self.fc1(x))) / self.temperature, dim=-1)


class Model(nn.Module):
    """fairseq/pytorch-tutorial style ensemble using torch.jit.fork / torch.jit.wait for parallel members,
    averaged in probability space with logsumexp - log(n)."""

    def __init__(self, dim=8, n_models=3):
        super().__init__()
        self.models = nn.ModuleList([Member(dim, 16, i) for i in range(n_models)])

    def forward(self, x):
        futures: List[torch.jit.Future[torch.Tensor]] = []
        for m in self.models:
            futures.append(torch.jit.fork(m, x))
        results = [torch.jit.wait(fut) for fut in futures]
        stacked = torch.stack(results, dim=0)
        avg = torch.logsumexp(stacked, dim=0) - torch.log(torch.tensor(float(len(self.models))))
        return avg, stacked.exp().var(0)


def make_inputs():
    return (torch.randn(5, 8),)
