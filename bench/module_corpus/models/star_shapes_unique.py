import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim=8, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim)

    def forward(self, x, ids):
        q = self.qkv(x)
        q = q.view(*q.shape[:-1], self.heads, -1)
        new_shape = q.size()[:-2] + (q.size(-2) * q.size(-1),)
        q = q.reshape(new_shape)
        uniq, inverse, counts = torch.unique(ids, sorted=True, return_inverse=True, return_counts=True)
        w = x.new_tensor([1.0, 2.0])[None, :].repeat(x.size(0), x.size(-1) // 2)
        vals, order = torch.sort(q.sum(-1), dim=-1, descending=True)
        cs = torch.cumsum(vals, dim=-1).flip(-1)
        return q * w.unsqueeze(1), uniq, inverse, counts, cs, order


def make_inputs():
    return torch.randn(2, 3, 8), torch.tensor([3, 1, 3, 7, 1])
