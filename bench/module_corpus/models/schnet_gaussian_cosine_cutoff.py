import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ShiftedSoftplus(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = torch.log(torch.tensor(2.0)).item()

    def forward(self, x):
        return F.softplus(x) - self.shift


class GaussianSmearing(nn.Module):
    def __init__(self, start=0.0, stop=5.0, num_gaussians=50):
        super().__init__()
        offset = torch.linspace(start, stop, num_gaussians)
        self.coeff = -0.5 / (offset[1] - offset[0]).item() ** 2
        self.register_buffer("offset", offset)

    def forward(self, dist):
        dist = dist.view(-1, 1) - self.offset.view(1, -1)
        return torch.exp(self.coeff * torch.pow(dist, 2))


class CosineCutoff(nn.Module):
    def __init__(self, cutoff=5.0):
        super().__init__()
        self.register_buffer("cutoff", torch.tensor(cutoff, dtype=torch.float32))

    def forward(self, distances):
        cutoffs = 0.5 * (torch.cos(distances * math.pi / self.cutoff) + 1.0)
        cutoffs *= (distances < self.cutoff).float()
        return cutoffs


def radius_graph(pos, r, batch):
    """Dense O(N^2) radius graph; returns edge_index (2, E) without self loops."""
    dist = torch.cdist(pos, pos)
    same = batch[:, None] == batch[None, :]
    adj = (dist < r) & same & ~torch.eye(pos.size(0), dtype=torch.bool)
    return adj.nonzero().t()


def scatter_add(src, index, dim_size):
    out = src.new_zeros((dim_size,) + src.shape[1:])
    return out.index_add_(0, index, src)


class CFConv(nn.Module):
    def __init__(self, in_channels, out_channels, num_filters, mlp, cutoff):
        super().__init__()
        self.lin1 = nn.Linear(in_channels, num_filters, bias=False)
        self.lin2 = nn.Linear(num_filters, out_channels)
        self.mlp = mlp
        self.cosine_cutoff = CosineCutoff(cutoff)

    def forward(self, x, edge_index, edge_weight, edge_attr):
        C = self.cosine_cutoff(edge_weight)
        W = self.mlp(edge_attr) * C.view(-1, 1)
        x = self.lin1(x)
        row, col = edge_index
        msg = x[row] * W
        x = scatter_add(msg, col, x.size(0))
        return self.lin2(x)


class InteractionBlock(nn.Module):
    def __init__(self, hidden_channels, num_gaussians, num_filters, cutoff):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(num_gaussians, num_filters), ShiftedSoftplus(), nn.Linear(num_filters, num_filters))
        self.conv = CFConv(hidden_channels, hidden_channels, num_filters, self.mlp, cutoff)
        self.act = ShiftedSoftplus()
        self.lin = nn.Linear(hidden_channels, hidden_channels)

    def forward(self, x, edge_index, edge_weight, edge_attr):
        x = self.conv(x, edge_index, edge_weight, edge_attr)
        return self.lin(self.act(x))


class Model(nn.Module):
    """PyG SchNet: radius graph, Gaussian smearing of distances, cosine cutoff, cfconv, per-molecule readout."""

    def __init__(self, hidden_channels=16, num_filters=16, num_interactions=2, num_gaussians=12, cutoff=3.0,
                 readout="add", dipole=False, mean=None, std=None, atomref=None):
        super().__init__()
        self.hidden_channels = hidden_channels
        self.cutoff = cutoff
        self.readout = readout
        self.dipole = dipole
        self.mean = mean
        self.std = std
        self.scale = None
        atomic_mass = torch.linspace(1.0, 16.0, 10)
        self.register_buffer("atomic_mass", atomic_mass)
        self.embedding = nn.Embedding(10, hidden_channels, padding_idx=0)
        self.distance_expansion = GaussianSmearing(0.0, cutoff, num_gaussians)
        self.interactions = nn.ModuleList([InteractionBlock(hidden_channels, num_gaussians, num_filters, cutoff)
                                           for _ in range(num_interactions)])
        self.lin1 = nn.Linear(hidden_channels, hidden_channels // 2)
        self.act = ShiftedSoftplus()
        self.lin2 = nn.Linear(hidden_channels // 2, 1)

    def forward(self, z, pos, batch):
        h = self.embedding(z)
        edge_index = radius_graph(pos, r=self.cutoff, batch=batch)
        row, col = edge_index
        edge_weight = (pos[row] - pos[col]).norm(dim=-1)
        edge_attr = self.distance_expansion(edge_weight)
        for interaction in self.interactions:
            h = h + interaction(h, edge_index, edge_weight, edge_attr)
        h = self.lin2(self.act(self.lin1(h)))
        if self.dipole:
            mass = self.atomic_mass[z].view(-1, 1)
            c = scatter_add(mass * pos, batch, int(batch.max()) + 1) / scatter_add(mass, batch, int(batch.max()) + 1)
            h = h * (pos - c.index_select(0, batch))
        if not self.dipole and self.mean is not None and self.std is not None:
            h = h * self.std + self.mean
        out = scatter_add(h, batch, int(batch.max().item()) + 1)
        if self.dipole:
            out = torch.norm(out, dim=-1, keepdim=True)
        if self.scale is not None:
            out = self.scale * out
        return out


def make_inputs():
    z = torch.tensor([6, 1, 1, 8, 6, 1, 7])
    pos = torch.randn(7, 3)
    batch = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    return z, pos, batch
