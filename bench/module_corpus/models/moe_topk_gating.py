import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.w1 = nn.Linear(d, hidden)
        self.w2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


class Model(nn.Module):
    """Top-k gated sparse MoE (Shazeer-style) with load-balancing aux loss and dense dispatch."""

    def __init__(self, d=8, hidden=16, num_experts=4, k=2, noisy_gating=True):
        super().__init__()
        self.k, self.num_experts, self.noisy_gating = k, num_experts, noisy_gating
        self.gate = nn.Linear(d, num_experts, bias=False)
        self.noise = nn.Linear(d, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d, hidden) for _ in range(num_experts)])

    def forward(self, x):
        B, T, D = x.shape
        flat = x.reshape(-1, D)
        logits = self.gate(flat)
        if self.noisy_gating and self.training:
            logits = logits + torch.randn_like(logits) * F.softplus(self.noise(flat))
        top_logits, top_idx = logits.topk(min(self.k + 1, self.num_experts), dim=-1)
        top_k_logits = top_logits[:, : self.k]
        top_k_idx = top_idx[:, : self.k]
        top_k_gates = F.softmax(top_k_logits, dim=-1)
        gates = torch.zeros_like(logits).scatter(1, top_k_idx, top_k_gates)
        expert_out = torch.stack([e(flat) for e in self.experts], dim=1)  # N, E, D
        out = torch.einsum("ne,ned->nd", gates, expert_out)
        picked = expert_out.gather(1, top_k_idx.unsqueeze(-1).expand(-1, -1, D))
        importance = gates.sum(0)
        load = (gates > 0).sum(0).float()
        cv = lambda v: v.float().var() / (v.float().mean() ** 2 + 1e-10)
        aux = cv(importance) + cv(load)
        return out.view(B, T, D), aux, picked.sum(1).view(B, T, D)


def make_inputs():
    return (torch.randn(2, 5, 8),)
