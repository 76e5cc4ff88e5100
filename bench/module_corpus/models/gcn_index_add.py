import torch
import torch.nn as nn
import torch.nn.functional as F


class GCNConv(nn.Module):
    """Kipf & Welling GCN layer with symmetric normalisation, written with index_add_ (PyG-free)."""

    def __init__(self, in_channels, out_channels, add_self_loops=True):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))
        self.add_self_loops = add_self_loops

    def forward(self, x, edge_index):
        num_nodes = x.size(0)
        if self.add_self_loops:
            loops = torch.arange(num_nodes, device=x.device).unsqueeze(0).repeat(2, 1)
            edge_index = torch.cat([edge_index, loops], dim=1)
        row, col = edge_index[0], edge_index[1]
        deg = torch.zeros(num_nodes, dtype=x.dtype, device=x.device)
        deg.scatter_add_(0, col, torch.ones(col.size(0), dtype=x.dtype))
        deg_inv_sqrt = deg.pow(-0.5)
        deg_inv_sqrt[deg_inv_sqrt == float("inf")] = 0
        norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]
        h = self.lin(x)
        msg = h[row] * norm.view(-1, 1)
        out = torch.zeros_like(h).index_add_(0, col, msg)
        return out + self.bias


class Model(nn.Module):
    def __init__(self, in_dim=6, hidden=16, num_classes=3, num_layers=3):
        super().__init__()
        dims = [in_dim] + [hidden] * (num_layers - 1)
        self.convs = nn.ModuleList([GCNConv(a, b) for a, b in zip(dims, dims[1:])])
        self.out = GCNConv(hidden, num_classes)
        self.dropout = 0.5

    def forward(self, x, edge_index, batch):
        for conv in self.convs:
            x = F.relu(conv(x, edge_index))
            x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.out(x, edge_index)
        num_graphs = 2
        pooled = torch.zeros(num_graphs, x.size(1)).index_add_(0, batch, x)
        counts = torch.bincount(batch, minlength=num_graphs).clamp(min=1).unsqueeze(1)
        return F.log_softmax(x, dim=-1), pooled / counts


def make_inputs():
    src = torch.tensor([0, 1, 1, 2, 3, 4, 5, 6, 6, 7])
    dst = torch.tensor([1, 0, 2, 1, 4, 3, 6, 5, 7, 6])
    edge_index = torch.stack([src, dst])
    batch = torch.tensor([0, 0, 0, 1, 1, 1, 1, 1])
    return torch.randn(8, 6), edge_index, batch
