import inspect
from collections import OrderedDict
import torch
import torch.nn as nn
import torch.nn.functional as F


class MessagePassing(nn.Module):
    """A cut-down PyG MessagePassing: propagate() inspects message()'s signature to decide what to gather (x_i / x_j)."""

    special_args = {"edge_index", "index", "size_i", "dim_size"}

    def __init__(self, aggr="add", flow="source_to_target", node_dim=-2):
        super().__init__()
        self.aggr = aggr
        assert self.aggr in ["add", "mean", "max"]
        self.flow = flow
        self.node_dim = node_dim
        self.__user_args__ = self._inspect_args(self.message)

    @staticmethod
    def _inspect_args(func):
        params = inspect.signature(func).parameters
        params = OrderedDict(params)
        return [p for p in params.keys() if p not in ("self",)]

    def __set_size__(self, size, dim, src):
        the_size = size[dim]
        if the_size is None:
            size[dim] = src.size(self.node_dim)
        elif the_size != src.size(self.node_dim):
            raise ValueError(f"Encountered tensor with size {src.size(self.node_dim)} in dimension {self.node_dim}, "
                             f"but expected size {the_size}.")

    def __collect__(self, args, edge_index, size, kwargs):
        i, j = (1, 0) if self.flow == "source_to_target" else (0, 1)
        out = {}
        for arg in args:
            if arg[-2:] not in ["_i", "_j"]:
                out[arg] = kwargs.get(arg, None)
            else:
                dim = 0 if arg[-2:] == "_j" else 1
                data = kwargs.get(arg[:-2], None)
                if isinstance(data, (tuple, list)):
                    assert len(data) == 2
                    data = data[dim]
                if isinstance(data, torch.Tensor):
                    self.__set_size__(size, dim, data)
                    data = data.index_select(self.node_dim, edge_index[dim])
                out[arg] = data
        out["edge_index"] = edge_index
        out["index"] = edge_index[i]
        out["size_i"] = size[1] if size[1] is not None else size[0]
        out["dim_size"] = out["size_i"]
        return out

    def propagate(self, edge_index, size=None, **kwargs):
        size = [None, None] if size is None else list(size)
        coll_dict = self.__collect__(self.__user_args__, edge_index, size, kwargs)
        msg_kwargs = {k: coll_dict[k] for k in self.__user_args__}
        out = self.message(**msg_kwargs)
        out = self.aggregate(out, coll_dict["index"], coll_dict["dim_size"])
        return self.update(out)

    def aggregate(self, inputs, index, dim_size):
        shape = list(inputs.shape)
        shape[0] = dim_size
        out = inputs.new_zeros(shape)
        idx = index.view(-1, *([1] * (inputs.dim() - 1))).expand_as(inputs)
        if self.aggr == "add":
            return out.scatter_add_(0, idx, inputs)
        if self.aggr == "mean":
            cnt = inputs.new_zeros(dim_size).scatter_add_(0, index, torch.ones_like(index, dtype=inputs.dtype))
            return out.scatter_add_(0, idx, inputs) / cnt.clamp(min=1).view(-1, *([1] * (inputs.dim() - 1)))
        return out.scatter_reduce_(0, idx, inputs, reduce="amax", include_self=False)

    def message(self, x_j):
        return x_j

    def update(self, inputs):
        return inputs


class EdgeConv(MessagePassing):
    def __init__(self, in_channels, out_channels):
        super().__init__(aggr="max")
        self.mlp = nn.Sequential(nn.Linear(2 * in_channels, out_channels), nn.ReLU(), nn.Linear(out_channels, out_channels))

    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=x)

    def message(self, x_i, x_j):
        return self.mlp(torch.cat([x_i, x_j - x_i], dim=1))


class GINConv(MessagePassing):
    def __init__(self, nn_, eps=0.0):
        super().__init__(aggr="add")
        self.nn = nn_
        self.eps = nn.Parameter(torch.tensor([eps]))

    def forward(self, x, edge_index, edge_weight=None):
        out = self.propagate(edge_index, x=(x, x), edge_weight=edge_weight)
        return self.nn(out + (1 + self.eps) * x)

    def message(self, x_j, edge_weight):
        return x_j if edge_weight is None else edge_weight.view(-1, 1) * x_j


class Model(nn.Module):
    def __init__(self, in_dim=4, hidden=8):
        super().__init__()
        self.conv1 = EdgeConv(in_dim, hidden)
        self.conv2 = GINConv(nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()))
        self.mean_conv = MessagePassing(aggr="mean")
        self.lin = nn.Linear(hidden, 2)

    def forward(self, x, edge_index, edge_weight):
        x = F.relu(self.conv1(x, edge_index))
        x = self.conv2(x, edge_index, edge_weight)
        x = x + self.mean_conv.propagate(edge_index, x=x)
        return self.lin(x)


def make_inputs():
    src = torch.tensor([0, 1, 1, 2, 3, 4, 5, 2])
    dst = torch.tensor([1, 0, 2, 1, 4, 3, 2, 5])
    return torch.randn(6, 4), torch.stack([src, dst]), torch.rand(8)
