import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Sinusoidal positional encoding computed in forward with math/class constants."""

    EPS = 1e-6
    MAX_PERIOD = 10000.0
    SQRT2 = math.sqrt(2.0)

    def __init__(self, d_model=16):
        super().__init__()
        self.d_model = d_model
        self.proj = nn.Linear(d_model, d_model)

    def timestep_embedding(self, t):
        half = self.d_model // 2
        freqs = torch.exp(-math.log(self.MAX_PERIOD) * torch.arange(half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, x, t):
        emb = self.timestep_embedding(t)
        x = x * math.sqrt(self.d_model) + emb[:, None, :]
        gelu = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))
        out = self.proj(gelu) / (self.SQRT2 + self.EPS)
        return out * math.cos(math.pi / 8) + math.floor(2.7) + math.fabs(-0.5)


def make_inputs():
    return torch.randn(2, 5, 16), torch.tensor([3, 250])
