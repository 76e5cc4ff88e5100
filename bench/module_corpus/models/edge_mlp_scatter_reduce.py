from typing import Optional
import torch
import torch.nn as nn


def broadcast(src: torch.Tensor, other: torch.Tensor, dim: int):
    if dim < 0:
        dim = other.dim() + dim
    if src.dim() == 1:
        for _ in range(0, dim):
            src = src.unsqueeze(0)
    for _ in range(src.dim(), other.dim()):
        src = src.unsqueeze(-1)
    src = src.expand(other.size())
    return src


def scatter_sum(src, index, dim=-1, out=None, dim_size: Optional[int] = None):
    index = broadcast(index, src, dim)
    if out is None:
        size = list(src.size())
        if dim_size is not None:
            size[dim] = dim_size
        elif index.numel() == 0:
            size[dim] = 0
        else:
            size[dim] = int(index.max()) + 1
        out = torch.zeros(size, dtype=src.dtype, device=src.device)
        return out.scatter_add_(dim, index, src)
    return out.scatter_add_(dim, index, src)


def scatter_mean(src, index, dim=-1, dim_size=None):
    out = scatter_sum(src, index, dim, dim_size=dim_size)
    dim_size = out.size(dim)
    index_dim = dim
    if index_dim < 0:
        index_dim = index_dim + src.dim()
    if index.dim() <= index_dim:
        index_dim = index.dim() - 1
    ones = torch.ones(index.size(), dtype=src.dtype, device=src.device)
    count = scatter_sum(ones, index, index_dim, None, dim_size)
    count[count < 1] = 1
    count = broadcast(count, out, dim)
    if out.is_floating_point():
        out.true_divide_(count)
    else:
        out.div_(count, rounding_mode="floor")
    return out


def scatter(src, index, dim=-1, dim_size=None, reduce="sum"):
    if reduce == "sum" or reduce == "add":
        return scatter_sum(src, index, dim, dim_size=dim_size)
    elif reduce == "mean":
        return scatter_mean(src, index, dim, dim_size=dim_size)
    elif reduce in ("max", "min"):
        size = list(src.size())
        size[dim] = dim_size
        out = torch.zeros(size, dtype=src.dtype, device=src.device)
        return out.scatter_reduce(dim, broadcast(index, src, dim), src, reduce="a" + reduce, include_self=False)
    raise ValueError(reduce)


class EdgeModel(nn.Module):
    def __init__(self, node_dim, edge_dim, hidden):
        super().__init__()
        self.edge_mlp = nn.Sequential(nn.Linear(2 * node_dim + edge_dim, hidden), nn.ReLU(), nn.Linear(hidden, edge_dim))

    def forward(self, src, dest, edge_attr):
        out = torch.cat([src, dest, edge_attr], 1)
        return self.edge_mlp(out)


class NodeModel(nn.Module):
    def __init__(self, node_dim, edge_dim, hidden, aggr):
        super().__init__()
        self.aggr = aggr
        self.node_mlp_1 = nn.Sequential(nn.Linear(node_dim + edge_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.node_mlp_2 = nn.Sequential(nn.Linear(node_dim + hidden, hidden), nn.ReLU(), nn.Linear(hidden, node_dim))

    def forward(self, x, edge_index, edge_attr):
        row, col = edge_index
        out = torch.cat([x.index_select(0, row), edge_attr], dim=1)
        out = self.node_mlp_1(out)
        out = scatter(out, col, dim=0, dim_size=x.size(0), reduce=self.aggr)
        out = torch.cat([x, out], dim=1)
        return self.node_mlp_2(out)


class MetaLayer(nn.Module):
    """PyG MetaLayer (Battaglia et al. graph network block) with torch_scatter reimplemented in torch."""

    def __init__(self, edge_model=None, node_model=None):
        super().__init__()
        self.edge_model = edge_model
        self.node_model = node_model

    def forward(self, x, edge_index, edge_attr=None):
        row = edge_index[0]
        col = edge_index[1]
        if self.edge_model is not None:
            edge_attr = self.edge_model(x[row], x[col], edge_attr)
        if self.node_model is not None:
            x = self.node_model(x, edge_index, edge_attr)
        return x, edge_attr


class Model(nn.Module):
    def __init__(self, node_dim=6, edge_dim=4, hidden=16):
        super().__init__()
        self.layers = nn.ModuleList([
            MetaLayer(EdgeModel(node_dim, edge_dim, hidden), NodeModel(node_dim, edge_dim, hidden, aggr))
            for aggr in ("mean", "sum", "max")])

    def forward(self, x, edge_index, edge_attr, batch):
        for layer in self.layers:
            x, edge_attr = layer(x, edge_index, edge_attr)
        graph = scatter(x, batch, dim=0, reduce="mean", dim_size=2)
        return x, edge_attr, graph


def make_inputs():
    src = torch.tensor([0, 1, 1, 2, 3, 4, 5, 6, 6, 7, 0])
    dst = torch.tensor([1, 0, 2, 1, 4, 3, 6, 5, 7, 6, 2])
    return torch.randn(8, 6), torch.stack([src, dst]), torch.randn(11, 4), torch.tensor([0, 0, 0, 1, 1, 1, 1, 1])
