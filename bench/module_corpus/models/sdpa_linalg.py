import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """SDPA with is_causal, cdist prototypes (ProtoNet), linalg.norm, whitening via linalg.solve."""

    def __init__(self, d=8, n_proto=3):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.protos = nn.Parameter(torch.randn(n_proto, d))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, 2, d // 2).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = a.transpose(1, 2).reshape(b, n, d)
        dists = torch.cdist(h.reshape(-1, d), self.protos)
        logits = -dists ** 2
        cov = h.reshape(-1, d).T @ h.reshape(-1, d) / (b * n) + torch.eye(d)
        white = torch.linalg.solve(cov, h.reshape(-1, d).T).T
        return logits.log_softmax(-1), torch.linalg.norm(white, dim=-1), torch.linalg.vector_norm(h, ord=1)


def make_inputs():
    return (torch.randn(2, 4, 8),)
