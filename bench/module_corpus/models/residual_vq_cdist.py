from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


def l2norm(t):
    return F.normalize(t, p=2, dim=-1)


class VectorQuantize(nn.Module):
    """Codebook with straight-through estimator, commitment loss, optional cosine-sim codebook."""

    def __init__(self, dim, codebook_size, commitment_weight=0.25, use_cosine_sim=False, kmeans_init=False):
        super().__init__()
        self.codebook_size = codebook_size
        self.commitment_weight = commitment_weight
        self.use_cosine_sim = use_cosine_sim
        embed = torch.randn(codebook_size, dim)
        self.register_buffer('initted', torch.tensor([not kmeans_init]))
        self.register_buffer('cluster_size', torch.zeros(codebook_size))
        self.embed = nn.Parameter(embed)

    @property
    def codebook(self):
        return l2norm(self.embed) if self.use_cosine_sim else self.embed

    def forward(self, x, mask: Optional[torch.Tensor] = None):
        shape = x.shape
        flatten = x.reshape(-1, shape[-1])
        embed = self.codebook
        if self.use_cosine_sim:
            flatten = l2norm(flatten)
            dist = flatten @ embed.t()
        else:
            dist = -torch.cdist(flatten, embed, p=2)
        embed_ind = dist.argmax(dim=-1)
        embed_onehot = F.one_hot(embed_ind, self.codebook_size).type(x.dtype)
        quantize = F.embedding(embed_ind, embed).view(shape)
        embed_ind = embed_ind.view(*shape[:-1])
        loss = torch.tensor([0.], device=x.device, requires_grad=self.training)
        if self.commitment_weight > 0:
            detached_quantize = quantize.detach()
            if mask is not None:
                commit_loss = F.mse_loss(detached_quantize, x, reduction='none')
                commit_loss = commit_loss[mask].mean()
            else:
                commit_loss = F.mse_loss(detached_quantize, x)
            loss = loss + commit_loss * self.commitment_weight
        quantize = x + (quantize - x).detach()
        return quantize, embed_ind, loss, embed_onehot.sum(0)


class ResidualVQ(nn.Module):
    def __init__(self, *, num_quantizers, shared_codebook=False, quantize_dropout=False, **kwargs):
        super().__init__()
        self.num_quantizers = num_quantizers
        self.layers = nn.ModuleList([VectorQuantize(**kwargs) for _ in range(num_quantizers)])
        self.quantize_dropout = quantize_dropout and num_quantizers > 1
        if shared_codebook:
            first_vq, *rest_vq = self.layers
            for vq in rest_vq:
                vq.embed = first_vq.embed

    @property
    def codebooks(self):
        return torch.stack([layer.embed for layer in self.layers])

    def forward(self, x, mask=None, return_all_codes=False):
        quantized_out = 0.
        residual = x
        all_losses: List[torch.Tensor] = []
        all_indices = []
        usage = []
        for quantizer_index, layer in enumerate(self.layers):
            quantized, indices, loss, counts = layer(residual, mask=mask)
            residual = residual - quantized.detach()
            quantized_out = quantized_out + quantized
            all_indices.append(indices)
            all_losses.append(loss)
            usage.append(counts)
        all_losses, all_indices = map(lambda t: torch.stack(t, dim=-1), (all_losses, all_indices))
        ret = (quantized_out, all_indices, all_losses)
        if return_all_codes:
            codes = self.codebooks
            gathered = [codes[q][all_indices[..., q]] for q in range(self.num_quantizers)]
            ret = (*ret, torch.stack(gathered, 0))
        return ret + (torch.stack(usage),)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv1d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv1d(8, 6, 3, padding=1))
        self.rvq = ResidualVQ(num_quantizers=3, dim=6, codebook_size=10, use_cosine_sim=False)
        self.dec = nn.Conv1d(6, 3, 3, padding=1)

    def forward(self, x, mask=None):
        z = self.enc(x).transpose(1, 2)
        q, idx, losses, codes, usage = self.rvq(z, mask=mask, return_all_codes=True)
        recon = self.dec(q.transpose(1, 2))
        return dict(recon=recon, indices=idx, commit=losses.sum(), codes=codes, usage=usage)


def make_inputs():
    mask = torch.ones(2, 9, dtype=torch.bool)
    mask[0, 7:] = False
    return (torch.randn(2, 3, 9),), {"mask": mask}
