import torch
import torch.nn as nn
import torch.nn.functional as F


class NT_Xent(nn.Module):
    """Spijkervet SimCLR NT_Xent: mask_correlated_samples built in __init__, positives via diag offsets."""

    def __init__(self, batch_size, temperature, world_size=1):
        super().__init__()
        self.batch_size = batch_size
        self.temperature = temperature
        self.world_size = world_size
        self.mask = self.mask_correlated_samples(batch_size, world_size)
        self.criterion = nn.CrossEntropyLoss(reduction="sum")
        self.similarity_f = nn.CosineSimilarity(dim=2)

    def mask_correlated_samples(self, batch_size, world_size):
        N = 2 * batch_size * world_size
        mask = torch.ones((N, N), dtype=bool)
        mask = mask.fill_diagonal_(0)
        for i in range(batch_size * world_size):
            mask[i, batch_size * world_size + i] = 0
            mask[batch_size * world_size + i, i] = 0
        return mask

    def forward(self, z_i, z_j):
        N = 2 * self.batch_size * self.world_size
        z = torch.cat((z_i, z_j), dim=0)
        sim = self.similarity_f(z.unsqueeze(1), z.unsqueeze(0)) / self.temperature
        sim_i_j = torch.diag(sim, self.batch_size * self.world_size)
        sim_j_i = torch.diag(sim, -self.batch_size * self.world_size)
        positive_samples = torch.cat((sim_i_j, sim_j_i), dim=0).reshape(N, 1)
        negative_samples = sim[self.mask].reshape(N, -1)
        labels = torch.zeros(N).to(positive_samples.device).long()
        logits = torch.cat((positive_samples, negative_samples), dim=1)
        loss = self.criterion(logits, labels)
        loss /= N
        return loss


def info_nce_loss(features, batch_size, n_views=2, temperature=0.07):
    """sthalles SimCLR variant: labels from arange equality, drop diagonal with a bool eye mask."""
    labels = torch.cat([torch.arange(batch_size) for i in range(n_views)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    features = F.normalize(features, dim=1)
    similarity_matrix = torch.matmul(features, features.T)
    mask = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
    positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
    logits = torch.cat([positives, negatives], dim=1)
    labels = torch.zeros(logits.shape[0], dtype=torch.long)
    logits = logits / temperature
    return logits, labels


class Model(nn.Module):
    def __init__(self, batch_size=4, projection_dim=8, n_features=16):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                     nn.Linear(8, n_features))
        self.n_features = n_features
        self.encoder.fc = nn.Identity()
        self.projector = nn.Sequential(nn.Linear(self.n_features, self.n_features, bias=False), nn.ReLU(),
                                       nn.Linear(self.n_features, projection_dim, bias=False))
        self.criterion = NT_Xent(batch_size, 0.5)

    def forward(self, x_i, x_j):
        h_i = self.encoder(x_i)
        h_j = self.encoder(x_j)
        z_i = self.projector(h_i)
        z_j = self.projector(h_j)
        loss = self.criterion(z_i, z_j)
        logits, labels = info_nce_loss(torch.cat([z_i, z_j]), x_i.shape[0])
        return loss, F.cross_entropy(logits, labels), h_i, z_j


def make_inputs():
    return torch.randn(4, 3, 8, 8), torch.randn(4, 3, 8, 8)
