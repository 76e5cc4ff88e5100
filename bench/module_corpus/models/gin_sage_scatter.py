from typing import Optional, Tuple, Union
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

OptTensor = Optional[Tensor]
PairTensor = Tuple[Tensor, Tensor]


def broadcast(src: Tensor, ref: Tensor, dim: int) -> Tensor:
    size = ((1, ) * dim) + (-1, ) + ((1, ) * (ref.dim() - dim - 1))
    return src.view(size).expand_as(ref)


def scatter(src: Tensor, index: Tensor, dim: int = 0, dim_size: Optional[int] = None, reduce: str = 'sum') -> Tensor:
    if dim < 0:
        dim = src.dim() + dim
    if dim_size is None:
        dim_size = int(index.max()) + 1 if index.numel() > 0 else 0
    size = list(src.size())
    size[dim] = dim_size
    if reduce == 'sum' or reduce == 'add':
        index = broadcast(index, src, dim)
        return src.new_zeros(size).scatter_add_(dim, index, src)
    if reduce == 'mean':
        count = src.new_zeros(dim_size)
        count.scatter_add_(0, index, src.new_ones(src.size(dim)))
        count = count.clamp(min=1)
        index = broadcast(index, src, dim)
        out = src.new_zeros(size).scatter_add_(dim, index, src)
        return out / broadcast(count, out, dim)
    if reduce in ('min', 'max', 'amin', 'amax'):
        index = broadcast(index, src, dim)
        return src.new_zeros(size).scatter_reduce_(dim, index, src, reduce=f'a{reduce[-3:]}', include_self=False)
    raise ValueError(f"Encountered invalid `reduce` argument '{reduce}'")


class GINConv(nn.Module):
    def __init__(self, nn_: nn.Module, eps: float = 0., train_eps: bool = False, **kwargs):
        kwargs.setdefault('aggr', 'add')
        super().__init__()
        self.aggr = kwargs['aggr']
        self.nn = nn_
        self.initial_eps = eps
        if train_eps:
            self.eps = torch.nn.Parameter(torch.empty(1))
        else:
            self.register_buffer('eps', torch.empty(1))
        self.eps.data.fill_(self.initial_eps)

    def forward(self, x: Union[Tensor, PairTensor], edge_index: Tensor, size=None) -> Tensor:
        if isinstance(x, Tensor):
            x = (x, x)
        x_j = x[0].index_select(0, edge_index[0])
        out = scatter(x_j, edge_index[1], dim=0, dim_size=x[1].size(0), reduce=self.aggr)
        x_r = x[1]
        if x_r is not None:
            out = out + (1 + self.eps) * x_r
        return self.nn(out)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}(nn={self.nn})'


class SAGEConv(nn.Module):
    def __init__(self, in_channels, out_channels, aggr: str = 'mean', normalize: bool = False, root_weight: bool = True,
                 project: bool = False, bias: bool = True):
        super().__init__()
        if isinstance(in_channels, int):
            in_channels = (in_channels, in_channels)
        self.aggr = aggr
        self.normalize = normalize
        self.root_weight = root_weight
        self.project = project
        if self.project:
            self.lin = nn.Linear(in_channels[0], in_channels[0], bias=True)
        self.lin_l = nn.Linear(in_channels[0], out_channels, bias=bias)
        if self.root_weight:
            self.lin_r = nn.Linear(in_channels[1], out_channels, bias=False)

    def forward(self, x, edge_index: Tensor, size=None) -> Tensor:
        if isinstance(x, Tensor):
            x = (x, x)
        if self.project and hasattr(self, 'lin'):
            x = (self.lin(x[0]).relu(), x[1])
        out = scatter(x[0][edge_index[0]], edge_index[1], 0, x[1].size(0), reduce=self.aggr)
        out = self.lin_l(out)
        x_r = x[1]
        if self.root_weight and x_r is not None:
            out = out + self.lin_r(x_r)
        if self.normalize:
            out = F.normalize(out, p=2., dim=-1)
        return out


def global_add_pool(x: Tensor, batch: OptTensor, size: Optional[int] = None) -> Tensor:
    if batch is None:
        return x.sum(dim=-2, keepdim=x.dim() == 2)
    return scatter(x, batch, dim=-2, dim_size=size, reduce='sum')


class Model(nn.Module):
    """PyG-style GIN (eps buffer vs parameter, kwargs.setdefault) and GraphSAGE (mean/max aggregation) on a
    vendored torch_scatter `scatter` (broadcast helper, f-string reduce names, scatter_reduce_ include_self=False)."""

    def __init__(self, in_dim=4, hid=8, num_graphs=2):
        super().__init__()
        self.num_graphs = num_graphs
        self.conv1 = GINConv(nn.Sequential(nn.Linear(in_dim, hid), nn.ReLU(), nn.Linear(hid, hid)), train_eps=True)
        self.conv2 = GINConv(nn.Sequential(nn.Linear(hid, hid), nn.ReLU()), eps=0.1, aggr='max')
        self.sage = SAGEConv(hid, hid, aggr='mean', normalize=True, project=True)
        self.sage_max = SAGEConv((hid, hid), hid, aggr='max', root_weight=False)
        self.lin = nn.Linear(2 * hid, 3)

    def forward(self, x, edge_index, batch):
        h = self.conv1(x, edge_index)
        h = self.conv2(h, edge_index)
        a = self.sage(h, edge_index)
        b = self.sage_max((h, h), edge_index)
        g = global_add_pool(torch.cat([a, b], -1), batch, size=self.num_graphs)
        return self.lin(g)


def make_inputs():
    edge_index = torch.tensor([[0, 1, 1, 2, 3, 4, 4, 5, 5, 6], [1, 0, 2, 1, 4, 3, 5, 4, 6, 5]])
    return torch.randn(7, 4), edge_index, torch.tensor([0, 0, 0, 1, 1, 1, 1])
