import torch
import torch.nn as nn
import torch.nn.functional as F


def scatter_softmax(src, index, num_nodes):
    """Edge softmax grouped by destination node (torch_scatter-style, pure torch)."""
    heads = src.size(1)
    idx = index.unsqueeze(-1).expand_as(src)
    max_per_node = torch.full((num_nodes, heads), float("-inf")).scatter_reduce(
        0, idx, src, reduce="amax", include_self=True)
    out = (src - max_per_node.gather(0, idx)).exp()
    denom = torch.zeros(num_nodes, heads).scatter_add(0, idx, out)
    return out / (denom.gather(0, idx) + 1e-16)


class GATLayer(nn.Module):
    def __init__(self, in_dim, out_dim, heads=2, negative_slope=0.2, concat=True):
        super().__init__()
        self.heads, self.out_dim, self.concat = heads, out_dim, concat
        self.lin = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_dim))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_dim))
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)
        self.negative_slope = negative_slope

    def forward(self, x, edge_index):
        N = x.size(0)
        h = self.lin(x).view(N, self.heads, self.out_dim)
        a_src = (h * self.att_src).sum(-1)
        a_dst = (h * self.att_dst).sum(-1)
        src, dst = edge_index
        e = F.leaky_relu(a_src[src] + a_dst[dst], self.negative_slope)
        alpha = scatter_softmax(e, dst, N)
        msg = h[src] * alpha.unsqueeze(-1)
        out = h.new_zeros(N, self.heads, self.out_dim)
        out.index_add_(0, dst, msg)
        if self.concat:
            return out.reshape(N, self.heads * self.out_dim)
        return out.mean(dim=1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gat1 = GATLayer(5, 8, heads=2)
        self.gat2 = GATLayer(16, 4, heads=1, concat=False)

    def forward(self, x, edge_index):
        x = F.elu(self.gat1(x, edge_index))
        return self.gat2(x, edge_index)


def make_inputs():
    edge_index = torch.tensor([[0, 1, 2, 3, 4, 5, 0, 2, 1, 3, 5],
                               [1, 2, 3, 4, 5, 0, 0, 2, 1, 3, 5]])
    return torch.randn(6, 5), edge_index
