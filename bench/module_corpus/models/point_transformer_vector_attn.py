import torch
import torch.nn as nn
import torch.nn.functional as F


def square_distance(src, dst):
    return torch.sum((src[:, :, None] - dst[:, None]) ** 2, dim=-1)


def index_points(points, idx):
    """points: [B, N, C], idx: [B, S, [K]] -> [B, S, [K], C]"""
    raw_size = idx.size()
    idx = idx.reshape(raw_size[0], -1)
    res = torch.gather(points, 1, idx[..., None].expand(-1, -1, points.size(-1)))
    return res.reshape(*raw_size, -1)


class TransformerBlock(nn.Module):
    def __init__(self, d_points, d_model, k) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_points, d_model)
        self.fc2 = nn.Linear(d_model, d_points)
        self.fc_delta = nn.Sequential(nn.Linear(3, d_model), nn.ReLU(), nn.Linear(d_model, d_model))
        self.fc_gamma = nn.Sequential(nn.Linear(d_model, d_model), nn.ReLU(), nn.Linear(d_model, d_model))
        self.w_qs = nn.Linear(d_model, d_model, bias=False)
        self.w_ks = nn.Linear(d_model, d_model, bias=False)
        self.w_vs = nn.Linear(d_model, d_model, bias=False)
        self.k = k

    def forward(self, xyz, features):
        dists = square_distance(xyz, xyz)
        knn_idx = dists.argsort()[:, :, :self.k]  # b x n x k
        knn_xyz = index_points(xyz, knn_idx)
        pre = features
        x = self.fc1(features)
        q, k, v = self.w_qs(x), index_points(self.w_ks(x), knn_idx), index_points(self.w_vs(x), knn_idx)
        pos_enc = self.fc_delta(xyz[:, :, None] - knn_xyz)  # b x n x k x f
        attn = self.fc_gamma(q[:, :, None] - k + pos_enc)
        attn = F.softmax(attn / torch.sqrt(torch.tensor(k.size(-1), dtype=torch.float)), dim=-2)  # b x n x k x f
        res = torch.einsum('bmnf,bmnf->bmf', attn, v + pos_enc)
        res = self.fc2(res) + pre
        return res, attn


def farthest_point_sample(xyz, npoint):
    device = xyz.device
    B, N, C = xyz.shape
    centroids = torch.zeros(B, npoint, dtype=torch.long).to(device)
    distance = torch.ones(B, N).to(device) * 1e10
    farthest = torch.zeros(B, dtype=torch.long).to(device)  # deterministic start instead of randint
    batch_indices = torch.arange(B, dtype=torch.long).to(device)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch_indices, farthest, :].view(B, 1, 3)
        dist = torch.sum((xyz - centroid) ** 2, -1)
        distance = torch.min(distance, dist)
        farthest = torch.max(distance, -1)[1]
    return centroids


class TransitionDown(nn.Module):
    def __init__(self, npoint, nneighbor, channels):
        super().__init__()
        self.npoint, self.nneighbor = npoint, nneighbor
        self.mlp = nn.Sequential(nn.Conv2d(channels[0] + 3, channels[1], 1), nn.BatchNorm2d(channels[1]), nn.ReLU())

    def forward(self, xyz, points):
        fps_idx = farthest_point_sample(xyz, self.npoint)
        new_xyz = index_points(xyz, fps_idx)
        dists = square_distance(new_xyz, xyz)
        idx = dists.argsort()[:, :, :self.nneighbor]
        grouped_xyz_norm = index_points(xyz, idx) - new_xyz.view(xyz.shape[0], self.npoint, 1, 3)
        new_points = torch.cat([grouped_xyz_norm, index_points(points, idx)], dim=-1)
        new_points = self.mlp(new_points.permute(0, 3, 2, 1))
        return new_xyz, torch.max(new_points, 2)[0].transpose(1, 2)


class Model(nn.Module):
    """qq456cvb/Point-Transformers (Hengshuang): vector attention over kNN (argsort), gather-based index_points with
    *raw_size, farthest point sampling loop with advanced indexing writes, transition down."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 8))
        self.transformer1 = TransformerBlock(8, 8, 4)
        self.td = TransitionDown(6, 4, (8, 16))
        self.transformer2 = TransformerBlock(16, 8, 3)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        xyz = x[..., :3]
        points = self.transformer1(xyz, self.fc1(x))[0]
        xyz, points = self.td(xyz, points)
        points, attn = self.transformer2(xyz, points)
        return self.head(points.mean(1)), attn


def make_inputs():
    return (torch.randn(2, 12, 3),)
