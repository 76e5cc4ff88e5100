import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """VQ-VAE vector quantizer with EMA codebook updates under torch.no_grad()."""

    def __init__(self, num_embeddings=8, dim=4, decay=0.9, eps=1e-5):
        super().__init__()
        self.decay, self.eps = decay, eps
        embed = torch.randn(num_embeddings, dim)
        self.register_buffer("embed", embed)
        self.register_buffer("cluster_size", torch.zeros(num_embeddings))
        self.register_buffer("embed_avg", embed.clone())
        self.proj = nn.Linear(dim, dim)

    @torch.no_grad()
    def _ema_update(self, flat, onehot):
        self.cluster_size.data.mul_(self.decay).add_(onehot.sum(0), alpha=1 - self.decay)
        embed_sum = onehot.t() @ flat
        self.embed_avg.data.mul_(self.decay).add_(embed_sum, alpha=1 - self.decay)
        n = self.cluster_size.sum()
        cluster_size = (self.cluster_size + self.eps) / (n + self.embed.size(0) * self.eps) * n
        self.embed.copy_(self.embed_avg / cluster_size.unsqueeze(1))

    def forward(self, z):
        z = self.proj(z)
        flat = z.reshape(-1, z.size(-1))
        dist = flat.pow(2).sum(1, keepdim=True) - 2 * flat @ self.embed.t() + self.embed.pow(2).sum(1)[None]
        idx = dist.argmin(1)
        onehot = F.one_hot(idx, self.embed.size(0)).type(flat.dtype)
        quantized = F.embedding(idx, self.embed).view_as(z)
        if self.training:
            self._ema_update(flat.detach(), onehot)
        commit = F.mse_loss(quantized.detach(), z)
        quantized = z + (quantized - z).detach()
        return quantized, commit, idx


def make_inputs():
    return (torch.randn(2, 5, 4),)
