import torch
import torch.nn as nn
import torch.nn.functional as F


class GumbelQuantize(nn.Module):
    """Gumbel-softmax quantizer (DALL-E / taming style); eval uses a hard argmax code."""

    def __init__(self, num_hiddens, embedding_dim, n_embed, straight_through=True, kl_weight=5e-4, temp_init=1.0):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.n_embed = n_embed
        self.straight_through = straight_through
        self.temperature = temp_init
        self.kl_weight = kl_weight
        self.proj = nn.Conv2d(num_hiddens, n_embed, 1)
        self.embed = nn.Embedding(n_embed, embedding_dim)

    def forward(self, z, temp=None, return_logits=False):
        hard = self.straight_through if self.training else True
        temp = self.temperature if temp is None else temp
        logits = self.proj(z)
        if self.training:
            soft_one_hot = F.gumbel_softmax(logits, tau=temp, dim=1, hard=hard)
        else:
            index = logits.argmax(dim=1, keepdim=True)
            y_hard = torch.zeros_like(logits).scatter_(1, index, 1.0)
            y_soft = F.softmax(logits / temp, dim=1)
            soft_one_hot = y_hard - y_soft.detach() + y_soft
        z_q = torch.einsum("b n h w, n d -> b d h w", soft_one_hot, self.embed.weight)
        qy = F.softmax(logits, dim=1)
        diff = self.kl_weight * torch.sum(qy * torch.log(qy * self.n_embed + 1e-10), dim=1).mean()
        ind = soft_one_hot.argmax(dim=1)
        if return_logits:
            return z_q, diff, (None, None, ind), logits
        return z_q, diff, (None, None, ind)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 4, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 1, 1))
        self.quant = GumbelQuantize(8, 6, 10)
        self.dec = nn.Sequential(nn.ConvTranspose2d(6, 8, 4, 2, 1), nn.ReLU(), nn.Conv2d(8, 3, 3, 1, 1))

    def forward(self, x):
        z_q, diff, (_, _, ind) = self.quant(self.enc(x), temp=0.9)
        perplexity = torch.exp(-torch.sum(F.one_hot(ind.flatten(), 10).float().mean(0).add(1e-10).log()
                                          * F.one_hot(ind.flatten(), 10).float().mean(0)))
        return self.dec(z_q), diff, ind, perplexity


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
